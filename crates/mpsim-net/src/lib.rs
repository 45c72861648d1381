//! The network model: full-duplex links with a rate, a propagation delay, a
//! queue at each transmitter (drop-tail or an AQM discipline) and a loss model, and the static
//! forwarding tables of switches and routers. Links read packet headers
//! only; they never look at transport state.

pub mod link;
pub mod loss;
pub mod qdisc;
pub mod routing;
pub mod sdn;

pub use link::{DirStats, EnqueueOutcome, Hop, LinkDir, LinkDirParams, QueueLimit};
pub use loss::LossModel;
pub use qdisc::{AqmAction, QdiscConfig};
pub use routing::{iface_addr, iface_of_addr, FlowKey, ForwardingMode, NodeKind, RouteConfig, Routes, Topology, MAX_LINKS};
