//! EWTCP, equally weighted TCP (spec section 5): every subflow runs Reno
//! with its increase scaled by `a = 1/n²`, so `n` subflows through one
//! bottleneck together take one Reno share. Uses no RTT.
//!
//! EWTCP is not in Linux. Linux mode is an integer rendering in the style of
//! htsim's "COUPLED_TCP": Linux's Reno counter with the window multiplied by
//! `n²`, i.e. one packet per `w·n²` packets acknowledged.

use crate::common::{after_slow_start, coupled, linux_acked, linux_reno_ca, reno_ssthresh, reno_unless_coupled};
use crate::{AckSample, CcMode, CongestionController, SubflowCc};

pub struct Ewtcp {
    mode: CcMode,
}

impl Ewtcp {
    pub fn new(mode: CcMode) -> Self {
        Ewtcp { mode }
    }
}

/// `1/a = n²`, with `n` the number of coupled subflows (spec 1.7).
fn inverse_weight(subflows: &[SubflowCc]) -> f64 {
    let n = coupled(subflows).count() as f64;
    n * n
}

impl CongestionController for Ewtcp {
    fn name(&self) -> &'static str {
        "ewtcp"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        // Spec 1.7: a subflow outside the coupled set runs plain Reno.
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        let inv_a = inverse_weight(subflows);
        let s = &mut subflows[r];
        let Some(acked) = after_slow_start(s, ack.acked_pkts, self.mode) else { return };
        match self.mode {
            // w += a·N / w
            CcMode::Reference => {
                s.cwnd_pkts = (s.cwnd_pkts + acked / (inv_a * s.cwnd_pkts)).min(s.cwnd_clamp_pkts);
            }
            CcMode::Linux => {
                let thresh = s.cwnd_pkts * inv_a;
                linux_reno_ca(s, thresh, linux_acked(acked));
            }
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| reno_ssthresh(s, self.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, ca_subflow, close, example_pair};

    #[test]
    fn ewtcp_increase_matches_common_example() {
        // Spec 12: a = 1/4 → 0.025 and 0.0125 packets per packet acknowledged.
        let mut s = example_pair();
        let mut c = Ewtcp::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.025, 1e-12));
        assert!(close(s[1].cwnd_pkts, 20.0125, 1e-12));
    }

    #[test]
    fn ewtcp_halves_on_loss_like_reno() {
        let s = example_pair();
        let mut c = Ewtcp::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 10.0);
    }

    #[test]
    fn linux_ewtcp_adds_one_packet_per_n_squared_windows() {
        let mut s = example_pair();
        let mut c = Ewtcp::new(CcMode::Linux);
        for _ in 0..39 {
            c.on_ack(&mut s, 0, &ack(1.0));
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn ewtcp_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut Ewtcp::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_ewtcp_single_subflow_reduces_to_linux_reno() {
        assert_reduces_to_reno(&mut Ewtcp::new(CcMode::Linux), CcMode::Linux);
    }

    #[test]
    fn subflow_without_rtt_is_left_out_of_n() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = Ewtcp::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        // n = 1: plain Reno for subflow 1, and Reno for the excluded one.
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 20.05, 1e-12));
    }

    #[test]
    fn removing_a_subflow_changes_the_weight() {
        let mut s = vec![ca_subflow(10.0, 50), ca_subflow(10.0, 50), ca_subflow(10.0, 50)];
        let mut c = Ewtcp::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.0 + 1.0 / 90.0, 1e-12));
        s[2].can_send = false;
        c.on_subflow_removed(&s, 2);
        s[0].cwnd_pkts = 10.0;
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.025, 1e-12));
    }

    #[test]
    fn slow_start_is_uncoupled() {
        let mut s = example_pair();
        s[0].ssthresh_pkts = 100.0;
        let mut c = Ewtcp::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }
}
