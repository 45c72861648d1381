//! RTT estimation and the retransmission timeout (RFC 6298).

use mpsim_core::SimDuration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Option<SimDuration>,
    pub rttvar: SimDuration,
    pub min_rtt: Option<SimDuration>,
    pub latest: Option<SimDuration>,
    min_rto: SimDuration,
    max_rto: SimDuration,
    initial_rto: SimDuration,
}

impl RttEstimator {
    pub fn new(min_rto: SimDuration, max_rto: SimDuration, initial_rto: SimDuration) -> Self {
        RttEstimator { srtt: None, rttvar: SimDuration::ZERO, min_rtt: None, latest: None, min_rto, max_rto, initial_rto }
    }

    /// RFC 6298 (2.2)/(2.3): the first sample sets srtt = R, rttvar = R/2;
    /// later ones update rttvar with the old srtt, then srtt.
    pub fn on_sample(&mut self, r: SimDuration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = SimDuration(r.0 / 2);
            }
            Some(s) => {
                let err = s.0.abs_diff(r.0);
                self.rttvar = SimDuration((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(SimDuration((7 * s.0 + r.0) / 8));
            }
        }
    }

    /// Current RTO before backoff: srtt + 4 rttvar, clamped to [min, max].
    pub fn rto(&self) -> SimDuration {
        match self.srtt {
            None => self.initial_rto,
            Some(s) => {
                let raw = s + SimDuration(4 * self.rttvar.0);
                raw.max(self.min_rto).min(self.max_rto)
            }
        }
    }

    /// RTO after `backoff` doublings, capped at the maximum.
    pub fn backed_off_rto(&self, backoff: u32) -> SimDuration {
        self.rto().saturating_mul(1u64 << backoff.min(30)).min(self.max_rto.max(self.rto()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(SimDuration::from_millis(200), SimDuration::from_secs(120), SimDuration::from_secs(1))
    }

    #[test]
    fn first_sample_sets_rttvar_to_half() {
        let mut e = est();
        assert_eq!(e.rto(), SimDuration::from_secs(1));
        e.on_sample(SimDuration::from_millis(100));
        assert_eq!(e.rttvar, SimDuration::from_millis(50));
        assert_eq!(e.rto(), SimDuration::from_millis(300));
    }

    #[test]
    fn later_samples_follow_rfc6298_gains() {
        let mut e = est();
        e.on_sample(SimDuration::from_millis(100));
        e.on_sample(SimDuration::from_millis(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5 ms; srtt = 7/8*100 + 1/8*200 = 112.5 ms
        assert_eq!(e.rttvar, SimDuration(62_500_000_000));
        assert_eq!(e.srtt, Some(SimDuration(112_500_000_000)));
    }

    #[test]
    fn rto_is_clamped_and_backoff_doubles_to_the_cap() {
        let mut e = est();
        e.on_sample(SimDuration::from_millis(1));
        assert_eq!(e.rto(), SimDuration::from_millis(200));
        assert_eq!(e.backed_off_rto(2), SimDuration::from_millis(800));
        assert_eq!(e.backed_off_rto(20), SimDuration::from_secs(120));
    }
}
