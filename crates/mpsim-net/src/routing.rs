//! Addresses and forwarding tables. Every link end on a host is an
//! interface with its own address; hosts never forward. Switches and
//! routers forward by shortest path (hop count) towards the forwarding node
//! a destination interface hangs off (its attachment, as a subnet behind
//! its gateway), so a table holds one entry per forwarding node and
//! attachment, never one per node pair. A node in `shortest` mode keeps the
//! first next hop a breadth-first search finds (ties broken by the lowest
//! link index, so every machine builds the same tables); a node in `ecmp`
//! mode keeps every equal-cost next hop as a group and picks one per flow
//! by a seeded hash of the 5-tuple, as switches do (RFC 2992). Tables are
//! rebuilt from the directions that are up when a routing protocol would
//! have converged after a link change; the engine decides when.

use mpsim_core::{Addr, LinkId, NodeId};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
    Router,
}

/// How a forwarding node picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardingMode {
    /// The first next hop of the breadth-first search: one path per destination.
    #[default]
    Shortest,
    /// Every equal-cost next hop; one per flow by a seeded 5-tuple hash.
    Ecmp,
}

/// Links beyond 65,535 spill into the first octet (11.x, 12.x, ...), so
/// the addresses of smaller networks stay what they were.
pub const MAX_LINKS: usize = (256 - 10) << 16;

/// Interface id: `2 * link + side` (side 0 = the link's `a` end).
pub fn iface_addr(link: LinkId, side: u32) -> Addr {
    Addr(((10 + (link.0 >> 16)) << 24) | ((link.0 & 0xffff) << 8) | (side + 1))
}

/// Inverse of [`iface_addr`]: (link, side), if the address is one of ours.
pub fn iface_of_addr(a: Addr) -> Option<(LinkId, u32)> {
    let side = a.0 & 0xff;
    let high = a.0 >> 24;
    if high < 10 || !(1..=2).contains(&side) {
        return None;
    }
    Some((LinkId(((high - 10) << 16) | ((a.0 >> 8) & 0xffff)), side - 1))
}

/// The graph the routes are computed on.
pub struct Topology {
    pub kinds: Vec<NodeKind>,
    /// Endpoints `(a, b)` of each link.
    pub links: Vec<(NodeId, NodeId)>,
}

/// Link direction id: `2 * link` for a->b, `2 * link + 1` for b->a.
pub type DirId = u32;
const NO_ROUTE: u32 = u32::MAX;
/// A table entry with this bit set names an ECMP group, not a direction.
const GROUP_BIT: u32 = 1 << 31;
const NONE: u32 = u32::MAX;

/// The fields of a packet an ECMP hash reads (the 5-tuple).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowKey {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    /// IP protocol number (6 TCP, 17 UDP).
    pub proto: u8,
}

/// What the tables are built from besides the graph.
pub struct RouteConfig<'a> {
    /// Per node (hosts ignored).
    pub modes: &'a [ForwardingMode],
    /// Per link direction: false for one that is down and routed around.
    pub dir_up: &'a [bool],
    /// Seeds the ECMP hash (the scenario seed), so seeds place flows differently.
    pub seed: u64,
}

/// Forwarding tables: per forwarding node and attachment, the outgoing
/// direction or ECMP group towards the interfaces behind that attachment.
#[derive(Debug)]
pub struct Routes {
    /// Per interface: its attachment slot (NONE if no forwarding node
    /// reaches it) and the attachment, side by side for one load per hop.
    slot_of_iface: Vec<(u32, NodeId)>,
    /// Per node: its row of `table`, or NONE for hosts.
    row_of_node: Vec<u32>,
    n_slots: usize,
    /// `row * n_slots + slot`: a direction, `GROUP_BIT | group`, or NO_ROUTE.
    table: Vec<u32>,
    /// Group `g` is `group_dirs[group_start[g]..group_start[g + 1]]`.
    group_start: Vec<u32>,
    group_dirs: Vec<DirId>,
    /// Per row: the node's ECMP hash as lookup tables (empty when no node uses ECMP).
    hash_tables: Vec<EcmpTable>,
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

