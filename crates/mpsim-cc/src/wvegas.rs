//! wVegas, weighted Vegas (Cao, Xu, Fu, ICNP 2012; Linux module "wvegas"),
//! spec section 11. Each subflow runs Vegas with its own `α_r`, a share of
//! a connection-wide budget of queued packets (`total_α = 10`) weighted by
//! the subflow's rate, and drains its queue when the queueing delay doubles
//! its smallest value. Delay-based: a single subflow is Vegas with
//! `α = β = 10`, not Reno.
//!
//! Both modes use the round's *average* RTT and divide by it. Linux mode
//! reproduces `mptcp_wvegas.c`: +1 µs samples, integer `diff` and 2^16
//! scaled rates and weights, the reset of `α`, weight and rate on every
//! return to `Open`, ssthresh kept at ¾·cwnd, and the zero-queue quirk (a
//! round whose RTT equals baseRTT halves the window) that reference mode
//! guards against.

use mpsim_core::time::PS_PER_S;
use mpsim_core::{SimDuration, SimTime};

use crate::common::{reno_on_ack, reset_slot, slot, slow_start};
use crate::params::Params;
use crate::vegas::{linux_current_ssthresh, rtt_units, vegas_reno_ssthresh, RttRound, LINUX_MIN_CWND_PKTS, MIN_ROUND_SAMPLES};
use crate::{AckSample, CaState, CcError, CcMode, CongestionController, SubflowCc};

/// `MPTCP_WVEGAS_SCALE`: rates and weights are scaled by 2^16.
const SCALE: u32 = 16;

/// wVegas's parameters (the Linux module's `initial_alpha`, `total_alpha`
/// and `gamma`), packets. Linux mode truncates them to integers, as the
/// module's `int` parameters are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WVegasParams {
    /// `α_r` of a subflow before its first weighting, and the floor of every `α_r`.
    pub initial_alpha_pkts: f64,
    /// Packets the whole connection keeps queued, shared by rate.
    pub total_alpha_pkts: f64,
    /// Slow-start exit threshold.
    pub gamma_pkts: f64,
}

impl Default for WVegasParams {
    /// The paper's and Linux's 2, 10 and 1 (spec 11).
    fn default() -> Self {
        WVegasParams { initial_alpha_pkts: 2.0, total_alpha_pkts: 10.0, gamma_pkts: 1.0 }
    }
}

impl WVegasParams {
    /// A scenario's `total_alpha`, `initial_alpha` and `gamma` over the defaults.
    pub(crate) fn take(p: &mut Params<'_>) -> Result<WVegasParams, CcError> {
        let d = WVegasParams::default();
        let params = WVegasParams {
            total_alpha_pkts: p.take("total_alpha")?.unwrap_or(d.total_alpha_pkts),
            initial_alpha_pkts: p.take("initial_alpha")?.unwrap_or(d.initial_alpha_pkts),
            gamma_pkts: p.take("gamma")?.unwrap_or(d.gamma_pkts),
        };
        Ok(params)
    }

