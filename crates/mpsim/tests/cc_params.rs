//! `cc_params` reach the controller (TCP here; MPTCP in tests/wvegas.rs),
//! and a key that does not belong to the flow's controller is refused
//! before the run.

mod common;

use common::testbed::{bdp_pkts, run, Dumbbell};
use serde_json::{json, Value};

fn dumbbell_vegas(params: Value) -> Value {
    let bw = 10_000_000;
    let mut d = Dumbbell::new(1, bw, 20.0, 4 * bdp_pkts(bw, 40.0));
    d.ccs = vec!["vegas".into()];
    d.duration_s = 20.0;
    let mut spec = d.spec();
    spec["flows"][0]["cc_params"] = params;
    spec
}

/// Mean smoothed RTT of flow f0 after 5 s, milliseconds.
fn mean_srtt_ms(spec: &Value) -> f64 {
    let (sim, _) = run(spec).expect("spec builds");
    1e3 * common::validation::mean_srtt_s(&sim, "f0", 5.0).expect("srtt samples")
}

#[test]
fn vegas_alpha_and_beta_set_the_standing_queue() {
    // Vegas keeps between alpha and beta packets queued: at 10 Mbit/s one
    // packet is 1.2 ms. Defaults 2..4 against 20..24.
    let small = mean_srtt_ms(&dumbbell_vegas(json!({})));
    let large = mean_srtt_ms(&dumbbell_vegas(json!({"alpha": 20.0, "beta": 24.0})));
    let extra_pkts = (large - small) / 1.2;
    assert!((14.0..24.0).contains(&extra_pkts), "srtt {small:.1} ms vs {large:.1} ms: {extra_pkts:.1} packets");
}

#[test]
fn a_parameter_of_another_controller_is_refused_with_its_key() {
    let mut spec = dumbbell_vegas(json!({}));
    spec["flows"][0]["cc"] = json!("reno");
    spec["flows"][0]["cc_params"] = json!({"alpha": 2.0});
    let err = run(&spec).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("'alpha'") && err.contains("reno"), "{err}");
    let mut spec = dumbbell_vegas(json!({"alpha": 5.0, "beta": 3.0}));
    spec["flows"][0]["cc"] = json!("vegas");
    let err = run(&spec).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("'beta'"), "{err}");
}
