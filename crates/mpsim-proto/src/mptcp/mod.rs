//! Multipath TCP (RFC 8684, `specs/mptcp-protocol.md`): keys and HMACs,
//! the connection over several [`crate::tcp::Subflow`]s, and its parts,
//! each a sans-IO state machine with its own tests: the path manager, the
//! scheduler, the data-level send side (sequence space, reinjection,
//! DATA_FIN, connection-level timer) and receive side (mappings,
//! reassembly, window).
//!
//! Functions run for every packet are marked `#[inline(always)]`: left to
//! itself the compiler keeps them out of line, and their calls cost about
//! 2 % of the two-path benchmark's instructions (docs/performance.md).

mod connection;
pub mod crypto;
mod paths;
mod pm;
mod receiver;
mod recv;
mod scheduler;
mod send;
mod sender;
#[cfg(test)]
mod tests;

pub use connection::{MptcpConnection, MptcpStats, SubflowInfo};

use crate::tcp::TcpConfig;
use mpsim_core::{Addr, SimDuration};

/// Which subflow carries the next segment (spec section 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SchedulerKind {
    /// Lowest RTT among subflows with free congestion window.
    #[default]
    Default,
    RoundRobin,
    /// Every segment on every usable non-backup subflow.
    Redundant,
    /// Upstream Linux (net/mptcp) `mptcp_subflow_get_send`: the subflow
    /// that would empty its send queue first at its pacing rate takes a
    /// burst of up to 64 KiB, queued beyond its window while its send
    /// buffer has room (spec 11.4).
    Upstream,
}

/// Which subflows exist (spec section 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PathManagerKind {
    /// No extra subflows, nothing announced; joins accepted.
    Default,
    /// A subflow per (local, remote) address pair; addresses announced.
    #[default]
    Fullmesh,
    /// `n` subflows in all between the initial address pair.
    Ndiffports(u8),
    /// Upstream-style endpoints: `subflow` addresses open extra subflows
    /// to the peer's initial address, `signal` ones are announced; at most
    /// `max_subflows` extra subflows and `max_add_addr_accepted` accepted
    /// announcements (kernel defaults 2 and 0).
    Endpoints { max_subflows: u8, max_add_addr_accepted: u8 },
}

impl SchedulerKind {
    /// The scenario's names of the schedulers; the first is the default.
    pub const NAMES: &'static [(&'static str, SchedulerKind)] = &[
        ("default", SchedulerKind::Default),
        ("roundrobin", SchedulerKind::RoundRobin),
        ("redundant", SchedulerKind::Redundant),
        ("upstream", SchedulerKind::Upstream),
    ];

    /// The scheduler named by the scenario (`None`: the default).
    pub fn parse(name: Option<&str>) -> Option<SchedulerKind> {
        let Some(name) = name else { return Some(Self::NAMES[0].1) };
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, k)| k)
    }
}

/// Subflows of a connection, in all, at most: Linux's `MPTCP_PM_ADDR_MAX`
/// bounds the endpoints limits (each connection has a block of 16 ports).
pub const MAX_SUBFLOWS: u8 = 8;
/// `ndiffports`: subflows in all when the scenario does not say.
pub const DEFAULT_NDIFFPORTS_SUBFLOWS: u8 = 2;
/// `endpoints`: Linux's default limits (`ip mptcp limits`: 2 extra
/// subflows, no accepted announcements).
pub const DEFAULT_MAX_SUBFLOWS: u8 = 2;
pub const DEFAULT_MAX_ADD_ADDR_ACCEPTED: u8 = 0;

