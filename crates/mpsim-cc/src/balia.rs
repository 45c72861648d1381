//! BALIA, Balanced Linked Adaptation (draft-walid-mptcp-congestion-control;
//! Linux module "balia"), spec section 10. The increase balances
//! responsiveness and friendliness through `α_r = x_max/x_r`; a loss
//! removes `(w_r/2)·min(α_r, 1.5)` packets, so a subflow slower than the
//! fastest backs off harder (down to a quarter of its window).
//!
//! Linux mode reproduces `mptcp_balia.c`: byte rates with the current
//! subflow's MSS, integer `alpha`, the 2^25 overflow guard, `ai` ("ACK
//! events per +1") and `md` computed at recomputation time (stale by up to
//! one increment), and the `cwnd <= ssthresh` slow-start test.

use crate::common::{
    after_slow_start, coupled, established_count, linux_ack_event_counter, linux_slow_start_le, reno_ssthresh,
    reno_unless_coupled, reset_slot, slot,
};
use crate::{AckSample, CaState, CcMode, CongestionController, SubflowCc};

/// `alpha_scale`: `md` uses α scaled by 2^10.
const ALPHA_SCALE: u32 = 10;
/// `rate_scale_limit`: rates are scaled down while `x_max > 2^25`.
const RATE_SCALE_LIMIT: u32 = 25;
/// `scale_num`: each scale-down step shifts rates by 5 bits.
const SCALE_STEP: u32 = 5;
/// `USEC_PER_SEC << 3`: turns `srtt_us` (8·SRTT in µs) into seconds.
const SRTT_US_PER_S: u64 = 8_000_000;
/// Reference-mode floor of the BALIA ssthresh, packets (Reno compatible).
const MIN_SSTHRESH_PKTS: f64 = 2.0;
/// Linux's floor with several subflows (`max(cwnd − md, 1)`), as the
/// draft's "1 MSS".
const LINUX_MIN_SSTHRESH_PKTS: f64 = 1.0;

/// Linux `ai`/`md` of one subflow, from its last recomputation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LinuxParams {
    /// ACK events per +1 packet (0 = "use cwnd").
    ai: u64,
    /// Packets removed on a congestion event.
    md: u64,
}

pub struct Balia {
    mode: CcMode,
    /// Smallest ssthresh a BALIA decrease leaves with several subflows,
    /// packets (one subflow decreases as Reno).
    floor_pkts: f64,
    /// Linux per-subflow `ai`/`md`; `None` until first computed.
    linux: Vec<Option<LinuxParams>>,
}

/// Reference rates `x_k = w̃_k/τ_k` (packets/s): `(x_r, x_max, Σ x)`.
fn reference_rates(subflows: &[SubflowCc], r: usize) -> Option<(f64, f64, f64)> {
    let rate = |k: usize| subflows[k].w_tilde() / subflows[k].srtt_s();
    let (mut x_max, mut x_sum) = (0.0_f64, 0.0);
    for k in coupled(subflows) {
        x_max = x_max.max(rate(k));
        x_sum += rate(k);
    }
    subflows[r].is_coupled().then(|| (rate(r), x_max, x_sum))
}

