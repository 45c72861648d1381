//! The data sender: TSN assignment, the record of every chunk not yet
//! cumulatively acknowledged, per-destination congestion control and RTO
//! (RFC 4960 sections 6.3 and 7.2), SACK processing with missing reports
//! and fast retransmit (section 7.2.4), T3-rtx (section 6.3.3) and the
//! choice of what to send next under cwnd and the peer's window (section
//! 6.1). Flight sizes and windows count payload bytes; cwnd grows by the
//! MTU, as Linux's SCTP does (net/sctp/transport.c).

use super::variants::cucv2::{self, CucVersion, GrowthInput, PseudoCumacks};
use super::variants::dac::DacCount;
use super::variants::iopd::{Iopd, OosClass};
use super::variants::mcc::{self, MccConfig};
use super::variants::rtx_policy::{choose_rtx_dest, LossRateEstimator, RtxChoice, RtxPolicy};
use super::variants::sfr::{self, MissingRule, MissingTsn, SackEvidence, SfrHighest};
use super::variants::{smos, DestState, TieBreak, TsnDest};
use super::{SctpConfig, Variant};
use mpsim_core::sctp::SackChunk;
use mpsim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// RFC 4960 section 7.2.4: missing reports that trigger a fast retransmit.
const DUP_THRESH: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    /// Sent and counted in its destination's flight.
    Outstanding,
    /// Acknowledged by a gap block (not released: RFC 4960 section 6.2.1).
    GapAcked,
    /// Waits for retransmission to `rtx_dest`; `fast` for a fast retransmit.
    MarkedRtx { fast: bool },
    /// Numbered by an SMOS trunk for destination `dest`, not sent yet.
    Planned,
}

#[derive(Clone, Copy, Debug)]
struct TsnRec {
    len: u32,
    /// Destination it was last sent to.
    dest: usize,
    /// Destination its pending retransmission goes to.
    rtx_dest: usize,
    sent_at: SimTime,
    tx_count: u32,
    missing_reports: u32,
    fast_retransmitted: bool,
    state: ChunkState,
}

/// What one destination's sender did, for traces and the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DestStats {
    /// Payload bytes sent, retransmissions included.
    pub sent_bytes: u64,
    pub retransmitted_bytes: u64,
    pub retransmitted_chunks: u64,
    /// Payload bytes acknowledged (first acknowledgement of each chunk).
    pub acked_bytes: u64,
    pub timeouts: u64,
    /// Fast-retransmit window reductions.
    pub fast_recoveries: u64,
    /// Fast retransmissions of TSNs last sent to this destination (counted
    /// here whichever destination the resend goes to), every variant.
    pub fast_rtx: u64,
    /// SMT: fast retransmissions of TSNs lost on this destination that
    /// IOPD classed as inter-path (reordering across paths) or intra-path.
    /// The other variants class none.
    pub fast_rtx_inter: u64,
    pub fast_rtx_intra: u64,
}

/// Per-destination transmission state (RFC 4960 sections 6.3, 7.2, 8.2).
#[derive(Clone, Debug)]
pub struct Dest {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub pba_bytes: u64,
    pub flight_bytes: u64,
    pub srtt: Option<SimDuration>,
    pub rttvar: SimDuration,
    pub rto: SimDuration,
    pub t3_deadline: Option<SimTime>,
    /// Consecutive unanswered retransmissions and heartbeats.
    pub error_count: u32,
    pub active: bool,
    /// In fast recovery until the cumulative ack reaches this TSN.
    pub fast_recovery_exit: Option<u32>,
    pub last_sent: SimTime,
    /// Next heartbeat, and the deadline of the one sent and not yet
    /// answered (its send time plus the RTO then).
    pub hb_due: SimTime,
    pub hb_sent: Option<SimTime>,
    pub stats: DestStats,
}

impl Dest {
    fn new(cfg: &SctpConfig, mtu: u64) -> Self {
        Dest {
            // RFC 4960 section 7.2.1.
            cwnd_bytes: (4 * mtu).min((2 * mtu).max(4380)),
            ssthresh_bytes: cfg.rbuf_bytes,
            pba_bytes: 0,
            flight_bytes: 0,
            srtt: None,
            rttvar: SimDuration::ZERO,
            rto: cfg.rto_initial,
            t3_deadline: None,
            error_count: 0,
            active: true,
            fast_recovery_exit: None,
            last_sent: SimTime::ZERO,
            hb_due: SimTime::ZERO + cfg.hb_interval,
            hb_sent: None,
            stats: DestStats::default(),
        }
    }

    /// RFC 4960 section 6.3.1: a new RTT measurement `r`.
    pub fn on_rtt(&mut self, r: SimDuration, cfg: &SctpConfig) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = SimDuration(r.0 / 2);
            }
            Some(s) => {
                self.rttvar = SimDuration((3 * self.rttvar.0 + s.0.abs_diff(r.0)) / 4);
                self.srtt = Some(SimDuration((7 * s.0 + r.0) / 8));
            }
        }
        let rto = SimDuration(self.srtt.unwrap_or(r).0 + 4 * self.rttvar.0);
        self.rto = rto.max(cfg.rto_min).min(cfg.rto_max);
    }
}

/// One DATA chunk to put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataTx {
    pub tsn: u32,
    pub len: u32,
    pub dest: usize,
    pub retransmission: bool,
}

pub(super) struct Sender {
    cfg: SctpConfig,
    mtu: u64,
    next_tsn: u32,
    /// Highest TSN cumulatively acknowledged.
    pub cum_ack: u32,
    /// TSNs `cum_ack + 1 ..`, in order.
    chunks: VecDeque<TsnRec>,
    unsent_bytes: u64,
    unlimited: bool,
    /// The peer's receive window as this sender sees it (RFC 4960 section 6.2.1).
    pub peer_rwnd_bytes: u64,
    pub dests: Vec<Dest>,
    pub primary: usize,
    rr_next: usize,
    /// A fast retransmission may go out regardless of cwnd (RFC 4960 section 7.2.4).
    fast_rtx_pending: bool,
    /// SMT's inter-path / intra-path pointers (kept for every multipath variant).
    iopd: Iopd,
    /// RTX-LOSSRATE's loss rate per destination.
    losses: LossRateEstimator,
    /// SMOS trunk form: per destination, the TSNs its trunk slots hold
    /// and it has not sent yet, in slot order.
    planned: Vec<VecDeque<u32>>,
    /// The TSNs in state `Outstanding`, per destination, first
    /// transmissions (`[0]`) and retransmissions (`[1]`): CUCv2's trackers,
    /// IOPD's `low` and the TSNs a SACK can report missing are read from
    /// them, so a SACK costs what it changes, not what is in flight.
    outstanding: Vec<[TsnSet; 2]>,
    /// The TSNs in state `MarkedRtx`.
    marked: TsnSet,
    /// Payload bytes of the chunks neither cumulatively nor gap acknowledged.
    unacked_bytes: u64,
    /// The last SACK's gap blocks (absolute TSNs, within what was sent):
    /// every TSN in them is gap acked or below the cumulative ack, so the
    /// next SACK walks only what its blocks add.
    prev_gap_tsns: Vec<(u32, u32)>,
    /// Retransmissions (time, TSN) that may still disqualify an RTT
    /// sample (RFC 4960 section 6.3.1 C5): oldest first, each TSN above
    /// the one before (an older retransmission of a higher TSN says
    /// nothing a later one of a lower TSN does not).
    rtx_events: VecDeque<(SimTime, u32)>,
    /// Buffers reused from SACK to SACK.
    scratch: SackAcks,
    candidates: Vec<(usize, MissingTsn)>,
    missing: Vec<MissingTsn>,
    evidence: SackEvidence,
    states: Vec<DestState>,
    /// Every first transmission (TSN, length), for tests.
    #[cfg(test)]
    pub sent_log: Vec<(u32, u32)>,
    /// TSNs the gap-block walk has visited, for tests.
    #[cfg(test)]
    gap_tsns_walked: u64,
}

impl Sender {
    pub fn new(cfg: &SctpConfig, n_paths: usize) -> Self {
        let mtu = cfg.mtu_bytes();
        Sender {
            cfg: *cfg,
            mtu,
            next_tsn: 1,
            cum_ack: 0,
            chunks: VecDeque::new(),
            unsent_bytes: 0,
            unlimited: false,
            peer_rwnd_bytes: cfg.rbuf_bytes,
            dests: (0..n_paths).map(|_| Dest::new(cfg, mtu)).collect(),
            primary: 0,
            rr_next: 0,
            fast_rtx_pending: false,
            iopd: Iopd::new(n_paths),
            // Iyengar, Amer, Stewart (ICON 2004): the last 1000 sends.
            losses: LossRateEstimator::new(n_paths, 1000),
            planned: vec![VecDeque::new(); n_paths],
            outstanding: (0..n_paths).map(|_| Default::default()).collect(),
            marked: TsnSet::default(),
            unacked_bytes: 0,
            prev_gap_tsns: Vec::new(),
            rtx_events: VecDeque::new(),
            scratch: SackAcks::new(n_paths),
            candidates: Vec::new(),
            missing: Vec::new(),
            evidence: SackEvidence::default(),
            states: Vec::new(),
            #[cfg(test)]
            sent_log: Vec::new(),
            #[cfg(test)]
            gap_tsns_walked: 0,
        }
    }

