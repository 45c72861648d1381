//! The sender's record of outstanding segments: SACK marks, loss marks and
//! retransmissions (RFC 6675), kept with running byte counters so that
//! `pipe` is O(1) and loss marking is amortised O(1) per segment. With
//! RACK on (RFC 8985), it also keeps the transmissions in the order they
//! left and marks losses by transmit time.

use mpsim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// One segment as first sent; retransmissions keep its boundaries. 32
/// bytes: a subflow holds one per segment in flight, and a datacenter
/// run holds millions of them.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub start: u64,
    pub sent_at: SimTime,
    /// What the writer attached to the segment's first byte (an MPTCP
    /// mapping's DSN); `NO_TAG` for none. A segment trimmed by a partial
    /// cumulative ACK keeps the tag of its new first byte.
    pub tag: u64,
    /// Bytes of sequence space, at most one MSS (or 1 for a FIN).
    len: u32,
    /// `FIN`, `RETRANSMITTED`, ... below.
    flags: u8,
}

/// A segment that carries no tag.
pub const NO_TAG: u64 = u64::MAX;

const FIN: u8 = 1;
/// Ever retransmitted (Karn's rule: no RTT sample from it).
const RETRANSMITTED: u8 = 1 << 1;
/// A retransmission of it is in the network (counts in pipe).
const RTX_IN_FLIGHT: u8 = 1 << 2;
const SACKED: u8 = 1 << 3;
const LOST: u8 = 1 << 4;
/// It no longer starts where it was written (a partial ACK trimmed it).
const TRIMMED: u8 = 1 << 5;

impl Seg {
    /// A segment of `len` bytes at `start`, sent at `sent_at`.
    pub fn new(start: u64, len: u32, sent_at: SimTime, fin: bool, tag: u64) -> Seg {
        Seg { start, sent_at, tag, len, flags: if fin { FIN } else { 0 } }
    }
    pub fn len(&self) -> u64 {
        self.len as u64
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn end(&self) -> u64 {
        self.start + self.len as u64
    }
    pub fn fin(&self) -> bool {
        self.flags & FIN != 0
    }
    pub fn retransmitted(&self) -> bool {
        self.flags & RETRANSMITTED != 0
    }
    pub fn rtx_in_flight(&self) -> bool {
        self.flags & RTX_IN_FLIGHT != 0
    }
    pub fn sacked(&self) -> bool {
        self.flags & SACKED != 0
    }
    pub fn lost(&self) -> bool {
        self.flags & LOST != 0
    }
    /// The tag while the segment starts where it was written, else `NO_TAG`.
    pub fn written_tag(&self) -> u64 {
        if self.flags & TRIMMED != 0 {
            NO_TAG
        } else {
            self.tag
        }
    }
    fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }
    fn set_retransmitted(&mut self, on: bool) {
        self.set(RETRANSMITTED, on);
    }
    fn set_rtx_in_flight(&mut self, on: bool) {
        self.set(RTX_IN_FLIGHT, on);
    }
    fn set_sacked(&mut self, on: bool) {
        self.set(SACKED, on);
    }
    fn set_lost(&mut self, on: bool) {
        self.set(LOST, on);
    }
    /// Drops the bytes below `to` (inside the segment).
    fn trim_front(&mut self, to: u64) {
        let cut = to - self.start;
        self.start = to;
        self.len -= cut as u32; // `cut` is below `len`, a u32
        if self.tag != NO_TAG {
            self.tag += cut;
        }
        self.flags |= TRIMMED;
    }
}

/// What a cumulative ACK removed.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckedInfo {
    pub bytes: u64,
    /// Send time of the oldest newly acknowledged segment, for an RTT
    /// sample; `None` when Karn's rule forbids one (a retransmitted segment
    /// was acknowledged) or every acknowledged segment was already SACKed.
    pub rtt_from: Option<SimTime>,
    /// Send time of the newest of them, under the same rule: the sample
    /// congestion controllers get (Linux `ca_rtt_us` from `last_ackt`).
    pub ca_rtt_from: Option<SimTime>,
    pub fin_acked: bool,
}

/// What one SACK block newly covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackedInfo {
    pub bytes: u64,
    /// Send times of the oldest and newest newly SACKed segments that were
    /// never retransmitted (Linux `first_sackt`, `last_sackt`).
    pub oldest: Option<SimTime>,
    pub newest: Option<SimTime>,
}

/// RACK's record of the most recently sent segment that was delivered
/// (RFC 8985 section 6.1: RACK.xmit_ts, RACK.end_seq, RACK.rtt; Linux
/// `struct tcp_rack`).
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    xmit: SimTime,
    end_seq: u64,
    rtt: SimDuration,
    /// A delivery moved it since the last loss detection (Linux `rack.advanced`).
    advanced: bool,
    /// The ACK being processed: its arrival, the path's minimum RTT, and
    /// the latest send time of what it delivered so far (RACK.rtt comes
    /// from the most recently sent segment, RFC 8985 section 6.2 step 2).
    ack_now: SimTime,
    ack_min_rtt: SimDuration,
    ack_latest_sent: Option<SimTime>,
}

