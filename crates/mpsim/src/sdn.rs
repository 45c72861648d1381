//! The engine's side of SDN: with a `[controller]`, every switch forwards
//! by its flow table (routers keep the static tables). A table miss puts
//! the packet in the switch's bounded buffer (OpenFlow's buffer_id) and
//! sends a packet-in that reaches the SdnController `latency` later; the
//! controller's app picks a path and sends flow-mods, each reaching its
//! switch `latency` after the decision, installing the 5-tuple's rules both
//! ways; the buffered packet is released with its switch's flow-mod (a
//! packet-out). A full buffer drops the packet. Decisions are traced for
//! the summary's `controller` section.

use crate::forwarding::proto_name;
use crate::sim::{demux_key, BuildError, Ev, Simulation};
use crate::spec::{AppSpec, ControllerSpec, Spec};
use mpsim_core::mptcp::MpOption;
use mpsim_core::{NodeId, Packet, PacketId, Proto, SimDuration, SimTime, TcpFlags};
use mpsim_net::routing::{hash_rows, DirId};
use mpsim_net::sdn::FlowTable;
use mpsim_net::sdn::{
    Action, AppKind, BuiltinController, Decision, Match, MptcpMatch, NetGraph, Opening, PacketFields, PacketIn, Rule,
    SdnController, Threshold, Verdict, DEFAULT_THRESHOLDS,
};
use mpsim_net::{iface_of_addr, FlowKey, NodeKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Packets a switch holds while their packet-ins are answered: the 256
/// packet buffers Open vSwitch kept per bridge while it still buffered
/// (ofproto/pktbuf.c, PKTBUF_CNT).
pub const DEFAULT_BUFFER_PKTS: u32 = 256;
/// Rules the apps install expire after this long unused: POX's
/// `forwarding.l2_multi` FLOW_IDLE_TIMEOUT (its 30 s hard timeout is not
/// copied: a subflow would ask the controller again every 30 s).
pub const DEFAULT_IDLE_TIMEOUT: SimDuration = SimDuration::from_secs(10);
/// How often a switch clears the expired rules no packet looked up.
const SWEEP_PERIOD: SimDuration = SimDuration::from_secs(1);
/// Priority of the rules the apps install (OpenFlow's default, 0x8000).
const APP_PRIORITY: u16 = 0x8000;

/// A switch's packet-in buffer: slots holding (packet, in-port).
struct Buffer {
    slots: Vec<Option<(PacketId, u32)>>,
    free: Vec<u32>,
}

/// The SdnController application: built in, or a Python object the
/// binding calls between slices of the run.
enum App {
    Builtin(BuiltinController),
    External {
        /// Packet-ins not yet handed to the binding.
        pending: Vec<SdnPacketIn>,
        /// Packet-ins handed over and not yet answered, by id.
        waiting: BTreeMap<u64, Waiting>,
        next_id: u64,
    },
}

/// What an unanswered packet-in needs when its answer comes.
struct Waiting {
    node: NodeId,
    buffer: u32,
    key: FlowKey,
    connection: Option<(u32, u32)>,
    opening: Opening,
}

/// A packet-in as an SdnController app written in Python sees it.
#[derive(Clone, Debug)]
pub struct SdnPacketIn {
    /// Answer with this id.
    pub id: u64,
    pub time_s: f64,
    pub switch: String,
    /// The link the packet arrived over.
    pub in_link: String,
    /// Interfaces as `host:link`.
    pub src: String,
    pub dst: String,
    pub sport: u16,
    pub dport: u16,
    /// `tcp` or `udp`.
    pub proto: &'static str,
    /// `first` or `mp_join`.
    pub opening: &'static str,
    /// The MP_JOIN SYN's token.
    pub token: Option<u32>,
    /// The flow and connection number the packet belongs to, if known.
    pub flow: Option<String>,
    pub connection: Option<u32>,
    /// The flow's application size (docs/sdn.md), bytes.
    pub size_bytes: Option<u64>,
}

/// Rules on their way to one switch, and the buffered packet they release.
struct FlowMod {
    node: NodeId,
    rules: Vec<Rule>,
    release: Option<u32>,
}

/// A decision kept for later packet-ins of the same 5-tuple.
#[derive(Clone)]
struct Remembered {
    connection: Option<(u32, u32)>,
    path: Option<Vec<DirId>>,
}

/// One decision, for the trace.
struct DecisionRow {
    at: SimTime,
    switch: NodeId,
    key: FlowKey,
    opening: Opening,
    path: Option<Vec<DirId>>,
    path_index: Option<usize>,
    gap_frac: Option<f64>,
    reason: &'static str,
}

pub(crate) struct Sdn {
    /// None: no `[controller]`, only `[[rule]]` tables (a miss follows the
    /// static tables).
    app: Option<(String, App)>,
    latency: SimDuration,
    idle_timeout: Option<SimDuration>,
    /// Per node: Some for switches.
    tables: Vec<Option<FlowTable>>,
    buffers: Vec<Buffer>,
    buffer_pkts: u32,
    mods: Vec<Option<FlowMod>>,
    free_mods: Vec<u32>,
    /// Decisions, when `record.controller` asks for them.
    rows: Option<Vec<DecisionRow>>,
    packet_ins: u64,
    buffer_drops: u64,
    refused: u64,
    table_drops: u64,
    /// Per 5-tuple (both ways), the connection it belonged to and the path
    /// decided for it (None: refused): a packet-in for a 5-tuple whose rules
    /// expired, or a retransmitted SYN, gets it again, so a subflow keeps
    /// its path; a SYN of another connection on reused ports asks anew.
    decided: BTreeMap<(u128, u8), Remembered>,
}

fn app(c: &ControllerSpec) -> Result<App, BuildError> {
    if c.app.starts_with("python:") {
        return Ok(App::External { pending: Vec::new(), waiting: BTreeMap::new(), next_id: 0 });
    }
    Ok(App::Builtin(BuiltinController::new(app_kind(c)?)))
}

/// The built-in controller apps a scenario names (`[controller] app`);
/// others are `python:module:function`.
pub const CONTROLLER_APPS: &[&str] = &["shortest", "ecmp", "disjoint", "mpsshetn"];

fn app_kind(c: &ControllerSpec) -> Result<AppKind, BuildError> {
    Ok(match c.app.as_str() {
        "shortest" => AppKind::Shortest,
        "ecmp" => AppKind::Ecmp,
        "disjoint" => AppKind::Disjoint,
        "mpsshetn" => AppKind::Mpsshetn {
            thresholds: match &c.thresholds {
                None => DEFAULT_THRESHOLDS.to_vec(),
                Some(rows) => rows.iter().map(|r| Threshold { below_bytes: r.below_bytes, gap_frac: r.gap }).collect(),
            },
        },
        a => return Err(BuildError::Invalid(format!("controller: unknown app '{a}'"))),
    })
}

impl Sdn {
    /// With a `[controller]`, a table at every switch; with `[[rule]]`s
    /// only, a table at the switches they name; None without either.
    pub(crate) fn from_spec(spec: &Spec, names: &[&str], kinds: &[NodeKind]) -> Result<Option<Box<Sdn>>, BuildError> {
        if spec.controller.is_none() && spec.rules.is_empty() {
            return Ok(None);
        }
        let app = match &spec.controller {
            Some(c) => Some((c.app.clone(), app(c)?)),
            None => None,
        };
        let c = spec.controller.as_ref();
        let buffer_pkts = c.and_then(|c| c.buffer_pkts).unwrap_or(DEFAULT_BUFFER_PKTS);
        let has_table =
            |n: usize| kinds[n] == NodeKind::Switch && (app.is_some() || spec.rules.iter().any(|r| r.switch == names[n]));
        let tables =
            (0..kinds.len()).map(|n| has_table(n).then(|| FlowTable::new(hash_rows(spec.seed, NodeId(n as u32))))).collect();
        let buffers = kinds.iter().map(|_| Buffer { slots: Vec::new(), free: Vec::new() }).collect();
        Ok(Some(Box::new(Sdn {
            app,
            latency: SimDuration(c.map_or(0, |c| c.latency_ps)),
            idle_timeout: match c.and_then(|c| c.idle_timeout_ps) {
                None => Some(DEFAULT_IDLE_TIMEOUT),
                Some(0) => None,
                Some(t) => Some(SimDuration(t)),
            },
            tables,
            buffers,
            buffer_pkts,
            mods: Vec::new(),
            free_mods: Vec::new(),
            rows: spec.record.controller.then(Vec::new),
            packet_ins: 0,
            buffer_drops: 0,
            refused: 0,
            table_drops: 0,
            decided: BTreeMap::new(),
        })))
    }

    /// Whether `node` forwards by its flow table.
    pub(crate) fn steers(&self, node: NodeId) -> bool {
        self.tables[node.index()].is_some()
    }

    fn hold(&mut self, node: NodeId, pid: PacketId, in_dir: u32) -> Option<u32> {
        let b = &mut self.buffers[node.index()];
        if let Some(id) = b.free.pop() {
            b.slots[id as usize] = Some((pid, in_dir));
            return Some(id);
        }
        if b.slots.len() as u32 >= self.buffer_pkts {
            return None;
        }
        b.slots.push(Some((pid, in_dir)));
        Some(b.slots.len() as u32 - 1)
    }

    fn take(&mut self, node: NodeId, id: u32) -> Option<(PacketId, u32)> {
        let b = &mut self.buffers[node.index()];
        let held = b.slots.get_mut(id as usize)?.take();
        if held.is_some() {
            b.free.push(id);
        }
        held
    }
}

fn flow_key(p: &Packet) -> FlowKey {
    FlowKey { src: p.src, dst: p.dst, sport: p.sport, dport: p.dport, proto: p.proto.ip_number() }
}

fn tuple(k: &FlowKey) -> (u128, u8) {
    (demux_key(k.src, k.sport, k.dst, k.dport), k.proto)
}

fn reversed(k: &FlowKey) -> FlowKey {
    FlowKey { src: k.dst, dst: k.src, sport: k.dport, dport: k.sport, proto: k.proto }
}

/// The header fields a flow table reads.
fn fields(p: &Packet) -> PacketFields {
    let mptcp = p.ext.mptcp().and_then(|m| match m.option {
        MpOption::CapableSyn { .. }
        | MpOption::CapableSynAck { .. }
        | MpOption::CapableAck { .. }
        | MpOption::CapableData { .. } => Some(MptcpMatch::Capable),
        MpOption::JoinSyn { token, .. } => Some(MptcpMatch::Join { token: Some(token) }),
        MpOption::JoinSynAck { .. } | MpOption::JoinAck { .. } => Some(MptcpMatch::Join { token: None }),
        _ => None,
    });
    let tcp_flags = if p.proto == Proto::Tcp { p.flags.0 } else { 0 };
    PacketFields { key: flow_key(p), tcp_flags, mptcp, wire_bytes: p.wire_bytes }
}

/// The size the controller reads from the flow definition (the thesis's
/// controller knows the application size): a download's or upload's size,
/// the largest of an http flow's listed responses; None: unbounded.
fn app_size_bytes(app: &AppSpec) -> Option<u64> {
    match app {
        AppSpec::Download { size_bytes } | AppSpec::Upload { size_bytes } => *size_bytes,
        AppSpec::Http { sizes_bytes, size_distribution: None, .. } => sizes_bytes.iter().copied().max(),
        _ => None,
    }
}

impl Simulation {
    /// A switch with a flow table handles a packet that arrived over `in_dir`.
    pub(crate) fn sdn_forward(&mut self, node: NodeId, in_dir: u32, pid: PacketId) {
        self.sdn_lookup(node, in_dir, pid, true);
    }

    fn sdn_lookup(&mut self, node: NodeId, in_dir: u32, pid: PacketId, may_ask: bool) {
        let p = self.pool.packet(pid);
        let key = flow_key(&p);
        if self.forwarding.pins.is_some() {
            if let Some(d) = self.pinned_dir(node, &key) {
                return self.sdn_output(&key, d, pid);
            }
        }
        let f = fields(&p);
        let (now, sdn) = (self.now, self.sdn.as_mut().expect("sdn_forward runs with flow tables"));
        let verdict = match sdn.tables[node.index()].as_mut() {
            Some(t) => t.lookup(now, in_dir, &f),
            None => Verdict::Drop,
        };
        let asks = sdn.app.is_some();
        match verdict {
            Verdict::Output(d) => self.sdn_output(&key, d, pid),
            // Without a controller, a miss goes on by the static tables.
            Verdict::Miss if !asks => self.forward(node, pid),
            Verdict::Miss | Verdict::ToController if may_ask && asks => self.packet_in(node, in_dir, pid),
            _ => {
                sdn.table_drops += 1;
                self.pool.free(pid);
            }
        }
    }

    fn sdn_output(&mut self, key: &FlowKey, d: u32, pid: PacketId) {
        if self.forwarding.paths.is_some() {
            self.trace_hop(key, d);
        }
        self.transmit(d, pid);
    }

    /// A miss: buffer the packet and tell the controller, or drop it.
    fn packet_in(&mut self, node: NodeId, in_dir: u32, pid: PacketId) {
        let now = self.now;
        let sdn = self.sdn.as_mut().expect("packet_in runs with a controller");
        if let Some(t) = sdn.tables[node.index()].as_mut() {
            t.expire_every(now, SWEEP_PERIOD);
        }
        match sdn.hold(node, pid, in_dir) {
            Some(buffer) => {
                sdn.packet_ins += 1;
                let at = now + sdn.latency;
                self.queue.push(at, Ev::PacketIn { node: node.0, buffer });
            }
            None => {
                sdn.buffer_drops += 1;
                self.pool.free(pid);
            }
        }
    }

    /// The packet-in reaches the controller: its app decides, flow-mods leave.
    pub(crate) fn on_packet_in(&mut self, node: u32, buffer: u32) {
        let node = NodeId(node);
        let Some(held) = self.sdn.as_ref().and_then(|s| s.buffers[node.index()].slots.get(buffer as usize).copied().flatten())
        else {
            return;
        };
        let p = self.pool.packet(held.0);
        let key = flow_key(&p);
        let ends = (iface_of_addr(p.src), iface_of_addr(p.dst));
        let (Some((sl, ss)), Some((dl, ds))) = ends else { return self.refuse(node, buffer, &key, None) };
        if sl.index() >= self.links.len() || dl.index() >= self.links.len() {
            return self.refuse(node, buffer, &key, None);
        }
        let first_dir = 2 * sl.0 + ss;
        let last_dir = (2 * dl.0 + ds) ^ 1;
        let connection = self.connection_of(&p);
        let opens = p.flags.has(TcpFlags::SYN) && !p.flags.has(TcpFlags::ACK);
        let sdn = self.sdn.as_ref().expect("a packet-in runs with a controller");
        if let Some(m) = sdn.decided.get(&tuple(&key)).filter(|m| !opens || m.connection == connection).cloned() {
            return match m.path {
                Some(path) => self.install_path(node, buffer, &key, &path),
                None => self.refuse(node, buffer, &key, None),
            };
        }
        let join = p.flags.has(TcpFlags::SYN) && matches!(p.ext.mptcp().map(|m| m.option), Some(MpOption::JoinSyn { .. }));
        let app_size_bytes = connection.and_then(|(f, _)| app_size_bytes(&self.flows[f as usize].spec.app));
        let hash = hash_rows(self.seed, self.dir_far_node(first_dir));
        let link_bps: Vec<u64> = (0..self.links.len())
            .map(|l| self.dirs[2 * l].params().bandwidth_bps.min(self.dirs[2 * l + 1].params().bandwidth_bps))
            .collect();
        let dir_up: Vec<bool> = self.dirs.iter().map(|d| d.params().up).collect();
        let g = NetGraph { topo: &self.topo, link_bps: &link_bps, dir_up: &dir_up };
        let opening = if join { Opening::Join } else { Opening::First };
        let request = PacketIn { key, first_dir, last_dir, opening, connection, app_size_bytes, hash: &hash };
        let sdn = self.sdn.as_mut().expect("a packet-in runs with a controller");
        let d = match sdn.app.as_mut() {
            Some((_, App::Builtin(app))) => app.on_packet_in(&g, &request),
            Some((_, App::External { .. })) => {
                let w = Waiting { node, buffer, key, connection, opening };
                return self.ask_external(w, held.1, &p, app_size_bytes);
            }
            None => return,
        };
        self.apply_decision(Waiting { node, buffer, key, connection, opening }, d);
    }

    /// Traces, remembers and carries out a decision.
    fn apply_decision(&mut self, w: Waiting, d: Decision) {
        let Waiting { node, buffer, key, connection, opening } = w;
        let sdn = self.sdn.as_mut().expect("a decision runs with a controller");
        if let Some(rows) = sdn.rows.as_mut() {
            let (path, path_index, gap_frac, reason) = (d.path.clone(), d.path_index, d.gap_frac, d.reason);
            rows.push(DecisionRow { at: self.now, switch: node, key, opening, path, path_index, gap_frac, reason });
        }
        let back = d.path.as_ref().map(|p| p.iter().rev().map(|d| d ^ 1).collect());
        sdn.decided.insert(tuple(&reversed(&key)), Remembered { connection, path: back });
        sdn.decided.insert(tuple(&key), Remembered { connection, path: d.path.clone() });
        match d.path {
            Some(path) => self.install_path(node, buffer, &key, &path),
            None => self.refuse(node, buffer, &key, Some(())),
        }
    }

    /// The MPTCP-aware lookup: an MP_JOIN names its connection by the
    /// token of the server side (RFC 8684 section 3.2), which a controller
    /// learns from the keys of the MP_CAPABLE handshake; any other packet
    /// by its 5-tuple's endpoint.
    fn connection_of(&self, p: &Packet) -> Option<(u32, u32)> {
        if let Some(MpOption::JoinSyn { token, .. }) = p.ext.mptcp().map(|m| m.option) {
            let (l, side) = iface_of_addr(p.dst)?;
            let server = self.topo.end(l, side);
            let &ep = self.tokens.get(&(server, token))?;
            let e = &self.endpoints[ep as usize];
            return Some((e.flow, e.conn));
        }
        let by = |k| match self.demux.get(&k)? {
            crate::flows::Demux::Ep(ep) => Some((self.endpoints[*ep as usize].flow, self.endpoints[*ep as usize].conn)),
            crate::flows::Demux::Pending { flow, conn } => Some((*flow, *conn)),
            crate::flows::Demux::Udp { flow } => Some((*flow, 0)),
        };
        by(demux_key(p.src, p.sport, p.dst, p.dport)).or_else(|| by(demux_key(p.dst, p.dport, p.src, p.sport)))
    }

    fn rule(&self, matches: Match, action: Action) -> Rule {
        let idle_timeout = self.sdn.as_ref().and_then(|s| s.idle_timeout);
        Rule { priority: APP_PRIORITY, matches, action, idle_timeout, hard_timeout: None }
    }

    /// Flow-mods along `path` (link directions host to host) for the
    /// 5-tuple and its reverse, at every switch on it; the buffered packet
    /// goes with the flow-mod of the switch that asked.
    fn install_path(&mut self, asked: NodeId, buffer: u32, key: &FlowKey, path: &[DirId]) {
        let mut per_node: Vec<(NodeId, Vec<Rule>)> = Vec::new();
        let back: Vec<DirId> = path.iter().rev().map(|d| d ^ 1).collect();
        for (k, dirs) in [(*key, path), (reversed(key), back.as_slice())] {
            for w in dirs.windows(2) {
                let n = self.dir_far_node(w[0]);
                if !self.sdn.as_ref().is_some_and(|s| s.steers(n)) {
                    continue;
                }
                let r = self.rule(Match::exact(&k), Action::Output(w[1]));
                match per_node.iter_mut().find(|(m, _)| *m == n) {
                    Some((_, rules)) => rules.push(r),
                    None => per_node.push((n, vec![r])),
                }
            }
        }
        if !per_node.iter().any(|(n, _)| *n == asked) {
            per_node.push((asked, Vec::new()));
        }
        for (n, rules) in per_node {
            let release = (n == asked).then_some(buffer);
            self.send_flow_mod(FlowMod { node: n, rules, release });
        }
    }

    /// No path: a drop rule for the 5-tuple at the switch that asked (so
    /// its retransmissions die there), and the buffered packet dropped.
    fn refuse(&mut self, asked: NodeId, buffer: u32, key: &FlowKey, counted: Option<()>) {
        let rule = self.rule(Match::exact(key), Action::Drop);
        let sdn = self.sdn.as_mut().expect("a refusal runs with a controller");
        if counted.is_some() {
            sdn.refused += 1;
        }
        self.send_flow_mod(FlowMod { node: asked, rules: vec![rule], release: Some(buffer) });
    }

    fn send_flow_mod(&mut self, m: FlowMod) {
        let sdn = self.sdn.as_mut().expect("flow-mods run with a controller");
        let id = match sdn.free_mods.pop() {
            Some(id) => {
                sdn.mods[id as usize] = Some(m);
                id
            }
            None => {
                sdn.mods.push(Some(m));
                sdn.mods.len() as u32 - 1
            }
        };
        let at = self.now + sdn.latency;
        self.queue.push(at, Ev::FlowMod { id });
    }

    /// A flow-mod reaches its switch: its rules go in, its packet goes on.
    pub(crate) fn on_flow_mod(&mut self, id: u32) {
        let now = self.now;
        let Some(sdn) = self.sdn.as_mut() else { return };
        let Some(m) = sdn.mods.get_mut(id as usize).and_then(Option::take) else { return };
        sdn.free_mods.push(id);
        if let Some(t) = sdn.tables[m.node.index()].as_mut() {
            for r in m.rules {
                t.install(now, r);
            }
        }
        let held = m.release.and_then(|b| sdn.take(m.node, b));
        if let Some((pid, in_dir)) = held {
            // The packet-out: through the table again, which now has its rule.
            self.sdn_lookup(m.node, in_dir, pid, false);
        }
    }

    /// The summary's `controller` section: counters, and with
    /// `record.controller` one row per decision.
    pub(crate) fn controller_summary(&self) -> Option<Value> {
        let sdn = self.sdn.as_ref()?;
        let (app_name, _) = sdn.app.as_ref()?;
        let node = |n: NodeId| self.nodes[n.index()].name.clone();
        let rules: usize = sdn.tables.iter().flatten().map(|t| t.len()).sum();
        let mut v = json!({
            "app": app_name,
            "packet_ins": sdn.packet_ins,
            "buffer_drops": sdn.buffer_drops,
            "refused": sdn.refused,
            "table_drops": sdn.table_drops,
            "rules_at_end": rules,
        });
        if let Some(rows) = &sdn.rows {
            let rows: Vec<Value> = rows
                .iter()
                .map(|r| {
                    json!({
                        "time_s": r.at.as_secs_f64(),
                        "switch": node(r.switch),
                        "src": r.key.src.to_string(),
                        "sport": r.key.sport,
                        "dst": r.key.dst.to_string(),
                        "dport": r.key.dport,
                        "proto": proto_name(r.key.proto),
                        "opening": if r.opening == Opening::Join { "mp_join" } else { "first" },
                        "links": r.path.as_ref().map(|p| p.iter().map(|&d| self.links[(d / 2) as usize].name.clone()).collect::<Vec<_>>()),
                        "path_index": r.path_index,
                        "gap": r.gap_frac,
                        "reason": r.reason,
                    })
                })
                .collect();
            v["decisions"] = Value::Array(rows);
        }
        Some(v)
    }
}

/// Why a `[[rule]]` cannot be installed.
fn rule_error(i: usize, msg: String) -> BuildError {
    BuildError::Invalid(format!("rule[{i}]: {msg}"))
}

impl Simulation {
    /// Installs the scenario's static rules (`[[rule]]`) at time zero.
    pub(crate) fn build_rules(&mut self, spec: &Spec) -> Result<(), BuildError> {
        for (i, r) in spec.rules.iter().enumerate() {
            let rule = self.resolve_rule(r).map_err(|e| rule_error(i, e))?;
            let node = self.node_named(&r.switch).ok_or_else(|| rule_error(i, format!("unknown node '{}'", r.switch)))?;
            let Some(table) = self.sdn.as_mut().and_then(|s| s.tables[node.index()].as_mut()) else {
                return Err(rule_error(i, format!("'{}' is not a switch", r.switch)));
            };
            table.install(SimTime::ZERO, rule);
        }
        Ok(())
    }

    fn node_named(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|n| NodeId(n as u32))
    }

    /// The link direction leaving (`out`) or entering `node` over link `name`.
    fn port(&self, node: NodeId, name: &str, out: bool) -> Result<u32, String> {
        let l = self.links.iter().position(|l| l.name == name).ok_or(format!("unknown link '{name}'"))?;
        let link = &self.links[l];
        let leaving = match (link.a == node, link.b == node) {
            (true, _) => 2 * l as u32,
            (_, true) => 2 * l as u32 + 1,
            _ => return Err(format!("link '{name}' does not touch '{}'", self.nodes[node.index()].name)),
        };
        Ok(if out { leaving } else { leaving ^ 1 })
    }

    /// An interface `host:link` as its address.
    fn iface(&self, name: &str) -> Result<mpsim_core::Addr, String> {
        let (host, link) = name.split_once(':').ok_or(format!("expected HOST:LINK, got '{name}'"))?;
        let h = self.node_named(host).ok_or(format!("unknown node '{host}'"))?;
        let &(l, side) = self.nodes[h.index()]
            .ifaces
            .iter()
            .find(|(l, _)| self.links[l.index()].name == link)
            .ok_or(format!("'{host}' has no interface on link '{link}'"))?;
        Ok(mpsim_net::iface_addr(l, side))
    }

    fn resolve_rule(&self, r: &crate::spec::RuleSpec) -> Result<Rule, String> {
        let node = self.node_named(&r.switch).ok_or(format!("unknown node '{}'", r.switch))?;
        let mptcp = match (r.mptcp.as_deref(), r.token) {
            (None, None) => None,
            (Some("mp_capable"), None) => Some(MptcpMatch::Capable),
            (Some("mp_join"), token) => Some(MptcpMatch::Join { token }),
            (_, Some(_)) => return Err("token needs mptcp = \"mp_join\"".into()),
            (Some(other), _) => return Err(format!("unknown mptcp subtype '{other}'")),
        };
        let matches = Match {
            in_port: r.in_link.as_deref().map(|l| self.port(node, l, false)).transpose()?,
            src: r.src.as_deref().map(|a| self.iface(a)).transpose()?,
            dst: r.dst.as_deref().map(|a| self.iface(a)).transpose()?,
            sport: r.sport,
            dport: r.dport,
            proto: r.proto,
            tcp_flags: r.tcp_flags,
            mptcp,
        };
        let ports: Vec<u32> = r.links.iter().map(|l| self.port(node, l, true)).collect::<Result<_, _>>()?;
        let action = match (r.action.as_str(), ports.len()) {
            ("output", 1) => Action::Output(ports[0]),
            ("group", n) if n >= 1 => Action::Group(ports),
            ("drop", 0) => Action::Drop,
            ("controller", 0) if self.sdn.as_ref().is_some_and(|s| s.app.is_some()) => Action::ToController,
            ("controller", 0) => return Err("action 'controller' needs a [controller]".into()),
            ("output" | "group" | "drop" | "controller", _) => {
                return Err(format!("action '{}' with {} links", r.action, ports.len()))
            }
            (other, _) => return Err(format!("unknown action '{other}'")),
        };
        Ok(Rule {
            priority: r.priority,
            matches,
            action,
            idle_timeout: r.idle_timeout_ps.map(SimDuration),
            hard_timeout: r.hard_timeout_ps.map(SimDuration),
        })
    }
}

