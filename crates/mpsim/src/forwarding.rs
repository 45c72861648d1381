//! The engine's side of forwarding: the per-node modes and the rerouting
//! settings read from the spec, the single call a switch or router makes
//! for a packet, and the recomputation of the tables after a link changes
//! state (a routing protocol converging `reroute_delay` later). With
//! `record.paths`, the links each 5-tuple's packets crossed, for the summary.

use crate::flows::Demux;
use crate::sim::{demux_key, Ev, Simulation};
use crate::spec::{ForwardingSpec, Spec};
use mpsim_core::{NodeId, Packet, PacketId, Proto, SimDuration};
use mpsim_net::{iface_of_addr, FlowKey, ForwardingMode, RouteConfig, Routes, Topology};
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
        }
    }

    /// Tables over the directions that are up in `dir_up`.
    pub(crate) fn routes(&self, topo: &Topology, dir_up: &[bool]) -> Routes {
        topo.routes_with(&RouteConfig { modes: &self.modes, dir_up, seed: self.seed })
    }
}

/// The 5-tuple an ECMP node hashes.
fn flow_key(p: &Packet) -> FlowKey {
    let proto = if p.proto == Proto::Tcp { 6 } else { 17 };
    FlowKey { src: p.src, dst: p.dst, sport: p.sport, dport: p.dport, proto }
}

impl Simulation {
    /// A switch or router sends `pid` on towards its destination, or drops
    /// it when it has no route.
    pub(crate) fn forward(&mut self, node: NodeId, pid: PacketId) {
        let key = flow_key(self.pool.get(pid));
        match self.routes.next_dir_for(node, &key) {
            Some(d) => {
                if self.forwarding.paths.is_some() {
                    self.trace_hop(&key, d);
                }
                self.transmit(d, pid)
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
        let dir_up: Vec<bool> = self.dirs.iter().map(|d| d.params.up).collect();
        self.routes = self.forwarding.routes(&self.topo, &dir_up);
        self.forwarding.recomputations += 1;
    }
}

impl Simulation {
    #[cold]
    fn trace_hop(&mut self, key: &FlowKey, dir: u32) {
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
        [sender, receiver].into_iter().flatten().find_map(|d| match *d {
            Demux::Ep(ep) => Some(self.endpoints[ep as usize].flow),
            Demux::Pending { flow, .. } | Demux::Udp { flow } => Some(flow),
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
                "proto": if e.key.proto == 6 { "tcp" } else { "udp" },
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
