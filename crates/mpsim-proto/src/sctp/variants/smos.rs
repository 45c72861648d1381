//! SMOS-like scheduling by predicted arrival (after Liao, Wang, Li, Zhu,
//! Zhang, "Sender-based multipath out-of-order scheduling for
//! high-definition videophone in multi-homed devices", IEEE Trans. Consumer
//! Electronics 56(3), 2010). Only the paper's summary is known: it splits a
//! block of packets over the paths in proportion to their rates and orders
//! the sends so that packets arrive in sequence, the slow path sending its
//! (lower) TSNs early and the fast path its (higher) TSNs later. This is a
//! reconstruction; results from it are "SMOS-like".
//!
//! Path model per destination `d`: one-way delay `D_d = srtt_d / 2`, rate
//! `B_d = cwnd_d / srtt_d`. A packet queued behind `q` bytes on `d` is
//! predicted to arrive at `now + q / B_d + D_d`.

use super::{DestIdx, DestState, TieBreak};
use mpsim_core::{SimDuration, SimTime};

/// The RTT assumed for a destination with no sample: the largest sample of
/// the other active destinations (an unmeasured path is assumed as slow as
/// the slowest known one, but still gets traffic and so gets measured), or
/// this when no destination has a sample (all paths then look alike and
/// the split follows cwnd alone). RFC 4960 §15's RTO.Initial.
pub const UNMEASURED_SRTT: SimDuration = SimDuration::from_secs(3);

/// The (srtt, cwnd) SMOS models destination `d` with; `None` when it cannot
/// carry data (inactive or a zero window).
fn model(dests: &[DestState], d: DestIdx) -> Option<(SimDuration, u64)> {
    let s = dests.get(d)?;
    if !s.active || s.cwnd_bytes == 0 {
        return None;
    }
    let srtt = s.srtt.or_else(|| dests.iter().filter(|o| o.active).filter_map(|o| o.srtt).max()).unwrap_or(UNMEASURED_SRTT);
    Some((srtt.max(SimDuration::from_ps(1)), s.cwnd_bytes))
}

/// Predicted arrival of a packet queued behind `queued_bytes` on a path of
/// smoothed RTT `srtt` and window `cwnd_bytes`: `now + queued·srtt/cwnd +
/// srtt/2`, to the picosecond (rounded down).
pub fn predicted_arrival(now: SimTime, queued_bytes: u64, srtt: SimDuration, cwnd_bytes: u64) -> SimTime {
    let wait_ps = queued_bytes as u128 * srtt.as_ps() as u128 / cwnd_bytes.max(1) as u128;
    now + SimDuration::from_ps(wait_ps.min(u64::MAX as u128) as u64) + SimDuration::from_ps(srtt.as_ps() / 2)
}

/// Predicted arrival on destination `d` (see `predicted_arrival`), with the
/// RTT of an unmeasured destination assumed as `UNMEASURED_SRTT` explains.
pub fn predicted_arrival_on(now: SimTime, queued_bytes: u64, dests: &[DestState], d: DestIdx) -> Option<SimTime> {
    model(dests, d).map(|(srtt, cwnd)| predicted_arrival(now, queued_bytes, srtt, cwnd))
}

/// The online choice: the destination where the next packet is predicted
/// to arrive first, given the bytes already queued on each destination and
/// not yet sent (`queued_bytes[d]`). Equal predictions go to `tie`.
pub fn choose_dest(now: SimTime, dests: &[DestState], queued_bytes: &[u64], tie: &mut TieBreak<'_>) -> Option<DestIdx> {
    let arrivals: Vec<(DestIdx, SimTime)> = (0..dests.len())
        .filter_map(|d| predicted_arrival_on(now, queued_bytes.get(d).copied().unwrap_or(0), dests, d).map(|a| (d, a)))
        .collect();
    let best = arrivals.iter().map(|&(_, a)| a).min()?;
    let tied: Vec<DestIdx> = arrivals.iter().filter(|&&(_, a)| a == best).map(|&(d, _)| d).collect();
    tie.pick(&tied)
}