impl Simulation {
    /// Hands a packet-in to the app written in Python: queued for the
    /// binding, and the run pauses after this event so it is answered at
    /// the time it reached the controller.
    fn ask_external(&mut self, w: Waiting, in_dir: u32, p: &Packet, size_bytes: Option<u64>) {
        let iface = |a| match iface_of_addr(a) {
            Some((l, side)) => format!("{}:{}", self.nodes[self.topo.end(l, side).index()].name, self.links[l.index()].name),
            None => a.to_string(),
        };
        let token = match p.ext.mptcp().map(|m| m.option) {
            Some(MpOption::JoinSyn { token, .. }) => Some(token),
            _ => None,
        };
        let mut event = SdnPacketIn {
            id: 0,
            time_s: self.now.as_secs_f64(),
            switch: self.nodes[w.node.index()].name.clone(),
            in_link: self.links[(in_dir / 2) as usize].name.clone(),
            src: iface(p.src),
            dst: iface(p.dst),
            sport: p.sport,
            dport: p.dport,
            proto: proto_name(p.proto.ip_number()),
            opening: if w.opening == Opening::Join { "mp_join" } else { "first" },
            token,
            flow: w.connection.map(|(f, _)| self.flows[f as usize].spec.name.clone()),
            connection: w.connection.map(|(_, c)| c),
            size_bytes,
        };
        let Some((_, App::External { pending, waiting, next_id })) = self.sdn.as_mut().and_then(|s| s.app.as_mut()) else {
            return;
        };
        event.id = *next_id;
        *next_id += 1;
        waiting.insert(event.id, w);
        pending.push(event);
        self.pause = true;
    }

