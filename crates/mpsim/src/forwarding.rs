//! The engine's side of forwarding: the per-node modes and the rerouting
//! settings read from the spec, the single call a switch or router makes
//! for a packet, and the recomputation of the tables after a link changes
//! state (a routing protocol converging `reroute_delay` later). With
//! `record.paths`, the links each 5-tuple's packets crossed, for the summary.
//! Pinned paths (`[[flow]] paths`) are per-flow entries at the switches and
//! routers along them, matched on the 5-tuple ahead of the tables.

use crate::flows::Demux;
use crate::sim::{demux_key, Ev, Simulation};
use crate::spec::{ForwardingSpec, Spec};
use mpsim_core::{NodeId, PacketId, SimDuration};
use mpsim_net::{iface_of_addr, FlowKey, ForwardingMode, Hop, RouteConfig, Routes, Topology};
use rustc_hash::FxHashMap;
use serde_json::{json, Value};

/// How the tables are built and when they are rebuilt.
pub(crate) struct Forwarding {
    /// Per node (hosts ignored).
    pub modes: Vec<ForwardingMode>,
    /// The convergence delay after a link goes down or up; None: static tables.
    pub reroute_delay: Option<SimDuration>,
    pub seed: u64,
    /// Times the tables were rebuilt during the run.
    pub recomputations: u64,
    /// The links each 5-tuple crossed (record.paths); None when not asked for.
    pub paths: Option<PathTrace>,
    /// Pinned paths of flows; None when no flow pins one.
    pub pins: Option<Pins>,
}

/// One pinned path: the direction each node on it forwards over, both ways.
struct PinnedPath {
    /// The client's link the path starts on: a subflow leaving on another
    /// interface cannot follow it.
    first_link: u32,
    to_server: Vec<(NodeId, u32)>,
    to_client: Vec<(NodeId, u32)>,
}

/// Per-flow forwarding entries: each 5-tuple of a flow with pinned paths
/// takes, when first seen, the next of its flow's paths that start on its
/// client interface, in order (round robin for later connections).
#[derive(Default)]
pub(crate) struct Pins {
    /// Per flow.
    paths: Vec<Vec<PinnedPath>>,
    /// Per (flow, first link): how many 5-tuples took one of its paths.
    taken: FxHashMap<(u32, u32), u32>,
    /// Client-side 5-tuple to (flow, path); None for one that is not pinned.
    assigned: FxHashMap<(u128, u8), Option<(u32, u32)>>,
}

/// Per 5-tuple, in the order first seen: its flow and the link directions
/// its packets crossed, each once, in the order first used.
#[derive(Default)]
pub(crate) struct PathTrace {
    index: FxHashMap<(u128, u8), usize>,
    entries: Vec<PathEntry>,
}

struct PathEntry {
    key: FlowKey,
    flow: Option<u32>,
    dirs: Vec<u32>,
}

fn tuple(k: &FlowKey) -> (u128, u8) {
    (demux_key(k.src, k.sport, k.dst, k.dport), k.proto)
}

/// The name of an IP protocol number the engine sends.
pub(crate) fn proto_name(ip_number: u8) -> &'static str {
    match ip_number {
        6 => "tcp",
        132 => "sctp",
        _ => "udp",
    }
}

fn mode(f: ForwardingSpec) -> ForwardingMode {
    match f {
        ForwardingSpec::Shortest => ForwardingMode::Shortest,
        ForwardingSpec::Ecmp => ForwardingMode::Ecmp,
    }
}

impl Forwarding {
    pub(crate) fn from_spec(spec: &Spec) -> Forwarding {
        let modes = spec.nodes.iter().map(|n| mode(n.forwarding.unwrap_or(spec.forwarding))).collect();
        Forwarding {
            modes,
            reroute_delay: spec.reroute.then_some(SimDuration(spec.reroute_delay_ps)),
            seed: spec.seed,
            recomputations: 0,
            paths: spec.record.paths.then(PathTrace::default),
            pins: None,
        }
    }

    /// Tables over the directions that are up in `dir_up`.
    pub(crate) fn routes(&self, topo: &Topology, dir_up: &[bool]) -> Routes {
        topo.routes_with(&RouteConfig { modes: &self.modes, dir_up, seed: self.seed })
    }
}

impl Simulation {
    /// A switch or router sends `pid` on towards its destination, or drops
    /// it when it has no route.
    pub(crate) fn forward(&mut self, node: NodeId, pid: PacketId) {
        let hop = Hop::of(self.pool.get(pid));
        self.forward_hop(node, pid, &hop);
    }

