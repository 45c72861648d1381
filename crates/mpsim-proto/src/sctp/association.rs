//! The association: its states (RFC 4960 section 4), the four-way
//! handshake (section 5.1), graceful shutdown (section 9.2), heartbeats
//! and path failure detection (sections 8.2 and 8.3), and the endpoint
//! interface the engine drives. Data transfer is in `sender` and
//! `receiver`.

use super::receiver::Receiver;
use super::sender::Sender;
use super::{PathAddrs, SctpConfig};
use crate::mptcp::MptcpEvent;
use crate::tcp::AppEvent;
use crate::transport::{FastRtxCounters, PathView, RecoveryCounters, Transport, Tuple};
use mpsim_core::sctp::{Chunk, DataChunk, COMMON_HEADER_BYTES, DATA_FLAG_B, DATA_FLAG_E};
use mpsim_core::{Packet, PacketExt, Proto, SimDuration, SimTime};
use std::collections::VecDeque;

/// RFC 4960 section 4 states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssocState {
    Closed,
    CookieWait,
    CookieEchoed,
    Established,
    ShutdownPending,
    ShutdownSent,
    ShutdownReceived,
    ShutdownAckSent,
}

/// A retransmission timer of a control chunk (T1-init, T2-shutdown).
#[derive(Clone, Copy, Debug)]
struct CtlTimer {
    deadline: SimTime,
    rto: SimDuration,
    retries: u32,
}

pub struct Association {
    cfg: SctpConfig,
    paths: Vec<PathAddrs>,
    local_port: u16,
    remote_port: u16,
    pub state: AssocState,
    pub(super) sender: Sender,
    pub(super) receiver: Receiver,
    events: VecDeque<AppEvent>,
    path_events: VecDeque<MptcpEvent>,
    /// Control chunks to send, with the path each goes on.
    control: VecDeque<(Chunk, usize)>,
    t1: Option<CtlTimer>,
    t2: Option<CtlTimer>,
    /// The path the last INIT or COOKIE ECHO went on.
    init_path: usize,
    /// The path the last SHUTDOWN or SHUTDOWN ACK went on.
    shutdown_path: usize,
    /// Consecutive errors over all destinations (RFC 4960 section 8.1).
    assoc_errors: u32,
    /// The application closed its side.
    closing: bool,
    /// Nothing more will happen: shut down or failed.
    done: bool,
}

impl Association {
    fn new(cfg: SctpConfig, paths: Vec<PathAddrs>, local_port: u16, remote_port: u16) -> Self {
        let n = paths.len().max(1);
        let path_events = paths
            .iter()
            .map(|p| MptcpEvent::SubflowOpened { local: p.local, local_port, remote: p.remote, remote_port })
            .collect();
        Association {
            sender: Sender::new(&cfg, n),
            receiver: Receiver::new(&cfg, n),
            cfg,
            paths,
            local_port,
            remote_port,
            state: AssocState::Closed,
            events: VecDeque::new(),
            path_events,
            control: VecDeque::new(),
            t1: None,
            t2: None,
            init_path: 0,
            shutdown_path: 0,
            assoc_errors: 0,
            closing: false,
            done: false,
        }
    }

    /// Active open over `paths` (path 0 is the primary; the INIT goes on it).
    pub fn connect(cfg: SctpConfig, paths: Vec<PathAddrs>, local_port: u16, remote_port: u16) -> Self {
        let mut a = Self::new(cfg, paths, local_port, remote_port);
        a.state = AssocState::CookieWait;
        a.control.push_back((a.init_chunk(false), 0));
        a.t1 = Some(CtlTimer { deadline: SimTime(u64::MAX), rto: cfg.rto_initial, retries: 0 });
        a
    }

