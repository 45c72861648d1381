//! Sans-IO transport endpoints. Every endpoint takes time and packets in
//! (`handle_segment`, `handle_timeout`) and gives packets, a next deadline
//! and application events out (`poll_transmit`, `poll_timeout`,
//! `poll_event`). They know nothing of links, queues or the event loop.

pub mod apps;
pub mod buffers;
pub mod mptcp;
pub mod sctp;
pub mod tcp;
pub mod transport;
pub mod workload;

pub use mptcp::{
    LocalAddr, MptcpConfig, MptcpConnection, MptcpEvent, PathManagerKind, SchedulerKind, ADD_ADDR_RETRANS_MAX,
    DEFAULT_ADD_ADDR_TIMEOUT,
};
pub use tcp::{AppEvent, TcpConfig, TcpConnection, TcpState};
