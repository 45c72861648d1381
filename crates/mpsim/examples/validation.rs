//! Prints the validation tables of docs/validation.md.
//! `cargo run --release -p mpsim --example validation`

#[path = "../tests/common/mod.rs"]
mod common;

use common::validation::*;

fn mbps(x: f64) -> String {
    format!("{:.3}", x / 1e6)
}

fn main() {
    println!("## Utilisation (10 Mbps, 20 ms one-way, one BDP of buffer, 60 s)\n");
    println!("| flows | goodput per flow (Mbps) | sum / payload capacity |\n|---|---|---|");
    for ccs in [vec!["reno"], vec!["cubic"], vec!["reno", "cubic"]] {
        let u = utilization(&ccs, 60.0, 1);
        let g: Vec<String> = u.goodput_bps.iter().map(|&x| mbps(x)).collect();
        println!("| {} | {} | {:.4} |", ccs.join(" + "), g.join(", "), u.fraction());
    }
    println!("\n## Mathis formula (reno, SACK, no delayed ACK, 10 Mbps, 40 ms RTT, 1000-packet buffer, 200 s measured after the first 20 s, 10 seeds)\n");
    println!("| p | goodput mean ± sd (Mbps) | mean RTT (ms) | formula, 40 ms (Mbps) | ratio | formula, measured RTT (Mbps) | ratio |\n|---|---|---|---|---|---|---|");
    for p in [0.0005, 0.002, 0.01] {
        let r = mathis(p, 10, 200.0);
        println!(
            "| {p} | {} ± {} | {:.1} | {} | {:.3} | {} | {:.3} |",
            mbps(r.mean_goodput_bps),
            mbps(r.std_goodput_bps),
            r.mean_rtt_s * 1e3,
            mbps(r.predicted_base_rtt_bps),
            r.ratio_base(),
            mbps(r.predicted_measured_rtt_bps),
            r.ratio_measured()
        );
    }
    println!("\n## Fairness (reno, equal RTT, 10 Mbps, 20 ms one-way, one BDP of buffer, 120 s)\n");
    println!("| flows | goodput min–max (Mbps) | Jain's index |\n|---|---|---|");
    for n in [2, 4, 8] {
        let f = fairness(n, 120.0, 1);
        let lo = f.goodput_bps.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = f.goodput_bps.iter().cloned().fold(0.0, f64::max);
        println!("| {n} | {}–{} | {:.4} |", mbps(lo), mbps(hi), f.jain);
    }
    println!("\n## RTT unfairness (two reno flows, 20 ms and 80 ms one-way, 120 s)\n");
    let u = rtt_unfairness(120.0, 1);
    println!("| flow | propagation RTT (ms) | mean RTT (ms) | goodput (Mbps) |\n|---|---|---|---|");
    for i in 0..2 {
        println!("| f{i} | {:.0} | {:.1} | {} |", u.rtt_s[i] * 1e3, u.mean_rtt_s[i] * 1e3, mbps(u.goodput_bps[i]));
    }
    let prop = u.rtt_s[1] / u.rtt_s[0];
    let eff = u.mean_rtt_s[1] / u.mean_rtt_s[0];
    println!(
        "\nThroughput ratio short/long: {:.2}. Theory: (RTT ratio)^1 with independent losses, ^2 with synchronised losses: \
         propagation RTT ratio {prop:.1} gives {:.1} to {:.1}; measured mean RTT ratio {eff:.2} gives {:.2} to {:.2}.",
        u.ratio(),
        prop,
        prop * prop,
        eff,
        eff * eff
    );
}
