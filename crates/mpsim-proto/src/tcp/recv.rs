//! The receiving half: in-order delivery, the out-of-order queue, SACK
//! blocks (RFC 2018: the block holding the latest segment first) and the
//! advertised window from a finite buffer.

use mpsim_core::SackBlocks;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Receiver {
    /// Next in-order sequence expected.
    pub rcv_nxt: u64,
    /// Out-of-order ranges (start, end), sorted, disjoint and not touching.
    /// A sorted deque: arrivals mostly extend the highest range and
    /// deliveries pop the lowest, both O(1) at its ends.
    ooo: VecDeque<(u64, u64)>,
    ooo_bytes: u64,
    /// Sequences inside the most recently updated ranges, newest first.
    recent: [Option<u64>; 4],
    buf_bytes: u64,
    /// In-order bytes delivered to the application.
    pub delivered_bytes: u64,
    /// Segments that arrived wholly already received: the peer's spurious
    /// retransmissions (the network model never duplicates packets).
    pub duplicate_segs: u64,
}

/// What one arriving segment did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvOutcome {
    /// Bytes newly delivered in order.
    pub delivered: u64,
    /// The segment was out of order, a duplicate, or filled a hole: ACK now.
    pub ack_now: bool,
    /// The segment was outside the window and ignored.
    pub dropped: bool,
}

impl Receiver {
    pub fn new(rcv_nxt: u64, buf_bytes: u64) -> Self {
        Receiver {
            rcv_nxt,
            ooo: VecDeque::new(),
            ooo_bytes: 0,
            recent: [None; 4],
            buf_bytes,
            delivered_bytes: 0,
            duplicate_segs: 0,
        }
    }

    /// Advertised window: free buffer space (the application reads at once,
    /// so only out-of-order data occupies the buffer).
    pub fn window_bytes(&self) -> u64 {
        self.buf_bytes.saturating_sub(self.ooo_bytes)
    }

    /// The buffer grew (receive-buffer autotuning); it never shrinks.
    pub fn grow_buf_bytes(&mut self, buf_bytes: u64) {
        self.buf_bytes = self.buf_bytes.max(buf_bytes);
    }

    /// How far the out-of-order queue reaches beyond `rcv_nxt`.
    pub fn ooo_span_bytes(&self) -> u64 {
        self.ooo.back().map_or(0, |&(_, e)| e - self.rcv_nxt)
    }

    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    pub fn has_ooo(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Accepts payload `[start, end)`.
    pub fn on_data(&mut self, start: u64, end: u64) -> RecvOutcome {
        if end <= self.rcv_nxt {
            self.duplicate_segs += 1;
            return RecvOutcome { ack_now: true, ..Default::default() };
        }
        // The ranges starting at or below `start`: one search serves the
        // duplicate check and the insertion.
        let above = self.ooo.partition_point(|&(s, _)| s <= start);
        self.duplicate_segs += (above > 0 && self.ooo[above - 1].1 >= end) as u64;
        if end > self.rcv_nxt + self.buf_bytes {
            return RecvOutcome { ack_now: true, dropped: true, ..Default::default() };
        }
        if start <= self.rcv_nxt {
            let had_ooo = self.has_ooo();
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            self.drain_ooo();
            let delivered = self.rcv_nxt - before;
            self.delivered_bytes += delivered;
            return RecvOutcome { delivered, ack_now: had_ooo, dropped: false };
        }
        self.insert_ooo(start, end, above);
        RecvOutcome { ack_now: true, ..Default::default() }
    }

    fn drain_ooo(&mut self) {
        while let Some(&(s, e)) = self.ooo.front() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.pop_front();
            self.ooo_bytes -= e - s;
            self.rcv_nxt = self.rcv_nxt.max(e);
        }
    }

    /// `above`: how many ranges start at or below `start`.
    fn insert_ooo(&mut self, start: u64, end: u64, above: usize) {
        // Fast path: the segment extends the highest range (the usual case:
        // in-order data behind a hole) or starts a new one above it.
        match self.ooo.back_mut() {
            Some((s, e)) if *e == start => {
                let s = *s;
                *e = end;
                self.note_changed(s, end - start);
            }
            Some(&mut (_, e)) if e < start => self.push_new(start, end),
            None => self.push_new(start, end),
            Some(_) => self.insert_ooo_merging(start, end, above),
        }
    }

    fn push_new(&mut self, start: u64, end: u64) {
        self.ooo.push_back((start, end));
        self.note_changed(start, end - start);
    }

    /// Range starting at `start` changed and the buffer grew by `added` bytes.
    fn note_changed(&mut self, start: u64, added: u64) {
        self.ooo_bytes += added;
        self.recent.copy_within(0..3, 1);
        self.recent[0] = Some(start);
    }

