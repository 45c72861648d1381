//! MPTCP options as carried in the packet header (RFC 8684 section 3;
//! `specs/mptcp-protocol.md` section 3). Values, not bytes: the pcap writer
//! renders the wire format. Sequence numbers are full 64-bit DSNs and
//! relative subflow sequence numbers; the writer truncates as the flags say.

/// The DSS option: DATA_ACK, mapping and DATA_FIN (one per segment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dss {
    /// Cumulative data-level acknowledgement (next expected DSN).
    pub data_ack: Option<u64>,
    /// Mapping of this segment's payload: (DSN, relative SSN, data-level length).
    pub mapping: Option<DssMapping>,
    /// This mapping ends with the DATA_FIN (counted in `len`).
    pub data_fin: bool,
    /// Send the DATA_ACK / DSN as 64-bit values (else the low 32 bits).
    pub ack64: bool,
    pub dsn64: bool,
    /// A checksum is carried (negotiated with MP_CAPABLE flag A).
    pub checksum: Option<u16>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DssMapping {
    pub dsn: u64,
    /// Subflow sequence number relative to the subflow's ISN.
    pub ssn: u32,
    /// Data-level length; 0 is the infinite mapping (fallback).
    pub len: u16,
}

/// Up to this many address ids in one REMOVE_ADDR.
pub const MAX_REMOVE_IDS: usize = 4;

/// The non-DSS MPTCP options (at most one per segment here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MpOption {
    #[default]
    None,
    /// SYN (v1: no key). `checksum` = flag A.
    CapableSyn {
        version: u8,
        checksum: bool,
    },
    /// SYN/ACK: the responder's key.
    CapableSynAck {
        version: u8,
        checksum: bool,
        key: u64,
    },
    /// Third ACK: initiator's then responder's key.
    CapableAck {
        version: u8,
        checksum: bool,
        sender_key: u64,
        receiver_key: u64,
    },
    /// First data segment (v1) when the third ACK carried no data.
    CapableData {
        version: u8,
        checksum: bool,
        sender_key: u64,
        receiver_key: u64,
        data_len: u16,
    },
    JoinSyn {
        token: u32,
        nonce: u32,
        addr_id: u8,
        backup: bool,
    },
    JoinSynAck {
        hmac64: u64,
        nonce: u32,
        addr_id: u8,
        backup: bool,
    },
    JoinAck {
        hmac: [u8; 20],
    },
    /// IPv4 ADD_ADDR; `hmac64` is None when `echo` is set.
    AddAddr {
        addr_id: u8,
        addr: u32,
        port: Option<u16>,
        hmac64: Option<u64>,
        echo: bool,
    },
    RemoveAddr {
        ids: [u8; MAX_REMOVE_IDS],
        n: u8,
    },
    MpPrio {
        backup: bool,
    },
    MpFail {
        dsn: u64,
    },
    FastClose {
        receiver_key: u64,
    },
    TcpRst {
        reason: u8,
        transient: bool,
    },
}

/// Everything MPTCP puts in one segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpOpts {
    pub dss: Option<Dss>,
    pub option: MpOption,
}

impl Dss {
    /// Wire length of the option (spec 3.3).
    pub fn len_bytes(&self) -> u32 {
        let ack = self.data_ack.map_or(0, |_| if self.ack64 { 8 } else { 4 });
        let map = if self.mapping.is_some() || self.data_fin {
            (if self.dsn64 { 8 } else { 4 }) + 4 + 2 + if self.checksum.is_some() { 2 } else { 0 }
        } else {
            0
        };
        4 + ack + map
    }
}

impl MpOption {
    /// Wire length of the option (spec section 3 table).
    pub fn len_bytes(&self) -> u32 {
        match self {
            MpOption::None => 0,
            MpOption::CapableSyn { version, .. } => {
                if *version == 0 {
                    12
                } else {
                    4
                }
            }
            MpOption::CapableSynAck { .. } => 12,
            MpOption::CapableAck { .. } => 20,
            MpOption::CapableData { checksum, .. } => {
                if *checksum {
                    24
                } else {
                    22
                }
            }
            MpOption::JoinSyn { .. } => 12,
            MpOption::JoinSynAck { .. } => 16,
            MpOption::JoinAck { .. } => 24,
            MpOption::AddAddr { port, echo, .. } => 8 + if port.is_some() { 2 } else { 0 } + if *echo { 0 } else { 8 },
            MpOption::RemoveAddr { n, .. } => 3 + *n as u32,
            MpOption::MpPrio { .. } => 3,
            MpOption::MpFail { .. } | MpOption::FastClose { .. } => 12,
            MpOption::TcpRst { .. } => 4,
        }
    }
}

impl MptcpOpts {
    /// TCP option space taken, padded to a multiple of 4.
    pub fn len_bytes(&self) -> u32 {
        let raw = self.dss.map_or(0, |d| d.len_bytes()) + self.option.len_bytes();
        raw.div_ceil(4) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dss_lengths_match_the_spec() {
        let map = Some(DssMapping { dsn: 1, ssn: 1, len: 10 });
        let ack_only32 = Dss { data_ack: Some(1), ..Default::default() };
        assert_eq!(ack_only32.len_bytes(), 8);
        let ack_only64 = Dss { data_ack: Some(1), ack64: true, ..Default::default() };
        assert_eq!(ack_only64.len_bytes(), 12);
        let both32 = Dss { data_ack: Some(1), mapping: map, ..Default::default() };
        assert_eq!(both32.len_bytes(), 18);
        let both64csum =
            Dss { data_ack: Some(1), mapping: map, ack64: true, dsn64: true, checksum: Some(0), ..Default::default() };
        assert_eq!(both64csum.len_bytes(), 28);
    }

    #[test]
    fn option_lengths_match_the_spec() {
        assert_eq!(MpOption::CapableSyn { version: 1, checksum: false }.len_bytes(), 4);
        assert_eq!(MpOption::JoinAck { hmac: [0; 20] }.len_bytes(), 24);
        let add = MpOption::AddAddr { addr_id: 1, addr: 0, port: None, hmac64: Some(0), echo: false };
        assert_eq!(add.len_bytes(), 16);
        let echo = MpOption::AddAddr { addr_id: 1, addr: 0, port: Some(1), hmac64: None, echo: true };
        assert_eq!(echo.len_bytes(), 10);
        assert_eq!(MpOption::RemoveAddr { ids: [1, 0, 0, 0], n: 1 }.len_bytes(), 4);
    }
}