/// Default trunk size: the packets the windows hold together,
/// `Σ cwnd_d / MTU`, at least one.
pub fn default_trunk_pkts(dests: &[DestState], mtu_bytes: u64) -> u32 {
    let total: u64 = (0..dests.len()).filter_map(|d| model(dests, d)).map(|(_, c)| c / mtu_bytes.max(1)).sum();
    total.clamp(1, u32::MAX as u64) as u32
}

/// The flow-level split of `n_pkts` over the destinations in proportion to
/// `B_d = cwnd_d / srtt_d`. `round(N·B_d/ΣB)` need not sum to N, so the
/// largest-remainder method is used: floors first, then one more packet to
/// the largest remainders (ties: larger rate, then lower index).
pub fn trunk_split(n_pkts: u32, dests: &[DestState]) -> Vec<u32> {
    let rates: Vec<f64> =
        (0..dests.len()).map(|d| model(dests, d).map_or(0.0, |(srtt, cwnd)| cwnd as f64 / srtt.as_secs_f64())).collect();
    let total: f64 = rates.iter().sum();
    if total <= 0.0 {
        return vec![0; dests.len()];
    }
    let shares: Vec<f64> = rates.iter().map(|r| n_pkts as f64 * r / total).collect();
    let mut split: Vec<u32> = shares.iter().map(|s| s.floor() as u32).collect();
    let left = n_pkts.saturating_sub(split.iter().sum());
    let mut order: Vec<DestIdx> = (0..dests.len()).filter(|&d| rates[d] > 0.0).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (shares[a] - shares[a].floor(), shares[b] - shares[b].floor());
        rb.total_cmp(&ra).then(rates[b].total_cmp(&rates[a])).then(a.cmp(&b))
    });
    for &d in order.iter().cycle().take(left as usize) {
        split[d] += 1;
    }
    split
}

/// One sending slot of a trunk: the `k`-th packet of destination `dest`,
/// predicted to arrive at `arrival`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub dest: DestIdx,
    pub k: u32,
    pub arrival: SimTime,
}

/// The trunk schedule: `n_pkts` consecutive TSNs `s_1 < … < s_N` are given
/// to the slots in order of predicted arrival (the earliest arrival gets
/// the lowest TSN). Element `i` of the result is the slot of `s_{i+1}`;
/// each destination sends its slots in `k` order as its window opens.
/// Slot `k` on `d` departs at `now + k·MTU/B_d` and arrives `D_d` later.
/// Slots whose arrivals lie within `eps` of the earliest remaining one are
/// tied: `TieBreak::LowestIndex` takes the lowest destination index,
/// `TieBreak::Random` draws with probability proportional to `B_d` (the
/// paper's packet-level probabilistic scheduling).
pub fn plan_trunk(
    now: SimTime,
    n_pkts: u32,
    dests: &[DestState],
    mtu_bytes: u64,
    eps: SimDuration,
    tie: &mut TieBreak<'_>,
) -> Vec<Slot> {
    plan_trunk_behind(now, n_pkts, dests, &vec![0; dests.len()], mtu_bytes, eps, tie)
}

/// `plan_trunk` for a trunk whose slots on destination `d` queue behind
/// `queued_bytes[d]` (the previous trunk's slots not yet sent there).
pub fn plan_trunk_behind(
    now: SimTime,
    n_pkts: u32,
    dests: &[DestState],
    queued_bytes: &[u64],
    mtu_bytes: u64,
    eps: SimDuration,
    tie: &mut TieBreak<'_>,
) -> Vec<Slot> {
    let quota = trunk_split(n_pkts, dests);
    let mut next_k = vec![0u32; dests.len()];
    let mut plan = Vec::with_capacity(n_pkts as usize);
    while plan.len() < n_pkts as usize {
        let heads: Vec<Slot> = (0..dests.len())
            .filter(|&d| next_k[d] < quota[d])
            .filter_map(|d| {
                let q = queued_bytes.get(d).copied().unwrap_or(0) + next_k[d] as u64 * mtu_bytes;
                predicted_arrival_on(now, q, dests, d).map(|arrival| Slot { dest: d, k: next_k[d], arrival })
            })
            .collect();
        let Some(earliest) = heads.iter().map(|s| s.arrival).min() else {
            break;
        };
        let tied: Vec<Slot> = heads.into_iter().filter(|s| s.arrival <= earliest + eps).collect();
        let slot = pick_slot(&tied, dests, tie);
        next_k[slot.dest] += 1;
        plan.push(slot);
    }
    plan
}

