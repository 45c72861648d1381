//! Software-defined networking: per-switch flow tables (OpenFlow-style,
//! sans-IO), the network graph as a controller sees it, and the built-in
//! SdnController applications. The engine (crates/mpsim/src/sdn.rs) owns
//! the packet-in buffers, the controller latency and the flow-mods.

pub mod apps;
pub mod flowtable;
pub mod graph;

pub use apps::{AppKind, BuiltinController, Decision, Opening, PacketIn, SdnController, Threshold, DEFAULT_THRESHOLDS};
pub use flowtable::{Action, FlowTable, Match, MptcpMatch, PacketFields, Rule, Verdict};
pub use graph::NetGraph;
