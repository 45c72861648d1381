//! The decision rules driven together by a miniature sender and receiver:
//! TSNs striped over FIFO paths of different one-way delays, some lost, a
//! SACK per arriving packet returned over the path the packet came on, the
//! sender applying each SACK in arrival order. Properties that follow from
//! the mechanisms' definitions, over random stripings, delays and losses.

use super::cucv2::OutstandingTsn;
use super::iopd::{Iopd, OosClass};
use super::mcc::{self, MccAction, MccConfig};
use super::sfr::{self, MissingRule, MissingTsn, SackEvidence, SfrHighest};
use super::{DestIdx, DestState, Tsn, TsnDest};
use mpsim_core::{SimDuration, SimTime};
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const MTU: u64 = 1500;

/// A scenario: TSN `i + 1` is sent at `i` ms on path `assign[i]`; it is
/// lost when `lost[i]`.
#[derive(Clone, Debug)]
struct Scenario {
    delays_ms: Vec<u64>,
    assign: Vec<DestIdx>,
    lost: Vec<bool>,
}

#[derive(Default)]
struct Outcome {
    /// Missing reports SFR counted per TSN (index = TSN − 1).
    sfr_reports: Vec<u32>,
    /// Missing reports plain SCTP (HTNA) counted per TSN.
    htna_reports: Vec<u32>,
    mcc_actions: Vec<MccAction>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The receiver gets TSN `.0` (1-based).
    Arrive(Tsn),
    /// The sender gets a SACK: cum ack and the TSNs received above it.
    Sack(Tsn, Vec<Tsn>),
}

fn tsn_dest(s: &Scenario, t: Tsn) -> DestIdx {
    s.assign[(t - 1) as usize]
}

