//! LIA, Linked Increases (RFC 6356; Linux MPTCP module "coupled", later
//! "lia"), spec section 8. Each subflow grows by
//! `min(α/w_total, 1/w_r)` per packet acknowledged, where α makes the
//! connection as aggressive as one TCP on its best path; losses halve the
//! subflow's own window.
//!
//! Linux mode reproduces `mptcp_coupled.c`: α in fixed point, recomputed
//! only at the moments the kernel does, a counter that needs `thresh + 1`
//! ACK events per packet, and the `srtt_us` precision quirk of spec 8.2
//! (which reference mode must not copy).

use crate::common::{
    after_slow_start, coupled, established_count, linux_ack_event_counter, linux_slow_start_le, reno_ssthresh,
    reno_unless_coupled,
};
use crate::{AckSample, CaState, CcMode, CongestionController, SubflowCc};

/// `alpha_scale_num`: α's numerator is scaled by 2^32.
const ALPHA_SCALE_NUM: u32 = 32;
/// `alpha_scale_den`: the denominator's windows are scaled by 2^10.
const ALPHA_SCALE_DEN: u32 = 10;
/// `alpha_scale = num − 2·den`: α_lx ≈ 2^12 · α / w_total.
const ALPHA_SCALE: u32 = 12;

pub struct Lia {
    mode: CcMode,
    /// Linux α (connection-wide, fixed point); `None` until first computed.
    alpha_lx: Option<u64>,
    /// Linux `forced_update`: recompute α on the next CA ACK.
    forced_update: bool,
}

impl Lia {
    pub fn new(mode: CcMode) -> Self {
        Lia { mode, alpha_lx: None, forced_update: false }
    }

    fn on_ack_reference(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, CcMode::Reference) else { return };
        let Some((alpha, w_total)) = reference_alpha_and_w_total(subflows) else {
            return;
        };
        let s = &mut subflows[r];
        // RFC 6356: N · min(α / w_total, 1 / w_r)
        let inc = acked * (alpha / w_total).min(1.0 / s.cwnd_pkts);
        s.cwnd_pkts = (s.cwnd_pkts + inc).min(s.cwnd_clamp_pkts);
    }

    fn on_ack_linux(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        // The old modules test `cwnd <= ssthresh` (spec 1.5) and end the
        // ACK after slow start.
        if subflows[r].cwnd_pkts <= subflows[r].ssthresh_pkts {
            linux_slow_start_le(&mut subflows[r], ack.acked_pkts);
            self.alpha_lx = Some(linux_alpha(subflows));
            return;
        }
        if self.forced_update || self.alpha_lx.is_none() {
            self.alpha_lx = Some(linux_alpha(subflows));
            self.forced_update = false;
        }
        let cwnd = subflows[r].cwnd_pkts as u64;
        let thresh = if established_count(subflows) > 1 {
            let alpha = self.alpha_lx.unwrap_or(1).max(1);
            ((1u64 << ALPHA_SCALE) / alpha).max(cwnd)
        } else {
            cwnd
        };
        if linux_ack_event_counter(&mut subflows[r], thresh) {
            self.alpha_lx = Some(linux_alpha(subflows));
        }
    }
}

/// Reference α (spec 8.1) over the coupled set, using `w̃` and SRTT;
/// `None` when no subflow is coupled.
pub(crate) fn reference_alpha(subflows: &[SubflowCc]) -> Option<f64> {
    reference_alpha_and_w_total(subflows).map(|(alpha, _)| alpha)
}

/// α and `w_total` (spec 1.1) from one pass over the coupled set; `None`
/// when no subflow is coupled.
fn reference_alpha_and_w_total(subflows: &[SubflowCc]) -> Option<(f64, f64)> {
    let mut w_total = 0.0;
    let mut best = 0.0_f64;
    let mut rate_sum = 0.0;
    for k in coupled(subflows) {
        let (w, rtt) = (subflows[k].w_tilde(), subflows[k].srtt_s());
        w_total += w;
        best = best.max(w / (rtt * rtt));
        rate_sum += w / rtt;
    }
    (rate_sum > 0.0).then(|| (w_total * best / (rate_sum * rate_sum), w_total))
}

/// `mptcp_ccc_recalc_alpha` (spec 8.2). Raw `snd_cwnd`, `srtt_us` = 8·SRTT
/// in µs, u64 arithmetic that wraps as the kernel's does.
fn linux_alpha(subflows: &[SubflowCc]) -> u64 {
    let members: Vec<(u64, u64)> =
        coupled(subflows).map(|k| (subflows[k].cwnd_pkts as u64, subflows[k].linux_srtt_us())).filter(|&(_, s)| s > 0).collect();
    // Ties go to the later subflow; when every `tmp` truncates to 0 that
    // is simply the last one (the precision quirk of spec 8.2).
    let mut max_num = 0u64;
    let mut best = None;
    for &(cwnd, s) in &members {
        let tmp = (cwnd << ALPHA_SCALE_NUM) / s.wrapping_mul(s).max(1);
        if tmp >= max_num {
            max_num = tmp;
            best = Some((cwnd, s));
        }
    }
    let Some((best_cwnd, best_s)) = best else { return 1 };
    let den: u64 =
        members.iter().map(|&(cwnd, s)| (cwnd << ALPHA_SCALE_DEN).wrapping_mul(best_s) / s).fold(0u64, u64::wrapping_add);
    let den_sq = den.wrapping_mul(den).max(1);
    ((best_cwnd << ALPHA_SCALE_NUM) / den_sq).max(1)
}