    /// The packet-ins waiting for the app written in Python, oldest first;
    /// the run goes on once they are answered ([`Simulation::sdn_answer`]).
    pub fn sdn_packet_ins(&mut self) -> Vec<SdnPacketIn> {
        self.pause = false;
        match self.sdn.as_mut().and_then(|s| s.app.as_mut()) {
            Some((_, App::External { pending, .. })) => std::mem::take(pending),
            _ => Vec::new(),
        }
    }

    /// The app's answer to packet-in `id`: the path as link names from the
    /// source host to the destination host, or None to refuse it.
    pub fn sdn_answer(&mut self, id: u64, links: Option<&[String]>) -> Result<(), String> {
        let Some((_, App::External { waiting, .. })) = self.sdn.as_mut().and_then(|s| s.app.as_mut()) else {
            return Err("no SdnController app in Python runs".into());
        };
        let w = waiting.remove(&id).ok_or(format!("no packet-in {id} waits for an answer"))?;
        let path = match links {
            None => None,
            Some(names) => match self.path_of_names(&w.key, names) {
                Ok(p) => Some(p),
                Err(e) => {
                    // Unanswered, the packet would wait for ever: refuse it.
                    self.apply_decision(w, Decision { path: None, path_index: None, gap_frac: None, reason: "bad path" });
                    return Err(e);
                }
            },
        };
        let reason = if path.is_some() { "python app" } else { "python app refused" };
        self.apply_decision(w, Decision { path, path_index: None, gap_frac: None, reason });
        Ok(())
    }

