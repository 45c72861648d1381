//! The SdnController applications: given a packet-in (a switch's table
//! missed), the path its 5-tuple takes, or a refusal. The engine turns a
//! path into flow-mods at the switches along it, both ways.
//!
//! - `shortest`: the path of fewest hops (lowest link indices on ties), as
//!   the static tables route.
//! - `ecmp`: one of the equal-cost paths per 5-tuple, by the ingress
//!   switch's seeded hash.
//! - `disjoint`: each subflow of an MPTCP connection on a path sharing no
//!   link between switches with the connection's other subflows (the first
//!   subflow on the widest path); when none is left, the subflow shares the
//!   path the fewest of its subflows use.
//! - `mpsshetn` (Abu Mohsen, "Improving multipath TCP performance in SDN
//!   networks"): the first subflow on the reference path, the widest of the
//!   disjoint paths; each MP_JOIN on the next disjoint path whose gap
//!   |BW_p1 - BW_pj| / BW_p1 is at most the threshold for the application
//!   size; a join with no admissible path is refused.

use super::graph::NetGraph;
use crate::routing::{ecmp_hash, DirId, FlowKey, HashRows};
use std::collections::BTreeMap;

/// One row of MPSSHetN's thresholds: applications smaller than
/// `below_bytes` (None: any size) admit joins whose gap is at most `gap_frac`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    pub below_bytes: Option<u64>,
    pub gap_frac: f64,
}

/// The thesis's table (its Tables 4.1 to 4.3 give the crossovers): no
/// heterogeneity below 50 KB, then 0.4, 0.6, 0.7 and 0.9.
pub const DEFAULT_THRESHOLDS: [Threshold; 5] = [
    Threshold { below_bytes: Some(50_000), gap_frac: 0.0 },
    Threshold { below_bytes: Some(100_000), gap_frac: 0.4 },
    Threshold { below_bytes: Some(200_000), gap_frac: 0.6 },
    Threshold { below_bytes: Some(500_000), gap_frac: 0.7 },
    Threshold { below_bytes: None, gap_frac: 0.9 },
];

/// The largest gap admitted for an application of `size_bytes` (None: of
/// unbounded size): the first row whose bound is above the size. None
/// when no row applies (no join is admitted).
pub fn threshold_gap(rows: &[Threshold], size_bytes: Option<u64>) -> Option<f64> {
    rows.iter()
        .find(|r| match (r.below_bytes, size_bytes) {
            (None, _) => true,
            (Some(b), Some(s)) => s < b,
            (Some(_), None) => false,
        })
        .map(|r| r.gap_frac)
}

/// The relative bandwidth gap of a path to the reference path.
pub fn gap_frac(reference_bps: u64, path_bps: u64) -> f64 {
    if reference_bps == 0 {
        return 0.0;
    }
    (reference_bps as f64 - path_bps as f64).abs() / reference_bps as f64
}

/// A built-in application.
#[derive(Clone, Debug, PartialEq)]
pub enum AppKind {
    Shortest,
    Ecmp,
    Disjoint,
    Mpsshetn { thresholds: Vec<Threshold> },
}

/// What kind of first packet the controller sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// A TCP SYN with MP_JOIN: a further subflow of the connection.
    Join,
    /// Anything else: a TCP connection, an MPTCP connection's first subflow
    /// (MP_CAPABLE), a UDP flow, or a packet of a 5-tuple whose rules expired.
    First,
}

/// A packet-in as the apps see it.
pub struct PacketIn<'a> {
    pub key: FlowKey,
    /// Leaving the source host; arriving at the destination host.
    pub first_dir: DirId,
    pub last_dir: DirId,
    pub opening: Opening,
    /// The MPTCP connection the packet belongs to (the engine's flow and
    /// connection number, found from the MP_JOIN's token), if any.
    pub connection: Option<(u32, u32)>,
    /// The application size of the packet's flow, bytes (None: unbounded).
    pub app_size_bytes: Option<u64>,
    /// The ingress switch's ECMP hash.
    pub hash: &'a HashRows,
}

