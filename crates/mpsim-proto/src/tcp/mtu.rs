//! Segment sizes from the interface MTU. A segment's payload is what fits
//! in the MTU after the IPv4 and TCP headers and the options the segment
//! carries, as Linux sizes it: `tcp_mtu_to_mss` and `tcp_sync_mss` once
//! the handshake tells which options every segment carries (timestamps,
//! MPTCP's DSS), `tcp_current_mss` per send burst for the options of the
//! moment (SACK blocks), each capped by the configured `mss`.

use super::TcpConfig;
use mpsim_core::{SackBlocks, Timestamps};

/// IPv4 (20) and TCP (20) headers without options: what the MTU holds
/// besides the payload and the TCP options.
pub const IP_TCP_HEADER_BYTES: u32 = 40;
/// TCP option space (RFC 9293 3.1: a data offset of at most 15 words).
pub const TCP_OPTION_SPACE_BYTES: u32 = 40;
/// The timestamps option, aligned (Linux `TCPOLEN_TSTAMP_ALIGNED`).
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;
/// Ethernet II framing; on the wire and in `header_bytes`, outside the MTU.
pub const ETHERNET_HEADER_BYTES: u32 = 14;
/// The default interface MTU (Ethernet).
pub const DEFAULT_MTU_BYTES: u32 = 1500;
/// The smallest MTU a scenario may set: the datagram every IPv4 host must
/// accept (RFC 791), which leaves room for every option combination.
pub const MIN_MTU_BYTES: u32 = 576;
/// The largest: an IPv4 datagram's total length field.
pub const MAX_MTU_BYTES: u32 = 65_535;
/// Smallest payload a segment is cut to whatever the MTU (Linux
/// `TCP_MIN_SND_MSS`, the `tcp_min_snd_mss` sysctl's default).
pub const MIN_SND_MSS_BYTES: u32 = 48;

/// Bytes of the timestamps option on a segment that carries `ts`.
#[inline(always)]
pub fn ts_option_bytes(ts: Option<Timestamps>) -> u32 {
    if ts.is_some() {
        TIMESTAMP_OPTION_BYTES
    } else {
        0
    }
}

/// Option bytes of a SYN or SYN/ACK beyond the timestamps option: MSS (4)
/// and NOP + window scale (4); SACK-permitted takes the timestamps' two
/// leading NOPs, or two NOPs of its own without them (Linux
/// `tcp_options_write`).
#[inline(always)]
pub fn syn_option_bytes(ts: bool) -> u32 {
    if ts {
        8
    } else {
        12
    }
}

impl TcpConfig {
    /// Payload of a segment that carries `extra_option_bytes` of options
    /// besides the timestamps option (if `ts`) and the options every data
    /// segment carries (`data_option_bytes`): what the MTU leaves, at most
    /// the configured `max_payload_bytes` (Linux `tcp_mtu_to_mss`, then
    /// `tcp_current_mss`'s delta for the options of this segment).
    pub fn payload_fitting(&self, ts: bool, extra_option_bytes: u32) -> u32 {
        let ts_bytes = if ts { TIMESTAMP_OPTION_BYTES } else { 0 };
        let overhead = IP_TCP_HEADER_BYTES + ts_bytes + self.data_option_bytes + extra_option_bytes;
        self.mtu_bytes.saturating_sub(overhead).min(self.max_payload_bytes).max(MIN_SND_MSS_BYTES)
    }

    /// Sets `mss_bytes`, the payload of a full data segment, for a
    /// connection that uses timestamps or not (Linux `tcp_sync_mss` with
    /// `tp->tcp_header_len` set by the handshake).
    pub fn fit_to_mtu(&mut self, ts: bool) {
        self.mss_bytes = self.payload_fitting(ts, 0);
    }

    /// The same configuration with `mss_bytes` fitted for its own
    /// `timestamps` setting (the sizes the handshake will settle on when
    /// both ends share it).
    pub fn fitted(mut self) -> Self {
        self.fit_to_mtu(self.timestamps);
        self
    }

    /// How many of `sack`'s blocks a segment of `payload_bytes` can carry:
    /// those that fit in the option space left by the timestamps option
    /// and, on a data segment, the data options (Linux
    /// `tcp_established_options`: MPTCP's options come first, SACK takes
    /// what is left) and the MTU.
    pub fn sack_blocks_fitting(&self, ts: bool, sack: &SackBlocks, payload_bytes: u32) -> u8 {
        let ts_bytes = if ts { TIMESTAMP_OPTION_BYTES } else { 0 };
        if payload_bytes == 0 {
            return blocks_within(sack, TCP_OPTION_SPACE_BYTES.saturating_sub(ts_bytes));
        }
        let by_space = TCP_OPTION_SPACE_BYTES.saturating_sub(ts_bytes + self.data_option_bytes);
        let by_mtu = self.mtu_bytes.saturating_sub(IP_TCP_HEADER_BYTES + ts_bytes + self.data_option_bytes + payload_bytes);
        blocks_within(sack, by_space.min(by_mtu))
    }