fn run(s: &Scenario) -> Outcome {
    let n = s.assign.len();
    let n_dests = s.delays_ms.len();
    let mut q: BinaryHeap<Reverse<(u64, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut iopd = Iopd::new(n_dests);
    for i in 0..n {
        let t = i as Tsn + 1;
        iopd.on_send(TsnDest::new(t, s.assign[i]));
        if !s.lost[i] {
            q.push(Reverse((i as u64 + s.delays_ms[s.assign[i]], seq, Ev::Arrive(t))));
            seq += 1;
        }
    }
    // IOPD learns every send up front: a send only widens a destination's
    // [low, high] window, which bounds the classification but never
    // decides it, and a SACK only names TSNs sent before it.
    let mut received = vec![false; n + 1];
    let mut acked = vec![false; n + 1];
    let mut sfr_m: Vec<MissingTsn> = (1..=n).map(|t| MissingTsn::new(t as Tsn, s.assign[t - 1])).collect();
    let mut htna_m = sfr_m.clone();
    let mut mcc_m = sfr_m.clone();
    let sfr_dests = vec![DestState::new(60_000, 600_000); n_dests];
    let mut mcc_dests: Vec<DestState> = (0..n_dests)
        .map(|d| DestState { srtt: Some(SimDuration::from_millis(2 * s.delays_ms[d])), ..DestState::new(60_000, 600_000) })
        .collect();
    let mut out = Outcome::default();
    while let Some(Reverse((now_ms, _, ev))) = q.pop() {
        match ev {
            Ev::Arrive(t) => {
                received[t as usize] = true;
                let cum = (1..=n).take_while(|&i| received[i]).count() as Tsn;
                let above: Vec<Tsn> = ((cum as usize + 1)..=n).filter(|&i| received[i]).map(|i| i as Tsn).collect();
                let back_ms = now_ms + s.delays_ms[tsn_dest(s, t)];
                q.push(Reverse((back_ms, seq, Ev::Sack(cum, above))));
                seq += 1;
            }
            Ev::Sack(cum, above) => {
                let in_sack: Vec<Tsn> = (1..=cum).chain(above.iter().copied()).collect();
                let newly: Vec<TsnDest> =
                    in_sack.iter().filter(|&&t| !acked[t as usize]).map(|&t| TsnDest::new(t, tsn_dest(s, t))).collect();
                for t in &newly {
                    acked[t.tsn as usize] = true;
                }
                let highest = in_sack.iter().copied().max().unwrap_or(0);
                let missing: Vec<usize> = (1..highest as usize).filter(|&t| !acked[t]).collect();
                let outstanding: Vec<OutstandingTsn> =
                    (1..=n).filter(|&t| !acked[t]).map(|t| OutstandingTsn::first(t as Tsn, s.assign[t - 1])).collect();
                iopd.on_sack(&newly, &outstanding);
                let ev = SackEvidence::new(n_dests, &newly);
                let now = SimTime::ZERO + SimDuration::from_millis(now_ms);
                apply(&missing, &mut sfr_m, |m| {
                    sfr::count_and_mark(&ev, MissingRule::Sfr(SfrHighest::NewlyAcked), None, m, &sfr_dests);
                });
                apply(&missing, &mut htna_m, |m| {
                    sfr::count_and_mark(&ev, MissingRule::Htna, None, m, &sfr_dests);
                });
                apply(&missing, &mut mcc_m, |m| {
                    let acts = mcc::count_and_react(&ev, &iopd, None, m, &mut mcc_dests, now, MccConfig::new(MTU));
                    out.mcc_actions.extend(acts);
                });
            }
        }
    }
    out.sfr_reports = sfr_m.iter().map(|m| m.missing_reports).collect();
    out.htna_reports = htna_m.iter().map(|m| m.missing_reports).collect();
    out
}

/// Runs `f` on the records of the `missing` TSNs and writes them back.
fn apply(missing: &[usize], records: &mut [MissingTsn], f: impl FnOnce(&mut [MissingTsn])) {
    let mut batch: Vec<MissingTsn> = missing.iter().map(|&t| records[t - 1]).collect();
    f(&mut batch);
    for m in batch {
        records[m.tsn as usize - 1] = m;
    }
}

fn scenario(max_dests: usize, loss: bool) -> impl Strategy<Value = Scenario> {
    (1..=max_dests, 4usize..48).prop_flat_map(move |(n_dests, n)| {
        let lost = if loss { prop::collection::vec(prop::bool::weighted(0.15), n).boxed() } else { Just(vec![false; n]).boxed() };
        (prop::collection::vec(1u64..120, n_dests), prop::collection::vec(0..n_dests, n), lost)
            .prop_map(|(delays_ms, assign, lost)| Scenario { delays_ms, assign, lost })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Without loss, reordering comes only from the delay difference
    /// between paths: SFR never counts a report, and whatever MCC resends
    /// it classifies as inter-path and never cuts a window for.
    #[test]
    fn no_loss_means_no_sfr_report_and_no_intra_path_class(s in scenario(3, false)) {
        let out = run(&s);
        prop_assert!(out.sfr_reports.iter().all(|&r| r == 0), "{:?}", out.sfr_reports);
        for a in &out.mcc_actions {
            prop_assert_eq!(a.class, OosClass::Inter);
            prop_assert!(!a.window_cut);
        }
    }

    /// An intra-path classification is never a false congestion signal:
    /// on FIFO paths it is only ever made for a TSN that was really lost.
    #[test]
    fn intra_path_is_only_ever_a_real_loss(s in scenario(3, true)) {
        let out = run(&s);
        for a in out.mcc_actions.iter().filter(|a| a.class == OosClass::Intra) {
            prop_assert!(s.lost[(a.tsn - 1) as usize], "TSN {} classified intra-path but delivered", a.tsn);
        }
    }

    /// On one path every out-of-sequence report is intra-path, and SFR
    /// counts exactly what plain SCTP counts.
    #[test]
    fn single_path_is_plain_sctp(s in scenario(1, true)) {
        let out = run(&s);
        prop_assert_eq!(&out.sfr_reports, &out.htna_reports);
        for a in &out.mcc_actions {
            prop_assert_eq!(a.class, OosClass::Intra);
            prop_assert!(s.lost[(a.tsn - 1) as usize]);
        }
    }

    /// SFR never counts more than plain SCTP: it only removes reports.
    #[test]
    fn sfr_counts_a_subset_of_htna(s in scenario(3, true)) {
        let out = run(&s);
        for (sfr, htna) in out.sfr_reports.iter().zip(&out.htna_reports) {
            prop_assert!(sfr <= htna);
        }
    }
}

#[test]
fn a_slow_path_reorders_without_loss_and_mcc_resends_without_a_cut() {
    // Path 0: 5 ms, path 1: 100 ms; odd TSNs on the fast path.
    let n = 20;
    let s = Scenario {
        delays_ms: vec![5, 100],
        assign: (0..n).map(|i| if i % 2 == 0 { 0 } else { 1 }).collect(),
        lost: vec![false; n],
    };
    let out = run(&s);
    assert!(out.htna_reports.iter().any(|&r| r >= 3), "plain SCTP would fast-retransmit spuriously");
    assert!(out.sfr_reports.iter().all(|&r| r == 0));
    assert!(!out.mcc_actions.is_empty());
    assert!(out.mcc_actions.iter().all(|a| a.class == OosClass::Inter && a.rtx_dest == 0 && !a.window_cut));
}

#[test]
fn a_loss_on_the_fast_path_is_intra_path_and_cuts_that_path() {
    let n = 20;
    let mut lost = vec![false; n];
    lost[2] = true; // TSN 3, on the fast path
    let s = Scenario { delays_ms: vec![5, 100], assign: (0..n).map(|i| if i % 2 == 0 { 0 } else { 1 }).collect(), lost };
    let out = run(&s);
    let on_3: Vec<&MccAction> = out.mcc_actions.iter().filter(|a| a.tsn == 3).collect();
    assert_eq!(on_3.len(), 1);
    assert_eq!((on_3[0].class, on_3[0].from, on_3[0].rtx_dest, on_3[0].window_cut), (OosClass::Intra, 0, 0, true));
    assert!(out.sfr_reports[2] >= 3, "SFR sees the loss too");
}