    /// The passive side, made by the peer's INIT. The addresses the INIT
    /// and INIT ACK list are `paths`' (the model's chunks carry counts, not lists).
    pub fn accept(cfg: SctpConfig, paths: Vec<PathAddrs>, init: &Packet) -> Option<Self> {
        let Some(Chunk::Init { .. }) = init.ext.sctp() else { return None };
        let mut a = Self::new(cfg, paths, init.dport, init.sport);
        a.handle_segment(SimTime::ZERO, init);
        Some(a)
    }

    fn init_chunk(&self, ack: bool) -> Chunk {
        let (initial_tsn, a_rwnd_bytes) = (self.sender.initial_tsn(), self.cfg.rbuf_bytes.min(u32::MAX as u64) as u32);
        let n_addrs = self.paths.len().min(u8::MAX as usize) as u8;
        if ack {
            Chunk::InitAck { initial_tsn, a_rwnd_bytes, n_addrs }
        } else {
            Chunk::Init { initial_tsn, a_rwnd_bytes, n_addrs }
        }
    }

    /// The path a packet came on: its addresses are one path's, reversed.
    fn path_of(&self, pkt: &Packet) -> Option<usize> {
        self.paths.iter().position(|p| p.local == pkt.dst && p.remote == pkt.src)
    }

    /// Payload bytes held in the receive buffer (out of order).
    pub fn rcv_buffer_bytes(&self) -> u64 {
        self.receiver.held_bytes
    }

    /// The peer's window as the sender sees it, bytes.
    pub fn peer_rwnd_bytes(&self) -> u64 {
        self.sender.peer_rwnd_bytes
    }

    fn established(&mut self) {
        if matches!(self.state, AssocState::Closed | AssocState::CookieWait | AssocState::CookieEchoed) {
            self.state = AssocState::Established;
            self.t1 = None;
            self.events.push_back(AppEvent::Connected);
            if self.closing {
                self.state = AssocState::ShutdownPending;
            }
        }
    }

    fn on_chunk(&mut self, now: SimTime, chunk: &Chunk, path: usize, payload_bytes: u32) {
        match *chunk {
            Chunk::Data(d) => self.on_data(now, d.tsn, payload_bytes, path),
            Chunk::Sack(s) if self.state != AssocState::Closed => {
                if self.sender.on_sack(now, &s) {
                    // RFC 4960 section 8.1: an acknowledgement resets the count.
                    self.assoc_errors = 0;
                }
            }
            Chunk::Sack(_) => {}
            Chunk::Heartbeat { path: p, sent_ps } => self.control.push_back((Chunk::HeartbeatAck { path: p, sent_ps }, path)),
            Chunk::HeartbeatAck { path: p, sent_ps } => self.on_heartbeat_ack(now, p as usize, sent_ps),
            Chunk::Init { initial_tsn, a_rwnd_bytes, .. } => {
                if self.state == AssocState::Closed {
                    self.peer_init(initial_tsn, a_rwnd_bytes);
                    self.control.push_back((self.init_chunk(true), path));
                }
            }
            Chunk::InitAck { initial_tsn, a_rwnd_bytes, .. } => {
                if self.state == AssocState::CookieWait {
                    self.peer_init(initial_tsn, a_rwnd_bytes);
                    self.state = AssocState::CookieEchoed;
                    self.init_path = path;
                    self.control.push_back((Chunk::CookieEcho, path));
                    self.t1 = Some(CtlTimer { deadline: SimTime(u64::MAX), rto: self.cfg.rto_initial, retries: 0 });
                }
            }
            Chunk::CookieEcho => {
                self.established();
                self.control.push_back((Chunk::CookieAck, path));
            }
            Chunk::CookieAck => self.established(),
            Chunk::Shutdown { .. } => self.on_shutdown(),
            Chunk::ShutdownAck => {
                // RFC 4960 section 9.2: answered with SHUTDOWN COMPLETE even
                // when the association is gone already.
                self.control.push_back((Chunk::ShutdownComplete, path));
                self.finish();
            }
            Chunk::ShutdownComplete => {
                if self.state == AssocState::ShutdownAckSent {
                    self.finish();
                }
            }
        }
    }