    /// Shortest-path tables with every node in `shortest` mode and every link up.
    pub fn routes(&self) -> Routes {
        let modes = vec![ForwardingMode::Shortest; self.kinds.len()];
        let dir_up = vec![true; 2 * self.links.len()];
        self.routes_with(&RouteConfig { modes: &modes, dir_up: &dir_up, seed: 0 })
    }

    /// Tables for the given per-node modes, over the directions that are up.
    pub fn routes_with(&self, cfg: &RouteConfig) -> Routes {
        let (slot_of_iface, attach) = self.attachments();
        let mut row_of_node = vec![NONE; self.kinds.len()];
        let mut rows = 0u32;
        for (row, &kind) in row_of_node.iter_mut().zip(&self.kinds) {
            if kind != NodeKind::Host {
                *row = rows;
                rows += 1;
            }
        }
        let n_slots = attach.len();
        let hash_tables = if cfg.modes.contains(&ForwardingMode::Ecmp) {
            let forwarding = (0..self.kinds.len() as u32).map(NodeId).filter(|&n| self.forwards(n));
            forwarding.map(|n| EcmpTable::new(&hash_rows(cfg.seed, n))).collect()
        } else {
            Vec::new()
        };
        let mut b = TableBuilder {
            topo: self,
            cfg,
            adj: self.adjacency(),
            dist: vec![NONE; self.kinds.len()],
            parent: vec![NONE; self.kinds.len()],
            groups: BTreeMap::new(),
            group_start: vec![0],
            group_dirs: Vec::new(),
            scratch: Vec::new(),
        };
        let mut table = vec![NO_ROUTE; rows as usize * n_slots];
        for (slot, &t) in attach.iter().enumerate() {
            b.fill_slot(t, |m, entry| table[row_of_node[m.index()] as usize * n_slots + slot] = entry);
        }
        let slot_of_iface =
            slot_of_iface.iter().map(|&slot| (slot, attach.get(slot as usize).copied().unwrap_or(NodeId(NONE)))).collect();
        Routes { slot_of_iface, row_of_node, n_slots, table, group_start: b.group_start, group_dirs: b.group_dirs, hash_tables }
    }

    /// Per host interface, the slot of the forwarding node at the far end
    /// of its link (slots numbered in link order), and the node per slot.
    fn attachments(&self) -> (Vec<u32>, Vec<NodeId>) {
        let mut slot_of_iface = vec![NONE; 2 * self.links.len()];
        let mut slot_of_node = vec![NONE; self.kinds.len()];
        let mut attach = Vec::new();
        for (l, &(a, b)) in self.links.iter().enumerate() {
            for (side, owner, far) in [(0, a, b), (1, b, a)] {
                // Switch ports have no address to route to; a host behind a
                // host is reached by no forwarding node.
                if self.forwards(owner) || !self.forwards(far) {
                    continue;
                }
                if slot_of_node[far.index()] == NONE {
                    slot_of_node[far.index()] = attach.len() as u32;
                    attach.push(far);
                }
                slot_of_iface[2 * l + side] = slot_of_node[far.index()];
            }
        }
        (slot_of_iface, attach)
    }
}

/// Scratch state for building the tables one attachment at a time.
struct TableBuilder<'a> {
    topo: &'a Topology,
    cfg: &'a RouteConfig<'a>,
    adj: Vec<Vec<(LinkId, NodeId, DirId)>>,
    /// Hops to the attachment being filled, NONE if unreached.
    dist: Vec<u32>,
    /// The direction a node forwards over in `shortest` mode.
    parent: Vec<DirId>,
    /// Interned ECMP groups: the same set of directions is stored once.
    groups: BTreeMap<Vec<DirId>, u32>,
    group_start: Vec<u32>,
    group_dirs: Vec<DirId>,
    scratch: Vec<DirId>,
}

