//! Criterion benchmarks of the engine's hot paths and of short whole runs.
//! Whole-scenario figures (packet-hops per second, peak memory) come from
//! `mpsim bench`; these track regressions of the pieces.

#[path = "../tests/common/mod.rs"]
mod common;

use common::testbed::{download, Dumbbell, TwoPath};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mpsim_core::{EventQueue, SimTime};

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    g.throughput(Throughput::Elements(100_000));
    g.bench_function("push_pop_100k_with_500_pending", |b| {
        b.iter(|| {
            let mut q = EventQueue::new();
            let mut t = 0u64;
            for i in 0..500u64 {
                q.push(SimTime(i * 7919 % 1000), i);
            }
            for i in 0..100_000u64 {
                let (now, _) = q.pop().expect("queue holds 500 events");
                t = now.0;
                q.push(SimTime(t + (i * 7919) % 1000 + 1), i);
            }
            t
        })
    });
    g.finish();
}

fn dumbbell_runs(c: &mut Criterion) {
    let mut g = c.benchmark_group("dumbbell");
    g.sample_size(10);
    for n in [1usize, 10] {
        let mut d = Dumbbell::new(n, 1_000_000_000, 5.0, 1000);
        d.duration_s = 1.0;
        d.record = false;
        let spec = d.spec().to_string();
        let hops = {
            let mut s = mpsim::Simulation::from_json(&spec).expect("spec builds");
            s.run_until(SimTime(u64::MAX));
            s.packet_hops()
        };
        g.throughput(Throughput::Elements(hops));
        g.bench_function(format!("{n}_flows_1gbps_1s"), |b| {
            b.iter(|| {
                let mut s = mpsim::Simulation::from_json(&spec).expect("spec builds");
                s.run_until(SimTime(u64::MAX));
                s.packet_hops()
            })
        });
    }
    g.finish();
}

/// One simulated second of the `mptcp-2path-1g` bench case: an MPTCP LIA
/// download over two 1 Gbps paths, 5 and 10 ms one-way.
fn mptcp_runs(c: &mut Criterion) {
    let mut g = c.benchmark_group("mptcp");
    g.sample_size(10);
    let mut t = TwoPath::new([1_000_000_000; 2], [5.0, 10.0]);
    t.duration_s = 1.0;
    let mut flow = TwoPath::mptcp_flow("mp", "lia", download(None));
    flow["rcvbuf_bytes"] = (32u64 << 20).into();
    t.flows.push(flow);
    let mut spec = t.spec();
    spec["record"] = serde_json::json!({"interfaces": false, "subflows": false, "pcap": []});
    let spec = spec.to_string();
    let run = || {
        let mut s = mpsim::Simulation::from_json(&spec).expect("spec builds");
        s.run_until(SimTime(u64::MAX));
        s.packet_hops()
    };
    g.throughput(Throughput::Elements(run()));
    g.bench_function("two_paths_1gbps_1s", |b| b.iter(run));
    g.finish();
}

criterion_group!(benches, event_queue, dumbbell_runs, mptcp_runs);
criterion_main!(benches);
