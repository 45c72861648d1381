//! OLIA, Opportunistic Linked Increases (draft-khalili-mptcp-congestion-
//! control; Linux module "olia"), spec section 9. LIA's first term without
//! the cap plus a term `α_r/w_r` that moves window from the largest-window
//! paths to the best (most bytes between losses per RTT²) but under-used
//! paths. The increase may be negative; the window never drops below 1.
//!
//! Linux mode reproduces `mptcp_olia.c`: the 2^10-scaled counter that moves
//! once per ACK event and drops its remainder at each step, `w̃` in the sums,
//! exact cross-multiplied best-path test in wrapping u64, 32-bit loss marks,
//! and the guarded shift of the marks.

use crate::common::{
    after_slow_start, coupled, established_count, reno_ssthresh, reno_unless_coupled, reset_slot, slot, slow_start,
};
use crate::{AckSample, CaState, CcMode, CongestionController, SubflowCc};

/// Linux `scale`: the counter and windows are scaled by 2^10.
const SCALE: u32 = 10;
/// The counter moves the window at ±(2^10 − 1).
const CNT_LIMIT: i64 = (1 << SCALE) - 1;

/// Per-subflow OLIA state.
#[derive(Clone, Copy, Debug, Default)]
struct OliaSubflow {
    /// `[loss1, loss2]` sequence marks, bytes (`loss3` is the current
    /// `snd_una`); `None` until the subflow is first seen.
    marks: Option<[u64; 2]>,
    /// Linux `mptcp_snd_cwnd_cnt`, 2^10-scaled packets.
    cnt_scaled: i64,
    /// An RTO retransmission is outstanding (Linux `icsk_retransmits != 0`).
    rto_pending: bool,
}

pub struct Olia {
    mode: CcMode,
    subs: Vec<OliaSubflow>,
}

/// OLIA's `α_r` as a fraction `num/den` (Linux `epsilon_num/den`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Epsilon {
    num: i64,
    den: u64,
}

const EPSILON_ZERO: Epsilon = Epsilon { num: 0, den: 1 };

impl Olia {
    pub fn new(mode: CcMode) -> Self {
        Olia { mode, subs: Vec::new() }
    }

    /// Marks of subflows never seen start at their current `snd_una`; the
    /// subflow being ACKed starts where it was before this ACK, so that a
    /// subflow without losses has `ℓ` = bytes acknowledged so far.
    fn sync_marks(&mut self, subflows: &[SubflowCc], r: usize, acked_bytes: u64) {
        for (k, s) in subflows.iter().enumerate() {
            let st = slot(&mut self.subs, k);
            if st.marks.is_none() {
                let start = if k == r { s.snd_una.saturating_sub(acked_bytes) } else { s.snd_una };
                st.marks = Some([start, start]);
            }
        }
    }

    /// `ℓ_k = max(ℓ1, ℓ2)`, bytes; 32-bit wrapping in linux mode.
    fn ell(&self, subflows: &[SubflowCc], k: usize) -> u64 {
        let [loss1, loss2] = self.subs.get(k).and_then(|st| st.marks).unwrap_or([0, 0]);
        let loss3 = subflows[k].snd_una;
        match self.mode {
            CcMode::Reference => loss2.saturating_sub(loss1).max(loss3.saturating_sub(loss2)),
            CcMode::Linux => {
                let l1 = (loss2 as u32).wrapping_sub(loss1 as u32);
                let l2 = (loss3 as u32).wrapping_sub(loss2 as u32);
                u64::from(l1.max(l2))
            }
        }
    }

