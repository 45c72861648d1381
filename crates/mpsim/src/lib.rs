//! The mpsim simulation: the only event loop. [`Simulation`] owns the clock,
//! the event queue, the packet pool, the network, the endpoints and the
//! applications, and produces the run summary and the columnar traces.

mod build;
mod endpoint;
mod flows;
mod forwarding;
pub mod pcap;
mod report;
mod sdn;
mod sim;
pub mod spec;
pub mod vocabulary;
// The test networks name the engine `mpsim::`, as the tests outside do.
#[cfg(test)]
extern crate self as mpsim;

pub use mpsim_core::SimTime;
pub use report::{Table, Traces};

/// Trace column types, for bindings.
pub mod report_column {
    pub use crate::report::Column;
}
pub use sdn::SdnPacketIn;
pub use sim::{BuildError, Simulation};
pub use spec::Spec;

/// Version reported in run summaries.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
