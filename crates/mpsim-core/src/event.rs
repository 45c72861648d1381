//! The event queue, ordered by (time, insertion sequence) so simultaneous
//! events run in the order they were scheduled, on every machine.
//!
//! A radix heap: simulated time never goes backwards, so an event is filed
//! in bucket `bit length of (time XOR last popped time)`. Pushing is O(1);
//! popping empties the lowest non-empty bucket into lower ones, and each
//! event moves down at most 64 times in its life (in practice two or three).
//! It avoids the unpredictable branches of a binary heap's sift-down, which
//! dominated the per-packet cost.

use crate::time::SimTime;
use std::collections::VecDeque;

const BUCKETS: usize = 65;
/// Buckets are keyed on time in units of 2^16 ps (65 ns): fewer levels for
/// an event to descend; events sharing a unit are kept sorted in bucket 0.
const SHIFT: u32 = 16;

/// Min-queue of events of type `E`. Events may not be scheduled before
/// the time of the last event popped.
pub struct EventQueue<E> {
    /// Bucket 0: the events in the same time unit as `last`, sorted by (time, seq).
    now_bucket: VecDeque<(u64, u64, E)>,
    buckets: Vec<Vec<(u64, u64, E)>>,
    /// Bit `b - 1` set when bucket `b` (1..=64) is non-empty: finding the
    /// lowest one is a single `trailing_zeros` instead of a scan.
    occupied: u64,
    /// Reused buffer for the bucket being redistributed (keeps its capacity).
    spill: Vec<(u64, u64, E)>,
    last: u64,
    next_seq: u64,
    len: usize,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket_of(time: u64, last: u64) -> usize {
    (64 - ((time >> SHIFT) ^ (last >> SHIFT)).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            now_bucket: VecDeque::with_capacity(64),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            spill: Vec::new(),
            occupied: 0,
            last: 0,
            next_seq: 0,
            len: 0,
        }
    }

    /// Schedules `event` at `time` (clamped to the last popped time).
    pub fn push(&mut self, time: SimTime, event: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past");
        let t = time.0.max(self.last);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        match bucket_of(t, self.last) {
            0 => {
                // Usually the latest in its unit: the scan from the back is short.
                let pos = self.now_bucket.iter().rposition(|&(u, _, _)| u <= t).map_or(0, |i| i + 1);
                self.now_bucket.insert(pos, (t, seq, event));
            }
            b => self.file(b, (t, seq, event)),
        }
    }

    /// Puts an entry in bucket `b` (>= 1).
    fn file(&mut self, b: usize, entry: (u64, u64, E)) {
        self.buckets[b].push(entry);
        self.occupied |= 1 << (b - 1);
    }

    /// Makes the earliest events sit in bucket 0 (if there are any).
    /// Inlined check; the refill itself is out of line (it runs about once
    /// per pop, the check twice).
    #[inline]
    fn settle(&mut self) {
        if self.now_bucket.is_empty() && self.len != 0 {
            self.refill();
        }
    }

    #[inline(never)]
    fn refill(&mut self) {
        if self.occupied == 0 {
            return;
        }
        let b = self.occupied.trailing_zeros() as usize + 1;
        self.occupied &= self.occupied - 1;
        // Usually the bucket holds a single event: it is the minimum, so
        // it alone goes to bucket 0 (what the general spill would do).
        if self.buckets[b].len() == 1 {
            if let Some(entry) = self.buckets[b].pop() {
                self.last = entry.0;
                self.now_bucket.push_back(entry);
            }
            return;
        }
        std::mem::swap(&mut self.spill, &mut self.buckets[b]);
        let min = self.spill.iter().map(|&(t, _, _)| t).min().unwrap_or(self.last);
        self.last = min;
        for (t, seq, e) in self.spill.drain(..) {
            match bucket_of(t, min) {
                0 => self.now_bucket.push_back((t, seq, e)),
                nb => {
                    self.buckets[nb].push((t, seq, e));
                    self.occupied |= 1 << (nb - 1);
                }
            }
        }
        if self.now_bucket.len() > 1 {
            self.now_bucket.make_contiguous().sort_unstable_by_key(|&(t, seq, _)| (t, seq));
        }
    }

    /// Time of the earliest event.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle();
        self.now_bucket.front().map(|&(t, _, _)| SimTime(t))
    }

    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.settle();
        let (t, _, e) = self.now_bucket.pop_front()?;
        self.len -= 1;
        self.last = t;
        Some((SimTime(t), e))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    #[test]
    fn pops_in_time_order_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), 'a');
        q.push(SimTime(1), 'b');
        q.push(SimTime(5), 'c');
        q.push(SimTime(1), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    #[test]
    fn matches_a_binary_heap_on_a_random_workload() {
        // Reference: a max-heap on reversed (time, seq).
        let mut rng = crate::SimRng::new(9, 9);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut now = 0u64;
        let mut seq = 0u64;
        for step in 0..200_000u64 {
            if rng.below(3) > 0 || reference.is_empty() {
                // Mostly near-future events, some far, some at `now`.
                let dt = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(1_000),
                    2 => rng.below(1_000_000_000),
                    _ => rng.below(1 << 50),
                };
                q.push(SimTime(now + dt), step);
                reference.push(std::cmp::Reverse((now + dt, seq, step)));
                seq += 1;
            } else {
                let std::cmp::Reverse((t, _, e)) = reference.pop().expect("reference is non-empty");
                assert_eq!(q.pop(), Some((SimTime(t), e)));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
