//! Where a retransmission goes (Iyengar, Amer, Stewart, "Retransmission
//! Policies for Concurrent Multipath Transfer Using SCTP Multihoming", ICON
//! 2004; the same five policies in their 2006 ToN paper). Used for
//! fast retransmissions and T3-rtx retransmissions alike. The association
//! applies the loss's window reduction first, then asks, so that the lossy
//! path is judged by its reduced state.

use super::{argmax_by, DestIdx, DestState, TieBreak, Tsn};
use std::cmp::{Ordering, Reverse};
use std::collections::VecDeque;

/// A retransmission policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RtxPolicy {
    /// The destination the TSN was last sent to.
    Same,
    /// Any destination with cwnd room now; if none, the first to get room.
    Asap,
    /// The active destination with the largest cwnd.
    Cwnd,
    /// The active destination with the largest ssthresh: the default, as
    /// Iyengar et al. recommend and FreeBSD's CMT does for fast retransmits.
    #[default]
    Ssthresh,
    /// The active destination with the lowest estimated loss rate.
    LossRate,
}

impl RtxPolicy {
    /// The scenario's names of the policies; the first is the default.
    pub const NAMES: &'static [(&'static str, RtxPolicy)] = &[
        ("ssthresh", RtxPolicy::Ssthresh),
        ("same", RtxPolicy::Same),
        ("asap", RtxPolicy::Asap),
        ("cwnd", RtxPolicy::Cwnd),
        ("lossrate", RtxPolicy::LossRate),
    ];

    /// The policy named by the scenario (`None`: the default, RTX-SSTHRESH).
    pub fn parse(name: Option<&str>) -> Option<RtxPolicy> {
        let Some(name) = name else { return Some(Self::NAMES[0].1) };
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, p)| p)
    }
}

/// The destination chosen for a retransmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtxChoice {
    /// Send on this destination.
    Now(DestIdx),
    /// RTX-ASAP with no destination having room: send on the first active
    /// destination whose flight drops below its cwnd (ask again then).
    WhenRoom,
}

/// The destination for a retransmission of a TSN last sent to `last_dest`.
/// Only active destinations are candidates; when none is active the TSN
/// stays with `last_dest` (nothing better exists, and path-failure
/// detection keeps probing it). Equal candidates go to `tie`.
pub fn choose_rtx_dest(policy: RtxPolicy, last_dest: DestIdx, dests: &[DestState], tie: &mut TieBreak<'_>) -> RtxChoice {
    let active = |d: &DestState| d.active;
    if !dests.iter().any(active) {
        return RtxChoice::Now(last_dest);
    }
    let tied = match policy {
        RtxPolicy::Same if dests.get(last_dest).is_some_and(active) => vec![last_dest],
        // RTX-SAME to a destination marked inactive would wait on a failed
        // path; RFC 4960 §6.4.1 sends to an active one instead, so fall
        // back to the default policy.
        RtxPolicy::Same => argmax_by(dests, active, |d| d.ssthresh_bytes),
        RtxPolicy::Asap => {
            let with_room: Vec<DestIdx> = (0..dests.len()).filter(|&i| active(&dests[i]) && dests[i].has_cwnd_room()).collect();
            if with_room.is_empty() {
                return RtxChoice::WhenRoom;
            }
            with_room
        }
        RtxPolicy::Cwnd => argmax_by(dests, active, |d| d.cwnd_bytes),
        RtxPolicy::Ssthresh => argmax_by(dests, active, |d| d.ssthresh_bytes),
        RtxPolicy::LossRate => argmax_by(dests, active, |d| Reverse(d.loss)),
    };
    tie.pick(&tied).map_or(RtxChoice::Now(last_dest), RtxChoice::Now)
}

/// Losses over TSNs sent, a rate compared exactly (cross-multiplied).
/// A destination that has sent nothing has rate 0: no evidence of loss.
#[derive(Clone, Copy, Debug, Default)]
pub struct LossRate {
    pub lost_tsns: u64,
    pub sent_tsns: u64,
}

impl LossRate {
    pub fn as_frac(self) -> f64 {
        if self.sent_tsns == 0 {
            0.0
        } else {
            self.lost_tsns as f64 / self.sent_tsns as f64
        }
    }

