//! CUBIC (RFC 9438), spec section 3, uncoupled per subflow. The window
//! follows `W_cubic(t) = C·(t − K)³ + W_max` from the last reduction, never
//! slower than the Reno-friendly estimate `W_est`.
//!
//! Linux mode reproduces `tcp_cubic.c`: β = 717/1024, C = 410/1024 through
//! `bic_scale`, time in 1/1024 s, the table-plus-Newton cube root, the
//! target one `delay_min` ahead, growth as `cnt` (ACKed packets per +1)
//! with its clamps, the ACK-counting Reno-friendly estimate, the whole
//! state reset on entering `Loss`, and delay samples ignored for 1 s after
//! an epoch starts. Jiffies are modelled at HZ = 1000.
//!
//! Linux mode also runs HyStart as `tcp_cubic.c` does (ACK train and delay
//! increase, from a window of 16, driven by the RTT-sample hook like
//! `cubictcp_acked`); it ends slow start by setting ssthresh to cwnd.
//! Reference mode keeps the standard slow start of spec 1.5 (the spec
//! makes HyStart++ optional).

use mpsim_core::time::{PS_PER_MS, PS_PER_US};
use mpsim_core::{SimDuration, SimTime};

use crate::common::{linux_acked, linux_reno_ca, reset_slot, slot, slow_start};
use crate::{AckSample, CaState, CcMode, CongestionController, SubflowCc};

/// `C`, packets/s³ (RFC 9438).
const C_PKTS_PER_S3: f64 = 0.4;
/// `β_cubic`, multiplicative decrease factor.
const BETA_FRAC: f64 = 0.7;
/// `α_cubic = 3(1 − β)/(1 + β)`, the Reno-friendly additive increase.
const ALPHA_CUBIC_PKTS: f64 = 3.0 * (1.0 - BETA_FRAC) / (1.0 + BETA_FRAC);
/// The target is at most 1.5 × cwnd (RFC 9438 4.4).
const MAX_TARGET_FRAC: f64 = 1.5;
/// Floor of ssthresh, packets.
const MIN_SSTHRESH_PKTS: f64 = 2.0;

/// Linux `beta`, in 1/1024.
const LX_BETA: u64 = 717;
const LX_BETA_SCALE: u64 = 1024;
/// `BICTCP_HZ`: time unit 2^-10 s.
const LX_BICTCP_HZ: u32 = 10;
/// Jiffies per second (HZ = 1000).
const LX_HZ: u64 = 1000;
/// Microseconds per jiffy.
const LX_USEC_PER_JIFFY: u64 = 1_000_000 / LX_HZ;
/// `cube_rtt_scale = bic_scale · 10` (= 1024·C).
const LX_CUBE_RTT_SCALE: u64 = 41 * 10;
/// `cube_factor = 2^40 / (bic_scale · 10)`.
const LX_CUBE_FACTOR: u64 = (1 << (10 + 3 * LX_BICTCP_HZ)) / LX_CUBE_RTT_SCALE;
/// `beta_scale = 8·(1024 + β)/3/(1024 − β)` (= 15).
const LX_RENO_BETA_SCALE: u32 = (8 * (1024 + 717) / 3 / (1024 - 717)) as u32;

/// `hystart_low_window`: HyStart detects nothing below this window, packets.
const HYSTART_LOW_WINDOW_PKTS: f64 = 16.0;
/// `hystart_ack_delta_us`: ACKs at most this far apart extend a train, µs.
const HYSTART_ACK_DELTA_US: u64 = 2000;
/// `HYSTART_MIN_SAMPLES`: delay samples a round takes before its delay test.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// Bounds of the delay-increase threshold (`HYSTART_DELAY_THRESH`), µs.
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16_000;

/// RFC 9438 per-subflow state.
#[derive(Clone, Copy, Debug, Default)]
struct RfcState {
    /// Window before the last reduction, packets (0 before any loss).
    w_max: f64,
    /// cwnd at the last congestion event, packets.
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch.
    t_epoch: Option<SimTime>,
    /// Time from the epoch start to the plateau, s.
    k_s: f64,
    /// Reno-friendly estimate, packets.
    w_est: f64,
}

/// `struct bictcp` (integers as in the kernel).
#[derive(Clone, Copy, Debug, Default)]
struct LinuxState {
    /// ACKed packets per +1 packet.
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies of the last `cnt` computation.
    last_time: u64,
    origin_point: u32,
    /// Time to the origin point, 1/1024 s.
    k: u32,
    /// Minimum RTT sample, µs (0 = none).
    delay_min_us: u32,
    /// Jiffies at the epoch start.
    epoch_start: Option<u64>,
    ack_cnt: u32,
    /// Reno-friendly window estimate, packets.
    tcp_cwnd: u32,
}

