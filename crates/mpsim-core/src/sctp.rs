//! SCTP chunks as carried in the packet header (RFC 9260 section 3.3).
//! Values, not bytes: a packet carries one chunk of the kinds below (the
//! model never bundles), and `wire_bytes` counts the chunk as RFC 9260
//! lays it out. TSNs are 32 bits as on the wire; a run never wraps them
//! (2^32 chunks are terabytes), so plain comparison is serial arithmetic.

/// Bytes of the SCTP common header: ports, verification tag, CRC32c
/// (RFC 9260 section 3.1).
pub const COMMON_HEADER_BYTES: u32 = 12;
/// Bytes of a DATA chunk before its payload (RFC 9260 section 3.3.1).
pub const DATA_HEADER_BYTES: u32 = 16;
/// Bytes of a SACK chunk without gap blocks and duplicate TSNs (section 3.3.4).
pub const SACK_HEADER_BYTES: u32 = 16;
/// Gap Ack Blocks a SACK carries at most here (the lowest ones; RFC 9260
/// section 6.2 lets a receiver leave blocks out when they do not fit).
pub const MAX_GAP_BLOCKS: usize = 10;
/// Duplicate TSNs a SACK reports at most here (the rest are left out, as
/// RFC 9260 section 3.3.4 allows).
pub const MAX_DUP_TSNS: usize = 3;
/// Bytes of the Heartbeat Info a HEARTBEAT carries here: the parameter
/// header and the sender's own record (path, send time, padding).
pub const HEARTBEAT_INFO_BYTES: u32 = 4 + 16;
/// Bytes of the State Cookie an INIT ACK hands out and COOKIE ECHO returns.
pub const STATE_COOKIE_BYTES: u32 = 32;
/// Bytes of an IPv4 Address parameter (RFC 9260 section 3.3.2.1).
pub const IPV4_ADDRESS_PARAM_BYTES: u32 = 8;

/// DATA chunk flag bits (RFC 9260 section 3.3.1): unordered, beginning, end.
pub const DATA_FLAG_U: u8 = 0x04;
pub const DATA_FLAG_B: u8 = 0x02;
pub const DATA_FLAG_E: u8 = 0x01;
/// SACK flag bit of CMT's delayed ACK: the SACK covers two DATA packets
/// (FreeBSD's `SCTP_SACK_CMT_DAC`; absent: one).
pub const SACK_FLAG_DAC_TWO: u8 = 0x80;

/// A DATA chunk; its payload length is the packet's `payload_bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataChunk {
    pub tsn: u32,
    pub stream_id: u16,
    pub stream_seq: u16,
    /// U/B/E bits.
    pub flags: u8,
}

/// A SACK chunk (RFC 9260 section 3.3.4). Gap blocks are offsets from
/// `cum_tsn`: block `(s, e)` acknowledges TSNs `cum_tsn + s ..= cum_tsn + e`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackChunk {
    pub cum_tsn: u32,
    /// Advertised receiver window credit, bytes.
    pub a_rwnd_bytes: u32,
    pub flags: u8,
    pub n_gaps: u8,
    pub n_dups: u8,
    pub gaps: [(u16, u16); MAX_GAP_BLOCKS],
    pub dups: [u32; MAX_DUP_TSNS],
}

impl SackChunk {
    pub fn gaps(&self) -> &[(u16, u16)] {
        &self.gaps[..self.n_gaps as usize]
    }
    pub fn dups(&self) -> &[u32] {
        &self.dups[..self.n_dups as usize]
    }
    /// Adds a gap block; false (nothing added) when the SACK is full.
    pub fn push_gap(&mut self, start: u16, end: u16) -> bool {
        if (self.n_gaps as usize) < MAX_GAP_BLOCKS {
            self.gaps[self.n_gaps as usize] = (start, end);
            self.n_gaps += 1;
            true
        } else {
            false
        }
    }
    /// Reports a duplicate TSN; false (nothing added) when the SACK is full.
    pub fn push_dup(&mut self, tsn: u32) -> bool {
        if (self.n_dups as usize) < MAX_DUP_TSNS {
            self.dups[self.n_dups as usize] = tsn;
            self.n_dups += 1;
            true
        } else {
            false
        }
    }
    /// Acknowledged TSN ranges, inclusive, lowest first.
    pub fn gap_tsns(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.gaps().iter().map(move |&(s, e)| (self.cum_tsn + s as u32, self.cum_tsn + e as u32))
    }
}

