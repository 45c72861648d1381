//! The data receiver: a bounded buffer shared by all paths, the
//! cumulative TSN, gap blocks and duplicate TSNs for the next SACK, the
//! delayed-SACK rule, and in-order delivery to the application (RFC 4960
//! sections 6.2 and 6.7). The application reads at once, so the buffer
//! holds exactly the chunks that wait for a hole.

use super::variants::dac::DacCount;
use super::SctpConfig;
use mpsim_core::sctp::{SackChunk, MAX_DUP_TSNS};
use mpsim_core::SimTime;
use std::collections::BTreeMap;

pub(super) struct Receiver {
    /// Highest TSN received in sequence (the Cumulative TSN Ack).
    pub cum_tsn: u32,
    /// Chunks above a hole: TSN -> (payload bytes, path it came on).
    ooo: BTreeMap<u32, (u32, usize)>,
    /// The runs of consecutive TSNs in `ooo`, first TSN -> last TSN: the
    /// gap blocks, kept as chunks arrive so that a SACK costs its blocks,
    /// not the chunks held.
    ooo_runs: BTreeMap<u32, u32>,
    /// Payload bytes in `ooo`.
    pub held_bytes: u64,
    rbuf_bytes: u64,
    /// Duplicate TSNs for the next SACK.
    dups: Vec<u32>,
    /// DATA packets since the last SACK.
    unacked_pkts: u32,
    /// The delayed SACK is due at this time.
    pub sack_deadline: Option<SimTime>,
    /// A SACK must go out now.
    pub sack_now: bool,
    /// The path the latest DATA came on: the SACK goes back along it.
    pub sack_path: usize,
    /// Bytes delivered in order and not yet reported to the application.
    pub to_deliver_bytes: u64,
    /// Per path: payload bytes delivered to the application that arrived on it.
    pub path_rx_bytes: Vec<u64>,
    /// Per path: DATA chunks received that were held already.
    pub path_dup_chunks: Vec<u64>,
    /// Chunks dropped for want of buffer space.
    pub dropped_chunks: u64,
    sack_delay: mpsim_core::SimDuration,
    sack_freq: u32,
    /// CMT-DAC: keep delaying SACKs under reordering and say in each SACK
    /// how many packets it covers (every multipath variant; plain SCTP off).
    dac: bool,
    /// Every TSN delivered, in delivery order (tests check it).
    #[cfg(test)]
    pub delivered_log: Vec<(u32, u32)>,
}

impl Receiver {
    pub fn new(cfg: &SctpConfig, n_paths: usize) -> Self {
        Receiver {
            cum_tsn: 0,
            ooo: BTreeMap::new(),
            ooo_runs: BTreeMap::new(),
            held_bytes: 0,
            rbuf_bytes: cfg.rbuf_bytes,
            dups: Vec::new(),
            unacked_pkts: 0,
            sack_deadline: None,
            sack_now: false,
            sack_path: 0,
            to_deliver_bytes: 0,
            path_rx_bytes: vec![0; n_paths],
            path_dup_chunks: vec![0; n_paths],
            dropped_chunks: 0,
            sack_delay: cfg.sack_delay,
            sack_freq: cfg.sack_freq,
            dac: cfg.cmt && n_paths > 1,
            #[cfg(test)]
            delivered_log: Vec::new(),
        }
    }

    /// The peer's initial TSN (from its INIT or INIT ACK).
    pub fn set_peer_initial_tsn(&mut self, tsn: u32) {
        self.cum_tsn = tsn.wrapping_sub(1);
    }

    /// Free buffer space: the a_rwnd of the next SACK (RFC 4960 section 6.2).
    pub fn a_rwnd_bytes(&self) -> u64 {
        self.rbuf_bytes.saturating_sub(self.held_bytes)
    }