    /// Payload of the next new segment when the connection's receiver has
    /// `sack` blocks to report (Linux `tcp_current_mss`, evaluated once per
    /// send burst from the options the next segment carries).
    pub fn mss_now(&self, ts: bool, sack: &SackBlocks) -> u32 {
        let ts_bytes = if ts { TIMESTAMP_OPTION_BYTES } else { 0 };
        let room = TCP_OPTION_SPACE_BYTES.saturating_sub(ts_bytes + self.data_option_bytes);
        let carried = SackBlocks { len: blocks_within(sack, room), ..*sack };
        self.payload_fitting(ts, carried.option_bytes()).min(self.mss_bytes)
    }
}

/// The most of `sack`'s blocks (the first ones, most recent first) whose
/// option takes at most `room_bytes`.
fn blocks_within(sack: &SackBlocks, room_bytes: u32) -> u8 {
    let mut n = sack.len;
    while n > 0 && (SackBlocks { len: n, ..*sack }).option_bytes() > room_bytes {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_cc::CcMode;

    fn blocks(n: u8) -> SackBlocks {
        let mut s = SackBlocks::default();
        for i in 0..n as u64 {
            s.push(10 * i + 5, 10 * i + 8);
        }
        s
    }

    #[test]
    fn a_1500_byte_mtu_leaves_1460_bytes_without_timestamps_and_1448_with() {
        let cfg = TcpConfig::default();
        assert_eq!(cfg.payload_fitting(false, 0), 1460);
        assert_eq!(cfg.payload_fitting(true, 0), 1448);
        assert_eq!(TcpConfig::for_mode(CcMode::Linux).mss_bytes, 1448);
        assert_eq!(TcpConfig::for_mode(CcMode::Reference).mss_bytes, 1460);
    }

    #[test]
    fn a_small_mtu_shrinks_the_payload_and_the_configured_mss_caps_it() {
        let small = TcpConfig { mtu_bytes: 576, ..TcpConfig::default() };
        assert_eq!(small.payload_fitting(true, 0), 576 - 40 - 12);
        let capped = TcpConfig { max_payload_bytes: 1000, ..TcpConfig::default() };
        assert_eq!(capped.payload_fitting(true, 0), 1000);
        // Linux never cuts below TCP_MIN_SND_MSS.
        let tiny = TcpConfig { mtu_bytes: 68, ..TcpConfig::default() };
        assert_eq!(tiny.payload_fitting(true, 0), MIN_SND_MSS_BYTES);
    }

    #[test]
    fn mptcp_dss_option_bytes_come_off_the_payload() {
        // A 64-bit DATA_ACK and mapping, 26 bytes padded to 28: Linux's
        // 1420-byte MPTCP segments with timestamps.
        let cfg = TcpConfig { data_option_bytes: 28, ..TcpConfig::default() };
        assert_eq!(cfg.payload_fitting(true, 0), 1420);
        assert_eq!(cfg.payload_fitting(false, 0), 1432);
    }

    #[test]
    fn sack_blocks_on_a_data_segment_shrink_the_next_segment() {
        let cfg = TcpConfig::default().fitted();
        assert_eq!(cfg.mss_now(true, &blocks(0)), 1448);
        assert_eq!(cfg.mss_now(true, &blocks(1)), 1436);
        // Three blocks fill the 28 bytes that timestamps leave.
        assert_eq!(cfg.mss_now(true, &blocks(3)), 1448 - 28);
        // Under a configured cap that leaves room, SACK costs nothing.
        let capped = TcpConfig { max_payload_bytes: 1000, ..cfg }.fitted();
        assert_eq!(capped.mss_now(true, &blocks(3)), 1000);
    }

    #[test]
    fn sack_blocks_give_way_to_a_full_segment_and_to_mptcp_options() {
        let cfg = TcpConfig::default();
        // A full segment with timestamps has no room left in the MTU.
        assert_eq!(cfg.sack_blocks_fitting(true, &blocks(3), 1448), 0);
        assert_eq!(cfg.sack_blocks_fitting(true, &blocks(3), 1436), 1);
        // A pure ACK is limited by the option space only.
        assert_eq!(cfg.sack_blocks_fitting(true, &blocks(3), 0), 3);
        let mptcp = TcpConfig { data_option_bytes: 28, ..cfg };
        assert_eq!(mptcp.sack_blocks_fitting(true, &blocks(3), 100), 0);
        assert_eq!(mptcp.sack_blocks_fitting(false, &blocks(3), 100), 1);
    }
}
