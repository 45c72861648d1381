//! The event loop and the packet path: hosts send through the interface
//! owning the source address, switches forward by table, link directions
//! deliver one packet per event, endpoints get one wakeup each (a later
//! deadline keeps the earlier event; stale ones are skipped by generation).

use crate::endpoint::EpKind;
use crate::flows::{Demux, Endpoint, Flow};
use crate::report::Sampler;
use mpsim_core::mptcp::MpOption;
use mpsim_core::{Addr, EventQueue, LinkId, NodeId, Packet, PacketId, PacketPool, SimTime};
use mpsim_net::qdisc::{flow_hash, QPkt};
use mpsim_net::{iface_of_addr, AqmAction, EnqueueOutcome, Hop, LinkDir, NodeKind, Routes, Topology};
use mpsim_proto::MptcpEvent;
use rustc_hash::FxHashMap;

/// A spec the engine cannot build (the front end catches most of these first).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Invalid(String),
    /// A part of the scenario contract this version does not simulate.
    #[error("{0}")]
    Unsupported(String),
    /// A flow whose hosts no path connects.
    #[error("{0}")]
    NoRoute(String),
    #[error("spec is not valid JSON for the engine: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Arrival {
        dir: u32,
        generation: u32,
    },
    /// A packet of a jittered link direction, travelling on its own.
    Jittered {
        dir: u32,
        generation: u32,
        pid: PacketId,
    },
    Wakeup {
        ep: u32,
        generation: u32,
    },
    LinkEvent {
        link: u32,
        index: u32,
    },
    TraceStep {
        dir: u32,
        index: u32,
    },
    Sample,
    FlowStart {
        flow: u32,
    },
    FlowStop {
        flow: u32,
    },
    AppTimer {
        flow: u32,
        tag: u32,
    },
    Handover {
        flow: u32,
    },
    /// Routing has converged after a link change: rebuild the tables.
    Reroute,
    /// A switch's packet-in reaches the SdnController (crate::sdn).
    PacketIn {
        node: u32,
        buffer: u32,
    },
    /// A flow-mod reaches its switch.
    FlowMod {
        id: u32,
    },
}

pub(crate) struct Node {
    pub name: String,
    pub kind: NodeKind,
    /// Host interfaces: (link, side) in link order.
    pub ifaces: Vec<(LinkId, u32)>,
    /// Where the host's search for a free ephemeral port starts.
    pub next_port: u16,
}

pub(crate) struct Link {
    pub name: String,
    pub a: NodeId,
    pub b: NodeId,
    pub events: Vec<crate::spec::LinkEventSpec>,
}

/// What the packet path needs of a direction's wiring, 8 bytes a
/// direction: on a large fabric the `links` and `nodes` entries it stands
/// for are a cache miss each on every hop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DirEnd {
    /// The node at the far end.
    pub far: NodeId,
    pub far_is_host: bool,
    /// A middlebox on the link removes MPTCP options (the spec's
    /// `strip_mptcp`, kept only here).
    pub strip_mptcp: bool,
}

impl DirEnd {
    /// The two directions of the link from `a` to `b`, in direction order.
    pub(crate) fn of_link(a: NodeId, b: NodeId, strip_mptcp: bool, nodes: &[Node]) -> [DirEnd; 2] {
        let end = |far: NodeId| DirEnd { far, far_is_host: nodes[far.index()].kind == NodeKind::Host, strip_mptcp };
        [end(b), end(a)]
    }
}

