//! Missing reports and fast-retransmit marking. Plain SCTP counts a report
//! for every TSN below the highest TSN newly acknowledged by the SACK
//! (RFC 4960 §7.2.4, the HTNA rule). CMT's split fast retransmit (SFR,
//! Iyengar, Amer, Stewart 2006) counts only evidence from the same
//! destination: a report for `t` needs a TSN sent later than `t` to `t`'s
//! destination to be acknowledged by this SACK. The association builds one
//! `SackEvidence` per SACK from the TSNs it newly acknowledged, then calls
//! `count_and_mark` with the TSNs the SACK reports missing.

use super::dac::{self, DacCount};
use super::{opt_tsn_max, opt_tsn_min, tsn_lt, DestIdx, DestState, Tsn, TsnDest};
use mpsim_core::SimTime;

/// Missing reports at which a TSN is marked for fast retransmission
/// (RFC 4960 §7.2.4; RFC 2960 used 4).
pub const DUP_THRESH: u32 = 3;

/// Which acknowledged TSNs of a destination count as "sent later" evidence
/// for SFR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SfrHighest {
    /// The highest TSN of the destination newly acknowledged by this SACK
    /// (FreeBSD `this_sack_highest_newack`); also implies HTNA.
    #[default]
    NewlyAcked,
    /// The highest TSN of the destination acknowledged by this SACK at all,
    /// newly or again (the paper's `highest_in_sack_for_dest`).
    AnyAcked,
}

/// How missing reports are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingRule {
    /// Plain SCTP (RFC 4960 §7.2.4) and SMT's MCC: any TSN below the
    /// highest newly acknowledged TSN.
    Htna,
    /// CMT's split fast retransmit.
    Sfr(SfrHighest),
}

/// What one SACK acknowledged, summarised per destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SackEvidence {
    saw_newack: Vec<bool>,
    highest_newack_for: Vec<Option<Tsn>>,
    highest_acked_for: Vec<Option<Tsn>>,
    highest_newack: Option<Tsn>,
    lowest_newack: Option<Tsn>,
}

impl SackEvidence {
    /// Evidence from `newly_acked`: the TSNs this SACK acknowledges for the
    /// first time (by the cumulative ack or a gap block), each with the
    /// destination it was last sent to. Destinations are `0..n_dests`.
    pub fn new(n_dests: usize, newly_acked: &[TsnDest]) -> Self {
        let mut ev = SackEvidence::default();
        ev.refill(n_dests, newly_acked);
        ev
    }

    /// As `new`, reusing this evidence's buffers (the association builds
    /// one per SACK).
    pub fn refill(&mut self, n_dests: usize, newly_acked: &[TsnDest]) {
        let ev = self;
        ev.saw_newack.clear();
        ev.saw_newack.resize(n_dests, false);
        ev.highest_newack_for.clear();
        ev.highest_newack_for.resize(n_dests, None);
        ev.highest_acked_for.clear();
        ev.highest_acked_for.resize(n_dests, None);
        ev.highest_newack = None;
        ev.lowest_newack = None;
        for t in newly_acked {
            // Iyengar et al. 2006: saw_newack and the per-destination
            // highest TSN newly acked.
            ev.saw_newack[t.dest] = true;
            ev.highest_newack_for[t.dest] = opt_tsn_max(ev.highest_newack_for[t.dest], t.tsn);
            ev.highest_acked_for[t.dest] = opt_tsn_max(ev.highest_acked_for[t.dest], t.tsn);
            ev.highest_newack = opt_tsn_max(ev.highest_newack, t.tsn);
            ev.lowest_newack = opt_tsn_min(ev.lowest_newack, t.tsn);
        }
    }

    /// Adds the TSNs this SACK's gap blocks cover that were acknowledged by
    /// an earlier SACK; they only matter for `SfrHighest::AnyAcked`.
    pub fn with_previously_acked(mut self, also_acked: &[TsnDest]) -> Self {
        for t in also_acked {
            self.highest_acked_for[t.dest] = opt_tsn_max(self.highest_acked_for[t.dest], t.tsn);
        }
        self
    }

    /// Some TSN last sent to `d` was newly acknowledged.
    pub fn saw_newack(&self, d: DestIdx) -> bool {
        self.saw_newack.get(d).copied().unwrap_or(false)
    }

    /// Highest TSN of `d` newly acknowledged by this SACK.
    pub fn highest_newack_for(&self, d: DestIdx) -> Option<Tsn> {
        self.highest_newack_for.get(d).copied().flatten()
    }

    /// Highest TSN of `d` acknowledged by this SACK, newly or again.
    pub fn highest_acked_for(&self, d: DestIdx) -> Option<Tsn> {
        self.highest_acked_for.get(d).copied().flatten()
    }

    /// Highest TSN newly acknowledged on any destination (RFC 4960 HTNA).
    pub fn highest_newack(&self) -> Option<Tsn> {
        self.highest_newack
    }

    /// Lowest TSN newly acknowledged on any destination (CMT-DAC).
    pub fn lowest_newack(&self) -> Option<Tsn> {
        self.lowest_newack
    }

