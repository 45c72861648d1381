//! Multipath TCP (RFC 8684, `specs/mptcp-protocol.md`): keys and HMACs,
//! the connection with its data-level sequence space and shared receive
//! buffer over several [`crate::tcp::Subflow`]s, schedulers and path managers.

pub mod crypto;