pub struct Simulation {
    pub(crate) now: SimTime,
    pub(crate) end: SimTime,
    pub(crate) queue: EventQueue<Ev>,
    pub(crate) pool: PacketPool,
    pub(crate) nodes: Vec<Node>,
    pub(crate) links: Vec<Link>,
    pub(crate) dirs: Vec<LinkDir>,
    /// Per direction, its far end (`links` and `nodes` in 8 bytes).
    pub(crate) dir_ends: Vec<DirEnd>,
    pub(crate) traces_bw: Vec<Option<Vec<(u64, u64)>>>,
    pub(crate) topo: Topology,
    pub(crate) routes: Routes,
    pub(crate) forwarding: crate::forwarding::Forwarding,
    /// Flow tables and the SdnController; None without `[controller]`.
    pub(crate) sdn: Option<Box<crate::sdn::Sdn>>,
    /// `advance` returns after the current event (a packet-in for an app in Python).
    pub(crate) pause: bool,
    /// Endpoint slots; a released endpoint's slot is reused.
    pub(crate) endpoints: Vec<Endpoint>,
    /// Released slots, the last released on top.
    pub(crate) free_endpoints: Vec<u32>,
    /// Endpoints made so far (each slot's `created`).
    pub(crate) endpoints_created: u64,
    pub(crate) demux: FxHashMap<u128, Demux>,
    /// MPTCP tokens of server-side connections per host, for incoming
    /// MP_JOINs: (host, token) to endpoint.
    pub(crate) tokens: FxHashMap<(NodeId, u32), u32>,
    pub(crate) flows: Vec<Flow>,
    pub(crate) work: Vec<u32>,
    pub(crate) sampler: Sampler,
    pub(crate) name: String,
    pub(crate) seed: u64,
    pub(crate) events: u64,
    pub(crate) packet_hops: u64,
    pub(crate) no_route_drops: u64,
    pub(crate) wall_s: f64,
    /// Packet captures (record.pcap), and per link direction the capture
    /// that sees it leave a host (egress) or arrive at one (ingress).
    pub(crate) captures: Vec<Capture>,
    pub(crate) capture_egress: Vec<Option<u32>>,
    pub(crate) capture_ingress: Vec<Option<u32>>,
}

/// One captured interface.
pub(crate) struct Capture {
    pub name: String,
    pub writer: crate::pcap::PcapWriter<Vec<u8>>,
}

/// Wire bytes of an RST without options (Ethernet 14, IPv4 20, TCP 20).
const TCP_RST_WIRE_BYTES: u32 = 54;

/// Demux key of a packet as its receiver sees it.
pub(crate) fn demux_key(local: Addr, local_port: u16, remote: Addr, remote_port: u16) -> u128 {
    ((local.0 as u128) << 96) | ((local_port as u128) << 80) | ((remote.0 as u128) << 16) | remote_port as u128
}

impl Simulation {
    /// Builds the world from a JSON engine spec.
    pub fn from_json(json: &str) -> Result<Simulation, BuildError> {
        let spec = crate::spec::Spec::from_json(json)?;
        Simulation::new(&spec)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn end(&self) -> SimTime {
        self.end
    }
    pub fn events(&self) -> u64 {
        self.events
    }
    pub fn packet_hops(&self) -> u64 {
        self.packet_hops
    }
    /// One line per live subflow (flow, connection, side, TCP state), for debugging.
    pub fn endpoint_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for e in &self.endpoints {
            let head = format!("flow {} conn {} {:?}", e.flow, e.conn, e.side);
            if let Some(t) = e.kind.transport() {
                lines.extend(t.debug_lines().into_iter().map(|l| format!("{head} {l}")));
            }
        }
        lines
    }

    /// The captures of `record.pcap`, by interface name, as pcap file bytes.
    pub fn pcaps(&self) -> Vec<(String, Vec<u8>)> {
        self.captures.iter().map(|c| (c.name.clone(), c.writer.get_ref().clone())).collect()
    }

    pub fn is_done(&self) -> bool {
        self.now >= self.end || self.queue.is_empty()
    }

    /// Runs every event up to `until` (and never past the end). Returns
    /// true when the run is over.
    pub fn run_until(&mut self, until: SimTime) -> bool {
        self.advance(until, u64::MAX);
        self.is_done()
    }

