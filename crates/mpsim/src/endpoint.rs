//! The endpoints the engine drives: a plain TCP connection or an MPTCP
//! connection, behind one set of sans-IO calls.

use mpsim_core::{Packet, SimTime};
use mpsim_proto::tcp::Subflow;
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

    /// Nothing is left to do: every subflow is closed (TIME_WAIT over)
    /// and, for MPTCP, both DATA_FINs are acknowledged.
    pub fn is_done(&self) -> bool {
        match self {
            EpKind::Tcp(c) => c.sf.is_closed(),
            EpKind::Mptcp(c) => c.is_finished() && c.subflows().all(|s| s.gone || s.sf.is_closed()),
            EpKind::Closed => false,
        }
    }

    /// The 4-tuples of the endpoint's subflows: (local, local port, remote, remote port).
    pub fn tuples(&self) -> Vec<(mpsim_core::Addr, u16, mpsim_core::Addr, u16)> {
        let tuple = |sf: &Subflow| (sf.local, sf.local_port, sf.remote, sf.remote_port);
        match self {
            EpKind::Tcp(c) => vec![tuple(&c.sf)],
            EpKind::Mptcp(c) => c.subflows().map(|s| tuple(s.sf)).collect(),
            EpKind::Closed => Vec::new(),
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

    /// Loss-recovery counters of this endpoint's subflows, summed.
    pub fn counters(&self) -> RecoveryCounters {
        match self {
            EpKind::Tcp(c) => RecoveryCounters::of(&c.sf),
            EpKind::Mptcp(c) => c.subflows().map(|s| RecoveryCounters::of(s.sf)).fold(RecoveryCounters::default(), |a, b| a + b),
            EpKind::Closed => RecoveryCounters::default(),
        }
    }
}

/// What one end's subflows did to recover from loss: the sender's
/// retransmitted payload bytes, timeouts and fast recoveries, and the
/// retransmissions its receiver got although it held them already (its
/// peer's spurious retransmissions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryCounters {
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    pub spurious_retransmissions: u64,
}

impl RecoveryCounters {
    pub fn of(sf: &Subflow) -> Self {
        RecoveryCounters {
            retransmitted_bytes: sf.stats.retransmitted_bytes,
            timeouts: sf.stats.timeouts,
            fast_recoveries: sf.stats.fast_recoveries,
            spurious_retransmissions: sf.rcv.duplicate_segs,
        }
    }
}

impl std::ops::Add for RecoveryCounters {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        RecoveryCounters {
            retransmitted_bytes: self.retransmitted_bytes + o.retransmitted_bytes,
            timeouts: self.timeouts + o.timeouts,
            fast_recoveries: self.fast_recoveries + o.fast_recoveries,
            spurious_retransmissions: self.spurious_retransmissions + o.spurious_retransmissions,
        }
    }
}
