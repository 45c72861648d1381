//! SEMICOUPLED (spec section 7): every subflow grows by `a/w_total` and a
//! loss halves only the subflow's own window. With the adaptive option `a`
//! is LIA's α (the ε = 1 member of htsim's COUPLED_EPSILON family; LIA is
//! this algorithm plus the `1/w_r` cap).
//!
//! Not in Linux. Linux mode is an integer rendering: Linux's Reno counter
//! with `w_total/a` (rounded) as the window and an integer ssthresh.

use crate::common::{after_slow_start, linux_acked, linux_reno_ca, reno_ssthresh, reno_unless_coupled, w_total_pkts};
use crate::lia::reference_alpha;
use crate::{AckSample, CcMode, CongestionController, SubflowCc};

/// Where SEMICOUPLED's aggressiveness `a` comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aggressiveness {
    /// A fixed `a`, dimensionless (default 1).
    Constant(f64),
    /// `a` = LIA's α (spec 8.1), recomputed on every ACK.
    Adaptive,
}

pub struct SemiCoupled {
    mode: CcMode,
    a: Aggressiveness,
}

impl SemiCoupled {
    /// `a = 1`.
    pub fn new(mode: CcMode) -> Self {
        Self::with_aggressiveness(mode, Aggressiveness::Constant(1.0))
    }

    /// `a` = LIA's α.
    pub fn adaptive(mode: CcMode) -> Self {
        Self::with_aggressiveness(mode, Aggressiveness::Adaptive)
    }

    /// A non-finite or non-positive constant falls back to `a = 1` rather
    /// than stalling or reversing growth.
    pub fn with_aggressiveness(mode: CcMode, a: Aggressiveness) -> Self {
        let a = match a {
            Aggressiveness::Constant(v) if !(v.is_finite() && v > 0.0) => Aggressiveness::Constant(1.0),
            other => other,
        };
        SemiCoupled { mode, a }
    }

    fn a(&self, subflows: &[SubflowCc]) -> f64 {
        match self.a {
            Aggressiveness::Constant(v) => v,
            Aggressiveness::Adaptive => reference_alpha(subflows).unwrap_or(1.0),
        }
    }
}

impl CongestionController for SemiCoupled {
    fn name(&self) -> &'static str {
        "semicoupled"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, self.mode) else { return };
        let a = self.a(subflows);
        let w_total = w_total_pkts(subflows);
        let s = &mut subflows[r];
        match self.mode {
            // w_r += a·N / w_total
            CcMode::Reference => {
                s.cwnd_pkts = (s.cwnd_pkts + a * acked / w_total).min(s.cwnd_clamp_pkts);
            }
            CcMode::Linux => linux_reno_ca(s, (w_total / a).round(), linux_acked(acked)),
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| reno_ssthresh(s, self.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, close, example_pair};

    #[test]
    fn semicoupled_increase_matches_common_example() {
        // Spec 12 (a = 1): 1/30 on both subflows.
        let mut c = SemiCoupled::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.0 + 1.0 / 30.0, 1e-12));
        // subflow 2 saw w_total = 30 + 1/30
        assert!(close(s[1].cwnd_pkts, 20.0 + 1.0 / (30.0 + 1.0 / 30.0), 1e-12));
    }

    #[test]
    fn semicoupled_halves_its_own_window_on_loss() {
        let s = example_pair();
        let mut c = SemiCoupled::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 10.0);
    }

    #[test]
    fn adaptive_semicoupled_is_lia_without_the_cap() {
        // α = 4/3: 4/90 on both subflows, as LIA in the common example.
        let mut c = SemiCoupled::adaptive(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts - 20.0, 4.0 / 90.0, 1e-12));
    }

    #[test]
    fn constant_aggressiveness_scales_the_increase() {
        let mut c = SemiCoupled::with_aggressiveness(CcMode::Reference, Aggressiveness::Constant(3.0));
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
    }

    #[test]
    fn invalid_aggressiveness_falls_back_to_one() {
        let c = SemiCoupled::with_aggressiveness(CcMode::Reference, Aggressiveness::Constant(f64::NAN));
        assert_eq!(c.a, Aggressiveness::Constant(1.0));
    }

    #[test]
    fn linux_semicoupled_adds_one_packet_per_w_total_acknowledged() {
        let mut c = SemiCoupled::new(CcMode::Linux);
        let mut s = example_pair();
        for _ in 0..29 {
            c.on_ack(&mut s, 1, &ack(1.0));
        }
        assert_eq!(s[1].cwnd_pkts, 20.0);
        c.on_ack(&mut s, 1, &ack(1.0));
        assert_eq!(s[1].cwnd_pkts, 21.0);
    }

    #[test]
    fn semicoupled_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut SemiCoupled::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_semicoupled_single_subflow_reduces_to_linux_reno() {
        assert_reduces_to_reno(&mut SemiCoupled::new(CcMode::Linux), CcMode::Linux);
    }

    #[test]
    fn adaptive_semicoupled_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut SemiCoupled::adaptive(CcMode::Reference), CcMode::Reference);
    }
}
