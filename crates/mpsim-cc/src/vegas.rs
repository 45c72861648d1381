//! TCP Vegas (Brakmo & Peterson 1995; Linux `tcp_vegas.c`), spec section 4.
//! Once per round trip it estimates the packets queued in the network,
//! `diff = cwnd·(RTT − baseRTT)/RTT`, and moves the window by one packet to
//! keep `diff` between `α` and `β`; it leaves slow start early when `diff`
//! exceeds `γ`. Uncoupled per subflow.
//!
//! Reference mode uses the average of the round's samples and divides by
//! the round's RTT. Linux mode uses the round's minimum sample plus 1 µs,
//! divides by baseRTT, truncates to integers, clamps the window to at least
//! 2 and keeps `ssthresh ≥ ¾·cwnd` after each round. Both need 3 samples in
//! a round and otherwise take a Reno step.

use mpsim_core::{SimDuration, SimTime};

use crate::common::{reno_on_ack, reset_slot, slot, slow_start};
use crate::params::Params;
use crate::{AckSample, CaState, CcError, CcMode, CongestionController, SubflowCc};

/// Vegas thresholds, packets queued in the network.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasParams {
    /// Grow below this many queued packets.
    pub alpha_pkts: f64,
    /// Shrink above this many queued packets.
    pub beta_pkts: f64,
    /// Leave slow start above this many queued packets.
    pub gamma_pkts: f64,
}

impl VegasParams {
    /// Linux defaults (α = 2, β = 4, γ = 1), the spec's default.
    pub const LINUX: VegasParams = VegasParams { alpha_pkts: 2.0, beta_pkts: 4.0, gamma_pkts: 1.0 };
    /// Brakmo & Peterson 1995 (α = 1, β = 3, γ = 1).
    pub const PAPER: VegasParams = VegasParams { alpha_pkts: 1.0, beta_pkts: 3.0, gamma_pkts: 1.0 };
}

impl VegasParams {
    /// A scenario's `alpha`, `beta` and `gamma` (packets) over the
    /// defaults, taken from `p`; `beta` must not be below `alpha`.
    pub(crate) fn take(p: &mut Params<'_>) -> Result<VegasParams, CcError> {
        let d = VegasParams::default();
        let alpha = p.take("alpha")?;
        let beta = p.take("beta")?;
        let gamma = p.take("gamma")?;
        let params = VegasParams {
            alpha_pkts: alpha.unwrap_or(d.alpha_pkts),
            beta_pkts: beta.unwrap_or(d.beta_pkts),
            gamma_pkts: gamma.unwrap_or(d.gamma_pkts),
        };
        if params.beta_pkts < params.alpha_pkts {
            let key = if beta.is_some() { "beta" } else { "alpha" };
            return Err(p.error(key, &format!("beta ({}) must be at least alpha ({})", params.beta_pkts, params.alpha_pkts)));
        }
        Ok(params)
    }
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams::LINUX
    }
}

/// Fewer samples than this in a round means delayed ACKs only: Reno step.
pub(crate) const MIN_ROUND_SAMPLES: u32 = 3;
/// Linux's lower window clamp after a Vegas round, packets.
pub(crate) const LINUX_MIN_CWND_PKTS: f64 = 2.0;

/// RTT samples of one round (spec 1.6) in the mode's unit: picoseconds in
/// reference mode, Linux `vrtt` (µs + 1, never zero) in linux mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RttRound {
    pub(crate) count: u32,
    pub(crate) min: u64,
    pub(crate) sum: u64,
}

impl RttRound {
    pub(crate) fn record(&mut self, v: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
    }

    /// Mean sample (reference mode, exact).
    pub(crate) fn mean(&self) -> f64 {
        self.sum as f64 / f64::from(self.count.max(1))
    }

    /// Mean sample truncated as Linux's integer division does.
    pub(crate) fn mean_int(&self) -> u64 {
        self.sum / u64::from(self.count.max(1))
    }
}

/// One RTT sample in the unit `RttRound` keeps for `mode`.
pub(crate) fn rtt_units(rtt: SimDuration, mode: CcMode) -> u64 {
    match mode {
        CcMode::Reference => rtt.as_ps(),
        CcMode::Linux => rtt.as_micros() + 1,
    }
}

