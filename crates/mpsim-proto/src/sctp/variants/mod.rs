//! Decision rules of the SCTP concurrent-multipath variants, as pure
//! functions and small state structs. The association (TSNs, SACK parsing,
//! timers, buffers) owns the per-TSN records and calls these with plain
//! numbers and small slices; they return decisions (which TSNs get a missing
//! report, which are marked for fast retransmission, which destination's
//! window is cut, where a retransmission goes, when the receiver SACKs).
//! Nothing here sees a packet, a link or the event loop.
//!
//! * `sfr`: missing-report counting, plain (RFC 4960 §7.2.4 HTNA) and split
//!   fast retransmit (Iyengar et al. 2006), with the once-per-window
//!   cwnd reduction.
//! * `cucv2`: pseudo-cumacks and the per-destination cwnd increase
//!   (Iyengar et al. 2006; FreeBSD's `rtx_pseudo_cumack`).
//! * `dac`: delayed SACKs under reordering and the sender's extra missing
//!   report (Iyengar et al. 2006; FreeBSD's `SCTP_SACK_CMT_DAC`).
//! * `rtx_policy`: where a retransmission goes (Iyengar, Amer, Stewart,
//!   "Retransmission Policies for CMT", ICON 2004) and the loss-rate estimate.
//! * `iopd`: inter-path / intra-path classification of a missing TSN (Khan &
//!   Qadir, "Inter-path OOS packets differentiation based congestion control
//!   for simultaneous multipath transmission", Algorithm 1).
//! * `mcc`: SMT's reaction to a classified loss (Khan & Qadir, §3).
//! * `sched`: CMT's round-robin of new data over destinations with room.
//! * `smos`: arrival-ordered scheduling (Liao et al., "Sender-based multipath
//!   out-of-order scheduling", IEEE Trans. Consumer Electronics 2010).
//!
//! TSNs are `u32` compared with serial-number arithmetic (RFC 1982, as
//! RFC 4960 §1.6 requires); destinations are indices into the association's
//! list of peer addresses.

pub mod cucv2;
pub mod dac;
pub mod iopd;
pub mod mcc;
pub mod rtx_policy;
pub mod sched;
pub mod sfr;
pub mod smos;

#[cfg(test)]
mod harness_tests;

use mpsim_core::{SimDuration, SimRng};
use rtx_policy::LossRate;

/// A transmission sequence number (RFC 4960 §3.3.1), 32-bit serial.
pub type Tsn = u32;
/// Index of a peer destination address (a path) in the association.
pub type DestIdx = usize;

/// `a < b` in 32-bit serial-number arithmetic (RFC 1982 §3.2). Two TSNs
/// exactly 2^31 apart are unordered; this returns false for both orders.
pub fn tsn_lt(a: Tsn, b: Tsn) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < (1 << 31)
}

/// `a <= b` in serial-number arithmetic (RFC 1982).
pub fn tsn_le(a: Tsn, b: Tsn) -> bool {
    a == b || tsn_lt(a, b)
}

/// `a > b` in serial-number arithmetic (RFC 1982).
pub fn tsn_gt(a: Tsn, b: Tsn) -> bool {
    tsn_lt(b, a)
}

/// `a >= b` in serial-number arithmetic (RFC 1982).
pub fn tsn_ge(a: Tsn, b: Tsn) -> bool {
    a == b || tsn_lt(b, a)
}

/// The later of two TSNs in serial order.
pub fn tsn_max(a: Tsn, b: Tsn) -> Tsn {
    if tsn_lt(a, b) {
        b
    } else {
        a
    }
}

/// The earlier of two TSNs in serial order.
pub fn tsn_min(a: Tsn, b: Tsn) -> Tsn {
    if tsn_lt(b, a) {
        b
    } else {
        a
    }
}

/// `max` of an optional running value and a new TSN, in serial order.
pub(crate) fn opt_tsn_max(cur: Option<Tsn>, t: Tsn) -> Option<Tsn> {
    Some(cur.map_or(t, |c| tsn_max(c, t)))
}

/// `min` of an optional running value and a new TSN, in serial order.
pub(crate) fn opt_tsn_min(cur: Option<Tsn>, t: Tsn) -> Option<Tsn> {
    Some(cur.map_or(t, |c| tsn_min(c, t)))
}

/// A TSN and the destination it is currently assigned to (the one it was
/// last sent to, or the one chosen for its pending retransmission).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsnDest {
    pub tsn: Tsn,
    pub dest: DestIdx,
}

impl TsnDest {
    pub fn new(tsn: Tsn, dest: DestIdx) -> Self {
        TsnDest { tsn, dest }
    }
}

