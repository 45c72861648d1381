//! Inter-path OOS packet differentiation (IOPD; Khan & Qadir, "Inter-path
//! OOS packets differentiation based congestion control for simultaneous
//! multipath transmission", Algorithm 1). A TSN reported missing is
//! **intra-path** when a TSN sent later on its own destination has been
//! acknowledged: a FIFO path overtook it, so it was lost (congestion). It is
//! **inter-path** when only other paths' TSNs are above it: the gap is the
//! delay difference between paths, not congestion.
//!
//! The printed condition of Algorithm 1 is garbled (it can be read as
//! requiring the TSN to lie both above and below the destination's highest
//! acked TSN). The self-consistent reading implemented here: `[low, high]`
//! is the window of TSNs outstanding on the destination, and its highest
//! acknowledged TSN `hacked` splits it into the part later same-path
//! traffic has overtaken (intra) and the part nothing on the path has
//! overtaken yet (inter).

use super::cucv2::OutstandingTsn;
use super::{opt_tsn_max, opt_tsn_min, tsn_le, tsn_lt, DestIdx, Tsn, TsnDest};

/// Cause of an out-of-sequence report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OosClass {
    /// Only other paths' TSNs overtook it: path delay disparity.
    Inter,
    /// A later TSN on the same path overtook it: loss.
    Intra,
}

/// IOPD's pointers for one destination (the paper's `Low_TSN`,
/// `High_TSN` and `Highest_in_sack_for_dest`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IopdDest {
    /// Lowest TSN outstanding on the destination (first transmissions and
    /// retransmissions assigned to it); `None` when nothing is outstanding.
    pub low: Option<Tsn>,
    /// Highest TSN ever sent to the destination.
    pub high: Option<Tsn>,
    /// Highest TSN sent to the destination that has been acknowledged (cum
    /// or gap); never decreases.
    pub hacked: Option<Tsn>,
}

/// Classifies missing TSN `t` against its current destination's pointers.
/// `None` when `t` is not in the destination's outstanding window
/// `[low, high]` (or equals `hacked`, i.e. was acknowledged), which a
/// consistent caller never asks about.
pub fn classify(p: &IopdDest, t: Tsn) -> Option<OosClass> {
    let (low, high) = (p.low?, p.high?);
    if !(tsn_le(low, t) && tsn_le(t, high)) {
        return None;
    }
    match p.hacked {
        // Something sent later on this path arrived: a FIFO path lost t.
        Some(h) if tsn_lt(t, h) => Some(OosClass::Intra),
        Some(h) if h == t => None,
        // Nothing on this path has overtaken t: only other paths did.
        _ => Some(OosClass::Inter),
    }
}

/// IOPD's pointers for every destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iopd {
    dests: Vec<IopdDest>,
}

impl Iopd {
    pub fn new(n_dests: usize) -> Self {
        Iopd { dests: vec![IopdDest::default(); n_dests] }
    }

    pub fn dest(&self, d: DestIdx) -> IopdDest {
        self.dests.get(d).copied().unwrap_or_default()
    }

    /// `t` was sent (first time or as a retransmission) to `t.dest`.
    pub fn on_send(&mut self, t: TsnDest) {
        let p = &mut self.dests[t.dest];
        p.high = opt_tsn_max(p.high, t.tsn);
        p.low = opt_tsn_min(p.low, t.tsn);
    }

    /// A SACK newly acknowledged `newly_acked` (each with its current
    /// destination); `outstanding_after` is what is still outstanding once
    /// it is applied. Updates `hacked` and re-searches `low`; call before
    /// classifying this SACK's missing reports.
    pub fn on_sack(&mut self, newly_acked: &[TsnDest], outstanding_after: &[OutstandingTsn]) {
        for t in newly_acked {
            let p = &mut self.dests[t.dest];
            p.hacked = opt_tsn_max(p.hacked, t.tsn);
        }
        self.research_low(outstanding_after);
    }

    /// As `on_sack`, with each destination's lowest outstanding TSN given
    /// by `low` (the association keeps its outstanding TSNs indexed).
    pub fn on_sack_with_lows(&mut self, newly_acked: &[TsnDest], low: impl Fn(DestIdx) -> Option<Tsn>) {
        for t in newly_acked {
            let p = &mut self.dests[t.dest];
            p.hacked = opt_tsn_max(p.hacked, t.tsn);
        }
        self.set_lows(low);
    }

    /// As `research_low`, with each destination's lowest outstanding TSN
    /// given by `low`.
    pub fn set_lows(&mut self, low: impl Fn(DestIdx) -> Option<Tsn>) {
        for (d, p) in self.dests.iter_mut().enumerate() {
            p.low = low(d);
        }
    }

    /// Recomputes every `low` from the outstanding TSNs (after a SACK, or
    /// after a TSN was re-assigned to another destination).
    pub fn research_low(&mut self, outstanding: &[OutstandingTsn]) {
        for p in &mut self.dests {
            p.low = None;
        }
        for o in outstanding {
            let p = &mut self.dests[o.dest];
            p.low = opt_tsn_min(p.low, o.tsn);
        }
    }

