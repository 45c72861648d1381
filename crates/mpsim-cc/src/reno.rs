//! Reno / NewReno window rules, uncoupled (spec section 2). Also the
//! single-path baseline every coupled controller must reduce to.

use crate::common::{reno_on_ack, reno_ssthresh};
use crate::{AckSample, CcMode, CongestionController, SubflowCc};

pub struct Reno {
    mode: CcMode,
}

impl Reno {
    pub fn new(mode: CcMode) -> Self {
        Reno { mode }
    }
}

impl CongestionController for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample) {
        if let Some(s) = subflows.get_mut(r) {
            reno_on_ack(s, ack.acked_pkts, self.mode);
        }
    }

    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64 {
        subflows.get(r).map_or(2.0, |s| reno_ssthresh(s, self.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::SimTime;

    fn ack(n: f64) -> AckSample {
        AckSample { now: SimTime::ZERO, acked_pkts: n, acked_bytes: (n * 1460.0) as u64, rtt: None }
    }

    fn ca(cwnd: f64) -> SubflowCc {
        let mut s = SubflowCc::new(cwnd, 1460);
        s.ssthresh_pkts = 1.0;
        s
    }

    #[test]
    fn reno_increase_matches_common_example() {
        // Spec section 12: 0.1 for w = 10, 0.05 for w = 20.
        let mut s = [ca(10.0), ca(20.0)];
        let mut c = Reno::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        c.on_ack(&mut s, 1, &ack(1.0));
        assert!((s[0].cwnd_pkts - 10.1).abs() < 1e-12);
        assert!((s[1].cwnd_pkts - 20.05).abs() < 1e-12);
    }

    #[test]
    fn reno_halves_on_loss_with_a_floor_of_two() {
        let mut s = [ca(10.0)];
        s[0].flight_pkts = 10.0;
        let mut c = Reno::new(CcMode::Reference);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
        s[0].flight_pkts = 3.0;
        assert_eq!(c.ssthresh_on_loss(&s, 0), 2.0);
    }

    #[test]
    fn linux_reno_uses_cwnd_not_flight() {
        let mut s = [ca(11.0)];
        s[0].flight_pkts = 2.0;
        let mut c = Reno::new(CcMode::Linux);
        assert_eq!(c.ssthresh_on_loss(&s, 0), 5.0);
    }

    #[test]
    fn slow_start_then_congestion_avoidance() {
        let mut s = [SubflowCc::new(2.0, 1460)];
        s[0].ssthresh_pkts = 4.0;
        let mut c = Reno::new(CcMode::Reference);
        c.on_ack(&mut s, 0, &ack(1.0));
        assert_eq!(s[0].cwnd_pkts, 3.0);
        c.on_ack(&mut s, 0, &ack(2.0));
        // 1 packet used to reach ssthresh 4, 1 left for CA: + 1/4
        assert!((s[0].cwnd_pkts - 4.25).abs() < 1e-12);
    }
}