    /// How many destinations had a TSN newly acknowledged (CMT-DAC's
    /// "mixed SACK" test).
    pub fn num_dests_newly_acked(&self) -> usize {
        self.saw_newack.iter().filter(|&&s| s).count()
    }
}

/// Whether this SACK gives the missing TSN `t` one missing report.
pub fn reports_missing(ev: &SackEvidence, rule: MissingRule, t: TsnDest) -> bool {
    let above_t = |h: Option<Tsn>| h.is_some_and(|h| tsn_lt(t.tsn, h));
    match rule {
        // RFC 4960 §7.2.4: only TSNs below the highest TSN newly acked.
        MissingRule::Htna => above_t(ev.highest_newack()),
        // Iyengar et al. 2006: a later TSN on the same destination
        // was acknowledged, and this SACK brought news for that destination.
        MissingRule::Sfr(SfrHighest::NewlyAcked) => ev.saw_newack(t.dest) && above_t(ev.highest_newack_for(t.dest)),
        MissingRule::Sfr(SfrHighest::AnyAcked) => ev.saw_newack(t.dest) && above_t(ev.highest_acked_for(t.dest)),
    }
}

/// The association's record of one TSN a SACK reports missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingTsn {
    pub tsn: Tsn,
    /// Destination the TSN is currently assigned to.
    pub dest: DestIdx,
    /// Missing reports so far (RFC 4960 §7.2.4).
    pub missing_reports: u32,
    /// Already fast-retransmitted once: later losses are left to T3-rtx
    /// (RFC 4960 §7.2.4 step 4).
    pub fast_retransmitted: bool,
    /// When the TSN was last sent (for SMT's optional inter-path guard).
    pub sent_at: SimTime,
}

impl MissingTsn {
    pub fn new(tsn: Tsn, dest: DestIdx) -> Self {
        MissingTsn { tsn, dest, missing_reports: 0, fast_retransmitted: false, sent_at: SimTime::ZERO }
    }

    pub fn td(&self) -> TsnDest {
        TsnDest::new(self.tsn, self.dest)
    }
}

/// What one SACK's counting decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FastRtxMarks {
    /// TSNs that reached `DUP_THRESH` with this SACK, in the order given:
    /// mark them for fast retransmission (destination: the RTX policy).
    pub marked: Vec<TsnDest>,
    /// Destinations (ascending, once each) whose window must be cut with
    /// `DestState::enter_fast_recovery`, exit point = the highest TSN
    /// outstanding on that destination: those of the marked TSNs not
    /// already in fast recovery. Cut before choosing the retransmission
    /// destination, so that policies see the reduced state.
    pub cut: Vec<DestIdx>,
}

