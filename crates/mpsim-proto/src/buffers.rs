//! Linux's socket buffer sizing, sans-IO: how far a send buffer grows with
//! the congestion window (`tcp_sndbuf_expand`), what a segment costs in it
//! (skb truesize), and receive-buffer autotuning (dynamic right-sizing:
//! `tcp_rcv_space_adjust`, `mptcp_rcv_space_adjust`).
//!
//! Linux counts socket memory, not payload. The model's truesize: a
//! segment on the send side costs its payload plus the head of the skb
//! MPTCP allocates for it (`__mptcp_do_alloc_tx_skb`: 640 bytes of head
//! and shared info, 256 of `struct sk_buff`), data not yet sent two
//! segments per skb (`tcp_min_tso_segs`, the size goal at these rates),
//! data sent one segment per skb (`tso_fragment` cuts what the window lets
//! out). On the receive side a buffer of `space` bytes holds a window of
//! half of it: `tcp_win_from_space` with the default scaling ratio
//! (`TCP_DEFAULT_SCALING_RATIO`, as `tcp_adv_win_scale = 1`), so received
//! payload is taken to cost twice its size.

use mpsim_core::{SimDuration, SimTime, Timestamps};

/// `net.ipv4.tcp_wmem`: minimum, initial and maximum send buffer, bytes
/// of socket memory.
pub const TCP_WMEM_BYTES: [u64; 3] = [4096, 16384, 4 << 20];
/// `net.ipv4.tcp_rmem`: minimum, initial and maximum receive buffer.
/// The maximum is Linux 6.16's and later (32 MiB, commit "tcp: increase
/// tcp_rmem[2] to 32 MB"; 6 MiB before).
pub const TCP_RMEM_BYTES: [u64; 3] = [4096, 131_072, 32 << 20];
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND_PKTS: u64 = 10;
/// `MAX_TCP_HEADER` of an x86-64 kernel.
const MAX_TCP_HEADER_BYTES: u64 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`.
const SKB_SHINFO_BYTES: u64 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))`.
const SK_BUFF_BYTES: u64 = 256;
/// Truesize of an skb beyond its paged payload: the `MAX_TCP_HEADER`
/// head and shared info, and the `sk_buff` itself.
const SKB_TX_OVERHEAD_BYTES: u64 = MAX_TCP_HEADER_BYTES + SKB_SHINFO_BYTES + SK_BUFF_BYTES;
/// `tcp_min_tso_segs`: segments per skb of data not yet sent.
const UNSENT_SEGS_PER_SKB: u64 = 2;
/// Linux's initial `tp->reordering` (`net.ipv4.tcp_reordering`).
pub const TCP_REORDERING_PKTS: u64 = 3;

/// `tcp_sndbuf_expand`'s memory per segment: a linear skb's head rounded
/// to a power of two, and its `sk_buff`.
pub fn sndbuf_per_mss_bytes(mss_bytes: u64) -> u64 {
    (mss_bytes + MAX_TCP_HEADER_BYTES + SKB_SHINFO_BYTES).next_power_of_two() + SK_BUFF_BYTES
}

/// `tcp_sndbuf_expand` (net/ipv4/tcp_input.c): room for twice
/// max(cwnd, `TCP_INIT_CWND`, reordering + 1) segments (fast recovery
/// needs about 1.7 windows), at most `tcp_wmem[2]`.
pub fn sndbuf_expand_bytes(mss_bytes: u64, cwnd_pkts: u64, reordering_pkts: u64) -> u64 {
    let segs = cwnd_pkts.max(TCP_INIT_CWND_PKTS).max(reordering_pkts + 1);
    (2 * segs * sndbuf_per_mss_bytes(mss_bytes)).min(TCP_WMEM_BYTES[2])
}

