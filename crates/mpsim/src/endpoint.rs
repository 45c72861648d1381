//! The endpoints the engine drives, behind one interface
//! (`mpsim_proto::transport::Transport`). The enum keeps the dispatch
//! static on the per-packet path: a transport is one more variant and one
//! more arm in `each!`.

use mpsim_core::{Packet, SimTime};
use mpsim_proto::sctp::Association;
pub use mpsim_proto::transport::RecoveryCounters;
use mpsim_proto::transport::{PathView, Transport, Tuple};
use mpsim_proto::{AppEvent, MptcpConnection, MptcpEvent, TcpConnection};

pub(crate) enum EpKind {
    Tcp(Box<TcpConnection>),
    Mptcp(Box<MptcpConnection>),
    Cmt(Box<Association>),
    Closed,
}

/// `$body` with `$c` bound to the endpoint's transport, or `$closed` for
/// an empty slot.
macro_rules! each {
    ($self:expr, $c:ident => $body:expr, $closed:expr) => {
        match $self {
            EpKind::Tcp($c) => $body,
            EpKind::Mptcp($c) => $body,
            EpKind::Cmt($c) => $body,
            EpKind::Closed => $closed,
        }
    };
}

impl EpKind {
    /// The transport, for the cold paths (samplers, summary, debugging).
    pub fn transport(&self) -> Option<&dyn Transport> {
        each!(self, c => Some(&**c as &dyn Transport), None)
    }

    /// Hands a segment over; false if the endpoint did not want it.
    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        each!(self, c => Transport::handle_segment(&mut **c, now, pkt), true)
    }

    pub fn handle_timeout(&mut self, now: SimTime) {
        each!(self, c => Transport::handle_timeout(&mut **c, now), ())
    }

    /// Appends every packet the endpoint has to send to `sink`.
    pub fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        each!(self, c => Transport::drain_transmit(&mut **c, now, sink), ())
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        each!(self, c => Transport::poll_timeout(&**c), None)
    }

    pub fn poll_event(&mut self) -> Option<AppEvent> {
        each!(self, c => Transport::poll_event(&mut **c), None)
    }

    pub fn poll_transport_event(&mut self) -> Option<MptcpEvent> {
        each!(self, c => Transport::poll_transport_event(&mut **c), None)
    }

    /// Writes `bytes` more, or without end (`None`).
    pub fn write(&mut self, bytes: Option<u64>) {
        each!(self, c => Transport::write(&mut **c, bytes), ())
    }

    pub fn pause(&mut self) {
        each!(self, c => Transport::pause(&mut **c), ())
    }

    pub fn close(&mut self) {
        each!(self, c => Transport::close(&mut **c), ())
    }

    /// The endpoint still holds its 4-tuples.
    pub fn is_live(&self) -> bool {
        each!(self, c => Transport::is_live(&**c), false)
    }

    /// Nothing is left to do.
    pub fn is_done(&self) -> bool {
        each!(self, c => Transport::is_done(&**c), false)
    }

    /// The 4-tuples of the endpoint's paths: (local, local port, remote, remote port).
    pub fn tuples(&self) -> Vec<Tuple> {
        self.transport().map_or_else(Vec::new, |c| c.tuples())
    }

    /// The 4-tuple of the endpoint's first path.
    #[cfg(test)]
    pub fn first_tuple(&self) -> Option<Tuple> {
        self.tuples().first().copied()
    }

    /// Loss-recovery counters of this endpoint's paths, summed.
    pub fn counters(&self) -> RecoveryCounters {
        self.transport().map_or_else(RecoveryCounters::default, |c| c.counters())
    }

    /// The endpoint's paths; none for an empty slot.
    pub fn paths(&self) -> Vec<PathView> {
        self.transport().map_or_else(Vec::new, |c| c.paths())
    }
}
