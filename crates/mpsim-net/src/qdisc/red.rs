//! Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", 1993), as Linux `sch_red` and ns-3
//! `RedQueueDisc` run it, and htsim's random-drop queue.

use super::{Backlog, QPkt, Verdict};
use crate::link::QueueLimit;
use mpsim_core::SimRng;

/// RED's parameters. Thresholds count packets, or bytes with `in_bytes`
/// (the average is kept in the same unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub in_bytes: bool,
    /// Marking probability at `max_th`.
    pub max_p_frac: f64,
    /// EWMA weight of the average queue (w_q; 0.002 in the paper and ns-3).
    pub weight_frac: f64,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168).
    pub ecn: bool,
    /// Between max_th and 2 max_th the probability rises from max_p to 1
    /// (Floyd's "gentle" variant; ns-3's default) instead of jumping to 1.
    pub gentle: bool,
    /// Typical packet, for the decay of the average over an idle period
    /// (tc's `avpkt`).
    pub avpkt_bytes: u32,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            in_bytes: false,
            max_p_frac: 0.1,
            weight_frac: 0.002,
            ecn: false,
            gentle: false,
            avpkt_bytes: 1000,
        }
    }
}

/// RED's state: the average queue and the packets since the last mark.
#[derive(Clone, Debug)]
pub struct Red {
    pub p: RedParams,
    /// Average queue, in the thresholds' unit.
    pub avg: f64,
    /// Unmarked packets since the last mark or drop; -1 while the average
    /// is below min_th (the paper's initial value).
    count: i64,
}

impl Red {
    pub fn new(p: RedParams) -> Self {
        Red { p, avg: 0.0, count: -1 }
    }

    /// Updates the average with the queue an arriving packet finds.
    pub fn update_avg(&mut self, b: &Backlog) {
        let w = self.p.weight_frac;
        match b.idle_for {
            // Floyd & Jacobson section 4: after an idle period the average
            // decays as if m small packets had arrived to an empty queue
            // (Linux red_calc_qavg_from_idle_time).
            Some(idle) => {
                let per_pkt_ps = mpsim_core::SimDuration::transmission(self.p.avpkt_bytes as u64, b.bandwidth_bps).as_ps().max(1);
                let m = idle.as_ps() as f64 / per_pkt_ps as f64;
                self.avg *= (1.0 - w).powf(m);
            }
            None => {
                let q = if self.p.in_bytes { b.bytes as f64 } else { b.pkts as f64 };
                self.avg += w * (q - self.avg);
            }
        }
    }

    /// The probability p_b for the current average, None below min_th;
    /// `Some(1.0)` where every packet is marked.
    pub fn p_b(&self) -> Option<f64> {
        let (min, max, max_p) = (self.p.min_th, self.p.max_th, self.p.max_p_frac);
        if self.avg < min {
            None
        } else if self.avg < max {
            Some(max_p * (self.avg - min) / (max - min))
        } else if self.p.gentle && self.avg < 2.0 * max {
            Some(max_p + (1.0 - max_p) * (self.avg - max) / max)
        } else {
            Some(1.0)
        }
    }

    pub fn on_arrival(&mut self, pkt: &QPkt, b: &Backlog, rng: &mut SimRng) -> Verdict {
        self.update_avg(b);
        let Some(pb) = self.p_b() else {
            self.count = -1;
            return Verdict::Pass;
        };
        let count = self.count.max(0);
        let hit = if pb >= 1.0 {
            true
        } else {
            // The paper's count rule (section 7): p_a = p_b / (1 - count p_b),
            // count the unmarked packets since the last mark, spaces the
            // marks uniformly between 1 and 1/p_b packets apart (as Linux
            // red_mark_probability does with its uniform qR).
            let denom = 1.0 - count as f64 * pb;
            denom <= 0.0 || rng.next_f64() < pb / denom
        };
        if !hit {
            self.count = count + 1;
            return Verdict::Pass;
        }
        self.count = 0;
        if self.p.ecn && pkt.ect {
            Verdict::Mark
        } else {
            Verdict::Drop
        }
    }
}

/// htsim's RandomQueue (sim/randomqueue.cpp, `receivePacket`): a drop-tail
/// queue that drops each packet arriving into its top `region` with
/// probability `p_frac` (htsim: 0.1, over the top 3 packets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomDropParams {
    /// Size of the top region, in the queue limit's unit.
    pub region: QueueLimit,
    pub p_frac: f64,
}

impl Default for RandomDropParams {
    fn default() -> Self {
        RandomDropParams { region: QueueLimit::Packets(3), p_frac: 0.1 }
    }
}