    /// A loss event on `r` (spec 9.1): `loss1 = loss2; loss2 = loss3`.
    /// Linux shifts only when something was acknowledged since the last
    /// shift and no RTO retransmission is pending (spec 9.2).
    fn shift_marks(&mut self, subflows: &[SubflowCc], r: usize) {
        self.sync_marks(subflows, usize::MAX, 0);
        let Some(s) = subflows.get(r) else { return };
        let linux = self.mode == CcMode::Linux;
        let st = slot(&mut self.subs, r);
        let Some([_, loss2]) = st.marks else { return };
        let unchanged = (s.snd_una as u32) == (loss2 as u32);
        if linux && (unchanged || st.rto_pending) {
            return;
        }
        // Reference mode shifts on every loss event, progress or not.
        st.marks = Some([loss2, s.snd_una]);
    }

    fn on_ack_reference(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, CcMode::Reference) else { return };
        let eps = self.reference_alpha(subflows, r);
        let rate_sum: f64 = coupled(subflows).map(|k| subflows[k].w_tilde() / subflows[k].srtt_s()).sum();
        let s = &mut subflows[r];
        let (w, rtt) = (s.cwnd_pkts, s.srtt_s());
        // (w_r/rtt_r²) / (Σ w_k/rtt_k)² + α_r/w_r
        let per_pkt = (w / (rtt * rtt)) / (rate_sum * rate_sum) + eps / w;
        s.cwnd_pkts = (w + acked * per_pkt).clamp(1.0, s.cwnd_clamp_pkts.max(1.0));
    }

    /// Reference `α_r` from the sets `M`, `B` and `C = B \ M` (spec 9.1).
    fn reference_alpha(&self, subflows: &[SubflowCc], r: usize) -> f64 {
        let members: Vec<usize> = coupled(subflows).collect();
        let n = members.len() as f64;
        let max_w = members.iter().map(|&k| subflows[k].w_tilde()).fold(0.0, f64::max);
        let metric = |k: usize| {
            let rtt = subflows[k].srtt_s();
            self.ell(subflows, k) as f64 / (rtt * rtt)
        };
        let best = members.iter().map(|&k| metric(k)).fold(0.0, f64::max);
        let in_m = |k: usize| subflows[k].w_tilde() == max_w;
        let in_c = |k: usize| metric(k) == best && !in_m(k);
        let m_size = members.iter().filter(|&&k| in_m(k)).count() as f64;
        let c_size = members.iter().filter(|&&k| in_c(k)).count() as f64;
        if c_size == 0.0 {
            0.0
        } else if in_c(r) {
            1.0 / (n * c_size)
        } else if in_m(r) {
            -1.0 / (n * m_size)
        } else {
            0.0
        }
    }

    fn on_ack_linux(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if subflows[r].in_slow_start() {
            slow_start(&mut subflows[r], ack.acked_pkts, CcMode::Linux);
            return;
        }
        let eps = self.linux_epsilon(subflows, r);
        let rate = linux_rate(subflows, subflows[r].linux_srtt_us());
        let s = &mut subflows[r];
        let cwnd = s.cwnd_pkts as u64;
        let cw = cwnd << SCALE;
        let cw_sq = eps.den.wrapping_mul(cw).wrapping_mul(cw);
        let inc_den = match eps.den.wrapping_mul(cwnd).wrapping_mul(rate) {
            0 => 1,
            d => d,
        };
        let step = |num: u64| i64::try_from((num << SCALE) / inc_den).unwrap_or(i64::MAX);
        let st = slot(&mut self.subs, r);
        if eps.num == -1 {
            if cw_sq < rate {
                st.cnt_scaled -= step(rate - cw_sq);
            } else {
                st.cnt_scaled += step(cw_sq - rate);
            }
        } else {
            let num = (eps.num as u64).wrapping_mul(rate).wrapping_add(cw_sq);
            st.cnt_scaled += step(num);
        }
        if st.cnt_scaled >= CNT_LIMIT {
            if s.cwnd_pkts < s.cwnd_clamp_pkts {
                s.cwnd_pkts += 1.0;
            }
            st.cnt_scaled = 0;
        } else if st.cnt_scaled <= -CNT_LIMIT {
            s.cwnd_pkts = (s.cwnd_pkts - 1.0).max(1.0);
            st.cnt_scaled = 0;
        }
    }

    /// `mptcp_get_epsilon` for subflow `r` (spec 9.2).
    fn linux_epsilon(&self, subflows: &[SubflowCc], r: usize) -> Epsilon {
        let members: Vec<usize> = coupled(subflows).filter(|&k| subflows[k].linux_srtt_us() > 0).collect();
        let rtt_sq = |k: usize| {
            let s = subflows[k].linux_srtt_us();
            s.wrapping_mul(s)
        };
        let w = |k: usize| subflows[k].w_tilde() as u64;
        let max_w = members.iter().map(|&k| w(k)).max().unwrap_or(0);
        let (mut best_int, mut best_rtt) = (0u64, 1u64);
        for &k in &members {
            let l = self.ell(subflows, k);
            if l.wrapping_mul(best_rtt) >= best_int.wrapping_mul(rtt_sq(k)) {
                (best_int, best_rtt) = (l, rtt_sq(k));
            }
        }
        let is_best = |k: usize| self.ell(subflows, k).wrapping_mul(best_rtt) == best_int.wrapping_mul(rtt_sq(k));
        let m = members.iter().filter(|&&k| w(k) == max_w).count() as u64;
        let b_not_m = members.iter().filter(|&&k| w(k) != max_w && is_best(k)).count() as u64;
        let n = established_count(subflows) as u64;
        if b_not_m == 0 || !members.contains(&r) {
            EPSILON_ZERO
        } else if w(r) < max_w && is_best(r) {
            Epsilon { num: 1, den: n * b_not_m }
        } else if w(r) == max_w {
            Epsilon { num: -1, den: n * m }
        } else {
            EPSILON_ZERO
        }
    }
}