/// HyStart fields of `struct bictcp` (linux mode).
#[derive(Clone, Copy, Debug, Default)]
struct Hystart {
    /// The exit point was found; HyStart stays off until the next `Loss`.
    found: bool,
    /// Start of the current round, µs.
    round_start_us: u64,
    /// The round ends when `snd_una` passes this byte; `None` before the first round.
    end_seq: Option<u64>,
    /// Last ACK of the current ACK train, µs.
    last_ack_us: u64,
    /// Minimum RTT sample of the current round, µs.
    curr_rtt_us: u32,
    /// Delay samples taken this round, up to `HYSTART_MIN_SAMPLES`.
    sample_cnt: u8,
}

#[derive(Clone, Copy, Debug, Default)]
struct CubicSubflow {
    rfc: RfcState,
    lx: LinuxState,
    hy: Hystart,
    /// Time of the last ACK, to measure idle periods.
    last_ack: Option<SimTime>,
    /// Latest time a hook reported, µs (Linux `tcp_mstamp`).
    clock_us: u64,
}

pub struct Cubic {
    mode: CcMode,
    subs: Vec<CubicSubflow>,
}

/// `K = cbrt((W_max − cwnd_epoch)/C)`, s.
pub(crate) fn k_s(w_max_pkts: f64, cwnd_epoch_pkts: f64) -> f64 {
    ((w_max_pkts - cwnd_epoch_pkts).max(0.0) / C_PKTS_PER_S3).cbrt()
}

/// `W_cubic(t) = C·(t − K)³ + W_max`, packets.
pub(crate) fn w_cubic(t_s: f64, k_s: f64, w_max_pkts: f64) -> f64 {
    C_PKTS_PER_S3 * (t_s - k_s).powi(3) + w_max_pkts
}

impl RfcState {
    fn start_epoch(&mut self, now: SimTime, cwnd: f64) {
        self.t_epoch = Some(now);
        self.w_est = cwnd;
        if self.w_max > cwnd {
            self.k_s = k_s(self.w_max, cwnd);
        } else {
            self.k_s = 0.0;
            self.w_max = cwnd;
        }
    }

    /// RFC 9438 4.2–4.4 for `acked` packets in congestion avoidance.
    fn on_ca_ack(&mut self, s: &mut SubflowCc, now: SimTime, acked: f64) {
        let epoch = match self.t_epoch {
            Some(t) => t,
            None => {
                self.start_epoch(now, s.cwnd_pkts);
                now
            }
        };
        let t = now.saturating_since(epoch).as_secs_f64();
        let cwnd = s.cwnd_pkts;
        let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { ALPHA_CUBIC_PKTS };
        self.w_est += alpha * acked / cwnd;
        let new_cwnd = if w_cubic(t, self.k_s, self.w_max) < self.w_est {
            // Reno-friendly region; never shrink the window on an ACK.
            self.w_est.max(cwnd)
        } else {
            let target = w_cubic(t + s.srtt_s(), self.k_s, self.w_max).clamp(cwnd, MAX_TARGET_FRAC * cwnd);
            cwnd + acked * (target - cwnd) / cwnd
        };
        s.cwnd_pkts = new_cwnd.min(s.cwnd_clamp_pkts).max(1.0);
    }

    fn on_congestion(&mut self, s: &SubflowCc) -> f64 {
        self.t_epoch = None;
        self.cwnd_prior = s.cwnd_pkts;
        // Fast convergence: release bandwidth to newer flows.
        self.w_max = if s.cwnd_pkts < self.w_max { s.cwnd_pkts * (1.0 + BETA_FRAC) / 2.0 } else { s.cwnd_pkts };
        (s.flight_pkts * BETA_FRAC).max(MIN_SSTHRESH_PKTS)
    }
}

fn jiffies(now: SimTime) -> u64 {
    now.as_ps() / PS_PER_MS
}

fn micros(now: SimTime) -> u64 {
    now.as_ps() / PS_PER_US
}

impl LinuxState {
    /// `bictcp_update`: recomputes `cnt` for `acked` packets at `now_j`.
    fn update(&mut self, cwnd: u32, acked: u32, now_j: u64) {
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        // At most one recomputation per HZ/32 unless cwnd changed.
        if self.last_cwnd == cwnd && now_j.saturating_sub(self.last_time) <= LX_HZ / 32 {
            return;
        }
        if !(self.epoch_start.is_some() && now_j == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now_j;
            self.cubic_cnt(cwnd, acked, now_j);
        }
        self.reno_friendly(cwnd);
        self.cnt = self.cnt.max(2);
    }

