//! RTT estimation and the retransmission timeout: RFC 6298 in reference
//! mode; in linux mode the variance tracking of Linux `tcp_rtt_estimator`
//! (net/ipv4/tcp_input.c), which keeps the RTO at least `rto_min` above
//! the smoothed RTT.

use mpsim_core::SimDuration;

/// RFC 6298's clock granularity G: the RTO is at least G above SRTT.
/// 1 ms, the tick of a Linux kernel at HZ = 1000.
pub const CLOCK_GRANULARITY: SimDuration = SimDuration::from_millis(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Option<SimDuration>,
    pub rttvar: SimDuration,
    pub min_rtt: Option<SimDuration>,
    pub latest: Option<SimDuration>,
    min_rto: SimDuration,
    max_rto: SimDuration,
    initial_rto: SimDuration,
    /// Linux's variance state, in linux mode.
    linux: Option<LinuxVar>,
}

/// The mean-deviation state of Linux `tcp_rtt_estimator`: `mdev` is the
/// smoothed mean deviation (scaled by 4, as Linux's `mdev_us`),
/// `mdev_max` its largest value in the current round, and `rttvar` what
/// the RTO adds to SRTT: never below `rto_min`, and it decays towards
/// `mdev_max` once per round (a round ends when the data that was next to
/// send at its start is acknowledged: `rtt_seq`).
#[derive(Clone, Copy, Debug)]
struct LinuxVar {
    mdev_ps: i64,
    mdev_max_ps: i64,
    rttvar_ps: i64,
    rtt_seq: u64,
}

impl RttEstimator {
    /// The RFC 6298 estimator.
    pub fn new(min_rto: SimDuration, max_rto: SimDuration, initial_rto: SimDuration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: SimDuration::ZERO,
            min_rtt: None,
            latest: None,
            min_rto,
            max_rto,
            initial_rto,
            linux: None,
        }
    }

    /// The estimator of Linux `tcp_rtt_estimator` / `__tcp_set_rto`.
    pub fn new_linux(min_rto: SimDuration, max_rto: SimDuration, initial_rto: SimDuration) -> Self {
        let linux = Some(LinuxVar { mdev_ps: 0, mdev_max_ps: 0, rttvar_ps: 0, rtt_seq: 0 });
        RttEstimator { linux, ..Self::new(min_rto, max_rto, initial_rto) }
    }

    /// RFC 6298 (2.2)/(2.3): the first sample sets srtt = R, rttvar = R/2;
    /// later ones update rttvar with the old srtt, then srtt. `snd_una` and
    /// `snd_nxt` (subflow sequence numbers) delimit Linux's rounds.
    pub fn on_sample(&mut self, r: SimDuration, snd_una: u64, snd_nxt: u64) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let old_srtt = self.srtt;
        match old_srtt {
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
        let min_rto_ps = self.min_rto.0 as i64;
        if let Some(v) = self.linux.as_mut() {
            v.on_sample(r.0 as i64, old_srtt.map(|s| s.0 as i64), min_rto_ps, snd_una, snd_nxt);
        }
    }

    /// Takes `ca`, the RTT of the newest segment an ACK covered, into the
    /// minimum (Linux `tcp_update_rtt_min` takes `ca_rtt_us`).
    pub fn on_ca_sample(&mut self, ca: SimDuration) {
        self.min_rtt = Some(self.min_rtt.map_or(ca, |m| m.min(ca)));
    }

    /// Current RTO before backoff. Reference: max(srtt + max(G, 4 rttvar),
    /// min_rto) (RFC 6298 (2.3), (2.4)); linux: srtt + rttvar, where
    /// rttvar >= rto_min (`__tcp_set_rto`). At most `max_rto`.
    pub fn rto(&self) -> SimDuration {
        let Some(s) = self.srtt else { return self.initial_rto };
        let raw = match self.linux {
            None => (s + SimDuration(4 * self.rttvar.0).max(CLOCK_GRANULARITY)).max(self.min_rto),
            Some(v) => s + SimDuration(v.rttvar_ps.max(0) as u64),
        };
        raw.min(self.max_rto)
    }

    /// RTO after `backoff` doublings, capped at the maximum.
    pub fn backed_off_rto(&self, backoff: u32) -> SimDuration {
        self.rto().saturating_mul(1u64 << backoff.min(30)).min(self.max_rto.max(self.rto()))
    }
}

