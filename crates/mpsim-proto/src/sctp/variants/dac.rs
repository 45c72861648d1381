//! Delayed ACK for CMT (DAC; Iyengar, Amer, Stewart 2006). The
//! receiver keeps delaying SACKs when data arrives out of order and says in
//! the SACK how many DATA packets it covers; the sender then adds one more
//! missing report where both of those packets are evidence against a TSN.
//! `DelayedSack` is the receiver's decision, `extra_report` the sender's.

use super::sfr::SackEvidence;
use super::{tsn_lt, Tsn};

/// SACK chunk flag meaning "two DATA packets since the previous SACK"
/// (FreeBSD `SCTP_SACK_CMT_DAC`; absent = one). The paper proposes two
/// spare flag bits carrying the count; one bit is what is deployed.
pub const SACK_FLAG_DAC_TWO: u8 = 0x80;

/// Number of DATA packets a SACK covers, as far as DAC can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DacCount {
    One,
    Two,
}

impl DacCount {
    /// From a packet count since the last SACK; more than two (a timer-fired
    /// SACK cannot cover more, but a caller may count more) reads as two.
    pub fn from_pkts(pkts: u32) -> Self {
        if pkts >= 2 {
            DacCount::Two
        } else {
            DacCount::One
        }
    }

    /// Decodes the SACK chunk flags.
    pub fn from_sack_flags(flags: u8) -> Self {
        if flags & SACK_FLAG_DAC_TWO != 0 {
            DacCount::Two
        } else {
            DacCount::One
        }
    }

    /// The SACK chunk flag bits that carry this count.
    pub fn sack_flags(self) -> u8 {
        match self {
            DacCount::One => 0,
            DacCount::Two => SACK_FLAG_DAC_TWO,
        }
    }
}

/// The sender's extra missing report for `t`, which this SACK already gave
/// one report (Iyengar et al. 2006; FreeBSD
/// `sctp_strike_gap_ack_chunks`): only when the SACK covers two packets,
/// every newly acked TSN came from one destination (not a "mixed" SACK) and
/// all of them lie above `t`, are both packets sure evidence against `t`.
pub fn extra_report(ev: &SackEvidence, dac: DacCount, t: Tsn) -> bool {
    dac == DacCount::Two && ev.num_dests_newly_acked() == 1 && ev.lowest_newack().is_some_and(|low| tsn_lt(t, low))
}

/// What the receiver learnt from one arriving packet with DATA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxPacket {
    /// It carried a TSN already received (RFC 4960 §6.2: SACK at once).
    pub duplicate: bool,
    /// A gap existed before the packet (received TSNs above the cum ack).
    pub gap_before: bool,
    /// A gap exists after the packet was processed.
    pub gap_after: bool,
}

/// What to do about the SACK after a packet arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SackDecision {
    /// Send a SACK now, covering this many packets (its DAC flag).
    Now(DacCount),
    /// Hold it: start the delayed-SACK timer (200 ms, RFC 4960 §6.2) if it
    /// is not running.
    Delay,
}

/// The receiver's delayed-SACK rule, plain (RFC 4960 §6.2, §6.7) or with
/// CMT-DAC. The association keeps the 200 ms timer and calls `on_timer`
/// when it fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayedSack {
    dac: bool,
    pkts_since_sack: u32,
}

impl DelayedSack {
    /// `dac`: delay even under reordering (CMT-DAC).
    pub fn new(dac: bool) -> Self {
        DelayedSack { dac, pkts_since_sack: 0 }
    }

    /// Packets with DATA received since the last SACK.
    pub fn pkts_since_sack(&self) -> u32 {
        self.pkts_since_sack
    }

    /// One packet with DATA arrived.
    pub fn on_data_packet(&mut self, pkt: RxPacket) -> SackDecision {
        self.pkts_since_sack += 1;
        // RFC 4960 §6.2: a SACK at least every second packet; duplicates
        // are reported at once, with or without DAC.
        let now = pkt.duplicate || self.pkts_since_sack >= 2 || (!self.dac && Self::gap_change(pkt));
        if now {
            SackDecision::Now(self.take())
        } else {
            SackDecision::Delay
        }
    }

    /// The delayed-SACK timer fired: the SACK to send, if any is owed.
    pub fn on_timer(&mut self) -> Option<DacCount> {
        (self.pkts_since_sack > 0).then(|| self.take())
    }

    /// Without DAC, out-of-order arrivals are acknowledged at once
    /// (RFC 4960 §6.7: a SACK per packet while a gap persists), as is the
    /// packet that closes the last gap (FreeBSD `sctp_sack_check`:
    /// `was_a_gap && !is_a_gap`). DAC delays both.
    fn gap_change(pkt: RxPacket) -> bool {
        pkt.gap_after || pkt.gap_before
    }