    pub fn initial_tsn(&self) -> u32 {
        1
    }

    /// The peer's a_rwnd from its INIT or INIT ACK: the window and every
    /// destination's initial ssthresh (RFC 4960 section 7.2.1).
    pub fn set_peer_rwnd(&mut self, bytes: u64) {
        self.peer_rwnd_bytes = bytes;
        for d in &mut self.dests {
            d.ssthresh_bytes = bytes;
        }
    }

    pub fn write(&mut self, bytes: Option<u64>) {
        match bytes {
            Some(b) => self.unsent_bytes += b,
            None => self.unlimited = true,
        }
    }

    /// The application stops writing: what is queued and unsent is dropped.
    pub fn pause(&mut self) {
        self.unlimited = false;
        self.unsent_bytes = 0;
    }

    /// Everything written has been sent and cumulatively acknowledged.
    pub fn all_acked(&self) -> bool {
        self.chunks.is_empty() && self.unsent_bytes == 0 && !self.unlimited
    }

    fn has_unsent(&self) -> bool {
        self.unlimited || self.unsent_bytes > 0
    }

    /// Payload bytes sent and neither cumulatively nor gap acknowledged.
    pub fn outstanding_bytes(&self) -> u64 {
        self.unacked_bytes
    }

    /// Removes chunk `rec` (TSN `tsn`) from the index of its state.
    fn unindex(&mut self, tsn: u32, rec: &TsnRec) {
        match rec.state {
            ChunkState::Outstanding => {
                self.outstanding[rec.dest][rec_class(rec)].remove(&tsn);
            }
            ChunkState::MarkedRtx { .. } => {
                self.marked.remove(&tsn);
            }
            ChunkState::GapAcked | ChunkState::Planned => {}
        }
    }

    /// Adds chunk `rec` (TSN `tsn`) to the index of its state.
    fn index(&mut self, tsn: u32, rec: &TsnRec) {
        match rec.state {
            ChunkState::Outstanding => {
                self.outstanding[rec.dest][rec_class(rec)].insert(tsn);
            }
            ChunkState::MarkedRtx { .. } => {
                self.marked.insert(tsn);
            }
            ChunkState::GapAcked | ChunkState::Planned => {}
        }
    }

    /// Sets chunk `idx`'s state, keeping the indexes in step.
    fn set_state(&mut self, idx: usize, state: ChunkState) {
        let tsn = self.tsn_at(idx);
        let old = self.chunks[idx];
        self.unindex(tsn, &old);
        self.chunks[idx].state = state;
        let new = self.chunks[idx];
        self.index(tsn, &new);
    }

    /// Lowest outstanding TSN on `d` of class `class` (0: first
    /// transmissions, 1: retransmissions).
    fn lowest_outstanding(&self, d: usize, class: usize) -> Option<u32> {
        self.outstanding[d][class].first().copied()
    }

    /// The indexes and byte count agree with the chunk records.
    #[cfg(test)]
    fn assert_indexes_consistent(&self) {
        let mut outstanding: Vec<[TsnSet; 2]> = (0..self.dests.len()).map(|_| Default::default()).collect();
        let mut marked = TsnSet::default();
        for (idx, rec) in self.chunks.iter().enumerate() {
            match rec.state {
                ChunkState::Outstanding => outstanding[rec.dest][rec_class(rec)].insert(self.tsn_at(idx)),
                ChunkState::MarkedRtx { .. } => marked.insert(self.tsn_at(idx)),
                ChunkState::GapAcked | ChunkState::Planned => false,
            };
        }
        assert_eq!(outstanding, self.outstanding);
        assert_eq!(marked, self.marked);
        let unacked: u64 = (self.chunks.iter())
            .filter(|c| !matches!(c.state, ChunkState::GapAcked | ChunkState::Planned))
            .map(|c| c.len as u64)
            .sum();
        assert_eq!(unacked, self.unacked_bytes);
    }

    fn tsn_at(&self, idx: usize) -> u32 {
        self.cum_ack + 1 + idx as u32
    }

    /// The next T3-rtx deadline: (time, destination).
    pub fn t3_deadline(&self) -> Option<(SimTime, usize)> {
        (self.dests.iter().enumerate()).filter_map(|(i, d)| d.t3_deadline.map(|t| (t, i))).min()
    }

    // ----- SACK -----

    /// RFC 4960 section 6.2.1 and 7.2: a SACK arrives. True if it
    /// acknowledged anything new.
    pub fn on_sack(&mut self, now: SimTime, sack: &SackChunk) -> bool {
        let unsent = self.planned.iter().filter_map(|q| q.front()).any(|&t| t <= sack.cum_tsn);
        if sack.cum_tsn < self.cum_ack || sack.cum_tsn >= self.next_tsn || unsent {
            return false; // older than what we know, or acking what was never sent
        }
        let mut acks = std::mem::take(&mut self.scratch);
        acks.reset(&self.dests);
        if self.multipath() {
            // CUCv2's trackers hold what was outstanding before the SACK (docs/cmt.md, step 1).
            for d in 0..self.dests.len() {
                acks.pcum_before.set(d, self.lowest_outstanding(d, 0), self.lowest_outstanding(d, 1));
            }
        }
        let cum_advanced = sack.cum_tsn > self.cum_ack;
        while self.cum_ack < sack.cum_tsn {
            // The loop stops at `sack.cum_tsn < next_tsn`: a record exists.
            let Some(rec) = self.chunks.pop_front() else { break };
            self.cum_ack += 1;
            self.unindex(self.cum_ack, &rec);
            if rec.state != ChunkState::GapAcked {
                self.unacked_bytes -= rec.len as u64;
                self.newly_acked(&rec, self.cum_ack, &mut acks);
            }
        }
        self.apply_gap_blocks(sack, &mut acks);
        for (d, sent_at) in acks.rtt_from.iter().enumerate() {
            if let Some(t) = sent_at {
                let cfg = self.cfg;
                self.dests[d].on_rtt(now.saturating_since(*t), &cfg);
            }
        }
        if self.multipath() {
            self.variant_sack(now, sack, &acks, cum_advanced);
        } else {
            if let Some(htna) = acks.highest_newly {
                self.count_missing_reports(htna, &acks);
            }
            for d in 0..self.dests.len() {
                if self.may_grow_cwnd(d, cum_advanced) {
                    self.grow_cwnd(d, acks.newly_bytes[d], acks.flight_before[d]);
                }
            }
        }
        self.after_sack(now, sack, &acks);
        let any_new = acks.highest_newly.is_some();
        self.scratch = acks;
        self.prune_rtx_events();
        #[cfg(test)]
        self.assert_indexes_consistent();
        any_new
    }

    /// RFC 4960 section 6.2.1: the gap blocks acknowledge chunks (kept
    /// until the cumulative ack passes them). A SACK repeats the blocks of
    /// the one before and extends them: only the TSNs outside the previous
    /// SACK's blocks are walked, since those inside are already gap acked.
    fn apply_gap_blocks(&mut self, sack: &SackChunk, acks: &mut SackAcks) {
        let mut prev = std::mem::take(&mut self.prev_gap_tsns);
        let mut blocks = std::mem::take(&mut acks.gap_tsns);
        blocks.clear();
        blocks.extend(sack.gap_tsns().map(|(s, e)| (s.max(self.cum_ack + 1), e.min(self.next_tsn - 1))).filter(|(s, e)| s <= e));
        let mut p = 0;
        for &(s, e) in &blocks {
            let mut tsn = s;
            while tsn <= e {
                // Skip the previous blocks that end below `tsn`; one that
                // covers `tsn` is jumped over.
                while p < prev.len() && prev[p].1 < tsn {
                    p += 1;
                }
                let upto = match prev.get(p) {
                    Some(&(ps, pe)) if ps <= tsn => {
                        tsn = pe.saturating_add(1);
                        continue;
                    }
                    Some(&(ps, _)) => e.min(ps - 1),
                    None => e,
                };
                for t in tsn..=upto {
                    self.gap_ack(t, acks);
                }
                tsn = upto + 1;
            }
        }
        prev.clear();
        prev.extend_from_slice(&blocks);
        self.prev_gap_tsns = prev;
        acks.gap_tsns = blocks;
    }

    /// TSN `tsn`, above the cumulative ack, is in a gap block.
    fn gap_ack(&mut self, tsn: u32, acks: &mut SackAcks) {
        #[cfg(test)]
        {
            self.gap_tsns_walked += 1;
        }
        let idx = (tsn - self.cum_ack - 1) as usize;
        let rec = self.chunks[idx];
        // A planned chunk has not left: a block covering it is not ours to believe.
        if !matches!(rec.state, ChunkState::GapAcked | ChunkState::Planned) {
            self.newly_acked(&rec, tsn, acks);
            self.unacked_bytes -= rec.len as u64;
            self.set_state(idx, ChunkState::GapAcked);
        }
    }

