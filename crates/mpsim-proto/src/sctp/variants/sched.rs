//! CMT's scheduler of new data (Iyengar, Amer, Stewart 2006): round-robin
//! over the destinations whose window has room, one packet at a time, each
//! destination under its own congestion control. The peer's receive window
//! (RFC 4960 §6.1 rule A) is the caller's to check first: it stops every
//! destination at once.

use super::{DestIdx, DestState};

/// The destination for the next packet of new data: the first after `last`
/// (cyclically, by index) that is active and has `flight < cwnd` (RFC 4960
/// §6.1 rule B); `None` when no destination has room. `last = None` starts
/// at index 0.
pub fn next_round_robin(last: Option<DestIdx>, dests: &[DestState]) -> Option<DestIdx> {
    let n = dests.len();
    let start = last.map_or(0, |l| l + 1);
    (0..n).map(|i| (start + i) % n).find(|&d| dests[d].active && dests[d].has_cwnd_room())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(cwnd: u64, flight: u64) -> DestState {
        let mut d = DestState::new(cwnd, 100_000);
        d.flight_bytes = flight;
        d
    }

    #[test]
    fn round_robin_cycles_over_destinations_with_room() {
        let ds = vec![dest(6000, 0), dest(6000, 0), dest(6000, 0)];
        assert_eq!(next_round_robin(None, &ds), Some(0));
        assert_eq!(next_round_robin(Some(0), &ds), Some(1));
        assert_eq!(next_round_robin(Some(2), &ds), Some(0), "wraps around");
    }

    #[test]
    fn full_and_inactive_destinations_are_skipped() {
        let mut ds = vec![dest(6000, 0), dest(6000, 6000), dest(6000, 5999)];
        ds[0].active = false;
        assert_eq!(next_round_robin(Some(0), &ds), Some(2), "1 is full; 5999 < 6000 leaves room");
        assert_eq!(next_round_robin(Some(2), &ds), Some(2), "the only one with room");
        ds[2].flight_bytes = 6000;
        assert_eq!(next_round_robin(Some(2), &ds), None);
        assert_eq!(next_round_robin(None, &[]), None);
    }
}