/// The app's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The path (link directions host to host), or None: refused.
    pub path: Option<Vec<DirId>>,
    /// Which of the candidate paths (0 the first), if one was taken.
    pub path_index: Option<usize>,
    /// The path's gap to the reference path (mpsshetn).
    pub gap_frac: Option<f64>,
    /// Why, in a few words, for the trace.
    pub reason: &'static str,
}

impl Decision {
    fn none(reason: &'static str) -> Decision {
        Decision { path: None, path_index: None, gap_frac: None, reason }
    }
    fn take(paths: &[Vec<DirId>], i: usize, reason: &'static str) -> Decision {
        Decision { path: Some(paths[i].clone()), path_index: Some(i), gap_frac: None, reason }
    }
}

/// The controller side of the SDN: decides packet-ins.
pub trait SdnController {
    fn on_packet_in(&mut self, g: &NetGraph, p: &PacketIn) -> Decision;
}

/// The links between switches an MPTCP connection's subflows use, one
/// list per subflow placed.
#[derive(Default)]
struct ConnPaths {
    subflows: Vec<Vec<DirId>>,
}

impl ConnPaths {
    fn core_links(&self) -> impl Iterator<Item = u32> + '_ {
        self.subflows.iter().flat_map(|p| core(p).iter().map(|&d| d / 2))
    }
}

/// A path without its two host links.
fn core(p: &[DirId]) -> &[DirId] {
    if p.len() < 2 {
        &[]
    } else {
        &p[1..p.len() - 1]
    }
}

/// The built-in applications, with the per-connection state of the
/// MPTCP-aware ones.
pub struct BuiltinController {
    pub kind: AppKind,
    /// Per MPTCP connection (flow, connection): its subflows' paths.
    conns: BTreeMap<(u32, u32), ConnPaths>,
}

impl BuiltinController {
    pub fn new(kind: AppKind) -> BuiltinController {
        BuiltinController { kind, conns: BTreeMap::new() }
    }

    /// Forgets a connection (it has closed).
    pub fn on_connection_closed(&mut self, conn: (u32, u32)) {
        self.conns.remove(&conn);
    }

    fn ecmp(g: &NetGraph, p: &PacketIn) -> Decision {
        let paths = g.equal_cost_paths(p.first_dir, p.last_dir);
        if paths.is_empty() {
            return Decision::none("no path");
        }
        let h = ecmp_hash(p.hash, &p.key) as usize;
        Decision::take(&paths, (h * paths.len()) >> 16, "hash")
    }

    /// `disjoint` and `mpsshetn`: the connection's subflows on disjoint paths.
    fn disjoint(&mut self, g: &NetGraph, p: &PacketIn) -> Decision {
        let paths = g.disjoint_paths(p.first_dir, p.last_dir);
        if paths.is_empty() {
            return Decision::none("no path");
        }
        let (Opening::Join, Some(conn)) = (p.opening, p.connection) else {
            let mut d = Decision::take(&paths, 0, "reference path");
            if let Some(conn) = p.connection {
                self.conns.entry(conn).or_default().subflows.push(paths[0].clone());
            }
            d.gap_frac = matches!(self.kind, AppKind::Mpsshetn { .. }).then_some(0.0);
            return d;
        };
        let state = self.conns.entry(conn).or_default();
        let taken: Vec<u32> = state.core_links().collect();
        let free = |path: &Vec<DirId>| core(path).iter().all(|d| !taken.contains(&(d / 2)));
        let reference_bps = g.path_bps(&paths[0]);
        let decision = match &self.kind {
            AppKind::Mpsshetn { thresholds } => {
                let Some(limit) = threshold_gap(thresholds, p.app_size_bytes) else {
                    return Decision::none("no threshold for the size");
                };
                let admissible =
                    paths.iter().enumerate().find(|(_, q)| free(q) && gap_frac(reference_bps, g.path_bps(q)) <= limit);
                match admissible {
                    Some((i, q)) => Decision {
                        gap_frac: Some(gap_frac(reference_bps, g.path_bps(q))),
                        ..Decision::take(&paths, i, "gap within the threshold")
                    },
                    None => return Decision::none("no disjoint path within the threshold"),
                }
            }
            _ => match paths.iter().position(free) {
                Some(i) => Decision::take(&paths, i, "disjoint path"),
                None => {
                    // Every path carries a subflow: the least used one, the first on ties.
                    let uses = |q: &Vec<DirId>| state.subflows.iter().filter(|s| core(s) == core(q)).count();
                    let i = (0..paths.len()).min_by_key(|&i| uses(&paths[i])).unwrap_or(0);
                    Decision::take(&paths, i, "shared: no disjoint path left")
                }
            },
        };
        if let Some(path) = &decision.path {
            state.subflows.push(path.clone());
        }
        decision
    }
}