    fn in_mode(self, mode: CcMode) -> Self {
        match mode {
            CcMode::Reference => self,
            CcMode::Linux => WVegasParams {
                initial_alpha_pkts: self.initial_alpha_pkts.trunc(),
                total_alpha_pkts: self.total_alpha_pkts.trunc(),
                gamma_pkts: self.gamma_pkts.trunc(),
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct WVegasSubflow {
    /// `doing_wvegas_now`.
    enabled: bool,
    /// End of the current round, bytes.
    beg_snd_nxt: Option<u64>,
    /// Minimum sample since the last reset, in `RttRound` units.
    base: Option<u64>,
    round: RttRound,
    /// `α_r`, packets (integer-valued in linux mode); `None` until first
    /// weighted: `initial_alpha`.
    alpha_pkts: Option<f64>,
    /// Reference `x_r = w_r/RTT_r`, packets/s (0 = unknown).
    rate_pkts_per_s: f64,
    /// Reference `weight_r`, fraction.
    weight_frac: f64,
    /// Linux `instant_rate = (cwnd << 16)/rtt_us`.
    rate_lx: u64,
    /// Linux `weight`, 2^16 scaled.
    weight_lx: u64,
    /// Smallest queueing delay seen, `RttRound` units (0 = unset).
    q_min: f64,
    /// A drain cut the window: the next round of the drain rule only
    /// watches (reference mode).
    drained: bool,
}

impl Default for WVegasSubflow {
    fn default() -> Self {
        WVegasSubflow {
            enabled: true,
            beg_snd_nxt: None,
            base: None,
            round: RttRound::default(),
            alpha_pkts: None,
            rate_pkts_per_s: 0.0,
            weight_frac: 1.0,
            rate_lx: 0,
            weight_lx: 1 << SCALE,
            q_min: 0.0,
            drained: false,
        }
    }
}

impl WVegasSubflow {
    /// `wvegas_enable`: a fresh round; Linux also forgets α, weight, rate
    /// and the queue minimum.
    fn enable(&mut self, s: &SubflowCc, mode: CcMode) {
        self.enabled = true;
        self.beg_snd_nxt = Some(s.snd_nxt);
        self.round = RttRound::default();
        if mode == CcMode::Linux {
            *self = WVegasSubflow { base: self.base, beg_snd_nxt: self.beg_snd_nxt, ..WVegasSubflow::default() };
        }
    }
}

pub struct WVegas {
    mode: CcMode,
    params: WVegasParams,
    subs: Vec<WVegasSubflow>,
}

impl WVegas {
    pub fn new(mode: CcMode) -> Self {
        Self::with_params(mode, WVegasParams::default())
    }

    pub fn with_params(mode: CcMode, params: WVegasParams) -> Self {
        WVegas { mode, params: params.in_mode(mode), subs: Vec::new() }
    }

    /// `α_r` of subflow `r`, packets.
    fn alpha_pkts(&self, r: usize) -> f64 {
        self.subs.get(r).and_then(|st| st.alpha_pkts).unwrap_or(self.params.initial_alpha_pkts)
    }

    /// `(RTT, diff, target)` of subflow `r`'s round.
    fn estimate(&self, cwnd: f64, base: u64, round: &RttRound) -> (f64, f64, f64) {
        match self.mode {
            CcMode::Reference => {
                let (rtt, base) = (round.mean(), base as f64);
                (rtt, cwnd * (rtt - base) / rtt, cwnd * base / rtt)
            }
            CcMode::Linux => {
                let (rtt, w) = (round.mean_int().max(1), cwnd as u64);
                let diff = w * (rtt - base.min(rtt)) / rtt;
                (rtt as f64, diff as f64, (w * base / rtt) as f64)
            }
        }
    }

    /// Updates `x_r`, `weight_r` and `α_r` (spec 11.1 step 1, 11.2).
    fn reweight(&mut self, subflows: &[SubflowCc], r: usize, cwnd: f64, rtt: f64) {
        let p = self.params;
        match self.mode {
            CcMode::Reference => {
                let rate = cwnd / (rtt / PS_PER_S as f64);
                slot(&mut self.subs, r).rate_pkts_per_s = rate;
                let total: f64 = (0..subflows.len())
                    .filter(|&k| subflows[k].is_coupled() || k == r)
                    .map(|k| self.subs.get(k).map_or(0.0, |st| st.rate_pkts_per_s))
                    .sum();
                let st = slot(&mut self.subs, r);
                if total > 0.0 {
                    st.weight_frac = rate / total;
                }
                st.alpha_pkts = Some((st.weight_frac * p.total_alpha_pkts).max(p.initial_alpha_pkts));
            }
            CcMode::Linux => {
                let rate = ((cwnd as u64) << SCALE) / (rtt as u64).max(1);
                slot(&mut self.subs, r).rate_lx = rate;
                let total: u64 = (0..subflows.len())
                    .filter(|&k| subflows[k].established && subflows[k].can_send)
                    .filter_map(|k| self.subs.get(k))
                    .filter(|st| st.round.sum > 0)
                    .map(|st| st.rate_lx)
                    .sum();
                let st = slot(&mut self.subs, r);
                if total > 0 && rate > 0 {
                    st.weight_lx = (rate << SCALE) / total;
                }
                let alpha = (st.weight_lx * p.total_alpha_pkts as u64) >> SCALE;
                st.alpha_pkts = Some((alpha as f64).max(p.initial_alpha_pkts));
            }
        }
    }

    /// The once-per-round adjustment (spec 11.1, 11.2).
    fn adjust(&mut self, subflows: &mut [SubflowCc], r: usize, acked: f64) {
        let st = *slot(&mut self.subs, r);
        let Some(base) = st.base else { return };
        let (rtt, diff, target) = self.estimate(subflows[r].cwnd_pkts, base, &st.round);
        if diff > self.params.gamma_pkts && subflows[r].in_slow_start() {
            let s = &mut subflows[r];
            s.cwnd_pkts = s.cwnd_pkts.min(target + 1.0);
            s.ssthresh_pkts = s.ssthresh_pkts.min(s.cwnd_pkts - 1.0);
        } else if subflows[r].in_slow_start() {
            slow_start(&mut subflows[r], acked, self.mode);
        } else {
            if diff >= self.alpha_pkts(r) {
                self.reweight(subflows, r, subflows[r].cwnd_pkts, rtt);
            }
            let alpha = self.alpha_pkts(r);
            let s = &mut subflows[r];
            if diff > alpha {
                s.cwnd_pkts -= 1.0;
                s.ssthresh_pkts = s.ssthresh_pkts.min(s.cwnd_pkts - 1.0);
            } else if diff < alpha {
                s.cwnd_pkts += 1.0;
            }
            self.drain(s, r, rtt, base as f64);
        }
        let s = &mut subflows[r];
        s.cwnd_pkts = s.cwnd_pkts.max(LINUX_MIN_CWND_PKTS).min(s.cwnd_clamp_pkts);
        // tcp_current_ssthresh at the end of every round, in both modes: the
        // threshold follows the window up again after a decrease lowered
        // it (as in Vegas), so a drained subflow slow-starts back to ¾ of
        // its window instead of crawling back one packet per round.
        match self.mode {
            CcMode::Reference => s.ssthresh_pkts = s.ssthresh_pkts.max(0.75 * s.cwnd_pkts),
            CcMode::Linux => linux_current_ssthresh(s),
        }
    }

    /// Queue drain (spec 11.1 step 3): when the queueing delay reaches
    /// twice its minimum, cut the window to `w·baseRTT/(2·RTT)`. Linux does
    /// not require a positive minimum, so a zero-queue round halves.
    ///
    /// Reference mode skips the first round after a drain: its samples
    /// measure the queue the cut has just emptied, and a minimum taken
    /// there makes the refill that follows (slow start back to ssthresh)
    /// look like a doubled queue, draining again every other round. Linux
    /// (`mptcp_wvegas_cong_avoid`) re-arms on that round.
    fn drain(&mut self, s: &mut SubflowCc, r: usize, rtt: f64, base: f64) {
        let q = rtt - base;
        let mode = self.mode;
        let st = slot(&mut self.subs, r);
        if mode == CcMode::Reference && std::mem::take(&mut st.drained) {
            return;
        }
        if st.q_min == 0.0 || st.q_min > q {
            st.q_min = q;
        }
        let armed = match self.mode {
            CcMode::Reference => st.q_min > 0.0,
            CcMode::Linux => true,
        };
        if armed && q >= 2.0 * st.q_min {
            s.cwnd_pkts = match self.mode {
                CcMode::Reference => s.cwnd_pkts * base / (2.0 * rtt),
                CcMode::Linux => {
                    let backoff = ((base as u64) << SCALE) / (2 * rtt as u64).max(1);
                    (((s.cwnd_pkts as u64) * backoff) >> SCALE) as f64
                }
            };
            st.q_min = 0.0;
            st.drained = mode == CcMode::Reference;
        }
    }
}

impl CongestionController for WVegas {
    fn name(&self) -> &'static str {
        "wvegas"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(s) = subflows.get_mut(r) else { return };
        let st = *slot(&mut self.subs, r);
        if !st.enabled || s.ca_state != CaState::Open {
            reno_on_ack(s, ack.acked_pkts, self.mode);
            return;
        }
        if st.beg_snd_nxt.is_some_and(|beg| s.snd_una <= beg) {
            if s.in_slow_start() {
                slow_start(s, ack.acked_pkts, self.mode);
            }
            return;
        }
        if st.round.count < MIN_ROUND_SAMPLES {
            reno_on_ack(s, ack.acked_pkts, self.mode);
        } else {
            self.adjust(subflows, r, ack.acked_pkts);
        }
        let snd_nxt = subflows[r].snd_nxt;
        let st = slot(&mut self.subs, r);
        st.beg_snd_nxt = Some(snd_nxt);
        st.round = RttRound::default();
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| vegas_reno_ssthresh(s, self.mode))
    }

    fn on_rto(&mut self, _subflows: &mut [SubflowCc], r: usize) {
        // CA_EVENT_LOSS: the rate leaves Σx until recomputed.
        let st = slot(&mut self.subs, r);
        st.rate_pkts_per_s = 0.0;
        st.rate_lx = 0;
    }

    fn on_state_change(&mut self, subflows: &mut [SubflowCc], r: usize, new: CaState) {
        let Some(s) = subflows.get(r) else { return };
        let st = slot(&mut self.subs, r);
        if new == CaState::Open {
            st.enable(s, self.mode);
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
            // mptcp_wvegas_init re-initialises everything, baseRTT too.
            *st = WVegasSubflow::default();
        }
        st.enable(s, self.mode);
    }

    fn on_subflow_added(&mut self, r: usize) {
        reset_slot(&mut self.subs, r);
    }

    fn on_subflow_removed(&mut self, _subflows: &[SubflowCc], r: usize) {
        let st = slot(&mut self.subs, r);
        st.rate_pkts_per_s = 0.0;
        st.rate_lx = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ca_subflow, close, cwnd_trace, example_pair};
    use crate::vegas::tests::run_round;
    use crate::{Vegas, VegasParams};

    #[test]
    fn wvegas_round_matches_icnp_example() {
        // Spec 11.3, subflow 2's rate already known (x2 = 100 pkt/s).
        let mut s = example_pair();
        let mut c = WVegas::new(CcMode::Reference);
        slot(&mut c.subs, 1).rate_pkts_per_s = 100.0;
        run_round(&mut c, &mut s, 0, &[40, 50, 60]);
        assert!(close(c.subs[0].rate_pkts_per_s, 200.0, 1e-9));
        assert!(close(c.alpha_pkts(0), 20.0 / 3.0, 1e-9));
        assert_eq!(s[0].cwnd_pkts, 11.0);
        assert!(close(c.subs[0].q_min, 10.0e9, 1e-3), "q_min = 10 ms, no drain");
        run_round(&mut c, &mut s, 1, &[180, 200, 220]);
        assert!(close(c.alpha_pkts(1), 10.0 / 3.0, 1e-9));
        assert_eq!(s[1].cwnd_pkts, 21.0);
    }

    #[test]
    fn linux_wvegas_round_matches_icnp_example() {
        // diff = 10·10000/50001 = 1 < α = 2: no reweighting, both +1.
        let mut s = example_pair();
        let mut c = WVegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 50, 60]);
        run_round(&mut c, &mut s, 1, &[180, 200, 220]);
        assert_eq!((s[0].cwnd_pkts, s[1].cwnd_pkts), (11.0, 21.0));
        assert_eq!((c.alpha_pkts(0), c.alpha_pkts(1)), (2.0, 2.0));
        assert_eq!((c.subs[0].rate_lx, c.subs[1].rate_lx), (0, 0));
    }

