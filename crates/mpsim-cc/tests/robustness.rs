//! Every controller, in both modes and with any of its `cc_params`, driven by random event sequences on up
//! to four subflows in any state (slow start or not, with or without RTT
//! samples, established or not, in any recovery state), applied as the
//! subflow applies them: windows and thresholds stay finite numbers, the
//! window at least one packet and within its clamp, the threshold never
//! negative, and a loss sets it to at least one packet. (wVegas leaving
//! slow start sets `ssthresh = min(ssthresh, w − 1)` after cutting `w` to
//! `w·baseRTT/RTT + 1`, spec 11.1: below one packet when the RTT is many
//! times baseRTT, which only means "not in slow start".)

use mpsim_cc::{
    param_keys, AckSample, CaState, CcError, CcMode, CongestionController, Controller, SubflowCc, MPTCP_ALGORITHMS,
    TCP_ALGORITHMS,
};
use mpsim_core::{SimDuration, SimTime};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Event {
    Ack { r: usize, acked_pkts: u8, rtt_us: Option<u32> },
    RttSample { r: usize, rtt_us: u32 },
    Loss { r: usize },
    Rto { r: usize },
    State { r: usize, state: u8 },
    IdleRestart { r: usize },
    Flags { r: usize, established: bool, can_send: bool },
    Flight { r: usize, pkts: u16 },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        8 => (0usize..4, 0u8..12, proptest::option::of(0u32..2_000_000))
            .prop_map(|(r, acked_pkts, rtt_us)| Event::Ack { r, acked_pkts, rtt_us }),
        2 => (0usize..4, 0u32..2_000_000).prop_map(|(r, rtt_us)| Event::RttSample { r, rtt_us }),
        2 => (0usize..4).prop_map(|r| Event::Loss { r }),
        1 => (0usize..4).prop_map(|r| Event::Rto { r }),
        1 => (0usize..4, 0u8..5).prop_map(|(r, state)| Event::State { r, state }),
        1 => (0usize..4).prop_map(|r| Event::IdleRestart { r }),
        1 => (0usize..4, any::<bool>(), any::<bool>()).prop_map(|(r, established, can_send)| Event::Flags { r, established, can_send }),
        1 => (0usize..4, 0u16..3_000).prop_map(|(r, pkts)| Event::Flight { r, pkts }),
    ]
}

fn state_of(k: u8) -> CaState {
    [CaState::Open, CaState::Disorder, CaState::Recovery, CaState::Loss, CaState::Cwr][k as usize % 5]
}

fn check(subs: &[SubflowCc], name: &str, after: &Event) {
    for (r, s) in subs.iter().enumerate() {
        let ctx = format!("{name} subflow {r} after {after:?}: cwnd {} ssthresh {}", s.cwnd_pkts, s.ssthresh_pkts);
        assert!(s.cwnd_pkts.is_finite() && s.ssthresh_pkts.is_finite(), "{ctx}");
        assert!(s.cwnd_pkts >= 1.0 && s.cwnd_pkts <= s.cwnd_clamp_pkts, "{ctx}");
        assert!(s.ssthresh_pkts >= 0.0, "{ctx}");
    }
}

