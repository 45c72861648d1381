//! Prints the wVegas figures of docs/validation.md.
//! `cargo run --release -p mpsim --example validation_wvegas`

#[path = "../tests/common/mod.rs"]
mod common;

use common::validation_wvegas::*;
use serde_json::json;

fn mbps(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

fn main() {
    println!(
        "| mode | delayed ACKs | two idle paths: p1 + p2 (Mbit/s) | share of {} | bottleneck alone: utilisation, mean queue (pkts) | after a Reno flow leaves at 30 s: utilisation 40-60 s, queue |",
        mbps(idle_paths("reference", &json!({}), 1.0).capacity_bps)
    );
    println!("|---|---|---|---|---|---|");
    for mode in ["reference", "linux"] {
        for delayed_ack in [true, false] {
            let extra = json!({ "delayed_ack": delayed_ack });
            let idle = idle_paths(mode, &extra, 60.0);
            let pp: Vec<String> = idle.per_path_bps.iter().map(|&x| mbps(x)).collect();
            let alone = bottleneck(mode, &extra, 0.0, 10.0, 60.0);
            let after = bottleneck(mode, &extra, 30.0, 40.0, 60.0);
            println!(
                "| {mode} | {} | {} | {:.2} | {:.2}, {:.1} | {:.2}, {:.1} |",
                if delayed_ack { "on" } else { "off" },
                pp.join(" + "),
                idle.fraction(),
                alone.utilisation(),
                alone.mean_queue_pkts,
                after.utilisation(),
                after.mean_queue_pkts
            );
        }
    }
}
