//! Vocabulary shared by every mpsim crate: simulated time, units, ids,
//! deterministic random streams, the event queue and the packet header.
//! Nothing here does I/O or knows about Python.

pub mod checksum;
pub mod event;
pub mod ids;
pub mod mptcp;
pub mod packet;
pub mod pool;
pub mod rng;
pub mod sctp;
pub mod spare;
pub mod time;

pub use event::EventQueue;
pub use ids::{Addr, FlowId, LinkId, NodeId};
pub use packet::{IpEcn, Packet, PacketExt, Proto, SackBlocks, TcpFlags, Timestamps};
pub use pool::{PacketId, PacketPool};
pub use rng::SimRng;
pub use time::{SimDuration, SimTime};
