//! The one interface the engine drives every transport through: the
//! sans-IO calls, the application's commands, and what the samplers and
//! the summary read (paths, counters, buffer occupancy) as plain numbers.
//! TCP and MPTCP implement it here; another transport implements it in its
//! own module and adds one variant to the engine's endpoint enum.

use crate::mptcp::{MptcpConnection, MptcpEvent};
use crate::tcp::{AppEvent, Subflow, TcpConnection, TcpState};
use mpsim_cc::SubflowCc;
use mpsim_core::{Addr, Packet, SimDuration, SimTime};

/// A 4-tuple: (local, local port, remote, remote port).
pub type Tuple = (Addr, u16, Addr, u16);

/// What one end's paths did to recover from loss: the sender's
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

/// Fast retransmissions of the data one path carried, by the class the
/// transport gave them: SMT's IOPD tells reordering across paths
/// (inter-path) from loss on the path (intra-path); the other SCTP
/// variants class none (Khan & Qadir, Algorithm 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastRtxCounters {
    pub total: u64,
    pub inter_path: u64,
    pub intra_path: u64,
}

impl std::ops::Add for FastRtxCounters {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        FastRtxCounters {
            total: self.total + o.total,
            inter_path: self.inter_path + o.inter_path,
            intra_path: self.intra_path + o.intra_path,
        }
    }
}

/// One path of an endpoint (a TCP connection, an MPTCP subflow, an SCTP
/// destination) as a trace row and a summary row read it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathView {
    pub local: Addr,
    pub local_port: u16,
    pub remote: Addr,
    pub remote_port: u16,
    /// Payload this path carried to the receiving application, bytes; None
    /// when the endpoint has one path, whose share is all it delivered.
    pub rx_bytes: Option<u64>,
    pub reinjected_bytes: u64,
    pub counters: RecoveryCounters,
    pub backup: bool,
    /// The path is closed or given up: its last trace row.
    pub closed: bool,
    /// State name for the trace.
    pub state: &'static str,
    /// Payload bytes sent, retransmissions included (no trace row before the first).
    pub bytes_sent: u64,
    pub cwnd_bytes: f64,
    pub ssthresh_bytes: f64,
    pub srtt: Option<SimDuration>,
    pub bytes_in_flight: u64,
    /// Payload bytes the peer acknowledged.
    pub bytes_acked: u64,
    pub retransmitted_segs: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// The receiver's window as this path's sender sees it, bytes, where
    /// the transport reports it (SCTP's peer rwnd, shared by its paths).
    pub peer_rwnd_bytes: Option<u64>,
    /// Fast retransmissions by class, where the transport counts them (SCTP).
    pub fast_rtx: Option<FastRtxCounters>,
}

/// A sans-IO transport endpoint as the engine sees it.
pub trait Transport {
    /// Hands a packet over; false if the endpoint did not want it.
    fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool;
    fn handle_timeout(&mut self, now: SimTime);
    /// Appends every packet the endpoint has to send to `sink`.
    fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>);
    fn poll_timeout(&self) -> Option<SimTime>;
    fn poll_event(&mut self) -> Option<AppEvent>;
    /// Demultiplexing news for the engine: a path's 4-tuple, a token.
    fn poll_transport_event(&mut self) -> Option<MptcpEvent> {
        None
    }
    /// Writes `bytes` more, or without end (`None`).
    fn write(&mut self, bytes: Option<u64>);
    fn pause(&mut self);
    fn close(&mut self);
    /// The endpoint still holds its 4-tuples.
    fn is_live(&self) -> bool;
    /// Nothing is left to do: the engine releases the endpoint.
    fn is_done(&self) -> bool;
    fn tuples(&self) -> Vec<Tuple>;
    /// Loss-recovery counters of all paths, summed.
    fn counters(&self) -> RecoveryCounters;
    /// Every path, in a stable order (its index is the trace's `subflow`).
    fn paths(&self) -> Vec<PathView>;
    /// The summary lists each path in a row of its own (keyed by the
    /// client's port); false: the endpoint adds one row to its interface
    /// pair's, as TCP connections are merged.
    fn summary_row_per_path(&self) -> bool {
        false
    }
    /// The shared receive buffer: (bytes held, bytes out of order), while
    /// the connection samples one; None for a transport without one.
    fn buffer_sample(&self) -> Option<(u64, u64)> {
        None
    }
    /// Lines describing the state, for debugging.
    fn debug_lines(&self) -> Vec<String>;
}

/// The state of a subflow as the trace writes it, after RFC 9293's names.
fn state_name(closed: bool, state: TcpState) -> &'static str {
    if closed && state != TcpState::TimeWait {
        return "closed";
    }
    match state {
        TcpState::SynSent => "syn_sent",
        TcpState::SynReceived => "syn_received",
        TcpState::Established => "established",
        TcpState::FinWait1 => "fin_wait1",
        TcpState::FinWait2 => "fin_wait2",
        TcpState::CloseWait => "close_wait",
        TcpState::Closing => "closing",
        TcpState::LastAck => "last_ack",
        TcpState::TimeWait => "time_wait",
        TcpState::Closed => "closed",
    }
}

/// The subflow has nothing more to send or sample: closed, or waiting out
/// TIME_WAIT.
fn ended(sf: &Subflow) -> bool {
    sf.is_closed() || sf.state == TcpState::TimeWait
}