    /// A DATA chunk arrives on `path`.
    pub fn on_data(&mut self, now: SimTime, tsn: u32, len: u32, path: usize) {
        self.sack_path = path;
        self.unacked_pkts += 1;
        if tsn <= self.cum_tsn || self.ooo.contains_key(&tsn) {
            // RFC 4960 section 6.2: report the duplicate, SACK at once.
            if self.dups.len() < MAX_DUP_TSNS {
                self.dups.push(tsn);
            }
            self.path_dup_chunks[path] += 1;
            self.sack_now = true;
            return;
        }
        if tsn == self.cum_tsn + 1 {
            let had_gaps = !self.ooo.is_empty();
            self.deliver(tsn, len, path);
            // The loop below delivers the whole first run, if it is next.
            if self.ooo_runs.first_key_value().is_some_and(|(&s, _)| s == self.cum_tsn + 1) {
                self.ooo_runs.pop_first();
            }
            while let Some((&next, &(l, p))) = self.ooo.first_key_value() {
                if next != self.cum_tsn + 1 {
                    break;
                }
                self.ooo.pop_first();
                self.held_bytes -= l as u64;
                self.deliver(next, l, p);
            }
            // A hole filled: tell the sender at once (RFC 4960 section 6.7);
            // DAC delays this one too (FreeBSD sctp_sack_check).
            if had_gaps && self.sack_on_gap() {
                self.sack_now = true;
            }
        } else if self.held_bytes + len as u64 > self.rbuf_bytes {
            // No room above a hole: drop (RFC 4960 section 6.2) and say so at once.
            self.dropped_chunks += 1;
            self.sack_now = true;
        } else {
            self.ooo.insert(tsn, (len, path));
            self.add_to_runs(tsn);
            self.held_bytes += len as u64;
            if self.sack_on_gap() {
                self.sack_now = true;
            }
        }
        if self.unacked_pkts >= self.sack_freq {
            self.sack_now = true;
        }
        if !self.sack_now && self.sack_deadline.is_none() {
            self.sack_deadline = Some(now + self.sack_delay);
        }
    }

    /// `tsn` joins `ooo`: it extends, joins or starts a run.
    fn add_to_runs(&mut self, tsn: u32) {
        let after = self.ooo_runs.remove(&(tsn + 1));
        let before = self.ooo_runs.range(..tsn).next_back().filter(|(_, &e)| e + 1 == tsn).map(|(&s, _)| s);
        let start = before.unwrap_or(tsn);
        self.ooo_runs.insert(start, after.unwrap_or(tsn));
    }

    fn deliver(&mut self, tsn: u32, len: u32, path: usize) {
        self.cum_tsn = tsn;
        self.to_deliver_bytes += len as u64;
        self.path_rx_bytes[path] += len as u64;
        #[cfg(test)]
        self.delivered_log.push((tsn, len));
    }

    /// SACK at once when a chunk creates or closes a gap: RFC 4960
    /// section 6.7 yes; CMT-DAC (Iyengar et al. 2006) no, it keeps the
    /// every-second-packet rule.
    fn sack_on_gap(&self) -> bool {
        !self.dac
    }

    /// The SACK's flags: none in RFC 4960; with CMT-DAC the packet count
    /// (FreeBSD `SCTP_SACK_CMT_DAC`).
    fn sack_flags(&self) -> u8 {
        if self.dac {
            DacCount::from_pkts(self.unacked_pkts).sack_flags()
        } else {
            0
        }
    }

    /// A SACK is due: at once, or its delay ran out.
    pub fn sack_due(&self, now: SimTime) -> bool {
        self.sack_now || self.sack_deadline.is_some_and(|t| t <= now)
    }

    /// Builds the SACK and resets the delayed-SACK state. Gap blocks are
    /// the lowest ones that fit (RFC 4960 section 6.2 allows leaving the
    /// others out; this receiver never reneges, so nothing is lost).
    pub fn make_sack(&mut self) -> SackChunk {
        let mut sack = SackChunk {
            cum_tsn: self.cum_tsn,
            a_rwnd_bytes: self.a_rwnd_bytes().min(u32::MAX as u64) as u32,
            flags: self.sack_flags(),
            ..Default::default()
        };
        #[cfg(test)]
        self.assert_runs_match_held();
        for (&s, &e) in &self.ooo_runs {
            if !push_gap(&mut sack, s, e) {
                break;
            }
        }
        for &d in &self.dups {
            sack.push_dup(d);
        }
        self.dups.clear();
        self.unacked_pkts = 0;
        self.sack_now = false;
        self.sack_deadline = None;
        sack
    }
}

impl Receiver {
    /// `ooo_runs` are the runs of consecutive TSNs in `ooo`.
    #[cfg(test)]
    fn assert_runs_match_held(&self) {
        let mut runs = BTreeMap::new();
        let mut run: Option<(u32, u32)> = None;
        for &tsn in self.ooo.keys() {
            run = match run {
                Some((s, e)) if tsn == e + 1 => Some((s, tsn)),
                Some((s, e)) => {
                    runs.insert(s, e);
                    Some((tsn, tsn))
                }
                None => Some((tsn, tsn)),
            };
        }
        if let Some((s, e)) = run {
            runs.insert(s, e);
        }
        assert_eq!(runs, self.ooo_runs);
    }
}

