//! COUPLED, the fully coupled rule as Wischik, Raiciu, Greenhalgh and
//! Handley state and evaluate it (NSDI 2011; spec section 6): every subflow
//! grows by `1/w_total` and a loss on `r` removes half of the *total*
//! window from `r`. It moves all traffic to the least congested paths. Uses
//! no RTT. (Kelly and Voice's coupled controller, which weighs the increase
//! by RTT and halves the subflow's own window, is `kellyvoice`.)
//!
//! Not in Linux. Linux mode is an integer rendering: Linux's Reno counter
//! with `w_total` as the window (one packet per `w_total` packets
//! acknowledged) and an integer ssthresh.

use crate::common::{after_slow_start, coupled, linux_acked, linux_reno_ca, reno_ssthresh, reno_unless_coupled, w_total_pkts};
use crate::{AckSample, CcMode, CongestionController, SubflowCc};

/// Smallest window a COUPLED decrease leaves, packets (spec 6; htsim floors
/// at one MSS).
const MIN_CWND_PKTS: f64 = 1.0;

pub struct Coupled {
    mode: CcMode,
}

impl Coupled {
    pub fn new(mode: CcMode) -> Self {
        Coupled { mode }
    }
}

impl CongestionController for Coupled {
    fn name(&self) -> &'static str {
        "coupled"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if reno_unless_coupled(subflows, r, ack.acked_pkts, self.mode) {
            return;
        }
        let Some(acked) = after_slow_start(&mut subflows[r], ack.acked_pkts, self.mode) else { return };
        let w_total = w_total_pkts(subflows);
        let s = &mut subflows[r];
        match self.mode {
            // w_r += N / w_total
            CcMode::Reference => {
                s.cwnd_pkts = (s.cwnd_pkts + acked / w_total).min(s.cwnd_clamp_pkts);
            }
            CcMode::Linux => linux_reno_ca(s, w_total, linux_acked(acked)),
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        let Some(own) = subflows.get(r) else { return 2.0 };
        if !own.is_coupled() {
            return reno_ssthresh(own, self.mode);
        }
        if coupled(subflows).count() <= 1 {
            // w_total = w_r: the decrease is Reno's halving, floor included (spec 6, 13.1).
            return reno_ssthresh(own, self.mode);
        }
        // w_r − w_total/2, floored at one packet (spec 6). Reference mode
        // counts its own window as the RFC 5681 FlightSize, the base Reno
        // halves (spec 2); linux mode halves cwnd as tcp_reno_ssthresh does.
        let reduced = match self.mode {
            CcMode::Reference => {
                let others = w_total_pkts(subflows) - own.w_tilde();
                own.flight_pkts - (others + own.flight_pkts) / 2.0
            }
            CcMode::Linux => (own.w_tilde() - w_total_pkts(subflows) / 2.0).floor(),
        };
        reduced.max(MIN_CWND_PKTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, assert_reduces_to_reno, close, example_pair};
    use crate::CaState;

    #[test]
    fn coupled_increase_matches_common_example() {
        // Spec 12: 1/30 on both subflows.
        let mut s = example_pair();
        let mut c = Coupled::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.0 + 1.0 / 30.0, 1e-12));
        let mut s = example_pair();
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!(close(s[1].cwnd_pkts, 20.0 + 1.0 / 30.0, 1e-12));
    }

    #[test]
    fn coupled_decrease_matches_common_example_and_floors_at_one() {
        // Spec 12: max(10 − 15, 1) = 1 and 20 − 15 = 5.
        let s = example_pair();
        let mut c = Coupled::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 1.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 5.0);
    }

    #[test]
    fn reference_decrease_applies_to_flight_size_like_reno() {
        // The subflow's own share of w_total is its RFC 5681 FlightSize:
        // 16 of subflow 2's 20 packets out, w_total = 10 + 16: 16 − 13 = 3.
        let mut s = example_pair();
        s[1].flight_pkts = 16.0;
        let mut c = Coupled::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 3.0);
    }

    #[test]
    fn single_subflow_decrease_equals_reno_in_both_modes() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            for (cwnd, flight) in [(10.0, 6.0), (10.0, 10.0), (10.0, 13.0), (3.0, 3.0)] {
                let mut s = vec![crate::test_support::ca_subflow(cwnd, 50)];
                s[0].flight_pkts = flight;
                let reno = crate::Reno::new(mode).ssthresh_on_loss(&s, 0);
                assert_eq!(Coupled::new(mode).ssthresh_on_loss(&s, 0), reno, "{mode:?} cwnd {cwnd} flight {flight}");
            }
        }
    }

    #[test]
    fn linux_coupled_decrease_is_integer_and_floors_at_one() {
        let mut s = example_pair();
        s[1].cwnd_pkts = 21.0;
        let mut c = Coupled::new(CcMode::Linux);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 1.0);
        assert_eq!(c.ssthresh_on_loss(&s, 1), 5.0);
    }

    #[test]
    fn linux_coupled_adds_one_packet_per_w_total_acknowledged() {
        let mut s = example_pair();
        let mut c = Coupled::new(CcMode::Linux);
        for _ in 0..29 {
            c.on_ack(&mut s, 0, &ack(1.0));
        }
        assert_eq!(s[0].cwnd_pkts, 10.0);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 11.0);
    }

    #[test]
    fn w_total_uses_ssthresh_of_a_subflow_in_recovery() {
        let mut s = example_pair();
        s[1].ca_state = CaState::Recovery;
        s[1].ssthresh_pkts = 10.0;
        s[1].cwnd_pkts = 13.0;
        let mut c = Coupled::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.05, 1e-12));
    }

    #[test]
    fn coupled_single_subflow_reduces_to_reno() {
        assert_reduces_to_reno(&mut Coupled::new(CcMode::Reference), CcMode::Reference);
    }

    #[test]
    fn linux_coupled_single_subflow_reduces_to_linux_reno() {
        assert_reduces_to_reno(&mut Coupled::new(CcMode::Linux), CcMode::Linux);
    }

    #[test]
    fn only_subflow_without_rtt_runs_reno() {
        let mut s = example_pair();
        s.truncate(1);
        s[0].srtt = None;
        let mut c = Coupled::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
    }

    #[test]
    fn subflow_without_rtt_is_left_out_of_w_total() {
        let mut s = example_pair();
        s[1].srtt = None;
        let mut c = Coupled::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert!(close(s[0].cwnd_pkts, 10.1, 1e-12));
    }
}
