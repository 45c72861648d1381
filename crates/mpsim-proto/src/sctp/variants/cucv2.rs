//! Cwnd Update for CMT (CUC; Iyengar, Amer, Stewart 2006) and its
//! second version (CUCv2, FreeBSD's `rtx_pseudo_cumack`). Under CMT the
//! cumulative ack advances only when the slowest path delivers, so a
//! destination may also grow its window when its own oldest outstanding TSN
//! is acknowledged: a "pseudo-cumack". CUCv2 keeps a second tracker for the
//! oldest retransmission assigned to the destination, because a destination
//! whose oldest outstanding TSN is a retransmission would otherwise never
//! see a new pseudo-cumack.
//!
//! `PseudoCumacks` is taken from the outstanding TSNs before a SACK is
//! applied (what FreeBSD's tracker holds when the SACK walk reaches the
//! acked TSNs); `grow_cwnd` is RFC 4960 §7.2.1/§7.2.2 gated by CUC.

use super::{opt_tsn_min, DestIdx, DestState, Tsn, TsnDest};

/// One TSN outstanding (sent, neither cum- nor gap-acked, not waiting for
/// a retransmission) on destination `dest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutstandingTsn {
    pub tsn: Tsn,
    pub dest: DestIdx,
    /// Sent more than once (its current destination holds a retransmission).
    pub retransmitted: bool,
}

impl OutstandingTsn {
    pub fn first(tsn: Tsn, dest: DestIdx) -> Self {
        OutstandingTsn { tsn, dest, retransmitted: false }
    }

    pub fn rtx(tsn: Tsn, dest: DestIdx) -> Self {
        OutstandingTsn { tsn, dest, retransmitted: true }
    }
}

/// CUC (one tracker) or CUCv2 (two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CucVersion {
    V1,
    #[default]
    V2,
}

/// The pseudo-cumack trackers of every destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PseudoCumacks {
    pcum: Vec<Option<Tsn>>,
    rtx_pcum: Vec<Option<Tsn>>,
}

impl PseudoCumacks {
    /// The trackers for the outstanding TSNs (any order): per destination,
    /// the lowest outstanding first transmission and the lowest outstanding
    /// retransmission. Taking them afresh each SACK is the "re-search"
    /// FreeBSD does when a tracker is acked or its TSN moves away.
    pub fn from_outstanding(n_dests: usize, outstanding: &[OutstandingTsn]) -> Self {
        let mut p = PseudoCumacks { pcum: vec![None; n_dests], rtx_pcum: vec![None; n_dests] };
        for o in outstanding {
            let slot = if o.retransmitted { &mut p.rtx_pcum[o.dest] } else { &mut p.pcum[o.dest] };
            *slot = opt_tsn_min(*slot, o.tsn);
        }
        p
    }

    /// Trackers for `n_dests` destinations with nothing outstanding; the
    /// association fills them with `set` from the outstanding TSNs it keeps
    /// indexed, instead of listing every outstanding TSN on each SACK.
    pub fn new(n_dests: usize) -> Self {
        PseudoCumacks { pcum: vec![None; n_dests], rtx_pcum: vec![None; n_dests] }
    }

    /// Destination `d`'s lowest outstanding first transmission and lowest
    /// outstanding retransmission.
    pub fn set(&mut self, d: DestIdx, pcum: Option<Tsn>, rtx_pcum: Option<Tsn>) {
        self.pcum[d] = pcum;
        self.rtx_pcum[d] = rtx_pcum;
    }

    /// Acknowledging `t` (with its current destination) is a new
    /// pseudo-cumack for `t.dest`.
    pub fn is_new_pseudo_cumack(&self, t: TsnDest, version: CucVersion) -> bool {
        let first = self.pcum(t.dest) == Some(t.tsn);
        // CUCv2: acking the oldest retransmission also counts.
        let rtx = version == CucVersion::V2 && self.rtx_pcum(t.dest) == Some(t.tsn);
        first || rtx
    }

    /// Lowest outstanding first transmission on `d`.
    pub fn pcum(&self, d: DestIdx) -> Option<Tsn> {
        self.pcum.get(d).copied().flatten()
    }

    /// Lowest outstanding retransmission assigned to `d`.
    pub fn rtx_pcum(&self, d: DestIdx) -> Option<Tsn> {
        self.rtx_pcum.get(d).copied().flatten()
    }

    /// Per destination: this SACK, which newly acked `newly_acked` (each
    /// with its current destination), gave it a new pseudo-cumack.
    pub fn new_pseudo_cumacks(&self, newly_acked: &[TsnDest], version: CucVersion) -> Vec<bool> {
        let mut got = vec![false; self.pcum.len()];
        for t in newly_acked {
            if self.is_new_pseudo_cumack(*t, version) {
                got[t.dest] = true;
            }
        }
        got
    }
}