    #[test]
    fn linux_instant_rate_is_coarse() {
        // cwnd 10 at a 50 ms average: (10 << 16)/50001 = 13.
        let mut s = [ca_subflow(10.0, 50)];
        let mut c = WVegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[39, 50, 61]);
        assert_eq!(c.subs[0].rate_lx, 13);
        assert_eq!(c.subs[0].weight_lx, 1 << SCALE);
        assert_eq!(c.alpha_pkts(0), 10.0);
    }

    #[test]
    fn zero_queue_round_does_not_halve_in_reference_mode() {
        let mut s = [ca_subflow(10.0, 40)];
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn zero_queue_round_halves_in_linux_mode() {
        // +1 to 11, then q = 0 ≥ 2·0: 11·32768 >> 16 = 5.
        let mut s = [ca_subflow(10.0, 40)];
        let mut c = WVegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 5.0);
    }

    #[test]
    fn queue_drain_when_delay_doubles_its_minimum() {
        let mut s = [ca_subflow(10.0, 40)];
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 50, 60]);
        assert_eq!(s[0].cwnd_pkts, 11.0);
        // q = 20 ms ≥ 2·10 ms: w = 12·40/(2·60) = 4.
        run_round(&mut c, &mut s, 0, &[60, 60, 60]);
        assert!(close(s[0].cwnd_pkts, 4.0, 1e-12));
        assert_eq!(c.subs[0].q_min, 0.0);
    }

    #[test]
    fn reference_round_raises_ssthresh_to_three_quarters_of_cwnd() {
        // tcp_current_ssthresh after each round, as Linux: a drain or a
        // decrease leaves a threshold to slow-start back to.
        let mut s = [ca_subflow(20.0, 40)];
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 41, 42]);
        assert_eq!(s[0].cwnd_pkts, 21.0);
        assert!(close(s[0].ssthresh_pkts, 15.75, 1e-12), "ssthresh {}", s[0].ssthresh_pkts);
    }

    #[test]
    fn queue_drain_does_not_rearm_on_the_round_after_a_drain() {
        let mut s = [ca_subflow(10.0, 40)];
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 50, 60]);
        run_round(&mut c, &mut s, 0, &[60, 60, 60]);
        assert!(close(s[0].cwnd_pkts, 4.0, 1e-12), "drained");
        // Slow start back to ssthresh with an empty queue (q = 2 ms)...
        for _ in 0..20 {
            if !s[0].in_slow_start() {
                break;
            }
            run_round(&mut c, &mut s, 0, &[42, 42, 42]);
        }
        assert!(!s[0].in_slow_start());
        // ...then the first round of the drain rule sees the drained queue:
        // it must not become the minimum that the next round doubles.
        run_round(&mut c, &mut s, 0, &[42, 42, 42]);
        let w = s[0].cwnd_pkts;
        run_round(&mut c, &mut s, 0, &[46, 46, 46]);
        assert_eq!(s[0].cwnd_pkts, w + 1.0, "q = 6 ms against the 2 ms of a drained round: no drain");
    }

    #[test]
    fn linux_drain_rearms_on_the_next_round_as_the_kernel_does() {
        let mut s = [ca_subflow(30.0, 40)];
        s[0].ssthresh_pkts = 2.0;
        let mut c = WVegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[40, 44, 48]);
        run_round(&mut c, &mut s, 0, &[52, 52, 52]);
        assert!(s[0].cwnd_pkts < 20.0, "drained: {}", s[0].cwnd_pkts);
        s[0].ssthresh_pkts = 2.0;
        run_round(&mut c, &mut s, 0, &[42, 42, 42]);
        let w = s[0].cwnd_pkts;
        run_round(&mut c, &mut s, 0, &[46, 46, 46]);
        assert!(s[0].cwnd_pkts < w, "queue_delay re-armed at 2 ms, 6 ms drains: {w} -> {}", s[0].cwnd_pkts);
    }

    #[test]
    fn slow_start_exit_sets_ssthresh_below_cwnd() {
        let mut s = [ca_subflow(20.0, 40)];
        s[0].ssthresh_pkts = 1000.0;
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[40, 40, 40]);
        assert_eq!(s[0].cwnd_pkts, 21.0);
        // diff = 21·20/60 = 7 > γ: w = min(21, 21·40/60 + 1) = 15.
        run_round(&mut c, &mut s, 0, &[60, 60, 60]);
        assert!(close(s[0].cwnd_pkts, 15.0, 1e-12));
        assert!(close(s[0].ssthresh_pkts, 14.0, 1e-12));
    }

    #[test]
    fn single_subflow_wvegas_is_vegas_with_alpha_and_beta_ten() {
        let tens = VegasParams { alpha_pkts: 10.0, beta_pkts: 10.0, gamma_pkts: 1.0 };
        let rounds: Vec<&[u64]> = std::iter::once(&[40u64, 50, 60][..])
            .chain((0..60).map(|_| &[45u64, 50, 55][..]))
            .chain((0..30).map(|_| &[50u64, 55, 60][..]))
            .chain((0..10).map(|_| &[40u64, 42, 44][..]))
            .collect();
        let trace = |c: &mut dyn CongestionController| {
            let mut s = [ca_subflow(10.0, 40)];
            rounds
                .iter()
                .map(|samples| {
                    run_round(c, &mut s, 0, samples);
                    s[0].cwnd_pkts
                })
                .collect::<Vec<f64>>()
        };
        let vegas = trace(&mut Vegas::with_params(CcMode::Reference, tens));
        let wvegas = trace(&mut WVegas::new(CcMode::Reference));
        assert_eq!(vegas, wvegas);
        assert!(vegas.contains(&50.0) && vegas.contains(&37.0), "reaches α = 10 both ways");
    }

    #[test]
    fn weight_leaves_out_subflows_without_rtt() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = WVegas::new(CcMode::Reference);
        slot(&mut c.subs, 1).rate_pkts_per_s = 100.0;
        run_round(&mut c, &mut s, 0, &[40, 50, 60]);
        assert_eq!(c.subs[0].weight_frac, 1.0);
        assert_eq!(c.alpha_pkts(0), 10.0);
    }

    #[test]
    fn rto_zeroes_the_rate() {
        let mut s = [ca_subflow(10.0, 50)];
        for mode in [CcMode::Reference, CcMode::Linux] {
            let mut c = WVegas::new(mode);
            run_round(&mut c, &mut s, 0, &[39, 50, 61]);
            s[0].cwnd_pkts = 1.0;
            c.on_rto(&mut s, 0);
            assert_eq!(s[0].cwnd_pkts, 1.0);
            assert_eq!((c.subs[0].rate_pkts_per_s, c.subs[0].rate_lx), (0.0, 0));
            s[0].cwnd_pkts = 10.0;
        }
    }

    #[test]
    fn linux_return_to_open_resets_alpha_and_weight() {
        let mut s = [ca_subflow(10.0, 50)];
        let mut c = WVegas::new(CcMode::Linux);
        run_round(&mut c, &mut s, 0, &[39, 50, 61]);
        assert_eq!(c.alpha_pkts(0), 10.0);
        c.on_state_change(&mut s, 0, CaState::Recovery);
        assert!(!c.subs[0].enabled);
        c.on_state_change(&mut s, 0, CaState::Open);
        assert_eq!(c.alpha_pkts(0), 2.0);
        assert_eq!(c.subs[0].rate_lx, 0);
        assert!(c.subs[0].base.is_some(), "baseRTT survives");
    }

    #[test]
    fn reference_return_to_open_keeps_alpha() {
        let mut s = [ca_subflow(10.0, 50)];
        let mut c = WVegas::new(CcMode::Reference);
        run_round(&mut c, &mut s, 0, &[39, 50, 61]);
        c.on_state_change(&mut s, 0, CaState::Recovery);
        c.on_state_change(&mut s, 0, CaState::Open);
        assert_eq!(c.alpha_pkts(0), 10.0);
        assert_eq!(c.subs[0].round.count, 0);
    }

    #[test]
    fn wvegas_halves_on_loss() {
        let s = [ca_subflow(11.0, 50)];
        assert_eq!(WVegas::new(CcMode::Linux).ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(WVegas::new(CcMode::Reference).ssthresh_on_loss(&s, 0), 5.5);
    }

    #[test]
    fn wvegas_keeps_cwnd_at_one_after_rto() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            let trace = cwnd_trace(&mut WVegas::new(mode));
            assert!(trace.iter().all(|w| *w >= 1.0));
        }
    }
}