/// `mptcp_balia_recalc_ai` for subflow `r` (spec 10.2).
fn linux_params(subflows: &[SubflowCc], r: usize) -> LinuxParams {
    if established_count(subflows) <= 1 {
        return LinuxParams::default();
    }
    let mss = u64::from(subflows[r].mss_bytes);
    let rates: Vec<(usize, u64)> = coupled(subflows)
        .filter(|&k| subflows[k].linux_srtt_us() > 0)
        .map(|k| {
            let num = mss.wrapping_mul(subflows[k].cwnd_pkts as u64).wrapping_mul(SRTT_US_PER_S);
            (k, num / subflows[k].linux_srtt_us())
        })
        .collect();
    let mut rate = rates.iter().find(|&&(k, _)| k == r).map_or(0, |&(_, x)| x);
    let mut max_rate = rates.iter().map(|&(_, x)| x).max().unwrap_or(0);
    if rate == 0 {
        return LinuxParams::default();
    }
    let alpha = max_rate / rate;
    let mut shift = 0;
    while max_rate > (1u64 << RATE_SCALE_LIMIT) {
        max_rate >>= SCALE_STEP;
        shift += SCALE_STEP;
    }
    let sum_rate = rates.iter().map(|&(_, x)| x >> shift).fold(0u64, u64::wrapping_add);
    rate >>= shift;
    let cwnd = subflows[r].cwnd_pkts as u64;
    // ai = ((Σx)²·10 / (x_r + x_max)) · w_r / (4·x_r + x_max), two truncations
    let ai = sum_rate.wrapping_mul(sum_rate).wrapping_mul(10) / (rate + max_rate).max(1);
    let ai = ai.wrapping_mul(cwnd) / ((rate << 2) + max_rate).max(1);
    let ai = if ai == 0 { cwnd } else { ai };
    let md = ((cwnd >> 1) * (alpha << ALPHA_SCALE).min((3 << ALPHA_SCALE) >> 1)) >> ALPHA_SCALE;
    LinuxParams { ai, md }
}

impl Balia {
    pub fn new(mode: CcMode) -> Self {
        Self::with_floor(mode, None)
    }

    /// `floor_pkts` overrides the mode's ssthresh floor (2 packets in
    /// reference mode, 1 in linux mode and in the draft).
    pub fn with_floor(mode: CcMode, floor_pkts: Option<f64>) -> Self {
        let default = match mode {
            CcMode::Reference => MIN_SSTHRESH_PKTS,
            CcMode::Linux => LINUX_MIN_SSTHRESH_PKTS,
        };
        Balia { mode, floor_pkts: floor_pkts.unwrap_or(default).max(1.0), linux: Vec::new() }
    }

    fn recalc(&mut self, subflows: &[SubflowCc], r: usize) -> LinuxParams {
        let p = linux_params(subflows, r);
        *slot(&mut self.linux, r) = Some(p);
        p
    }

    fn params(&mut self, subflows: &[SubflowCc], r: usize) -> LinuxParams {
        match *slot(&mut self.linux, r) {
            Some(p) => p,
            None => self.recalc(subflows, r),
        }
    }

    fn on_ack_reference(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, CcMode::Reference) else { return };
        let Some((x_r, x_max, x_sum)) = reference_rates(subflows, r) else { return };
        let s = &mut subflows[r];
        // (x_r + x_max)(4·x_r + x_max) / (10 · w_r · (Σx)²) per packet
        let per_pkt = (x_r + x_max) * (4.0 * x_r + x_max) / (10.0 * s.cwnd_pkts * x_sum * x_sum);
        s.cwnd_pkts = (s.cwnd_pkts + acked * per_pkt).min(s.cwnd_clamp_pkts);
    }

    fn on_ack_linux(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if subflows[r].cwnd_pkts <= subflows[r].ssthresh_pkts {
            linux_slow_start_le(&mut subflows[r], ack.acked_pkts);
            self.recalc(subflows, r);
            return;
        }
        let thresh = if established_count(subflows) > 1 { self.params(subflows, r).ai } else { subflows[r].cwnd_pkts as u64 };
        if linux_ack_event_counter(&mut subflows[r], thresh) {
            self.recalc(subflows, r);
        }
    }
}