/// Linux `tcp_current_ssthresh` outside a window reduction.
pub(crate) fn linux_current_ssthresh(s: &mut SubflowCc) {
    let cwnd = s.cwnd_pkts as u64;
    s.ssthresh_pkts = s.ssthresh_pkts.max(((cwnd >> 1) + (cwnd >> 2)) as f64);
}

#[derive(Clone, Copy, Debug)]
struct VegasSubflow {
    /// `doing_vegas_now`.
    enabled: bool,
    /// End of the current round (`snd_nxt` when it began), bytes.
    beg_snd_nxt: Option<u64>,
    /// Minimum sample since the last reset, in `RttRound` units.
    base: Option<u64>,
    round: RttRound,
}

impl Default for VegasSubflow {
    fn default() -> Self {
        VegasSubflow { enabled: true, beg_snd_nxt: None, base: None, round: RttRound::default() }
    }
}

impl VegasSubflow {
    /// `vegas_enable`: a fresh round starting now.
    fn enable(&mut self, s: &SubflowCc) {
        self.enabled = true;
        self.beg_snd_nxt = Some(s.snd_nxt);
        self.round = RttRound::default();
    }
}

pub struct Vegas {
    mode: CcMode,
    params: VegasParams,
    subs: Vec<VegasSubflow>,
}

impl Vegas {
    pub fn new(mode: CcMode) -> Self {
        Self::with_params(mode, VegasParams::default())
    }

    pub fn with_params(mode: CcMode, params: VegasParams) -> Self {
        Vegas { mode, params, subs: Vec::new() }
    }

    /// `(diff, target)`: queued packets and the window matching the actual
    /// rate, from the round's samples.
    fn estimate(&self, cwnd: f64, base: u64, round: &RttRound) -> (f64, f64) {
        match self.mode {
            CcMode::Reference => {
                let (rtt, base) = (round.mean(), base as f64);
                (cwnd * (rtt - base) / rtt, cwnd * base / rtt)
            }
            CcMode::Linux => {
                let (rtt, w) = (round.min.max(1), cwnd as u64);
                let diff = (w as u32).wrapping_mul((rtt - base.min(rtt)) as u32) / (base.max(1) as u32);
                (f64::from(diff), (w * base / rtt) as f64)
            }
        }
    }

    /// The once-per-round adjustment (spec 4).
    fn adjust(&self, s: &mut SubflowCc, st: &VegasSubflow, acked: f64) {
        let Some(base) = st.base else { return };
        let (diff, target) = self.estimate(s.cwnd_pkts, base, &st.round);
        let p = self.params;
        if diff > p.gamma_pkts && s.in_slow_start() {
            s.cwnd_pkts = s.cwnd_pkts.min(target + 1.0);
            s.ssthresh_pkts = s.ssthresh_pkts.min(s.cwnd_pkts);
        } else if s.in_slow_start() {
            slow_start(s, acked, self.mode);
        } else if diff > p.beta_pkts {
            s.cwnd_pkts -= 1.0;
            s.ssthresh_pkts = s.ssthresh_pkts.min(s.cwnd_pkts);
        } else if diff < p.alpha_pkts {
            s.cwnd_pkts += 1.0;
        }
        match self.mode {
            CcMode::Reference => s.cwnd_pkts = s.cwnd_pkts.min(s.cwnd_clamp_pkts).max(1.0),
            CcMode::Linux => {
                s.cwnd_pkts = s.cwnd_pkts.max(LINUX_MIN_CWND_PKTS).min(s.cwnd_clamp_pkts);
                linux_current_ssthresh(s);
            }
        }
    }
}