    fn cubic_cnt(&mut self, cwnd: u32, acked: u32, now_j: u64) {
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.start_epoch(cwnd, acked, now_j);
                now_j
            }
        };
        let t_us = now_j.saturating_sub(epoch) * LX_USEC_PER_JIFFY + u64::from(self.delay_min_us);
        let t = (t_us << LX_BICTCP_HZ) / 1_000_000;
        let k = u64::from(self.k);
        let offs = t.abs_diff(k);
        let delta =
            (LX_CUBE_RTT_SCALE.wrapping_mul(offs).wrapping_mul(offs).wrapping_mul(offs) >> (10 + 3 * LX_BICTCP_HZ)) as u32;
        let target = if t < k { self.origin_point.wrapping_sub(delta) } else { self.origin_point.wrapping_add(delta) };
        self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { cwnd.saturating_mul(100) };
        // Before the first loss grow at least 5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
    }

    fn start_epoch(&mut self, cwnd: u32, acked: u32, now_j: u64) {
        self.epoch_start = Some(now_j);
        self.ack_cnt = acked;
        self.tcp_cwnd = cwnd;
        if self.last_max_cwnd <= cwnd {
            self.k = 0;
            self.origin_point = cwnd;
        } else {
            self.k = cubic_root(LX_CUBE_FACTOR.wrapping_mul(u64::from(self.last_max_cwnd - cwnd)));
            self.origin_point = self.last_max_cwnd;
        }
    }

    /// The estimate grows one packet per `cwnd·15/8` packets acknowledged.
    fn reno_friendly(&mut self, cwnd: u32) {
        let delta = ((cwnd * LX_RENO_BETA_SCALE) >> 3).max(1);
        while self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            self.cnt = self.cnt.min(cwnd / (self.tcp_cwnd - cwnd));
        }
    }

    fn on_congestion(&mut self, cwnd: u32) -> f64 {
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            ((u64::from(cwnd) * (LX_BETA_SCALE + LX_BETA)) / (2 * LX_BETA_SCALE)) as u32
        } else {
            cwnd
        };
        ((u64::from(cwnd) * LX_BETA / LX_BETA_SCALE) as f64).max(MIN_SSTHRESH_PKTS)
    }

    /// `cubictcp_acked`: keeps the minimum delay, except right after an
    /// epoch started (samples there may still carry recovery's queue).
    /// Returns the delay in µs when the sample counts.
    fn on_rtt_sample(&mut self, rtt: SimDuration, now_j: u64) -> Option<u32> {
        if self.epoch_start.is_some_and(|e| now_j.saturating_sub(e) < LX_HZ) {
            return None;
        }
        let delay = u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX).max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay {
            self.delay_min_us = delay;
        }
        Some(delay)
    }
}

impl Hystart {
    /// `bictcp_hystart_reset`: a round lasts until the data sent so far is
    /// acknowledged.
    fn start_round(&mut self, now_us: u64, snd_nxt: u64) {
        self.round_start_us = now_us;
        self.last_ack_us = now_us;
        self.end_seq = Some(snd_nxt);
        self.curr_rtt_us = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `hystart_update` for one counted delay sample in slow start. On
    /// detection slow start ends at the current window.
    fn on_sample(&mut self, s: &mut SubflowCc, delay_us: u32, delay_min_us: u32, now_us: u64) {
        if self.end_seq.is_none_or(|e| s.snd_una > e) {
            self.start_round(now_us, s.snd_nxt);
        }
        // Rounds advance below the low window too (current kernels), so the
        // round under way when cwnd reaches 16 is already partly spent.
        if s.cwnd_pkts < HYSTART_LOW_WINDOW_PKTS {
            return;
        }
        let train = self.ack_train_too_long(delay_min_us, now_us);
        let delay = self.delay_increased(delay_us, delay_min_us);
        if train || delay {
            self.found = true;
            s.ssthresh_pkts = s.cwnd_pkts;
        }
    }

    /// ACKs arriving back to back for longer than half the minimum RTT mean
    /// the window already fills the pipe. Linux halves the threshold when
    /// not pacing; its `hystart_ack_delay` cushion is 0 here, as no pacing
    /// rate is modelled.
    fn ack_train_too_long(&mut self, delay_min_us: u32, now_us: u64) -> bool {
        if now_us.saturating_sub(self.last_ack_us) > HYSTART_ACK_DELTA_US {
            return false;
        }
        self.last_ack_us = now_us;
        now_us.saturating_sub(self.round_start_us) > u64::from(delay_min_us >> 1)
    }

    /// Even the smallest RTT of the round is well above `delay_min`: a queue
    /// is building. The round's minimum counts only once it spans more than
    /// `HYSTART_MIN_SAMPLES` samples.
    fn delay_increased(&mut self, delay_us: u32, delay_min_us: u32) -> bool {
        self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
            return false;
        }
        self.curr_rtt_us > delay_min_us.saturating_add(hystart_delay_thresh_us(delay_min_us))
    }
}