fn pick_slot(tied: &[Slot], dests: &[DestState], tie: &mut TieBreak<'_>) -> Slot {
    let first = tied[0];
    let TieBreak::Random(rng) = tie else {
        return first;
    };
    let rates: Vec<f64> =
        tied.iter().map(|s| model(dests, s.dest).map_or(0.0, |(srtt, cwnd)| cwnd as f64 / srtt.as_secs_f64())).collect();
    let mut x = rng.next_f64() * rates.iter().sum::<f64>();
    for (s, r) in tied.iter().zip(&rates) {
        if x < *r {
            return *s;
        }
        x -= r;
    }
    tied[tied.len() - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::SimRng;

    const MTU: u64 = 1500;

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }

    fn at(v: u64) -> SimTime {
        SimTime::ZERO + ms(v)
    }

    fn dest(cwnd: u64, srtt_ms: u64) -> DestState {
        let mut d = DestState::new(cwnd, 100_000);
        d.srtt = Some(ms(srtt_ms));
        d
    }

    #[test]
    fn arrival_is_now_plus_queue_drain_plus_one_way_delay() {
        // cwnd 15 000 B over srtt 100 ms: 150 000 B/s. 3000 B queued drain
        // in 20 ms; one-way delay 50 ms.
        assert_eq!(predicted_arrival(at(1000), 3000, ms(100), 15_000), at(1070));
        assert_eq!(predicted_arrival(at(0), 0, ms(90), 1), at(45), "an empty queue leaves now");
    }

    #[test]
    fn the_choice_trades_queueing_against_delay() {
        // A: 20 ms RTT, 15 000 B window (750 kB/s); B: 200 ms, 15 000 B
        // (75 kB/s).
        let ds = vec![dest(15_000, 20), dest(15_000, 200)];
        let mut tie = TieBreak::LowestIndex;
        assert_eq!(choose_dest(at(0), &ds, &[0, 0], &mut tie), Some(0));
        // 75 000 B queued on A drain in 100 ms: arrival 110 ms > B's 100 ms.
        assert_eq!(predicted_arrival_on(at(0), 75_000, &ds, 0), Some(at(110)));
        assert_eq!(choose_dest(at(0), &ds, &[75_000, 0], &mut tie), Some(1));
        // 67 500 B: A arrives at 100 ms, a tie with B; the lower index wins.
        assert_eq!(choose_dest(at(0), &ds, &[67_500, 0], &mut tie), Some(0));
    }

    #[test]
    fn inactive_and_closed_destinations_are_not_chosen() {
        let mut ds = vec![dest(15_000, 20), dest(15_000, 200), dest(0, 5)];
        ds[0].active = false;
        assert_eq!(choose_dest(at(0), &ds, &[0, 0, 0], &mut TieBreak::LowestIndex), Some(1));
        ds[1].active = false;
        assert_eq!(choose_dest(at(0), &ds, &[0, 0, 0], &mut TieBreak::LowestIndex), None);
    }

    #[test]
    fn an_unmeasured_destination_is_assumed_as_slow_as_the_slowest_measured() {
        let mut ds = vec![dest(15_000, 20), dest(15_000, 200), dest(15_000, 1)];
        ds[2].srtt = None;
        assert_eq!(predicted_arrival_on(at(0), 0, &ds, 2), Some(at(100)));
        for d in &mut ds {
            d.srtt = None;
        }
        assert_eq!(predicted_arrival_on(at(0), 0, &ds, 0), Some(at(1500)));
        assert_eq!(trunk_split(6, &ds), vec![2, 2, 2], "all alike: split by cwnd");
    }

    #[test]
    fn split_is_proportional_to_rate_and_sums_to_the_trunk() {
        // Rates 750, 75, 150 kB/s: shares of 11 are 8.46, 0.85, 1.69.
        let ds = vec![dest(15_000, 20), dest(15_000, 200), dest(15_000, 100)];
        assert_eq!(trunk_split(11, &ds), vec![8, 1, 2]);
        assert_eq!(trunk_split(0, &ds), vec![0, 0, 0]);
        let sum: u32 = trunk_split(97, &ds).iter().sum();
        assert_eq!(sum, 97);
        assert_eq!(default_trunk_pkts(&ds, MTU), 30);
    }

    #[test]
    fn the_slow_path_gets_a_high_tsn_it_sends_first() {
        // A: 20 ms, 30 000 B (1.5 MB/s, 1 ms per packet, one-way 10 ms);
        // B: 200 ms, 30 000 B (150 kB/s, 10 ms per packet, one-way 100 ms).
        // Trunk of 11: A 10 packets, B 1. A's slots arrive at 10..19 ms,
        // B's only slot at 100 ms: the lowest ten TSNs go to A and the
        // eleventh to B, which sends it at once, ahead of A's later slots.
        let ds = vec![dest(30_000, 20), dest(30_000, 200)];
        let plan = plan_trunk(at(0), 11, &ds, MTU, SimDuration::ZERO, &mut TieBreak::LowestIndex);
        let dests: Vec<DestIdx> = plan.iter().map(|s| s.dest).collect();
        assert_eq!(dests, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(plan[0].arrival, at(10));
        assert_eq!(plan[9].arrival, at(19));
        assert_eq!(plan[10], Slot { dest: 1, k: 0, arrival: at(100) });
        assert!(plan.windows(2).all(|w| w[0].arrival <= w[1].arrival), "TSN order = arrival order");
    }

    #[test]
    fn a_trunk_queued_behind_earlier_slots_arrives_after_them() {
        // Equal paths, but 3000 B of the last trunk still wait on A: B's
        // slots arrive first, so they take the lowest TSNs.
        let ds = vec![dest(15_000, 100), dest(15_000, 100)];
        let plan = plan_trunk_behind(at(0), 4, &ds, &[3000, 0], MTU, SimDuration::ZERO, &mut TieBreak::LowestIndex);
        let got: Vec<(DestIdx, u32)> = plan.iter().map(|s| (s.dest, s.k)).collect();
        assert_eq!(got, [(1, 0), (1, 1), (0, 0), (0, 1)]);
    }

    #[test]
    fn plan_interleaves_equal_paths_and_breaks_exact_ties_by_index() {
        let ds = vec![dest(15_000, 100), dest(15_000, 100)];
        let plan = plan_trunk(at(0), 4, &ds, MTU, SimDuration::ZERO, &mut TieBreak::LowestIndex);
        let got: Vec<(DestIdx, u32)> = plan.iter().map(|s| (s.dest, s.k)).collect();
        assert_eq!(got, [(0, 0), (1, 0), (0, 1), (1, 1)]);
    }

    #[test]
    fn probabilistic_ties_favour_the_faster_rate() {
        // Equal delays; A has four times B's window. With a wide epsilon
        // every head is tied, and A should take the first TSN about 80 % of
        // the time.
        let ds = vec![dest(60_000, 100), dest(15_000, 100)];
        let mut rng = SimRng::new(3, 4);
        let mut first_on_a = 0;
        for _ in 0..1000 {
            let plan = plan_trunk(at(0), 5, &ds, MTU, ms(1000), &mut TieBreak::Random(&mut rng));
            assert_eq!(plan.len(), 5);
            first_on_a += u32::from(plan[0].dest == 0);
        }
        assert!((740..=860).contains(&first_on_a), "{first_on_a}");
    }
}