/// `sk_wmem_queued` of a subflow holding `in_flight_bytes` sent and not
/// acknowledged and `unsent_bytes` written and not sent (module header:
/// one skb per sent segment, one per two unsent ones).
pub fn wmem_queued_bytes(in_flight_bytes: u64, unsent_bytes: u64, mss_bytes: u64) -> u64 {
    let mss = mss_bytes.max(1);
    let sent_skbs = in_flight_bytes.div_ceil(mss);
    let unsent_skbs = unsent_bytes.div_ceil(UNSENT_SEGS_PER_SKB * mss);
    in_flight_bytes + unsent_bytes + (sent_skbs + unsent_skbs) * SKB_TX_OVERHEAD_BYTES
}

/// `tcp_win_from_space` at the default scaling ratio: the window a
/// receive buffer of `space_bytes` offers.
pub fn win_from_space(space_bytes: u64) -> u64 {
    space_bytes / 2
}

/// `tcp_space_from_win`: the buffer a window of `win_bytes` needs.
pub fn space_from_win(win_bytes: u64) -> u64 {
    win_bytes.saturating_mul(2)
}

/// Receive-buffer autotuning of one socket (dynamic right-sizing): once
/// per receiver RTT, if the application read more than in the last
/// measured RTT, the buffer grows to let the sender double its rate.
#[derive(Clone, Debug)]
pub struct RcvSpace {
    /// `sk_rcvbuf`, bytes of socket memory.
    pub rcvbuf_bytes: u64,
    /// `rcvq_space.space`: bytes read in the last RTT that grew the buffer.
    space_bytes: u64,
    /// Bytes read since the measurement began.
    copied_bytes: u64,
    /// `rcvq_space.time`: when it began.
    since: SimTime,
}

impl RcvSpace {
    /// `tcp_init_buffer_space`, `mptcp_rcv_space_init`: `tcp_rmem[1]` of
    /// buffer, and an initial measure of ten segments of `advmss_bytes`.
    pub fn new(now: SimTime, advmss_bytes: u64) -> Self {
        let space_bytes = (TCP_INIT_CWND_PKTS * advmss_bytes).min(win_from_space(TCP_RMEM_BYTES[1]));
        RcvSpace { rcvbuf_bytes: TCP_RMEM_BYTES[1], space_bytes, copied_bytes: 0, since: now }
    }

    /// The window the buffer offers when empty.
    pub fn window_bytes(&self) -> u64 {
        win_from_space(self.rcvbuf_bytes)
    }

    /// The application read `copied_bytes` more at `now`; `rtt` is the
    /// receiver's RTT estimate (MPTCP: the largest of its subflows'), and
    /// `ooo_span_bytes` how far the out-of-order queue reaches beyond the
    /// next expected byte (TCP; 0 for MPTCP). True if the buffer grew
    /// (`tcp_rcv_space_adjust`, `mptcp_rcv_space_adjust`).
    pub fn on_copied(&mut self, now: SimTime, copied_bytes: u64, rtt: Option<SimDuration>, ooo_span_bytes: u64) -> bool {
        self.copied_bytes += copied_bytes;
        let Some(rtt) = rtt.filter(|r| *r > SimDuration::ZERO) else { return false };
        if now.0.saturating_sub(self.since.0) < rtt.0 {
            return false;
        }
        let copied = std::mem::take(&mut self.copied_bytes);
        self.since = now;
        if copied <= self.space_bytes {
            return false;
        }
        self.grow(copied, ooo_span_bytes)
    }

    /// `tcp_rcvbuf_grow`, `mptcp_rcvbuf_grow`: DRS is one RTT late, so
    /// twice what was read, plus twice the growth over the last RTT (slow
    /// start), plus what the out-of-order queue already spans.
    fn grow(&mut self, newval: u64, ooo_span_bytes: u64) -> bool {
        let oldval = std::mem::replace(&mut self.space_bytes, newval).max(1);
        let mut rcvwin = newval << 1;
        let grow = (rcvwin as u128 * (newval - oldval.min(newval)) as u128 / oldval as u128) as u64;
        rcvwin = rcvwin.saturating_add(grow << 1).saturating_add(ooo_span_bytes);
        let rcvbuf = space_from_win(rcvwin).min(TCP_RMEM_BYTES[2]);
        if rcvbuf > self.rcvbuf_bytes {
            self.rcvbuf_bytes = rcvbuf;
            return true;
        }
        false
    }
}