/// How a destination's window changed on a SACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndChange {
    /// Not allowed to grow (no cum/pseudo-cum progress, fast recovery, or
    /// the window was not fully used).
    None,
    /// Slow start added this many bytes.
    SlowStart(u64),
    /// Congestion avoidance added this many bytes (one MTU).
    CongestionAvoidance(u64),
}

/// The SACK facts `grow_cwnd` needs for one destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowthInput {
    /// Bytes of TSNs last sent to this destination newly acknowledged by
    /// this SACK, cum and gap.
    pub newly_acked_bytes: u64,
    /// The SACK advanced the cumulative TSN ack point.
    pub cum_advanced: bool,
    /// The destination got a new pseudo-cumack (either tracker).
    pub new_pseudo_cumack: bool,
}

/// The per-destination window increase of RFC 4960 §7.2.1/§7.2.2 under
/// CUC (Iyengar et al. 2006): allowed iff the cumulative ack point
/// advanced or the destination got a new pseudo-cumack, and the destination
/// is not in fast recovery. Call once per destination per SACK, after
/// `dest.flight_bytes` has dropped by what the SACK acknowledged.
pub fn grow_cwnd(dest: &mut DestState, input: GrowthInput, mtu_bytes: u64) -> CwndChange {
    let change = increase(dest, input, mtu_bytes);
    if dest.flight_bytes == 0 {
        // RFC 4960 §7.2.2: all data on the destination acknowledged.
        dest.pba_bytes = 0;
    }
    change
}