    /// Runs at most `max_events` of the events due by `until` (never past
    /// the end), so a caller can do other work between slices (a binding
    /// checks for Ctrl-C). Returns true when every event due by `until` has
    /// run and the clock stands at `until`; false when the budget ran out.
    pub fn advance(&mut self, until: SimTime, max_events: u64) -> bool {
        let started = std::time::Instant::now();
        let limit = until.min(self.end);
        let mut budget = max_events;
        let mut reached = true;
        loop {
            if budget == 0 {
                reached = self.queue.peek_time().is_none_or(|t| t > limit);
                break;
            }
            let Some((t, ev)) = self.queue.pop_until(limit) else { break };
            budget -= 1;
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.pause {
                // A packet-in waits for an app written in Python.
                reached = false;
                break;
            }
        }
        if reached {
            self.now = self.now.max(limit);
            if self.queue.peek_time().is_none() {
                self.now = self.end.max(self.now);
            }
        }
        self.wall_s += started.elapsed().as_secs_f64();
        reached
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Arrival { dir, generation } => self.on_arrival(dir, generation),
            Ev::Jittered { dir, generation, pid } => self.on_jittered(dir, generation, pid),
            Ev::Wakeup { ep, generation } => self.on_wakeup(ep, generation),
            Ev::LinkEvent { link, index } => self.on_link_event(link, index),
            Ev::TraceStep { dir, index } => self.on_trace_step(dir, index),
            Ev::Sample => self.on_sample(),
            Ev::FlowStart { flow } => self.on_flow_start(flow),
            Ev::FlowStop { flow } => self.on_flow_stop(flow),
            Ev::AppTimer { flow, tag } => self.on_app_timer(flow, tag),
            Ev::Handover { flow } => self.on_handover(flow),
            Ev::Reroute => self.on_reroute(),
            Ev::PacketIn { node, buffer } => self.on_packet_in(node, buffer),
            Ev::FlowMod { id } => self.on_flow_mod(id),
        }
    }

    // ----- packet path -----

    /// Node at the far end of direction `dir`.
    pub(crate) fn dir_far_node(&self, dir: u32) -> NodeId {
        self.dir_ends[dir as usize].far
    }

    fn on_arrival(&mut self, dir: u32, generation: u32) {
        let d = &mut self.dirs[dir as usize];
        if d.generation != generation || d.in_flight() == 0 {
            return;
        }
        let a = d.pop_arrival();
        if let Some(t) = a.next {
            self.queue.push(t, Ev::Arrival { dir, generation });
        }
        self.settle_aqm(dir);
        if !a.survived {
            self.pool.free(a.pid);
            return;
        }
        self.arrive(dir, a.pid, &a.hop);
    }

    fn on_jittered(&mut self, dir: u32, generation: u32, pid: PacketId) {
        let d = &mut self.dirs[dir as usize];
        if d.jitter_generation != generation {
            self.pool.free(pid); // the link went down under it
            return;
        }
        d.on_jittered_arrival(self.pool.get(pid).wire_bytes);
        let hop = Hop::of(self.pool.get(pid));
        self.arrive(dir, pid, &hop);
    }

    /// Inlined into the event loop with `forward`: a call and its saved
    /// registers less on every hop.
    #[inline(always)]
    fn arrive(&mut self, dir: u32, pid: PacketId, hop: &Hop) {
        let end = self.dir_ends[dir as usize];
        let node = end.far;
        if end.far_is_host {
            if !self.captures.is_empty() {
                self.capture(self.capture_ingress[dir as usize], pid);
            }
            self.host_receive(node, pid);
        } else if self.sdn.as_ref().is_some_and(|s| s.steers(node)) {
            self.sdn_forward(node, dir, pid);
        } else {
            self.forward_hop(node, pid, hop);
        }
    }

    fn capture(&mut self, c: Option<u32>, pid: PacketId) {
        if let Some(c) = c {
            let pkt = self.pool.packet(pid);
            // Writing to memory cannot fail.
            let _ = self.captures[c as usize].writer.write_packet(self.now, &pkt);
        }
    }

    /// Sends packet `pid` over direction `dir`, reading what the link needs
    /// from the packet.
    pub(crate) fn transmit(&mut self, dir: u32, pid: PacketId) {
        let hop = Hop::of(self.pool.get(pid));
        self.transmit_hop(dir, pid, &hop);
    }

    /// Sends packet `pid`, whose 5-tuple and size are `hop`, over `dir`.
    pub(crate) fn transmit_hop(&mut self, dir: u32, pid: PacketId, hop: &Hop) {
        let stripped;
        let hop = if self.dir_ends[dir as usize].strip_mptcp {
            self.pool.update(pid, |p| {
                p.wire_bytes -= p.ext.option_bytes();
                p.ext = Default::default();
            });
            stripped = Hop { wire_bytes: self.pool.get(pid).wire_bytes, ..*hop };
            &stripped
        } else {
            hop
        };
        let d = &mut self.dirs[dir as usize];
        // Hashing every packet's 5-tuple costs where no discipline reads it.
        let k = &hop.key;
        let flow_hash = if d.uses_flow_hash() { flow_hash(k.src.0, k.dst.0, k.sport, k.dport, k.proto) } else { 0 };
        let q = QPkt { pid, wire_bytes: hop.wire_bytes, flow_hash, ect: hop.ect, enqueued: self.now, key: hop.key };
        let outcome = d.offer(self.now, q);
        let (generation, jitter_generation) = (d.generation, d.jitter_generation);
        if d.aqm_pending() {
            self.apply_aqm(dir);
        }
        if outcome != EnqueueOutcome::Dropped && !self.captures.is_empty() {
            // As tcpdump: what the queue accepted, before the wire.
            self.capture(self.capture_egress[dir as usize], pid);
        }
        match outcome {
            EnqueueOutcome::Accepted { schedule } => {
                self.packet_hops += 1;
                if let Some(t) = schedule {
                    self.queue.push(t, Ev::Arrival { dir, generation });
                }
            }
            EnqueueOutcome::Jittered { arrival } => {
                self.packet_hops += 1;
                self.queue.push(arrival, Ev::Jittered { dir, generation: jitter_generation, pid });
            }
            EnqueueOutcome::LostOnWire => {
                self.packet_hops += 1;
                self.pool.free(pid);
            }
            EnqueueOutcome::Dropped => {
                self.pool.free(pid);
            }
        }
    }

    /// Frees the packets the queue discipline of `dir` dropped and sets CE
    /// on the ones it marked.
    #[inline(always)]
    pub(crate) fn settle_aqm(&mut self, dir: u32) {
        if self.dirs[dir as usize].aqm_pending() {
            self.apply_aqm(dir);
        }
    }

    #[cold]
    fn apply_aqm(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        for (pid, action) in d.aqm.drain(..) {
            match action {
                AqmAction::Drop => self.pool.free(pid),
                AqmAction::Mark => self.pool.set_ecn(pid, mpsim_core::IpEcn::Ce),
            }
        }
    }

    /// A host sends `pkt` out of the interface that owns its source address.
    /// Takes a reference: the header is copied once, straight into the pool.
    pub(crate) fn host_send(&mut self, host: NodeId, pkt: &Packet) {
        let Some((link, side)) = iface_of_addr(pkt.src) else { return };
        if link.index() >= self.links.len() || self.topo.end(link, side) != host {
            return;
        }
        let dir = 2 * link.0 + side;
        let pid = self.pool.alloc(pkt);
        self.transmit(dir, pid);
    }

    /// A packet (still in the pool) reaches a host; its slot is freed here.
    fn host_receive(&mut self, host: NodeId, pid: PacketId) {
        let pkt = self.pool.get(pid);
        let ours = iface_of_addr(pkt.dst).is_some_and(|(l, s)| l.index() < self.links.len() && self.topo.end(l, s) == host);
        if !ours {
            self.pool.free(pid); // hosts do not forward
            return;
        }
        let key = demux_key(pkt.dst, pkt.dport, pkt.src, pkt.sport);
        match self.demux.get(&key).copied() {
            Some(Demux::Ep(ep)) => {
                let pkt = self.pool.take(pid);
                self.endpoints[ep as usize].kind.handle_segment(self.now, &pkt);
                self.work.push(ep);
                self.drain_work();
            }
            demux => {
                let pkt = self.pool.take(pid);
                self.host_receive_other(host, demux, key, &pkt);
            }
        }
    }

    /// A packet for no established endpoint: a connection being accepted,
    /// a UDP flow, or nothing.
    fn host_receive_other(&mut self, host: NodeId, demux: Option<Demux>, key: u128, pkt: &Packet) {
        match demux {
            Some(Demux::Ep(_)) => {}
            Some(Demux::Pending { flow, conn }) => self.accept(flow, conn, host, pkt, key),
            Some(Demux::Udp { flow }) => self.flows[flow as usize].on_datagram(pkt.payload_bytes as u64, self.now),
            None => self.unmatched_segment(host, pkt),
        }
    }

    /// An MP_JOIN SYN goes to the connection owning its token; anything
    /// else for no connection is answered with RST (RFC 9293), as an
    /// MP_JOIN with an unknown token must be.
    fn unmatched_segment(&mut self, host: NodeId, pkt: &Packet) {
        if pkt.flags.has(mpsim_core::TcpFlags::RST) || pkt.proto != mpsim_core::Proto::Tcp {
            return;
        }
        if let Some(MpOption::JoinSyn { token, .. }) = pkt.ext.mptcp().map(|m| m.option) {
            if let Some(&ep) = self.tokens.get(&(host, token)) {
                if self.endpoints[ep as usize].kind.handle_segment(self.now, pkt) {
                    self.work.push(ep);
                    self.drain_work();
                    return;
                }
            }
        }
        let rst = mpsim_proto::tcp::rst_reply(pkt, TCP_RST_WIRE_BYTES);
        self.host_send(host, &rst);
    }

    // ----- endpoints -----

    fn on_wakeup(&mut self, ep: u32, generation: u32) {
        let e = &mut self.endpoints[ep as usize];
        if e.generation != generation {
            return;
        }
        e.scheduled = None;
        if e.kind.poll_timeout().is_some_and(|t| t <= self.now) {
            e.kind.handle_timeout(self.now);
        }
        self.work.push(ep);
        self.drain_work();
    }

    /// Services every endpoint queued in `work`: sends what it has, hands
    /// its events to the application, and re-arms its wakeup.
    pub(crate) fn drain_work(&mut self) {
        while let Some(ep) = self.work.pop() {
            self.service(ep);
        }
    }

    fn service(&mut self, ep: u32) {
        let now = self.now;
        let e = &mut self.endpoints[ep as usize];
        let host = e.host;
        if matches!(e.kind, EpKind::Closed) {
            return;
        }
        let mut out = std::mem::take(&mut self.sampler.scratch_packets);
        e.kind.drain_transmit(now, &mut out);
        let mut events = std::mem::take(&mut self.sampler.scratch_events);
        while let Some(ev) = e.kind.poll_event() {
            events.push(ev);
        }
        let mut mevents = Vec::new();
        while let Some(ev) = e.kind.poll_transport_event() {
            mevents.push(ev);
        }
        if let Some(t) = e.kind.poll_timeout() {
            if e.scheduled.is_none_or(|s| t < s) {
                e.generation = e.generation.wrapping_add(1);
                e.scheduled = Some(t);
                self.queue.push(t.max(now), Ev::Wakeup { ep, generation: e.generation });
            }
        }
        // Most activations raise no event: the guards skip building an
        // iterator over an empty list, which costs tens of instructions on
        // every packet.
        if !mevents.is_empty() {
            for ev in mevents {
                self.mptcp_event(ep, ev);
            }
        }
        for p in &out {
            self.host_send(host, p);
        }
        out.clear();
        self.sampler.scratch_packets = out;
        if !events.is_empty() {
            for ev in events.drain(..) {
                self.endpoint_event(ep, ev);
            }
        }
        self.sampler.scratch_events = events;
        if self.endpoints[ep as usize].kind.is_done() {
            self.release(ep);
        }
    }

    fn mptcp_event(&mut self, ep: u32, ev: MptcpEvent) {
        match ev {
            MptcpEvent::SubflowOpened { local, local_port, remote, remote_port } => {
                self.demux.insert(demux_key(local, local_port, remote, remote_port), Demux::Ep(ep));
            }
            MptcpEvent::Token(t) => {
                let e = &self.endpoints[ep as usize];
                if e.side == mpsim_proto::apps::Side::Server {
                    self.tokens.insert((e.host, t), ep);
                }
            }
            MptcpEvent::Fallback => {
                let f = self.endpoints[ep as usize].flow;
                self.flows[f as usize].fallback = true;
            }
        }
    }
}