/// `t1, seq1` was sent after `t2, seq2` (Linux `tcp_rack_sent_after`).
fn sent_after(t1: SimTime, seq1: u64, t2: SimTime, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// `repr(C)`: the counters `pipe_bytes` and `any_lost` read lead, on
/// the cache line next to a `Subflow`'s other hot fields.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Scoreboard {
    out_bytes: u64,
    sacked_bytes: u64,
    lost_bytes: u64,
    rtx_bytes: u64,
    segs: VecDeque<Seg>,
    /// Highest sequence (exclusive) below which unSACKed segments were marked lost.
    lost_mark: u64,
    /// No retransmission candidate lies below this sequence.
    rtx_hint: u64,
    /// End of the highest SACKed segment (0 when none).
    high_sacked: u64,
    /// Bytes ever marked lost; its growth over an ACK is what that ACK found lost.
    marked_lost_bytes: u64,
    /// SACK blocks already applied, `[start, end)`: every segment inside
    /// one is SACKed (marks are never undone), so a block that grew at its
    /// top, as blocks do from ACK to ACK, is walked over its new part only.
    applied: [(u64, u64); 4],
    applied_next: usize,
    /// End of the highest segment ever marked lost: nothing at or above
    /// it is lost (RACK marks by time, so lost segments need not be
    /// contiguous from `lost_mark`).
    lost_high: u64,
    /// RACK on: transmissions as (send time, segment end) in the order
    /// they left (Linux `tsorted_sent_queue`). An entry whose segment is
    /// gone, SACKed, resent later or lost and not resent is stale and
    /// skipped.
    time_order: Option<VecDeque<(SimTime, u64)>>,
    rack: Rack,
    /// A segment never retransmitted was delivered below the highest
    /// SACKed one: the path reorders (Linux `tp->reord_seen`).
    reordering_seen: bool,
}