fn increase(dest: &mut DestState, input: GrowthInput, mtu_bytes: u64) -> CwndChange {
    let progress = input.cum_advanced || input.new_pseudo_cumack;
    if !progress || dest.in_fast_recovery() || input.newly_acked_bytes == 0 {
        return CwndChange::None;
    }
    // RFC 4960 §7.2.1/§7.2.2: "before the arrival of the SACK" the window
    // was fully used; flight_bytes is already net of this SACK.
    let fully_used = dest.flight_bytes + input.newly_acked_bytes >= dest.cwnd_bytes;
    if dest.cwnd_bytes <= dest.ssthresh_bytes {
        if !fully_used {
            return CwndChange::None;
        }
        // RFC 4960 §7.2.1: at most one MTU per SACK.
        let inc = input.newly_acked_bytes.min(mtu_bytes);
        dest.cwnd_bytes += inc;
        return CwndChange::SlowStart(inc);
    }
    // RFC 4960 §7.2.2: partial_bytes_acked accrues every newly acked byte.
    dest.pba_bytes += input.newly_acked_bytes;
    if dest.pba_bytes > dest.cwnd_bytes && !fully_used {
        // An under-used window earns no more than one window of credit
        // (Linux sctp_transport_raise_cwnd()).
        dest.pba_bytes = dest.cwnd_bytes;
    }
    if dest.pba_bytes >= dest.cwnd_bytes && fully_used {
        // Subtract the window the bytes were counted against, then grow
        // (Linux sctp_transport_raise_cwnd() order).
        dest.pba_bytes -= dest.cwnd_bytes;
        dest.cwnd_bytes += mtu_bytes;
        return CwndChange::CongestionAvoidance(mtu_bytes);
    }
    CwndChange::None
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: DestIdx = 0;
    const B: DestIdx = 1;
    const MTU: u64 = 1500;

    fn full(cwnd: u64, ssthresh: u64) -> DestState {
        let mut d = DestState::new(cwnd, ssthresh);
        d.flight_bytes = cwnd;
        d
    }

    #[test]
    fn pseudo_cumack_is_the_lowest_outstanding_tsn_per_destination() {
        let out = [OutstandingTsn::first(3, A), OutstandingTsn::first(2, B), OutstandingTsn::first(1, A)];
        let p = PseudoCumacks::from_outstanding(2, &out);
        assert_eq!((p.pcum(A), p.pcum(B)), (Some(1), Some(2)));
        let got = p.new_pseudo_cumacks(&[TsnDest::new(3, A), TsnDest::new(2, B)], CucVersion::V2);
        assert_eq!(got, vec![false, true], "3 is not A's oldest; 2 is B's");
    }

    #[test]
    fn cucv2_counts_the_oldest_retransmission_cuc_does_not() {
        // TSN 1 was sent on A, lost, and retransmitted on B; B's oldest
        // outstanding TSN is that retransmission, its first transmissions
        // start at 6.
        let out = [OutstandingTsn::rtx(1, B), OutstandingTsn::first(6, B), OutstandingTsn::first(5, A)];
        let p = PseudoCumacks::from_outstanding(2, &out);
        assert_eq!((p.pcum(B), p.rtx_pcum(B)), (Some(6), Some(1)));
        let acked = [TsnDest::new(1, B)];
        assert_eq!(p.new_pseudo_cumacks(&acked, CucVersion::V2), vec![false, true]);
        assert_eq!(p.new_pseudo_cumacks(&acked, CucVersion::V1), vec![false, false]);
    }

    #[test]
    fn reassigning_a_tsn_moves_it_between_trackers() {
        // Before: 4 is A's oldest. After 4 is re-assigned to B for
        // retransmission, A's tracker is 7 and B's retransmission tracker 4.
        let before = PseudoCumacks::from_outstanding(2, &[OutstandingTsn::first(4, A), OutstandingTsn::first(7, A)]);
        assert_eq!(before.pcum(A), Some(4));
        let after = PseudoCumacks::from_outstanding(2, &[OutstandingTsn::rtx(4, B), OutstandingTsn::first(7, A)]);
        assert_eq!((after.pcum(A), after.rtx_pcum(B), after.pcum(B)), (Some(7), Some(4), None));
    }

    #[test]
    fn a_path_grows_during_a_recovery_on_another_path() {
        // A is in fast recovery with the cum ack stuck behind its hole; B's
        // pseudo-cumack is acked: B grows, A does not.
        let mut a = full(6000, 6000);
        a.fast_recovery_exit = Some(20);
        let mut b = full(6000, 100_000);
        let p = PseudoCumacks::from_outstanding(2, &[OutstandingTsn::first(10, A), OutstandingTsn::first(11, B)]);
        let got = p.new_pseudo_cumacks(&[TsnDest::new(11, B)], CucVersion::V2);
        b.flight_bytes -= 1500;
        let gb = GrowthInput { newly_acked_bytes: 1500, cum_advanced: false, new_pseudo_cumack: got[B] };
        assert_eq!(grow_cwnd(&mut b, gb, MTU), CwndChange::SlowStart(1500));
        assert_eq!(b.cwnd_bytes, 7500);
        let ga = GrowthInput { newly_acked_bytes: 1500, cum_advanced: false, new_pseudo_cumack: true };
        assert_eq!(grow_cwnd(&mut a, ga, MTU), CwndChange::None);
        assert_eq!(a.cwnd_bytes, 6000);
    }

    #[test]
    fn no_growth_without_cum_or_pseudo_cum_progress() {
        let mut b = full(6000, 100_000);
        let g = GrowthInput { newly_acked_bytes: 1500, cum_advanced: false, new_pseudo_cumack: false };
        assert_eq!(grow_cwnd(&mut b, g, MTU), CwndChange::None);
        let g = GrowthInput { cum_advanced: true, ..g };
        assert_eq!(grow_cwnd(&mut b, g, MTU), CwndChange::SlowStart(1500));
    }

    #[test]
    fn slow_start_adds_at_most_one_mtu_and_needs_a_full_window() {
        let mut d = full(6000, 100_000);
        d.flight_bytes = 6000 - 4000;
        let g = GrowthInput { newly_acked_bytes: 4000, cum_advanced: true, new_pseudo_cumack: false };
        assert_eq!(grow_cwnd(&mut d, g, MTU), CwndChange::SlowStart(1500));
        let mut idle = DestState::new(6000, 100_000);
        idle.flight_bytes = 1000;
        let g = GrowthInput { newly_acked_bytes: 1500, ..g };
        assert_eq!(grow_cwnd(&mut idle, g, MTU), CwndChange::None, "2500 bytes were out of a 6000-byte window");
    }

    #[test]
    fn congestion_avoidance_grows_one_mtu_per_window_of_acked_bytes() {
        let mut d = full(6000, 3000);
        let g = GrowthInput { newly_acked_bytes: 1500, cum_advanced: true, new_pseudo_cumack: false };
        for _ in 0..3 {
            assert_eq!(grow_cwnd(&mut d, g, MTU), CwndChange::None);
        }
        assert_eq!(d.pba_bytes, 4500);
        assert_eq!(grow_cwnd(&mut d, g, MTU), CwndChange::CongestionAvoidance(1500));
        assert_eq!((d.cwnd_bytes, d.pba_bytes), (7500, 0));
    }

    #[test]
    fn an_under_used_window_earns_at_most_one_window_of_credit() {
        let mut d = DestState::new(6000, 3000);
        d.flight_bytes = 1000;
        d.pba_bytes = 5000;
        let g = GrowthInput { newly_acked_bytes: 3000, cum_advanced: true, new_pseudo_cumack: false };
        assert_eq!(grow_cwnd(&mut d, g, MTU), CwndChange::None, "4000 bytes were out of a 6000-byte window");
        assert_eq!((d.cwnd_bytes, d.pba_bytes), (6000, 6000));
    }

    #[test]
    fn partial_bytes_acked_resets_when_the_destination_drains() {
        let mut d = full(6000, 3000);
        d.pba_bytes = 2000;
        d.flight_bytes = 0;
        let g = GrowthInput { newly_acked_bytes: 1500, cum_advanced: false, new_pseudo_cumack: false };
        grow_cwnd(&mut d, g, MTU);
        assert_eq!(d.pba_bytes, 0);
    }
}
