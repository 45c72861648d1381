//! Kelly–Voice coupled congestion control (F. Kelly, T. Voice, "Stability
//! of end-to-end algorithms for joint routing and rate control", CCR 2005;
//! in the form Q. Peng, A. Walid, J. Hwang, S. Low, "Multipath TCP:
//! Analysis, Design, and Implementation", IEEE/ACM ToN 2016, write it).
//! Per packet acknowledged on `r` in congestion avoidance:
//!
//! ```text
//! Δw_r = (w_r / rtt_r²) / (Σ_{k∈R} w_k / rtt_k)²          (packets)
//! ```
//!
//! and a loss halves the subflow's own window (Reno). It is OLIA's first
//! term alone (spec section 9.1) and LIA's α/w_total without the cap. One
//! subflow: `(w/rtt²)/(w/rtt)² = 1/w`, Reno.
//!
//! Not in Linux. Linux mode is an integer rendering: Linux's Reno counter
//! (`tcp_cong_avoid_ai`, per packet acknowledged) with `1/Δw_r` packets
//! (truncated) as the window, and Linux's Reno ssthresh.

use crate::common::{after_slow_start, coupled, linux_acked, linux_reno_ca, reno_ssthresh, reno_unless_coupled};
use crate::{AckSample, CcMode, CongestionController, SubflowCc};

pub struct KellyVoice {
    mode: CcMode,
}

impl KellyVoice {
    pub fn new(mode: CcMode) -> Self {
        KellyVoice { mode }
    }
}

/// `S = Σ_k w̃_k · rtt_r/rtt_k`, packets: `Δw_r = w_r/S²`. Written with RTT
/// ratios so that one subflow gives `S = w` exactly and its Linux counter
/// is Reno's to the packet.
fn rate_sum_pkts(subflows: &[SubflowCc], r: usize) -> f64 {
    let rtt_r = subflows[r].srtt_s();
    coupled(subflows).map(|k| subflows[k].w_tilde() * (rtt_r / subflows[k].srtt_s())).sum()
}

impl CongestionController for KellyVoice {
    fn name(&self) -> &'static str {
        "kellyvoice"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, self.mode) else { return };
        let sum = rate_sum_pkts(subflows, r);
        let s = &mut subflows[r];
        let w = s.cwnd_pkts.max(1.0);
        match self.mode {
            // w_r/(rtt_r² (Σ w_k/rtt_k)²) = w_r/S² per packet acknowledged
            CcMode::Reference => s.cwnd_pkts = (s.cwnd_pkts + acked * w / (sum * sum)).min(s.cwnd_clamp_pkts),
            // One packet per ⌊S²/w_r⌋ packets acknowledged.
            CcMode::Linux => linux_reno_ca(s, (sum * sum / w).floor(), linux_acked(acked)),
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
    use crate::CaState;

    #[test]
    fn kellyvoice_increase_matches_common_example() {
        // Spec 9.4, OLIA's first term: 4000/90000 and 500/90000.
        let mut c = KellyVoice::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 4000.0 / 90000.0, 1e-12));
        let mut s = example_pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts - 20.0, 500.0 / 90000.0, 1e-12));
    }

    #[test]
    fn kellyvoice_increase_scales_with_packets_acknowledged() {
        let mut c = KellyVoice::new(CcMode::Reference);
        let mut s = example_pair();
        c.on_ack(&mut s, 0, &ack(3.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 3.0 * 4000.0 / 90000.0, 1e-12));
    }

    #[test]
    fn kellyvoice_halves_its_own_window_on_loss() {
        // Spec 12 table, Reno column: 5 / 10.
        let s = example_pair();
        let mut c = KellyVoice::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 10.0);
    }

    #[test]
    fn linux_kellyvoice_adds_one_packet_per_s_squared_over_w_packets() {
        // Subflow 1: 90000/4000 = 22.5 → +1 per 22 packets acknowledged.
        let mut c = KellyVoice::new(CcMode::Linux);
        let mut s = example_pair();
        for _ in 0..21 {
            c.on_ack(&mut s, 0, &ack(1.0));
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn linux_kellyvoice_counts_packets_not_ack_events() {
        // Subflow 2: 90000/500 = 180 packets per +1; 90 ACKs of 2 packets.
        let mut c = KellyVoice::new(CcMode::Linux);
        let mut s = example_pair();
        for _ in 0..89 {
            c.on_ack(&mut s, 1, &ack(2.0));
        }
        assert_eq!(s[1].cwnd_pkts, 20.0);
        c.on_ack(&mut s, 1, &ack(2.0));
        assert_eq!(s[1].cwnd_pkts, 21.0);
    }

    #[test]
    fn sums_use_ssthresh_of_a_subflow_in_recovery() {
        // w̃2 = 10: S = 10 + 10·50/200 = 12.5, Δw1 = 10/156.25.
        let mut s = example_pair();
        s[1].ca_state = CaState::Recovery;
        s[1].ssthresh_pkts = 10.0;
        let mut c = KellyVoice::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts - 10.0, 10.0 / 156.25, 1e-12));
    }

    #[test]
    fn subflow_without_rtt_is_left_out_and_runs_reno_itself() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = KellyVoice::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 20.05, 1e-12));
    }

    #[test]
    fn kellyvoice_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut KellyVoice::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_kellyvoice_single_subflow_reduces_to_linux_reno() {
        assert_reduces_to_reno(&mut KellyVoice::new(CcMode::Linux), CcMode::Linux);
    }
}