/// `HYSTART_DELAY_THRESH(delay_min >> 3)`: an eighth of the minimum RTT,
/// kept within 4–16 ms, µs.
fn hystart_delay_thresh_us(delay_min_us: u32) -> u32 {
    (delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
}

impl CubicSubflow {
    /// `cubictcp_state(Loss)`: CUBIC forgets everything and HyStart looks
    /// for an exit again, from a round that ends at the current `snd_nxt`.
    fn reset_linux(&mut self, snd_nxt: Option<u64>) {
        self.lx = LinuxState::default();
        self.hy = Hystart::default();
        // The state hooks carry no clock, so the round starts at the last
        // time seen rather than at the timeout. The next ACK comes at least
        // one RTT after either, so above a 2 ms RTT neither lets it extend
        // an ACK train and the two starts behave alike.
        if let Some(n) = snd_nxt {
            self.hy.start_round(self.clock_us, n);
        }
    }
}

/// Linux `cubic_root`: table lookup plus one Newton–Raphson step (≈0.2 %).
fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176, 179, 181,
        185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231,
        232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let bits = 64 - a.leading_zeros();
    if bits < 7 {
        return (u32::from(V[a as usize]) + 35) >> 6;
    }
    let b = ((bits * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = ((u32::from(V[shift.min(63)]) + 10) << b) >> 6;
    let x = x.max(2);
    let x = (2 * x).wrapping_add((a / (u64::from(x) * u64::from(x - 1))) as u32);
    ((u64::from(x) * 341) >> 10) as u32
}

impl Cubic {
    pub fn new(mode: CcMode) -> Self {
        Cubic { mode, subs: Vec::new() }
    }
}

impl CongestionController for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(s) = subflows.get_mut(r) else { return };
        let st = slot(&mut self.subs, r);
        st.last_ack = Some(ack.now);
        st.clock_us = micros(ack.now);
        let mut acked = ack.acked_pkts;
        if s.in_slow_start() {
            acked = slow_start(s, acked, self.mode);
            if acked <= 0.0 {
                return;
            }
        }
        match self.mode {
            CcMode::Reference => st.rfc.on_ca_ack(s, ack.now, acked),
            CcMode::Linux => {
                let acked = linux_acked(acked);
                st.lx.update(s.cwnd_pkts as u32, acked as u32, jiffies(ack.now));
                linux_reno_ca(s, f64::from(st.lx.cnt), acked);
            }
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        let Some(s) = subflows.get(r) else { return MIN_SSTHRESH_PKTS };
        let st = slot(&mut self.subs, r);
        match self.mode {
            CcMode::Reference => st.rfc.on_congestion(s),
            CcMode::Linux => st.lx.on_congestion(s.cwnd_pkts as u32),
        }
    }

    fn on_rto(&mut self, subflows: &mut [SubflowCc], r: usize) {
        let snd_nxt = subflows.get(r).map(|s| s.snd_nxt);
        let st = slot(&mut self.subs, r);
        match self.mode {
            // The epoch restarts when congestion avoidance resumes.
            CcMode::Reference => st.rfc.t_epoch = None,
            // Entering Loss resets the whole state, W_max and HyStart
            // included; repeated timeouts stay in Loss, so reset here too.
            CcMode::Linux => st.reset_linux(snd_nxt),
        }
    }

    fn on_state_change(&mut self, subflows: &mut [SubflowCc], r: usize, new: CaState) {
        if self.mode == CcMode::Linux && new == CaState::Loss {
            let snd_nxt = subflows.get(r).map(|s| s.snd_nxt);
            slot(&mut self.subs, r).reset_linux(snd_nxt);
        }
    }

    fn on_rtt_sample(&mut self, subflows: &mut [SubflowCc], r: usize, rtt: SimDuration, now: SimTime) {
        if self.mode != CcMode::Linux {
            return;
        }
        let st = slot(&mut self.subs, r);
        st.clock_us = micros(now);
        let Some(delay_us) = st.lx.on_rtt_sample(rtt, jiffies(now)) else { return };
        // Until it finds an exit, HyStart watches every sample in slow start.
        if let Some(s) = subflows.get_mut(r).filter(|s| !st.hy.found && s.in_slow_start()) {
            st.hy.on_sample(s, delay_us, st.lx.delay_min_us, st.clock_us);
        }
    }

    fn on_idle_restart(&mut self, _subflows: &mut [SubflowCc], r: usize, now: SimTime) {
        // Shift the epoch by the idle time so growth stays on the curve.
        let st = slot(&mut self.subs, r);
        st.clock_us = micros(now);
        let idle = st.last_ack.map_or(SimDuration::ZERO, |t| now.saturating_since(t));
        if let Some(t) = st.rfc.t_epoch.as_mut() {
            *t = (*t + idle).min(now);
        }
        if let Some(e) = st.lx.epoch_start.as_mut() {
            *e = (*e + jiffies(SimTime(idle.as_ps()))).min(jiffies(now));
        }
    }

    fn on_subflow_added(&mut self, r: usize) {
        reset_slot(&mut self.subs, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack_at, ca_subflow, close, cwnd_trace, MSS_BYTES};
    use crate::INFINITE_SSTHRESH_PKTS;

    const T0: SimTime = SimTime(10 * mpsim_core::time::PS_PER_S);

    fn after_ms(ms: u64) -> SimTime {
        T0 + SimDuration::from_millis(ms)
    }

    /// A subflow in initial slow start with one window sent.
    fn slow_start_subflow(cwnd_pkts: f64) -> [SubflowCc; 1] {
        let mut s = ca_subflow(cwnd_pkts, 100);
        s.ssthresh_pkts = INFINITE_SSTHRESH_PKTS;
        s.snd_una = 1;
        s.snd_nxt = 1 + cwnd_pkts as u64 * u64::from(MSS_BYTES);
        [s]
    }

    /// Sends one more window and acknowledges past the current round's end.
    fn pass_end_seq(s: &mut SubflowCc) {
        let end = s.snd_nxt;
        s.snd_nxt += s.cwnd_pkts as u64 * u64::from(MSS_BYTES);
        s.snd_una = end + u64::from(MSS_BYTES);
    }

    /// RTT samples of `rtt_us` on subflow 0, at `at_us` after `T0`.
    fn samples(c: &mut Cubic, s: &mut [SubflowCc], rtt_us: u64, at_us: impl IntoIterator<Item = u64>) {
        for t in at_us {
            c.on_rtt_sample(s, 0, SimDuration::from_micros(rtt_us), T0 + SimDuration::from_micros(t));
        }
    }

    /// A round at the base RTT of 100 ms, then 100 ms of ACKs 1 ms apart at
    /// 150 ms: both an ACK train and a delay increase. Returns ssthresh.
    fn ssthresh_after_exit_signals(mode: CcMode, cwnd_pkts: f64) -> f64 {
        let mut s = slow_start_subflow(cwnd_pkts);
        let mut c = Cubic::new(mode);
        samples(&mut c, &mut s, 100_000, [0]);
        pass_end_seq(&mut s[0]);
        samples(&mut c, &mut s, 150_000, (1..=100).map(|ms| ms * 1000));
        s[0].ssthresh_pkts
    }

    /// A loss at cwnd 100 (flight 100), then congestion avoidance from 70.
    fn after_loss(mode: CcMode) -> (Cubic, [SubflowCc; 1]) {
        let mut s = [ca_subflow(100.0, 100)];
        let mut c = Cubic::new(mode);
        let ss = c.ssthresh_on_loss(&s, 0);
        assert_eq!(ss, 70.0);
        s[0].cwnd_pkts = ss;
        s[0].ssthresh_pkts = ss;
        (c, s)
    }

    #[test]
    fn cubic_k_matches_spec_check_value() {
        assert!(close(k_s(100.0, 70.0), 4.21716, 1e-5));
    }

    #[test]
    fn cubic_window_matches_spec_check_values() {
        let k = k_s(100.0, 70.0);
        assert!(close(w_cubic(0.0, k, 100.0), 70.0, 1e-9));
        assert!(close(w_cubic(1.0, k, 100.0), 86.6808, 1e-4));
        assert!(close(w_cubic(2.0, k, 100.0), 95.6403, 1e-4));
        assert!(close(w_cubic(k, k, 100.0), 100.0, 1e-12));
        assert!(close(w_cubic(1.1, k, 100.0), 87.8846, 1e-4));
    }

    #[test]
    fn alpha_cubic_matches_spec() {
        assert!(close(ALPHA_CUBIC_PKTS, 0.529412, 1e-6));
    }

    #[test]
    fn cubic_increase_at_one_second_matches_spec() {
        // Spec 12: (87.8846 − 70)/70 = 0.25549 per packet acknowledged.
        let (mut c, mut s) = after_loss(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack_at(T0, 0.0));
        assert_eq!(s[0].cwnd_pkts, 70.0);
        c.on_ack(&mut s, 0, &ack_at(after_ms(1000), 1.0));
        assert!(close(s[0].cwnd_pkts - 70.0, 0.25549, 1e-5));
    }

    #[test]
    fn first_ack_of_an_epoch_follows_the_reno_friendly_estimate() {
        // W_cubic(0) = 70 < W_est = 70 + α_cubic/70 (W_est below cwnd_prior).
        let (mut c, mut s) = after_loss(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        assert!(close(s[0].cwnd_pkts, 70.0 + ALPHA_CUBIC_PKTS / 70.0, 1e-12));
    }

    #[test]
    fn target_is_clamped_at_one_and_a_half_cwnd() {
        let (mut c, mut s) = after_loss(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack_at(T0, 0.0));
        // Far beyond K the curve is steep; growth is capped at 0.5/packet.
        c.on_ack(&mut s, 0, &ack_at(after_ms(30_000), 1.0));
        assert!(close(s[0].cwnd_pkts, 70.5, 1e-12));
    }

    #[test]
    fn reference_ssthresh_uses_flight_and_beta() {
        let mut s = [ca_subflow(100.0, 100)];
        s[0].flight_pkts = 50.0;
        let mut c = Cubic::new(CcMode::Reference);
        assert!(close(c.ssthresh_on_loss(&s, 0), 35.0, 1e-12));
        s[0].flight_pkts = 1.0;
        assert_eq!(c.ssthresh_on_loss(&s, 0), 2.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let (mut c, mut s) = after_loss(CcMode::Reference);
        assert_eq!(c.subs[0].rfc.w_max, 100.0);
        s[0].cwnd_pkts = 80.0;
        c.ssthresh_on_loss(&s, 0);
        assert!(close(c.subs[0].rfc.w_max, 68.0, 1e-12));
        assert_eq!(c.subs[0].rfc.cwnd_prior, 80.0);
    }

    #[test]
    fn reference_rto_keeps_w_max_and_restarts_the_epoch() {
        let (mut c, mut s) = after_loss(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        s[0].cwnd_pkts = 1.0;
        c.on_rto(&mut s, 0);
        assert_eq!(s[0].cwnd_pkts, 1.0);
        assert_eq!(c.subs[0].rfc.w_max, 100.0);
        assert_eq!(c.subs[0].rfc.t_epoch, None);
    }

    #[test]
    fn linux_ssthresh_uses_beta_717() {
        let (c, _) = after_loss(CcMode::Linux);
        assert_eq!(c.subs[0].lx.last_max_cwnd, 100);
        let mut s = [ca_subflow(80.0, 100)];
        let mut c = c;
        assert_eq!(c.ssthresh_on_loss(&s, 0), 56.0);
        // 80·1741/2048 = 68
        assert_eq!(c.subs[0].lx.last_max_cwnd, 68);
        s[0].cwnd_pkts = 1.0;
        assert_eq!(c.ssthresh_on_loss(&s, 0), 2.0);
    }

    #[test]
    fn linux_cube_root_is_close_to_the_exact_k() {
        let k = cubic_root(LX_CUBE_FACTOR * 30);
        assert_eq!(k, 4316);
        assert!(close(f64::from(k) / 1024.0, 4.21716, 0.005));
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(27), 3);
    }

    #[test]
    fn linux_cnt_at_one_second_uses_delay_min() {
        // t = 1.1 s = 1126/1024 → offs 3190 → delta 12 → target 88 → cnt 70/18.
        let (mut c, mut s) = after_loss(CcMode::Linux);
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(100), T0);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        assert_eq!(c.subs[0].lx.k, 4316);
        assert_eq!(c.subs[0].lx.cnt, 23);
        c.on_ack(&mut s, 0, &ack_at(after_ms(1000), 1.0));
        assert_eq!(c.subs[0].lx.cnt, 3);
    }

    #[test]
    fn linux_cnt_is_recomputed_at_most_every_31_jiffies() {
        let (mut c, mut s) = after_loss(CcMode::Linux);
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(100), T0);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        c.on_ack(&mut s, 0, &ack_at(after_ms(31), 1.0));
        assert_eq!(c.subs[0].lx.last_time, jiffies(T0));
        c.on_ack(&mut s, 0, &ack_at(after_ms(32), 1.0));
        assert_eq!(c.subs[0].lx.last_time, jiffies(after_ms(32)));
    }

    #[test]
    fn linux_growth_is_capped_at_5_percent_before_the_first_loss() {
        let mut s = [ca_subflow(10.0, 100)];
        let mut c = Cubic::new(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        assert_eq!(c.subs[0].lx.cnt, 20);
    }

    #[test]
    fn linux_cnt_never_below_two() {
        let mut s = [ca_subflow(1000.0, 100)];
        let mut c = Cubic::new(CcMode::Linux);
        c.ssthresh_on_loss(&s, 0);
        c.on_rtt_sample(&mut s, 0, SimDuration::from_secs(1), T0);
        s[0].cwnd_pkts = 10.0;
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        assert_eq!(c.subs[0].lx.cnt, 2);
    }

    #[test]
    fn linux_reno_friendly_estimate_caps_cnt() {
        // W_max = cwnd: the curve is flat at t = 0 (cnt = 100·cwnd), but 40
        // ACKed packets advance the estimate by 2 → cnt = 10/2.
        let mut s = [ca_subflow(10.0, 100)];
        let mut c = Cubic::new(CcMode::Linux);
        c.subs.push(CubicSubflow::default());
        c.subs[0].lx.last_max_cwnd = 10;
        c.on_ack(&mut s, 0, &ack_at(T0, 40.0));
        assert_eq!(c.subs[0].lx.tcp_cwnd, 12);
        assert_eq!(c.subs[0].lx.cnt, 5);
    }

    #[test]
    fn linux_discards_delay_samples_in_the_first_second_of_an_epoch() {
        let (mut c, mut s) = after_loss(CcMode::Linux);
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(100), T0);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(50), after_ms(999));
        assert_eq!(c.subs[0].lx.delay_min_us, 100_000);
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(50), after_ms(1000));
        assert_eq!(c.subs[0].lx.delay_min_us, 50_000);
    }

    #[test]
    fn linux_rto_forgets_w_max() {
        let (mut c, mut s) = after_loss(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        s[0].cwnd_pkts = 1.0;
        c.on_rto(&mut s, 0);
        assert_eq!(s[0].cwnd_pkts, 1.0);
        assert_eq!(c.subs[0].lx.last_max_cwnd, 0);
        assert_eq!(c.subs[0].lx.epoch_start, None);
    }

    #[test]
    fn linux_entering_loss_resets_the_state() {
        let (mut c, mut s) = after_loss(CcMode::Linux);
        c.on_state_change(&mut s, 0, CaState::Loss);
        assert_eq!(c.subs[0].lx.last_max_cwnd, 0);
    }

    #[test]
    fn linux_hystart_ack_train_past_half_delay_min_sets_ssthresh_to_cwnd() {
        // delay_min 100 ms and no pacing: the threshold is 50 ms.
        let mut s = slow_start_subflow(16.0);
        let mut c = Cubic::new(CcMode::Linux);
        samples(&mut c, &mut s, 100_000, (0..=50).map(|ms| ms * 1000));
        assert_eq!(s[0].ssthresh_pkts, INFINITE_SSTHRESH_PKTS);
        assert!(!c.subs[0].hy.found);
        samples(&mut c, &mut s, 100_000, [51_000]);
        assert!(c.subs[0].hy.found);
        assert_eq!(s[0].ssthresh_pkts, 16.0);
        assert!(!s[0].in_slow_start());
    }

    #[test]
    fn linux_hystart_ack_train_breaks_on_a_gap_over_2_ms() {
        let mut s = slow_start_subflow(16.0);
        let mut c = Cubic::new(CcMode::Linux);
        samples(&mut c, &mut s, 100_000, (0..=20).map(|i| i * 2000));
        assert_eq!(c.subs[0].hy.last_ack_us, micros(T0) + 40_000);
        samples(&mut c, &mut s, 100_000, (1..=30).map(|i| 40_000 + i * 2001));
        assert_eq!(c.subs[0].hy.last_ack_us, micros(T0) + 40_000);
        assert_eq!(s[0].ssthresh_pkts, INFINITE_SSTHRESH_PKTS);
    }

    #[test]
    fn linux_hystart_delay_increase_ends_slow_start_after_eight_samples() {
        // delay_min 100 ms: threshold 12.5 ms. Samples 3 ms apart: no ACK train.
        for (rtt_us, after_nine_pkts) in [(112_500, INFINITE_SSTHRESH_PKTS), (112_501, 16.0)] {
            let mut s = slow_start_subflow(16.0);
            let mut c = Cubic::new(CcMode::Linux);
            samples(&mut c, &mut s, 100_000, [0]);
            pass_end_seq(&mut s[0]);
            samples(&mut c, &mut s, rtt_us, (1..=8).map(|i| i * 3000));
            assert_eq!(c.subs[0].hy.sample_cnt, 8);
            assert_eq!(s[0].ssthresh_pkts, INFINITE_SSTHRESH_PKTS, "{rtt_us} µs, 8 samples");
            samples(&mut c, &mut s, rtt_us, [27_000]);
            assert_eq!(s[0].ssthresh_pkts, after_nine_pkts, "{rtt_us} µs, 9 samples");
        }
    }

    #[test]
    fn linux_hystart_delay_test_uses_the_round_minimum() {
        let mut s = slow_start_subflow(16.0);
        let mut c = Cubic::new(CcMode::Linux);
        samples(&mut c, &mut s, 100_000, [0]);
        pass_end_seq(&mut s[0]);
        samples(&mut c, &mut s, 101_000, [3000]);
        samples(&mut c, &mut s, 150_000, (2..=20).map(|i| i * 3000));
        assert_eq!(c.subs[0].hy.curr_rtt_us, 101_000);
        assert_eq!(s[0].ssthresh_pkts, INFINITE_SSTHRESH_PKTS);
    }

    #[test]
    fn hystart_delay_threshold_is_an_eighth_of_delay_min_within_4_to_16_ms() {
        assert_eq!(hystart_delay_thresh_us(10_000), 4000);
        assert_eq!(hystart_delay_thresh_us(100_000), 12_500);
        assert_eq!(hystart_delay_thresh_us(200_000), 16_000);
    }

    #[test]
    fn hystart_needs_linux_mode_and_a_window_of_16() {
        assert_eq!(ssthresh_after_exit_signals(CcMode::Linux, 16.0), 16.0);
        assert_eq!(ssthresh_after_exit_signals(CcMode::Linux, 15.0), INFINITE_SSTHRESH_PKTS);
        assert_eq!(ssthresh_after_exit_signals(CcMode::Reference, 16.0), INFINITE_SSTHRESH_PKTS);
    }

    #[test]
    fn linux_hystart_round_restarts_once_snd_una_passes_end_seq() {
        let mut s = slow_start_subflow(16.0);
        let mut c = Cubic::new(CcMode::Linux);
        samples(&mut c, &mut s, 100_000, [0, 3000]);
        let first_end = s[0].snd_nxt;
        assert_eq!(c.subs[0].hy.end_seq, Some(first_end));
        assert_eq!(c.subs[0].hy.sample_cnt, 2);
        // Acknowledging exactly up to end_seq keeps the round.
        s[0].snd_nxt += 16 * u64::from(MSS_BYTES);
        s[0].snd_una = first_end;
        samples(&mut c, &mut s, 120_000, [6000]);
        assert_eq!(c.subs[0].hy.end_seq, Some(first_end));
        assert_eq!((c.subs[0].hy.round_start_us, c.subs[0].hy.sample_cnt), (micros(T0), 3));
        assert_eq!(c.subs[0].hy.curr_rtt_us, 100_000);
        // One byte past it starts a new round with fresh samples.
        s[0].snd_una = first_end + 1;
        samples(&mut c, &mut s, 120_000, [9000]);
        let hy = c.subs[0].hy;
        assert_eq!(hy.end_seq, Some(s[0].snd_nxt));
        assert_eq!((hy.round_start_us, hy.last_ack_us), (micros(T0) + 9000, micros(T0) + 9000));
        assert_eq!((hy.sample_cnt, hy.curr_rtt_us), (1, 120_000));
    }

    #[test]
    fn linux_hystart_rounds_advance_below_the_low_window() {
        let mut s = slow_start_subflow(4.0);
        let mut c = Cubic::new(CcMode::Linux);
        samples(&mut c, &mut s, 100_000, [0]);
        pass_end_seq(&mut s[0]);
        samples(&mut c, &mut s, 100_000, [5000]);
        assert_eq!(c.subs[0].hy.end_seq, Some(s[0].snd_nxt));
        assert_eq!(c.subs[0].hy.round_start_us, micros(T0) + 5000);
        assert_eq!(c.subs[0].hy.sample_cnt, 0);
    }

    #[test]
    fn linux_hystart_is_reset_on_entering_loss() {
        for via_rto in [true, false] {
            let mut s = slow_start_subflow(16.0);
            let mut c = Cubic::new(CcMode::Linux);
            samples(&mut c, &mut s, 100_000, (0..=51).map(|ms| ms * 1000));
            assert!(c.subs[0].hy.found);
            // Once found, HyStart stays quiet even if slow start resumes.
            s[0].ssthresh_pkts = 64.0;
            pass_end_seq(&mut s[0]);
            samples(&mut c, &mut s, 100_000, (52..=120).map(|ms| ms * 1000));
            assert_eq!(s[0].ssthresh_pkts, 64.0);
            s[0].snd_nxt += 40 * u64::from(MSS_BYTES);
            s[0].cwnd_pkts = 1.0;
            if via_rto {
                c.on_rto(&mut s, 0);
            } else {
                s[0].ca_state = CaState::Loss;
                c.on_state_change(&mut s, 0, CaState::Loss);
            }
            let hy = c.subs[0].hy;
            assert!(!hy.found);
            assert_eq!(hy.end_seq, Some(s[0].snd_nxt));
            assert_eq!((hy.sample_cnt, hy.curr_rtt_us), (0, u32::MAX));
            assert_eq!(hy.round_start_us, micros(T0) + 120_000, "last time seen");
            // Back at 16 packets in slow start, HyStart can end it again.
            s[0].cwnd_pkts = 16.0;
            pass_end_seq(&mut s[0]);
            samples(&mut c, &mut s, 100_000, (1000..=1051).map(|ms| ms * 1000));
            assert_eq!(s[0].ssthresh_pkts, 16.0, "via_rto {via_rto}");
        }
    }

    #[test]
    fn idle_restart_shifts_the_epoch() {
        let (mut c, mut s) = after_loss(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack_at(T0, 1.0));
        c.on_idle_restart(&mut s, 0, after_ms(5000));
        assert_eq!(c.subs[0].rfc.t_epoch, Some(after_ms(5000)));
    }

    #[test]
    fn cubic_keeps_cwnd_at_one_after_rto_in_both_modes() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            let trace = cwnd_trace(&mut Cubic::new(mode));
            assert!(trace.iter().all(|w| *w >= 1.0));
        }
    }

    #[test]
    fn linux_windows_stay_integer() {
        let trace = cwnd_trace(&mut Cubic::new(CcMode::Linux));
        assert!(trace.iter().all(|w| w.fract() == 0.0));
    }
}