/// The receiver's RTT estimate from timestamps (`tcp_rcv_rtt_measure_ts`,
/// `tcp_rcv_rtt_update` of Linux 6.16 and later): for each new TSecr on a
/// full-size segment, the time since that TSval left; a smaller sample is
/// taken at once, a larger one with weight 1/8. It includes the time the
/// data waited in the sender's bottleneck queue, so DRS measures over the
/// RTT the transfer actually sees.
#[derive(Clone, Copy, Debug, Default)]
pub struct RcvRtt {
    /// `rcv_rtt_est.rtt_us`: microseconds, scaled by 8; 0 before a sample.
    rtt_us8: u64,
    /// `rcv_rtt_last_tsecr`.
    last_ecr_ms: Option<u32>,
}

impl RcvRtt {
    /// A segment of `payload_bytes` with timestamps `ts` arrived at `now`;
    /// `rcv_mss_bytes` is the size of a full segment.
    pub fn on_segment(&mut self, now: SimTime, ts: Option<Timestamps>, payload_bytes: u32, rcv_mss_bytes: u32) {
        let Some(ts) = ts.filter(|t| t.ecr_ms != 0) else { return };
        if self.last_ecr_ms.replace(ts.ecr_ms) == Some(ts.ecr_ms) || payload_bytes < rcv_mss_bytes {
            return;
        }
        let delta_ms = Timestamps::clock_ms(now).wrapping_sub(ts.ecr_ms);
        if delta_ms == 0 || delta_ms > i32::MAX as u32 / 1000 {
            return;
        }
        let sample_us = delta_ms as u64 * 1000;
        let m = sample_us << 3;
        self.rtt_us8 = if self.rtt_us8 == 0 || m < self.rtt_us8 { m } else { self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us };
    }

