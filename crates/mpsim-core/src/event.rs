//! The event queue, ordered by (time, insertion sequence) so simultaneous
//! events run in the order they were scheduled, on every machine.
//!
//! A radix heap with 8-bit digits over time in units of 2^12 ps (4 ns):
//! simulated time never goes backwards, so an event is filed by the
//! highest byte in which its unit differs from that of the last popped
//! time (its level) and its value there (its digit). Pushing is O(1);
//! popping empties the lowest non-empty bucket into lower levels, so each
//! event moves at most once per level below the one it was filed at (in
//! practice once or twice). Events of the current unit are kept sorted at
//! the front. It avoids the unpredictable branches of a binary heap's
//! sift-down, which dominated the per-packet cost, and the many short
//! moves of a radix heap with 1-bit digits (eight or more per event on a
//! dumbbell). The unit trades the sorting of a unit's events (a 10 Gbps
//! fabric puts dozens of events in 65 ns) against moves through more
//! levels: of units of 2^10, 2^12, 2^14 and 2^16 ps, 2^12 gave the fewest
//! instructions on the 100-flow dumbbell and close to the fewest on a k=8
//! FatTree.
//!
//! Events of one time sit in one bucket in the order they were pushed: two
//! events of the same time always share their level and digit, and moving
//! a bucket keeps the order of its entries (its targets are empty, being
//! lower than the lowest non-empty level). A stable sort by time then
//! gives the (time, sequence) order, so no sequence number is kept.

use crate::time::SimTime;

/// Low bits of the time below the unit: events within one unit are sorted.
const SHIFT: u32 = 12;
const DIGIT_BITS: u32 = 8;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = (64 - SHIFT as usize).div_ceil(DIGIT_BITS as usize);

/// Min-queue of events of type `E`. Events may not be scheduled before
/// the time of the last event popped, nor, once `peek_time` or a
/// `pop_until` that declined has brought the earliest event to the front,
/// before that event's time: the queue's radix is then set from it (the
/// engine schedules only while handling an event, at or after its time).
pub struct EventQueue<E> {
    /// The events in the unit of `last`, sorted by (time, scheduling
    /// order); `now[head]` is next.
    now: Vec<(u64, E)>,
    head: usize,
    /// Bucket `level * DIGITS + digit`.
    buckets: Vec<Vec<(u64, E)>>,
    /// Per level, bit `digit` set when that bucket is non-empty.
    digits: [[u64; DIGITS / 64]; LEVELS],
    /// Bit `level` set when the level has a non-empty bucket.
    levels: u32,
    /// Reused buffer for the bucket being redistributed (keeps its capacity).
    spill: Vec<(u64, E)>,
    last: u64,
    len: usize,
}

/// Sorts events of one unit by time, events of one time in the order
/// given. Units are short enough to hold a few events, which an insertion
/// sort orders at the least cost; a longer run takes the (stable) library
/// sort, which bounds the worst case.
fn sort_unit<E: Copy>(events: &mut [(u64, E)]) {
    if events.len() > 16 {
        events.sort_by_key(|&(t, _)| t);
        return;
    }
    for i in 1..events.len() {
        let e = events[i];
        let mut j = i;
        while j > 0 && events[j - 1].0 > e.0 {
            events[j] = events[j - 1];
            j -= 1;
        }
        events[j] = e;
    }
}

/// Entries an emptied bucket keeps room for. Buffers move between the
/// front, the spill buffer and the buckets as they are swapped; without a
/// cap, one grown by a burst would end up allocated in many of the 1,792
/// buckets (on large fabrics, tens of megabytes).
const KEPT_CAPACITY: usize = 64;