    fn num_den(self) -> (u128, u128) {
        if self.sent_tsns == 0 {
            (0, 1)
        } else {
            (self.lost_tsns as u128, self.sent_tsns as u128)
        }
    }
}

impl PartialEq for LossRate {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for LossRate {}
impl PartialOrd for LossRate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for LossRate {
    fn cmp(&self, o: &Self) -> Ordering {
        let ((a, b), (c, d)) = (self.num_den(), o.num_den());
        (a * d).cmp(&(c * b))
    }
}

/// Per-destination loss-rate estimate for RTX-LOSSRATE: losses detected
/// (fast retransmits and T3-rtx TSNs) over TSNs sent, over the last
/// `window_tsns` TSNs sent to the destination. A loss is charged to the
/// send it belongs to, so a loss detected after its send left the window
/// is not counted.
#[derive(Clone, Debug)]
pub struct LossRateEstimator {
    window_tsns: usize,
    sends: Vec<VecDeque<(Tsn, bool)>>,
    lost: Vec<u64>,
}

/// Default sliding window of the loss-rate estimate, TSNs.
pub const DEFAULT_LOSS_WINDOW_TSNS: usize = 1000;

impl LossRateEstimator {
    pub fn new(n_dests: usize, window_tsns: usize) -> Self {
        LossRateEstimator { window_tsns: window_tsns.max(1), sends: vec![VecDeque::new(); n_dests], lost: vec![0; n_dests] }
    }

    /// `tsn` was sent (first time or again) to `dest`.
    pub fn on_send(&mut self, dest: DestIdx, tsn: Tsn) {
        let q = &mut self.sends[dest];
        q.push_back((tsn, false));
        if q.len() > self.window_tsns {
            if let Some((_, true)) = q.pop_front() {
                self.lost[dest] -= 1;
            }
        }
    }

    /// The latest send of `tsn` to `dest` was detected lost.
    pub fn on_loss(&mut self, dest: DestIdx, tsn: Tsn) {
        let hit = self.sends[dest].iter_mut().rev().find(|(t, _)| *t == tsn);
        if let Some((_, lost @ false)) = hit {
            *lost = true;
            self.lost[dest] += 1;
        }
    }