    fn newly_acked(&mut self, rec: &TsnRec, tsn: u32, acks: &mut SackAcks) {
        let d = &mut self.dests[rec.dest];
        if rec.state == ChunkState::Outstanding {
            d.flight_bytes -= rec.len as u64;
        }
        d.stats.acked_bytes += rec.len as u64;
        // RFC 4960 section 8.3: an acknowledgement clears the address's errors.
        d.error_count = 0;
        d.active = true;
        acks.newly_bytes[rec.dest] += rec.len as u64;
        acks.newly.push(TsnDest::new(tsn, rec.dest));
        acks.highest_newly = Some(acks.highest_newly.map_or(tsn, |h: u32| h.max(tsn)));
        // Karn's rule (RFC 4960 section 6.3.1 C5): first transmissions
        // only, and none sent before a lower TSN was retransmitted.
        if rec.tx_count == 1 && rec.state == ChunkState::Outstanding && !self.rtx_below_since(tsn, rec.sent_at) {
            let slot = &mut acks.rtt_from[rec.dest];
            *slot = Some(slot.map_or(rec.sent_at, |t: SimTime| t.max(rec.sent_at)));
        }
    }

    /// RFC 4960 section 6.3.1 C5, implementation note: "RTT measurement
    /// should only be made using a chunk with TSN r if no chunk with TSN
    /// less than or equal to r is retransmitted since r is first sent".
    /// The SACK that acknowledges such a chunk may have waited for the
    /// lower hole: a receiver reports its lowest gap blocks only
    /// (`MAX_GAP_BLOCKS`), so the chunk can sit reported nowhere for
    /// as long as the hole stays open.
    fn rtx_below_since(&self, tsn: u32, sent_at: SimTime) -> bool {
        // The events after `sent_at` are a suffix whose first has the lowest TSN.
        let first_after = self.rtx_events.partition_point(|&(t, _)| t <= sent_at);
        self.rtx_events.get(first_after).is_some_and(|&(_, x)| x <= tsn)
    }

    /// TSN `tsn` is retransmitted now.
    fn note_rtx_event(&mut self, now: SimTime, tsn: u32) {
        while self.rtx_events.back().is_some_and(|&(_, x)| x >= tsn) {
            self.rtx_events.pop_back();
        }
        self.rtx_events.push_back((now, tsn));
    }

    /// Forgets the retransmissions no chunk that can still give a sample
    /// was sent before: first transmissions go out in TSN order, so the
    /// lowest outstanding one was sent first.
    fn prune_rtx_events(&mut self) {
        let oldest = (0..self.dests.len())
            .filter_map(|d| self.lowest_outstanding(d, 0))
            .min()
            .map(|tsn| self.chunks[(tsn - self.cum_ack - 1) as usize].sent_at);
        match oldest {
            Some(t) => {
                while self.rtx_events.front().is_some_and(|&(at, _)| at <= t) {
                    self.rtx_events.pop_front();
                }
            }
            None => self.rtx_events.clear(),
        }
    }

    /// RFC 4960 section 7.2.4: every outstanding TSN below the highest
    /// newly acknowledged one gets missing reports; at three it is marked
    /// for fast retransmission (once per TSN).
    /// A TSN already fast retransmitted is left to T3-rtx (section 7.2.4
    /// step 4): its reports would change nothing, so it is not visited.
    fn count_missing_reports(&mut self, htna: u32, acks: &SackAcks) {
        self.collect_candidates(|_| Some(htna));
        let candidates = std::mem::take(&mut self.candidates);
        for &(idx, m) in &candidates {
            let add = self.missing_report_increment(m.tsn, idx, acks);
            let rec = &mut self.chunks[idx];
            rec.missing_reports += add;
            if rec.missing_reports >= DUP_THRESH && !rec.fast_retransmitted {
                self.mark_fast_retransmit(idx);
            }
        }
        self.candidates = candidates;
    }

    /// Into `self.candidates`, lowest TSN first: the outstanding TSNs not
    /// yet fast retransmitted that lie below `bound(d)` on their
    /// destination `d` (no bound: none of `d`'s).
    fn collect_candidates(&mut self, bound: impl Fn(usize) -> Option<u32>) {
        let mut out = std::mem::take(&mut self.candidates);
        out.clear();
        for (d, classes) in self.outstanding.iter().enumerate() {
            let Some(below) = bound(d) else { continue };
            for tsn in classes.iter().flat_map(|c| c.range(..below)) {
                let idx = (tsn - self.cum_ack - 1) as usize;
                let r = &self.chunks[idx];
                if r.fast_retransmitted {
                    continue;
                }
                let m = MissingTsn {
                    tsn: *tsn,
                    dest: r.dest,
                    missing_reports: r.missing_reports,
                    fast_retransmitted: false,
                    sent_at: r.sent_at,
                };
                out.push((idx, m));
            }
        }
        out.sort_unstable_by_key(|&(idx, _)| idx);
        self.candidates = out;
    }

    /// Plain SCTP: missing reports a SACK adds to the outstanding TSN at
    /// `idx`. RFC 4960 section 7.2.4 (HTNA): one. (Variants: `variant_sack`.)
    fn missing_report_increment(&self, _tsn: u32, _idx: usize, _acks: &SackAcks) -> u32 {
        1
    }

    /// Plain SCTP: destination `d` may grow its cwnd on this SACK. RFC 4960 section 7.2.1/7.2.2: when the cumulative ack
    /// advanced, and not in fast recovery.
    fn may_grow_cwnd(&self, d: usize, cum_advanced: bool) -> bool {
        cum_advanced && self.dests[d].fast_recovery_exit.is_none()
    }

    /// Plain SCTP: a TSN reaching the threshold cuts its destination's
    /// window. RFC 4960 section 7.2.4: always.
    fn reduces_window(&self, _tsn: u32, _dest: usize) -> bool {
        true
    }

    /// The destination a retransmission of
    /// a chunk last sent to `dest` goes to. A fast retransmission stays on
    /// its destination (RTX-SAME, plain CMT's); a timeout's go to another
    /// active destination (RFC 4960 section 6.4.1, as Linux's
    /// `sctp_retransmit`), and so do those of an inactive destination.
    /// CMT and its variants: RTX-SSTHRESH, the policy Iyengar et al.
    /// recommend.
    fn rtx_destination(&self, _tsn: u32, dest: usize, timeout: bool) -> usize {
        if self.multipath() {
            return self.policy_rtx_dest(dest);
        }
        let alternate = (1..self.dests.len()).map(|k| (dest + k) % self.dests.len()).find(|&d| self.dests[d].active);
        if !self.dests[dest].active || timeout {
            return alternate.unwrap_or(dest);
        }
        dest
    }

    /// The destination that takes the next new chunk,
    /// if any has room. Plain SCTP: the primary (or the first active
    /// destination when it is not). CMT: round-robin over the active
    /// destinations with cwnd room (Iyengar et al. 2006, section II).
    /// SMOS: the destination where the chunk is predicted to arrive first,
    /// if it has room; otherwise wait for it.
    fn next_new_data_destination(&mut self, now: SimTime) -> Option<usize> {
        let n = self.dests.len();
        let room = |d: &Dest| d.flight_bytes < d.cwnd_bytes;
        if self.multipath() && self.cfg.variant == Variant::Smos && self.dests.iter().any(|d| d.active) {
            // Liao et al. 2010, online form: a chunk queued behind a
            // destination's flight arrives at now + flight·srtt/cwnd +
            // srtt/2; sending it on a slower path that has room now would
            // arrive later than waiting for the fast one.
            let queued: Vec<u64> = self.dests.iter().map(|d| d.flight_bytes).collect();
            let d = smos::choose_dest(now, &self.dest_states(), &queued, &mut TieBreak::LowestIndex)?;
            return room(&self.dests[d]).then_some(d);
        }
        if !self.cfg.cmt {
            let d = if self.dests[self.primary].active {
                self.primary
            } else {
                (0..n).find(|&d| self.dests[d].active).unwrap_or(self.primary)
            };
            return room(&self.dests[d]).then_some(d);
        }
        let any_active = self.dests.iter().any(|d| d.active);
        let pick = (0..n)
            .map(|k| (self.rr_next + k) % n)
            .find(|&d| (self.dests[d].active || (!any_active && d == self.primary)) && room(&self.dests[d]))?;
        self.rr_next = (pick + 1) % n;
        Some(pick)
    }

    fn mark_fast_retransmit(&mut self, idx: usize) {
        let tsn = self.tsn_at(idx);
        let rec = self.chunks[idx];
        let d = rec.dest;
        if self.reduces_window(tsn, d) && self.dests[d].fast_recovery_exit.is_none() {
            let exit = self.highest_outstanding_tsn(d);
            let mtu = self.mtu;
            let dest = &mut self.dests[d];
            dest.ssthresh_bytes = (dest.cwnd_bytes / 2).max(4 * mtu);
            dest.cwnd_bytes = dest.ssthresh_bytes;
            dest.pba_bytes = 0;
            dest.fast_recovery_exit = Some(exit);
            dest.stats.fast_recoveries += 1;
        }
        self.dests[d].flight_bytes -= rec.len as u64;
        self.dests[d].stats.fast_rtx += 1;
        let rtx_dest = self.rtx_destination(tsn, d, false);
        self.set_state(idx, ChunkState::MarkedRtx { fast: true });
        let rec = &mut self.chunks[idx];
        rec.fast_retransmitted = true;
        rec.rtx_dest = rtx_dest;
        self.fast_rtx_pending = true;
    }

