//! SMT's multihomed congestion control (MCC; Khan & Qadir, "Inter-path OOS
//! packets differentiation based congestion control for simultaneous
//! multipath transmission", §3). Missing reports are counted as in plain
//! SCTP (RFC 4960 §7.2.4 HTNA, no split fast retransmit: IOPD itself tells
//! the causes apart). At the third report the TSN is classified by IOPD:
//! an intra-path loss is fast-retransmitted on the fastest path and its own
//! path's window is halved; an inter-path one is fast-retransmitted on the
//! fastest path with no window change, so that the hole blocking the shared
//! receive buffer is repaired without punishing a path that lost nothing.

use super::dac::{self, DacCount};
use super::iopd::{Iopd, OosClass};
use super::sfr::{reports_missing, MissingRule, MissingTsn, SackEvidence, DUP_THRESH};
use super::{DestIdx, DestState, Tsn, TsnDest};
use mpsim_core::SimTime;
use std::cmp::Reverse;

/// MCC's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MccConfig {
    /// Path MTU, bytes (the floor of a cut is 4·MTU).
    pub mtu_bytes: u64,
    /// Hold an inter-path retransmission while the TSN cannot be late yet
    /// (`now − sent_at < srtt + 4·rttvar` of its path). Off by default: the
    /// paper retransmits at once and accepts the duplicates.
    pub inter_path_guard: bool,
}

impl MccConfig {
    pub fn new(mtu_bytes: u64) -> Self {
        MccConfig { mtu_bytes, inter_path_guard: false }
    }
}

/// The fastest destination: the active one with the smallest smoothed RTT;
/// ties go to the larger cwnd, then the lower index. Destinations without
/// an RTT sample rank after every measured one (an unmeasured path is not
/// known to be fast).
pub fn fastest_dest(dests: &[DestState]) -> Option<DestIdx> {
    (0..dests.len())
        .filter(|&i| dests[i].active)
        .min_by_key(|&i| (dests[i].srtt.is_none(), dests[i].srtt, Reverse(dests[i].cwnd_bytes), i))
}

/// Missing reports this SACK adds to `t`: one under the HTNA rule, plus
/// CMT-DAC's extra report when DAC is on and `t` is intra-path (an
/// inter-path report is not loss evidence, so DAC's doubling does not
/// apply to it).
pub fn report_increment(ev: &SackEvidence, iopd: &Iopd, t: TsnDest, dac: Option<DacCount>) -> u32 {
    if !reports_missing(ev, MissingRule::Htna, t) {
        return 0;
    }
    let intra = iopd.classify(t) == Some(OosClass::Intra);
    1 + u32::from(intra && dac.is_some_and(|c| dac::extra_report(ev, c, t.tsn)))
}

/// What MCC decided for one TSN that reached the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MccAction {
    pub tsn: Tsn,
    /// Destination the TSN was outstanding on.
    pub from: DestIdx,
    pub class: OosClass,
    /// Where to fast-retransmit it now (the first retransmission may exceed
    /// the destination's cwnd, RFC 4960 §7.2.4 step 3). The association
    /// moves its flight accounting from `from` to here, calls
    /// `Iopd::on_send` and re-searches the trackers of `from`.
    pub rtx_dest: DestIdx,
    /// This action halved `from`'s window (false for inter-path, and for an
    /// intra-path loss on a destination already in fast recovery).
    pub window_cut: bool,
}

/// The inter-path guard: true while the TSN cannot be late yet, so that
/// the retransmission is held.
pub fn inter_path_guard_holds(now: SimTime, sent_at: SimTime, dest: &DestState) -> bool {
    let Some(srtt) = dest.srtt else {
        // No RTT sample: no basis to call the TSN early.
        return false;
    };
    now.saturating_since(sent_at) < srtt + dest.rttvar.saturating_mul(4)
}