impl CongestionController for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        // Spec 8.3: without an RTT (or outside the set) LIA is Reno.
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        match self.mode {
            CcMode::Reference => self.on_ack_reference(subflows, r, ack),
            CcMode::Linux => self.on_ack_linux(subflows, r, ack),
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| reno_ssthresh(s, self.mode))
    }

    fn on_rto(&mut self, subflows: &mut [SubflowCc], _r: usize) {
        if self.mode == CcMode::Linux {
            // CA_EVENT_LOSS recomputes α.
            self.alpha_lx = Some(linux_alpha(subflows));
        }
    }

    fn on_state_change(&mut self, _subflows: &mut [SubflowCc], _r: usize, _new: CaState) {
        // Every set_state raises the shared flag (spec 8.2).
        self.forced_update = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, ca_subflow, close, cwnd_trace, example_pair};

    #[test]
    fn lia_alpha_matches_rfc6356_example() {
        let a = reference_alpha(&example_pair()).unwrap_or(0.0);
        assert!(close(a, 4.0 / 3.0, 1e-12));
    }

    #[test]
    fn lia_increase_matches_rfc6356_example() {
        // Spec 8.4: 0.044444 packets per packet acknowledged on both subflows.
        let mut c = Lia::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 0.044444, 1e-6));
        let mut s = example_pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts - 20.0, 0.044444, 1e-6));
    }

    #[test]
    fn lia_increase_is_multiplied_by_packets_acknowledged() {
        let mut c = Lia::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(2.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 2.0 * 4.0 / 90.0, 1e-12));
    }

    #[test]
    fn lia_caps_the_increase_at_reno() {
        // α = 42·20000/400² = 5.25 → α/w_total = 0.125 > 1/40.
        let pair = || vec![ca_subflow(2.0, 10), ca_subflow(40.0, 200)];
        let mut c = Lia::new(CcMode::Reference);
        let mut s = pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 40.025, 1e-12));
        let mut s = pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 2.125, 1e-12));
    }

    #[test]
    fn lia_halves_on_loss() {
        let s = example_pair();
        let mut c = Lia::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 10.0);
    }

    #[test]
    fn linux_lia_alpha_takes_the_last_subflow_when_tmp_truncates() {
        // Spec 8.4: tmp1 = tmp2 = 0 → best = subflow 2 → α_lx = 22.
        assert_eq!(linux_alpha(&example_pair()), 22);
    }

    #[test]
    fn linux_lia_grows_one_packet_per_187_acks_with_the_tie_quirk() {
        for r in 0..2 {
            let mut s = example_pair();
            let start = s[r].cwnd_pkts;
            let mut c = Lia::new(CcMode::Linux);
            for _ in 0..186 {
                c.on_ack(&mut s, r, &ack(1.0));
            }
            assert_eq!(s[r].cwnd_pkts, start, "subflow {r}");
            c.on_ack(&mut s, r, &ack(1.0));
            assert_eq!(s[r].cwnd_pkts, start + 1.0, "subflow {r}");
        }
    }

    #[test]
    fn linux_lia_grows_one_packet_per_23_acks_when_best_is_found() {
        // Subflow 1 last in the list: the tie quirk now picks the true best.
        let mut s = example_pair();
        s.reverse();
        assert_eq!(linux_alpha(&s), 182);
        let mut c = Lia::new(CcMode::Linux);
        for _ in 0..22 {
            c.on_ack(&mut s, 1, &ack(1.0));
        }
        assert_eq!(s[1].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 1, &ack(1.0));
        assert_eq!(s[1].cwnd_pkts, 11.0);
    }

    #[test]
    fn linux_lia_counts_ack_events_not_packets() {
        let mut s = example_pair();
        let mut c = Lia::new(CcMode::Linux);
        for _ in 0..186 {
            c.on_ack(&mut s, 0, &ack(2.0));
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        assert_eq!(s[0].cwnd_cnt, 186);
    }

    #[test]
    fn linux_lia_recomputes_alpha_after_a_state_change() {
        let mut s = example_pair();
        let mut c = Lia::new(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(c.alpha_lx, Some(22));
        s[1].cwnd_pkts = 40.0;
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(c.alpha_lx, Some(22), "α is stale until something forces it");
        c.on_state_change(&mut s, 1, CaState::Open);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(c.alpha_lx, Some(linux_alpha(&s)));
        assert_ne!(c.alpha_lx, Some(22));
    }

    #[test]
    fn linux_lia_slow_start_tests_cwnd_le_ssthresh() {
        let mut s = example_pair();
        s[0].ssthresh_pkts = 10.0;
        let mut c = Lia::new(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
        assert_eq!(c.alpha_lx, Some(linux_alpha(&s)));
    }

    #[test]
    fn lia_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut Lia::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_lia_keeps_cwnd_at_one_after_rto() {
        // cwnd_trace asserts cwnd == 1 right after on_rto.
        let trace = cwnd_trace(&mut Lia::new(CcMode::Linux));
        assert!(trace.iter().all(|w| *w >= 1.0 && w.fract() == 0.0));
    }

    #[test]
    fn subflow_without_rtt_is_excluded_from_the_sums() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = Lia::new(CcMode::Reference);
        // Only subflow 1 is coupled: α = 1, increase 1/w.
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 20.05, 1e-12));
    }

    #[test]
    fn subflow_in_slow_start_counts_in_w_total() {
        let mut s = example_pair();
        s[1].ssthresh_pkts = 100.0;
        let mut c = Lia::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 4.0 / 90.0, 1e-12));
    }

    #[test]
    fn recovery_window_counts_as_ssthresh() {
        let mut s = example_pair();
        s[1].ca_state = CaState::Recovery;
        s[1].ssthresh_pkts = 20.0;
        s[1].cwnd_pkts = 23.0;
        let mut c = Lia::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 4.0 / 90.0, 1e-12));
    }
}
