//! wVegas on the networks of docs/validation.md's wVegas section: two idle
//! paths it should fill, one bottleneck it has alone, and the same
//! bottleneck after a competing TCP flow leaves. `cargo run --release -p
//! mpsim --example validation_wvegas` prints the figures; `tests/wvegas.rs`
//! asserts them. `mode` is the flow's `cc_mode`.

use super::testbed::{bdp_pkts, download, run, SharedBottleneck, TwoPath, PS_PER_S};
use super::validation::{goodput_after_bps, mean_srtt_s};
use serde_json::{json, Value};

const BW_BPS: u64 = 10_000_000;
/// One-way delay of every path: 40 ms round trip.
const DELAY_MS: f64 = 20.0;

/// Goodput per subflow of one wVegas download over two idle 10 Mbit/s,
/// 40 ms RTT paths with one BDP of buffer each.
#[derive(Debug, Clone)]
pub struct IdlePaths {
    pub per_path_bps: Vec<f64>,
    /// What the two paths carry at most for this flow (MPTCP payload).
    pub capacity_bps: f64,
}

impl IdlePaths {
    pub fn fraction(&self) -> f64 {
        self.per_path_bps.iter().sum::<f64>() / self.capacity_bps
    }
}

/// Wire bytes of a full MPTCP segment: the 1500-byte MTU and Ethernet.
const MPTCP_FRAME_BYTES: f64 = 1514.0;

/// Payload capacity of a 10 Mbit/s link for MPTCP segments in `mode`: the
/// 28-byte DSS leaves 1432 payload bytes of each frame, the timestamps of
/// linux mode 1420.
fn mptcp_capacity_bps(mode: &str) -> f64 {
    let payload_bytes = if mode == "linux" { 1420.0 } else { 1432.0 };
    BW_BPS as f64 * payload_bytes / MPTCP_FRAME_BYTES
}

/// The wVegas flow in `mode` with the flow keys of `extra` (e.g.
/// `{"cc_params": {...}, "delayed_ack": false}`).
fn in_mode(mut flow: Value, mode: &str, extra: &Value) -> Value {
    flow["cc_mode"] = json!(mode);
    for (k, v) in extra.as_object().into_iter().flatten() {
        flow[k] = v.clone();
    }
    flow
}

/// `extra`: further keys of the wVegas flow (`{}` for the defaults).
pub fn idle_paths(mode: &str, extra: &Value, duration_s: f64) -> IdlePaths {
    let mut t = TwoPath::new([BW_BPS, BW_BPS], [DELAY_MS, DELAY_MS]);
    t.duration_s = duration_s;
    t.flows = vec![in_mode(TwoPath::mptcp_flow("mp", "wvegas", download(None)), mode, extra)];
    let (_, s) = run(&t.spec()).expect("testbed spec builds");
    let per_path_bps = s["flows"]["mp"]["subflows"]
        .as_array()
        .map_or(vec![], |a| a.iter().map(|x| x["goodput_bps"].as_f64().unwrap_or(0.0)).collect());
    IdlePaths { per_path_bps, capacity_bps: 2.0 * mptcp_capacity_bps(mode) }
}

/// A two-subflow wVegas connection through one 10 Mbit/s, 40 ms RTT,
/// BDP-buffered bottleneck, measured after `from_s`.
#[derive(Debug, Clone)]
pub struct Bottleneck {
    pub goodput_bps: f64,
    pub capacity_bps: f64,
    /// Mean standing queue, packets: mean SRTT above the 40 ms base, in
    /// 1514-byte frame times.
    pub mean_queue_pkts: f64,
}

impl Bottleneck {
    pub fn utilisation(&self) -> f64 {
        self.goodput_bps / self.capacity_bps
    }
}

/// `extra`: further keys of the wVegas flow; `tcp_until_s`: a Reno TCP
/// flow shares the bottleneck until then (0: none).
pub fn bottleneck(mode: &str, extra: &Value, tcp_until_s: f64, from_s: f64, duration_s: f64) -> Bottleneck {
    let mut b = SharedBottleneck::new("wvegas");
    b.duration_s = duration_s;
    b.queue_pkts = bdp_pkts(BW_BPS, 2.0 * DELAY_MS);
    let mut spec = b.spec();
    spec["flows"][0] = in_mode(spec["flows"][0].clone(), mode, extra);
    if tcp_until_s > 0.0 {
        spec["flows"][1]["stop_ps"] = json!((tcp_until_s * PS_PER_S as f64) as u64);
    } else if let Some(flows) = spec["flows"].as_array_mut() {
        flows.truncate(1);
    }
    spec["record"] = json!({"interfaces": false, "subflows": true, "pcap": []});
    let (sim, _) = run(&spec).expect("testbed spec builds");
    let frame_s = MPTCP_FRAME_BYTES * 8.0 / BW_BPS as f64;
    let srtt_s = mean_srtt_s(&sim, "mptcp", from_s).unwrap_or(0.0);
    Bottleneck {
        goodput_bps: goodput_after_bps(&sim, "mptcp", from_s).unwrap_or(0.0),
        capacity_bps: mptcp_capacity_bps(mode),
        mean_queue_pkts: ((srtt_s - 2.0 * DELAY_MS / 1e3) / frame_s).max(0.0),
    }
}