    fn take(&mut self) -> DacCount {
        let c = DacCount::from_pkts(self.pkts_since_sack);
        self.pkts_since_sack = 0;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::super::sfr::{count_and_mark, MissingRule, MissingTsn, SfrHighest};
    use super::super::{DestState, TsnDest};
    use super::*;

    const A: usize = 0;
    const OOO: RxPacket = RxPacket { duplicate: false, gap_before: true, gap_after: true };
    const IN_ORDER: RxPacket = RxPacket { duplicate: false, gap_before: false, gap_after: false };

    fn sfr() -> MissingRule {
        MissingRule::Sfr(SfrHighest::NewlyAcked)
    }

    /// The worked example "DAC": TSNs 5, 6, 7 to A, 5 lost; one delayed SACK
    /// (count 2) newly acks 6 and 7 with cum 4.
    #[test]
    fn dac_worked_example_gives_two_reports_from_one_sack() {
        let mut rx = DelayedSack::new(true);
        assert_eq!(rx.on_data_packet(OOO), SackDecision::Delay, "6 arrives: DAC keeps delaying");
        assert_eq!(rx.on_data_packet(OOO), SackDecision::Now(DacCount::Two), "7 arrives: second packet");
        let ev = SackEvidence::new(1, &[TsnDest::new(6, A), TsnDest::new(7, A)]);
        assert!(ev.saw_newack(A) && ev.highest_newack_for(A) == Some(7));
        assert_eq!((ev.num_dests_newly_acked(), ev.lowest_newack()), (1, Some(6)));
        let mut m = [MissingTsn::new(5, A)];
        count_and_mark(&ev, sfr(), Some(DacCount::Two), &mut m, &[DestState::new(15_000, 100_000)]);
        assert_eq!(m[0].missing_reports, 2);
    }

    #[test]
    fn without_dac_two_immediate_sacks_give_the_same_two_reports() {
        let mut rx = DelayedSack::new(false);
        assert_eq!(rx.on_data_packet(OOO), SackDecision::Now(DacCount::One));
        assert_eq!(rx.on_data_packet(OOO), SackDecision::Now(DacCount::One));
        let mut m = [MissingTsn::new(5, A)];
        let ds = [DestState::new(15_000, 100_000)];
        for acked in [6, 7] {
            let ev = SackEvidence::new(1, &[TsnDest::new(acked, A)]);
            count_and_mark(&ev, sfr(), None, &mut m, &ds);
        }
        assert_eq!(m[0].missing_reports, 2);
    }

    #[test]
    fn a_mixed_sack_gets_no_extra_report() {
        let ev = SackEvidence::new(2, &[TsnDest::new(6, 0), TsnDest::new(7, 1)]);
        assert!(!extra_report(&ev, DacCount::Two, 5));
    }

    #[test]
    fn no_extra_report_when_a_newly_acked_tsn_lies_below_the_missing_one() {
        // Newly acked 3 and 7 on A; missing 5: only one of the two packets
        // was later than 5.
        let ev = SackEvidence::new(1, &[TsnDest::new(3, A), TsnDest::new(7, A)]);
        assert!(!extra_report(&ev, DacCount::Two, 5));
        assert!(extra_report(&ev, DacCount::Two, 2));
        assert!(!extra_report(&ev, DacCount::One, 2), "one packet: no extra report");
    }

    #[test]
    fn the_dac_count_travels_in_flag_0x80() {
        assert_eq!(DacCount::Two.sack_flags(), 0x80);
        assert_eq!(DacCount::One.sack_flags(), 0);
        assert_eq!(DacCount::from_sack_flags(0x80 | 0x01), DacCount::Two);
        assert_eq!(DacCount::from_sack_flags(0x01), DacCount::One);
        assert_eq!(DacCount::from_pkts(3), DacCount::Two);
    }

    #[test]
    fn delayed_sack_every_second_packet_or_on_the_timer() {
        for dac in [false, true] {
            let mut rx = DelayedSack::new(dac);
            assert_eq!(rx.on_data_packet(IN_ORDER), SackDecision::Delay);
            assert_eq!(rx.on_data_packet(IN_ORDER), SackDecision::Now(DacCount::Two));
            assert_eq!(rx.on_timer(), None, "nothing owed after a SACK");
            assert_eq!(rx.on_data_packet(IN_ORDER), SackDecision::Delay);
            assert_eq!(rx.on_timer(), Some(DacCount::One));
            assert_eq!(rx.pkts_since_sack(), 0);
        }
    }

    #[test]
    fn duplicates_are_acked_at_once_even_with_dac() {
        let mut rx = DelayedSack::new(true);
        let dup = RxPacket { duplicate: true, ..IN_ORDER };
        assert_eq!(rx.on_data_packet(dup), SackDecision::Now(DacCount::One));
    }

    #[test]
    fn the_packet_closing_a_gap_is_acked_at_once_only_without_dac() {
        let closes = RxPacket { duplicate: false, gap_before: true, gap_after: false };
        assert_eq!(DelayedSack::new(false).on_data_packet(closes), SackDecision::Now(DacCount::One));
        assert_eq!(DelayedSack::new(true).on_data_packet(closes), SackDecision::Delay);
    }
}
