//! The packet header moved through the simulated network. No payload bytes
//! are carried: only the sizes, the header fields the protocols read and the
//! options they exchange. The pcap writer renders real bytes from these.

use crate::ids::Addr;

/// Transport protocol of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Proto {
    #[default]
    Tcp,
    Udp,
    Sctp,
}

impl Proto {
    /// The IPv4 protocol number (IANA): what hashes and captures carry.
    pub fn ip_number(self) -> u8 {
        match self {
            Proto::Tcp => 6,
            Proto::Udp => 17,
            Proto::Sctp => 132,
        }
    }
}

/// TCP flag bits, with the wire values of RFC 9293.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    /// ECN-Echo (RFC 3168 section 6.1).
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced (RFC 3168 section 6.1).
    pub const CWR: u8 = 0x80;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The TCP timestamps option (RFC 7323): the sender's clock and the
/// echo of the peer's, in milliseconds (Linux's TSval clock, 1000 Hz).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Timestamps {
    pub val_ms: u32,
    pub ecr_ms: u32,
}

impl Timestamps {
    /// The TSval clock at `t`: milliseconds, wrapping at 2^32.
    pub fn clock_ms(t: crate::SimTime) -> u32 {
        (t.as_ps() / crate::time::PS_PER_MS) as u32
    }
}

/// The ECN field of the IP header (RFC 3168 section 5), with its wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IpEcn {
    #[default]
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    /// Congestion Experienced: set by a router's queue instead of a drop.
    Ce = 0b11,
}

impl IpEcn {
    /// The packet may be marked instead of dropped (ECT(0), ECT(1) or already CE).
    pub fn is_ect(self) -> bool {
        self != IpEcn::NotEct
    }
}

/// Up to three SACK blocks `[start, end)` in relative sequence numbers,
/// most recently changed first (RFC 2018).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlocks {
    pub len: u8,
    pub blocks: [(u64, u64); 3],
}

impl SackBlocks {
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }
    pub fn push(&mut self, start: u64, end: u64) -> bool {
        if (self.len as usize) < self.blocks.len() {
            self.blocks[self.len as usize] = (start, end);
            self.len += 1;
            true
        } else {
            false
        }
    }
    /// Bytes these blocks add to the TCP header: 2 + 8 per block, padded to 4.
    pub fn option_bytes(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            (2 + 8 * self.len as u32).div_ceil(4) * 4
        }
    }
}

/// Protocol extensions carried in the header (MPTCP options and the like).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PacketExt {
    #[default]
    None,
    Mptcp(crate::mptcp::MptcpOpts),
    /// The SCTP chunk of a `Proto::Sctp` packet.
    Sctp(crate::sctp::Chunk),
}

impl PacketExt {
    /// Option bytes the extension adds to the TCP header.
    pub fn option_bytes(&self) -> u32 {
        match self {
            PacketExt::None | PacketExt::Sctp(_) => 0,
            PacketExt::Mptcp(m) => m.len_bytes(),
        }
    }

    pub fn mptcp(&self) -> Option<&crate::mptcp::MptcpOpts> {
        match self {
            PacketExt::Mptcp(m) => Some(m),
            PacketExt::None | PacketExt::Sctp(_) => None,
        }
    }

    pub fn sctp(&self) -> Option<&crate::sctp::Chunk> {
        match self {
            PacketExt::Sctp(c) => Some(c),
            _ => None,
        }
    }
}

/// A packet header. Sequence numbers are relative to the connection's
/// initial sequence number (ISN = 0), 64-bit so they never wrap in a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub proto: Proto,
    pub flags: TcpFlags,
    /// Relative sequence number of the first payload byte (or of the SYN/FIN).
    pub seq: u64,
    /// Relative cumulative acknowledgement (valid when ACK is set).
    pub ack: u64,
    /// Advertised receive window, in bytes (window scaling is implicit).
    pub wnd_bytes: u64,
    pub sack: SackBlocks,
    /// The timestamps option, when the connection negotiated it. Its 12
    /// bytes are part of every segment's header size either way.
    pub ts: Option<Timestamps>,
    /// Application bytes carried.
    pub payload_bytes: u32,
    /// Bytes on the wire, headers included; what links serialise and queues count.
    pub wire_bytes: u32,
    pub ext: PacketExt,
    /// The IP header's ECN codepoint.
    pub ecn: IpEcn,
}

impl Packet {
    /// Sequence space the segment occupies: payload plus one for SYN and FIN.
    pub fn seq_len(&self) -> u64 {
        self.payload_bytes as u64 + self.flags.has(TcpFlags::SYN) as u64 + self.flags.has(TcpFlags::FIN) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_option_length_is_padded() {
        let mut s = SackBlocks::default();
        assert_eq!(s.option_bytes(), 0);
        s.push(1, 2);
        assert_eq!(s.option_bytes(), 12);
        s.push(3, 4);
        s.push(5, 6);
        assert!(!s.push(7, 8));
        assert_eq!(s.option_bytes(), 28);
    }

    /// The header is moved by value through queues and the pool: the SCTP
    /// extension must not make it larger than MPTCP's options already did
    /// (200 bytes on 64-bit targets before SCTP was added).
    #[test]
    fn the_packet_header_stays_200_bytes() {
        assert_eq!(std::mem::size_of::<Packet>(), 200);
        assert!(std::mem::size_of::<crate::sctp::Chunk>() <= std::mem::size_of::<crate::mptcp::MptcpOpts>());
    }

    #[test]
    fn syn_and_fin_occupy_sequence_space() {
        let p = Packet { flags: TcpFlags(TcpFlags::SYN | TcpFlags::FIN), payload_bytes: 10, ..Default::default() };
        assert_eq!(p.seq_len(), 12);
    }
}