    fn peer_init(&mut self, initial_tsn: u32, a_rwnd_bytes: u32) {
        self.receiver.set_peer_initial_tsn(initial_tsn);
        self.sender.set_peer_rwnd(a_rwnd_bytes as u64);
    }

    fn on_data(&mut self, now: SimTime, tsn: u32, len: u32, path: usize) {
        if self.state == AssocState::CookieEchoed {
            // DATA means the peer has the cookie: its COOKIE ACK was lost.
            self.established();
        }
        if matches!(self.state, AssocState::Closed | AssocState::CookieWait) {
            return;
        }
        self.receiver.on_data(now, tsn, len, path);
        let bytes = std::mem::take(&mut self.receiver.to_deliver_bytes);
        if bytes > 0 {
            self.events.push_back(AppEvent::Delivered { bytes });
        }
    }

    /// RFC 4960 section 9.2: the peer has no more data to send.
    fn on_shutdown(&mut self) {
        if matches!(self.state, AssocState::Established | AssocState::ShutdownPending) {
            self.state = AssocState::ShutdownReceived;
            self.events.push_back(AppEvent::PeerClosed);
        } else if self.state == AssocState::ShutdownSent {
            // Both sides shut down at once: answer with SHUTDOWN ACK.
            self.state = AssocState::ShutdownReceived;
        }
    }

    fn on_heartbeat_ack(&mut self, now: SimTime, d: usize, sent_ps: u64) {
        let cfg = self.cfg;
        let Some(dest) = self.sender.dests.get_mut(d) else { return };
        // RFC 4960 section 8.3: the address is reachable; measure its RTT.
        dest.error_count = 0;
        dest.active = true;
        dest.hb_sent = None;
        self.assoc_errors = 0;
        dest.on_rtt(now.saturating_since(SimTime(sent_ps)), &cfg);
    }

    fn finish(&mut self) {
        self.state = AssocState::Closed;
        self.done = true;
        self.t1 = None;
        self.t2 = None;
        for d in &mut self.sender.dests {
            d.t3_deadline = None;
        }
        self.receiver.sack_deadline = None;
        self.events.push_back(AppEvent::SendComplete);
    }

    fn fail(&mut self) {
        if !self.done {
            self.finish();
            self.events.retain(|e| *e != AppEvent::SendComplete);
            self.events.push_back(AppEvent::Failed);
        }
    }

    /// One more error towards the association's limit (RFC 4960 section 8.1).
    fn count_assoc_error(&mut self) {
        self.assoc_errors += 1;
        if self.assoc_errors > self.cfg.assoc_max_retrans {
            self.fail();
        }
    }

    // ----- timers -----

    fn on_ctl_timers(&mut self, now: SimTime) {
        if let Some(t) = self.t1.filter(|t| t.deadline <= now) {
            // RFC 4960 section 5.1 C: INIT or COOKIE ECHO again, RTO doubled.
            if t.retries >= self.cfg.max_init_retransmits {
                self.fail();
                return;
            }
            let chunk = if self.state == AssocState::CookieWait { self.init_chunk(false) } else { Chunk::CookieEcho };
            // Linux sends it to the next peer address and makes that the
            // primary (sctp_sf_t1_init_timer_expire,
            // sctp_sf_t1_cookie_timer_expire: SCTP_CMD_INIT_CHOOSE_TRANSPORT,
            // sctp_assoc_choose_alter_transport), so a dead primary path
            // does not keep the association from opening.
            self.init_path = self.alternate_path(self.init_path);
            self.sender.primary = self.init_path;
            self.control.push_back((chunk, self.init_path));
            let rto = SimDuration(t.rto.0.saturating_mul(2)).min(self.cfg.rto_max);
            self.t1 = Some(CtlTimer { deadline: SimTime(u64::MAX), rto, retries: t.retries + 1 });
        }
        if let Some(t) = self.t2.filter(|t| t.deadline <= now) {
            // RFC 4960 section 9.2: T2-shutdown.
            if t.retries >= self.cfg.assoc_max_retrans {
                self.finish();
                return;
            }
            let chunk = match self.state {
                AssocState::ShutdownSent => Chunk::Shutdown { cum_tsn: self.receiver.cum_tsn },
                _ => Chunk::ShutdownAck,
            };
            // Linux sctp_sf_t2_timer_expire: strike the address it went
            // to and send it to an alternate (SCTP_CMD_SETUP_T2).
            self.sender.count_error(self.shutdown_path);
            self.shutdown_path = self.alternate_path(self.shutdown_path);
            self.control.push_back((chunk, self.shutdown_path));
            let rto = SimDuration(t.rto.0.saturating_mul(2)).min(self.cfg.rto_max);
            self.t2 = Some(CtlTimer { deadline: SimTime(u64::MAX), rto, retries: t.retries + 1 });
        }
    }