    // ----- the multipath variants (docs/cmt.md, "Order of calls on a SACK") -----

    /// The variants' decision rules apply: CMT is on and there is more than
    /// one destination. Plain single-destination SCTP keeps RFC 4960's rules.
    fn multipath(&self) -> bool {
        self.cfg.cmt && self.dests.len() > 1
    }

    /// The per-destination state the decision rules read.
    fn dest_states(&self) -> Vec<DestState> {
        let mut out = Vec::with_capacity(self.dests.len());
        self.dest_states_into(&mut out);
        out
    }

    /// `dest_states` into a buffer the caller keeps (no allocation per SACK).
    fn dest_states_into(&self, out: &mut Vec<DestState>) {
        out.clear();
        out.extend((self.dests.iter().enumerate()).map(|(i, d)| DestState {
            flight_bytes: d.flight_bytes,
            pba_bytes: d.pba_bytes,
            srtt: d.srtt,
            rttvar: d.rttvar,
            fast_recovery_exit: d.fast_recovery_exit,
            active: d.active,
            loss: self.losses.rate(i),
            ..DestState::new(d.cwnd_bytes, d.ssthresh_bytes)
        }));
    }

    /// Takes back the window rules' results.
    fn store_windows(&mut self, states: &[DestState]) {
        for (d, st) in self.dests.iter_mut().zip(states) {
            d.cwnd_bytes = st.cwnd_bytes;
            d.ssthresh_bytes = st.ssthresh_bytes;
            d.pba_bytes = st.pba_bytes;
            d.fast_recovery_exit = st.fast_recovery_exit;
        }
    }

    /// One SACK under CMT, SMT or SMOS, after the acknowledgements are applied.
    /// Only the TSNs this SACK reports missing are handed to the rules
    /// (those below the highest TSN newly acked: on their own destination
    /// for SFR, on any for SMT's HTNA), lowest first; the others' counts
    /// would not change.
    fn variant_sack(&mut self, now: SimTime, sack: &SackChunk, acks: &SackAcks, cum_advanced: bool) {
        let n = self.dests.len();
        let mut ev = std::mem::take(&mut self.evidence);
        ev.refill(n, &acks.newly);
        let dac = Some(DacCount::from_sack_flags(sack.flags));
        let htna = ev.highest_newack();
        match self.cfg.variant {
            Variant::Smt => self.collect_candidates(|_| htna),
            Variant::Cmt | Variant::Smos => self.collect_candidates(|d| ev.highest_newack_for(d).filter(|_| ev.saw_newack(d))),
        }
        let mut candidates = std::mem::take(&mut self.candidates);
        let mut missing = std::mem::take(&mut self.missing);
        missing.clear();
        missing.extend(candidates.iter().map(|&(_, m)| m));
        match self.cfg.variant {
            Variant::Smt => self.mcc_reports(now, &ev, dac, acks, &mut missing),
            Variant::Cmt | Variant::Smos => self.sfr_reports(&ev, dac, &mut missing),
        }
        for (&(i, _), m) in candidates.iter().zip(&missing) {
            self.chunks[i].missing_reports = m.missing_reports;
        }
        candidates.clear();
        self.candidates = candidates;
        self.missing = missing;
        self.evidence = ev;
        // CUCv2 (Iyengar et al. 2006; FreeBSD rtx_pseudo_cumack): fast
        // recovery ends first, then each destination may grow on a
        // cumulative or pseudo-cumulative ack.
        let got = |d: usize| acks.newly.iter().any(|t| t.dest == d && acks.pcum_before.is_new_pseudo_cumack(*t, CucVersion::V2));
        let mut states = std::mem::take(&mut self.states);
        self.dest_states_into(&mut states);
        for (d, st) in states.iter_mut().enumerate() {
            st.on_cum_ack(self.cum_ack);
            let input = GrowthInput { newly_acked_bytes: acks.newly_bytes[d], cum_advanced, new_pseudo_cumack: got(d) };
            cucv2::grow_cwnd(st, input, self.mtu);
        }
        self.store_windows(&states);
        self.states = states;
    }

    /// CMT: split fast retransmit with DAC; each cut before the
    /// retransmission destinations are chosen, so RTX-SSTHRESH sees the
    /// reduced windows.
    fn sfr_reports(&mut self, ev: &SackEvidence, dac: Option<DacCount>, missing: &mut [MissingTsn]) {
        let mut states = std::mem::take(&mut self.states);
        self.dest_states_into(&mut states);
        let marks = sfr::count_and_mark(ev, MissingRule::Sfr(SfrHighest::NewlyAcked), dac, missing, &states);
        self.states = states;
        for &d in &marks.cut {
            let exit = self.highest_outstanding_tsn(d);
            let mut states = self.dest_states();
            if states[d].enter_fast_recovery(exit, self.mtu) {
                self.dests[d].stats.fast_recoveries += 1;
            }
            self.store_windows(&states);
        }
        for t in &marks.marked {
            let to = self.policy_rtx_dest(t.dest);
            self.mark_for_fast_rtx(t.tsn, to);
        }
    }

    /// SMT: IOPD classifies each TSN at its third report; MCC resends it on
    /// the fastest path and halves its own path's window only for an
    /// intra-path loss (Khan & Qadir, Algorithm 1 and section 3).
    fn mcc_reports(
        &mut self,
        now: SimTime,
        ev: &SackEvidence,
        dac: Option<DacCount>,
        acks: &SackAcks,
        missing: &mut [MissingTsn],
    ) {
        let outstanding = &self.outstanding;
        self.iopd.on_sack_with_lows(&acks.newly, |d| lowest_outstanding_any(&outstanding[d]));
        let mut states = std::mem::take(&mut self.states);
        self.dest_states_into(&mut states);
        let actions = mcc::count_and_react(ev, &self.iopd, dac, missing, &mut states, now, MccConfig::new(self.mtu));
        self.store_windows(&states);
        self.states = states;
        if actions.is_empty() {
            return; // nothing left the outstanding TSNs since IOPD's lows were taken
        }
        for a in actions {
            let stats = &mut self.dests[a.from].stats;
            stats.fast_recoveries += u64::from(a.window_cut);
            match a.class {
                OosClass::Inter => stats.fast_rtx_inter += 1,
                OosClass::Intra => stats.fast_rtx_intra += 1,
            }
            self.mark_for_fast_rtx(a.tsn, a.rtx_dest);
        }
        let outstanding = &self.outstanding;
        self.iopd.set_lows(|d| lowest_outstanding_any(&outstanding[d]));
    }

    /// The configured retransmission policy over the active destinations
    /// (Iyengar, Amer, Stewart, ICON 2004); ties to the lowest index.
    /// RTX-ASAP with no room anywhere keeps `last_dest` here and is asked
    /// again when the retransmission can go (`next_retransmission`).
    fn policy_rtx_dest(&self, last_dest: usize) -> usize {
        match choose_rtx_dest(self.cfg.rtx_policy, last_dest, &self.dest_states(), &mut TieBreak::LowestIndex) {
            RtxChoice::Now(d) => d,
            RtxChoice::WhenRoom => last_dest,
        }
    }

    /// A loss of `tsn` sent to `d`, for RTX-LOSSRATE.
    fn note_loss(&mut self, d: usize, tsn: u32) {
        if self.multipath() {
            self.losses.on_loss(d, tsn);
        }
    }

    /// RTX-ASAP: a retransmission goes to whichever active destination has
    /// room when it can go (SMT's fast retransmissions keep MCC's choice).
    fn asap_dest(&self) -> Option<usize> {
        if !(self.multipath() && self.cfg.rtx_policy == RtxPolicy::Asap && self.cfg.variant != Variant::Smt) {
            return None;
        }
        (0..self.dests.len()).find(|&d| self.dests[d].active && self.dests[d].flight_bytes < self.dests[d].cwnd_bytes)
    }

    /// Marks outstanding `tsn` for a fast retransmission to `to`; its bytes
    /// leave its destination's flight.
    fn mark_for_fast_rtx(&mut self, tsn: u32, to: usize) {
        let idx = (tsn - self.cum_ack - 1) as usize;
        let rec = self.chunks[idx];
        debug_assert_eq!(rec.state, ChunkState::Outstanding);
        self.dests[rec.dest].flight_bytes -= rec.len as u64;
        self.dests[rec.dest].stats.fast_rtx += 1;
        self.note_loss(rec.dest, tsn);
        self.set_state(idx, ChunkState::MarkedRtx { fast: true });
        let r = &mut self.chunks[idx];
        r.fast_retransmitted = true;
        r.rtx_dest = to;
        self.fast_rtx_pending = true;
    }

    /// The fast-recovery exit point: the highest TSN outstanding (CMT: on
    /// destination `d`, Iyengar et al. 2006 section III-A).
    fn highest_outstanding_tsn(&self, d: usize) -> u32 {
        if !self.cfg.cmt {
            return self.next_tsn - 1;
        }
        (0..self.chunks.len())
            .rev()
            .find(|&i| self.chunks[i].dest == d && self.chunks[i].state != ChunkState::Planned)
            .map_or(self.cum_ack, |i| self.tsn_at(i))
    }

