//! Engine specs for the standard test networks, used by the validation
//! experiments, the integration tests and the Rust benchmarks. (Python users
//! build the same networks with `mpsim.topo`.)

use serde_json::{json, Value};

pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Wire bytes of a full segment of the testbed's TCP flows in reference
/// mode: their `mss_bytes` (1448) and the Ethernet, IPv4 and TCP headers
/// (54; no timestamps). With timestamps (linux mode) a frame is 1514 bytes.
pub const FULL_FRAME_BYTES: u64 = 1448 + 54;

/// Payload capacity of a link: rate x MSS / wire size of a full segment.
pub fn payload_capacity_bps(bw_bps: u64) -> f64 {
    bw_bps as f64 * 1448.0 / FULL_FRAME_BYTES as f64
}

/// Bandwidth-delay product in full frames for a round trip of `rtt_ms`.
pub fn bdp_pkts(bw_bps: u64, rtt_ms: f64) -> u32 {
    (bw_bps as f64 * rtt_ms / 1e3 / 8.0 / FULL_FRAME_BYTES as f64).ceil() as u32
}

pub fn dir(bw_bps: u64, delay_ms: f64, queue_pkts: u32, loss: Value) -> Value {
    json!({"bandwidth_bps": bw_bps, "delay_ps": (delay_ms * PS_PER_MS as f64).round() as u64,
           "queue": {"packets": queue_pkts}, "loss": loss, "bandwidth_trace": null})
}

pub fn link(name: &str, a: &str, b: &str, a_to_b: Value, b_to_a: Value) -> Value {
    json!({"name": name, "a": a, "b": b, "a_to_b": a_to_b, "b_to_a": b_to_a, "events": []})
}

pub fn no_loss() -> Value {
    json!({"model": "none"})
}

pub fn bernoulli(p: f64) -> Value {
    json!({"model": "bernoulli", "p": p})
}

pub fn download(size_bytes: Option<u64>) -> Value {
    json!({"kind": "download", "size_bytes": size_bytes})
}

/// `n` sender/receiver pairs around switches `s1`-`s2` joined by the
/// bottleneck. Flow `fI` downloads from `sndI` to `rcvI`; data crosses the
/// bottleneck a->b.
#[derive(Clone, Debug)]
pub struct Dumbbell {
    pub n: usize,
    pub bw_bps: u64,
    /// One-way delay of the bottleneck.
    pub delay_ms: f64,
    pub queue_pkts: u32,
    /// Loss on the data direction (a->b) of the bottleneck.
    pub loss: Value,
    /// One-way delay of each sender's access link (cycled); receivers' are 0.
    pub access_delay_ms: Vec<f64>,
    pub access_bw_bps: u64,
    pub ccs: Vec<String>,
    pub duration_s: f64,
    pub seed: u64,
    pub sack: bool,
    pub delayed_ack: bool,
    pub record: bool,
}

impl Dumbbell {
    pub fn new(n: usize, bw_bps: u64, delay_ms: f64, queue_pkts: u32) -> Self {
        Dumbbell {
            n,
            bw_bps,
            delay_ms,
            queue_pkts,
            loss: no_loss(),
            access_delay_ms: vec![0.0],
            access_bw_bps: bw_bps.saturating_mul(10),
            ccs: vec!["reno".into()],
            duration_s: 60.0,
            seed: 1,
            sack: true,
            delayed_ack: true,
            record: true,
        }
    }

    pub fn spec(&self) -> Value {
        let mut nodes = vec![json!({"name": "s1", "kind": "switch"}), json!({"name": "s2", "kind": "switch"})];
        let bn = dir(self.bw_bps, self.delay_ms, self.queue_pkts, self.loss.clone());
        let bn_rev = dir(self.bw_bps, self.delay_ms, self.queue_pkts, no_loss());
        let mut links = vec![link("bottleneck", "s1", "s2", bn, bn_rev)];
        let mut flows = vec![];
        for i in 0..self.n {
            let (snd, rcv) = (format!("snd{i}"), format!("rcv{i}"));
            nodes.push(json!({"name": snd, "kind": "host"}));
            nodes.push(json!({"name": rcv, "kind": "host"}));
            let ad = self.access_delay_ms[i % self.access_delay_ms.len()];
            let acc = dir(self.access_bw_bps, ad, 100_000, no_loss());
            let fast = dir(self.access_bw_bps, 0.0, 100_000, no_loss());
            links.push(link(&format!("a{i}"), &snd, "s1", acc.clone(), acc));
            links.push(link(&format!("b{i}"), "s2", &rcv, fast.clone(), fast));
            flows.push(json!({
                "name": format!("f{i}"), "transport": "tcp", "client": rcv, "server": snd,
                "app": download(None), "start_ps": 0, "cc": self.ccs[i % self.ccs.len()],
                "mss_bytes": 1448, "rcvbuf_bytes": 64u64 << 20, "sack": self.sack,
                "delayed_ack": self.delayed_ack, "delayed_ack_ps": 40 * PS_PER_MS,
                "min_rto_ps": 200 * PS_PER_MS, "initial_cwnd_pkts": 10,
            }));
        }
        json!({"name": "dumbbell", "seed": self.seed, "duration_ps": (self.duration_s * PS_PER_S as f64) as u64,
               "sample_interval_ps": PS_PER_S, "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes,
               "links": links, "flows": flows,
               "record": {"interfaces": self.record, "subflows": self.record, "pcap": []}})
    }
}

/// A multihomed client with two access paths to a router, a fast link
/// from the router to the server. The paths are the bottlenecks.
#[derive(Clone, Debug)]
pub struct TwoPath {
    pub bw_bps: [u64; 2],
    /// One-way delay of each path.
    pub delay_ms: [f64; 2],
    pub queue_pkts: [u32; 2],
    pub loss: [Value; 2],
    pub duration_s: f64,
    pub seed: u64,
    /// Flows (name, transport, cc, app, extra keys).
    pub flows: Vec<Value>,
}