/// One SACK's missing-report counting and marking for plain SCTP and CMT.
/// `missing` holds the outstanding TSNs this SACK reports missing (below
/// the highest TSN it acknowledges, neither cum- nor gap-acked); their
/// `missing_reports` are updated in place. `dac` is the SACK's DAC count
/// when CMT-DAC is on, `None` otherwise.
pub fn count_and_mark(
    ev: &SackEvidence,
    rule: MissingRule,
    dac: Option<DacCount>,
    missing: &mut [MissingTsn],
    dests: &[DestState],
) -> FastRtxMarks {
    let mut marks = FastRtxMarks::default();
    for m in missing.iter_mut().filter(|m| !m.fast_retransmitted) {
        if !reports_missing(ev, rule, m.td()) {
            continue;
        }
        m.missing_reports += 1;
        if dac.is_some_and(|c| dac::extra_report(ev, c, m.tsn)) {
            m.missing_reports += 1;
        }
        if m.missing_reports >= DUP_THRESH {
            marks.marked.push(m.td());
            let in_fr = dests.get(m.dest).is_some_and(DestState::in_fast_recovery);
            if !in_fr && !marks.cut.contains(&m.dest) {
                marks.cut.push(m.dest);
            }
        }
    }
    marks.cut.sort_unstable();
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: DestIdx = 0;
    const B: DestIdx = 1;

    fn tds(v: &[(Tsn, DestIdx)]) -> Vec<TsnDest> {
        v.iter().map(|&(t, d)| TsnDest::new(t, d)).collect()
    }

    fn dests(n: usize) -> Vec<DestState> {
        (0..n).map(|_| DestState::new(15_000, 100_000)).collect()
    }

    /// The SFR worked example: TSNs 1..6 sent
    /// 1→A, 2→B, 3→A, 4→B, 5→A, 6→A; a SACK with cum 1 newly acks 3, 5, 6.
    #[test]
    fn sfr_worked_example_gives_no_report_to_the_slow_path_until_it_acks() {
        let ev = SackEvidence::new(2, &tds(&[(3, A), (5, A), (6, A)]));
        assert!(ev.saw_newack(A) && !ev.saw_newack(B));
        assert_eq!(ev.highest_newack_for(A), Some(6));
        let mut missing = vec![MissingTsn::new(2, B), MissingTsn::new(4, B)];
        let sfr = MissingRule::Sfr(SfrHighest::NewlyAcked);
        let marks = count_and_mark(&ev, sfr, None, &mut missing, &dests(2));
        assert_eq!(missing.iter().map(|m| m.missing_reports).collect::<Vec<_>>(), [0, 0]);
        assert!(marks.marked.is_empty());
        // Plain SCTP would have counted one report for each.
        assert!(reports_missing(&ev, MissingRule::Htna, TsnDest::new(2, B)));
        assert!(reports_missing(&ev, MissingRule::Htna, TsnDest::new(4, B)));
        // The later SACK newly acks 4 (B) and still misses 2.
        let ev2 = SackEvidence::new(2, &tds(&[(4, B)]));
        assert!(ev2.saw_newack(B));
        assert_eq!(ev2.highest_newack_for(B), Some(4));
        let mut missing2 = vec![missing[0]];
        count_and_mark(&ev2, sfr, None, &mut missing2, &dests(2));
        assert_eq!(missing2[0].missing_reports, 1);
    }

    #[test]
    fn sfr_ignores_a_same_destination_ack_that_was_sent_earlier() {
        // 7 (A) is missing; this SACK newly acks 5 (A) and 9 (B): HTNA counts
        // a report, SFR does not (nothing later on A was acked).
        let ev = SackEvidence::new(2, &tds(&[(5, A), (9, B)]));
        let t = TsnDest::new(7, A);
        assert!(reports_missing(&ev, MissingRule::Htna, t));
        assert!(!reports_missing(&ev, MissingRule::Sfr(SfrHighest::NewlyAcked), t));
        assert!(!reports_missing(&ev, MissingRule::Sfr(SfrHighest::AnyAcked), t));
    }

    #[test]
    fn sfr_any_acked_reading_counts_a_previously_acked_later_tsn() {
        // 8 (A) was gap-acked before and is covered again; this SACK newly
        // acks 3 (A). Missing 6 (A): the newly-acked reading says no, the
        // any-acked reading says yes.
        let ev = SackEvidence::new(2, &tds(&[(3, A)])).with_previously_acked(&tds(&[(8, A)]));
        let t = TsnDest::new(6, A);
        assert!(!reports_missing(&ev, MissingRule::Sfr(SfrHighest::NewlyAcked), t));
        assert!(reports_missing(&ev, MissingRule::Sfr(SfrHighest::AnyAcked), t));
        // Without news for A, neither reading counts.
        let ev_b = SackEvidence::new(2, &tds(&[(9, B)])).with_previously_acked(&tds(&[(8, A)]));
        assert!(!reports_missing(&ev_b, MissingRule::Sfr(SfrHighest::AnyAcked), t));
    }

    #[test]
    fn third_report_marks_and_cuts_each_destination_once() {
        let ev = SackEvidence::new(2, &tds(&[(10, A), (11, B)]));
        let mut missing = vec![MissingTsn::new(2, A), MissingTsn::new(3, B), MissingTsn::new(4, A), MissingTsn::new(5, B)];
        for m in &mut missing {
            m.missing_reports = 2;
        }
        missing[3].missing_reports = 1;
        let mut ds = dests(2);
        ds[B].fast_recovery_exit = Some(8);
        let marks = count_and_mark(&ev, MissingRule::Sfr(SfrHighest::NewlyAcked), None, &mut missing, &ds);
        assert_eq!(marks.marked, tds(&[(2, A), (3, B), (4, A)]));
        assert_eq!(marks.cut, vec![A], "A cut once; B is already in fast recovery");
        assert_eq!(missing[3].missing_reports, 2);
    }

    #[test]
    fn a_tsn_is_fast_retransmitted_at_most_once() {
        let ev = SackEvidence::new(1, &tds(&[(9, A)]));
        let mut m = [MissingTsn::new(4, A)];
        m[0].missing_reports = 5;
        m[0].fast_retransmitted = true;
        let marks = count_and_mark(&ev, MissingRule::Htna, None, &mut m, &dests(1));
        assert!(marks.marked.is_empty() && marks.cut.is_empty());
    }

    #[test]
    fn htna_counts_nothing_above_the_highest_newly_acked_tsn() {
        let ev = SackEvidence::new(1, &tds(&[(6, A)]));
        assert!(reports_missing(&ev, MissingRule::Htna, TsnDest::new(5, A)));
        assert!(!reports_missing(&ev, MissingRule::Htna, TsnDest::new(7, A)));
        let empty = SackEvidence::new(1, &[]);
        assert!(!reports_missing(&empty, MissingRule::Htna, TsnDest::new(5, A)), "a SACK with no news counts nothing");
    }

    #[test]
    fn evidence_uses_serial_order_across_the_wrap() {
        let ev = SackEvidence::new(1, &tds(&[(u32::MAX, A), (1, A)]));
        assert_eq!(ev.highest_newack(), Some(1));
        assert_eq!(ev.lowest_newack(), Some(u32::MAX));
        assert!(reports_missing(&ev, MissingRule::Sfr(SfrHighest::NewlyAcked), TsnDest::new(0, A)));
    }
}
