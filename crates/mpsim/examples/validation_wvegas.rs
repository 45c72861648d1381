//! Prints the wVegas figures of docs/validation.md.
//! `cargo run --release -p mpsim --example validation_wvegas`

use mpsim::validation_wvegas::*;
use serde_json::json;

fn mbps(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

fn main() {
    println!("| mode | two idle paths: p1 + p2 of capacity (Mbit/s) | share | bottleneck alone: utilisation, mean queue (pkts) | after a Reno flow leaves at 30 s: utilisation 40-60 s, queue |");
    println!("|---|---|---|---|---|");
    for mode in ["reference", "linux"] {
        let idle = idle_paths(mode, &json!({}), 60.0);
        let pp: Vec<String> = idle.per_path_bps.iter().map(|&x| mbps(x)).collect();
        let alone = bottleneck(mode, &json!({}), 0.0, 10.0, 60.0);
        let after = bottleneck(mode, &json!({}), 30.0, 40.0, 60.0);
        println!(
            "| {mode} | {} of {} | {:.2} | {:.2}, {:.1} | {:.2}, {:.1} |",
            pp.join(" + "),
            mbps(idle.capacity_bps),
            idle.fraction(),
            alone.utilisation(),
            alone.mean_queue_pkts,
            after.utilisation(),
            after.mean_queue_pkts
        );
    }
}
