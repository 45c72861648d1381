//! Prints the linux-mode aggressiveness figures of docs/validation.md:
//! an MPTCP connection (one subflow, then two) and one Reno TCP flow
//! through one 10 Mbit/s bottleneck (40 ms RTT, one BDP of buffer, 0.5 ms
//! of random delay on the access links), every flow in the same cc_mode.
//! `cargo run --release -p mpsim --example validation_linux_mode`

#[path = "../tests/common/mod.rs"]
mod common;

use common::testbed::{run, SharedBottleneck};
use serde_json::json;

const SEEDS: u64 = 5;
const DURATION_S: f64 = 60.0;

/// Mean over seeds of MPTCP goodput / TCP goodput.
fn ratio(cc: &str, mode: &str, subflows: usize) -> f64 {
    let mut sum = 0.0;
    for seed in 1..=SEEDS {
        let mut b = SharedBottleneck::new(cc);
        b.seed = seed;
        b.duration_s = DURATION_S;
        b.access_jitter_ms = 0.5;
        let mut spec = b.spec();
        for f in spec["flows"].as_array_mut().into_iter().flatten() {
            f["cc_mode"] = json!(mode);
        }
        if subflows == 1 {
            spec["flows"][0]["path_manager"] = json!("default");
        }
        let (_, s) = run(&spec).expect("testbed spec builds");
        let g = |f: &str| s["flows"][f]["goodput_bps"].as_f64().unwrap_or(0.0);
        sum += g("mptcp") / g("tcp").max(1.0);
    }
    sum / SEEDS as f64
}

fn main() {
    println!("| cc | subflows | reference: MPTCP / Reno goodput | linux |\n|---|---|---|---|");
    for cc in ["lia", "olia", "balia", "reno"] {
        for n in [1, 2] {
            println!("| {cc} | {n} | {:.2} | {:.2} |", ratio(cc, "reference", n), ratio(cc, "linux", n));
        }
    }
}