impl LinuxVar {
    /// Linux `tcp_rtt_estimator`'s mean-deviation part for sample `m`.
    fn on_sample(&mut self, m: i64, old_srtt: Option<i64>, rto_min: i64, snd_una: u64, snd_nxt: u64) {
        let Some(srtt) = old_srtt else {
            // "make sure rto = 3*rtt"
            self.mdev_ps = 2 * m;
            self.rttvar_ps = self.mdev_ps.max(rto_min);
            self.mdev_max_ps = self.rttvar_ps;
            self.rtt_seq = snd_nxt;
            return;
        };
        let mut err = m - srtt;
        if err < 0 {
            // A sample below srtt moves mdev 8 times less (Linux: "this is
            // similar to one of Eifel findings").
            err = -err - self.mdev_ps / 4;
            if err > 0 {
                err /= 8;
            }
        } else {
            err -= self.mdev_ps / 4;
        }
        self.mdev_ps += err;
        if self.mdev_ps > self.mdev_max_ps {
            self.mdev_max_ps = self.mdev_ps;
            self.rttvar_ps = self.rttvar_ps.max(self.mdev_max_ps);
        }
        if snd_una > self.rtt_seq {
            // A round ended: decay rttvar a quarter of the way to the round's
            // largest deviation, and start the next round at rto_min.
            if self.mdev_max_ps < self.rttvar_ps {
                self.rttvar_ps -= (self.rttvar_ps - self.mdev_max_ps) / 4;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max_ps = rto_min;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(SimDuration::from_millis(200), SimDuration::from_secs(120), SimDuration::from_secs(1))
    }

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    #[test]
    fn first_sample_sets_rttvar_to_half() {
        let mut e = est();
        assert_eq!(e.rto(), SimDuration::from_secs(1));
        e.on_sample(ms(100), 1, 1);
        assert_eq!(e.rttvar, ms(50));
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn later_samples_follow_rfc6298_gains() {
        let mut e = est();
        e.on_sample(ms(100), 1, 1);
        e.on_sample(ms(200), 1, 1);
        // rttvar = 3/4*50 + 1/4*100 = 62.5 ms; srtt = 7/8*100 + 1/8*200 = 112.5 ms
        assert_eq!(e.rttvar, SimDuration(62_500_000_000));
        assert_eq!(e.srtt, Some(SimDuration(112_500_000_000)));
    }

    #[test]
    fn rto_is_clamped_and_backoff_doubles_to_the_cap() {
        let mut e = est();
        e.on_sample(ms(1), 1, 1);
        assert_eq!(e.rto(), ms(200));
        assert_eq!(e.backed_off_rto(2), ms(800));
        assert_eq!(e.backed_off_rto(20), SimDuration::from_secs(120));
    }

    #[test]
    fn a_steady_path_keeps_the_reference_rto_at_least_g_above_srtt() {
        // RFC 6298 (2.3): RTO = SRTT + max(G, 4 RTTVAR); with a floor below
        // the RTT, RTTVAR falling to zero must not bring RTO down to SRTT.
        let mut e = RttEstimator::new(ms(100), SimDuration::from_secs(120), SimDuration::from_secs(1));
        for _ in 0..500 {
            e.on_sample(ms(300), 1, 1);
        }
        assert_eq!(e.rttvar, SimDuration::ZERO);
        assert_eq!(e.rto(), ms(300) + CLOCK_GRANULARITY);
    }

    #[test]
    fn linux_keeps_the_rto_rto_min_above_srtt_on_a_steady_path() {
        let mut e = RttEstimator::new_linux(ms(200), SimDuration::from_secs(120), SimDuration::from_secs(1));
        // First sample: rto = srtt + max(2 rtt, rto_min) = 3 rtt.
        e.on_sample(ms(300), 0, 10);
        assert_eq!(e.rto(), ms(900));
        // A steady path, one sample per round: rttvar decays a quarter of
        // the way to rto_min per round and stays there.
        let mut una = 10;
        for _ in 0..100 {
            e.on_sample(ms(300), una + 1, una + 11);
            una += 10;
        }
        assert_eq!(e.srtt, Some(ms(300)));
        let rto = e.rto();
        assert!(rto >= ms(500) && rto < ms(501), "{rto:?}");
    }

    #[test]
    fn linux_rttvar_follows_the_largest_deviation_of_the_round() {
        let mut e = RttEstimator::new_linux(ms(200), SimDuration::from_secs(120), SimDuration::from_secs(1));
        e.on_sample(ms(100), 0, 10);
        // Within one round (snd_una has not passed 10), a late sample raises
        // mdev (by a quarter of 4x its error, Linux's scaling) above rttvar.
        e.on_sample(ms(500), 5, 20);
        // mdev = 200 + (400 - 200/4) = 550 ms; rttvar = max(200, 550).
        assert_eq!(e.linux.unwrap().mdev_ps, ms(550).0 as i64);
        assert_eq!(e.rto(), ms(150) + ms(550));
        // A sample below srtt changes mdev eight times less.
        let before = e.linux.unwrap().mdev_ps;
        e.on_sample(ms(100), 5, 20);
        let after = e.linux.unwrap().mdev_ps;
        assert!(after <= before, "{before} {after}");
    }
}