/// Per-destination congestion state that the decision rules read and the
/// window rules write (RFC 4960 §7.2 keeps it per destination address).
#[derive(Clone, Debug, PartialEq)]
pub struct DestState {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh_bytes: u64,
    /// Bytes outstanding on this destination (sent, neither cum- nor
    /// gap-acked), after the SACK being processed has been applied.
    pub flight_bytes: u64,
    /// `partial_bytes_acked` of RFC 4960 §7.2.2, bytes.
    pub pba_bytes: u64,
    /// Smoothed RTT (RFC 4960 §6.3.1); `None` before the first sample.
    pub srtt: Option<SimDuration>,
    /// RTT variation (RFC 4960 §6.3.1).
    pub rttvar: SimDuration,
    /// Losses over TSNs sent on this destination (for RTX-LOSSRATE).
    pub loss: LossRate,
    /// The fast-recovery exit point when in fast recovery (RFC 4960
    /// §7.2.4; per destination under CMT).
    pub fast_recovery_exit: Option<Tsn>,
    /// Not marked inactive by path-failure detection (RFC 4960 §8.2).
    pub active: bool,
}

impl DestState {
    /// A fresh, active destination with the given window and threshold.
    pub fn new(cwnd_bytes: u64, ssthresh_bytes: u64) -> Self {
        DestState {
            cwnd_bytes,
            ssthresh_bytes,
            flight_bytes: 0,
            pba_bytes: 0,
            srtt: None,
            rttvar: SimDuration::ZERO,
            loss: LossRate::default(),
            fast_recovery_exit: None,
            active: true,
        }
    }

    pub fn in_fast_recovery(&self) -> bool {
        self.fast_recovery_exit.is_some()
    }

    /// RFC 4960 §6.1 rule B: new data may go to a destination only while
    /// it has less than cwnd bytes outstanding.
    pub fn has_cwnd_room(&self) -> bool {
        self.flight_bytes < self.cwnd_bytes
    }

    /// The fast-retransmit reduction of RFC 4960 §7.2.3/§7.2.4 (Linux
    /// `sctp_transport_lower_cwnd(SCTP_LOWER_CWND_FAST_RTX)`): unless already
    /// in fast recovery, `ssthresh = max(cwnd/2, 4·MTU)`, `cwnd = ssthresh`,
    /// `pba = 0`, and fast recovery until the cumulative ack reaches
    /// `exit_tsn`. Returns whether the window was cut.
    pub fn enter_fast_recovery(&mut self, exit_tsn: Tsn, mtu_bytes: u64) -> bool {
        if self.in_fast_recovery() {
            // RFC 4960 §7.2.4 step 2: at most one reduction per window.
            return false;
        }
        self.ssthresh_bytes = (self.cwnd_bytes / 2).max(4 * mtu_bytes);
        self.cwnd_bytes = self.ssthresh_bytes;
        self.pba_bytes = 0;
        self.fast_recovery_exit = Some(exit_tsn);
        true
    }

    /// The T3-rtx reduction of RFC 4960 §7.2.3: `ssthresh = max(cwnd/2,
    /// 4·MTU)`, `cwnd = 1·MTU`, `pba = 0`. It also ends fast recovery on the
    /// destination (Linux `sctp_transport_lower_cwnd(SCTP_LOWER_CWND_T3_RTX)`:
    /// "T3-rtx also clears fast recovery"). RTO back-off is the caller's.
    pub fn on_t3_timeout(&mut self, mtu_bytes: u64) {
        self.ssthresh_bytes = (self.cwnd_bytes / 2).max(4 * mtu_bytes);
        self.cwnd_bytes = mtu_bytes;
        self.pba_bytes = 0;
        self.fast_recovery_exit = None;
    }

    /// RFC 4960 §7.2.1: a destination that sent nothing for an RTO decays
    /// to `cwnd = max(cwnd/2, 4·MTU)`.
    pub fn on_idle_rto(&mut self, mtu_bytes: u64) {
        self.cwnd_bytes = (self.cwnd_bytes / 2).max(4 * mtu_bytes);
    }

    /// RFC 4960 §7.2.4: fast recovery ends once a SACK acknowledges every
    /// TSN up to and including the exit point. Returns whether it ended.
    pub fn on_cum_ack(&mut self, cum_tsn: Tsn) -> bool {
        match self.fast_recovery_exit {
            Some(exit) if tsn_ge(cum_tsn, exit) => {
                self.fast_recovery_exit = None;
                true
            }
            _ => false,
        }
    }
}

/// RFC 4960 §7.2.1: the initial window `min(4·MTU, max(2·MTU, 4380))`.
pub fn initial_cwnd_bytes(mtu_bytes: u64) -> u64 {
    (4 * mtu_bytes).min((2 * mtu_bytes).max(4380))
}

/// How a choice between equally good destinations is made. Iyengar et al.
/// break ties uniformly at random; the lowest index is the reproducible
/// alternative for tests and for runs that must not consume draws.
pub enum TieBreak<'a> {
    LowestIndex,
    Random(&'a mut SimRng),
}

