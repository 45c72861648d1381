//! The network graph as an SdnController sees it: which links join which
//! nodes, their bandwidth and whether they are up; the equal-cost paths
//! and a set of edge-disjoint paths between two host interfaces, and a
//! path's bandwidth (its slowest link's). A path is the list of link
//! directions from the source host to the destination host; hosts are its
//! ends only (they never forward).

use crate::routing::{DirId, NodeKind, Topology};
use mpsim_core::NodeId;
use std::collections::VecDeque;

/// The equal-cost enumeration stops at this many paths (a k = 8 fat tree
/// has 16 between pods).
pub const MAX_EQUAL_COST_PATHS: usize = 256;

/// The graph with per-link bandwidth and per-direction state.
pub struct NetGraph<'a> {
    pub topo: &'a Topology,
    /// Per link: the smaller of its two directions' rates, bit/s.
    pub link_bps: &'a [u64],
    /// Per direction: up (routable) or down.
    pub dir_up: &'a [bool],
}

const NONE: u32 = u32::MAX;

impl NetGraph<'_> {
    fn far(&self, d: DirId) -> NodeId {
        let (a, b) = self.topo.links[(d / 2) as usize];
        if d.is_multiple_of(2) {
            b
        } else {
            a
        }
    }

    fn near(&self, d: DirId) -> NodeId {
        self.far(d ^ 1)
    }

    fn forwards(&self, n: NodeId) -> bool {
        self.topo.kinds[n.index()] != NodeKind::Host
    }

    /// Directions leaving `n` towards another forwarding node, in link order.
    fn out_dirs(&self, n: NodeId) -> impl Iterator<Item = DirId> + '_ {
        self.topo.links.iter().enumerate().flat_map(move |(l, &(a, b))| {
            let l = l as u32;
            [(a == n).then_some(2 * l), (b == n).then_some(2 * l + 1)].into_iter().flatten()
        })
    }

    /// The bandwidth of a path: its slowest link's, bit/s.
    pub fn path_bps(&self, path: &[DirId]) -> u64 {
        path.iter().map(|&d| self.link_bps[(d / 2) as usize]).min().unwrap_or(0)
    }

    /// Breadth-first search from `from` to `to` over forwarding nodes, on
    /// up directions for which `usable` holds; the path of lowest link
    /// indices among the shortest ones.
    fn bfs(&self, from: NodeId, to: NodeId, usable: impl Fn(DirId) -> bool) -> Option<Vec<DirId>> {
        let n = self.topo.kinds.len();
        let mut parent = vec![NONE; n];
        let mut seen = vec![false; n];
        seen[from.index()] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(x) = queue.pop_front() {
            if x == to {
                break;
            }
            for d in self.out_dirs(x) {
                let m = self.far(d);
                if seen[m.index()] || !self.forwards(m) || !self.dir_up[d as usize] || !usable(d) {
                    continue;
                }
                seen[m.index()] = true;
                parent[m.index()] = d;
                queue.push_back(m);
            }
        }
        if !seen[to.index()] {
            return None;
        }
        let mut path = Vec::new();
        let mut at = to;
        while at != from {
            let d = parent[at.index()];
            path.push(d);
            at = self.near(d);
        }
        path.reverse();
        Some(path)
    }

    /// The whole path from a source host interface's direction `first`
    /// (leaving the host) to `last` (arriving at the destination host)
    /// around a core path between the two forwarding nodes.
    fn wrap(first: DirId, core: Vec<DirId>, last: DirId) -> Vec<DirId> {
        let mut p = Vec::with_capacity(core.len() + 2);
        p.push(first);
        p.extend(core);
        p.push(last);
        p
    }

    /// Every shortest (fewest hops) path from `first` to `last`, in link
    /// order, at most [`MAX_EQUAL_COST_PATHS`].
    pub fn equal_cost_paths(&self, first: DirId, last: DirId) -> Vec<Vec<DirId>> {
        let (u, v) = (self.far(first), self.near(last));
        if !self.forwards(u) || !self.forwards(v) {
            return Vec::new();
        }
        // Hops to v, over directions that are up towards it.
        let n = self.topo.kinds.len();
        let mut dist = vec![NONE; n];
        dist[v.index()] = 0;
        let mut queue = VecDeque::from([v]);
        while let Some(x) = queue.pop_front() {
            for d in self.out_dirs(x) {
                let m = self.far(d);
                if dist[m.index()] == NONE && self.forwards(m) && self.dir_up[(d ^ 1) as usize] {
                    dist[m.index()] = dist[x.index()] + 1;
                    queue.push_back(m);
                }
            }
        }
        if dist[u.index()] == NONE {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut stack = Vec::new();
        self.descend(u, v, &dist, &mut stack, &mut out);
        out.into_iter().map(|core| Self::wrap(first, core, last)).collect()
    }

    fn descend(&self, at: NodeId, v: NodeId, dist: &[u32], stack: &mut Vec<DirId>, out: &mut Vec<Vec<DirId>>) {
        if out.len() >= MAX_EQUAL_COST_PATHS {
            return;
        }
        if at == v {
            out.push(stack.clone());
            return;
        }
        for d in self.out_dirs(at) {
            let m = self.far(d);
            if self.forwards(m) && self.dir_up[d as usize] && dist[m.index()] == dist[at.index()] - 1 {
                stack.push(d);
                self.descend(m, v, dist, stack, out);
                stack.pop();
            }
        }
    }

    /// Edge-disjoint paths from `first` to `last`, widest first: each is
    /// the widest path (highest bottleneck bandwidth) over the links the
    /// earlier ones left, the shortest among equally wide ones. The host
    /// links at the ends are shared (a host with one link has one way out);
    /// the links between forwarding nodes are used once. Greedy: a graph
    /// where the widest path blocks two others gets fewer paths than a
    /// maximum flow would find.
    pub fn disjoint_paths(&self, first: DirId, last: DirId) -> Vec<Vec<DirId>> {
        let (u, v) = (self.far(first), self.near(last));
        if !self.forwards(u) || !self.forwards(v) {
            return Vec::new();
        }
        if u == v {
            return vec![vec![first, last]];
        }
        let mut used = vec![false; self.topo.links.len()];
        let mut rates: Vec<u64> = self.link_bps.to_vec();
        rates.sort_unstable_by(|a, b| b.cmp(a));
        rates.dedup();
        let mut paths = Vec::new();
        loop {
            let found = rates
                .iter()
                .find_map(|&floor| self.bfs(u, v, |d| !used[(d / 2) as usize] && self.link_bps[(d / 2) as usize] >= floor));
            let Some(core) = found else { break };
            for &d in &core {
                used[(d / 2) as usize] = true;
            }
            paths.push(Self::wrap(first, core, last));
        }
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NodeKind::*;

    /// h0 - s1, three ways from s1 to s2 (direct; via s3; via s4 and s5), s2 - h6.
    fn three_ways() -> Topology {
        Topology {
            kinds: vec![Host, Switch, Switch, Switch, Switch, Switch, Host],
            links: vec![
                (NodeId(0), NodeId(1)), // 0 access
                (NodeId(1), NodeId(2)), // 1 direct
                (NodeId(1), NodeId(3)), // 2
                (NodeId(3), NodeId(2)), // 3
                (NodeId(1), NodeId(4)), // 4
                (NodeId(4), NodeId(5)), // 5
                (NodeId(5), NodeId(2)), // 6
                (NodeId(2), NodeId(6)), // 7 access
            ],
        }
    }

    fn graph<'a>(topo: &'a Topology, bps: &'a [u64], up: &'a [bool]) -> NetGraph<'a> {
        NetGraph { topo, link_bps: bps, dir_up: up }
    }

    #[test]
    fn disjoint_paths_come_widest_first_and_share_no_core_link() {
        let topo = three_ways();
        let m = 1_000_000;
        // Direct 1 Mbps, via s3 10 Mbps, via s4-s5 6 Mbps (its middle link the bottleneck).
        let bps = [100 * m, m, 10 * m, 10 * m, 8 * m, 6 * m, 8 * m, 100 * m];
        let up = vec![true; 16];
        let g = graph(&topo, &bps, &up);
        let paths = g.disjoint_paths(0, 14);
        assert_eq!(paths, vec![vec![0, 4, 6, 14], vec![0, 8, 10, 12, 14], vec![0, 2, 14]]);
        let widths: Vec<u64> = paths.iter().map(|p| g.path_bps(p)).collect();
        assert_eq!(widths, vec![10 * m, 6 * m, m]);
    }

    #[test]
    fn equal_widths_give_the_shortest_path_first() {
        let topo = three_ways();
        let bps = [10; 8];
        let up = vec![true; 16];
        let g = graph(&topo, &bps, &up);
        assert_eq!(g.disjoint_paths(0, 14)[0], vec![0, 2, 14]);
        assert_eq!(g.disjoint_paths(0, 14).len(), 3);
    }

    #[test]
    fn a_link_that_is_down_is_left_out() {
        let topo = three_ways();
        let bps = [10; 8];
        let mut up = vec![true; 16];
        up[2] = false; // s1 -> s2 direct
        let g = graph(&topo, &bps, &up);
        assert_eq!(g.disjoint_paths(0, 14).len(), 2);
        assert_eq!(g.equal_cost_paths(0, 14), vec![vec![0, 4, 6, 14]]);
    }

    #[test]
    fn equal_cost_paths_are_every_path_of_fewest_hops() {
        // h0 - s1 - {s2, s3, s4, s5} - s6 - h7: four equal paths.
        let mut links = vec![(NodeId(0), NodeId(1))];
        for s in 2..6 {
            links.push((NodeId(1), NodeId(s)));
            links.push((NodeId(s), NodeId(6)));
        }
        links.push((NodeId(6), NodeId(7)));
        let topo = Topology { kinds: vec![Host, Switch, Switch, Switch, Switch, Switch, Switch, Host], links };
        let bps = [10; 10];
        let up = vec![true; 20];
        let g = graph(&topo, &bps, &up);
        let paths = g.equal_cost_paths(0, 18);
        assert_eq!(paths.len(), 4);
        assert_eq!(paths[1], vec![0, 6, 8, 18]);
        assert_eq!(g.disjoint_paths(0, 18).len(), 4);
    }

    #[test]
    fn hosts_on_one_switch_have_one_path() {
        let topo = Topology { kinds: vec![Host, Switch, Host], links: vec![(NodeId(0), NodeId(1)), (NodeId(1), NodeId(2))] };
        let g = graph(&topo, &[5, 7], &[true; 4]);
        assert_eq!(g.disjoint_paths(0, 2), vec![vec![0, 2]]);
        assert_eq!(g.equal_cost_paths(0, 2), vec![vec![0, 2]]);
        assert_eq!(g.path_bps(&[0, 2]), 5);
    }
}