#[inline]
fn cap_emptied<T>(bucket: &mut Vec<T>) {
    if bucket.capacity() > KEPT_CAPACITY {
        bucket.shrink_to(KEPT_CAPACITY);
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            now: Vec::with_capacity(64),
            head: 0,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            digits: [[0; DIGITS / 64]; LEVELS],
            levels: 0,
            spill: Vec::new(),
            last: 0,
            len: 0,
        }
    }

    /// Schedules `event` at `time` (clamped to the last popped time, or to
    /// the front event's once it was settled: see the type's comment).
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, event: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past");
        self.len += 1;
        let t = time.0.max(self.last);
        if (t ^ self.last) >> SHIFT == 0 {
            self.insert_now(t, event);
        } else {
            self.file(t, event);
        }
    }

    /// Puts an event of the current unit in order among those not yet
    /// popped: after every event of the same or an earlier time. Usually
    /// the latest, so the scan from the back is short.
    #[inline(never)]
    fn insert_now(&mut self, t: u64, event: E) {
        let pos = self.now[self.head..].iter().rposition(|&(u, _)| u <= t).map_or(self.head, |i| self.head + i + 1);
        if pos == self.now.len() {
            self.now.push((t, event));
        } else {
            self.now.insert(pos, (t, event));
        }
    }

    /// Files an event of a later unit than `last`'s by the highest byte in
    /// which the units differ.
    #[inline(always)]
    fn file(&mut self, t: u64, event: E) {
        let x = (t ^ self.last) >> SHIFT;
        let level = ((63 - x.leading_zeros()) / DIGIT_BITS) as usize;
        let digit = ((t >> (SHIFT as usize + DIGIT_BITS as usize * level)) as usize) & (DIGITS - 1);
        self.buckets[level * DIGITS + digit].push((t, event));
        self.digits[level][digit / 64] |= 1 << (digit % 64);
        self.levels |= 1 << level;
    }

    /// Makes the earliest events sit at the front (if there are any).
    /// Inlined check; the refill itself is out of line.
    #[inline(always)]
    fn settle(&mut self) -> bool {
        self.head < self.now.len() || self.refill()
    }

    /// Moves the earliest unit's events to the front, spreading the rest
    /// of their bucket over the lower levels. False when empty.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        self.now.clear();
        self.head = 0;
        if self.levels == 0 {
            return false;
        }
        let level = self.levels.trailing_zeros() as usize;
        let words = &mut self.digits[level];
        // The level is non-empty, so one of its words is.
        let w = words.iter().position(|&w| w != 0).unwrap_or(0);
        let digit = w * 64 + words[w].trailing_zeros() as usize;
        words[w] &= words[w] - 1;
        if words.iter().all(|&w| w == 0) {
            self.levels &= !(1 << level);
        }
        let bucket = &mut self.buckets[level * DIGITS + digit];
        if bucket.len() == 1 {
            // Most events sit alone in their bucket (on a dumbbell, nearly
            // all): moved, not swapped with the front.
            let (t, e) = bucket[0];
            bucket.clear();
            self.now.push((t, e));
            self.last = t;
            return true;
        }
        // A level-0 bucket holds a single unit.
        if level == 0 {
            std::mem::swap(&mut self.now, bucket);
            cap_emptied(bucket);
        } else {
            let mut spill = std::mem::take(&mut self.spill);
            std::mem::swap(&mut spill, bucket);
            cap_emptied(bucket);
            self.last = spill.iter().map(|&(t, _)| t).min().unwrap_or(self.last);
            for &(t, e) in &spill {
                if (t ^ self.last) >> SHIFT == 0 {
                    self.now.push((t, e));
                } else {
                    self.file(t, e);
                }
            }
            spill.clear();
            self.spill = spill;
        }
        if self.now.len() > 1 {
            sort_unit(&mut self.now);
        }
        self.last = self.now[0].0;
        true
    }

    /// Removes and returns the earliest event if it is due by `limit`
    /// (else leaves it first, as `peek_time` does). One call where
    /// `peek_time` and `pop` would settle the front twice.
    #[inline(always)]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        if !self.settle() {
            return None;
        }
        let (t, e) = self.now[self.head];
        if t > limit.0 {
            return None;
        }
        self.head += 1;
        self.len -= 1;
        self.last = t;
        Some((SimTime(t), e))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        if !self.settle() {
            return None;
        }
        Some(SimTime(self.now[self.head].0))
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_until(SimTime(u64::MAX))
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
    fn a_unit_sorts_by_time_then_given_order() {
        let base = 7 << SHIFT;
        let mut events: Vec<(u64, u32)> =
            [(5, 0), (1, 1), (5, 2), (4_095, 3), (0, 4), (1, 5)].iter().map(|&(t, e)| (base + t, e)).collect();
        sort_unit(&mut events);
        let order: Vec<u32> = events.iter().map(|&(_, e)| e).collect();
        assert_eq!(order, vec![4, 1, 5, 0, 2, 3]);
        assert_eq!(events[3].0, base + 5);
        assert_eq!(events[5].0, base + 4_095);
    }

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

    /// The reference of the random workloads: a max-heap on reversed
    /// (time, event), the events numbered in scheduling order.
    type Reference = BinaryHeap<std::cmp::Reverse<(u64, u64)>>;

    /// Schedules event `step` (steps rise) in both queues, mostly soon after `now`:
    /// at `now` itself or within one of the three `spans_ps`.
    fn push_random(
        q: &mut EventQueue<u64>,
        reference: &mut Reference,
        rng: &mut crate::SimRng,
        now: u64,
        spans_ps: [u64; 3],
        step: u64,
    ) {
        let dt = match rng.below(4) {
            0 => 0,
            k => rng.below(spans_ps[k as usize - 1]),
        };
        q.push(SimTime(now + dt), step);
        reference.push(std::cmp::Reverse((now + dt, step)));
    }

    #[test]
    fn matches_a_binary_heap_on_a_random_workload() {
        let mut rng = crate::SimRng::new(9, 9);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut now = 0u64;
        for step in 0..200_000u64 {
            if rng.below(3) > 0 || reference.is_empty() {
                push_random(&mut q, &mut reference, &mut rng, now, [1_000, 1_000_000_000, 1 << 50], step);
            } else {
                let std::cmp::Reverse((t, e)) = reference.pop().expect("reference is non-empty");
                assert_eq!(q.pop(), Some((SimTime(t), e)));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    /// `pop_until` hands out the events due by its limit in the order
    /// `pop` would, and leaves a later one in place, however events fall
    /// into buckets (alone, several, far off).
    #[test]
    fn pop_until_matches_a_binary_heap_on_a_random_workload() {
        let mut rng = crate::SimRng::new(7, 3);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut now = 0u64;
        for step in 0..200_000u64 {
            if rng.below(2) > 0 || reference.is_empty() {
                push_random(&mut q, &mut reference, &mut rng, now, [10_000, 10_000_000, 1 << 40], step);
            } else {
                let limit = now + rng.below(20_000_000);
                let std::cmp::Reverse((t, e)) = *reference.peek().expect("reference is non-empty");
                if t <= limit {
                    reference.pop();
                    assert_eq!(q.pop_until(SimTime(limit)), Some((SimTime(t), e)));
                    now = t;
                } else {
                    assert_eq!(q.pop_until(SimTime(limit)), None);
                    assert_eq!(q.peek_time(), Some(SimTime(t)));
                    // A peek files the earliest event as the last popped
                    // one: later events may not be scheduled before it.
                    now = t;
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        assert_eq!(q.pop_until(SimTime(u64::MAX)).is_some(), !reference.is_empty());
    }
}
