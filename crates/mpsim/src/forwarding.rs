//! The engine's side of forwarding: the per-node modes and the rerouting
//! settings read from the spec, the single call a switch or router makes
//! for a packet, and the recomputation of the tables after a link changes
//! state (a routing protocol converging `reroute_delay` later).

use crate::sim::{Ev, Simulation};
use crate::spec::{ForwardingSpec, Spec};
use mpsim_core::{NodeId, Packet, PacketId, Proto, SimDuration};
use mpsim_net::{FlowKey, ForwardingMode, RouteConfig, Routes, Topology};

/// How the tables are built and when they are rebuilt.
pub(crate) struct Forwarding {
    /// Per node (hosts ignored).
    pub modes: Vec<ForwardingMode>,
    /// The convergence delay after a link goes down or up; None: static tables.
    pub reroute_delay: Option<SimDuration>,
    pub seed: u64,
    /// Times the tables were rebuilt during the run.
    pub recomputations: u64,
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
            Some(d) => self.transmit(d, pid),
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
