//! Prints the multipath tables of docs/validation.md.
//! `cargo run --release -p mpsim --example validation_mptcp`

#[path = "../tests/common/mod.rs"]
mod common;

use common::multipath::*;

const ALGOS: &[&str] = &["lia", "olia", "balia", "wvegas", "coupled", "semicoupled", "ewtcp", "reno", "cubic"];

fn mbps(x: f64) -> String {
    format!("{:.2}", x / 1e6)
}

fn main() {
    println!("## Goal 1: improve throughput (two disjoint 10 Mbps paths, 10 ms and 40 ms one-way, 60 s)\n");
    println!("| cc | MPTCP (Mbps) | per path p1 / p2 | reno on p1 alone | ratio |\n|---|---|---|---|---|");
    for cc in ALGOS {
        let g = goal1(cc, "reference", 60.0, 1);
        let pp: Vec<String> = g.per_path_bps.iter().map(|&x| mbps(x)).collect();
        println!("| {cc} | {} | {} | {} | {:.2} |", mbps(g.mptcp_bps), pp.join(" / "), mbps(g.tcp_best_bps), g.ratio());
    }
    println!("\n## Goal 2: do no harm (2-subflow MPTCP and one reno TCP through one 10 Mbps bottleneck, 120 s)\n");
    println!("| cc | share, no jitter (deterministic) | share, 0.5 ms access jitter: mean over 10 seeds | min | max |\n|---|---|---|---|---|");
    for cc in ALGOS {
        let d = goal2(cc, "reference", 1, 120.0, 0.0);
        let g = goal2(cc, "reference", 10, 120.0, 0.5);
        let lo = g.shares.iter().cloned().fold(1.0, f64::min);
        let hi = g.shares.iter().cloned().fold(0.0, f64::max);
        println!("| {cc} | {:.3} | {:.3} | {:.3} | {:.3} |", d.mean(), g.mean(), lo, hi);
    }
    let (with_options, stripped) = phase_effect(120.0);
    println!(
        "\nPhase effect (no jitter): a single-subflow MPTCP connection against one reno TCP takes {with_options:.3} \
         with its DSS options on the wire and {stripped:.3} with them stripped (TCP-sized packets)."
    );
    println!("\n## Goal 3: balance congestion (two 10 Mbps paths, 20 ms one-way; path p2 also carries 5 reno flows; 60 s)\n");
    println!("| cc | MPTCP on idle p1 (Mbps) | on busy p2 | share on idle path | mean reno flow on p2 |\n|---|---|---|---|---|");
    for cc in ALGOS {
        let g = goal3(cc, "reference", 60.0, 1);
        println!(
            "| {cc} | {} | {} | {:.3} | {} |",
            mbps(g.idle_path_bps),
            mbps(g.busy_path_bps),
            g.idle_fraction(),
            mbps(g.tcp_mean_bps)
        );
    }
    println!("\n## The three goals in linux mode (every flow, MPTCP and TCP, with `cc_mode = \"linux\"`)\n");
    println!(
        "| cc | goal 1 ratio | goal 2 share, 0.5 ms jitter, mean over 10 seeds | goal 3 share on idle path |\n|---|---|---|---|"
    );
    for cc in ALGOS {
        let g1 = goal1(cc, "linux", 60.0, 1);
        let g2 = goal2(cc, "linux", 10, 120.0, 0.5);
        let g3 = goal3(cc, "linux", 60.0, 1);
        println!("| {cc} | {:.2} | {:.3} | {:.3} |", g1.ratio(), g2.mean(), g3.idle_fraction());
    }
}