/// MCC's reaction to TSN `t` of class `class` at the threshold. `exit_tsn`
/// is IOPD's `high` of `t`'s destination: the fast-recovery exit point.
pub fn react(t: TsnDest, class: OosClass, dests: &mut [DestState], exit_tsn: Tsn, mtu_bytes: u64) -> MccAction {
    // Degenerate case: with no other active path the repair stays on t's.
    let rtx_dest = fastest_dest(dests).unwrap_or(t.dest);
    let window_cut = match class {
        // Congestion loss on t's path: RFC 4960 §7.2.3 reduction, once per
        // window (Khan & Qadir §3, "halve CWnd").
        OosClass::Intra => dests[t.dest].enter_fast_recovery(exit_tsn, mtu_bytes),
        // Reordering across paths: no congestion signal, no cut.
        OosClass::Inter => false,
    };
    MccAction { tsn: t.tsn, from: t.dest, class, rtx_dest, window_cut }
}

/// One SACK under MCC: adds this SACK's reports to `missing` (the TSNs it
/// reports missing, counts updated in place) and reacts to each TSN that
/// has reached `DUP_THRESH` and was reported by this SACK. `iopd` must
/// already reflect this SACK (`Iopd::on_sack`). A TSN held by the
/// inter-path guard keeps its count and is reconsidered at its next report.
/// A TSN IOPD cannot place (inconsistent caller state) is treated as an
/// intra-path loss: the plain SCTP reaction is the safe one.
pub fn count_and_react(
    ev: &SackEvidence,
    iopd: &Iopd,
    dac: Option<DacCount>,
    missing: &mut [MissingTsn],
    dests: &mut [DestState],
    now: SimTime,
    cfg: MccConfig,
) -> Vec<MccAction> {
    let mut actions = Vec::new();
    for m in missing.iter_mut().filter(|m| !m.fast_retransmitted) {
        let inc = report_increment(ev, iopd, m.td(), dac);
        if inc == 0 {
            continue;
        }
        m.missing_reports += inc;
        if m.missing_reports < DUP_THRESH {
            continue;
        }
        // Khan & Qadir §3: classified when the threshold is reached.
        let class = iopd.classify(m.td()).unwrap_or(OosClass::Intra);
        if class == OosClass::Inter && cfg.inter_path_guard && inter_path_guard_holds(now, m.sent_at, &dests[m.dest]) {
            continue;
        }
        let exit_tsn = iopd.dest(m.dest).high.unwrap_or(m.tsn);
        actions.push(react(m.td(), class, dests, exit_tsn, cfg.mtu_bytes));
        m.fast_retransmitted = true;
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::super::cucv2::OutstandingTsn;
    use super::*;
    use mpsim_core::SimDuration;

    const A: DestIdx = 0;
    const B: DestIdx = 1;
    const MTU: u64 = 1500;

    fn dest(cwnd: u64, srtt_ms: u64) -> DestState {
        let mut d = DestState::new(cwnd, 200_000);
        d.srtt = Some(SimDuration::from_millis(srtt_ms));
        d.rttvar = SimDuration::from_millis(srtt_ms / 4);
        d.flight_bytes = cwnd;
        d
    }

    /// A fast (50 ms), B slow (100 ms), both with a 30 000-byte window.
    fn paths() -> Vec<DestState> {
        vec![dest(30_000, 50), dest(30_000, 100)]
    }

    fn tds(v: &[(Tsn, DestIdx)]) -> Vec<TsnDest> {
        v.iter().map(|&(t, d)| TsnDest::new(t, d)).collect()
    }

    fn outstanding(v: &[(Tsn, DestIdx)]) -> Vec<OutstandingTsn> {
        v.iter().map(|&(t, d)| OutstandingTsn::first(t, d)).collect()
    }

    /// The worked example "IOPD" with the sends that follow: A has 10, 12,
    /// 14, B 11, 13; later A sends 16, B 15.
    fn sent() -> Iopd {
        let mut s = Iopd::new(2);
        for (t, d) in [(10, A), (11, B), (12, A), (13, B), (14, A), (15, B), (16, A)] {
            s.on_send(TsnDest::new(t, d));
        }
        s
    }

    /// Feeds SACKs (each a list of newly acked TSNs) to MCC; returns the
    /// actions of every SACK.
    fn run(
        iopd: &mut Iopd,
        sacks: &[&[(Tsn, DestIdx)]],
        missing: &mut Vec<MissingTsn>,
        dests: &mut [DestState],
        all: &[(Tsn, DestIdx)],
    ) -> Vec<Vec<MccAction>> {
        let mut acked: Vec<Tsn> = Vec::new();
        let mut out = Vec::new();
        for sack in sacks {
            acked.extend(sack.iter().map(|&(t, _)| t));
            let left: Vec<(Tsn, DestIdx)> = all.iter().copied().filter(|(t, _)| !acked.contains(t)).collect();
            iopd.on_sack(&tds(sack), &outstanding(&left));
            let ev = SackEvidence::new(2, &tds(sack));
            missing.retain(|m| !acked.contains(&m.tsn));
            out.push(count_and_react(&ev, iopd, None, missing, dests, SimTime::ZERO, MccConfig::new(MTU)));
        }
        out
    }

    const ALL: [(Tsn, DestIdx); 7] = [(10, A), (11, B), (12, A), (13, B), (14, A), (15, B), (16, A)];

    #[test]
    fn intra_path_loss_is_resent_on_the_fastest_path_and_halves_its_own_window() {
        // The worked example: the SACK newly acking 12 and 13 makes 10 (A)
        // and 11 (B) intra-path; two more SACKs bring the third report.
        let mut iopd = sent();
        let mut missing = vec![MissingTsn::new(10, A), MissingTsn::new(11, B)];
        let mut ds = paths();
        let acts = run(&mut iopd, &[&[(12, A), (13, B)], &[(14, A)], &[(15, B)]], &mut missing, &mut ds, &ALL);
        assert!(acts[0].is_empty() && acts[1].is_empty());
        assert_eq!(missing.iter().map(|m| m.missing_reports).collect::<Vec<_>>(), [3, 3]);
        let want = vec![
            MccAction { tsn: 10, from: A, class: OosClass::Intra, rtx_dest: A, window_cut: true },
            MccAction { tsn: 11, from: B, class: OosClass::Intra, rtx_dest: A, window_cut: true },
        ];
        assert_eq!(acts[2], want);
        assert_eq!((ds[A].cwnd_bytes, ds[A].ssthresh_bytes), (15_000, 15_000));
        assert_eq!(ds[A].fast_recovery_exit, Some(16), "exit point = highest TSN sent on A");
        assert_eq!(ds[B].cwnd_bytes, 15_000);
    }

    #[test]
    fn inter_path_gap_is_resent_on_the_fastest_path_without_a_cut() {
        // The variant: only A's TSNs are acked; 11 (B) is never overtaken on B.
        let mut iopd = sent();
        let mut missing = vec![MissingTsn::new(11, B)];
        let mut ds = paths();
        let acts = run(&mut iopd, &[&[(12, A)], &[(14, A)], &[(16, A)]], &mut missing, &mut ds, &ALL);
        assert_eq!(acts[2], vec![MccAction { tsn: 11, from: B, class: OosClass::Inter, rtx_dest: A, window_cut: false }]);
        assert_eq!(ds, paths(), "no window or threshold changed");
        assert!(missing[0].fast_retransmitted);
    }

    #[test]
    fn mcc_counts_reports_that_sfr_would_suppress() {
        let mut iopd = sent();
        iopd.on_sack(&tds(&[(12, A)]), &outstanding(&[(10, A), (11, B), (13, B), (14, A)]));
        let ev = SackEvidence::new(2, &tds(&[(12, A)]));
        assert_eq!(report_increment(&ev, &iopd, TsnDest::new(11, B), None), 1);
        assert!(!reports_missing(&ev, MissingRule::Sfr(Default::default()), TsnDest::new(11, B)));
    }

    #[test]
    fn dac_extra_report_only_for_intra_path_reports() {
        let mut iopd = sent();
        iopd.on_sack(&tds(&[(12, A), (14, A)]), &outstanding(&[(10, A), (11, B), (13, B)]));
        let ev = SackEvidence::new(2, &tds(&[(12, A), (14, A)]));
        let two = Some(DacCount::Two);
        assert_eq!(report_increment(&ev, &iopd, TsnDest::new(10, A), two), 2, "intra-path");
        assert_eq!(report_increment(&ev, &iopd, TsnDest::new(11, B), two), 1, "inter-path");
        assert_eq!(report_increment(&ev, &iopd, TsnDest::new(13, B), two), 1, "13 is above 12: inter-path, single report");
    }

    #[test]
    fn a_second_intra_loss_in_the_same_window_does_not_cut_again() {
        let mut ds = paths();
        let first = react(TsnDest::new(10, B), OosClass::Intra, &mut ds, 20, MTU);
        let second = react(TsnDest::new(12, B), OosClass::Intra, &mut ds, 20, MTU);
        assert!(first.window_cut && !second.window_cut);
        assert_eq!(ds[B].cwnd_bytes, 15_000);
    }

    #[test]
    fn fastest_path_ties_go_to_the_larger_window_then_the_lower_index() {
        let mut ds = vec![dest(20_000, 80), dest(30_000, 40), dest(40_000, 40), dest(40_000, 40)];
        assert_eq!(fastest_dest(&ds), Some(2));
        ds[2].active = false;
        assert_eq!(fastest_dest(&ds), Some(3));
        ds[3].srtt = None;
        assert_eq!(fastest_dest(&ds), Some(1), "an unmeasured path is not the fastest");
        for d in &mut ds {
            d.active = false;
        }
        assert_eq!(fastest_dest(&ds), None);
    }

    #[test]
    fn single_path_mcc_is_plain_sctp_fast_retransmit() {
        let mut iopd = Iopd::new(1);
        for t in 1..=5 {
            iopd.on_send(TsnDest::new(t, A));
        }
        let mut ds = vec![dest(30_000, 50)];
        let mut missing = vec![MissingTsn::new(1, A)];
        let mut acts = Vec::new();
        for acked in 2..=4 {
            let left: Vec<(Tsn, DestIdx)> = [(1, A)].into_iter().chain(((acked + 1)..=5).map(|t| (t, A))).collect();
            iopd.on_sack(&tds(&[(acked, A)]), &outstanding(&left));
            let ev = SackEvidence::new(1, &tds(&[(acked, A)]));
            acts = count_and_react(&ev, &iopd, None, &mut missing, &mut ds, SimTime::ZERO, MccConfig::new(MTU));
        }
        assert_eq!(acts, vec![MccAction { tsn: 1, from: A, class: OosClass::Intra, rtx_dest: A, window_cut: true }]);
        assert_eq!(ds[A].cwnd_bytes, 15_000);
    }

    #[test]
    fn the_optional_guard_holds_an_inter_path_resend_until_the_tsn_can_be_late() {
        let mut iopd = sent();
        iopd.on_sack(&tds(&[(12, A)]), &outstanding(&[(10, A), (11, B), (13, B), (14, A)]));
        let ev = SackEvidence::new(2, &tds(&[(12, A)]));
        let cfg = MccConfig { inter_path_guard: true, ..MccConfig::new(MTU) };
        let mut ds = paths();
        // B: srtt 100 ms, rttvar 25 ms: 11 cannot be late before 200 ms.
        let mut m = vec![MissingTsn { missing_reports: 2, sent_at: SimTime::ZERO, ..MissingTsn::new(11, B) }];
        let early = SimTime::ZERO + SimDuration::from_millis(150);
        assert!(count_and_react(&ev, &iopd, None, &mut m, &mut ds, early, cfg).is_empty());
        assert_eq!(m[0].missing_reports, 3);
        assert!(!m[0].fast_retransmitted);
        let late = SimTime::ZERO + SimDuration::from_millis(200);
        let acts = count_and_react(&ev, &iopd, None, &mut m, &mut ds, late, cfg);
        assert_eq!(acts.len(), 1);
        assert_eq!(acts[0].class, OosClass::Inter);
    }
}