/// `mptcp_get_rate`: `(1 + Σ (w̃_k << 10)·s_r/s_k)²` (spec 9.2).
fn linux_rate(subflows: &[SubflowCc], s_r: u64) -> u64 {
    let sum = coupled(subflows)
        .filter(|&k| subflows[k].linux_srtt_us() > 0)
        .map(|k| ((subflows[k].w_tilde() as u64) << SCALE).wrapping_mul(s_r) / subflows[k].linux_srtt_us())
        .fold(1u64, u64::wrapping_add);
    sum.wrapping_mul(sum)
}

impl CongestionController for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if r >= subflows.len() {
            return;
        }
        self.sync_marks(subflows, r, ack.acked_bytes);
        // New data acknowledged: any RTO retransmission is over.
        slot(&mut self.subs, r).rto_pending = false;
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

    fn on_rto(&mut self, subflows: &mut [SubflowCc], r: usize) {
        // Entering `Loss` is a loss event for the ℓ bookkeeping (spec 9.1).
        // It is handled here, not in on_state_change, so that a transport
        // reporting both does not shift twice; backed-off RTOs of the same
        // episode (no ACK in between) do not shift again.
        if !slot(&mut self.subs, r).rto_pending {
            self.shift_marks(subflows, r);
        }
        slot(&mut self.subs, r).rto_pending = true;
    }

    fn on_state_change(&mut self, subflows: &mut [SubflowCc], r: usize, new: CaState) {
        match new {
            CaState::Recovery | CaState::Cwr => self.shift_marks(subflows, r),
            CaState::Open => slot(&mut self.subs, r).rto_pending = false,
            CaState::Loss | CaState::Disorder => {}
        }
    }

    fn on_subflow_added(&mut self, r: usize) {
        reset_slot(&mut self.subs, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, ca_subflow, close, cwnd_trace, example_pair};

    /// Section 9.4: `ℓ1 = ℓ2 = 100 kB` on both subflows.
    fn example() -> (Olia, Vec<SubflowCc>, Olia) {
        let mut s = example_pair();
        let mk = |mode| {
            let mut c = Olia::new(mode);
            for k in 0..2 {
                slot(&mut c.subs, k).marks = Some([0, 100_000]);
            }
            c
        };
        for sub in &mut s {
            sub.snd_una = 200_000;
        }
        (mk(CcMode::Reference), s, mk(CcMode::Linux))
    }

    #[test]
    fn olia_alpha_matches_draft_example() {
        let (c, s, _) = example();
        assert!(close(c.reference_alpha(&s, 0), 0.5, 1e-12));
        assert!(close(c.reference_alpha(&s, 1), -0.5, 1e-12));
    }

    #[test]
    fn olia_increase_matches_draft_example() {
        // Spec 9.4: +0.094444 and −0.019444 per packet acknowledged.
        let (mut c, mut s, _) = example();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 0.094444, 1e-6));
        let (mut c, mut s, _) = example();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts - 20.0, -0.019444, 1e-6));
    }

    #[test]
    fn olia_halves_on_loss() {
        // Spec 12: 5 / 10.
        let (mut c, s, mut lx) = example();
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 10.0);
        assert_eq!(lx.ssthresh_on_loss(&s, 1), 10.0);
    }

    #[test]
    fn linux_olia_counter_matches_draft_example() {
        // Spec 9.4: cnt += 96 per ACK → +1 after 11 ACKs.
        let (_, mut s, mut c) = example();
        for i in 1..=10 {
            c.on_ack(&mut s, 0, &ack(1.0));
            assert_eq!(c.subs[0].cnt_scaled, 96 * i);
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
        assert_eq!(c.subs[0].cnt_scaled, 0, "the remainder is discarded");
    }

    #[test]
    fn linux_olia_negative_counter_matches_draft_example() {
        // Spec 9.4: cnt −= 19 per ACK → −1 after 54 ACKs.
        let (_, mut s, mut c) = example();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert_eq!(c.subs[1].cnt_scaled, -19);
        for _ in 0..52 {
            c.on_ack(&mut s, 1, &ack(1.0));
        }
        assert_eq!(s[1].cwnd_pkts, 20.0);
        c.on_ack(&mut s, 1, &ack(1.0));
        assert_eq!(s[1].cwnd_pkts, 19.0);
    }

    #[test]
    fn linux_olia_counts_ack_events_not_packets() {
        let (_, mut s, mut c) = example();
        c.on_ack(&mut s, 0, &ack(3.0));
        assert_eq!(c.subs[0].cnt_scaled, 96);
    }

    #[test]
    fn negative_increments_never_take_cwnd_below_one() {
        // Subflow 1 holds the largest window, subflow 2 the best path.
        let mut s = vec![ca_subflow(1.2, 200), ca_subflow(1.0, 10)];
        let mut c = Olia::new(CcMode::Reference);
        for k in 0..2 {
            slot(&mut c.subs, k).marks = Some([0, 0]);
        }
        s[1].snd_una = 1_000_000;
        assert!(close(c.reference_alpha(&s, 0), -0.5, 1e-12));
        c.on_ack(&mut s, 0, &ack(5.0));
        assert_eq!(s[0].cwnd_pkts, 1.0, "−2.07 packets clamped at 1");
        for _ in 0..5 {
            c.on_ack(&mut s, 0, &ack(5.0));
            assert!(s[0].cwnd_pkts >= 1.0);
        }
    }

    #[test]
    fn linux_negative_increments_never_take_cwnd_below_one() {
        let mut s = example_pair();
        s[0].cwnd_pkts = 2.0;
        s[1].cwnd_pkts = 1.0;
        let mut c = Olia::new(CcMode::Linux);
        for k in 0..2 {
            slot(&mut c.subs, k).marks = Some([0, 0]);
        }
        s[1].snd_una = 1_000_000;
        for _ in 0..2000 {
            c.on_ack(&mut s, 0, &ack(1.0));
            assert!(s[0].cwnd_pkts >= 1.0);
        }
    }

    #[test]
    fn loss_marks_track_bytes_between_losses() {
        let mut s = example_pair();
        let mut c = Olia::new(CcMode::Reference);
        s[0].snd_una = 1460;
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(c.subs[0].marks, Some([0, 0]));
        assert_eq!(c.ell(&s, 0), 1460);
        s[0].snd_una = 100_000;
        s[0].ca_state = CaState::Recovery;
        c.on_state_change(&mut s, 0, CaState::Recovery);
        assert_eq!(c.subs[0].marks, Some([0, 100_000]));
        s[0].snd_una = 130_000;
        assert_eq!(c.ell(&s, 0), 100_000, "ℓ1 dominates");
        s[0].snd_una = 250_000;
        assert_eq!(c.ell(&s, 0), 150_000, "ℓ2 dominates");
    }

    #[test]
    fn rto_shifts_the_loss_marks() {
        let mut s = example_pair();
        let mut c = Olia::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        s[0].snd_una = 50_000;
        s[0].cwnd_pkts = 1.0;
        c.on_rto(&mut s, 0);
        assert_eq!(s[0].cwnd_pkts, 1.0);
        assert_eq!(c.subs[0].marks, Some([0, 50_000]));
    }

    #[test]
    fn backed_off_rtos_of_one_episode_shift_once() {
        let mut s = example_pair();
        let mut c = Olia::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        s[0].snd_una = 50_000;
        c.on_rto(&mut s, 0);
        c.on_rto(&mut s, 0);
        assert_eq!(c.subs[0].marks, Some([0, 50_000]));
        c.on_ack(&mut s, 0, &ack(1.0));
        s[0].snd_una = 80_000;
        c.on_rto(&mut s, 0);
        assert_eq!(c.subs[0].marks, Some([50_000, 80_000]));
    }

    #[test]
    fn linux_does_not_shift_twice_without_progress_or_during_rto() {
        let mut s = example_pair();
        let mut c = Olia::new(CcMode::Linux);
        c.on_ack(&mut s, 0, &ack(1.0));
        s[0].snd_una = 50_000;
        c.on_rto(&mut s, 0);
        assert_eq!(c.subs[0].marks, Some([0, 50_000]));
        s[0].snd_una = 60_000;
        c.on_rto(&mut s, 0);
        assert_eq!(c.subs[0].marks, Some([0, 50_000]), "retransmission pending");
        c.on_state_change(&mut s, 0, CaState::Open);
        c.on_state_change(&mut s, 0, CaState::Recovery);
        assert_eq!(c.subs[0].marks, Some([50_000, 60_000]));
        c.on_state_change(&mut s, 0, CaState::Recovery);
        assert_eq!(c.subs[0].marks, Some([50_000, 60_000]), "loss3 == loss2");
    }

    #[test]
    fn linux_marks_wrap_at_32_bits() {
        let mut s = example_pair();
        let mut c = Olia::new(CcMode::Linux);
        let base = u64::from(u32::MAX) - 999;
        slot(&mut c.subs, 0).marks = Some([base, base]);
        s[0].snd_una = base + 3000;
        assert_eq!(c.ell(&s, 0), 3000);
    }

    #[test]
    fn equal_windows_give_no_alpha_term() {
        let mut s = example_pair();
        s[1].cwnd_pkts = 10.0;
        let c = Olia::new(CcMode::Reference);
        assert_eq!(c.reference_alpha(&s, 0), 0.0);
        assert_eq!(c.reference_alpha(&s, 1), 0.0);
    }

    #[test]
    fn olia_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut Olia::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_olia_keeps_cwnd_at_one_after_rto() {
        let trace = cwnd_trace(&mut Olia::new(CcMode::Linux));
        assert!(trace.iter().all(|w| *w >= 1.0 && w.fract() == 0.0));
    }

    #[test]
    fn subflow_without_rtt_is_excluded() {
        let (mut c, mut s, _) = example();
        s[1].srtt = None;
        // Only subflow 1 is coupled: M = B = {1}, α = 0, increase 1/w.
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
    }
}