impl TwoPath {
    pub fn new(bw_bps: [u64; 2], delay_ms: [f64; 2]) -> Self {
        let q = |i: usize| bdp_pkts(bw_bps[i], 2.0 * delay_ms[i]).max(10);
        TwoPath {
            bw_bps,
            delay_ms,
            queue_pkts: [q(0), q(1)],
            loss: [no_loss(), no_loss()],
            duration_s: 60.0,
            seed: 1,
            flows: vec![],
        }
    }

    /// An MPTCP download over both paths with controller `cc`.
    pub fn mptcp_flow(name: &str, cc: &str, app: Value) -> Value {
        json!({"name": name, "transport": "mptcp", "client": "client", "server": "server", "app": app,
               "start_ps": 0, "cc": cc, "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20,
               "path_manager": "fullmesh", "scheduler": "default"})
    }

    /// A TCP download restricted to path `p1` or `p2`.
    pub fn tcp_flow(name: &str, cc: &str, path: &str, app: Value) -> Value {
        json!({"name": name, "transport": "tcp", "client": "client", "server": "server", "app": app,
               "start_ps": 0, "cc": cc, "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20, "client_interfaces": [path]})
    }

    pub fn spec(&self) -> Value {
        let nodes =
            json!([{"name": "client", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "server", "kind": "host"}]);
        let mut links = vec![];
        for i in 0..2 {
            let d = dir(self.bw_bps[i], self.delay_ms[i], self.queue_pkts[i], self.loss[i].clone());
            links.push(link(&format!("p{}", i + 1), "client", "r", d.clone(), d));
        }
        let fast = dir(self.bw_bps[0].max(self.bw_bps[1]).saturating_mul(100), 0.0, 100_000, no_loss());
        links.push(link("wan", "r", "server", fast.clone(), fast));
        json!({"name": "two-path", "seed": self.seed, "duration_ps": (self.duration_s * PS_PER_S as f64) as u64,
               "sample_interval_ps": PS_PER_S, "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes,
               "links": links, "flows": self.flows, "record": {"interfaces": true, "subflows": true, "pcap": []}})
    }
}

/// Runs a spec to its end; returns the simulation (for traces) and its summary.
pub fn run(spec: &Value) -> Result<(mpsim::Simulation, Value), mpsim::BuildError> {
    let mut sim = mpsim::Simulation::from_json(&spec.to_string())?;
    sim.run_until(mpsim::SimTime(u64::MAX));
    let summary = sim.summary();
    Ok((sim, summary))
}

/// Jain's fairness index of `xs`.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * s2)
}

/// A shared bottleneck: an MPTCP client with two interfaces and a TCP
/// client, both behind `s1`; the bottleneck `s1`-`s2`; the servers behind
/// `s2`. Downloads cross the bottleneck b->a.
#[derive(Clone, Debug)]
pub struct SharedBottleneck {
    pub bw_bps: u64,
    pub delay_ms: f64,
    pub queue_pkts: u32,
    pub duration_s: f64,
    pub seed: u64,
    pub mptcp_cc: String,
    pub tcp_cc: String,
    /// Uniform random extra delay on every access link, to keep drop-tail
    /// phase effects (Floyd and Jacobson 1992) out of the comparison.
    pub access_jitter_ms: f64,
}

impl SharedBottleneck {
    pub fn new(mptcp_cc: &str) -> Self {
        let bw = 10_000_000;
        SharedBottleneck {
            bw_bps: bw,
            delay_ms: 20.0,
            queue_pkts: bdp_pkts(bw, 40.0),
            duration_s: 120.0,
            seed: 1,
            mptcp_cc: mptcp_cc.into(),
            tcp_cc: "reno".into(),
            access_jitter_ms: 0.0,
        }
    }

    pub fn spec(&self) -> Value {
        let nodes = json!([
            {"name": "mc", "kind": "host"}, {"name": "tc", "kind": "host"},
            {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"},
            {"name": "ms", "kind": "host"}, {"name": "ts", "kind": "host"}]);
        let mut fast = dir(self.bw_bps * 10, 0.0, 100_000, no_loss());
        fast["jitter_ps"] = json!((self.access_jitter_ms * PS_PER_MS as f64) as u64);
        let bn = dir(self.bw_bps, self.delay_ms, self.queue_pkts, no_loss());
        let links = vec![
            link("mc1", "mc", "s1", fast.clone(), fast.clone()),
            link("mc2", "mc", "s1", fast.clone(), fast.clone()),
            link("tc1", "tc", "s1", fast.clone(), fast.clone()),
            link("bottleneck", "s1", "s2", bn.clone(), bn),
            link("ms1", "s2", "ms", fast.clone(), fast.clone()),
            link("ts1", "s2", "ts", fast.clone(), fast),
        ];
        let flows = json!([
            {"name": "mptcp", "transport": "mptcp", "client": "mc", "server": "ms", "app": download(None),
             "start_ps": 0, "cc": self.mptcp_cc, "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20, "path_manager": "fullmesh"},
            {"name": "tcp", "transport": "tcp", "client": "tc", "server": "ts", "app": download(None),
             "start_ps": 0, "cc": self.tcp_cc, "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20},
        ]);
        json!({"name": "shared-bottleneck", "seed": self.seed, "duration_ps": (self.duration_s * PS_PER_S as f64) as u64,
               "sample_interval_ps": PS_PER_S, "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes,
               "links": links, "flows": flows, "record": {"interfaces": false, "subflows": false, "pcap": []}})
    }
}