impl RandomDropParams {
    /// htsim compares the queue with the packet added against
    /// `maxsize - drop`; here the queue is the waiting packets, as the
    /// link's limit counts them.
    pub fn on_arrival(&self, pkt: &QPkt, b: &Backlog, rng: &mut SimRng) -> Verdict {
        let in_region = match (b.limit, self.region) {
            (QueueLimit::Packets(n), QueueLimit::Packets(r)) => b.pkts + 1 > (n as u64).saturating_sub(r as u64),
            (QueueLimit::Bytes(n), QueueLimit::Bytes(r)) => b.bytes + pkt.wire_bytes as u64 > n.saturating_sub(r),
            // Mixed units are refused when the spec is built.
            _ => false,
        };
        if in_region && rng.bernoulli(self.p_frac) {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::{PacketId, SimDuration, SimTime};

    fn pkt(ect: bool) -> QPkt {
        QPkt { pid: PacketId(0), wire_bytes: 1000, flow_hash: 0, ect, enqueued: SimTime::ZERO, key: Default::default() }
    }

    fn busy(pkts: u64) -> Backlog {
        Backlog { pkts, bytes: pkts * 1000, idle_for: None, bandwidth_bps: 8_000_000, limit: QueueLimit::Packets(1000) }
    }

    #[test]
    fn the_average_is_an_ewma_of_the_queue_and_decays_when_idle() {
        let mut r = Red::new(RedParams { weight_frac: 0.5, ..Default::default() });
        r.update_avg(&busy(10));
        r.update_avg(&busy(10));
        assert!((r.avg - 7.5).abs() < 1e-12);
        // Idle for 4 small-packet times at 8 Mbit/s (1 ms each): (1 - w)^4.
        let idle = Backlog { idle_for: Some(SimDuration::from_millis(4)), ..busy(0) };
        r.update_avg(&idle);
        assert!((r.avg - 7.5 / 16.0).abs() < 1e-12, "{}", r.avg);
    }

    #[test]
    fn p_b_rises_linearly_between_the_thresholds_and_gently_above() {
        let mut r = Red::new(RedParams { min_th: 10.0, max_th: 30.0, max_p_frac: 0.1, ..Default::default() });
        r.avg = 9.9;
        assert_eq!(r.p_b(), None);
        r.avg = 20.0;
        assert!((r.p_b().unwrap() - 0.05).abs() < 1e-12);
        r.avg = 30.0;
        assert_eq!(r.p_b(), Some(1.0));
        r.p.gentle = true;
        r.avg = 45.0;
        assert!((r.p_b().unwrap() - (0.1 + 0.9 * 0.5)).abs() < 1e-12);
        r.avg = 60.0;
        assert_eq!(r.p_b(), Some(1.0));
    }

    /// With a constant average, the count rule makes the gap between marks
    /// uniform on 1..=1/p_b (Floyd & Jacobson section 7): each gap length
    /// has probability p_b and the mean gap is (1/p_b + 1) / 2.
    #[test]
    fn marks_are_spaced_uniformly_as_the_count_rule_says() {
        let mut r = Red::new(RedParams { min_th: 0.0, max_th: 100.0, max_p_frac: 1.0, weight_frac: 1.0, ..Default::default() });
        let mut rng = SimRng::new(3, 9);
        let b = busy(10); // p_b = 0.1
        let mut gaps = [0u32; 12];
        let mut since = 0usize;
        let mut marks = 0u32;
        for _ in 0..200_000 {
            since += 1;
            if r.on_arrival(&pkt(false), &b, &mut rng) == Verdict::Drop {
                gaps[since.min(11)] += 1;
                since = 0;
                marks += 1;
            }
        }
        assert_eq!(gaps[11], 0, "no gap beyond 1/p_b");
        for (g, &n) in gaps.iter().enumerate().skip(1).take(10) {
            let frac = n as f64 / marks as f64;
            assert!((frac - 0.1).abs() < 0.01, "gap {g}: {frac}");
        }
        // Mark rate 2 / (1/p_b + 1) = 1/5.5 of packets.
        let rate = marks as f64 / 200_000.0;
        assert!((rate - 1.0 / 5.5).abs() < 0.005, "{rate}");
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let mut r = Red::new(RedParams { min_th: 1.0, max_th: 2.0, weight_frac: 1.0, ecn: true, ..Default::default() });
        let mut rng = SimRng::new(1, 1);
        assert_eq!(r.on_arrival(&pkt(true), &busy(5), &mut rng), Verdict::Mark);
        assert_eq!(r.on_arrival(&pkt(false), &busy(5), &mut rng), Verdict::Drop);
        r.p.ecn = false;
        assert_eq!(r.on_arrival(&pkt(true), &busy(5), &mut rng), Verdict::Drop);
        assert_eq!(r.on_arrival(&pkt(true), &busy(0), &mut rng), Verdict::Pass, "below min_th");
    }

    #[test]
    fn random_drop_acts_only_in_the_top_region() {
        let q = RandomDropParams { region: QueueLimit::Packets(3), p_frac: 0.1 };
        let mut rng = SimRng::new(5, 5);
        let limit = QueueLimit::Packets(20);
        let at = |pkts: u64| Backlog { limit, ..busy(pkts) };
        assert!((0..10_000).all(|_| q.on_arrival(&pkt(false), &at(16), &mut rng) == Verdict::Pass));
        let drops = (0..100_000).filter(|_| q.on_arrival(&pkt(false), &at(17), &mut rng) == Verdict::Drop).count();
        assert!((9_500..10_500).contains(&drops), "{drops}");
    }
}
