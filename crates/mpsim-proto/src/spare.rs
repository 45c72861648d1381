//! Queues of per-segment records (a subflow's scoreboard, the data not yet
//! DATA_ACKed, the mappings a receiver holds) would keep the capacity of
//! their longest moment for the rest of the run; with 65,536 subflows in a
//! datacenter run that spare room was most of the memory. A queue that has
//! drained to under a quarter of its capacity gives half of it back, so
//! its capacity stays within four times what it holds, and a queue that
//! refills doubles again at the usual amortised cost.

use std::collections::VecDeque;

/// Capacity, in records, that a queue always keeps (small queues churn).
const KEPT_RECORDS: usize = 32;

/// Gives back half of `q`'s capacity when it holds under a quarter of it.
#[inline]
pub(crate) fn release_spare<T>(q: &mut VecDeque<T>) {
    let cap = q.capacity();
    if cap > KEPT_RECORDS && q.len() < cap / 4 {
        q.shrink_to(cap / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_queue_gives_back_half_its_capacity_and_keeps_its_records() {
        let mut q: VecDeque<u64> = (0..1000).collect();
        let full = q.capacity();
        q.drain(..700);
        release_spare(&mut q);
        assert_eq!(q.capacity(), full, "300 records are over a quarter of the capacity");
        q.drain(..100);
        release_spare(&mut q);
        assert!(q.capacity() >= full / 2 && q.capacity() < full, "{} of {full}", q.capacity());
        assert!(q.iter().copied().eq(800..1000));
    }

    #[test]
    fn small_queues_keep_their_capacity() {
        let mut q: VecDeque<u64> = VecDeque::with_capacity(KEPT_RECORDS);
        let cap = q.capacity();
        release_spare(&mut q);
        assert_eq!(q.capacity(), cap);
    }
}
