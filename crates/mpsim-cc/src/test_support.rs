//! Fixtures shared by the controllers' unit tests: the two-subflow state of
//! spec section 12 and a scripted single-subflow run for the "reduces to
//! Reno" checks of section 13.

use mpsim_core::{SimDuration, SimTime};

use crate::{AckSample, CaState, CcMode, CongestionController, Reno, SubflowCc};

pub(crate) const MSS_BYTES: u32 = 1460;

/// An ACK of `n` full-sized packets at time zero.
pub(crate) fn ack(n: f64) -> AckSample {
    ack_at(SimTime::ZERO, n)
}

pub(crate) fn ack_at(now: SimTime, n: f64) -> AckSample {
    AckSample { now, acked_pkts: n, acked_bytes: (n * f64::from(MSS_BYTES)) as u64, rtt: None }
}

/// An established subflow in congestion avoidance with an RTT sample.
pub(crate) fn ca_subflow(cwnd_pkts: f64, srtt_ms: u64) -> SubflowCc {
    let mut s = SubflowCc::new(cwnd_pkts, MSS_BYTES);
    s.established = true;
    s.can_send = true;
    s.srtt = Some(SimDuration::from_millis(srtt_ms));
    s.min_rtt = s.srtt;
    s.ssthresh_pkts = 2.0;
    s.flight_pkts = cwnd_pkts;
    s
}

/// Section 12: cwnd 10 and 20 packets, SRTT 50 ms and 200 ms, MSS 1460 B.
pub(crate) fn example_pair() -> Vec<SubflowCc> {
    vec![ca_subflow(10.0, 50), ca_subflow(20.0, 200)]
}

pub(crate) fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// One event of the scripted single-subflow run.
#[derive(Clone, Copy)]
enum Step {
    Ack(f64),
    Loss,
    Rto,
}

/// Slow start, fast recoveries, delayed (2-packet) ACKs and an RTO.
fn script() -> Vec<Step> {
    let mut v = Vec::new();
    v.extend((0..20).map(|_| Step::Ack(1.0)));
    v.push(Step::Loss);
    v.extend((0..120).map(|i| Step::Ack(if i % 3 == 0 { 2.0 } else { 1.0 })));
    v.push(Step::Loss);
    v.extend((0..60).map(|_| Step::Ack(1.0)));
    v.push(Step::Rto);
    v.extend((0..40).map(|_| Step::Ack(2.0)));
    v.push(Step::Loss);
    v.extend((0..40).map(|_| Step::Ack(1.0)));
    v
}

/// Drives the script through `c` on one subflow (100 ms SRTT) and returns
/// the window after every event. Plays the transport's part of spec 1.4.
pub(crate) fn cwnd_trace(c: &mut dyn CongestionController) -> Vec<f64> {
    let rtt = SimDuration::from_millis(100);
    let mut s = [SubflowCc::new(2.0, MSS_BYTES)];
    s[0].established = true;
    s[0].can_send = true;
    s[0].srtt = Some(rtt);
    s[0].min_rtt = Some(rtt);
    c.on_subflow_added(0);
    let mut now = SimTime::ZERO;
    let mut trace = Vec::new();
    for step in script() {
        s[0].flight_pkts = s[0].cwnd_pkts;
        match step {
            Step::Ack(n) => {
                s[0].snd_una += (n * f64::from(MSS_BYTES)) as u64;
                s[0].snd_nxt = s[0].snd_una + (s[0].cwnd_pkts * f64::from(MSS_BYTES)) as u64;
                c.on_rtt_sample(&mut s, 0, rtt, now);
                c.on_ack(&mut s, 0, &ack_at(now, n));
            }
            Step::Loss => {
                let ss = c.ssthresh_on_loss(&s, 0);
                s[0].ssthresh_pkts = ss;
                s[0].cwnd_pkts = ss;
                s[0].cwnd_cnt = 0;
                enter(c, &mut s, CaState::Recovery);
                enter(c, &mut s, CaState::Open);
            }
            Step::Rto => {
                let ss = c.ssthresh_on_loss(&s, 0);
                s[0].ssthresh_pkts = ss;
                s[0].cwnd_pkts = 1.0;
                s[0].cwnd_cnt = 0;
                enter(c, &mut s, CaState::Loss);
                c.on_rto(&mut s, 0);
                assert_eq!(s[0].cwnd_pkts, 1.0, "{} changed cwnd in on_rto", c.name());
                enter(c, &mut s, CaState::Open);
            }
        }
        now += SimDuration::from_millis(10);
        trace.push(s[0].cwnd_pkts);
    }
    trace
}

fn enter(c: &mut dyn CongestionController, s: &mut [SubflowCc], state: CaState) {
    s[0].ca_state = state;
    c.on_state_change(s, 0, state);
}

/// Asserts that `c` on one subflow follows Reno's window trace in `mode`.
pub(crate) fn assert_reduces_to_reno(c: &mut dyn CongestionController, mode: CcMode) {
    let reno = cwnd_trace(&mut Reno::new(mode));
    let other = cwnd_trace(c);
    assert_eq!(reno.len(), other.len());
    for (i, (a, b)) in reno.iter().zip(&other).enumerate() {
        assert!(close(*a, *b, 1e-9 * a.abs().max(1.0)), "{}: step {i}: reno {a} vs {b}", c.name());
    }
}
