//! Prints the loss-response figures of docs/validation.md ("Coupled
//! controllers on one subflow"): MPTCP over two identical lossy paths
//! (100 Mbit/s, 10 ms one-way, Bernoulli loss both ways) against one Reno
//! TCP on one of them, 60 s, mean of 5 seeds. (The one-subflow ratios are
//! measured by `cargo test --release -p mpsim --test cc_single_path`.)
//! `cargo run --release -p mpsim --example validation_cc_loss`

#[path = "../tests/common/mod.rs"]
mod common;

use common::testbed::{bernoulli, download, run, TwoPath};

const SEEDS: u64 = 5;

fn goodput_bps(cc: &str, tcp: bool, p: f64, seed: u64) -> f64 {
    let mut t = TwoPath::new([100_000_000, 100_000_000], [10.0, 10.0]);
    t.loss = [bernoulli(p), bernoulli(p)];
    t.duration_s = 60.0;
    t.seed = seed;
    let flow = if tcp { TwoPath::tcp_flow("f", cc, "p1", download(None)) } else { TwoPath::mptcp_flow("f", cc, download(None)) };
    t.flows = vec![flow];
    let (_, s) = run(&t.spec()).expect("testbed spec builds");
    s["flows"]["f"]["goodput_bps"].as_f64().unwrap_or(0.0)
}

fn mean(f: impl Fn(u64) -> f64) -> f64 {
    (1..=SEEDS).map(f).sum::<f64>() / SEEDS as f64
}

fn main() {
    println!("| cc | 1 % loss: MPTCP / TCP | 4 % loss |\n|---|---|---|");
    let tcp = [0.01, 0.04].map(|p| mean(|s| goodput_bps("reno", true, p, s)));
    for cc in ["lia", "olia", "balia", "coupled", "kellyvoice"] {
        let r = [0.01, 0.04].map(|p| mean(|s| goodput_bps(cc, false, p, s)));
        println!("| {cc} | {:.3} | {:.3} |", r[0] / tcp[0], r[1] / tcp[1]);
    }
}