/// The view of one TCP subflow; `closed` as the caller decides it.
fn subflow_view(sf: &Subflow, cc: &SubflowCc, closed: bool) -> PathView {
    let mss = sf.cfg().mss_bytes as f64;
    PathView {
        local: sf.local,
        local_port: sf.local_port,
        remote: sf.remote,
        remote_port: sf.remote_port,
        rx_bytes: None,
        reinjected_bytes: 0,
        counters: RecoveryCounters::of(sf),
        backup: false,
        closed,
        state: state_name(closed, sf.state),
        bytes_sent: sf.stats.bytes_sent,
        cwnd_bytes: cc.cwnd_pkts * mss,
        ssthresh_bytes: (cc.ssthresh_pkts * mss).min(1e15),
        srtt: sf.rtt.srtt,
        bytes_in_flight: sf.bytes_in_flight(),
        bytes_acked: sf.stats.bytes_acked,
        retransmitted_segs: sf.stats.retransmitted_segs,
        timeouts: sf.stats.timeouts,
        fast_recoveries: sf.stats.fast_recoveries,
        peer_rwnd_bytes: None,
        fast_rtx: None,
    }
}

fn debug_line(i: usize, sf: &Subflow, cc: &SubflowCc) -> String {
    format!("sf {i}: {} cwnd={:.2} ssthresh={:.2} ca={:?}", sf.debug_line(), cc.cwnd_pkts, cc.ssthresh_pkts, cc.ca_state)
}

impl Transport for TcpConnection {
    fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        TcpConnection::handle_segment(self, now, pkt);
        true
    }
    fn handle_timeout(&mut self, now: SimTime) {
        TcpConnection::handle_timeout(self, now)
    }
    fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        TcpConnection::drain_transmit(self, now, sink)
    }
    fn poll_timeout(&self) -> Option<SimTime> {
        TcpConnection::poll_timeout(self)
    }
    fn poll_event(&mut self) -> Option<AppEvent> {
        TcpConnection::poll_event(self)
    }
    fn write(&mut self, bytes: Option<u64>) {
        match bytes {
            Some(b) => self.send(b),
            None => self.send_unlimited(),
        }
    }
    fn pause(&mut self) {
        TcpConnection::pause(self)
    }
    fn close(&mut self) {
        TcpConnection::close(self)
    }
    fn is_live(&self) -> bool {
        !self.sf.is_closed()
    }
    fn is_done(&self) -> bool {
        self.sf.is_closed()
    }
    fn tuples(&self) -> Vec<Tuple> {
        vec![(self.sf.local, self.sf.local_port, self.sf.remote, self.sf.remote_port)]
    }
    fn counters(&self) -> RecoveryCounters {
        RecoveryCounters::of(&self.sf)
    }
    fn paths(&self) -> Vec<PathView> {
        vec![subflow_view(&self.sf, self.cc(), ended(&self.sf))]
    }
    fn debug_lines(&self) -> Vec<String> {
        vec![debug_line(0, &self.sf, self.cc())]
    }
}

impl Transport for MptcpConnection {
    fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        MptcpConnection::handle_segment(self, now, pkt)
    }
    fn handle_timeout(&mut self, now: SimTime) {
        MptcpConnection::handle_timeout(self, now)
    }
    fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        MptcpConnection::drain_transmit(self, now, sink)
    }
    fn poll_timeout(&self) -> Option<SimTime> {
        // The connection's own deadline lives on its state (reached by Deref).
        (**self).poll_timeout()
    }
    fn poll_event(&mut self) -> Option<AppEvent> {
        MptcpConnection::poll_event(self)
    }
    fn poll_transport_event(&mut self) -> Option<MptcpEvent> {
        self.poll_mptcp_event()
    }
    fn summary_row_per_path(&self) -> bool {
        true
    }
    fn write(&mut self, bytes: Option<u64>) {
        match bytes {
            Some(b) => self.send(b),
            None => self.send_unlimited(),
        }
    }
    fn pause(&mut self) {
        MptcpConnection::pause(self)
    }
    fn close(&mut self) {
        MptcpConnection::close(self)
    }
    /// Some subflow is not closed, and a finished connection still has
    /// something to do (a subflow's FIN or TIME_WAIT): one left idle holds nothing.
    fn is_live(&self) -> bool {
        self.subflows().any(|s| !s.gone && !s.sf.is_closed()) && (!self.is_finished() || self.poll_timeout().is_some())
    }
    /// Every subflow is closed (TIME_WAIT over) and both DATA_FINs are acknowledged.
    fn is_done(&self) -> bool {
        self.is_finished() && self.subflows().all(|s| s.gone || s.sf.is_closed())
    }
    fn tuples(&self) -> Vec<Tuple> {
        self.subflows().map(|s| (s.sf.local, s.sf.local_port, s.sf.remote, s.sf.remote_port)).collect()
    }
    fn counters(&self) -> RecoveryCounters {
        self.subflows().map(|s| RecoveryCounters::of(s.sf)).fold(RecoveryCounters::default(), |a, b| a + b)
    }
    fn paths(&self) -> Vec<PathView> {
        self.subflows()
            .map(|s| PathView {
                rx_bytes: Some(s.rx_bytes),
                reinjected_bytes: s.reinjected_bytes,
                backup: s.backup,
                ..subflow_view(s.sf, s.cc, s.gone || ended(s.sf))
            })
            .collect()
    }
    /// The application reads at once: only out-of-order data occupies the buffer.
    fn buffer_sample(&self) -> Option<(u64, u64)> {
        (!self.is_finished()).then(|| (self.rcv_buffer_bytes(), self.rcv_buffer_bytes()))
    }
    fn debug_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("mptcp: {}", self.debug_line())];
        lines.extend(self.subflows().enumerate().map(|(i, s)| debug_line(i, s.sf, s.cc)));
        lines
    }
}