    fn on_heartbeat_timers(&mut self, now: SimTime) {
        for d in 0..self.sender.dests.len() {
            let dest = &mut self.sender.dests[d];
            if let Some(deadline) = dest.hb_sent {
                if deadline <= now {
                    // RFC 4960 section 8.3: an unanswered HEARTBEAT is an error,
                    // and the RTO backs off (Linux sctp_do_8_2_transport_strike).
                    dest.hb_sent = None;
                    dest.rto = SimDuration(dest.rto.0.saturating_mul(2)).min(self.cfg.rto_max);
                    dest.hb_due = now;
                    self.sender.count_error(d);
                    self.count_assoc_error();
                }
            }
        }
    }

    /// Destinations whose heartbeat is due now.
    fn due_heartbeats(&mut self, now: SimTime) -> Vec<usize> {
        if !self.carries_data() {
            return Vec::new();
        }
        let mut due = Vec::new();
        for (d, dest) in self.sender.dests.iter_mut().enumerate() {
            if dest.hb_sent.is_none() && dest.hb_due <= now {
                dest.hb_sent = Some(now + dest.rto);
                dest.hb_due = now + dest.rto + self.cfg.hb_interval;
                due.push(d);
            }
        }
        due
    }

    /// The primary path if its destination is active, else the first
    /// active one (RFC 4960 section 6.4), else the primary.
    fn active_path(&self) -> usize {
        let dests = &self.sender.dests;
        let primary = self.sender.primary;
        if dests[primary].active {
            return primary;
        }
        (0..dests.len()).find(|&d| dests[d].active).unwrap_or(primary)
    }

    /// The path after `last` for a retransmitted control chunk: the next
    /// active one in turn, else simply the next (Linux
    /// sctp_assoc_choose_alter_transport).
    fn alternate_path(&self, last: usize) -> usize {
        let n = self.paths.len().max(1);
        (1..=n).map(|k| (last + k) % n).find(|&d| self.sender.dests[d].active).unwrap_or((last + 1) % n)
    }

    /// States in which DATA, SACKs and heartbeats flow.
    fn carries_data(&self) -> bool {
        matches!(
            self.state,
            AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived | AssocState::ShutdownSent
        )
    }

    // ----- output -----

    fn packet(&self, path: usize, chunk: Chunk, payload_bytes: u32) -> Packet {
        let p = self.paths[path];
        Packet {
            src: p.local,
            dst: p.remote,
            sport: self.local_port,
            dport: self.remote_port,
            proto: Proto::Sctp,
            payload_bytes,
            wire_bytes: self.cfg.lower_header_bytes + COMMON_HEADER_BYTES + chunk.wire_bytes(payload_bytes),
            ext: PacketExt::Sctp(chunk),
            ..Default::default()
        }
    }

    fn send_control(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        while let Some((chunk, path)) = self.control.pop_front() {
            sink.push(self.packet(path, chunk, 0));
            // A control timer starts when its chunk leaves.
            for t in [&mut self.t1, &mut self.t2].into_iter().flatten() {
                if t.deadline == SimTime(u64::MAX) {
                    t.deadline = now + t.rto;
                }
            }
        }
    }