impl TableBuilder<'_> {
    /// Breadth-first search outwards from attachment `t` through forwarding
    /// nodes, over directions that are up towards `t`; hands every reached
    /// node other than `t` its table entry.
    fn fill_slot(&mut self, t: NodeId, mut set: impl FnMut(NodeId, u32)) {
        self.dist.fill(NONE);
        self.dist[t.index()] = 0;
        let mut order = vec![t];
        let mut queue = VecDeque::from([t]);
        while let Some(x) = queue.pop_front() {
            for &(_l, m, dir_from_x) in &self.adj[x.index()] {
                // m would forward over the reverse direction of x->m.
                let towards_x = dir_from_x ^ 1;
                if self.dist[m.index()] != NONE || !self.topo.forwards(m) || !self.cfg.dir_up[towards_x as usize] {
                    continue;
                }
                self.dist[m.index()] = self.dist[x.index()] + 1;
                self.parent[m.index()] = towards_x;
                order.push(m);
                queue.push_back(m);
            }
        }
        for &m in &order[1..] {
            let entry = match self.cfg.modes[m.index()] {
                ForwardingMode::Shortest => self.parent[m.index()],
                ForwardingMode::Ecmp => self.ecmp_entry(m),
            };
            set(m, entry);
        }
    }

    /// Every up direction from `m` to a neighbour one hop closer, in link
    /// order: a plain direction when there is one, else an interned group.
    fn ecmp_entry(&mut self, m: NodeId) -> u32 {
        let closer = self.dist[m.index()] - 1;
        self.scratch.clear();
        for &(_l, x, dir) in &self.adj[m.index()] {
            if self.dist[x.index()] == closer && self.topo.forwards(x) && self.cfg.dir_up[dir as usize] {
                self.scratch.push(dir);
            }
        }
        if self.scratch.len() == 1 {
            return self.scratch[0];
        }
        if let Some(&g) = self.groups.get(self.scratch.as_slice()) {
            return GROUP_BIT | g;
        }
        let g = self.group_start.len() as u32 - 1;
        self.group_dirs.extend_from_slice(&self.scratch);
        self.group_start.push(self.group_dirs.len() as u32);
        self.groups.insert(self.scratch.clone(), g);
        GROUP_BIT | g
    }
}

impl Routes {
    /// The table entry at forwarding node `n` towards address `dst`.
    #[inline]
    fn entry(&self, n: NodeId, dst: Addr) -> Option<u32> {
        let (link, side) = iface_of_addr(dst)?;
        let iface = (2 * link.0 + side) as usize;
        let &(slot, attach) = self.slot_of_iface.get(iface)?;
        if slot == NONE {
            return None;
        }
        if attach == n {
            // The attachment reaches the host over the interface's own link.
            return Some(iface as u32 ^ 1);
        }
        let row = self.row_of_node[n.index()];
        if row == NONE {
            return None;
        }
        let e = self.table[row as usize * self.n_slots + slot as usize];
        (e != NO_ROUTE).then_some(e)
    }

    fn group(&self, g: u32) -> &[DirId] {
        let g = g as usize;
        &self.group_dirs[self.group_start[g] as usize..self.group_start[g + 1] as usize]
    }

    /// Outgoing direction at forwarding node `n` towards address `dst`; at
    /// an ECMP node, the group's first member.
    pub fn next_dir(&self, n: NodeId, dst: Addr) -> Option<DirId> {
        let e = self.entry(n, dst)?;
        Some(if e & GROUP_BIT == 0 { e } else { self.group(e & !GROUP_BIT)[0] })
    }

    /// Outgoing direction at forwarding node `n` for a packet of flow `key`.
    #[inline]
    pub fn next_dir_for(&self, n: NodeId, key: &FlowKey) -> Option<DirId> {
        self.next_dir_with(n, key.dst, || *key)
    }