    fn insert_ooo_merging(&mut self, start: u64, end: u64, above: usize) {
        // The ranges that overlap or touch [start, end) are contiguous in
        // the sorted queue: indices lo..hi. They merge into one. Ranges
        // are disjoint and do not touch, so every one below the last
        // starting at or below `start` ends before it: lo is that one or
        // the next. hi lies a few ranges above (those the segment covers).
        let lo = if above > 0 && self.ooo[above - 1].1 >= start { above - 1 } else { above };
        let mut hi = above;
        while self.ooo.get(hi).is_some_and(|&(s, _)| s <= end) {
            hi += 1;
        }
        if lo == hi {
            self.ooo.insert(lo, (start, end));
            self.note_changed(start, end - start);
            return;
        }
        // The merged range takes the place of the first: a segment
        // filling part of a hole usually touches one range, and removing
        // it to insert it again shifted the ranges above it (an MPTCP
        // connection's queue holds many, one per hole of each subflow).
        let (mut ms, mut me) = (start, end);
        for &(s, e) in self.ooo.range(lo..hi) {
            self.ooo_bytes -= e - s;
            ms = ms.min(s);
            me = me.max(e);
        }
        self.ooo[lo] = (ms, me);
        if hi > lo + 1 {
            self.ooo.drain(lo + 1..hi);
        }
        self.note_changed(ms, me - ms);
    }

    fn range_containing(&self, seq: u64) -> Option<(u64, u64)> {
        // Most changes extend the highest range: only it can hold a
        // sequence at or above its start.
        if let Some(&(s, e)) = self.ooo.back().filter(|&&(s, _)| s <= seq) {
            return (e > seq).then_some((s, e));
        }
        let i = self.ooo.partition_point(|&(s, _)| s <= seq);
        let &(s, e) = self.ooo.get(i.checked_sub(1)?)?;
        (e > seq).then_some((s, e))
    }

