//! Addresses and static forwarding. Every link end on a host is an
//! interface with its own address; switches and routers forward by
//! shortest path (hop count) computed once, ties broken by the lowest link
//! index so every machine builds the same tables. Hosts never forward.

use mpsim_core::{Addr, LinkId, NodeId};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
    Router,
}

/// Interface id: `2 * link + side` (side 0 = the link's `a` end).
pub fn iface_addr(link: LinkId, side: u32) -> Addr {
    Addr((10 << 24) | ((link.0 & 0xffff) << 8) | (side + 1))
}

/// Inverse of [`iface_addr`]: (link, side), if the address is one of ours.
pub fn iface_of_addr(a: Addr) -> Option<(LinkId, u32)> {
    let side = a.0 & 0xff;
    if a.0 >> 24 != 10 || !(1..=2).contains(&side) {
        return None;
    }
    Some((LinkId((a.0 >> 8) & 0xffff), side - 1))
}

/// The graph the routes are computed on.
pub struct Topology {
    pub kinds: Vec<NodeKind>,
    /// Endpoints `(a, b)` of each link.
    pub links: Vec<(NodeId, NodeId)>,
}

/// Link direction id: `2 * link` for a->b, `2 * link + 1` for b->a.
pub type DirId = u32;
const NO_ROUTE: DirId = DirId::MAX;

/// Forwarding tables: for every forwarding node, the outgoing link
/// direction towards every interface address.
pub struct Routes {
    n_ifaces: usize,
    table: Vec<DirId>,
}

impl Topology {
    fn adjacency(&self) -> Vec<Vec<(LinkId, NodeId, DirId)>> {
        let mut adj = vec![Vec::new(); self.kinds.len()];
        for (i, &(a, b)) in self.links.iter().enumerate() {
            let l = LinkId(i as u32);
            adj[a.index()].push((l, b, 2 * i as u32));
            adj[b.index()].push((l, a, 2 * i as u32 + 1));
        }
        adj
    }

    fn forwards(&self, n: NodeId) -> bool {
        self.kinds[n.index()] != NodeKind::Host
    }

    /// Node on `side` of `link`.
    pub fn end(&self, link: LinkId, side: u32) -> NodeId {
        let (a, b) = self.links[link.index()];
        if side == 0 {
            a
        } else {
            b
        }
    }

    /// Shortest-path forwarding tables.
    pub fn routes(&self) -> Routes {
        let n_ifaces = self.links.len() * 2;
        let mut table = vec![NO_ROUTE; self.kinds.len() * n_ifaces];
        let adj = self.adjacency();
        for link in 0..self.links.len() {
            for side in 0..2 {
                let iface = 2 * link + side;
                let owner = self.end(LinkId(link as u32), side as u32);
                if self.forwards(owner) {
                    continue; // switch ports have no address to route to
                }
                self.bfs_towards(&adj, &mut table, n_ifaces, iface, owner);
            }
        }
        Routes { n_ifaces, table }
    }

    /// Fills the column of `iface` (owned by host `owner`): BFS outwards from
    /// the host through forwarding nodes only.
    fn bfs_towards(
        &self,
        adj: &[Vec<(LinkId, NodeId, DirId)>],
        table: &mut [DirId],
        n_ifaces: usize,
        iface: usize,
        owner: NodeId,
    ) {
        let link = LinkId((iface / 2) as u32);
        let far = self.end(link, 1 - (iface % 2) as u32);
        if !self.forwards(far) {
            return;
        }
        let mut seen = vec![false; self.kinds.len()];
        seen[owner.index()] = true;
        seen[far.index()] = true;
        // The far end reaches the host over the interface's own link.
        let dir_to_owner = if iface.is_multiple_of(2) { 2 * link.0 + 1 } else { 2 * link.0 };
        table[far.index() * n_ifaces + iface] = dir_to_owner;
        let mut queue = VecDeque::from([far]);
        while let Some(x) = queue.pop_front() {
            for &(_l, m, dir_from_x) in &adj[x.index()] {
                if seen[m.index()] || !self.forwards(m) {
                    continue;
                }
                seen[m.index()] = true;
                // m forwards over the reverse direction of x->m.
                table[m.index() * n_ifaces + iface] = dir_from_x ^ 1;
                queue.push_back(m);
            }
        }
    }
}