    /// Link names as the directions a packet of `key` takes from its
    /// source host to its destination host.
    fn path_of_names(&self, key: &FlowKey, names: &[String]) -> Result<Vec<DirId>, String> {
        let ends = |a| iface_of_addr(a).filter(|(l, _)| l.index() < self.links.len());
        let (Some((sl, ss)), Some((dl, ds))) = (ends(key.src), ends(key.dst)) else {
            return Err("the packet's addresses are not host interfaces".into());
        };
        let mut at = self.topo.end(sl, ss);
        let mut dirs = Vec::new();
        for name in names {
            let l = self.links.iter().position(|l| l.name == *name).ok_or(format!("unknown link '{name}'"))?;
            let (a, b) = (self.links[l].a, self.links[l].b);
            let (d, next) = match (a == at, b == at) {
                (true, _) => (2 * l as u32, b),
                (_, true) => (2 * l as u32 + 1, a),
                _ => return Err(format!("link '{name}' does not continue the path")),
            };
            dirs.push(d);
            at = next;
        }
        if dirs.first() != Some(&(2 * sl.0 + ss)) || dirs.last() != Some(&((2 * dl.0 + ds) ^ 1)) {
            return Err("the path must run from the source interface's link to the destination's".into());
        }
        Ok(dirs)
    }
}