impl CongestionController for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        match self.mode {
            CcMode::Reference => self.on_ack_reference(subflows, r, ack),
            CcMode::Linux => self.on_ack_linux(subflows, r, ack),
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        let Some(own) = subflows.get(r) else { return MIN_SSTHRESH_PKTS };
        if !own.is_coupled() {
            return reno_ssthresh(own, self.mode);
        }
        match self.mode {
            CcMode::Reference => {
                let Some((x_r, x_max, _)) = reference_rates(subflows, r) else {
                    return reno_ssthresh(own, self.mode);
                };
                // w_r − (w_r/2)·min(α_r, 1.5), with w_r the RFC 5681
                // FlightSize the transport hands over, the base Reno halves
                // (spec 2), so that one subflow (α = 1) decreases as Reno.
                let w = own.flight_pkts;
                (w - w / 2.0 * (x_max / x_r).min(1.5)).max(self.floor_pkts)
            }
            CcMode::Linux if established_count(subflows) <= 1 => reno_ssthresh(own, self.mode),
            CcMode::Linux => {
                let md = self.params(subflows, r).md;
                (own.cwnd_pkts - md as f64).max(self.floor_pkts)
            }
        }
    }

    fn on_rto(&mut self, subflows: &mut [SubflowCc], r: usize) {
        if self.mode == CcMode::Linux && r < subflows.len() {
            // CA_EVENT_LOSS
            self.recalc(subflows, r);
        }
    }

    fn on_state_change(&mut self, subflows: &mut [SubflowCc], r: usize, new: CaState) {
        if self.mode == CcMode::Linux && new == CaState::Open && r < subflows.len() {
            // CA_EVENT_COMPLETE_CWR at the end of a window reduction.
            self.recalc(subflows, r);
        }
    }

    fn on_subflow_added(&mut self, r: usize) {
        reset_slot(&mut self.linux, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, ca_subflow, close, cwnd_trace, example_pair};

    #[test]
    fn balia_increase_matches_draft_example() {
        // Spec 10.3: 0.044444 and 0.010000 per packet acknowledged.
        let mut c = Balia::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 0.044444, 1e-6));
        let mut s = example_pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts - 20.0, 0.01, 1e-12));
    }

    #[test]
    fn balia_decrease_matches_draft_example() {
        // Spec 10.3: 10 − 5·1 = 5 and 20 − 10·1.5 = 5.
        let s = example_pair();
        let mut c = Balia::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 5.0);
    }

    #[test]
    fn linux_balia_parameters_match_draft_example() {
        let s = example_pair();
        assert_eq!(linux_params(&s, 0), LinuxParams { ai: 22, md: 5 });
        assert_eq!(linux_params(&s, 1), LinuxParams { ai: 100, md: 15 });
    }

    #[test]
    fn linux_balia_ssthresh_matches_draft_example() {
        let s = example_pair();
        let mut c = Balia::new(CcMode::Linux);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 5.0);
    }

    #[test]
    fn linux_balia_grows_one_packet_per_ai_plus_one_acks() {
        for (r, acks) in [(0usize, 23), (1, 101)] {
            let mut s = example_pair();
            let start = s[r].cwnd_pkts;
            let mut c = Balia::new(CcMode::Linux);
            for _ in 0..acks - 1 {
                c.on_ack(&mut s, r, &ack(2.0));
            }
            assert_eq!(s[r].cwnd_pkts, start, "subflow {r}");
            c.on_ack(&mut s, r, &ack(2.0));
            assert_eq!(s[r].cwnd_pkts, start + 1.0, "subflow {r}");
        }
    }

    #[test]
    fn linux_md_is_stale_until_recomputed() {
        let mut s = example_pair();
        let mut c = Balia::new(CcMode::Linux);
        c.on_ack(&mut s, 1, &ack(1.0));
        s[1].cwnd_pkts = 40.0;
        // md still 15 from cwnd 20: 40 − 15
        assert_eq!(c.ssthresh_on_loss(&s, 1), 25.0);
        c.on_rto(&mut s, 1);
        // equal rates now: alpha = 1, md = 20
        assert_eq!(c.ssthresh_on_loss(&s, 1), 20.0);
    }

    #[test]
    fn linux_rates_are_scaled_down_above_2_pow_25() {
        // 9000 B · 1000 pkts / 1 ms ≈ 9·10⁹ B/s: needs the guard.
        let mut s = vec![ca_subflow(1000.0, 1), ca_subflow(1000.0, 1)];
        for sub in &mut s {
            sub.mss_bytes = 9000;
        }
        let p = linux_params(&s, 0);
        // Equal rates: ai ≈ (2x)²·10/(2x)·w/(5x) = 4·w = 4000 minus truncation.
        assert!((3990..=4000).contains(&p.ai), "ai = {}", p.ai);
        assert_eq!(p.md, 500);
    }

    #[test]
    fn linux_single_established_subflow_uses_reno() {
        let mut s = example_pair();
        s[1].established = false;
        assert_eq!(linux_params(&s, 0), LinuxParams::default());
        let mut c = Balia::new(CcMode::Linux);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        for _ in 0..10 {
            c.on_ack(&mut s, 0, &ack(1.0));
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0, "cwnd + 1 ACK events per packet");
    }

    #[test]
    fn linux_balia_slow_start_tests_cwnd_le_ssthresh() {
        let mut s = example_pair();
        s[0].ssthresh_pkts = 10.0;
        let mut c = Balia::new(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn balia_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut Balia::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_balia_keeps_cwnd_at_one_after_rto() {
        let trace = cwnd_trace(&mut Balia::new(CcMode::Linux));
        assert!(trace.iter().all(|w| *w >= 1.0 && w.fract() == 0.0));
    }

    #[test]
    fn reference_decrease_applies_to_flight_size_like_reno() {
        // RFC 5681's FlightSize, as Reno: subflow 1 has 8 of its 10
        // packets out, α1 = 1 (x1 = 200 is the fastest): 8 − 4·1 = 4.
        let mut s = example_pair();
        s[0].flight_pkts = 8.0;
        let mut c = Balia::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 4.0);
        // Subflow 2 (α2 = 2, capped at 1.5) with 16 packets out: 16 − 8·1.5 = 4.
        s[1].flight_pkts = 16.0;
        assert_eq!(c.ssthresh_on_loss(&s, 1), 4.0);
    }

    #[test]
    fn single_subflow_decrease_equals_reno_in_both_modes() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            for flight in [6.0, 10.0, 13.0] {
                let mut s = vec![ca_subflow(10.0, 50)];
                s[0].flight_pkts = flight;
                let reno = crate::Reno::new(mode).ssthresh_on_loss(&s, 0);
                assert_eq!(Balia::new(mode).ssthresh_on_loss(&s, 0), reno, "{mode:?} flight {flight}");
            }
        }
    }

    #[test]
    fn reference_ssthresh_is_at_least_two() {
        let s = vec![ca_subflow(2.0, 400), ca_subflow(20.0, 10)];
        let mut c = Balia::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 2.0);
    }

    #[test]
    fn ssthresh_floor_is_settable_in_both_modes() {
        // Subflow 1 slow (α = 10 capped at 1.5): 2 − 1.5 = 0.5 → floor.
        let s = vec![ca_subflow(2.0, 400), ca_subflow(20.0, 10)];
        assert_eq!(Balia::new(CcMode::Reference).ssthresh_on_loss(&s, 0), 2.0);
        assert_eq!(Balia::with_floor(CcMode::Reference, Some(1.0)).ssthresh_on_loss(&s, 0), 1.0);
        // Linux: md = (2 >> 1)·1.5 = 1, 2 − 1 = 1; floor 1 by default.
        assert_eq!(Balia::new(CcMode::Linux).ssthresh_on_loss(&s, 0), 1.0);
        assert_eq!(Balia::with_floor(CcMode::Linux, Some(2.0)).ssthresh_on_loss(&s, 0), 2.0);
    }

    #[test]
    fn subflow_without_rtt_runs_reno() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = Balia::new(CcMode::Reference);
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 20.05, 1e-12));
        // Subflow 1 alone in the set: α = 1, increase 1/w.
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
    }
}