    /// RFC 4960 sections 7.2.1 and 7.2.2: slow start or congestion
    /// avoidance with `newly_bytes` acknowledged for `d`, whose flight was
    /// `flight_before` when the SACK came.
    fn grow_cwnd(&mut self, d: usize, newly_bytes: u64, flight_before: u64) {
        let mtu = self.mtu;
        let dest = &mut self.dests[d];
        if newly_bytes == 0 {
            return;
        }
        if dest.cwnd_bytes <= dest.ssthresh_bytes {
            if flight_before >= dest.cwnd_bytes {
                dest.cwnd_bytes += newly_bytes.min(mtu);
            }
        } else {
            dest.pba_bytes += newly_bytes;
            if dest.pba_bytes >= dest.cwnd_bytes && flight_before >= dest.cwnd_bytes {
                dest.pba_bytes -= dest.cwnd_bytes;
                dest.cwnd_bytes += mtu;
            }
        }
    }

    /// Fast-recovery exits, idle pba, the peer's window and the T3 timers.
    fn after_sack(&mut self, now: SimTime, sack: &SackChunk, acks: &SackAcks) {
        let cum_ack = self.cum_ack;
        for (d, dest) in self.dests.iter_mut().enumerate() {
            if dest.fast_recovery_exit.is_some_and(|exit| cum_ack >= exit) {
                dest.fast_recovery_exit = None;
            }
            if dest.flight_bytes == 0 {
                // RFC 4960 section 7.2.2: all data on d acknowledged.
                dest.pba_bytes = 0;
                dest.t3_deadline = None;
            } else if acks.newly_bytes[d] > 0 {
                // RFC 4960 section 6.3.2 R3 (restarted on any new ack of
                // d's data, as Linux's sctp_check_transmitted does).
                dest.t3_deadline = Some(now + dest.rto);
            }
        }
        // RFC 4960 section 6.2.1 D iv.
        self.peer_rwnd_bytes = (sack.a_rwnd_bytes as u64).saturating_sub(self.outstanding_bytes());
    }

    // ----- timeouts -----

    /// RFC 4960 section 6.3.3: destination `d`'s T3-rtx timer expired.
    /// Returns true when the destination just became inactive.
    pub fn on_t3(&mut self, _now: SimTime, d: usize) -> bool {
        let mtu = self.mtu;
        let cfg = self.cfg;
        let dest = &mut self.dests[d];
        dest.t3_deadline = None;
        dest.rto = SimDuration(dest.rto.0.saturating_mul(2)).min(cfg.rto_max);
        dest.ssthresh_bytes = (dest.cwnd_bytes / 2).max(4 * mtu);
        dest.cwnd_bytes = mtu;
        dest.pba_bytes = 0;
        dest.fast_recovery_exit = None;
        dest.stats.timeouts += 1;
        let failed = self.count_error(d);
        for idx in 0..self.chunks.len() {
            let rec = self.chunks[idx];
            if rec.dest == d && rec.state == ChunkState::Outstanding {
                self.dests[d].flight_bytes -= rec.len as u64;
                self.note_loss(d, self.tsn_at(idx));
                let rtx_dest = self.rtx_destination(self.tsn_at(idx), d, true);
                self.set_state(idx, ChunkState::MarkedRtx { fast: false });
                self.chunks[idx].rtx_dest = rtx_dest;
            }
        }
        failed
    }

    /// RFC 4960 section 8.2: one more error on `d`; past Path.Max.Retrans
    /// it is inactive and its pending retransmissions move elsewhere.
    /// Returns true when it just became inactive.
    pub fn count_error(&mut self, d: usize) -> bool {
        let dest = &mut self.dests[d];
        dest.error_count += 1;
        if !dest.active || dest.error_count <= self.cfg.path_max_retrans {
            return false;
        }
        dest.active = false;
        for idx in 0..self.chunks.len() {
            if let ChunkState::MarkedRtx { .. } = self.chunks[idx].state {
                if self.chunks[idx].rtx_dest == d {
                    let to = self.rtx_destination(self.tsn_at(idx), d, true);
                    self.chunks[idx].rtx_dest = to;
                }
            }
        }
        if self.primary == d {
            // RFC 4960 section 6.4: the primary's data goes to an active alternate.
            self.rr_next = (d + 1) % self.dests.len();
        }
        true
    }

    // ----- transmission -----

    /// The next DATA chunk to send, if cwnd and the peer's window allow.
    pub fn next_data(&mut self, now: SimTime) -> Option<DataTx> {
        if let Some(tx) = self.next_retransmission(now) {
            return Some(tx);
        }
        if self.trunk_mode() {
            return self.next_planned(now);
        }
        if !self.has_unsent() {
            return None;
        }
        let len = if self.unlimited {
            self.cfg.max_payload_bytes
        } else {
            self.unsent_bytes.min(self.cfg.max_payload_bytes as u64) as u32
        };
        // RFC 4960 section 6.1 A, as Linux applies it
        // (sctp_packet_can_append_data): a chunk larger than the window waits
        // while data is in flight; with none in flight it probes the window.
        let in_flight = self.outstanding_bytes();
        if (len as u64) > self.peer_rwnd_bytes && in_flight > 0 {
            return None;
        }
        let d = self.next_new_data_destination(now)?;
        self.idle_cwnd_decay(now, d);
        let tsn = self.next_tsn;
        self.next_tsn += 1;
        if !self.unlimited {
            self.unsent_bytes -= len as u64;
        }
        let rec = TsnRec {
            len,
            dest: d,
            rtx_dest: d,
            sent_at: now,
            tx_count: 1,
            missing_reports: 0,
            fast_retransmitted: false,
            state: ChunkState::Outstanding,
        };
        self.chunks.push_back(rec);
        self.index(tsn, &rec);
        self.unacked_bytes += len as u64;
        #[cfg(test)]
        self.sent_log.push((tsn, len));
        self.on_sent(now, tsn, d, len, false);
        Some(DataTx { tsn, len, dest: d, retransmission: false })
    }

    /// SMOS in its trunk form (`SctpConfig::smos_trunk`): TSNs are numbered
    /// a trunk at a time and given to destinations in order of predicted
    /// arrival, so they leave out of TSN order.
    fn trunk_mode(&self) -> bool {
        self.multipath() && self.cfg.variant == Variant::Smos && self.cfg.smos_trunk
    }

    /// Numbers the next trunk (Liao et al. 2010, docs/cmt.md): `Σ cwnd /
    /// MTU` chunks (fewer if less is written), split over the
    /// destinations by rate and given TSNs in order of predicted arrival,
    /// each destination's slots queued behind its slots of the last trunk.
    fn plan_trunk(&mut self, now: SimTime) {
        let max_bytes = self.cfg.max_payload_bytes as u64;
        let states = self.dest_states();
        let mut n_pkts = smos::default_trunk_pkts(&states, self.mtu);
        if !self.unlimited {
            n_pkts = n_pkts.min(self.unsent_bytes.div_ceil(max_bytes).min(u32::MAX as u64) as u32);
        }
        let queued: Vec<u64> = self
            .planned
            .iter()
            .map(|q| q.iter().map(|&t| self.chunks[(t - self.cum_ack - 1) as usize].len as u64).sum())
            .collect();
        let plan =
            smos::plan_trunk_behind(now, n_pkts, &states, &queued, self.mtu, SimDuration::ZERO, &mut TieBreak::LowestIndex);
        for slot in plan {
            let len = if self.unlimited { max_bytes } else { self.unsent_bytes.min(max_bytes) };
            if len == 0 {
                break;
            }
            if !self.unlimited {
                self.unsent_bytes -= len;
            }
            let tsn = self.next_tsn;
            self.next_tsn += 1;
            self.chunks.push_back(TsnRec {
                len: len as u32,
                dest: slot.dest,
                rtx_dest: slot.dest,
                sent_at: now,
                tx_count: 0,
                missing_reports: 0,
                fast_retransmitted: false,
                state: ChunkState::Planned,
            });
            self.planned[slot.dest].push_back(tsn);
        }
    }

    /// The destination that sends the next planned TSN of destination `p`:
    /// `p` itself when it has room; an inactive destination's slots go to
    /// the first active destination with room (RFC 4960 section 6.4), or
    /// the primary when none is active.
    fn trunk_sender(&self, p: usize) -> Option<usize> {
        let room = |d: usize| self.dests[d].flight_bytes < self.dests[d].cwnd_bytes;
        if self.dests[p].active {
            return room(p).then_some(p);
        }
        let any_active = self.dests.iter().any(|d| d.active);
        (0..self.dests.len()).find(|&d| (self.dests[d].active || (!any_active && d == self.primary)) && room(d))
    }