impl PathManagerKind {
    /// The scenario's names of the path managers; the first is the default.
    pub const NAMES: &'static [&'static str] = &["fullmesh", "default", "ndiffports", "endpoints"];

    /// The path manager named by the scenario (`None`: the default), with
    /// its limits (`None`: the defaults above; larger ones are clamped to
    /// [`MAX_SUBFLOWS`]).
    pub fn parse(
        name: Option<&str>,
        subflows: Option<u8>,
        max_subflows: Option<u8>,
        max_add_addr_accepted: Option<u8>,
    ) -> Option<PathManagerKind> {
        Some(match name.unwrap_or(Self::NAMES[0]) {
            "default" => PathManagerKind::Default,
            "fullmesh" => PathManagerKind::Fullmesh,
            "ndiffports" => PathManagerKind::Ndiffports(subflows.unwrap_or(DEFAULT_NDIFFPORTS_SUBFLOWS).max(1)),
            "endpoints" => PathManagerKind::Endpoints {
                max_subflows: max_subflows.unwrap_or(DEFAULT_MAX_SUBFLOWS).min(MAX_SUBFLOWS),
                max_add_addr_accepted: max_add_addr_accepted.unwrap_or(DEFAULT_MAX_ADD_ADDR_ACCEPTED).min(MAX_SUBFLOWS),
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn every_scheduler_and_path_manager_name_parses_and_unknown_ones_do_not() {
        for &(name, kind) in SchedulerKind::NAMES {
            assert_eq!(SchedulerKind::parse(Some(name)), Some(kind));
        }
        assert_eq!(SchedulerKind::parse(None), Some(SchedulerKind::default()));
        assert_eq!(SchedulerKind::parse(Some("blest")), None);
        for name in PathManagerKind::NAMES {
            assert!(PathManagerKind::parse(Some(name), None, None, None).is_some(), "{name}");
        }
        assert_eq!(PathManagerKind::parse(None, None, None, None), Some(PathManagerKind::default()));
        assert_eq!(PathManagerKind::parse(Some("binder"), None, None, None), None);
        assert_eq!(PathManagerKind::parse(Some("ndiffports"), None, None, None), Some(PathManagerKind::Ndiffports(2)));
        let clamped = PathManagerKind::parse(Some("endpoints"), None, Some(20), None);
        assert_eq!(clamped, Some(PathManagerKind::Endpoints { max_subflows: 8, max_add_addr_accepted: 0 }));
    }
}

/// A local address of the host and how the path manager may use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalAddr {
    pub addr: Addr,
    /// Address id (0 for the initial subflow's address).
    pub id: u8,
    /// Subflows from this address are backup (MP_JOIN B flag).
    pub backup: bool,
    /// The interface is up.
    pub up: bool,
}

/// Configuration of one MPTCP connection.
#[derive(Clone, Debug)]
pub struct MptcpConfig {
    /// Per-subflow TCP parameters; `rcvbuf_bytes` is the connection's
    /// shared receive buffer.
    pub tcp: TcpConfig,
    pub cc: String,
    pub scheduler: SchedulerKind,
    pub path_manager: PathManagerKind,
    /// The host's addresses in preference order; the first is the initial one.
    pub local_addrs: Vec<LocalAddr>,
    /// The local address routing picks towards each address of the peer's
    /// host, as (peer address, local address): where a subflow to an
    /// announced address leaves from. A peer address not listed is
    /// reached from the first local address.
    pub route_sources: Vec<(Addr, Addr)>,
    /// First local port for additional subflows.
    pub port_base: u16,
    /// Seed of this connection's keys and nonces.
    pub seed: u64,
    /// An ADD_ADDR not echoed within this time is sent again, at most
    /// `ADD_ADDR_RETRANS_MAX` times (Linux `net.mptcp.add_addr_timeout`).
    pub add_addr_timeout: SimDuration,
    /// Connection-level send buffer: written data stays in it until
    /// DATA_ACKed, and new data enters only while it has room. None: unlimited.
    pub sndbuf_bytes: Option<u64>,
    /// Upstream scheduler without `sndbuf_bytes`: bound the data not yet
    /// DATA_ACKed by Linux's autotuned MPTCP socket send buffer,
    /// `tcp_wmem[0]` plus the subflows' send buffers
    /// (`__mptcp_sync_sndbuf`). The engine spec's `msk_sndbuf_auto`, which
    /// the front end sets in linux mode.
    pub msk_sndbuf_auto: bool,
    /// Ask for DSS checksums (MP_CAPABLE flag A, spec 2); both ends use
    /// them if either asks (RFC 8684 3.1).
    pub dss_checksum: bool,
    /// When the connection-level window blocks new data, send its head
    /// again on a faster subflow (the out-of-tree kernel's opportunistic
    /// retransmission, Raiciu et al., NSDI 2012; spec 11.1).
    pub opportunistic_retransmission: bool,
    /// ... and halve the window of the slower subflow holding it back
    /// (penalisation), at most once per SRTT of the faster one.
    pub penalisation: bool,
}

impl MptcpConfig {
    /// The out-of-tree kernel's schedulers retransmit opportunistically and
    /// penalise; upstream Linux does neither.
    pub fn receive_buffer_mechanisms_by_default(scheduler: SchedulerKind) -> bool {
        scheduler != SchedulerKind::Upstream
    }
}

/// Retransmissions of an unechoed ADD_ADDR (Linux `ADD_ADDR_RETRANS_MAX`).
pub const ADD_ADDR_RETRANS_MAX: u8 = 3;

/// Linux's default `add_addr_timeout`.
pub const DEFAULT_ADD_ADDR_TIMEOUT: SimDuration = SimDuration::from_secs(120);

/// What the engine must learn from an MPTCP endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpEvent {
    /// A subflow uses this 4-tuple (local, local port, remote, remote port).
    SubflowOpened { local: Addr, local_port: u16, remote: Addr, remote_port: u16 },
    /// Our token, for routing incoming MP_JOINs.
    Token(u32),
    /// The connection fell back to plain TCP.
    Fallback,
}
