//! What the front end relies on from the engine: seeded start offsets,
//! typed refusals, bounded slices of a run, and subflow traces that end
//! when a subflow closes.

mod common;

use common::testbed::{run, Dumbbell, TwoPath, PS_PER_MS, PS_PER_S};
use mpsim::report_column::Column;
use mpsim::{BuildError, SimTime, Simulation};
use serde_json::{json, Value};

fn starts_s(spec: &Value) -> Vec<f64> {
    let (_, summary) = run(spec).expect("spec builds");
    let flows = summary["flows"].as_object().expect("flows");
    flows.values().map(|f| f["start_s"].as_f64().expect("start_s")).collect()
}

fn jittered_dumbbell(seed: u64, jitter_ms: u64) -> Value {
    let mut d = Dumbbell::new(3, 10_000_000, 10.0, 100);
    d.duration_s = 1.0;
    d.seed = seed;
    let mut spec = d.spec();
    for f in spec["flows"].as_array_mut().expect("flows") {
        f["start_ps"] = json!(100 * PS_PER_MS);
        f["start_jitter_ps"] = json!(jitter_ms * PS_PER_MS);
    }
    spec
}

#[test]
fn start_jitter_draws_one_offset_per_flow_from_the_seed() {
    let a = starts_s(&jittered_dumbbell(1, 50));
    assert!(a.iter().all(|&s| (0.1..=0.15).contains(&s)), "{a:?}");
    assert!(a[0] != a[1] && a[1] != a[2], "flows draw from their own streams: {a:?}");
    assert_eq!(a, starts_s(&jittered_dumbbell(1, 50)), "same seed, same starts");
    assert_ne!(a, starts_s(&jittered_dumbbell(2, 50)), "another seed, other starts");
    assert_eq!(starts_s(&jittered_dumbbell(1, 0)), vec![0.1; 3], "no jitter, no offset");
}

#[test]
fn unreachable_server_is_refused_as_no_route() {
    let mut spec = Dumbbell::new(1, 10_000_000, 10.0, 100).spec();
    spec["links"].as_array_mut().expect("links").retain(|l| l["name"] != "bottleneck");
    let err = Simulation::from_json(&spec.to_string()).err().expect("refused");
    assert!(matches!(err, BuildError::NoRoute(_)), "{err}");
}

#[test]
fn a_cmt_flow_with_cbr_is_refused_as_unsupported_and_an_unknown_controller_app_as_invalid() {
    let mut spec = Dumbbell::new(1, 10_000_000, 10.0, 100).spec();
    spec["flows"][0]["transport"] = json!("cmt");
    assert!(Simulation::from_json(&spec.to_string()).is_ok(), "a cmt download runs");
    spec["flows"][0]["app"] = json!({"kind": "http", "sizes_bytes": [10_000], "repeat": 1, "gap_ps": 0,
                                     "new_connection": true, "request_bytes": 100});
    assert!(Simulation::from_json(&spec.to_string()).is_ok(), "a cmt http flow runs");
    spec["flows"][0]["app"] = json!({"kind": "cbr", "rate_bps": 100_000, "packet_bytes": 1000});
    let err = Simulation::from_json(&spec.to_string()).err().expect("refused");
    assert!(matches!(err, BuildError::Unsupported(_)), "{err}");
    let mut spec = Dumbbell::new(1, 10_000_000, 10.0, 100).spec();
    spec["controller"] = json!({"app": "magic"});
    let err = Simulation::from_json(&spec.to_string()).err().expect("refused");
    assert!(matches!(err, BuildError::Invalid(_)) && err.to_string().contains("magic"), "{err}");
    spec["controller"] = json!({"app": "ecmp"});
    assert!(Simulation::from_json(&spec.to_string()).is_ok(), "controllers run");
}

#[test]
fn a_run_in_bounded_slices_gives_the_same_results() {
    let mut d = Dumbbell::new(2, 10_000_000, 10.0, 100);
    d.duration_s = 5.0;
    let spec = d.spec().to_string();
    let mut whole = Simulation::from_json(&spec).expect("builds");
    whole.run_until(SimTime(u64::MAX));
    let mut sliced = Simulation::from_json(&spec).expect("builds");
    let mut slices = 0;
    while !sliced.advance(SimTime(u64::MAX), 1000) {
        slices += 1;
        assert!(sliced.events() == 1000 * slices, "a slice runs exactly its budget");
    }
    assert!(slices > 10);
    assert_eq!(sliced.events(), whole.events());
    let (mut a, mut b) = (whole.summary(), sliced.summary());
    a["wall_time_s"] = json!(0);
    b["wall_time_s"] = json!(0);
    assert_eq!(a, b);
}

fn column<'a>(traces: &'a mpsim::Traces, name: &str) -> &'a Column {
    let table = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows").1;
    &table.columns.iter().find(|(c, _)| c == name).expect("column").1
}

#[test]
fn a_failed_subflow_is_sampled_once_as_closed_then_no_more() {
    let mut net = TwoPath::new([4_000_000, 2_000_000], [10.0, 40.0]);
    net.duration_s = 20.0;
    let mut spec = net.spec();
    spec["flows"] = json!([TwoPath::mptcp_flow("mp", "lia", common::testbed::download(None))]);
    // The first path fails for good at 5 s.
    spec["links"][0]["events"] = json!([{"at_ps": 5 * PS_PER_S, "up": false}]);
    let (sim, _) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let (Column::F64(time), Column::Str(state), Column::Str(iface), Column::I64(flight)) = (
        column(&traces, "time_s"),
        column(&traces, "state"),
        column(&traces, "client_interface"),
        column(&traces, "bytes_in_flight"),
    ) else {
        panic!("column types")
    };
    let Column::Str(side) = column(&traces, "side") else { panic!("side") };
    let first = net_link_name(&spec, 0);
    let rows: Vec<usize> = (0..time.len()).filter(|&i| iface[i] == first && side[i] == "server").collect();
    let closed: Vec<usize> = rows.iter().copied().filter(|&i| state[i] == "closed").collect();
    assert_eq!(closed.len(), 1, "one closing row: {:?}", rows.iter().map(|&i| (time[i], &state[i])).collect::<Vec<_>>());
    assert_eq!(Some(&closed[0]), rows.last(), "nothing after it");
    assert_eq!(flight[closed[0]], 0);
    assert!(time[closed[0]] < 10.0, "closed within seconds of the failure: {}", time[closed[0]]);
}

fn net_link_name(spec: &Value, i: usize) -> String {
    spec["links"][i]["name"].as_str().expect("name").to_string()
}