    /// As [`Routes::next_dir_for`], reading the 5-tuple only at an ECMP
    /// group: most hops have one next hop and need no hash.
    #[inline]
    pub fn next_dir_with(&self, n: NodeId, dst: Addr, key: impl FnOnce() -> FlowKey) -> Option<DirId> {
        let e = self.entry(n, dst)?;
        if e & GROUP_BIT == 0 {
            return Some(e);
        }
        let group = self.group(e & !GROUP_BIT);
        let table = &self.hash_tables[self.row_of_node[n.index()] as usize];
        // Hash-threshold selection (RFC 2992 section 4): the hash scaled to
        // the group size, so a group's members get equal ranges of it.
        let h = table.hash(&key()) as usize;
        Some(group[(h * group.len()) >> 16])
    }

    /// The equal-cost next hops at `n` towards `dst` (one for a `shortest` node).
    pub fn next_dirs(&self, n: NodeId, dst: Addr) -> Vec<DirId> {
        match self.entry(n, dst) {
            None => Vec::new(),
            Some(e) if e & GROUP_BIT == 0 => vec![e],
            Some(e) => self.group(e & !GROUP_BIT).to_vec(),
        }
    }

    /// Bytes the tables hold on the heap (capacity, not length).
    pub fn heap_bytes(&self) -> usize {
        8 * self.slot_of_iface.capacity()
            + 4 * (self.row_of_node.capacity() + self.table.capacity() + self.group_start.capacity() + self.group_dirs.capacity())
            + std::mem::size_of::<EcmpTable>() * self.hash_tables.capacity()
    }
}

/// The rows of a node's ECMP hash: a random 16 x 104 matrix over GF(2),
/// one row per output bit, drawn from the seed and the node.
pub type HashRows = [u128; 16];

/// The 104 bits of the 5-tuple the hash reads.
const KEY_BITS: u128 = (1 << 104) - 1;

/// A node's hash matrix. Each node draws its own: a switch hashing like its
/// upstream neighbour would see only the flows that neighbour already sent
/// its way and use a fraction of its next hops (hash polarisation).
pub fn hash_rows(seed: u64, node: NodeId) -> HashRows {
    let base = mix(seed ^ mix(node.0 as u64 ^ 0x9e37_79b9_7f4a_7c15));
    std::array::from_fn(|j| {
        let j = 2 * j as u64;
        (((mix(base.wrapping_add(j)) as u128) << 64) | mix(base.wrapping_add(j + 1)) as u128) & KEY_BITS
    })
}

/// The 16-bit ECMP hash of a 5-tuple: the matrix times the tuple over
/// GF(2). Switch ASICs hash with CRCs, which are linear in the same way;
/// linearity is what spreads flows that differ in a few port bits (the
/// consecutive source ports of one host) evenly over a group, where a
/// random hash would spread them only binomially.
pub fn ecmp_hash(rows: &HashRows, key: &FlowKey) -> u16 {
    let x = key_bits(key);
    let mut h = 0u16;
    for (j, row) in rows.iter().enumerate() {
        h |= (((row & x).count_ones() & 1) as u16) << j;
    }
    h
}

/// The 104 bits of a 5-tuple, as the hash matrix's columns are numbered.
fn key_bits(key: &FlowKey) -> u128 {
    ((key.src.0 as u128) << 72)
        | ((key.dst.0 as u128) << 40)
        | ((key.sport as u128) << 24)
        | ((key.dport as u128) << 8)
        | key.proto as u128
}

/// Nibbles of the 104-bit key: 16 in its low word, 10 in its high one.
const KEY_NIBBLES: usize = 26;

/// A node's ECMP hash as lookup tables, the same function as
/// [`ecmp_hash`] on its matrix. The hash is linear over GF(2), so it is
/// the XOR of the hashes of the key's nibbles, one table of 16 per
/// nibble (832 bytes a node). The matrix form costs 16 128-bit popcounts
/// per hop, which the baseline x86-64 target (no POPCNT) computes in
/// software: some 500 instructions, against about 110 here.
#[derive(Clone, Debug)]
pub struct EcmpTable([[u16; 16]; KEY_NIBBLES]);