impl Scoreboard {
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.segs.len()
    }
    /// The segments, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Seg> {
        self.segs.iter()
    }
    pub fn first(&self) -> Option<&Seg> {
        self.segs.front()
    }
    pub fn last(&self) -> Option<&Seg> {
        self.segs.back()
    }
    /// Some segment is marked lost (and not yet retransmitted or SACKed).
    pub fn any_lost(&self) -> bool {
        self.lost_bytes > 0
    }
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    /// Bytes ever marked lost (never decreases); a retransmission found
    /// lost counts again, as Linux `tcp_mark_skb_lost` counts it in `tp->lost`.
    pub fn marked_lost_bytes(&self) -> u64 {
        self.marked_lost_bytes
    }
    /// A delivery advanced RACK since its last loss detection.
    pub fn rack_advanced(&self) -> bool {
        self.rack.advanced
    }
    /// Delivery of an original segment below a SACKed one was seen.
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// RFC 6675 pipe in bytes: outstanding, minus SACKed, minus lost, plus
    /// retransmissions in flight.
    pub fn pipe_bytes(&self) -> u64 {
        (self.out_bytes + self.rtx_bytes).saturating_sub(self.sacked_bytes + self.lost_bytes)
    }

    /// Bytes sent and not cumulatively acknowledged.
    pub fn outstanding_bytes(&self) -> u64 {
        self.out_bytes
    }

    pub fn push(&mut self, seg: Seg) {
        self.out_bytes += seg.len();
        if let Some(q) = self.time_order.as_mut() {
            q.push_back((seg.sent_at, seg.end()));
        }
        self.segs.push_back(seg);
    }

    /// Keeps what RACK needs from now on: call before the first segment is sent.
    pub fn enable_rack(&mut self) {
        self.time_order.get_or_insert_with(VecDeque::new);
    }

    /// An ACK arrives at `now`; deliveries it makes advance RACK (segments
    /// resent sooner than `min_rtt` before it excepted, Linux `tcp_rack_advance`).
    pub fn begin_ack(&mut self, now: SimTime, min_rtt: SimDuration) {
        self.rack.ack_now = now;
        self.rack.ack_min_rtt = min_rtt;
        self.rack.ack_latest_sent = None;
    }

    fn index_of(&self, seq: u64) -> usize {
        self.segs.partition_point(|s| s.end() <= seq)
    }

    fn unmark(&mut self, i: usize) {
        let s = self.segs[i];
        if s.sacked() {
            self.sacked_bytes -= s.len();
        } else {
            if s.lost() {
                self.lost_bytes -= s.len();
            }
            if s.rtx_in_flight() {
                self.rtx_bytes -= s.len();
            }
        }
    }

    /// Removes everything below `ack` (a partly acknowledged head is trimmed).
    pub fn cum_ack(&mut self, ack: u64) -> AckedInfo {
        let mut info = AckedInfo::default();
        let mut karn = false;
        while let Some(front) = self.segs.front().copied() {
            if front.start >= ack {
                break;
            }
            if front.end() > ack {
                self.unmark(0);
                self.out_bytes -= ack - front.start;
                info.bytes += ack - front.start;
                let f = &mut self.segs[0];
                f.trim_front(ack);
                // It may now lie unSACKed inside an applied block.
                self.applied = Default::default();
                let (sacked, lost, rtx, len) = (f.sacked(), f.lost(), f.rtx_in_flight(), f.len());
                self.sacked_bytes += if sacked { len } else { 0 };
                self.lost_bytes += if lost && !sacked { len } else { 0 };
                self.rtx_bytes += if rtx && !sacked { len } else { 0 };
                break;
            }
            self.unmark(0);
            self.out_bytes -= front.len();
            info.bytes += front.len();
            info.fin_acked |= front.fin();
            karn |= front.retransmitted();
            if !front.retransmitted() && !front.sacked() {
                info.rtt_from = info.rtt_from.or(Some(front.sent_at));
                info.ca_rtt_from = Some(front.sent_at);
            }
            if !front.sacked() {
                self.on_delivered(&front);
            }
            self.segs.pop_front();
        }
        if karn {
            info.rtt_from = None;
            info.ca_rtt_from = None;
        }
        self.lost_mark = self.lost_mark.max(ack);
        self.rtx_hint = self.rtx_hint.max(ack);
        if let Some(q) = self.time_order.as_mut() {
            while q.front().is_some_and(|&(_, end)| end <= ack) {
                q.pop_front();
            }
            mpsim_core::spare::release_spare(q);
        }
        mpsim_core::spare::release_spare(&mut self.segs);
        info
    }

    /// A segment newly delivered (cumulatively or by SACK, not SACKed before).
    fn on_delivered(&mut self, s: &Seg) {
        // Linux `tcp_check_sack_reordering`: an original below the highest
        // SACKed segment arrived late, so the path reorders.
        if !s.retransmitted() && s.end() <= self.high_sacked {
            self.reordering_seen = true;
        }
        if self.time_order.is_some() {
            self.rack_advance(s);
        }
    }

    /// RFC 8985 section 6.2 step 2, Linux `tcp_rack_advance`.
    fn rack_advance(&mut self, s: &Seg) {
        let r = &mut self.rack;
        let rtt = r.ack_now.saturating_since(s.sent_at);
        // Acknowledged sooner than the minimum RTT after it was resent: this
        // acknowledges the original, not the retransmission.
        if s.retransmitted() && rtt < r.ack_min_rtt {
            return;
        }
        r.advanced = true;
        if r.ack_latest_sent.is_none_or(|t| s.sent_at >= t) {
            r.ack_latest_sent = Some(s.sent_at);
            r.rtt = rtt;
        }
        if sent_after(s.sent_at, s.end(), r.xmit, r.end_seq) {
            r.xmit = s.sent_at;
            r.end_seq = s.end();
        }
    }

    /// Marks the segments inside `[start, end)` SACKed. Returns the bytes
    /// newly SACKed and the send time of the oldest of them never
    /// retransmitted (an RTT sample when the cumulative ACK gives none).
    pub fn sack(&mut self, start: u64, end: u64) -> SackedInfo {
        let mut info = SackedInfo::default();
        let mut from = start;
        for &(s, e) in &self.applied {
            if s <= start && start < e {
                from = from.max(e);
            }
        }
        // A block applied whole before (an ACK repeats its older blocks)
        // holds nothing new: no search for where it begins.
        let mut i = if from >= end { self.segs.len() } else { self.index_of(from) };
        while i < self.segs.len() && self.segs[i].end() <= end {
            let s = self.segs[i];
            if s.start >= start && !s.sacked() {
                self.on_delivered(&s);
                self.unmark(i);
                self.segs[i].set_sacked(true);
                self.sacked_bytes += s.len();
                self.high_sacked = self.high_sacked.max(s.end());
                info.bytes += s.len();
                if !s.retransmitted() {
                    info.oldest = Some(info.oldest.map_or(s.sent_at, |o: SimTime| o.min(s.sent_at)));
                    info.newest = Some(info.newest.map_or(s.sent_at, |o: SimTime| o.max(s.sent_at)));
                }
            }
            i += 1;
        }
        // Blocks beyond what was sent are remembered only up to its end.
        let top = end.min(self.segs.back().map_or(0, |s| s.end()));
        if top > start {
            self.remember_applied(start, top);
        }
        info
    }

    fn remember_applied(&mut self, start: u64, end: u64) {
        // Only the same block, grown: the union of two different blocks may
        // hold a segment that straddles where they meet and is in neither.
        if let Some(a) = self.applied.iter_mut().find(|(s, e)| *s == start && *e > 0) {
            a.1 = a.1.max(end);
            return;
        }
        self.applied[self.applied_next] = (start, end);
        self.applied_next = (self.applied_next + 1) % self.applied.len();
    }

    /// RFC 6675 IsLost, by segments: marks lost every unSACKed segment with
    /// at least `dupthresh` SACKed segments above it. Returns true if the
    /// first outstanding segment is (now) lost.
    pub fn mark_lost_by_sack(&mut self, dupthresh: usize) -> bool {
        let Some(threshold) = self.nth_sacked_from_top(dupthresh) else {
            return self.segs.front().is_some_and(|s| s.lost() && !s.sacked());
        };
        if threshold > self.lost_mark {
            let mut i = self.index_of(self.lost_mark);
            while i < self.segs.len() && self.segs[i].start < threshold {
                self.mark_lost_at(i);
                i += 1;
            }
            self.lost_mark = threshold;
        }
        self.segs.front().is_some_and(|s| s.lost() && !s.sacked())
    }

    /// Start of the `n`-th highest SACKed segment, scanning down from the
    /// highest SACKed one (the SACKed region is almost always contiguous).
    fn nth_sacked_from_top(&self, n: usize) -> Option<u64> {
        if self.sacked_bytes == 0 {
            return None;
        }
        let mut count = 0;
        let top = self.index_of(self.high_sacked.saturating_sub(1)).min(self.segs.len().saturating_sub(1));
        for s in self.segs.range(..=top).rev() {
            if s.sacked() {
                count += 1;
                if count >= n {
                    return Some(s.start);
                }
            }
        }
        None
    }

    fn mark_lost_at(&mut self, i: usize) {
        let s = &mut self.segs[i];
        if s.sacked() || s.lost() || s.rtx_in_flight() {
            return;
        }
        s.set_lost(true);
        self.lost_bytes += s.len();
        self.marked_lost_bytes += s.len();
        self.rtx_hint = self.rtx_hint.min(s.start);
        self.lost_high = self.lost_high.max(s.end());
    }

    /// Marks the first outstanding segment lost (3 dupACKs, partial ACK).
    pub fn mark_head_lost(&mut self) {
        if let Some(s) = self.segs.front_mut() {
            if s.rtx_in_flight() && !s.sacked() {
                // Its retransmission is deemed lost too: send it again.
                s.set_rtx_in_flight(false);
                self.rtx_bytes -= s.len();
                self.rtx_hint = self.rtx_hint.min(s.start);
            }
        }
        if !self.segs.is_empty() {
            self.mark_lost_at(0);
        }
    }

    /// RTO: every unSACKed segment is lost and no retransmission is in flight.
    pub fn mark_all_lost(&mut self) {
        for i in 0..self.segs.len() {
            let s = &mut self.segs[i];
            if s.sacked() {
                continue;
            }
            if s.rtx_in_flight() {
                s.set_rtx_in_flight(false);
                self.rtx_bytes -= s.len();
            }
            if !s.lost() {
                s.set_lost(true);
                self.lost_bytes += s.len();
                self.marked_lost_bytes += s.len();
            }
        }
        self.lost_mark = self.segs.back().map_or(self.lost_mark, |s| s.end());
        self.lost_high = self.lost_high.max(self.lost_mark);
        self.rtx_hint = self.segs.front().map_or(self.rtx_hint, |s| s.start);
        if let Some(q) = self.time_order.as_mut() {
            q.clear(); // nothing is in flight any more
        }
    }

    /// RFC 8985 section 6.2 step 5 (Linux `tcp_rack_detect_loss`): every
    /// segment in flight sent before the most recently delivered one, and
    /// not delivered within RACK.rtt + `reo_wnd` of its send time, is lost;
    /// a retransmission too, which then is due again. Runs only after a
    /// delivery advanced RACK unless `force` (the reordering timer).
    /// Returns the time until the last of the others is due (Linux's
    /// `reo_timeout`, the maximum), if any.
    pub fn rack_detect_loss(&mut self, now: SimTime, reo_wnd: SimDuration, force: bool) -> Option<SimDuration> {
        if !std::mem::take(&mut self.rack.advanced) && !force {
            return None;
        }
        let mut q = self.time_order.take()?;
        let (mut timeout, mut stale, mut j) = (None, 0usize, 0usize);
        while j < q.len() {
            let (t, end) = q[j];
            let Some(i) = self.in_flight_index(t, end) else {
                stale += 1;
                j += 1;
                continue;
            };
            if !sent_after(self.rack.xmit, self.rack.end_seq, t, end) {
                break;
            }
            let due = t + self.rack.rtt + reo_wnd;
            if due <= now {
                self.mark_lost_in_flight(i);
                stale += 1;
            } else {
                timeout = Some((due - now).max(timeout.unwrap_or(SimDuration::ZERO)));
            }
            j += 1;
        }
        // Stale entries behind a live one would be walked again each time.
        if stale > 32 {
            q.retain(|&(t, end)| self.in_flight_index(t, end).is_some());
        } else {
            while q.front().is_some_and(|&(t, end)| self.in_flight_index(t, end).is_none()) {
                q.pop_front();
            }
        }
        self.time_order = Some(q);
        timeout
    }

    /// Index of the segment ending at `end` if this transmission of it, at
    /// `t`, is what is in flight.
    fn in_flight_index(&self, t: SimTime, end: u64) -> Option<usize> {
        let i = self.index_of(end.checked_sub(1)?);
        let s = self.segs.get(i)?;
        (s.end() == end && s.sent_at == t && !s.sacked() && (!s.lost() || s.rtx_in_flight())).then_some(i)
    }

    /// Linux `tcp_mark_skb_lost`: lost, and a retransmission in flight is
    /// lost too (counted lost again).
    fn mark_lost_in_flight(&mut self, i: usize) {
        let s = &mut self.segs[i];
        if s.rtx_in_flight() {
            s.set_rtx_in_flight(false);
            self.rtx_bytes -= s.len();
            if s.lost() {
                self.marked_lost_bytes += s.len();
            }
        }
        let start = s.start;
        self.mark_lost_at(i);
        self.rtx_hint = self.rtx_hint.min(start);
    }

    /// First segment marked lost whose retransmission is not in flight.
    pub fn next_lost(&mut self) -> Option<Seg> {
        if self.lost_bytes == 0 {
            return None; // the common case: nothing is marked lost
        }
        let mut i = self.index_of(self.rtx_hint);
        let top = self.lost_mark.max(self.lost_high);
        while i < self.segs.len() {
            let s = self.segs[i];
            if s.start >= top {
                break; // nothing is lost from here on
            }
            if s.lost() && !s.sacked() && !s.rtx_in_flight() {
                self.rtx_hint = s.start;
                return Some(s);
            }
            i += 1;
        }
        self.rtx_hint = self.segs.get(i).map_or(self.lost_mark, |s| s.start);
        None
    }

    /// Records the retransmission of the segment starting at `start`.
    pub fn on_retransmit(&mut self, start: u64, now: SimTime) {
        let i = self.index_of(start);
        if let Some(s) = self.segs.get_mut(i) {
            if s.start == start && !s.rtx_in_flight() && !s.sacked() {
                s.set_rtx_in_flight(true);
                s.set_retransmitted(true);
                s.sent_at = now;
                self.rtx_bytes += s.len();
                if let Some(q) = self.time_order.as_mut() {
                    q.push_back((now, s.end()));
                }
            }
        }
    }

    /// What a tail loss probe sends again: the highest unSACKed segment
    /// with data, else the highest segment.
    pub fn probe_candidate(&self) -> Option<Seg> {
        self.segs.iter().rev().find(|s| !s.fin() && !s.sacked()).or(self.segs.back()).copied()
    }

    /// Highest unSACKed segment (RFC 6675 rescue retransmission candidate).
    pub fn last_unsacked(&self) -> Option<Seg> {
        self.segs.iter().rev().find(|s| !s.sacked()).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `i`-th 100-byte segment, sent at time `i`.
    fn seg(i: u64) -> Seg {
        Seg::new(i * 100, 100, SimTime(i), false, NO_TAG)
    }

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(seg(i));
        }
        b
    }

    #[test]
    fn pipe_follows_rfc6675_counting() {
        let mut b = board(10);
        assert_eq!(b.pipe_bytes(), 1000);
        b.sack(100, 400);
        assert_eq!(b.pipe_bytes(), 700);
        assert!(b.mark_lost_by_sack(3));
        assert_eq!(b.pipe_bytes(), 600);
        let s = b.next_lost().unwrap();
        assert_eq!(s.start, 0);
        b.on_retransmit(0, SimTime(50));
        assert_eq!(b.pipe_bytes(), 700);
        assert!(b.next_lost().is_none());
    }

    #[test]
    fn a_growing_block_marks_exactly_the_segments_inside_it() {
        let mut b = board(10);
        assert_eq!(b.sack(200, 400).bytes, 200);
        // The same block grown at its top: only the new segment is new.
        assert_eq!(b.sack(200, 500).bytes, 100);
        assert_eq!(b.sack(200, 500).bytes, 0);
        // A block below the applied one, and one reaching into it.
        assert_eq!(b.sack(100, 200).bytes, 100);
        assert_eq!(b.sack(100, 700).bytes, 200);
        assert_eq!(b.sacked_bytes(), 600);
        // Beyond what was sent is not remembered as applied.
        assert_eq!(b.sack(700, 1200).bytes, 300);
        b.push(seg(10));
        assert_eq!(b.sack(700, 1200).bytes, 100);
    }

    #[test]
    fn a_trimmed_head_inside_an_applied_block_is_still_sacked_later() {
        let mut b = board(4);
        // [0,100) is not inside [50,300): it stays unSACKed.
        assert_eq!(b.sack(50, 300).bytes, 200);
        // A partial cumulative ACK trims it to [50,100), now inside the block.
        b.cum_ack(50);
        assert_eq!(b.sack(50, 300).bytes, 50);
        assert_eq!(b.sacked_bytes(), 250);
    }

    #[test]
    fn a_segment_record_takes_32_bytes() {
        assert!(std::mem::size_of::<Seg>() <= 32);
    }

    #[test]
    fn a_trimmed_head_keeps_the_tag_of_its_first_byte_but_is_no_longer_as_written() {
        let mut b = Scoreboard::default();
        b.push(Seg::new(0, 100, SimTime(0), false, 5_000));
        assert_eq!(b.first().map(Seg::written_tag), Some(5_000));
        b.cum_ack(30);
        let head = *b.first().unwrap();
        assert_eq!((head.start, head.len(), head.tag, head.written_tag()), (30, 70, 5_030, NO_TAG));
    }

    #[test]
    fn fewer_than_dupthresh_sacked_segments_mark_nothing() {
        let mut b = board(10);
        b.sack(100, 300);
        assert!(!b.mark_lost_by_sack(3));
        assert_eq!(b.pipe_bytes(), 800);
    }

    #[test]
    fn cumulative_ack_clears_marks_and_gives_karn_safe_rtt() {
        let mut b = board(5);
        b.mark_all_lost();
        b.on_retransmit(0, SimTime(99));
        let info = b.cum_ack(200);
        assert_eq!(info.bytes, 200);
        // Karn: a retransmitted segment was acknowledged, no sample.
        assert_eq!(info.rtt_from, None);
        assert_eq!(b.outstanding_bytes(), 300);
        assert_eq!(b.pipe_bytes(), 0);
        assert_eq!(b.next_lost().unwrap().start, 200);
        let info = b.cum_ack(300);
        assert_eq!(info.rtt_from, Some(SimTime(2)));
    }

    #[test]
    fn sacked_segments_give_no_cumulative_rtt_sample() {
        let mut b = board(3);
        assert_eq!(b.sack(100, 300), SackedInfo { bytes: 200, oldest: Some(SimTime(1)), newest: Some(SimTime(2)) });
        let info = b.cum_ack(300);
        assert_eq!(info.rtt_from, Some(SimTime(0)));
        let mut c = board(3);
        c.sack(0, 100);
        assert_eq!(c.cum_ack(100).rtt_from, None);
    }

    #[test]
    fn a_head_whose_retransmission_was_lost_is_retransmitted_again() {
        let mut b = board(3);
        b.mark_head_lost();
        let s = b.next_lost().unwrap();
        b.on_retransmit(s.start, SimTime(5));
        assert!(b.next_lost().is_none());
        b.mark_head_lost();
        assert_eq!(b.next_lost().map(|s| s.start), Some(0));
    }

    #[test]
    fn partial_ack_trims_the_head() {
        let mut b = board(2);
        let info = b.cum_ack(150);
        assert_eq!(info.bytes, 150);
        assert_eq!(b.first().unwrap().start, 150);
        assert_eq!(b.pipe_bytes(), 50);
    }

    #[test]
    fn holes_above_sacks_are_found_in_order() {
        let mut b = board(10);
        b.sack(100, 200);
        b.sack(300, 400);
        b.sack(500, 700);
        b.mark_lost_by_sack(3);
        let lost: Vec<u64> = std::iter::from_fn(|| {
            let s = b.next_lost()?;
            b.on_retransmit(s.start, SimTime(0));
            Some(s.start)
        })
        .collect();
        // Segment 4 has only two SACKed segments above it: not yet lost.
        assert_eq!(lost, vec![0, 200]);
    }

    /// What a sender does to its scoreboard, with positions as fractions of
    /// the outstanding range so that they land inside it.
    #[derive(Clone, Debug)]
    enum Op {
        Send {
            len: u64,
            fin: bool,
        },
        CumAck {
            at: f64,
        },
        Sack {
            from: f64,
            to: f64,
        },
        /// The previous SACK block again, grown at its top, as receivers send them.
        SackGrow {
            by: f64,
        },
        MarkLostBySack {
            dupthresh: usize,
        },
        MarkHeadLost,
        MarkAllLost,
        Retransmit,
        /// RACK's marking by transmit time, with a reordering window.
        RackDetect {
            reo_wnd: u64,
            force: bool,
        },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (1u64..3_000, proptest::bool::weighted(0.02)).prop_map(|(len, fin)| Op::Send { len, fin }),
            2 => (0.0f64..1.0).prop_map(|at| Op::CumAck { at }),
            3 => (0.0f64..1.0, 0.0f64..1.1).prop_map(|(from, to)| Op::Sack { from, to }),
            3 => (0.0f64..0.3).prop_map(|by| Op::SackGrow { by }),
            2 => (1usize..5).prop_map(|dupthresh| Op::MarkLostBySack { dupthresh }),
            1 => Just(Op::MarkHeadLost),
            1 => Just(Op::MarkAllLost),
            2 => Just(Op::Retransmit),
            2 => (0u64..4, proptest::bool::weighted(0.3)).prop_map(|(reo_wnd, force)| Op::RackDetect { reo_wnd, force }),
        ]
    }

    /// Sequence `frac` of the way through what is outstanding.
    fn seq_at(b: &Scoreboard, frac: f64) -> u64 {
        let (lo, hi) = (b.segs.front().map_or(0, |s| s.start), b.segs.back().map_or(0, |s| s.end()));
        lo + ((hi - lo) as f64 * frac) as u64
    }

    fn sum(b: &Scoreboard, f: impl Fn(&Seg) -> bool) -> u64 {
        b.segs.iter().filter(|s| f(s)).map(Seg::len).sum()
    }

    /// What must hold between operations, checked by brute force against
    /// the counters and the shortcuts (applied blocks, hints) they rely on.
    fn check_invariants(b: &Scoreboard) {
        for w in b.segs.iter().collect::<Vec<_>>().windows(2) {
            assert_eq!(w[0].end(), w[1].start, "segments are contiguous");
        }
        assert!(b.segs.iter().all(|s| s.end() > s.start), "no empty segment");
        assert_eq!(b.out_bytes, sum(b, |_| true));
        assert_eq!(b.sacked_bytes, sum(b, |s| s.sacked()));
        assert_eq!(b.lost_bytes, sum(b, |s| s.lost() && !s.sacked()));
        assert_eq!(b.rtx_bytes, sum(b, |s| s.rtx_in_flight() && !s.sacked()));
        assert!(b.segs.iter().filter(|s| s.sacked()).all(|s| s.end() <= b.high_sacked));
        for &(start, end) in b.applied.iter().filter(|a| a.1 > 0) {
            let inside = b.segs.iter().filter(|s| s.start >= start && s.end() <= end);
            assert!(inside.clone().all(|s| s.sacked()), "applied block [{start}, {end}) holds an unSACKed segment");
        }
        let due = |s: &Seg| s.lost() && !s.sacked() && !s.rtx_in_flight();
        assert!(b.segs.iter().filter(|s| s.start < b.rtx_hint).all(|s| !due(s)), "a retransmission below the hint");
        assert!(b.segs.iter().filter(|s| s.lost()).all(|s| s.end() <= b.lost_high), "a lost segment above lost_high");
        if let Some(q) = b.time_order.as_ref() {
            assert!(q.iter().zip(q.iter().skip(1)).all(|(x, y)| x.0 <= y.0), "transmissions out of time order");
            for s in b.segs.iter().filter(|s| in_flight(s)) {
                assert!(q.contains(&(s.sent_at, s.end())), "segment at {} in flight but not in the time order", s.start);
            }
        }
    }

    fn in_flight(s: &Seg) -> bool {
        !s.sacked() && (!s.lost() || s.rtx_in_flight())
    }

    /// RFC 8985 section 6.2 by brute force: what `rack_detect_loss` must
    /// mark lost, and the time until the last unmarked one is due.
    fn check_rack_detect(b: &mut Scoreboard, before: &[Seg], now: u64, reo_wnd: u64, force: bool) {
        let (rack, advanced) = (b.rack, b.rack.advanced || force);
        let timeout = b.rack_detect_loss(SimTime(now), SimDuration(reo_wnd), force);
        let sent_before = |s: &Seg| sent_after(rack.xmit, rack.end_seq, s.sent_at, s.end());
        let due_at = |s: &Seg| s.sent_at + rack.rtt + SimDuration(reo_wnd);
        let mut expected_timeout = None;
        for (s0, s1) in before.iter().zip(b.segs.iter()) {
            let hit = advanced && in_flight(s0) && sent_before(s0);
            if hit && due_at(s0) <= SimTime(now) {
                assert!(
                    s1.lost() && !s1.rtx_in_flight(),
                    "segment at {} sent at {:?} not marked lost by RACK {rack:?}",
                    s0.start,
                    s0.sent_at
                );
            } else {
                assert_eq!((s0.lost(), s0.rtx_in_flight()), (s1.lost(), s1.rtx_in_flight()), "segment at {} changed", s0.start);
                if hit {
                    let left = due_at(s0) - SimTime(now);
                    expected_timeout = Some(left.max(expected_timeout.unwrap_or(SimDuration::ZERO)));
                }
            }
        }
        assert_eq!(timeout, expected_timeout);
    }

    fn apply(b: &mut Scoreboard, op: &Op, now: u64, last_sack: &mut Option<(u64, u64)>) {
        let before: Vec<Seg> = b.segs.iter().copied().collect();
        // Deliveries advance RACK as an ACK arriving now.
        b.begin_ack(SimTime(now), SimDuration(3));
        match *op {
            Op::Send { len, fin } => {
                if b.segs.back().is_some_and(|s| s.fin()) {
                    return; // nothing follows a FIN
                }
                let start = b.segs.back().map_or(b.lost_mark.max(b.rtx_hint), |s| s.end());
                b.push(Seg::new(start, len as u32, SimTime(now), fin, NO_TAG));
            }
            Op::CumAck { at } => {
                let ack = seq_at(b, at);
                let info = b.cum_ack(ack);
                let gone: Vec<&Seg> = before.iter().filter(|s| s.end() <= ack).collect();
                let trimmed = before.iter().find(|s| s.start < ack && ack < s.end()).map_or(0, |s| ack - s.start);
                assert_eq!(info.bytes, gone.iter().map(|s| s.len()).sum::<u64>() + trimmed);
                assert_eq!(info.fin_acked, gone.iter().any(|s| s.fin()));
                let karn = gone.iter().any(|s| s.retransmitted());
                let sample = gone.iter().find(|s| !s.retransmitted() && !s.sacked()).map(|s| s.sent_at);
                assert_eq!(info.rtt_from, if karn { None } else { sample });
            }
            Op::Sack { from, to } => {
                let (start, end) = (seq_at(b, from), seq_at(b, to.min(1.0)) + if to > 1.0 { 5_000 } else { 0 });
                if start < end {
                    check_sack(b, &before, start, end);
                    *last_sack = Some((start, end));
                }
            }
            Op::SackGrow { by } => {
                if let Some((start, end)) = *last_sack {
                    let top = b.segs.back().map_or(end, |s| s.end());
                    let end = end + ((top.saturating_sub(end)) as f64 * by) as u64;
                    let start = start.max(b.segs.front().map_or(start, |s| s.start));
                    if start < end {
                        check_sack(b, &before, start, end);
                        *last_sack = Some((start, end));
                    }
                }
            }
            Op::MarkLostBySack { dupthresh } => {
                let mut sacked_starts: Vec<u64> = before.iter().filter(|s| s.sacked()).map(|s| s.start).collect();
                sacked_starts.reverse();
                let threshold = sacked_starts.get(dupthresh - 1).copied();
                let lost_mark = b.lost_mark;
                let head_lost = b.mark_lost_by_sack(dupthresh);
                if let Some(t) = threshold {
                    for s in b.segs.iter().filter(|s| s.start >= lost_mark && s.start < t) {
                        assert!(
                            s.lost() || s.sacked() || s.rtx_in_flight(),
                            "segment at {} below the threshold {t} not lost",
                            s.start
                        );
                    }
                }
                assert_eq!(head_lost, b.segs.front().is_some_and(|s| s.lost() && !s.sacked()));
            }
            Op::MarkHeadLost => b.mark_head_lost(),
            Op::MarkAllLost => {
                b.mark_all_lost();
                assert!(b.segs.iter().all(|s| s.sacked() || (s.lost() && !s.rtx_in_flight())));
            }
            Op::RackDetect { reo_wnd, force } => check_rack_detect(b, &before, now, reo_wnd, force),
            Op::Retransmit => {
                let naive = before.iter().find(|s| s.lost() && !s.sacked() && !s.rtx_in_flight()).map(|s| s.start);
                let next = b.next_lost();
                assert_eq!(next.map(|s| s.start), naive, "the first segment due for retransmission");
                if let Some(s) = next {
                    b.on_retransmit(s.start, SimTime(now));
                }
            }
        }
    }

    /// SACKs `[start, end)` and checks that exactly the unSACKed segments
    /// inside it became SACKed, whatever blocks were applied before.
    fn check_sack(b: &mut Scoreboard, before: &[Seg], start: u64, end: u64) {
        let newly: Vec<&Seg> = before.iter().filter(|s| s.start >= start && s.end() <= end && !s.sacked()).collect();
        let info = b.sack(start, end);
        assert_eq!(info.bytes, newly.iter().map(|s| s.len()).sum::<u64>());
        assert_eq!(info.oldest, newly.iter().filter(|s| !s.retransmitted()).map(|s| s.sent_at).min());
        assert_eq!(info.newest, newly.iter().filter(|s| !s.retransmitted()).map(|s| s.sent_at).max());
        assert!(b.segs.iter().filter(|s| s.start >= start && s.end() <= end).all(|s| s.sacked()));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        #[test]
        fn counters_and_shortcuts_agree_with_a_full_scan(ops in proptest::collection::vec(op(), 1..200), rack in proptest::bool::ANY) {
            let mut b = Scoreboard::default();
            if rack {
                b.enable_rack();
            }
            let mut last_sack = None;
            for (now, op) in ops.iter().enumerate() {
                apply(&mut b, op, now as u64, &mut last_sack);
                check_invariants(&b);
            }
        }
    }
}