fn drive(spec: &str, mode: CcMode, n: usize, init: &[(u16, bool)], events: &[Event]) {
    let name = spec;
    let mut c = match Controller::new(spec, mode) {
        Ok(c) => c,
        // Values the controller refuses (e.g. Vegas beta below alpha) never run.
        Err(CcError::BadParam { .. }) => return,
        Err(e) => panic!("{spec}: {e}"),
    };
    let mut subs: Vec<SubflowCc> = init[..n]
        .iter()
        .map(|&(cwnd, established)| {
            let mut s = SubflowCc::new(cwnd.max(1) as f64, 1448);
            (s.established, s.can_send) = (established, true);
            s
        })
        .collect();
    for r in 0..n {
        c.on_subflow_added(r);
    }
    let mut now = SimTime::ZERO;
    for ev in events {
        now += SimDuration::from_millis(1);
        let r = match *ev {
            Event::Ack { r, .. }
            | Event::RttSample { r, .. }
            | Event::Loss { r }
            | Event::Rto { r }
            | Event::State { r, .. }
            | Event::IdleRestart { r }
            | Event::Flags { r, .. }
            | Event::Flight { r, .. } => r % n,
        };
        match *ev {
            Event::Ack { acked_pkts, rtt_us, .. } => {
                let rtt = rtt_us.map(|us| SimDuration::from_micros(us as u64));
                if let Some(rtt) = rtt {
                    apply_rtt(&mut c, &mut subs, r, rtt, now);
                }
                let ack = AckSample { now, acked_pkts: acked_pkts as f64, acked_bytes: acked_pkts as u64 * 1448, rtt };
                subs[r].snd_una += ack.acked_bytes;
                c.on_ack(&mut subs, r, &ack);
            }
            Event::RttSample { rtt_us, .. } => apply_rtt(&mut c, &mut subs, r, SimDuration::from_micros(rtt_us as u64), now),
            Event::Loss { .. } => {
                let ss = c.ssthresh_on_loss(&subs, r);
                assert!(ss.is_finite() && ss >= 1.0, "{name}: ssthresh on loss {ss}");
                subs[r].ssthresh_pkts = ss;
                subs[r].cwnd_cnt = 0;
                c.on_state_change(&mut subs, r, CaState::Recovery);
                subs[r].ca_state = CaState::Recovery;
            }
            Event::Rto { .. } => {
                let ss = c.ssthresh_on_loss(&subs, r);
                assert!(ss.is_finite() && ss >= 1.0, "{name}: ssthresh on RTO {ss}");
                subs[r].ssthresh_pkts = ss;
                subs[r].cwnd_pkts = 1.0;
                subs[r].cwnd_cnt = 0;
                c.on_rto(&mut subs, r);
                c.on_state_change(&mut subs, r, CaState::Loss);
                subs[r].ca_state = CaState::Loss;
            }
            Event::State { state, .. } => {
                let new = state_of(state);
                if new == CaState::Open && subs[r].ca_state == CaState::Recovery {
                    subs[r].cwnd_pkts = subs[r].ssthresh_pkts.min(subs[r].cwnd_clamp_pkts).max(1.0);
                }
                c.on_state_change(&mut subs, r, new);
                subs[r].ca_state = new;
            }
            Event::IdleRestart { .. } => c.on_idle_restart(&mut subs, r, now),
            Event::Flags { established, can_send, .. } => (subs[r].established, subs[r].can_send) = (established, can_send),
            Event::Flight { pkts, .. } => subs[r].flight_pkts = pkts as f64,
        }
        check(&subs, name, ev);
    }
}

/// An RTT sample as the subflow takes it: the smoothed and minimum RTT
/// first, then the controller.
fn apply_rtt(c: &mut Controller, subs: &mut [SubflowCc], r: usize, rtt: SimDuration, now: SimTime) {
    let s = &mut subs[r];
    s.srtt = Some(s.srtt.map_or(rtt, |old| SimDuration((old.as_ps() * 7 + rtt.as_ps()) / 8)));
    s.min_rtt = Some(s.min_rtt.map_or(rtt, |m| m.min(rtt)));
    c.on_rtt_sample(subs, r, rtt, now);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn windows_stay_finite_and_at_least_one_packet(
        k in 0usize..10,
        linux in any::<bool>(),
        n in 1usize..5,
        init in proptest::collection::vec((0u16..3_000, any::<bool>()), 4),
        events in proptest::collection::vec(event(), 1..300),
        params in proptest::option::of(proptest::collection::vec(1u8..40, 3)),
    ) {
        let names: Vec<&str> = TCP_ALGORITHMS.iter().chain(MPTCP_ALGORITHMS).copied().collect();
        let mut uniq = names.clone();
        uniq.dedup();
        uniq.sort_unstable();
        uniq.dedup();
        let name = uniq[k % uniq.len()];
        // Single-path controllers run on one subflow.
        let n = if ["vegas"].contains(&name) { 1 } else { n };
        // Any values of the controller's cc_params, in quarter packets.
        let spec = match params {
            Some(v) if !param_keys(name).is_empty() => {
                let pairs: Vec<String> =
                    param_keys(name).iter().zip(&v).map(|(k, x)| format!("{k}={}", f64::from(*x) / 4.0)).collect();
                format!("{name}:{}", pairs.join(","))
            }
            _ => name.to_string(),
        };
        drive(&spec, if linux { CcMode::Linux } else { CcMode::Reference }, n, &init, &events);
    }
}