    /// SHUTDOWN once everything we sent is acknowledged; SHUTDOWN ACK once
    /// the peer's SHUTDOWN came and our data is acknowledged (RFC 4960 section 9.2).
    fn advance_shutdown(&mut self) {
        if !self.sender.all_acked() {
            return;
        }
        // Linux sends it to the active path: the primary, or an active
        // alternate when the primary failed (asoc->peer.active_path).
        self.shutdown_path = self.active_path();
        let timer = Some(CtlTimer { deadline: SimTime(u64::MAX), rto: self.sender.dests[self.shutdown_path].rto, retries: 0 });
        match self.state {
            AssocState::ShutdownPending => {
                self.state = AssocState::ShutdownSent;
                self.control.push_back((Chunk::Shutdown { cum_tsn: self.receiver.cum_tsn }, self.shutdown_path));
                self.t2 = timer;
            }
            AssocState::ShutdownReceived => {
                self.state = AssocState::ShutdownAckSent;
                self.control.push_back((Chunk::ShutdownAck, self.shutdown_path));
                self.t2 = timer;
            }
            _ => {}
        }
    }

    fn send_data(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        if !self.carries_data() {
            return;
        }
        while let Some(tx) = self.sender.next_data(now) {
            let chunk = Chunk::Data(DataChunk { tsn: tx.tsn, stream_id: 0, stream_seq: 0, flags: DATA_FLAG_B | DATA_FLAG_E });
            sink.push(self.packet(tx.dest, chunk, tx.len));
            // Linux resets a transport's heartbeat timer when it carries data.
            let dest = &mut self.sender.dests[tx.dest];
            if dest.hb_sent.is_none() {
                dest.hb_due = now + dest.rto + self.cfg.hb_interval;
            }
        }
    }
}