impl CongestionController for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(s) = subflows.get_mut(r) else { return };
        let st = *slot(&mut self.subs, r);
        if !st.enabled || s.ca_state != CaState::Open {
            reno_on_ack(s, ack.acked_pkts, self.mode);
            return;
        }
        if st.beg_snd_nxt.is_some_and(|beg| s.snd_una <= beg) {
            // Inside a round only slow start moves the window.
            if s.in_slow_start() {
                slow_start(s, ack.acked_pkts, self.mode);
            }
            return;
        }
        if st.round.count < MIN_ROUND_SAMPLES {
            reno_on_ack(s, ack.acked_pkts, self.mode);
        } else {
            self.adjust(s, &st, ack.acked_pkts);
        }
        let st = slot(&mut self.subs, r);
        st.beg_snd_nxt = Some(s.snd_nxt);
        st.round = RttRound::default();
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| vegas_reno_ssthresh(s, self.mode))
    }

    fn on_state_change(&mut self, subflows: &mut [SubflowCc], r: usize, new: CaState) {
        let Some(s) = subflows.get(r) else { return };
        let st = slot(&mut self.subs, r);
        if new == CaState::Open {
            st.enable(s);
        } else {
            st.enabled = false;
        }
    }

    fn on_rtt_sample(&mut self, _subflows: &mut [SubflowCc], r: usize, rtt: SimDuration, _now: SimTime) {
        let v = rtt_units(rtt, self.mode);
        let st = slot(&mut self.subs, r);
        st.base = Some(st.base.map_or(v, |b| b.min(v)));
        st.round.record(v);
    }

    fn on_idle_restart(&mut self, subflows: &mut [SubflowCc], r: usize, _now: SimTime) {
        let Some(s) = subflows.get(r) else { return };
        let st = slot(&mut self.subs, r);
        if self.mode == CcMode::Linux {
            // tcp_vegas_init: baseRTT is forgotten too.
            st.base = None;
        }
        st.enable(s);
    }

    fn on_subflow_added(&mut self, r: usize) {
        reset_slot(&mut self.subs, r);
    }
}