    /// The lowest planned TSN a destination can send now; a new trunk is
    /// numbered when a destination with room has no slot left and less
    /// than a trunk waits (a path whose share rounds to nothing would
    /// otherwise start a trunk on every call).
    fn next_planned(&mut self, now: SimTime) -> Option<DataTx> {
        let n = self.dests.len();
        let idle = |s: &Self, d: usize| s.dests[d].active && s.planned[d].is_empty() && s.trunk_sender(d).is_some();
        let waiting = self.planned.iter().map(VecDeque::len).sum::<usize>();
        let trunk = smos::default_trunk_pkts(&self.dest_states(), self.mtu) as usize;
        if self.has_unsent() && waiting < trunk && (0..n).any(|d| idle(self, d)) {
            self.plan_trunk(now);
        }
        let (tsn, p, d) = (0..n).filter_map(|p| Some((*self.planned[p].front()?, p, self.trunk_sender(p)?))).min()?;
        let idx = (tsn - self.cum_ack - 1) as usize;
        let len = self.chunks[idx].len;
        // RFC 4960 section 6.1 A, as for the other variants, with the
        // window kept for the lower TSNs not sent yet: were a higher TSN to
        // fill the receiver's buffer, the hole below it could never be
        // filled (the buffer holds what is above the hole, and the sender
        // waits for the window to open). Only the lowest may probe a
        // closed window.
        let reserved = self.planned_bytes_below(tsn);
        let probe = reserved == 0 && self.outstanding_bytes() == 0;
        if len as u64 + reserved > self.peer_rwnd_bytes && !probe {
            return None;
        }
        self.planned[p].pop_front();
        self.idle_cwnd_decay(now, d);
        let rec = &mut self.chunks[idx];
        rec.state = ChunkState::Outstanding;
        rec.dest = d;
        rec.rtx_dest = d;
        rec.sent_at = now;
        rec.tx_count = 1;
        // A planned chunk is in no index and not unacknowledged until it leaves.
        let rec = *rec;
        self.index(tsn, &rec);
        self.unacked_bytes += len as u64;
        #[cfg(test)]
        self.sent_log.push((tsn, len));
        self.on_sent(now, tsn, d, len, false);
        Some(DataTx { tsn, len, dest: d, retransmission: false })
    }

    /// Payload bytes of the planned TSNs below `tsn` not sent yet.
    fn planned_bytes_below(&self, tsn: u32) -> u64 {
        let len = |t: u32| self.chunks[(t - self.cum_ack - 1) as usize].len as u64;
        self.planned.iter().flat_map(|q| q.iter().take_while(|&&t| t < tsn)).map(|&t| len(t)).sum()
    }

    /// The lowest marked TSN whose destination has cwnd room; the first
    /// fast retransmission goes regardless (RFC 4960 section 7.2.4 rule 3).
    fn next_retransmission(&mut self, now: SimTime) -> Option<DataTx> {
        let Some((tsn, fast, d)) = self.retransmission_ready() else {
            self.fast_rtx_pending = false;
            return None;
        };
        let idx = (tsn - self.cum_ack - 1) as usize;
        if fast {
            self.fast_rtx_pending = false;
        }
        let old = self.chunks[idx];
        self.unindex(tsn, &old);
        let rec = &mut self.chunks[idx];
        rec.state = ChunkState::Outstanding;
        rec.dest = d;
        rec.sent_at = now;
        rec.tx_count += 1;
        rec.missing_reports = 0;
        let (len, new) = (rec.len, *rec);
        self.index(tsn, &new);
        self.note_rtx_event(now, tsn);
        self.on_sent(now, tsn, d, len, true);
        Some(DataTx { tsn: self.tsn_at(idx), len, dest: d, retransmission: true })
    }

    /// The lowest marked TSN that may go now, whether it is a fast
    /// retransmission, and its destination.
    fn retransmission_ready(&self) -> Option<(u32, bool, usize)> {
        let room = |d: &Dest| d.flight_bytes < d.cwnd_bytes;
        if self.marked.is_empty() || !self.fast_rtx_pending && !self.dests.iter().any(room) {
            return None; // nothing may go: skip the walk
        }
        self.marked.iter().find_map(|&tsn| {
            let rec = &self.chunks[(tsn - self.cum_ack - 1) as usize];
            let ChunkState::MarkedRtx { fast } = rec.state else { return None };
            let d = self.asap_dest().unwrap_or(rec.rtx_dest);
            (room(&self.dests[d]) || fast && self.fast_rtx_pending).then_some((tsn, fast, d))
        })
    }

    fn on_sent(&mut self, now: SimTime, tsn: u32, d: usize, len: u32, retransmission: bool) {
        if self.multipath() {
            self.iopd.on_send(TsnDest::new(tsn, d));
            self.losses.on_send(d, tsn);
        }
        self.peer_rwnd_bytes = self.peer_rwnd_bytes.saturating_sub(len as u64);
        let dest = &mut self.dests[d];
        dest.flight_bytes += len as u64;
        dest.last_sent = now;
        dest.stats.sent_bytes += len as u64;
        if retransmission {
            dest.stats.retransmitted_bytes += len as u64;
            dest.stats.retransmitted_chunks += 1;
        }
        // RFC 4960 section 6.3.2 R1.
        if dest.t3_deadline.is_none() {
            dest.t3_deadline = Some(now + dest.rto);
        }
    }

    /// RFC 4960 section 7.2.1: a destination idle for an RTO halves its
    /// cwnd (not below 4 MTUs) before it sends again.
    fn idle_cwnd_decay(&mut self, now: SimTime, d: usize) {
        let mtu = self.mtu;
        let dest = &mut self.dests[d];
        if dest.flight_bytes == 0 && dest.stats.sent_bytes > 0 && now.saturating_since(dest.last_sent) > dest.rto {
            dest.cwnd_bytes = (dest.cwnd_bytes / 2).max(4 * mtu).min(dest.cwnd_bytes);
        }
    }
}

/// What one SACK newly acknowledged, per destination.
#[derive(Default)]
struct SackAcks {
    newly_bytes: Vec<u64>,
    /// Send time of the latest first transmission newly acked (an RTT sample).
    rtt_from: Vec<Option<SimTime>>,
    highest_newly: Option<u32>,
    /// Every TSN newly acknowledged, with the destination it was last sent to.
    newly: Vec<TsnDest>,
    /// Each destination's flight when the SACK came.
    flight_before: Vec<u64>,
    /// CUCv2's trackers before the SACK.
    pcum_before: PseudoCumacks,
    /// The SACK's gap blocks, absolute and within what was sent.
    gap_tsns: Vec<(u32, u32)>,
}

impl SackAcks {
    fn new(n_dests: usize) -> Self {
        SackAcks { pcum_before: PseudoCumacks::new(n_dests), ..Default::default() }
    }

    /// Empty again for a SACK to `dests`.
    fn reset(&mut self, dests: &[Dest]) {
        let n = dests.len();
        self.newly_bytes.clear();
        self.newly_bytes.resize(n, 0);
        self.rtt_from.clear();
        self.rtt_from.resize(n, None);
        self.highest_newly = None;
        self.newly.clear();
        self.flight_before.clear();
        self.flight_before.extend(dests.iter().map(|d| d.flight_bytes));
        for d in 0..n {
            self.pcum_before.set(d, None, None);
        }
    }
}

/// Lowest outstanding TSN of a destination, either class (IOPD's `low`).
fn lowest_outstanding_any(classes: &[TsnSet; 2]) -> Option<u32> {
    match (classes[0].first(), classes[1].first()) {
        (Some(&a), Some(&b)) => Some(a.min(b)),
        (a, b) => a.or(b).copied(),
    }
}

/// A set of TSNs kept sorted in a ring: TSNs are sent in order, so an
/// insertion lands at the back, and acknowledgements take them mostly from
/// the front; cheaper per chunk than a B-tree for the few hundred a sender
/// has outstanding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TsnSet(VecDeque<u32>);

impl TsnSet {
    fn insert(&mut self, tsn: u32) -> bool {
        if self.0.back().is_none_or(|&b| b < tsn) {
            self.0.push_back(tsn);
            return true;
        }
        match self.0.binary_search(&tsn) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, tsn);
                true
            }
        }
    }

    fn remove(&mut self, tsn: &u32) -> bool {
        if self.0.front() == Some(tsn) {
            self.0.pop_front();
            return true;
        }
        match self.0.binary_search(tsn) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    fn first(&self) -> Option<&u32> {
        self.0.front()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = &u32> + '_ {
        self.0.iter()
    }

    /// The TSNs below `end`, lowest first.
    fn range(&self, end: std::ops::RangeTo<u32>) -> impl Iterator<Item = &u32> + '_ {
        self.0.iter().take_while(move |&&t| t < end.end)
    }
}