impl Transport for Association {
    fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        let (Some(chunk), Some(path)) = (pkt.ext.sctp().copied(), self.path_of(pkt)) else { return false };
        if self.done {
            // Only a lost SHUTDOWN COMPLETE's peer still talks to us.
            if chunk == Chunk::ShutdownAck {
                self.control.push_back((Chunk::ShutdownComplete, path));
            }
            return true;
        }
        self.on_chunk(now, &chunk, path, pkt.payload_bytes);
        true
    }

    fn handle_timeout(&mut self, now: SimTime) {
        if self.done {
            return;
        }
        self.on_ctl_timers(now);
        while let Some((t, d)) = self.sender.t3_deadline().filter(|&(t, _)| t <= now) {
            debug_assert!(t <= now);
            self.sender.on_t3(now, d);
            self.count_assoc_error();
            if self.done {
                return;
            }
        }
        self.on_heartbeat_timers(now);
    }

    fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        self.send_control(now, sink);
        if self.done {
            return;
        }
        if self.receiver.sack_due(now) {
            let path = self.receiver.sack_path;
            let sack = self.receiver.make_sack();
            sink.push(self.packet(path, Chunk::Sack(sack), 0));
        }
        for d in self.due_heartbeats(now) {
            sink.push(self.packet(d, Chunk::Heartbeat { path: d as u8, sent_ps: now.as_ps() }, 0));
        }
        self.send_data(now, sink);
        self.advance_shutdown();
        self.send_control(now, sink);
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        if self.done {
            return None;
        }
        let mut next = [self.t1.map(|t| t.deadline), self.t2.map(|t| t.deadline), self.receiver.sack_deadline]
            .into_iter()
            .flatten()
            .filter(|&t| t != SimTime(u64::MAX))
            .min();
        let mut take = |t: SimTime| next = Some(next.map_or(t, |n| n.min(t)));
        if let Some((t, _)) = self.sender.t3_deadline() {
            take(t);
        }
        if self.carries_data() {
            for d in &self.sender.dests {
                take(d.hb_sent.unwrap_or(d.hb_due));
            }
        }
        next
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn poll_transport_event(&mut self) -> Option<MptcpEvent> {
        self.path_events.pop_front()
    }

    fn write(&mut self, bytes: Option<u64>) {
        self.sender.write(bytes)
    }

    fn pause(&mut self) {
        self.sender.pause()
    }

    fn close(&mut self) {
        self.closing = true;
        match self.state {
            AssocState::Established => self.state = AssocState::ShutdownPending,
            AssocState::Closed | AssocState::CookieWait | AssocState::CookieEchoed => {}
            _ => {}
        }
    }

    fn is_live(&self) -> bool {
        !self.done
    }

    fn is_done(&self) -> bool {
        self.done && self.control.is_empty()
    }

    fn tuples(&self) -> Vec<Tuple> {
        self.paths.iter().map(|p| (p.local, self.local_port, p.remote, self.remote_port)).collect()
    }

    fn counters(&self) -> RecoveryCounters {
        (0..self.paths.len()).map(|i| self.path_counters(i)).fold(RecoveryCounters::default(), |a, b| a + b)
    }

    fn paths(&self) -> Vec<PathView> {
        (0..self.paths.len()).map(|i| self.path_view(i)).collect()
    }

    fn summary_row_per_path(&self) -> bool {
        true
    }

    fn buffer_sample(&self) -> Option<(u64, u64)> {
        (!self.done).then_some((self.receiver.held_bytes, self.receiver.held_bytes))
    }

    fn debug_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "sctp {:?} cum_ack={} peer_rwnd={} rcv_cum={} held={}",
            self.state, self.sender.cum_ack, self.sender.peer_rwnd_bytes, self.receiver.cum_tsn, self.receiver.held_bytes
        )];
        for (i, d) in self.sender.dests.iter().enumerate() {
            lines.push(format!(
                "dest {i}: active={} cwnd={} ssthresh={} flight={} rto={:?} errors={}",
                d.active, d.cwnd_bytes, d.ssthresh_bytes, d.flight_bytes, d.rto, d.error_count
            ));
        }
        lines
    }
}

impl Association {
    fn path_counters(&self, i: usize) -> RecoveryCounters {
        let s = &self.sender.dests[i].stats;
        RecoveryCounters {
            retransmitted_bytes: s.retransmitted_bytes,
            timeouts: s.timeouts,
            fast_recoveries: s.fast_recoveries,
            spurious_retransmissions: self.receiver.path_dup_chunks[i],
        }
    }

    fn path_view(&self, i: usize) -> PathView {
        let p = self.paths[i];
        let d = &self.sender.dests[i];
        let state = match (self.done, d.active) {
            (true, _) => "closed",
            (false, true) => "active",
            (false, false) => "inactive",
        };
        PathView {
            local: p.local,
            local_port: self.local_port,
            remote: p.remote,
            remote_port: self.remote_port,
            rx_bytes: Some(self.receiver.path_rx_bytes[i]),
            reinjected_bytes: 0,
            counters: self.path_counters(i),
            backup: false,
            closed: self.done,
            state,
            bytes_sent: d.stats.sent_bytes,
            cwnd_bytes: d.cwnd_bytes as f64,
            ssthresh_bytes: (d.ssthresh_bytes as f64).min(1e15),
            srtt: d.srtt,
            bytes_in_flight: d.flight_bytes,
            bytes_acked: d.stats.acked_bytes,
            retransmitted_segs: d.stats.retransmitted_chunks,
            timeouts: d.stats.timeouts,
            fast_recoveries: d.stats.fast_recoveries,
            peer_rwnd_bytes: Some(self.sender.peer_rwnd_bytes),
            fast_rtx: Some(FastRtxCounters {
                total: d.stats.fast_rtx,
                inter_path: d.stats.fast_rtx_inter,
                intra_path: d.stats.fast_rtx_intra,
            }),
        }
    }
}