/// Adds the block of TSNs `s..=e` as offsets from the SACK's cumulative
/// TSN; false when it does not fit (SACK full, or beyond 16-bit offsets).
fn push_gap(sack: &mut SackChunk, s: u32, e: u32) -> bool {
    let (Ok(a), Ok(b)) = (u16::try_from(s - sack.cum_tsn), u16::try_from(e - sack.cum_tsn)) else { return false };
    sack.push_gap(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain RFC 4960 receiver (no CMT, so no DAC).
    fn rx(rbuf_bytes: u64) -> Receiver {
        let mut r = Receiver::new(&SctpConfig { rbuf_bytes, cmt: false, ..Default::default() }, 2);
        r.set_peer_initial_tsn(1);
        r
    }

    #[test]
    fn dac_delays_sacks_under_reordering_and_carries_the_packet_count() {
        let mut r = Receiver::new(&SctpConfig { rbuf_bytes: 10_000, ..Default::default() }, 2);
        r.set_peer_initial_tsn(1);
        r.on_data(SimTime::ZERO, 2, 100, 1);
        assert!(!r.sack_due(SimTime::ZERO), "a new gap does not force a SACK under DAC");
        r.on_data(SimTime::ZERO, 3, 100, 1);
        assert!(r.sack_due(SimTime::ZERO), "every second packet still");
        assert_eq!(r.make_sack().flags, crate::sctp::variants::dac::SACK_FLAG_DAC_TWO);
        r.on_data(SimTime::ZERO, 1, 100, 0);
        assert!(!r.sack_due(SimTime::ZERO), "nor does the packet that closes it");
        r.on_data(SimTime::ZERO, 1, 100, 0);
        assert!(r.sack_due(SimTime::ZERO), "a duplicate is acked at once");
    }

    #[test]
    fn in_order_data_is_delivered_and_acked_every_second_packet() {
        let mut r = rx(10_000);
        r.on_data(SimTime::ZERO, 1, 100, 0);
        assert!(!r.sack_due(SimTime::ZERO));
        assert_eq!(r.sack_deadline, Some(SimTime::ZERO + SimDuration::from_millis(200)));
        r.on_data(SimTime::ZERO, 2, 100, 1);
        assert!(r.sack_due(SimTime::ZERO));
        let s = r.make_sack();
        assert_eq!((s.cum_tsn, s.n_gaps, s.a_rwnd_bytes), (2, 0, 10_000));
        assert_eq!(r.to_deliver_bytes, 200);
        assert_eq!(r.path_rx_bytes, vec![100, 100]);
    }

    #[test]
    fn holes_give_gap_blocks_and_hold_buffer_space_until_filled() {
        let mut r = rx(10_000);
        for tsn in [1, 3, 4, 6] {
            r.on_data(SimTime::ZERO, tsn, 100, 0);
        }
        let s = r.make_sack();
        assert_eq!(s.cum_tsn, 1);
        assert_eq!(s.gaps(), &[(2, 3), (5, 5)]);
        assert_eq!(s.a_rwnd_bytes, 10_000 - 300);
        r.on_data(SimTime::ZERO, 2, 100, 1);
        assert!(r.sack_now, "a filled hole is acked at once");
        let s = r.make_sack();
        assert_eq!((s.cum_tsn, s.gaps()), (4, &[(2, 2)][..]));
        assert_eq!(r.delivered_log.iter().map(|d| d.0).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn duplicates_are_reported_once_and_sacked_at_once() {
        let mut r = rx(10_000);
        r.on_data(SimTime::ZERO, 1, 100, 0);
        r.make_sack();
        r.on_data(SimTime::ZERO, 1, 100, 1);
        assert!(r.sack_now);
        let s = r.make_sack();
        assert_eq!(s.dups(), &[1]);
        assert_eq!(r.path_dup_chunks, vec![0, 1]);
        assert!(r.make_sack().dups().is_empty());
    }

    #[test]
    fn a_full_buffer_drops_out_of_order_data_but_takes_the_next_in_order_chunk() {
        let mut r = rx(250);
        r.on_data(SimTime::ZERO, 3, 100, 0);
        r.on_data(SimTime::ZERO, 4, 100, 0);
        r.on_data(SimTime::ZERO, 5, 100, 0);
        assert_eq!((r.held_bytes, r.dropped_chunks, r.a_rwnd_bytes()), (200, 1, 50));
        r.on_data(SimTime::ZERO, 1, 100, 0);
        assert_eq!(r.cum_tsn, 1);
        r.on_data(SimTime::ZERO, 2, 100, 0);
        assert_eq!((r.cum_tsn, r.held_bytes), (4, 0));
    }

    #[test]
    fn gap_blocks_are_bounded_by_the_sack_size() {
        let mut r = rx(1_000_000);
        for k in 0..20u32 {
            r.on_data(SimTime::ZERO, 3 + 2 * k, 10, 0);
        }
        let s = r.make_sack();
        assert_eq!(s.gaps().len(), mpsim_core::sctp::MAX_GAP_BLOCKS);
        assert_eq!(s.gaps()[0], (3, 3), "the lowest blocks are kept");
    }

    use mpsim_core::SimDuration;
}