impl SdnController for BuiltinController {
    fn on_packet_in(&mut self, g: &NetGraph, p: &PacketIn) -> Decision {
        match self.kind {
            AppKind::Shortest => {
                let paths = g.equal_cost_paths(p.first_dir, p.last_dir);
                if paths.is_empty() {
                    Decision::none("no path")
                } else {
                    Decision::take(&paths, 0, "shortest")
                }
            }
            AppKind::Ecmp => Self::ecmp(g, p),
            AppKind::Disjoint | AppKind::Mpsshetn { .. } => self.disjoint(g, p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{hash_rows, NodeKind, Topology};
    use mpsim_core::{Addr, NodeId};

    #[test]
    fn the_threshold_is_the_first_row_above_the_size() {
        let rows = DEFAULT_THRESHOLDS;
        assert_eq!(threshold_gap(&rows, Some(10_000)), Some(0.0));
        assert_eq!(threshold_gap(&rows, Some(49_999)), Some(0.0));
        assert_eq!(threshold_gap(&rows, Some(50_000)), Some(0.4), "bounds are exclusive");
        assert_eq!(threshold_gap(&rows, Some(150_000)), Some(0.6));
        assert_eq!(threshold_gap(&rows, Some(499_999)), Some(0.7));
        assert_eq!(threshold_gap(&rows, Some(10_000_000)), Some(0.9));
        assert_eq!(threshold_gap(&rows, None), Some(0.9), "an unbounded flow takes the open row");
        let bounded = [Threshold { below_bytes: Some(100), gap_frac: 0.5 }];
        assert_eq!(threshold_gap(&bounded, Some(99)), Some(0.5));
        assert_eq!(threshold_gap(&bounded, Some(100)), None);
        assert_eq!(threshold_gap(&bounded, None), None);
    }

    #[test]
    fn the_gap_is_relative_to_the_reference_path() {
        assert_eq!(gap_frac(10, 10), 0.0);
        assert!((gap_frac(10_000_000, 100_000) - 0.99).abs() < 1e-12);
        assert!((gap_frac(10_000_000, 6_000_000) - 0.4).abs() < 1e-12);
    }

    /// h0 - s1, then P1 (10 Mbps, via s2), P2 (0.1 Mbps, via s3), P3 (6 Mbps,
    /// via s4) to s5 - h6: the thesis's three-path testbed (its Fig. 5.3).
    fn testbed() -> (Topology, Vec<u64>) {
        use NodeKind::*;
        let n = NodeId;
        let topo = Topology {
            kinds: vec![Host, Switch, Switch, Switch, Switch, Switch, Host],
            links: vec![
                (n(0), n(1)),
                (n(1), n(2)),
                (n(2), n(5)),
                (n(1), n(3)),
                (n(3), n(5)),
                (n(1), n(4)),
                (n(4), n(5)),
                (n(5), n(6)),
            ],
        };
        let m = 1_000_000;
        (topo, vec![100 * m, 10 * m, 10 * m, m / 10, m / 10, 6 * m, 6 * m, 100 * m])
    }

    fn packet_in(opening: Opening, size: Option<u64>, hash: &HashRows) -> PacketIn<'_> {
        let key = FlowKey { src: Addr(1), dst: Addr(2), sport: 1, dport: 2, proto: 6 };
        PacketIn { key, first_dir: 0, last_dir: 14, opening, connection: Some((0, 0)), app_size_bytes: size, hash }
    }

    fn place(app: AppKind, size: Option<u64>, joins: usize) -> Vec<Decision> {
        let (topo, bps) = testbed();
        let up = vec![true; 16];
        let g = NetGraph { topo: &topo, link_bps: &bps, dir_up: &up };
        let hash = hash_rows(1, NodeId(1));
        let mut c = BuiltinController::new(app);
        let mut out = vec![c.on_packet_in(&g, &packet_in(Opening::First, size, &hash))];
        for _ in 0..joins {
            out.push(c.on_packet_in(&g, &packet_in(Opening::Join, size, &hash)));
        }
        out
    }

    fn mpsshetn() -> AppKind {
        AppKind::Mpsshetn { thresholds: DEFAULT_THRESHOLDS.to_vec() }
    }

    #[test]
    fn mpsshetn_puts_a_large_transfer_s_join_on_the_6_mbps_path_and_refuses_the_0_1_mbps_one() {
        let d = place(mpsshetn(), Some(1_000_000), 2);
        assert_eq!(d[0].path, Some(vec![0, 2, 4, 14]), "the reference path is the 10 Mbps one");
        assert_eq!(d[1].path, Some(vec![0, 10, 12, 14]), "gap 0.4 is within 0.9");
        assert!((d[1].gap_frac.expect("a gap") - 0.4).abs() < 1e-12);
        assert_eq!(d[2].path, None, "gap 0.99 is above 0.9");
    }

    #[test]
    fn mpsshetn_refuses_every_join_of_a_short_transfer_on_heterogeneous_paths() {
        let d = place(mpsshetn(), Some(10_000), 2);
        assert!(d[0].path.is_some());
        assert!(d[1].path.is_none() && d[2].path.is_none());
        // 60 KB: threshold 0.4 admits the 6 Mbps path (gap exactly 0.4).
        let d = place(mpsshetn(), Some(60_000), 1);
        assert_eq!(d[1].path_index, Some(1));
    }

    #[test]
    fn disjoint_uses_every_path_then_shares_the_least_used() {
        let d = place(AppKind::Disjoint, Some(10_000), 3);
        let idx: Vec<Option<usize>> = d.iter().map(|d| d.path_index).collect();
        assert_eq!(idx, vec![Some(0), Some(1), Some(2), Some(0)]);
    }

    #[test]
    fn shortest_and_ecmp_ignore_the_connection() {
        let d = place(AppKind::Shortest, None, 1);
        assert_eq!(d[0].path, Some(vec![0, 2, 4, 14]));
        assert_eq!(d[1].path, d[0].path);
        let d = place(AppKind::Ecmp, None, 1);
        assert_eq!(d[0].path, d[1].path, "same 5-tuple, same path");
    }

    #[test]
    fn ecmp_spreads_a_thousand_flows_over_four_equal_paths_within_ten_percent() {
        use NodeKind::*;
        let mut links = vec![(NodeId(0), NodeId(1))];
        for sw in 2..6 {
            links.push((NodeId(1), NodeId(sw)));
            links.push((NodeId(sw), NodeId(6)));
        }
        links.push((NodeId(6), NodeId(7)));
        let topo = Topology { kinds: vec![Host, Switch, Switch, Switch, Switch, Switch, Switch, Host], links };
        let (bps, up) = (vec![10; 10], vec![true; 20]);
        let g = NetGraph { topo: &topo, link_bps: &bps, dir_up: &up };
        let hash = hash_rows(7, NodeId(1));
        let mut c = BuiltinController::new(AppKind::Ecmp);
        let mut counts = [0u32; 4];
        for sport in 0..1000u16 {
            let key = FlowKey { src: Addr(0x0a00_0001), dst: Addr(0x0a00_0902), sport: 32768 + sport, dport: 80, proto: 6 };
            let p = PacketIn {
                key,
                first_dir: 0,
                last_dir: 18,
                opening: Opening::First,
                connection: None,
                app_size_bytes: None,
                hash: &hash,
            };
            counts[c.on_packet_in(&g, &p).path_index.expect("a path")] += 1;
        }
        assert!(counts.iter().all(|&n| (225..=275).contains(&n)), "{counts:?}");
    }
}
