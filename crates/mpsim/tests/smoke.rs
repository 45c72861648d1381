mod common;
use common::*;
use serde_json::json;

#[test]
fn one_reno_flow_fills_a_10mbps_link() {
    let spec = dumbbell(1, 10_000_000, 20.0, 35, json!({"model": "none"}), &["reno"], 30, 1);
    let (_sim, s) = run(&spec);
    let g = goodput(&s, "f0");
    eprintln!("{}", serde_json::to_string_pretty(&s["flows"]).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&s["links"]["bottleneck"]).unwrap());
    assert!(g > 0.85 * payload_capacity_bps(10_000_000), "{g}");
}