    /// Up to three SACK blocks, the most recently changed first.
    pub fn sack_blocks(&self) -> SackBlocks {
        let mut out = SackBlocks::default();
        if self.ooo.is_empty() {
            return out; // nothing out of order: no block (stale `recent` aside)
        }
        for seq in self.recent.iter().flatten() {
            if let Some(b) = self.range_containing(*seq) {
                if !out.as_slice().contains(&b) && !out.push(b.0, b.1) {
                    break;
                }
            }
        }
        // Fill remaining slots with the lowest ranges not yet listed.
        for &(s, e) in &self.ooo {
            if out.len as usize >= 3 {
                break;
            }
            if !out.as_slice().contains(&(s, e)) {
                out.push(s, e);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_data_is_delivered() {
        let mut r = Receiver::new(1, 10_000);
        let o = r.on_data(1, 101);
        assert_eq!(o, RecvOutcome { delivered: 100, ack_now: false, dropped: false });
        assert_eq!(r.rcv_nxt, 101);
    }

    #[test]
    fn a_hole_filled_delivers_the_queue_and_acks_at_once() {
        let mut r = Receiver::new(0, 10_000);
        assert!(r.on_data(100, 200).ack_now);
        assert!(r.on_data(300, 400).ack_now);
        assert_eq!(r.window_bytes(), 9_800);
        let blocks = r.sack_blocks();
        assert_eq!(blocks.as_slice(), &[(300, 400), (100, 200)]);
        let o = r.on_data(0, 100);
        assert_eq!(o.delivered, 200);
        assert!(o.ack_now);
        assert_eq!(r.sack_blocks().as_slice(), &[(300, 400)]);
        r.on_data(200, 300);
        assert_eq!(r.rcv_nxt, 400);
        assert_eq!(r.ooo_bytes(), 0);
    }

    #[test]
    fn overlapping_and_duplicate_segments_are_merged() {
        let mut r = Receiver::new(0, 10_000);
        r.on_data(100, 200);
        r.on_data(150, 250);
        r.on_data(250, 300);
        assert_eq!(r.sack_blocks().as_slice(), &[(100, 300)]);
        assert_eq!(r.ooo_bytes(), 200);
        let dup = r.on_data(0, 0);
        assert!(dup.ack_now);
    }

    #[test]
    fn a_segment_in_a_hole_merges_with_the_ranges_it_touches() {
        let mut r = Receiver::new(0, 100_000);
        for k in 1..=5 {
            r.on_data(k * 1_000, k * 1_000 + 100);
        }
        r.on_data(2_100, 2_200); // extends the second range up
        r.on_data(2_900, 3_000); // the third down
        r.on_data(3_100, 4_000); // joins the third and the fourth
        r.on_data(1_500, 1_600); // a range of its own
        let ranges: Vec<(u64, u64)> = r.ooo.iter().copied().collect();
        assert_eq!(ranges, vec![(1_000, 1_100), (1_500, 1_600), (2_000, 2_200), (2_900, 4_100), (5_000, 5_100)]);
        assert_eq!(r.ooo_bytes(), 100 + 100 + 200 + 1_200 + 100);
        assert_eq!(r.sack_blocks().as_slice(), &[(1_500, 1_600), (2_900, 4_100), (2_000, 2_200)]);
        // One segment over three ranges and the holes between them.
        r.on_data(1_050, 3_000);
        let ranges: Vec<(u64, u64)> = r.ooo.iter().copied().collect();
        assert_eq!(ranges, vec![(1_000, 4_100), (5_000, 5_100)]);
        assert_eq!(r.ooo_bytes(), 3_200);
    }

    #[test]
    fn data_beyond_the_buffer_is_dropped() {
        let mut r = Receiver::new(0, 1_000);
        assert!(r.on_data(900, 1_100).dropped);
    }

    /// The receiver's state rebuilt from the set of bytes it holds.
    struct Model {
        held: Vec<bool>,
        rcv_nxt: u64,
        buf_bytes: u64,
    }

    impl Model {
        /// The segment's outcome by the rules of `on_data`, applied byte by byte.
        fn on_data(&mut self, start: u64, end: u64) -> RecvOutcome {
            if end <= self.rcv_nxt {
                return RecvOutcome { ack_now: true, ..Default::default() };
            }
            if end > self.rcv_nxt + self.buf_bytes {
                return RecvOutcome { ack_now: true, dropped: true, ..Default::default() };
            }
            let had_ooo = !self.ranges().is_empty();
            for b in start..end {
                self.held[b as usize] = true;
            }
            let before = self.rcv_nxt;
            while self.held.get(self.rcv_nxt as usize).copied().unwrap_or(false) {
                self.rcv_nxt += 1;
            }
            let delivered = self.rcv_nxt - before;
            RecvOutcome { delivered, ack_now: delivered == 0 || had_ooo, dropped: false }
        }

        /// Maximal runs of bytes held above `rcv_nxt`.
        fn ranges(&self) -> Vec<(u64, u64)> {
            let mut out: Vec<(u64, u64)> = Vec::new();
            for b in self.rcv_nxt..self.held.len() as u64 {
                if !self.held[b as usize] {
                    continue;
                }
                match out.last_mut() {
                    Some((_, e)) if *e == b => *e = b + 1,
                    _ => out.push((b, b + 1)),
                }
            }
            out
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, ..Default::default() })]

        /// Random segments (reordered, overlapping, duplicated, beyond the
        /// buffer): delivery, the out-of-order queue, the window and the
        /// SACK blocks agree with a byte-by-byte model.
        #[test]
        fn agrees_with_a_byte_by_byte_model(
            buf_bytes in 50u64..2_000,
            segs in proptest::collection::vec((0u64..3_000, 1u64..200), 1..120),
        ) {
            let mut r = Receiver::new(0, buf_bytes);
            let mut m = Model { held: vec![false; 3_200], rcv_nxt: 0, buf_bytes };
            let mut duplicates = 0;
            for &(start, len) in &segs {
                let end = start + len;
                duplicates += (start..end).all(|b| b < m.rcv_nxt || m.held[b as usize]) as u64;
                let ooo_before = start > m.rcv_nxt;
                let (got, want) = (r.on_data(start, end), m.on_data(start, end));
                proptest::prop_assert_eq!(got, want, "segment [{}, {})", start, end);
                proptest::prop_assert_eq!(r.rcv_nxt, m.rcv_nxt);
                proptest::prop_assert_eq!(r.delivered_bytes, m.rcv_nxt);
                proptest::prop_assert_eq!(r.duplicate_segs, duplicates);
                let ranges = m.ranges();
                proptest::prop_assert_eq!(r.ooo.iter().copied().collect::<Vec<_>>(), ranges.clone());
                proptest::prop_assert_eq!(r.ooo_bytes(), ranges.iter().map(|(s, e)| e - s).sum::<u64>());
                proptest::prop_assert_eq!(r.window_bytes(), buf_bytes.saturating_sub(r.ooo_bytes()));
                let blocks = r.sack_blocks();
                let blocks = blocks.as_slice();
                proptest::prop_assert_eq!(blocks.len(), ranges.len().min(3));
                for (i, b) in blocks.iter().enumerate() {
                    proptest::prop_assert!(ranges.contains(b), "block {:?} is not a held range", b);
                    proptest::prop_assert!(!blocks[..i].contains(b), "block {:?} twice", b);
                }
                // RFC 2018: the first block holds the segment that triggered the ACK.
                if ooo_before && !got.dropped && got.delivered == 0 && end > m.rcv_nxt {
                    let first = blocks[0];
                    proptest::prop_assert!(first.0 <= start.max(m.rcv_nxt) && end <= first.1, "first block {:?}", first);
                }
            }
        }
    }
}
