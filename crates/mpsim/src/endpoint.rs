//! The endpoints the engine drives: a plain TCP connection or an MPTCP
//! connection, behind one set of sans-IO calls.

use mpsim_core::{Packet, SimTime};
use mpsim_proto::{AppEvent, MptcpConnection, MptcpEvent, TcpConnection};

pub(crate) enum EpKind {
    Tcp(Box<TcpConnection>),
    Mptcp(Box<MptcpConnection>),
    Closed,
}

impl EpKind {
    /// Hands a segment over; false if an MPTCP connection did not want it.
    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        match self {
            EpKind::Tcp(c) => {
                c.handle_segment(now, pkt);
                true
            }
            EpKind::Mptcp(c) => c.handle_segment(now, pkt),
            EpKind::Closed => true,
        }
    }

    pub fn handle_timeout(&mut self, now: SimTime) {
        match self {
            EpKind::Tcp(c) => c.handle_timeout(now),
            EpKind::Mptcp(c) => c.handle_timeout(now),
            EpKind::Closed => {}
        }
    }

    /// Appends every packet the endpoint has to send to `sink`.
    pub fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        match self {
            EpKind::Tcp(c) => c.drain_transmit(now, sink),
            EpKind::Mptcp(c) => c.drain_transmit(now, sink),
            EpKind::Closed => {}
        }
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            EpKind::Tcp(c) => c.poll_timeout(),
            EpKind::Mptcp(c) => c.poll_timeout(),
            EpKind::Closed => None,
        }
    }

    pub fn poll_event(&mut self) -> Option<AppEvent> {
        match self {
            EpKind::Tcp(c) => c.poll_event(),
            EpKind::Mptcp(c) => c.poll_event(),
            EpKind::Closed => None,
        }
    }

    pub fn poll_mptcp_event(&mut self) -> Option<MptcpEvent> {
        match self {
            EpKind::Mptcp(c) => c.poll_mptcp_event(),
            _ => None,
        }
    }

    /// Writes `bytes` more, or without end (`None`).
    pub fn write(&mut self, bytes: Option<u64>) {
        match (self, bytes) {
            (EpKind::Tcp(c), Some(b)) => c.send(b),
            (EpKind::Tcp(c), None) => c.send_unlimited(),
            (EpKind::Mptcp(c), Some(b)) => c.send(b),
            (EpKind::Mptcp(c), None) => c.send_unlimited(),
            (EpKind::Closed, _) => {}
        }
    }

    pub fn pause(&mut self) {
        match self {
            EpKind::Tcp(c) => c.pause(),
            EpKind::Mptcp(c) => c.pause(),
            EpKind::Closed => {}
        }
    }

    pub fn close(&mut self) {
        match self {
            EpKind::Tcp(c) => c.close(),
            EpKind::Mptcp(c) => c.close(),
            EpKind::Closed => {}
        }
    }

    /// The endpoint still holds its 4-tuples: some subflow is not closed,
    /// and a finished MPTCP connection still has something to do (a
    /// subflow's FIN or TIME_WAIT): one left idle holds nothing.
    pub fn is_live(&self) -> bool {
        match self {
            EpKind::Tcp(c) => !c.sf.is_closed(),
            EpKind::Mptcp(c) => {
                c.subflows().any(|s| !s.gone && !s.sf.is_closed()) && (!c.is_finished() || c.poll_timeout().is_some())
            }
            EpKind::Closed => false,
        }
    }

    /// The 4-tuple of the endpoint's first subflow: (local, local port, remote, remote port).
    #[cfg(test)]
    pub fn first_tuple(&self) -> Option<(mpsim_core::Addr, u16, mpsim_core::Addr, u16)> {
        let sf = match self {
            EpKind::Tcp(c) => &c.sf,
            EpKind::Mptcp(c) => c.subflows().next()?.sf,
            EpKind::Closed => return None,
        };
        Some((sf.local, sf.local_port, sf.remote, sf.remote_port))
    }

    /// Payload bytes retransmitted by this endpoint's subflows.
    pub fn retransmitted_bytes(&self) -> u64 {
        match self {
            EpKind::Tcp(c) => c.sf.stats.retransmitted_bytes,
            EpKind::Mptcp(c) => c.subflows().map(|s| s.sf.stats.retransmitted_bytes).sum(),
            EpKind::Closed => 0,
        }
    }
}
