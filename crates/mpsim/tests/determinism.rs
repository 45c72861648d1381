//! Same spec and seed, same bytes out; another seed changes a lossy run.

mod common;

use common::testbed::{bernoulli, Dumbbell};
use serde_json::{json, Value};

fn lossy(seed: u64) -> Value {
    let mut d = Dumbbell::new(3, 10_000_000, 10.0, 30);
    d.loss = bernoulli(0.01);
    d.ccs = vec!["reno".into(), "cubic".into(), "vegas".into()];
    d.duration_s = 20.0;
    d.seed = seed;
    d.spec()
}

fn run(spec: &Value) -> (mpsim::Simulation, Value) {
    common::testbed::run(spec).expect("spec builds")
}

fn without_wall_time(mut s: Value) -> Value {
    s["wall_time_s"] = json!(0);
    s
}

#[test]
fn same_seed_gives_identical_summary_and_traces() {
    let (a, sa) = run(&lossy(7));
    let (b, sb) = run(&lossy(7));
    assert_eq!(without_wall_time(sa).to_string(), without_wall_time(sb).to_string());
    // Compared as printed: NaN (a column a transport does not report) is
    // not equal to itself.
    assert_eq!(format!("{:?}", a.traces()), format!("{:?}", b.traces()));
}

#[test]
fn another_seed_changes_a_lossy_run() {
    let (_, sa) = run(&lossy(7));
    let (_, sb) = run(&lossy(8));
    assert_ne!(sa["flows"].to_string(), sb["flows"].to_string());
}