/// The one chunk a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    Data(DataChunk),
    Sack(SackChunk),
    /// HEARTBEAT on destination `path`, sent at `sent_ps` (the Heartbeat
    /// Info is opaque to the peer, which echoes it).
    Heartbeat {
        path: u8,
        sent_ps: u64,
    },
    HeartbeatAck {
        path: u8,
        sent_ps: u64,
    },
    /// INIT with the sender's initial TSN, its receive window and the
    /// number of IPv4 addresses it lists (RFC 9260 section 3.3.2).
    Init {
        initial_tsn: u32,
        a_rwnd_bytes: u32,
        n_addrs: u8,
    },
    InitAck {
        initial_tsn: u32,
        a_rwnd_bytes: u32,
        n_addrs: u8,
    },
    CookieEcho,
    CookieAck,
    /// SHUTDOWN with the cumulative TSN the sender has received.
    Shutdown {
        cum_tsn: u32,
    },
    ShutdownAck,
    ShutdownComplete,
}

/// Rounds a chunk length up to the 4-byte boundary (RFC 9260 section 3.2).
fn padded(len: u32) -> u32 {
    len.div_ceil(4) * 4
}

impl Chunk {
    /// The chunk's bytes on the wire, padding included, without the DATA
    /// payload's own bytes: `payload_bytes` padded adds to this.
    pub fn wire_bytes(&self, payload_bytes: u32) -> u32 {
        match self {
            Chunk::Data(_) => DATA_HEADER_BYTES + padded(payload_bytes),
            Chunk::Sack(s) => SACK_HEADER_BYTES + 4 * s.n_gaps as u32 + 4 * s.n_dups as u32,
            Chunk::Heartbeat { .. } | Chunk::HeartbeatAck { .. } => 4 + HEARTBEAT_INFO_BYTES,
            Chunk::Init { n_addrs, .. } => 20 + IPV4_ADDRESS_PARAM_BYTES * *n_addrs as u32,
            // The INIT ACK adds the State Cookie parameter (header + cookie).
            Chunk::InitAck { n_addrs, .. } => 20 + IPV4_ADDRESS_PARAM_BYTES * *n_addrs as u32 + 4 + STATE_COOKIE_BYTES,
            Chunk::CookieEcho => 4 + STATE_COOKIE_BYTES,
            Chunk::Shutdown { .. } => 8,
            Chunk::CookieAck | Chunk::ShutdownAck | Chunk::ShutdownComplete => 4,
        }
    }

    /// RFC 9260 section 3.2 chunk type.
    pub fn type_code(&self) -> u8 {
        match self {
            Chunk::Data(_) => 0,
            Chunk::Init { .. } => 1,
            Chunk::InitAck { .. } => 2,
            Chunk::Sack(_) => 3,
            Chunk::Heartbeat { .. } => 4,
            Chunk::HeartbeatAck { .. } => 5,
            Chunk::Shutdown { .. } => 7,
            Chunk::ShutdownAck => 8,
            Chunk::CookieEcho => 10,
            Chunk::CookieAck => 11,
            Chunk::ShutdownComplete => 14,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_follow_rfc9260_layouts() {
        let data = Chunk::Data(DataChunk::default());
        assert_eq!(data.wire_bytes(1452), 16 + 1452);
        assert_eq!(data.wire_bytes(1), 16 + 4, "payload padded to 4 bytes");
        let mut sack = SackChunk::default();
        assert_eq!(Chunk::Sack(sack).wire_bytes(0), 16);
        sack.push_gap(2, 3);
        sack.push_gap(5, 5);
        sack.push_dup(7);
        assert_eq!(Chunk::Sack(sack).wire_bytes(0), 16 + 8 + 4);
        assert_eq!(Chunk::Heartbeat { path: 1, sent_ps: 5 }.wire_bytes(0), 24);
        assert_eq!(Chunk::Init { initial_tsn: 1, a_rwnd_bytes: 65536, n_addrs: 2 }.wire_bytes(0), 36);
        assert_eq!(Chunk::Shutdown { cum_tsn: 9 }.wire_bytes(0), 8);
    }

    #[test]
    fn a_full_sack_refuses_more_blocks_and_duplicates() {
        let mut sack = SackChunk { cum_tsn: 100, ..Default::default() };
        for i in 0..MAX_GAP_BLOCKS as u16 {
            assert!(sack.push_gap(2 * i + 2, 2 * i + 2));
        }
        assert!(!sack.push_gap(100, 101));
        for t in 0..MAX_DUP_TSNS as u32 {
            assert!(sack.push_dup(t));
        }
        assert!(!sack.push_dup(99));
        assert_eq!(sack.gap_tsns().next(), Some((102, 102)));
        assert_eq!(sack.gaps().len(), MAX_GAP_BLOCKS);
    }
}
