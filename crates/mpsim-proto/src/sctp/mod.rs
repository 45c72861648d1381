//! SCTP (RFC 4960 / RFC 9260) with concurrent multipath transfer: a
//! multihomed association, sans-IO like the TCP and MPTCP endpoints.
//!
//! * `association`: states, handshake, shutdown, heartbeats and path
//!   failure detection, the endpoint interface.
//! * `sender`: TSNs, per-destination congestion control and RTO, SACK
//!   processing, fast retransmit, T3-rtx, scheduling of new data.
//! * `receiver`: the bounded receive buffer, rwnd, gap blocks and
//!   duplicate TSNs, delayed SACK, in-order delivery.
//!
//! The decisions the CMT variants change (missing reports, cwnd growth,
//! the reaction to a loss, where a retransmission goes, which destination
//! takes new data, when the receiver SACKs) call the pure rules in
//! `variants` according to `Variant` when there is more than one
//! destination; with one, RFC 4960's own rules apply. TSNs start at 1 and never wrap in a run, so
//! plain integer comparison is RFC 1982 serial arithmetic here.

mod association;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;
pub mod variants;

pub use association::{AssocState, Association};

use mpsim_core::{Addr, SimDuration};

/// The multipath scheme (scenario key `variant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Variant {
    /// CMT (Iyengar, Amer, Stewart 2006): split fast retransmit, CUCv2,
    /// DAC, RTX-SSTHRESH.
    #[default]
    Cmt,
    /// SMT: IOPD classification and MCC (Khan & Qadir), on CMT's growth and DAC.
    Smt,
    /// SMOS: scheduling by predicted arrival (Liao et al. 2010), on CMT's loss handling.
    Smos,
}

impl Variant {
    /// The scenario's names of the variants; the first is the default.
    pub const NAMES: &'static [(&'static str, Variant)] =
        &[("cmt", Variant::Cmt), ("smt", Variant::Smt), ("smos", Variant::Smos)];

    /// The variant named by the scenario (`None`: the default, cmt).
    pub fn parse(name: Option<&str>) -> Option<Variant> {
        let Some(name) = name else { return Some(Self::NAMES[0].1) };
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }
}

/// One path of the association: a local address and the peer address
/// (destination) it sends to. Both ends list the paths in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathAddrs {
    pub local: Addr,
    pub remote: Addr,
}

/// Association parameters. Defaults are RFC 4960 section 15's protocol
/// parameters; an MTU of 1500 bytes.
#[derive(Clone, Copy, Debug)]
pub struct SctpConfig {
    /// Largest DATA payload per packet: MTU - IPv4 20 - common header 12 -
    /// DATA header 16.
    pub max_payload_bytes: u32,
    /// Bytes on the wire below the SCTP common header (Ethernet and IPv4).
    pub lower_header_bytes: u32,
    /// The receive buffer shared by all paths (a_rwnd when empty), bytes.
    pub rbuf_bytes: u64,
    pub rto_initial: SimDuration,
    pub rto_min: SimDuration,
    pub rto_max: SimDuration,
    /// Path.Max.Retrans: consecutive errors after which a destination is inactive.
    pub path_max_retrans: u32,
    /// Association.Max.Retrans: consecutive errors after which the association fails.
    pub assoc_max_retrans: u32,
    /// Max.Init.Retransmits.
    pub max_init_retransmits: u32,
    /// HB.interval.
    pub hb_interval: SimDuration,
    /// Delayed SACK timeout (RFC 4960 section 6.2: at most 500 ms; 200 ms usual).
    pub sack_delay: SimDuration,
    /// SACK at least every this many DATA packets (RFC 4960 section 6.2: 2).
    pub sack_freq: u32,
    /// Spread new data over every active destination (CMT); false: the
    /// primary path only (plain SCTP).
    pub cmt: bool,
    pub variant: Variant,
    /// Where CMT and SMOS send a retransmission, and every variant a
    /// timeout's (SMT's fast retransmissions go to MCC's fastest path).
    pub rtx_policy: variants::rtx_policy::RtxPolicy,
    /// SMOS: number TSNs a trunk at a time in order of predicted arrival
    /// (`plan_trunk`); false: the online choice per chunk.
    pub smos_trunk: bool,
}

impl Default for SctpConfig {
    fn default() -> Self {
        SctpConfig {
            max_payload_bytes: 1500 - 20 - 12 - 16,
            lower_header_bytes: 14 + 20,
            rbuf_bytes: 64 * 1024,
            rto_initial: SimDuration::from_secs(3),
            rto_min: SimDuration::from_secs(1),
            rto_max: SimDuration::from_secs(60),
            path_max_retrans: 5,
            assoc_max_retrans: 10,
            max_init_retransmits: 8,
            hb_interval: SimDuration::from_secs(30),
            sack_delay: SimDuration::from_millis(200),
            sack_freq: 2,
            cmt: true,
            variant: Variant::Cmt,
            rtx_policy: variants::rtx_policy::RtxPolicy::Ssthresh,
            smos_trunk: false,
        }
    }
}

impl SctpConfig {
    /// The MTU as congestion control counts it: a full DATA packet's
    /// SCTP-level bytes (common header, chunk header, payload).
    pub fn mtu_bytes(&self) -> u64 {
        (self.max_payload_bytes + 12 + 16 + 20) as u64
    }
}