    /// The estimate, None before the first sample.
    pub fn rtt(&self) -> Option<SimDuration> {
        (self.rtt_us8 > 0).then(|| SimDuration::from_micros(self.rtt_us8 >> 3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn a_segment_of_1448_bytes_costs_4352_bytes_in_sndbuf_expand() {
        // roundup_pow_of_two(1448 + 320 + 320) + 256.
        assert_eq!(sndbuf_per_mss_bytes(1448), 4096 + 256);
        // MSS 1460 (no timestamps) rounds to the same power of two.
        assert_eq!(sndbuf_per_mss_bytes(1460), 4352);
    }

    #[test]
    fn the_send_buffer_is_twice_the_window_of_segments_at_least_ten() {
        assert_eq!(sndbuf_expand_bytes(1448, 1, TCP_REORDERING_PKTS), 2 * 10 * 4352);
        assert_eq!(sndbuf_expand_bytes(1448, 10, TCP_REORDERING_PKTS), 87_040);
        assert_eq!(sndbuf_expand_bytes(1448, 84, TCP_REORDERING_PKTS), 731_136);
        // A reordering degree above the window counts instead.
        assert_eq!(sndbuf_expand_bytes(1448, 10, 20), 2 * 21 * 4352);
        // tcp_wmem[2] bounds it: 482 segments would need 4,195,328 bytes.
        assert_eq!(sndbuf_expand_bytes(1448, 482, TCP_REORDERING_PKTS), 4 << 20);
    }

    #[test]
    fn sent_segments_cost_their_skb_each_and_unsent_ones_half_of_one() {
        assert_eq!(wmem_queued_bytes(1448, 0, 1448), 1448 + 896);
        assert_eq!(wmem_queued_bytes(0, 2 * 1448, 1448), 2 * 1448 + 896);
        assert_eq!(wmem_queued_bytes(10 * 1448, 10 * 1448, 1448), 20 * 1448 + 15 * 896);
        assert_eq!(wmem_queued_bytes(0, 0, 1448), 0);
    }

    #[test]
    fn the_receive_buffer_starts_at_tcp_rmem_with_half_of_it_as_window() {
        let s = RcvSpace::new(SimTime::ZERO, 1448);
        assert_eq!(s.rcvbuf_bytes, 131_072);
        assert_eq!(s.window_bytes(), 65_536);
        assert_eq!(s.space_bytes, 14_480);
    }

    #[test]
    fn the_buffer_grows_once_per_rtt_by_the_kernel_formula() {
        let rtt = Some(SimDuration::from_millis(20));
        let mut s = RcvSpace::new(SimTime::ZERO, 1448);
        // Within the first RTT nothing is measured.
        assert!(!s.on_copied(at_ms(10), 20_000, rtt, 0));
        // 28,960 bytes read in the RTT (twice the initial 14,480):
        // rcvwin = 2 * 28960 + 2 * (57920 * 14480 / 14480) = 173,760,
        // buffer 2 * 173,760 = 347,520.
        assert!(s.on_copied(at_ms(20), 8_960, rtt, 0));
        assert_eq!(s.rcvbuf_bytes, 347_520);
        assert_eq!(s.window_bytes(), 173_760);
        // The next RTT reads no more than the last: no growth.
        assert!(!s.on_copied(at_ms(40), 28_960, rtt, 0));
        assert_eq!(s.rcvbuf_bytes, 347_520);
        // An out-of-order queue reaching 10,000 bytes ahead adds to the
        // window: 2 * 57920 + 2 * (115840 * 28960 / 28960) + 10000.
        assert!(s.on_copied(at_ms(60), 57_920, rtt, 10_000));
        assert_eq!(s.rcvbuf_bytes, 2 * (115_840 + 231_680 + 10_000));
    }

    #[test]
    fn the_receiver_rtt_drops_to_a_smaller_sample_and_rises_by_an_eighth() {
        let ts = |val_ms, ecr_ms| Some(Timestamps { val_ms, ecr_ms });
        let mut r = RcvRtt::default();
        let at = |ms| at_ms(ms);
        r.on_segment(at(1_100), ts(5, Timestamps::clock_ms(at(1_000))), 1448, 1448);
        assert_eq!(r.rtt(), Some(SimDuration::from_millis(100)));
        // The same TSecr again, or a short segment: no sample.
        r.on_segment(at(1_500), ts(6, Timestamps::clock_ms(at(1_000))), 1448, 1448);
        r.on_segment(at(1_500), ts(6, Timestamps::clock_ms(at(1_020))), 100, 1448);
        assert_eq!(r.rtt(), Some(SimDuration::from_millis(100)));
        // 900 us scaled: 800 - 100 + 900 = 1600 (scaled by 8) -> 200 ms.
        r.on_segment(at(2_000), ts(7, Timestamps::clock_ms(at(1_100))), 1448, 1448);
        assert_eq!(r.rtt(), Some(SimDuration::from_millis(200)));
        r.on_segment(at(2_050), ts(8, Timestamps::clock_ms(at(2_000))), 1448, 1448);
        assert_eq!(r.rtt(), Some(SimDuration::from_millis(50)));
    }

    #[test]
    fn the_buffer_never_grows_past_tcp_rmem_max_nor_shrinks() {
        let rtt = Some(SimDuration::from_millis(10));
        let mut s = RcvSpace::new(SimTime::ZERO, 1448);
        let mut now = SimTime::ZERO;
        for k in 1..30u64 {
            now += SimDuration::from_millis(10);
            let before = s.rcvbuf_bytes;
            s.on_copied(now, 10_000 << k.min(20), rtt, 0);
            assert!(s.rcvbuf_bytes >= before);
        }
        assert_eq!(s.rcvbuf_bytes, 32 << 20);
        // Without an RTT estimate there is no measure.
        let mut s = RcvSpace::new(SimTime::ZERO, 1448);
        assert!(!s.on_copied(at_ms(1000), 1 << 20, None, 0));
    }
}
