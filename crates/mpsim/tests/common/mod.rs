//! Spec builders shared by the integration tests.
#![allow(dead_code)]

use serde_json::{json, Value};

pub const MS: u64 = 1_000_000_000;
pub const S: u64 = 1_000_000_000_000;

pub fn dir(bw_bps: u64, delay_ms: f64, queue_pkts: u32, loss: Value) -> Value {
    json!({"bandwidth_bps": bw_bps, "delay_ps": (delay_ms * MS as f64) as u64,
           "queue": {"packets": queue_pkts}, "loss": loss, "bandwidth_trace": null})
}

pub fn link(name: &str, a: &str, b: &str, d: Value) -> Value {
    json!({"name": name, "a": a, "b": b, "a_to_b": d.clone(), "b_to_a": d, "events": []})
}

pub fn flow(name: &str, client: &str, server: &str, cc: &str, app: Value) -> Value {
    json!({"name": name, "transport": "tcp", "client": client, "server": server, "app": app,
           "start_ps": 0, "cc": cc, "mss_bytes": 1448, "rcvbuf_bytes": 64 * 1024 * 1024,
           "sack": true, "delayed_ack": true, "delayed_ack_ps": 40 * MS, "min_rto_ps": 200 * MS,
           "initial_cwnd_pkts": 10})
}

pub fn download(size: Option<u64>) -> Value {
    json!({"kind": "download", "size_bytes": size})
}

/// n senders and n receivers around two switches joined by the bottleneck
/// (bw, one-way delay_ms, queue). Access links are fast and short.
pub fn dumbbell(n: usize, bw_bps: u64, delay_ms: f64, queue_pkts: u32, loss: Value, ccs: &[&str], duration_s: u64, seed: u64) -> Value {
    let mut nodes = vec![json!({"name": "s1", "kind": "switch"}), json!({"name": "s2", "kind": "switch"})];
    let mut links = vec![link("bottleneck", "s1", "s2", dir(bw_bps, delay_ms, queue_pkts, loss))];
    let mut flows = vec![];
    let access = dir(bw_bps * 100, 0.01, 10_000, json!({"model": "none"}));
    for i in 0..n {
        let (snd, rcv) = (format!("snd{i}"), format!("rcv{i}"));
        nodes.push(json!({"name": snd, "kind": "host"}));
        nodes.push(json!({"name": rcv, "kind": "host"}));
        links.push(link(&format!("a{i}"), &snd, "s1", access.clone()));
        links.push(link(&format!("b{i}"), "s2", &rcv, access.clone()));
        // The receiver is the client of a download from the sender.
        flows.push(flow(&format!("f{i}"), &rcv, &snd, ccs[i % ccs.len()], download(None)));
    }
    json!({"name": "dumbbell", "seed": seed, "duration_ps": duration_s * S, "sample_interval_ps": S,
           "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": flows,
           "record": {"interfaces": true, "subflows": true, "pcap": []}})
}

pub fn run(spec: &Value) -> (mpsim::Simulation, Value) {
    let mut sim = mpsim::Simulation::from_json(&spec.to_string()).expect("spec builds");
    sim.run_until(mpsim::SimTime(u64::MAX));
    let summary = sim.summary();
    (sim, summary)
}

/// Payload capacity of a link: rate x MSS / wire size of a full segment.
pub fn payload_capacity_bps(bw_bps: u64) -> f64 {
    bw_bps as f64 * 1448.0 / 1514.0
}

pub fn goodput(summary: &Value, flow: &str) -> f64 {
    summary["flows"][flow]["goodput_bps"].as_f64().unwrap()
}
