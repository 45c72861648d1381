//! Validation of multipath TCP against the design goals of RFC 6356
//! (docs/validation.md): improve throughput, do no harm, balance
//! congestion. `cargo run --release -p mpsim --example validation_mptcp`
//! prints the tables; `tests/mptcp.rs` asserts the acceptance figures.
//! `mode` is the `cc_mode` of every flow: "reference" or "linux".

use super::testbed::{download, run, SharedBottleneck, TwoPath};
use serde_json::Value;

/// `spec` with every flow in congestion-control mode `mode`.
fn in_mode(mut spec: Value, mode: &str) -> Value {
    if let Some(flows) = spec["flows"].as_array_mut() {
        for f in flows {
            f["cc_mode"] = Value::from(mode);
        }
    }
    spec
}

fn goodput(s: &Value, flow: &str) -> f64 {
    s["flows"][flow]["goodput_bps"].as_f64().unwrap_or(0.0)
}

/// Goal 1: an MPTCP download over two disjoint 10 Mbps paths (10 ms and
/// 40 ms one-way) against one TCP (reno) on the better path alone.
#[derive(Debug, Clone)]
pub struct Goal1 {
    pub cc: String,
    pub mptcp_bps: f64,
    pub tcp_best_bps: f64,
    /// Goodput per subflow (p1, p2).
    pub per_path_bps: Vec<f64>,
}

impl Goal1 {
    pub fn ratio(&self) -> f64 {
        self.mptcp_bps / self.tcp_best_bps
    }
}

fn two_paths(duration_s: f64, seed: u64) -> TwoPath {
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 40.0]);
    t.duration_s = duration_s;
    t.seed = seed;
    t
}

pub fn goal1(cc: &str, mode: &str, duration_s: f64, seed: u64) -> Goal1 {
    let mut t = two_paths(duration_s, seed);
    t.flows = vec![TwoPath::mptcp_flow("mp", cc, download(None))];
    let (_, s) = run(&in_mode(t.spec(), mode)).expect("testbed spec builds");
    let per_path_bps = s["flows"]["mp"]["subflows"]
        .as_array()
        .map_or(vec![], |a| a.iter().map(|x| x["goodput_bps"].as_f64().unwrap_or(0.0)).collect());
    let mut t = two_paths(duration_s, seed);
    t.flows = vec![TwoPath::tcp_flow("tcp", "reno", "p1", download(None))];
    let (_, st) = run(&in_mode(t.spec(), mode)).expect("testbed spec builds");
    Goal1 { cc: cc.into(), mptcp_bps: goodput(&s, "mp"), tcp_best_bps: goodput(&st, "tcp"), per_path_bps }
}

/// Goal 2: the MPTCP connection's share of one bottleneck shared with one
/// TCP flow, per seed.
#[derive(Debug, Clone)]
pub struct Goal2 {
    pub cc: String,
    pub shares: Vec<f64>,
}

impl Goal2 {
    pub fn mean(&self) -> f64 {
        self.shares.iter().sum::<f64>() / self.shares.len().max(1) as f64
    }
}

/// `access_jitter_ms` > 0 adds random delay to the access links (0 keeps
/// the run deterministic whatever the seed, as nothing else is random).
pub fn goal2(cc: &str, mode: &str, seeds: u64, duration_s: f64, access_jitter_ms: f64) -> Goal2 {
    let shares = (1..=seeds)
        .map(|seed| {
            let mut b = SharedBottleneck::new(cc);
            b.seed = seed;
            b.duration_s = duration_s;
            b.access_jitter_ms = access_jitter_ms;
            let (_, s) = run(&in_mode(b.spec(), mode)).expect("testbed spec builds");
            let (m, t) = (goodput(&s, "mptcp"), goodput(&s, "tcp"));
            m / (m + t).max(1.0)
        })
        .collect();
    Goal2 { cc: cc.into(), shares }
}

/// Goal 3: two 10 Mbps paths, the second also carrying five TCP flows;
/// how the MPTCP connection splits its bytes.
#[derive(Debug, Clone)]
pub struct Goal3 {
    pub cc: String,
    pub idle_path_bps: f64,
    pub busy_path_bps: f64,
    pub tcp_mean_bps: f64,
}

impl Goal3 {
    /// Fraction of the MPTCP bytes on the idle path.
    pub fn idle_fraction(&self) -> f64 {
        self.idle_path_bps / (self.idle_path_bps + self.busy_path_bps).max(1.0)
    }
}

pub fn goal3(cc: &str, mode: &str, duration_s: f64, seed: u64) -> Goal3 {
    let mut t = TwoPath::new([10_000_000, 10_000_000], [20.0, 20.0]);
    t.duration_s = duration_s;
    t.seed = seed;
    t.flows = vec![TwoPath::mptcp_flow("mp", cc, download(None))];
    for i in 0..5 {
        t.flows.push(TwoPath::tcp_flow(&format!("tcp{i}"), "reno", "p2", download(None)));
    }
    let (_, s) = run(&in_mode(t.spec(), mode)).expect("testbed spec builds");
    let sub = |iface: &str| {
        s["flows"]["mp"]["subflows"].as_array().map_or(0.0, |a| {
            a.iter().filter(|x| x["client_interface"] == iface).map(|x| x["goodput_bps"].as_f64().unwrap_or(0.0)).sum()
        })
    };
    let tcp_mean_bps = (0..5).map(|i| goodput(&s, &format!("tcp{i}"))).sum::<f64>() / 5.0;
    Goal3 { cc: cc.into(), idle_path_bps: sub("p1"), busy_path_bps: sub("p2"), tcp_mean_bps }
}

/// The drop-tail phase effect behind goal 2's deterministic numbers: the
/// share of a single-subflow MPTCP connection against one TCP flow, with
/// MPTCP's options on the wire and with them stripped (fallback, same
/// packet sizes as TCP). No jitter.
pub fn phase_effect(duration_s: f64) -> (f64, f64) {
    let share = |strip: bool| {
        let mut b = SharedBottleneck::new("reno");
        b.duration_s = duration_s;
        let mut spec = b.spec();
        spec["flows"][0]["path_manager"] = serde_json::json!("default");
        spec["links"][0]["strip_mptcp"] = serde_json::json!(strip);
        let (_, s) = run(&spec).expect("testbed spec builds");
        let (m, t) = (goodput(&s, "mptcp"), goodput(&s, "tcp"));
        m / (m + t).max(1.0)
    };
    (share(false), share(true))
}