    /// The current estimate for `dest`, to copy into `DestState::loss`.
    pub fn rate(&self, dest: DestIdx) -> LossRate {
        LossRate { lost_tsns: self.lost[dest], sent_tsns: self.sends[dest].len() as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::SimRng;

    fn dest(cwnd: u64, ssthresh: u64, flight: u64) -> DestState {
        let mut d = DestState::new(cwnd, ssthresh);
        d.flight_bytes = flight;
        d
    }

    fn pick(policy: RtxPolicy, last: DestIdx, ds: &[DestState]) -> RtxChoice {
        choose_rtx_dest(policy, last, ds, &mut TieBreak::LowestIndex)
    }

    /// A: small window, large threshold, full; B: large window, small
    /// threshold, room; C: middle, full, lossless.
    fn three() -> Vec<DestState> {
        let mut ds = vec![dest(6000, 60_000, 6000), dest(30_000, 12_000, 3000), dest(20_000, 20_000, 20_000)];
        ds[0].loss = LossRate { lost_tsns: 5, sent_tsns: 100 };
        ds[1].loss = LossRate { lost_tsns: 1, sent_tsns: 100 };
        ds
    }

    #[test]
    fn each_policy_picks_its_destination() {
        let ds = three();
        assert_eq!(pick(RtxPolicy::Same, 2, &ds), RtxChoice::Now(2));
        assert_eq!(pick(RtxPolicy::Asap, 0, &ds), RtxChoice::Now(1), "only B has room");
        assert_eq!(pick(RtxPolicy::Cwnd, 0, &ds), RtxChoice::Now(1));
        assert_eq!(pick(RtxPolicy::Ssthresh, 1, &ds), RtxChoice::Now(0));
        assert_eq!(pick(RtxPolicy::LossRate, 0, &ds), RtxChoice::Now(2), "C has sent nothing: rate 0");
    }

    #[test]
    fn ssthresh_policy_sees_the_cut_the_loss_caused() {
        // A had the largest ssthresh; its loss halves it below B's, so the
        // repair goes to B.
        let mut ds = vec![dest(40_000, 40_000, 40_000), dest(30_000, 30_000, 0)];
        assert_eq!(pick(RtxPolicy::Ssthresh, 0, &ds), RtxChoice::Now(0));
        ds[0].enter_fast_recovery(99, 1500);
        assert_eq!(pick(RtxPolicy::Ssthresh, 0, &ds), RtxChoice::Now(1));
    }

    #[test]
    fn asap_waits_when_no_destination_has_room() {
        let ds = vec![dest(6000, 6000, 6000), dest(3000, 3000, 4500)];
        assert_eq!(pick(RtxPolicy::Asap, 0, &ds), RtxChoice::WhenRoom);
    }

    #[test]
    fn ties_go_to_the_lowest_index_or_a_seeded_draw() {
        let ds = vec![dest(9000, 9000, 0), dest(9000, 9000, 0), dest(3000, 3000, 0)];
        for p in [RtxPolicy::Asap, RtxPolicy::Cwnd, RtxPolicy::Ssthresh, RtxPolicy::LossRate] {
            assert_eq!(pick(p, 2, &ds), RtxChoice::Now(0), "{p:?}");
        }
        let mut rng = SimRng::new(5, 9);
        let mut seen = [0u32; 3];
        for _ in 0..200 {
            if let RtxChoice::Now(d) = choose_rtx_dest(RtxPolicy::Ssthresh, 2, &ds, &mut TieBreak::Random(&mut rng)) {
                seen[d] += 1;
            }
        }
        assert!(seen[0] > 60 && seen[1] > 60 && seen[2] == 0, "{seen:?}");
        let mut again = SimRng::new(5, 9);
        let first = choose_rtx_dest(RtxPolicy::Ssthresh, 2, &ds, &mut TieBreak::Random(&mut again));
        let mut rng2 = SimRng::new(5, 9);
        assert_eq!(first, choose_rtx_dest(RtxPolicy::Ssthresh, 2, &ds, &mut TieBreak::Random(&mut rng2)), "same seed, same pick");
    }

    #[test]
    fn inactive_destinations_are_never_chosen() {
        let mut ds = three();
        ds[0].active = false;
        ds[1].active = false;
        for p in [RtxPolicy::Same, RtxPolicy::Cwnd, RtxPolicy::Ssthresh, RtxPolicy::LossRate] {
            assert_eq!(pick(p, 0, &ds), RtxChoice::Now(2), "{p:?}");
        }
        assert_eq!(pick(RtxPolicy::Asap, 0, &ds), RtxChoice::WhenRoom, "C is full");
        ds[2].active = false;
        assert_eq!(pick(RtxPolicy::Cwnd, 1, &ds), RtxChoice::Now(1), "all inactive: stay");
    }

    #[test]
    fn loss_rates_compare_exactly() {
        let a = LossRate { lost_tsns: 1, sent_tsns: 3 };
        let b = LossRate { lost_tsns: 2, sent_tsns: 6 };
        assert_eq!(a, b);
        assert!(LossRate { lost_tsns: 1, sent_tsns: 4 } < a);
        assert_eq!(LossRate::default(), LossRate { lost_tsns: 0, sent_tsns: 7 });
    }

    #[test]
    fn loss_estimate_slides_over_the_last_sends() {
        let mut e = LossRateEstimator::new(2, 4);
        for t in 1..=4 {
            e.on_send(0, t);
        }
        e.on_loss(0, 2);
        e.on_loss(0, 2);
        assert_eq!(e.rate(0), LossRate { lost_tsns: 1, sent_tsns: 4 });
        assert_eq!((e.rate(0).lost_tsns, e.rate(0).sent_tsns), (1, 4), "a loss counts once");
        e.on_send(0, 5);
        e.on_send(0, 6);
        assert_eq!((e.rate(0).lost_tsns, e.rate(0).sent_tsns), (0, 4), "TSN 2 left the window");
        e.on_loss(0, 1);
        assert_eq!(e.rate(0).lost_tsns, 0, "a loss of a send outside the window is not counted");
        assert_eq!(e.rate(1).sent_tsns, 0);
    }
}