impl TieBreak<'_> {
    /// One of `tied` (non-empty, ascending); `None` when `tied` is empty.
    pub fn pick(&mut self, tied: &[DestIdx]) -> Option<DestIdx> {
        match self {
            _ if tied.len() <= 1 => tied.first().copied(),
            TieBreak::LowestIndex => tied.first().copied(),
            TieBreak::Random(rng) => tied.get(rng.below(tied.len() as u64) as usize).copied(),
        }
    }
}

/// The indices of `dests` that maximise `key` among those `eligible`,
/// ascending.
pub(crate) fn argmax_by<K: Ord>(
    dests: &[DestState],
    eligible: impl Fn(&DestState) -> bool,
    key: impl Fn(&DestState) -> K,
) -> Vec<DestIdx> {
    let mut best: Option<K> = None;
    let mut tied = Vec::new();
    for (i, d) in dests.iter().enumerate().filter(|(_, d)| eligible(d)) {
        let k = key(d);
        match &best {
            Some(b) if k < *b => {}
            Some(b) if k == *b => tied.push(i),
            _ => {
                best = Some(k);
                tied.clear();
                tied.push(i);
            }
        }
    }
    tied
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_comparison_wraps_at_2_pow_32() {
        assert!(tsn_lt(1, 2));
        assert!(tsn_lt(u32::MAX, 0), "0 follows 2^32-1 (RFC 1982)");
        assert!(tsn_gt(3, u32::MAX - 2));
        assert!(!tsn_lt(5, 5) && tsn_le(5, 5) && tsn_ge(5, 5));
        assert!(!tsn_lt(0, 1 << 31) && !tsn_lt(1 << 31, 0), "2^31 apart is undefined");
        assert_eq!(tsn_max(u32::MAX, 1), 1);
        assert_eq!(tsn_min(u32::MAX, 1), u32::MAX);
    }

    #[test]
    fn initial_window_follows_rfc4960_7_2_1() {
        assert_eq!(initial_cwnd_bytes(1500), 4380);
        assert_eq!(initial_cwnd_bytes(1000), 4000);
        assert_eq!(initial_cwnd_bytes(9000), 18000);
    }

    #[test]
    fn fast_recovery_cuts_once_and_ends_at_the_exit_point() {
        let mut d = DestState::new(20_000, 100_000);
        d.pba_bytes = 700;
        assert!(d.enter_fast_recovery(40, 1500));
        assert_eq!((d.ssthresh_bytes, d.cwnd_bytes, d.pba_bytes), (10_000, 10_000, 0));
        assert!(!d.enter_fast_recovery(45, 1500), "no second cut within the window");
        assert_eq!(d.cwnd_bytes, 10_000);
        assert!(!d.on_cum_ack(39));
        assert!(d.on_cum_ack(40));
        assert!(!d.in_fast_recovery());
    }

    #[test]
    fn fast_recovery_floor_is_four_mtus() {
        let mut d = DestState::new(7_000, 100_000);
        d.enter_fast_recovery(1, 1500);
        assert_eq!((d.ssthresh_bytes, d.cwnd_bytes), (6000, 6000));
    }

    #[test]
    fn t3_timeout_restarts_slow_start_and_clears_fast_recovery() {
        let mut d = DestState::new(30_000, 100_000);
        d.pba_bytes = 900;
        d.fast_recovery_exit = Some(7);
        d.on_t3_timeout(1500);
        assert_eq!((d.ssthresh_bytes, d.cwnd_bytes, d.pba_bytes), (15_000, 1500, 0));
        assert!(!d.in_fast_recovery());
        d.on_t3_timeout(1500);
        assert_eq!(d.ssthresh_bytes, 6000, "floor of 4 MTUs");
    }

    #[test]
    fn an_idle_destination_decays_to_four_mtus() {
        let mut d = DestState::new(30_000, 100_000);
        d.on_idle_rto(1500);
        assert_eq!(d.cwnd_bytes, 15_000);
        d.on_idle_rto(1500);
        d.on_idle_rto(1500);
        assert_eq!(d.cwnd_bytes, 6000);
    }

    #[test]
    fn lowest_index_tie_break_takes_the_first() {
        assert_eq!(TieBreak::LowestIndex.pick(&[2, 5]), Some(2));
        assert_eq!(TieBreak::LowestIndex.pick(&[]), None);
        let mut rng = SimRng::new(1, 2);
        let mut seen = [false; 3];
        for _ in 0..64 {
            let i = TieBreak::Random(&mut rng).pick(&[0, 1, 2]).expect("three candidates");
            seen[i] = true;
        }
        assert_eq!(seen, [true; 3], "random ties reach every candidate");
    }
}
