//! Networks and experiments shared by the integration tests, the examples
//! and the benches (each includes this folder as a module): the testbed
//! networks, the validation against theory and the RFC 6356 goals. They
//! drive the engine through its public API only, so the library crate
//! holds the engine and nothing else.

// Each test, example or bench uses a different part of these modules.
#![allow(dead_code)]

pub mod multipath;
pub mod testbed;
pub mod tshark;
pub mod validation;
pub mod validation_wvegas;