/// Index of a chunk's class in `Sender::outstanding`: 0 for a first
/// transmission, 1 for a retransmission.
fn rec_class(rec: &TsnRec) -> usize {
    usize::from(rec.tx_count > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sender(n_paths: usize, cmt: bool) -> Sender {
        let cfg = SctpConfig { cmt, rbuf_bytes: 1 << 20, ..Default::default() };
        let mut s = Sender::new(&cfg, n_paths);
        s.write(None);
        s
    }

    /// Two destinations under `variant`; the first flight is TSNs 1..=8,
    /// odd ones on destination 0, even ones on destination 1.
    fn variant_sender(variant: Variant) -> Sender {
        let cfg = SctpConfig { cmt: true, variant, rbuf_bytes: 1 << 20, ..Default::default() };
        let mut s = Sender::new(&cfg, 2);
        s.write(None);
        s
    }

    fn ms(v: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(v)
    }

    #[test]
    fn cmt_split_fast_retransmit_counts_reports_per_destination() {
        let mut s = variant_sender(Variant::Cmt);
        let sent = drain(&mut s, SimTime::ZERO);
        assert_eq!(sent.iter().map(|t| t.dest).collect::<Vec<_>>(), [0, 1, 0, 1, 0, 1, 0, 1]);
        // Destination 1's TSNs 2, 4, 6 overtake TSN 1: no evidence against it.
        for gaps in [&[(2, 2)][..], &[(2, 2), (4, 4)], &[(2, 2), (4, 4), (6, 6)]] {
            s.on_sack(ms(10), &sack(0, gaps, 1 << 20));
        }
        assert_eq!(s.dests[0].stats.fast_recoveries, 0);
        assert!(s.next_retransmission(ms(10)).is_none(), "TSN 1 marked on reordering alone");
        // Destination 0's own TSNs 3, 5, 7 are: TSN 1 is lost.
        for gaps in [&[(2, 4)][..], &[(2, 6)], &[(2, 7)]] {
            s.on_sack(ms(20), &sack(0, gaps, 1 << 20));
        }
        assert_eq!(s.dests[0].stats.fast_recoveries, 1);
        let rtx = s.next_data(ms(20)).expect("the fast retransmission");
        assert_eq!((rtx.tsn, rtx.retransmission), (1, true));
        assert_eq!(rtx.dest, 1, "RTX-SSTHRESH: the destination with the larger ssthresh");
    }

    #[test]
    fn the_configured_rtx_policy_chooses_the_fast_retransmission_destination() {
        let cfg = SctpConfig { rtx_policy: RtxPolicy::Same, rbuf_bytes: 1 << 20, ..Default::default() };
        let mut s = Sender::new(&cfg, 2);
        s.write(None);
        drain(&mut s, SimTime::ZERO);
        for gaps in [&[(3, 3)][..], &[(3, 3), (5, 5)], &[(3, 3), (5, 5), (7, 7)]] {
            s.on_sack(ms(20), &sack(0, gaps, 1 << 20));
        }
        assert_eq!(s.next_data(ms(20)).map(|t| (t.tsn, t.dest)), Some((1, 0)), "RTX-SAME");
    }

    #[test]
    fn cucv2_grows_a_destination_on_its_pseudo_cumack() {
        let mut s = variant_sender(Variant::Cmt);
        drain(&mut s, SimTime::ZERO);
        // TSN 1 is still missing, so the cumulative ack does not move; TSN 2
        // is destination 1's oldest outstanding TSN.
        s.on_sack(ms(10), &sack(0, &[(2, 2)], 1 << 20));
        assert_eq!(s.dests[1].cwnd_bytes, 4380 + 1452);
        assert_eq!(s.dests[0].cwnd_bytes, 4380);
    }

    #[test]
    fn smt_resends_an_inter_path_hole_on_the_fastest_path_without_a_cut() {
        let mut s = variant_sender(Variant::Smt);
        s.dests[0].srtt = Some(SimDuration::from_millis(400));
        s.dests[1].srtt = Some(SimDuration::from_millis(20));
        drain(&mut s, SimTime::ZERO);
        for gaps in [&[(2, 2)][..], &[(2, 2), (4, 4)], &[(2, 2), (4, 4), (6, 6)]] {
            s.on_sack(ms(10), &sack(0, gaps, 1 << 20));
        }
        // Nothing of destination 0 is acked yet: TSN 1 is only late.
        assert_eq!((s.dests[0].stats.fast_rtx_inter, s.dests[0].stats.fast_recoveries), (1, 0));
        assert_eq!(s.dests[0].cwnd_bytes, 4380);
        let rtx = s.next_data(ms(10)).expect("the fast retransmission");
        assert_eq!((rtx.tsn, rtx.retransmission, rtx.dest), (1, true, 1));
    }

    #[test]
    fn smt_cuts_the_window_of_an_intra_path_loss() {
        let mut s = variant_sender(Variant::Smt);
        s.dests[0].cwnd_bytes = 8 * 1500;
        s.dests[0].srtt = Some(SimDuration::from_millis(400));
        s.dests[1].srtt = Some(SimDuration::from_millis(20));
        drain(&mut s, SimTime::ZERO);
        // A later TSN of destination 0 (3) arrives before TSN 1: TSN 1 is lost on its own path.
        for gaps in [&[(3, 3)][..], &[(2, 4)], &[(2, 6)]] {
            s.on_sack(ms(10), &sack(0, gaps, 1 << 20));
        }
        assert_eq!((s.dests[0].stats.fast_rtx_intra, s.dests[0].stats.fast_recoveries), (1, 1));
        assert_eq!(s.dests[0].ssthresh_bytes, 6000);
        assert_eq!(s.next_data(ms(10)).map(|t| (t.tsn, t.dest)), Some((1, 1)));
    }

    #[test]
    fn smos_sends_where_the_chunk_arrives_first() {
        let mut s = variant_sender(Variant::Smos);
        s.dests[0].srtt = Some(SimDuration::from_millis(1000));
        s.dests[1].srtt = Some(SimDuration::from_millis(50));
        let sent = drain(&mut s, SimTime::ZERO);
        // A full window on destination 1 still arrives (at most 75 ms)
        // before a chunk on destination 0 (500 ms): wait for destination 1.
        assert_eq!(sent.len(), 4, "{sent:?}");
        assert!(sent.iter().all(|t| t.dest == 1), "{sent:?}");
    }

    #[test]
    fn every_fast_retransmission_is_counted_on_the_destination_that_lost_it() {
        // Plain SCTP: TSN 1 lost, three SACKs report it missing.
        let mut s = sender(1, false);
        s.dests[0].cwnd_bytes = 20 * 1500;
        drain(&mut s, SimTime::ZERO);
        for e in 1..=3u16 {
            s.on_sack(ms(50), &sack(0, &[(2, 1 + e)], 1 << 20));
        }
        assert_eq!(s.dests[0].stats.fast_rtx, 1);
        assert_eq!((s.dests[0].stats.fast_rtx_inter, s.dests[0].stats.fast_rtx_intra), (0, 0), "plain SCTP classes nothing");
        // CMT: destination 0's own TSNs 3, 5, 7 report TSN 1 missing; it
        // is resent on destination 1 but counted on 0, which lost it.
        let mut s = variant_sender(Variant::Cmt);
        drain(&mut s, SimTime::ZERO);
        for gaps in [&[(2, 4)][..], &[(2, 6)], &[(2, 7)]] {
            s.on_sack(ms(20), &sack(0, gaps, 1 << 20));
        }
        let counts =
            |s: &Sender, d: usize| (s.dests[d].stats.fast_rtx, s.dests[d].stats.fast_rtx_inter, s.dests[d].stats.fast_rtx_intra);
        assert_eq!((counts(&s, 0), counts(&s, 1)), ((1, 0, 0), (0, 0, 0)), "CMT classes nothing");
        // SMT: the same reports make TSN 1 an intra-path loss.
        let mut s = variant_sender(Variant::Smt);
        s.dests[0].srtt = Some(SimDuration::from_millis(400));
        s.dests[1].srtt = Some(SimDuration::from_millis(20));
        drain(&mut s, SimTime::ZERO);
        for gaps in [&[(3, 3)][..], &[(2, 4)], &[(2, 6)]] {
            s.on_sack(ms(10), &sack(0, gaps, 1 << 20));
        }
        assert_eq!((counts(&s, 0), counts(&s, 1)), ((1, 0, 1), (0, 0, 0)));
    }

    #[test]
    fn a_path_whose_share_rounds_to_nothing_does_not_pile_up_trunks() {
        let cfg = SctpConfig { variant: Variant::Smos, smos_trunk: true, rbuf_bytes: 1 << 30, ..Default::default() };
        let mut s = Sender::new(&cfg, 2);
        s.write(None);
        // Rates 750 kB/s and 300 B/s: a trunk of 11 gives the slow path
        // nothing, so it stays idle with room after every trunk.
        for (d, cwnd, srtt_ms) in [(0, 15_000, 20), (1, 1500, 5000)] {
            s.dests[d].cwnd_bytes = cwnd;
            s.dests[d].srtt = Some(SimDuration::from_millis(srtt_ms));
        }
        for round in 0..20u32 {
            let sent = drain(&mut s, ms(20 * round as u64));
            assert!(sent.iter().all(|t| t.dest == 0));
            let planned: usize = s.planned.iter().map(VecDeque::len).sum();
            // At most one trunk (Σ cwnd / MTU, grown by slow start) waits when the next is numbered.
            let trunk = s.dests.iter().map(|d| d.cwnd_bytes / 1500).sum::<u64>() as usize;
            assert!(planned < 2 * trunk, "round {round}: {planned} chunks numbered and not sent, trunk {trunk}");
            s.on_sack(ms(20 * round as u64 + 20), &sack(s.next_tsn - 1 - planned as u32, &[], 1 << 30));
        }
    }

    #[test]
    fn smos_trunks_send_the_slow_paths_higher_tsns_before_the_fast_paths_lower_ones() {
        let cfg = SctpConfig { variant: Variant::Smos, smos_trunk: true, rbuf_bytes: 1 << 20, ..Default::default() };
        let mut s = Sender::new(&cfg, 2);
        s.write(None);
        for (d, srtt_ms) in [(0, 20), (1, 200)] {
            s.dests[d].cwnd_bytes = 15_000;
            s.dests[d].srtt = Some(SimDuration::from_millis(srtt_ms));
        }
        // A trunk of 20: rates 750 and 75 kB/s split it 18 to 2; the fast
        // path's slots arrive at 10..44 ms, the slow path's at 100 and 120
        // ms, so TSNs 1-18 are the fast path's and 19-20 the slow path's.
        let sent = drain(&mut s, SimTime::ZERO);
        let on = |d: usize| sent.iter().filter(|t| t.dest == d).map(|t| t.tsn).collect::<Vec<_>>();
        assert_eq!(&on(1)[..2], [19, 20], "{sent:?}");
        assert_eq!(on(0), (1..=11).collect::<Vec<_>>(), "the fast path's window holds 11 chunks");
        // The slow path sends at once; the fast path's TSNs 12-18 wait for its window.
        assert!(on(0).iter().all(|t| t < &19));
        for d in [0, 1] {
            assert!(on(d).windows(2).all(|w| w[0] < w[1]), "destination {d} sends out of TSN order: {sent:?}");
        }
        // Acknowledging the fast path's first chunks sends TSN 12 on.
        s.on_sack(ms(20), &sack(2, &[], 1 << 20));
        assert_eq!(s.next_data(ms(20)).map(|t| (t.tsn, t.dest)), Some((12, 0)));
    }

    #[test]
    fn no_rtt_sample_from_a_chunk_sent_before_a_lower_tsn_was_retransmitted() {
        // RFC 4960 section 6.3.1 C5, implementation note: TSN 8
        // (destination 1) was sent before TSN 1 was retransmitted; the
        // SACK that acks it may have waited for the hole (a receiver
        // reports at most MAX_GAP_BLOCKS blocks, the lowest first), so it
        // measures no round trip of destination 1.
        let mut s = variant_sender(Variant::Smt);
        s.dests[0].srtt = Some(SimDuration::from_millis(400));
        s.dests[1].srtt = Some(SimDuration::from_millis(20));
        drain(&mut s, SimTime::ZERO);
        for gaps in [&[(2, 2)][..], &[(2, 2), (4, 4)], &[(2, 2), (4, 4), (6, 6)]] {
            s.on_sack(ms(10), &sack(0, gaps, 1 << 20));
        }
        let rtx = s.next_data(ms(10)).expect("the fast retransmission");
        assert_eq!((rtx.tsn, rtx.retransmission), (1, true));
        let before = s.dests[1].srtt;
        s.on_sack(ms(900), &sack(0, &[(2, 2), (4, 4), (6, 6), (8, 8)], 1 << 20));
        assert_eq!(s.dests[1].srtt, before, "a sample spanning the retransmission of TSN 1");
        // A chunk first sent after the retransmission measures again.
        let next = drain(&mut s, ms(900));
        let tsn = next.iter().find(|t| !t.retransmission && t.dest == 1).expect("new data on 1").tsn;
        s.on_sack(ms(1000), &sack(0, &[(2, 2), (4, 4), (6, 6), (8, 8), (tsn as u16, tsn as u16)], 1 << 20));
        assert_ne!(s.dests[1].srtt, before, "a chunk sent after the retransmission");
    }

    #[test]
    fn a_sack_walks_only_the_tsns_its_gap_blocks_add() {
        let mut s = sender(2, true);
        s.dests[0].cwnd_bytes = 200 * 1500;
        s.dests[1].cwnd_bytes = 200 * 1500;
        drain(&mut s, SimTime::ZERO);
        // TSN 1 is missing; 2..=101 arrive one by one, each SACK repeating
        // the block before it: 100 TSNs walked in all, not 5050.
        for e in 2..=101u16 {
            s.on_sack(ms(10), &sack(0, &[(2, e)], 1 << 20));
        }
        assert_eq!(s.gap_tsns_walked, 100);
        assert_eq!(s.outstanding_bytes(), (s.next_tsn - 1 - 100) as u64 * 1452);
        // A second hole splits the block: only the new TSNs are walked.
        s.on_sack(ms(20), &sack(0, &[(2, 101), (103, 110)], 1 << 20));
        assert_eq!(s.gap_tsns_walked, 108);
    }

    fn sack(cum_tsn: u32, gaps: &[(u16, u16)], a_rwnd_bytes: u32) -> SackChunk {
        let mut s = SackChunk { cum_tsn, a_rwnd_bytes, ..Default::default() };
        for &(a, b) in gaps {
            s.push_gap(a, b);
        }
        s
    }

    fn drain(s: &mut Sender, now: SimTime) -> Vec<DataTx> {
        std::iter::from_fn(|| s.next_data(now)).collect()
    }

    #[test]
    fn initial_cwnd_is_rfc4960s_and_limits_the_first_flight() {
        let mut s = sender(1, false);
        assert_eq!(s.dests[0].cwnd_bytes, 4380);
        let sent = drain(&mut s, SimTime::ZERO);
        // 4380 bytes of room: three 1452-byte chunks start (the third overshoots).
        assert_eq!(sent.len(), 4);
        assert_eq!(sent.iter().map(|t| t.tsn).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn slow_start_grows_by_at_most_one_mtu_per_sack_when_fully_used() {
        let mut s = sender(1, false);
        drain(&mut s, SimTime::ZERO);
        let t = SimTime::ZERO + SimDuration::from_millis(100);
        s.on_sack(t, &sack(2, &[], 1 << 20));
        assert_eq!(s.dests[0].cwnd_bytes, 4380 + 1500);
        assert_eq!(s.dests[0].srtt, Some(SimDuration::from_millis(100)));
        assert_eq!(s.dests[0].rto, SimDuration::from_secs(1), "RTO.min");
    }

    #[test]
    fn three_missing_reports_fast_retransmit_and_halve_once() {
        let mut s = sender(1, false);
        s.dests[0].cwnd_bytes = 20 * 1500;
        let sent = drain(&mut s, SimTime::ZERO);
        assert!(sent.len() >= 6);
        let now = SimTime::ZERO + SimDuration::from_millis(50);
        // TSN 1 lost: SACKs acknowledge 2, 2-3, 2-4.
        for e in 1..=3u16 {
            s.on_sack(now, &sack(0, &[(2, 1 + e)], 1 << 20));
        }
        assert_eq!(s.dests[0].ssthresh_bytes, 10 * 1500);
        assert_eq!(s.dests[0].cwnd_bytes, 10 * 1500);
        assert_eq!(s.dests[0].stats.fast_recoveries, 1);
        let rtx = s.next_data(now).expect("the fast retransmission");
        assert_eq!((rtx.tsn, rtx.retransmission), (1, true));
        // More reports in the same window cut nothing more.
        s.on_sack(now, &sack(0, &[(2, 5)], 1 << 20));
        assert_eq!(s.dests[0].cwnd_bytes, 10 * 1500);
        s.on_sack(now, &sack(5, &[], 1 << 20));
        assert_eq!(s.cum_ack, 5);
    }

    #[test]
    fn t3_timeout_collapses_cwnd_backs_off_and_retransmits() {
        let mut s = sender(2, false);
        let sent = drain(&mut s, SimTime::ZERO);
        assert!(sent.iter().all(|t| t.dest == 0), "plain SCTP uses the primary");
        let rto = s.dests[0].rto;
        assert!(!s.on_t3(SimTime::ZERO + rto, 0));
        assert_eq!(s.dests[0].cwnd_bytes, 1500);
        assert_eq!(s.dests[0].rto, SimDuration::from_secs(6));
        let rtx = s.next_data(SimTime::ZERO + rto).expect("a retransmission");
        assert_eq!((rtx.tsn, rtx.retransmission), (1, true));
        assert_eq!(rtx.dest, 1, "RFC 4960 6.4.1: to an alternate destination");
    }

    #[test]
    fn path_max_retrans_timeouts_make_a_destination_inactive() {
        let mut s = sender(2, true);
        drain(&mut s, SimTime::ZERO);
        let mut failed = false;
        for _ in 0..=s.cfg.path_max_retrans {
            failed = s.on_t3(SimTime::ZERO, 0);
        }
        assert!(failed && !s.dests[0].active);
        let rest = drain(&mut s, SimTime::ZERO);
        assert!(rest.iter().all(|t| t.dest == 1), "{rest:?}");
    }

    #[test]
    fn cmt_spreads_new_data_round_robin_over_destinations_with_room() {
        let mut s = sender(2, true);
        let sent = drain(&mut s, SimTime::ZERO);
        let dests: Vec<usize> = sent.iter().map(|t| t.dest).collect();
        assert_eq!(&dests[..4], &[0, 1, 0, 1]);
        assert_eq!(dests.iter().filter(|&&d| d == 0).count(), dests.iter().filter(|&&d| d == 1).count());
    }

    #[test]
    fn the_peer_window_stops_new_data_on_all_paths() {
        let mut s = sender(2, true);
        s.set_peer_rwnd(3000);
        let sent = drain(&mut s, SimTime::ZERO);
        assert_eq!(sent.len(), 2, "{sent:?}");
        // A SACK with a full buffer above a hole: nothing new goes out.
        s.on_sack(SimTime::ZERO, &sack(0, &[(2, 2)], 0));
        assert_eq!(s.peer_rwnd_bytes, 0);
        assert!(s.next_data(SimTime::ZERO).is_none());
    }
}