impl Routes {
    /// Outgoing direction at forwarding node `n` towards address `dst`.
    pub fn next_dir(&self, n: NodeId, dst: Addr) -> Option<DirId> {
        let (link, side) = iface_of_addr(dst)?;
        let iface = (2 * link.0 + side) as usize;
        if iface >= self.n_ifaces {
            return None;
        }
        let d = self.table[n.index() * self.n_ifaces + iface];
        (d != NO_ROUTE).then_some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// h0 -l0- s1 -l1- s2 -l2- h3, plus a longer detour s1 -l3- s4 -l4- s2.
    fn line() -> Topology {
        use NodeKind::*;
        Topology {
            kinds: vec![Host, Switch, Switch, Host, Switch],
            links: vec![
                (NodeId(0), NodeId(1)),
                (NodeId(1), NodeId(2)),
                (NodeId(2), NodeId(3)),
                (NodeId(1), NodeId(4)),
                (NodeId(4), NodeId(2)),
            ],
        }
    }

    #[test]
    fn addresses_round_trip() {
        let a = iface_addr(LinkId(300), 1);
        assert_eq!(a.to_string(), "10.1.44.2");
        assert_eq!(iface_of_addr(a), Some((LinkId(300), 1)));
        assert_eq!(iface_of_addr(Addr(0)), None);
    }

    #[test]
    fn switches_forward_along_the_shortest_path() {
        let t = line();
        let r = t.routes();
        let h3 = iface_addr(LinkId(2), 1);
        assert_eq!(r.next_dir(NodeId(1), h3), Some(2)); // s1 -> s2 over l1 (a->b)
        assert_eq!(r.next_dir(NodeId(2), h3), Some(4)); // s2 -> h3 over l2
        assert_eq!(r.next_dir(NodeId(4), h3), Some(8)); // s4 -> s2 over l4 (a->b)
        let h0 = iface_addr(LinkId(0), 0);
        assert_eq!(r.next_dir(NodeId(2), h0), Some(3)); // s2 -> s1 over l1 (b->a)
    }

    #[test]
    fn hosts_are_not_transit() {
        use NodeKind::*;
        // s0 - h1 - s2: no path from s0 to s2's host side through h1.
        let t = Topology {
            kinds: vec![Switch, Host, Switch, Host],
            links: vec![(NodeId(0), NodeId(1)), (NodeId(1), NodeId(2)), (NodeId(2), NodeId(3))],
        };
        let r = t.routes();
        assert_eq!(r.next_dir(NodeId(0), iface_addr(LinkId(2), 1)), None);
    }

    /// Hop counts from `from` to every node, moving through forwarding
    /// nodes only (the destination may be a host).
    fn hops_from(t: &Topology, from: NodeId) -> Vec<Option<usize>> {
        let adj = t.adjacency();
        let mut dist = vec![None; t.kinds.len()];
        dist[from.index()] = Some(0);
        let mut queue = VecDeque::from([from]);
        while let Some(x) = queue.pop_front() {
            if x != from && !t.forwards(x) {
                continue; // hosts are not transit
            }
            for &(_, m, _) in &adj[x.index()] {
                if dist[m.index()].is_none() {
                    dist[m.index()] = Some(dist[x.index()].unwrap_or(0) + 1);
                    queue.push_back(m);
                }
            }
        }
        dist
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2048, ..Default::default() })]

        /// On any graph (parallel links, hosts with several interfaces,
        /// unreachable parts), following the tables from a forwarding node
        /// towards an interface reaches it over the link that carries that
        /// address, in as many hops as the shortest path through forwarding
        /// nodes, and there is a route exactly when such a path exists.
        #[test]
        fn tables_follow_shortest_paths(
            kinds in proptest::collection::vec(0u8..3, 2..9),
            links in proptest::collection::vec((0usize..9, 0usize..9), 1..16),
        ) {
            use NodeKind::*;
            let kinds: Vec<NodeKind> = kinds.iter().map(|&k| [Host, Switch, Router][k as usize]).collect();
            let n = kinds.len();
            let links: Vec<(NodeId, NodeId)> = links
                .iter()
                .map(|&(a, b)| (a % n, b % n))
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (NodeId(a as u32), NodeId(b as u32)))
                .collect();
            let t = Topology { kinds, links };
            let r = t.routes();
            for (l, &(a, b)) in t.links.iter().enumerate() {
                for (side, owner, far) in [(0u32, a, b), (1, b, a)] {
                    if t.forwards(owner) {
                        continue;
                    }
                    let dst = iface_addr(LinkId(l as u32), side);
                    // The far end of the interface's link sees the owner one hop away.
                    let dist_to_far = hops_from(&t, far);
                    for start in (0..n).map(|i| NodeId(i as u32)).filter(|&x| t.forwards(x)) {
                        let expected = if t.forwards(far) { dist_to_far[start.index()].map(|d| d + 1) } else { None };
                        let (mut at, mut hops) = (start, 0usize);
                        let mut walked = None;
                        while let Some(dir) = r.next_dir(at, dst) {
                            let link = LinkId(dir / 2);
                            let (x, y) = t.links[link.index()];
                            let (from, to) = if dir % 2 == 0 { (x, y) } else { (y, x) };
                            proptest::prop_assert_eq!(from, at, "the table leaves from the node it is at");
                            hops += 1;
                            proptest::prop_assert!(hops <= n, "a forwarding loop towards {}", dst);
                            if to == owner && link.index() == l {
                                walked = Some(hops);
                                break;
                            }
                            proptest::prop_assert!(t.forwards(to), "forwarded into a host that is not the destination");
                            at = to;
                        }
                        proptest::prop_assert_eq!(walked, expected, "from node {} towards {}", start.0, dst);
                    }
                }
            }
        }
    }
}