/// Vegas and wVegas halve the window on loss (`max(cwnd/2, 2)`, spec 4, 11).
pub(crate) fn vegas_reno_ssthresh(s: &SubflowCc, mode: CcMode) -> f64 {
    match mode {
        CcMode::Reference => (s.cwnd_pkts / 2.0).max(2.0),
        CcMode::Linux => (s.cwnd_pkts / 2.0).floor().max(2.0),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_support::{ack, ca_subflow, close, cwnd_trace, MSS_BYTES};

    /// Feeds `samples_ms` as one round's RTT samples to `c` on subflow `r`,
    /// then an ACK past the round's end.
    pub(crate) fn run_round(c: &mut dyn CongestionController, s: &mut [SubflowCc], r: usize, samples_ms: &[u64]) {
        for &ms in samples_ms {
            c.on_rtt_sample(s, r, SimDuration::from_millis(ms), SimTime::ZERO);
        }
        s[r].snd_una = s[r].snd_nxt + u64::from(MSS_BYTES);
        s[r].snd_nxt = s[r].snd_una + (s[r].cwnd_pkts * f64::from(MSS_BYTES)) as u64;
        c.on_ack(s, r, &ack(1.0));
    }

    fn ca(cwnd: f64) -> [SubflowCc; 1] {
        [ca_subflow(cwnd, 40)]
    }

    #[test]
    fn linux_vegas_grows_holds_and_shrinks_by_one_per_round() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 11.0, "diff 0 < α");
        run_round(&mut c, &mut s, 0, &[50, 50, 50]);
        assert_eq!(s[0].cwnd_pkts, 11.0, "diff = 11·10000/40001 = 2");
        run_round(&mut c, &mut s, 0, &[60, 60, 60]);
        assert_eq!(s[0].cwnd_pkts, 10.0, "diff = 5 > β");
    }

    #[test]
    fn reference_vegas_divides_by_the_round_average() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 11.0);
        // avg 60, diff = 11·20/60 = 3.67 ≤ β: hold (Linux shrinks here).
        run_round(&mut c, &mut s, 0, &[50, 60, 70]);
        assert_eq!(s[0].cwnd_pkts, 11.0);
        run_round(&mut c, &mut s, 0, &[80, 80, 80]);
        assert_eq!(s[0].cwnd_pkts, 10.0, "diff = 11·40/80 = 5.5 > β");
    }

    #[test]
    fn linux_vegas_uses_the_round_minimum() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        // min 40 → diff 0 → grow, although the mean is 100 ms.
        run_round(&mut c, &mut s, 0, &[40, 100, 160]);
        assert_eq!(s[0].cwnd_pkts, 12.0);
    }

    #[test]
    fn fewer_than_three_samples_take_a_reno_step() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40]);
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
    }

    #[test]
    fn nothing_changes_between_round_boundaries_in_congestion_avoidance() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        s[0].snd_una = s[0].snd_nxt;
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn slow_start_continues_between_rounds() {
        let mut s = ca(10.0);
        s[0].ssthresh_pkts = 100.0;
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 11.0);
        s[0].snd_una += 1;
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 12.0);
    }

    #[test]
    fn linux_vegas_leaves_slow_start_when_diff_exceeds_gamma() {
        let mut s = ca(20.0);
        s[0].ssthresh_pkts = 1000.0;
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 21.0, "diff 0: normal slow start");
        // diff = 21·20000/40001 = 10 > γ; target = 21·40001/60001 = 14.
        run_round(&mut c, &mut s, 0, &[60, 60, 60]);
        assert_eq!(s[0].cwnd_pkts, 15.0);
        assert_eq!(s[0].ssthresh_pkts, 15.0);
    }

    #[test]
    fn vegas_is_disabled_outside_open_and_rearmed_on_return() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        s[0].ca_state = CaState::Disorder;
        c.on_state_change(&mut s, 0, CaState::Disorder);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 11.0 + 1.0 / 11.0, 1e-12), "Reno while disabled");
        c.on_rtt_sample(&mut s, 0, SimDuration::from_millis(40), SimTime::ZERO);
        s[0].ca_state = CaState::Open;
        c.on_state_change(&mut s, 0, CaState::Open);
        assert_eq!(c.subs[0].round.count, 0, "fresh samples");
        assert_eq!(c.subs[0].beg_snd_nxt, Some(s[0].snd_nxt));
    }

    #[test]
    fn linux_samples_get_one_microsecond_added() {
        let mut c = Vegas::new(CcMode::Linux);
        let mut s = ca(10.0);
        c.on_rtt_sample(&mut s, 0, SimDuration::ZERO, SimTime::ZERO);
        assert_eq!(c.subs[0].base, Some(1));
    }

    #[test]
    fn linux_clamps_the_window_at_two() {
        let mut s = ca(3.0);
        s[0].ssthresh_pkts = 1.0;
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[10, 10, 10]);
        assert_eq!(s[0].cwnd_pkts, 4.0);
        run_round(&mut c, &mut s, 0, &[100, 100, 100]);
        run_round(&mut c, &mut s, 0, &[100, 100, 100]);
        assert_eq!(s[0].cwnd_pkts, 2.0);
        run_round(&mut c, &mut s, 0, &[100, 100, 100]);
        assert_eq!(s[0].cwnd_pkts, 2.0);
    }

    #[test]
    fn linux_keeps_ssthresh_at_three_quarters_of_cwnd() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].ssthresh_pkts, 7.0);
    }

    #[test]
    fn linux_idle_restart_forgets_base_rtt() {
        let mut s = ca(10.0);
        let mut c = Vegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        c.on_idle_restart(&mut s, 0, SimTime::ZERO);
        assert_eq!(c.subs[0].base, None);
        let mut c = Vegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        c.on_idle_restart(&mut s, 0, SimTime::ZERO);
        assert!(c.subs[0].base.is_some());
    }

    #[test]
    fn vegas_halves_on_loss() {
        let s = ca(11.0);
        assert_eq!(Vegas::new(CcMode::Reference).ssthresh_on_loss(&s, 0), 5.5);
        assert_eq!(Vegas::new(CcMode::Linux).ssthresh_on_loss(&s, 0), 5.0);
    }

    #[test]
    fn vegas_keeps_cwnd_at_one_after_rto() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            let trace = cwnd_trace(&mut Vegas::new(mode));
            assert!(trace.iter().all(|w| *w >= 1.0));
        }
    }
}
