//! Queues of per-segment records (a subflow's scoreboard, the data not yet
//! DATA_ACKed, the mappings a receiver holds, a link direction's packets)
//! would keep the capacity of their longest moment for the rest of the
//! run; with 65,536 subflows in a datacenter run that spare room was most
//! of the memory. A queue that has
//! drained to under a quarter of its capacity shrinks to twice what it
//! holds, so its capacity stays within four times that, and a queue that
//! refills doubles again at the usual amortised cost.

use std::collections::VecDeque;

/// Capacity, in records, that a queue always keeps (small queues churn).
/// Most of a large run's queues are a subflow's, with a few segments in
/// flight each (8 records, and shrinking to twice the length rather than
/// by half, keep k=8's peak 1.5 MB lower than 32 records and halving).
const KEPT_RECORDS: usize = 8;

/// Shrinks `q` to twice what it holds when it holds under a quarter of
/// its capacity (a queue emptied after a burst gives all of it back at once).
#[inline]
pub fn release_spare<T>(q: &mut VecDeque<T>) {
    release_spare_keeping(q, KEPT_RECORDS);
}

/// `release_spare` for a queue that keeps `kept` records (a queue whose
/// length swings widely would otherwise give back and regrow its room).
#[inline]
pub fn release_spare_keeping<T>(q: &mut VecDeque<T>, kept: usize) {
    let cap = q.capacity();
    if cap > kept && q.len() < cap / 4 {
        q.shrink_to((2 * q.len()).max(kept));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_queue_shrinks_to_twice_what_it_holds_and_keeps_its_records() {
        let mut q: VecDeque<u64> = (0..1000).collect();
        let full = q.capacity();
        q.drain(..700);
        release_spare(&mut q);
        assert_eq!(q.capacity(), full, "300 records are over a quarter of the capacity");
        q.drain(..100);
        release_spare(&mut q);
        assert!(q.capacity() >= 400 && q.capacity() < full / 2, "{} of {full}", q.capacity());
        assert!(q.iter().copied().eq(800..1000));
        q.clear();
        release_spare(&mut q);
        assert!(q.capacity() >= KEPT_RECORDS && q.capacity() < 2 * KEPT_RECORDS, "{}", q.capacity());
    }

    #[test]
    fn a_queue_keeps_the_records_it_is_given() {
        let mut q: VecDeque<u64> = (0..64).collect();
        q.drain(..62);
        release_spare_keeping(&mut q, 32);
        assert!(q.capacity() >= 32 && q.capacity() < 64, "{}", q.capacity());
        let cap = q.capacity();
        q.clear();
        release_spare_keeping(&mut q, 32);
        assert_eq!(q.capacity(), cap, "at most `kept` records: nothing to give back");
    }

    #[test]
    fn small_queues_keep_their_capacity() {
        let mut q: VecDeque<u64> = VecDeque::with_capacity(KEPT_RECORDS);
        let cap = q.capacity();
        release_spare(&mut q);
        assert_eq!(q.capacity(), cap);
    }
}