    /// Classifies missing TSN `t` against its current destination.
    pub fn classify(&self, t: TsnDest) -> Option<OosClass> {
        classify(&self.dest(t.dest), t.tsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: DestIdx = 0;
    const B: DestIdx = 1;

    fn example() -> Iopd {
        // The worked example "IOPD": A has 10, 12, 14 outstanding, B 11, 13.
        let mut s = Iopd::new(2);
        for (t, d) in [(10, A), (11, B), (12, A), (13, B), (14, A)] {
            s.on_send(TsnDest::new(t, d));
        }
        s
    }

    fn outstanding(v: &[(Tsn, DestIdx)]) -> Vec<OutstandingTsn> {
        v.iter().map(|&(t, d)| OutstandingTsn::first(t, d)).collect()
    }

    #[test]
    fn iopd_worked_example_both_holes_are_intra_path() {
        let mut s = example();
        // A SACK newly acks 12 and 13; cum = 9.
        s.on_sack(&[TsnDest::new(12, A), TsnDest::new(13, B)], &outstanding(&[(10, A), (11, B), (14, A)]));
        assert_eq!((s.dest(A).hacked, s.dest(B).hacked), (Some(12), Some(13)));
        assert_eq!((s.dest(A).low, s.dest(B).low), (Some(10), Some(11)));
        assert_eq!(s.classify(TsnDest::new(10, A)), Some(OosClass::Intra), "12 was sent later on A and arrived");
        assert_eq!(s.classify(TsnDest::new(11, B)), Some(OosClass::Intra));
    }

    #[test]
    fn iopd_worked_example_variant_only_a_acked_makes_b_inter_path() {
        let mut s = example();
        s.on_sack(&[TsnDest::new(12, A)], &outstanding(&[(10, A), (11, B), (13, B), (14, A)]));
        assert_eq!(s.dest(B).hacked, None);
        assert_eq!(s.classify(TsnDest::new(11, B)), Some(OosClass::Inter));
        assert_eq!(s.classify(TsnDest::new(10, A)), Some(OosClass::Intra));
    }

    fn window(low: Tsn, high: Tsn, hacked: Option<Tsn>) -> IopdDest {
        IopdDest { low: Some(low), high: Some(high), hacked }
    }

    #[test]
    fn classification_boundaries() {
        let p = window(20, 40, Some(30));
        assert_eq!(classify(&p, 20), Some(OosClass::Intra), "t = low is inside the window");
        assert_eq!(classify(&p, 29), Some(OosClass::Intra), "just below hacked");
        assert_eq!(classify(&p, 30), None, "t = hacked was acknowledged");
        assert_eq!(classify(&p, 31), Some(OosClass::Inter), "just above hacked");
        assert_eq!(classify(&p, 40), Some(OosClass::Inter), "t = high");
        assert_eq!(classify(&p, 19), None, "below low: not outstanding here");
        assert_eq!(classify(&p, 41), None, "above high: never sent here");
        assert_eq!(classify(&window(20, 40, None), 20), Some(OosClass::Inter), "nothing on the path acked yet");
        assert_eq!(classify(&window(20, 40, Some(5)), 20), Some(OosClass::Inter), "hacked below low");
        assert_eq!(classify(&IopdDest::default(), 20), None, "nothing outstanding");
    }

    #[test]
    fn classification_works_across_the_tsn_wrap() {
        let p = window(u32::MAX - 2, 3, Some(1));
        assert_eq!(classify(&p, u32::MAX), Some(OosClass::Intra));
        assert_eq!(classify(&p, 2), Some(OosClass::Inter));
    }

    #[test]
    fn a_reassigned_tsn_is_classified_against_its_new_destination() {
        // 10 (A) is re-sent on B, which has acked 13: B's window becomes
        // [10, 13], 10 lies below B's hacked, and A no longer holds 10.
        let mut s = example();
        s.on_sack(&[TsnDest::new(13, B)], &outstanding(&[(10, A), (11, B), (12, A), (14, A)]));
        s.on_send(TsnDest::new(10, B));
        s.research_low(&[
            OutstandingTsn::rtx(10, B),
            OutstandingTsn::first(11, B),
            OutstandingTsn::first(12, A),
            OutstandingTsn::first(14, A),
        ]);
        assert_eq!(s.dest(A).low, Some(12));
        assert_eq!(s.dest(B).low, Some(10));
        assert_eq!(s.classify(TsnDest::new(10, B)), Some(OosClass::Intra));
        assert_eq!(s.classify(TsnDest::new(10, A)), None, "no longer outstanding on A");
    }

    #[test]
    fn hacked_never_decreases() {
        let mut s = example();
        s.on_sack(&[TsnDest::new(14, A)], &outstanding(&[(10, A), (11, B), (12, A), (13, B)]));
        s.on_sack(&[TsnDest::new(12, A)], &outstanding(&[(10, A), (11, B), (13, B)]));
        assert_eq!(s.dest(A).hacked, Some(14));
    }
}