impl EcmpTable {
    pub fn new(rows: &HashRows) -> EcmpTable {
        let mut tables = [[0u16; 16]; KEY_NIBBLES];
        for (i, nibble) in tables.iter_mut().enumerate() {
            for b in 0..4 {
                // The hash of the key with only bit 4i+b set: the matrix's column.
                let bit = 4 * i + b;
                let column = rows.iter().enumerate().fold(0u16, |h, (j, r)| h | ((((r >> bit) & 1) as u16) << j));
                let m = 1 << b;
                for v in m..2 * m {
                    nibble[v] = nibble[v - m] ^ column;
                }
            }
        }
        EcmpTable(tables)
    }

    #[inline]
    pub fn hash(&self, key: &FlowKey) -> u16 {
        let x = key_bits(key);
        let (lo, hi) = (x as u64, (x >> 64) as u64);
        let mut h = 0u16;
        for i in 0..16 {
            h ^= self.0[i][((lo >> (4 * i)) & 0xf) as usize];
        }
        for i in 0..KEY_NIBBLES - 16 {
            h ^= self.0[16 + i][((hi >> (4 * i)) & 0xf) as usize];
        }
        h
    }
}

/// SplitMix64's finaliser: every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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

    /// A k-ary FatTree (k/2 hosts per edge switch): hosts, then edge,
    /// aggregation and core switches; links host-edge, edge-aggregation,
    /// aggregation-core.
    fn fat_tree(k: u32) -> Topology {
        use NodeKind::*;
        let half = k / 2;
        let (n_hosts, n_edge, n_core) = (k * half * half, k * half, half * half);
        let mut kinds = vec![Host; n_hosts as usize];
        kinds.extend(std::iter::repeat_n(Switch, (2 * n_edge + n_core) as usize));
        let edge = |pod: u32, e: u32| NodeId(n_hosts + pod * half + e);
        let agg = |pod: u32, a: u32| NodeId(n_hosts + n_edge + pod * half + a);
        let core = |c: u32| NodeId(n_hosts + 2 * n_edge + c);
        let mut links = Vec::new();
        for pod in 0..k {
            for e in 0..half {
                for h in 0..half {
                    links.push((NodeId((pod * half + e) * half + h), edge(pod, e)));
                }
                links.extend((0..half).map(|a| (edge(pod, e), agg(pod, a))));
            }
            for a in 0..half {
                links.extend((0..half).map(|c| (agg(pod, a), core(a * half + c))));
            }
        }
        Topology { kinds, links }
    }

    fn all(t: &Topology, mode: ForwardingMode, seed: u64) -> Routes {
        let modes = vec![mode; t.kinds.len()];
        let dir_up = vec![true; 2 * t.links.len()];
        t.routes_with(&RouteConfig { modes: &modes, dir_up: &dir_up, seed })
    }

    #[test]
    fn addresses_beyond_65535_links_round_trip() {
        for link in [0u32, 65_535, 65_536, 200_000, MAX_LINKS as u32 - 1] {
            for side in 0..2 {
                assert_eq!(iface_of_addr(iface_addr(LinkId(link), side)), Some((LinkId(link), side)));
            }
        }
        assert_eq!(iface_addr(LinkId(65_536), 0).to_string(), "11.0.0.1");
    }

    proptest::proptest! {
        /// The lookup tables compute the matrix's hash for every key.
        #[test]
        fn ecmp_tables_hash_as_the_matrix(seed: u64, node: u32, src: u32, dst: u32, sport: u16, dport: u16, proto: u8) {
            let rows = hash_rows(seed, NodeId(node));
            let key = FlowKey { src: Addr(src), dst: Addr(dst), sport, dport, proto };
            proptest::prop_assert_eq!(EcmpTable::new(&rows).hash(&key), ecmp_hash(&rows, &key));
        }
    }

    #[test]
    fn tables_of_a_k16_fat_tree_are_compact() {
        let t = fat_tree(16);
        let r = t.routes();
        // The dense table held a direction per node and interface.
        let dense_bytes = t.kinds.len() * 2 * t.links.len() * 4;
        println!("k=16 fat tree: {} bytes, dense {} bytes", r.heap_bytes(), dense_bytes);
        assert!(r.heap_bytes() * 50 < dense_bytes, "{} bytes against {dense_bytes} dense", r.heap_bytes());
        let ecmp = all(&t, ForwardingMode::Ecmp, 1);
        println!("k=16 fat tree, ecmp: {} bytes", ecmp.heap_bytes());
        assert!(ecmp.heap_bytes() * 50 < dense_bytes);
    }

    #[test]
    fn ecmp_groups_hold_every_equal_cost_next_hop() {
        let t = fat_tree(4);
        let r = all(&t, ForwardingMode::Ecmp, 1);
        // Host 0's edge switch (node 16) towards the last host, in pod 3.
        let l = t.links.iter().position(|&(a, _)| a == NodeId(15)).expect("host 15 has a link") as u32;
        let dst = iface_addr(LinkId(l), 0);
        assert_eq!(r.next_dirs(NodeId(16), dst).len(), 2, "both aggregation switches");
        let agg = NodeId(16 + 8);
        assert_eq!(r.next_dirs(agg, dst).len(), 2, "both of its core switches");
        let shortest = t.routes();
        assert_eq!(shortest.next_dirs(NodeId(16), dst).len(), 1);
    }

    /// h0 - s1 - {s2, s3, s4, s5} - s6 - h7: four equal paths.
    fn four_paths() -> Topology {
        use NodeKind::*;
        let mut links = vec![(NodeId(0), NodeId(1))];
        for m in 2..6 {
            links.push((NodeId(1), NodeId(m)));
            links.push((NodeId(m), NodeId(6)));
        }
        links.push((NodeId(6), NodeId(7)));
        Topology { kinds: vec![Host, Switch, Switch, Switch, Switch, Switch, Switch, Host], links }
    }

    fn path_counts(r: &Routes, flows: u16) -> Vec<usize> {
        let (src, dst) = (iface_addr(LinkId(0), 0), iface_addr(LinkId(9), 1));
        let mut counts = vec![0usize; 4];
        for i in 0..flows {
            let key = FlowKey { src, dst, sport: 32_768 + i, dport: 5001, proto: 6 };
            let dir = r.next_dir_for(NodeId(1), &key).expect("a route");
            counts[((dir / 2 - 1) / 2) as usize] += 1;
        }
        counts
    }

    #[test]
    fn ecmp_spreads_1000_flows_over_4_equal_paths_within_10_percent() {
        let t = four_paths();
        let r = all(&t, ForwardingMode::Ecmp, 1);
        let counts = path_counts(&r, 1000);
        for &c in &counts {
            assert!((225..=275).contains(&c), "{counts:?}");
        }
        // Not luck of one seed: every seed spreads them as evenly.
        for seed in 2..=50 {
            let counts = path_counts(&all(&t, ForwardingMode::Ecmp, seed), 1000);
            assert!(counts.iter().all(|c| (225..=275).contains(c)), "seed {seed}: {counts:?}");
        }
        // A shortest-path node sends every flow the same way.
        assert_eq!(path_counts(&t.routes(), 1000), vec![1000, 0, 0, 0]);
    }

    #[test]
    fn a_flow_keeps_its_path_and_seeds_move_flows() {
        let t = four_paths();
        let (a, b) = (all(&t, ForwardingMode::Ecmp, 1), all(&t, ForwardingMode::Ecmp, 2));
        let key = |sport| FlowKey { src: iface_addr(LinkId(0), 0), dst: iface_addr(LinkId(9), 1), sport, dport: 80, proto: 6 };
        let moved = (0..100u16).filter(|&i| a.next_dir_for(NodeId(1), &key(i)) != b.next_dir_for(NodeId(1), &key(i))).count();
        assert!(moved > 50, "only {moved} of 100 flows changed path with the seed");
        assert_eq!(a.next_dir_for(NodeId(1), &key(7)), all(&t, ForwardingMode::Ecmp, 1).next_dir_for(NodeId(1), &key(7)));
    }

    #[test]
    fn tables_route_around_a_direction_that_is_down() {
        let t = line();
        let h3 = iface_addr(LinkId(2), 1);
        let modes = vec![ForwardingMode::Shortest; 5];
        let mut dir_up = vec![true; 10];
        dir_up[2] = false; // l1 a->b: s1 -> s2
        let r = t.routes_with(&RouteConfig { modes: &modes, dir_up: &dir_up, seed: 0 });
        assert_eq!(r.next_dir(NodeId(1), h3), Some(6)); // s1 -> s4 over l3
        assert_eq!(r.next_dir(NodeId(4), h3), Some(8));
        // The other direction of l1 still carries s2 -> s1.
        assert_eq!(r.next_dir(NodeId(2), iface_addr(LinkId(0), 0)), Some(3));
    }

    /// Hops from every node to `t` over directions that are up, through
    /// forwarding nodes only.
    fn hops_to(topo: &Topology, t: NodeId, dir_up: &[bool]) -> Vec<Option<usize>> {
        let adj = topo.adjacency();
        let mut dist = vec![None; topo.kinds.len()];
        dist[t.index()] = Some(0);
        let mut queue = VecDeque::from([t]);
        while let Some(x) = queue.pop_front() {
            for &(_, m, dir) in &adj[x.index()] {
                if dist[m.index()].is_none() && topo.forwards(m) && dir_up[(dir ^ 1) as usize] {
                    dist[m.index()] = Some(dist[x.index()].unwrap_or(0) + 1);
                    queue.push_back(m);
                }
            }
        }
        dist
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// On any graph, with any mix of shortest and ECMP nodes and any
        /// directions down, a packet of any flow follows up directions,
        /// never loops, and reaches a destination interface in the shortest
        /// number of hops exactly when such a path exists.
        #[test]
        fn every_mode_delivers_on_shortest_paths_without_loops(
            kinds in proptest::collection::vec(0u8..3, 2..10),
            links in proptest::collection::vec((0usize..10, 0usize..10), 1..20),
            ecmp in proptest::collection::vec(proptest::bool::ANY, 10),
            down in proptest::collection::vec(0usize..40, 0..4),
            seed in 0u64..1000,
            sport in proptest::num::u16::ANY,
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
            let modes: Vec<ForwardingMode> =
                (0..n).map(|i| if ecmp[i] { ForwardingMode::Ecmp } else { ForwardingMode::Shortest }).collect();
            let mut dir_up = vec![true; 2 * t.links.len()];
            for &d in &down {
                if d < dir_up.len() {
                    dir_up[d] = false;
                }
            }
            let r = t.routes_with(&RouteConfig { modes: &modes, dir_up: &dir_up, seed });
            for (l, &(a, b)) in t.links.iter().enumerate() {
                for (side, owner, far) in [(0u32, a, b), (1, b, a)] {
                    if t.forwards(owner) || !t.forwards(far) {
                        continue;
                    }
                    let dst = iface_addr(LinkId(l as u32), side);
                    let dist = hops_to(&t, far, &dir_up);
                    for start in (0..n).map(|i| NodeId(i as u32)).filter(|&x| t.forwards(x)) {
                        let key = FlowKey { src: Addr(0x0a00_0001), dst, sport, dport: 80, proto: 6 };
                        let expected = dist[start.index()].map(|d| d + 1);
                        let (mut at, mut hops, mut walked) = (start, 0usize, None);
                        while let Some(dir) = r.next_dir_for(at, &key) {
                            let (x, y) = t.links[(dir / 2) as usize];
                            let (from, to) = if dir % 2 == 0 { (x, y) } else { (y, x) };
                            proptest::prop_assert_eq!(from, at);
                            hops += 1;
                            proptest::prop_assert!(hops <= n + 1, "a forwarding loop towards {}", dst);
                            if to == owner && (dir / 2) as usize == l {
                                walked = Some(hops);
                                break;
                            }
                            proptest::prop_assert!(dir_up[dir as usize] && t.forwards(to), "over a down direction or into a host");
                            at = to;
                        }
                        proptest::prop_assert_eq!(walked, expected, "from node {} towards {}", start.0, dst);
                    }
                }
            }
        }
    }
}