    /// As `forward`, with what the packet carries through the link (its
    /// 5-tuple and size) already at hand: the packet itself is not read.
    #[inline]
    pub(crate) fn forward_hop(&mut self, node: NodeId, pid: PacketId, hop: &Hop) {
        let key = &hop.key;
        let pinned = if self.forwarding.pins.is_some() { self.pinned_dir(node, key) } else { None };
        match pinned.or_else(|| self.routes.next_dir_with(node, key.dst, || *key)) {
            Some(d) => {
                if self.forwarding.paths.is_some() {
                    self.trace_hop(key, d);
                }
                self.transmit_hop(d, pid, hop)
            }
            None => {
                self.no_route_drops += 1;
                self.pool.free(pid);
            }
        }
    }

    /// A link went down or up: with rerouting on, the tables follow after
    /// the convergence delay.
    pub(crate) fn on_link_state_change(&mut self) {
        if let Some(delay) = self.forwarding.reroute_delay {
            self.queue.push(self.now + delay, Ev::Reroute);
        }
    }

    /// Rebuilds the tables from the directions that are up now (later
    /// changes schedule their own rebuild).
    pub(crate) fn on_reroute(&mut self) {
        let dir_up: Vec<bool> = self.dirs.iter().map(|d| d.params().up).collect();
        self.routes = self.forwarding.routes(&self.topo, &dir_up);
        self.forwarding.recomputations += 1;
    }
}

/// A path of link names resolved to the direction each node forwards over,
/// from `client` to `server`, or why it is not one.
fn resolve_path(sim: &Simulation, names: &[String], client: NodeId, server: NodeId) -> Result<PinnedPath, String> {
    let mut at = client;
    let mut hops = Vec::new();
    let mut first_link = None;
    for name in names {
        let l = sim.links.iter().position(|l| l.name == *name).ok_or(format!("unknown link '{name}'"))?;
        let link = &sim.links[l];
        let (dir, next) = match (link.a == at, link.b == at) {
            (true, _) => (2 * l as u32, link.b),
            (_, true) => (2 * l as u32 + 1, link.a),
            _ => return Err(format!("link '{name}' does not continue the path from '{}'", sim.nodes[at.index()].name)),
        };
        if at != client && sim.nodes[at.index()].kind == mpsim_net::NodeKind::Host {
            return Err(format!("the path runs through host '{}'; hosts do not forward", sim.nodes[at.index()].name));
        }
        if next == client || hops.iter().any(|&(n, _)| n == next) {
            return Err(format!("the path visits '{}' twice", sim.nodes[next.index()].name));
        }
        first_link.get_or_insert(l as u32);
        hops.push((at, dir));
        at = next;
    }
    if at != server {
        return Err(format!("the path ends at '{}', not at the server", sim.nodes[at.index()].name));
    }
    let first_link = first_link.ok_or("a path needs at least one link")?;
    // Back from the server: each hop's reverse direction, from the node it led to.
    let mut to_client: Vec<(NodeId, u32)> = hops.iter().map(|&(_, d)| (sim.dir_far_node(d), d ^ 1)).collect();
    to_client.reverse();
    hops.retain(|&(n, _)| n != client);
    to_client.retain(|&(n, _)| n != server);
    Ok(PinnedPath { first_link, to_server: hops, to_client })
}

impl Simulation {
    /// Resolves the pinned paths of every flow (`[[flow]] paths`).
    pub(crate) fn build_pins(&mut self, spec: &Spec) -> Result<(), crate::sim::BuildError> {
        if spec.flows.iter().all(|f| f.paths.is_none()) {
            return Ok(());
        }
        let mut pins = Pins::default();
        for (i, f) in spec.flows.iter().enumerate() {
            let client = self.flows[i].client;
            let server = match f.paths {
                Some(_) => self.nodes.iter().position(|n| n.name == f.server).map_or(client, |n| NodeId(n as u32)),
                None => client,
            };
            let mut resolved = Vec::new();
            for (j, names) in f.paths.iter().flatten().enumerate() {
                let p = resolve_path(self, names, client, server)
                    .map_err(|e| crate::sim::BuildError::Invalid(format!("flow '{}': paths[{j}]: {e}", f.name)))?;
                resolved.push(p);
            }
            pins.paths.push(resolved);
        }
        self.forwarding.pins = Some(pins);
        Ok(())
    }

    /// The pinned direction at `node` for a packet of 5-tuple `key`, if its
    /// flow pins it to a path through `node`.
    pub(crate) fn pinned_dir(&mut self, node: NodeId, key: &FlowKey) -> Option<u32> {
        let up = tuple(key);
        let down = (demux_key(key.dst, key.dport, key.src, key.sport), key.proto);
        let pins = self.forwarding.pins.as_ref()?;
        let (pin, to_server) = match (pins.assigned.get(&up), pins.assigned.get(&down)) {
            (Some(&p), _) => (p, true),
            (None, Some(&p)) => (p, false),
            (None, None) => self.assign_pin(key)?,
        };
        let (flow, path) = pin?;
        let p = &self.forwarding.pins.as_ref()?.paths[flow as usize][path as usize];
        let hops = if to_server { &p.to_server } else { &p.to_client };
        hops.iter().find(|&&(n, _)| n == node).map(|&(_, d)| d)
    }

    /// First sight of a 5-tuple: the next path of its flow that starts on
    /// its client interface, remembered for both directions.
    #[cold]
    fn assign_pin(&mut self, key: &FlowKey) -> Option<(Option<(u32, u32)>, bool)> {
        let flow = self.flow_of(key)?;
        let client = self.flows[flow as usize].client;
        let host_link = |a| iface_of_addr(a).map(|(l, side)| (self.topo.end(l, side), l.0));
        let (to_server, client_link) = match (host_link(key.src), host_link(key.dst)) {
            (Some((h, l)), _) if h == client => (true, l),
            (_, Some((h, l))) if h == client => (false, l),
            _ => return None,
        };
        let canonical = if to_server { tuple(key) } else { (demux_key(key.dst, key.dport, key.src, key.sport), key.proto) };
        let pins = self.forwarding.pins.as_mut()?;
        let candidates: Vec<u32> = (0..pins.paths[flow as usize].len() as u32)
            .filter(|&p| pins.paths[flow as usize][p as usize].first_link == client_link)
            .collect();
        let pin = if candidates.is_empty() {
            None
        } else {
            let taken = pins.taken.entry((flow, client_link)).or_insert(0);
            let path = candidates[*taken as usize % candidates.len()];
            *taken += 1;
            Some((flow, path))
        };
        pins.assigned.insert(canonical, pin);
        Some((pin, to_server))
    }

    #[cold]
    pub(crate) fn trace_hop(&mut self, key: &FlowKey, dir: u32) {
        let flow = self.flow_of(key);
        let Some(trace) = self.forwarding.paths.as_mut() else { return };
        let i = *trace.index.entry(tuple(key)).or_insert_with(|| {
            // The first hop leaves the sender over the link of its source address.
            let first = iface_of_addr(key.src).map(|(l, side)| 2 * l.0 + side);
            trace.entries.push(PathEntry { key: *key, flow, dirs: first.into_iter().collect() });
            trace.entries.len() - 1
        });
        let e = &mut trace.entries[i];
        if !e.dirs.contains(&dir) {
            e.dirs.push(dir);
        }
    }

    /// The flow a packet belongs to: by its sender's endpoint, else by
    /// what its receiver expects (a SYN, a datagram).
    fn flow_of(&self, k: &FlowKey) -> Option<u32> {
        let sender = self.demux.get(&demux_key(k.src, k.sport, k.dst, k.dport));
        let receiver = self.demux.get(&demux_key(k.dst, k.dport, k.src, k.sport));
        Some(match *sender.or(receiver)? {
            Demux::Ep(ep) => self.endpoints[ep as usize].flow,
            Demux::Pending { flow, .. } | Demux::Udp { flow } => flow,
        })
    }

    fn iface_name(&self, a: mpsim_core::Addr) -> String {
        match iface_of_addr(a).filter(|(l, _)| l.index() < self.links.len()) {
            Some((l, side)) => format!("{}:{}", self.nodes[self.topo.end(l, side).index()].name, self.links[l.index()].name),
            None => a.to_string(),
        }
    }

    /// The `paths` section of the summary (record.paths), or None.
    pub(crate) fn path_summary(&self) -> Option<Value> {
        let trace = self.forwarding.paths.as_ref()?;
        let rows = trace.entries.iter().map(|e| {
            json!({
                "flow": e.flow.map(|f| self.flows[f as usize].spec.name.clone()),
                "src": self.iface_name(e.key.src),
                "sport": e.key.sport,
                "dst": self.iface_name(e.key.dst),
                "dport": e.key.dport,
                "proto": proto_name(e.key.proto),
                "links": e.dirs.iter().map(|&d| self.links[(d / 2) as usize].name.clone()).collect::<Vec<_>>(),
            })
        });
        Some(Value::Array(rows.collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_override_beats_the_simulation_default() {
        let json = r#"{"name":"t","seed":9,"duration_ps":1,"sample_interval_ps":1,"mss_bytes":1448,"header_bytes":66,
            "forwarding":"ecmp","reroute":true,
            "nodes":[{"name":"a","kind":"host"},{"name":"s","kind":"switch","forwarding":"shortest"},{"name":"r","kind":"router"}],
            "links":[],"flows":[]}"#;
        let spec = Spec::from_json(json).expect("valid spec");
        let f = Forwarding::from_spec(&spec);
        assert_eq!(f.modes, vec![ForwardingMode::Ecmp, ForwardingMode::Shortest, ForwardingMode::Ecmp]);
        assert_eq!(f.reroute_delay, Some(SimDuration(50_000_000_000)));
        assert_eq!(f.seed, 9);
    }
}
