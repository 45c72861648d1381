//! End-to-end checks of TCP's close, timers and loss response in the
//! engine: what the sans-IO unit tests establish for one connection, seen
//! on whole networks.

mod common;

use common::testbed::{bdp_pkts, bernoulli, download, Dumbbell};
use mpsim::{SimTime, Simulation};
use serde_json::Value;

fn sim_of(spec: &Value) -> Simulation {
    Simulation::from_json(&spec.to_string()).expect("spec builds")
}

/// Packets sent on every link, both directions.
fn packets_on_links(s: &Value) -> u64 {
    let links = s["links"].as_object().expect("links");
    links.values().flat_map(|l| ["a_to_b", "b_to_a"].map(|d| l[d]["packets"].as_u64().unwrap_or(0))).sum()
}

/// The first subflow row of flow `name`.
fn path<'a>(s: &'a Value, name: &str) -> &'a Value {
    &s["flows"][name]["subflows"][0]
}

fn count(s: &Value, name: &str, key: &str) -> u64 {
    path(s, name)[key].as_u64().unwrap_or_else(|| panic!("{key} in {}", path(s, name)))
}

/// `spec` with the flows' minimum RTO left to their mode's default and
/// `cc_mode` set.
fn with_mode(mut spec: Value, mode: &str) -> Value {
    for f in spec["flows"].as_array_mut().expect("flows") {
        let f = f.as_object_mut().expect("flow");
        f.remove("min_rto_ps");
        f.insert("cc_mode".into(), mode.into());
    }
    spec
}

#[test]
fn a_closed_download_sends_nothing_more() {
    // The client's final ACK of the server's FIN reaches it, so the server
    // never repeats its FIN; the client leaves TIME_WAIT after 60 s.
    let mut d = Dumbbell::new(1, 10_000_000, 20.0, 100);
    d.duration_s = 200.0;
    let mut spec = d.spec();
    spec["flows"][0]["app"] = download(Some(10_000));
    let mut sim = sim_of(&spec);
    sim.run_until(SimTime::from_secs_f64(5.0));
    let early = sim.summary();
    assert_eq!(early["flows"]["f0"]["bytes_delivered"].as_u64(), Some(10_000));
    sim.run_until(SimTime::from_secs_f64(200.0));
    let late = sim.summary();
    assert_eq!(packets_on_links(&late), packets_on_links(&early));
    assert!(sim.endpoint_lines().iter().all(|l| l.contains(" Closed ")), "{:#?}", sim.endpoint_lines());
}

#[test]
fn newreno_recovers_a_slow_start_overshoot_without_one_repair_per_rtt() {
    // Slow start into a small queue loses dozens of segments of one window.
    // RFC 6582's Impatient timer ends that episode with one timeout; a
    // timer restarted on every partial ACK repairs one hole per RTT.
    let bw = 10_000_000;
    let mut d = Dumbbell::new(1, bw, 50.0, 20);
    d.sack = false;
    d.duration_s = 20.0;
    d.record = false;
    for mode in ["reference", "linux"] {
        let mut sim = sim_of(&with_mode(d.spec(), mode));
        sim.run_until(SimTime::from_secs_f64(20.0));
        let s = sim.summary();
        let goodput = s["flows"]["f0"]["goodput_bps"].as_f64().unwrap_or(0.0);
        assert!(goodput > 0.5 * bw as f64, "{mode}: {goodput} bit/s, {}", path(&s, "f0"));
    }
}

/// Goodput of one reno flow with Bernoulli loss `p` on a path of `rtt_ms`
/// (a large buffer: the loss is the only congestion signal), mean of
/// `seeds` runs, and the spurious retransmissions and timeouts seen.
fn reno_with_loss(mode: &str, rtt_ms: f64, p: f64, seeds: u64, duration_s: f64) -> (f64, u64, u64) {
    let (mut goodput, mut spurious, mut timeouts) = (0.0, 0, 0);
    for seed in 1..=seeds {
        let mut d = Dumbbell::new(1, 100_000_000, rtt_ms / 2.0, 5_000);
        d.loss = bernoulli(p);
        d.delayed_ack = false;
        d.duration_s = duration_s;
        d.seed = seed;
        d.record = false;
        let mut sim = sim_of(&with_mode(d.spec(), mode));
        sim.run_until(SimTime::from_secs_f64(duration_s));
        let s = sim.summary();
        goodput += s["flows"]["f0"]["goodput_bps"].as_f64().unwrap_or(0.0) / seeds as f64;
        spurious += count(&s, "f0", "spurious_retransmissions");
        timeouts += count(&s, "f0", "timeouts");
    }
    (goodput, spurious, timeouts)
}

#[test]
fn reno_throughput_halves_when_the_rtt_doubles() {
    // Mathis et al.: throughput ~ MSS / (RTT sqrt(p)). With an RTO that
    // approaches the RTT, fast retransmits turn into spurious timeouts at
    // long RTTs and the ratio falls well below one half.
    for mode in ["reference", "linux"] {
        let (g100, sp100, _) = reno_with_loss(mode, 100.0, 0.005, 4, 300.0);
        let (g200, sp200, to200) = reno_with_loss(mode, 200.0, 0.005, 4, 300.0);
        let ratio = g200 / g100;
        assert!((0.45..=0.55).contains(&ratio), "{mode}: {g200} / {g100} = {ratio}");
        assert_eq!(sp100 + sp200, 0, "{mode}: spurious retransmissions ({to200} timeouts at 200 ms)");
    }
}

#[test]
fn each_drop_is_repaired_once_at_a_long_rtt() {
    // Ten reno flows at 120 ms base RTT through a BDP-sized queue: a fast
    // retransmission restarts the timer, so repairs do not time out.
    let bw = 10_000_000;
    let mut d = Dumbbell::new(10, bw, 60.0, bdp_pkts(bw, 120.0));
    d.duration_s = 120.0;
    d.record = false;
    for mode in ["reference", "linux"] {
        let mut sim = sim_of(&with_mode(d.spec(), mode));
        sim.run_until(SimTime::from_secs_f64(120.0));
        let s = sim.summary();
        let drops = s["links"]["bottleneck"]["a_to_b"]["drops"].as_u64().unwrap_or(0);
        let (mut rtx_bytes, mut timeouts, mut recoveries, mut spurious) = (0, 0, 0, 0);
        for i in 0..10 {
            let f = format!("f{i}");
            rtx_bytes += count(&s, &f, "retransmitted_bytes");
            timeouts += count(&s, &f, "timeouts");
            recoveries += count(&s, &f, "fast_recoveries");
            spurious += count(&s, &f, "spurious_retransmissions");
        }
        let rtx_per_drop = rtx_bytes as f64 / 1448.0 / drops as f64;
        assert!(drops > 100, "{mode}: {drops} drops");
        assert!((0.99..=1.01).contains(&rtx_per_drop), "{mode}: {rtx_per_drop} retransmissions per drop");
        assert_eq!(spurious, 0, "{mode}");
        assert!(timeouts * 20 <= recoveries, "{mode}: {timeouts} timeouts, {recoveries} fast recoveries");
    }
}

#[test]
fn a_burst_after_recovery_does_not_overflow_the_sender_s_own_queue() {
    // One cumulative ACK after a long recovery covers thousands of SACKed
    // segments; only what it newly delivers may grow the window, or the
    // burst overflows the sender's access queue.
    let bw = 1_000_000_000;
    let mut d = Dumbbell::new(4, bw, 10.0, bdp_pkts(bw, 20.0));
    d.duration_s = 10.0;
    d.record = false;
    for mode in ["reference", "linux"] {
        let mut spec = with_mode(d.spec(), mode);
        for l in spec["links"].as_array_mut().expect("links") {
            if l["name"].as_str().is_some_and(|n| n.starts_with('a')) {
                l["a_to_b"]["queue"] = serde_json::json!({"packets": 1000});
            }
        }
        let mut sim = sim_of(&spec);
        sim.run_until(SimTime::from_secs_f64(10.0));
        let s = sim.summary();
        for i in 0..4 {
            let drops = s["links"][format!("a{i}")]["a_to_b"]["drops"].as_u64().unwrap_or(0);
            assert_eq!(drops, 0, "{mode}: access link a{i}");
        }
    }
}

/// One reno download of `size_bytes` over a 10 ms RTT path losing 3 % of
/// data packets, in linux mode with RACK-TLP on or off: the summary.
fn lossy_linux_download(rack: bool, seed: u64, size_bytes: u64) -> Value {
    let mut d = Dumbbell::new(1, 100_000_000, 5.0, 5_000);
    d.loss = bernoulli(0.03);
    d.duration_s = 120.0;
    d.seed = seed;
    d.record = false;
    let mut spec = with_mode(d.spec(), "linux");
    spec["flows"][0]["app"] = download(Some(size_bytes));
    spec["flows"][0]["rack"] = rack.into();
    let mut sim = sim_of(&spec);
    sim.run_until(SimTime::from_secs_f64(120.0));
    sim.summary()
}

#[test]
fn rack_repairs_lost_retransmissions_without_timeouts_on_a_lossy_path() {
    // Reno at 3 % loss and 10 ms RTT: without RACK a lost retransmission
    // waits for the RTO (200 ms, 20 RTTs); with it, one RTT.
    let size = 20_000_000;
    let (mut timeouts, mut secs) = ([0u64; 2], [0.0f64; 2]);
    for seed in 1..=3 {
        for (k, rack) in [false, true].into_iter().enumerate() {
            let s = lossy_linux_download(rack, seed, size);
            let f = &s["flows"]["f0"];
            assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "rack {rack}: {f}");
            secs[k] += f["completion_time_s"].as_f64().unwrap_or_else(|| panic!("rack {rack}: unfinished {f}"));
            timeouts[k] += count(&s, "f0", "timeouts");
        }
    }
    println!("timeouts without / with RACK: {timeouts:?}; completion {secs:?} s");
    assert!(timeouts[1] * 5 <= timeouts[0], "timeouts without / with RACK: {timeouts:?}");
    assert!(secs[1] < secs[0], "completion without / with RACK: {secs:?} s");
}

/// The data sender's smoothed RTT over time, (time_s, srtt_s), from the
/// subflow trace.
fn sender_srtt_trace(sim: &Simulation) -> Vec<(f64, f64)> {
    use mpsim::report_column::Column;
    let traces = sim.traces();
    let t = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |name: &str| t.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("column");
    let (Column::F64(time), Column::Str(side), Column::F64(srtt)) = (col("time_s"), col("side"), col("srtt_s")) else {
        panic!("column types")
    };
    (0..time.len()).filter(|&i| side[i] == "server" && srtt[i].is_finite()).map(|i| (time[i], srtt[i])).collect()
}

/// A download through a 10 Mbit/s bottleneck with 100 ms of base RTT and
/// a 2,000-packet drop-tail queue (up to 2.4 s of queueing), which goes down
/// for 0.5 s at 20 s: the queue and everything in flight are lost, and the
/// RTT is back to 100 ms when the sender resends them. Linux mode,
/// timestamps on or off: the sender's SRTT every 50 ms, and the summary.
fn srtt_after_a_retransmission_burst(timestamps: bool) -> (Vec<(f64, f64)>, Value) {
    use common::testbed::{PS_PER_MS, PS_PER_S};
    let mut d = Dumbbell::new(1, 10_000_000, 50.0, 2000);
    d.duration_s = 30.0;
    let mut spec = with_mode(d.spec(), "linux");
    spec["flows"][0]["timestamps"] = timestamps.into();
    spec["sample_interval_ps"] = (50 * PS_PER_MS).into();
    spec["links"][0]["events"] = serde_json::json!([
        {"at_ps": 20 * PS_PER_S, "up": false},
        {"at_ps": 20_500 * PS_PER_MS, "up": true},
    ]);
    let mut sim = sim_of(&spec);
    sim.run_until(SimTime::from_secs_f64(30.0));
    (sender_srtt_trace(&sim), sim.summary())
}

/// When the SRTT first falls below 0.9 of its value at `t_s`, after `t_s`.
fn srtt_leaves_its_value_at(trace: &[(f64, f64)], t_s: f64) -> (f64, f64) {
    let (_, before) = *trace.iter().rev().find(|(t, _)| *t <= t_s).expect("a sample before");
    let (at, _) = *trace.iter().find(|(t, r)| *t > t_s && *r < 0.9 * before).expect("the SRTT falls");
    (before, at)
}

#[test]
fn timestamps_bring_the_srtt_back_soon_after_a_retransmission_burst() {
    // Item 5: without timestamps, Karn's rule gives no RTT sample while
    // every ACK covers resent data, so the SRTT stays at the bloated
    // queue's value (the issue saw 1.95 s for 55 s on a 100 ms path).
    // Echoed timestamps give a sample per ACK: the SRTT is back near the
    // 100 ms base RTT within a few RTTs, before the refilling queue
    // raises it again.
    let (with_ts, s) = srtt_after_a_retransmission_burst(true);
    let (without_ts, _) = srtt_after_a_retransmission_burst(false);
    assert!(count(&s, "f0", "retransmitted_bytes") > 1_000_000, "{}", path(&s, "f0"));
    let (bloated_s, moved_ts) = srtt_leaves_its_value_at(&with_ts, 20.5);
    let (_, moved_no_ts) = srtt_leaves_its_value_at(&without_ts, 20.5);
    assert!(bloated_s > 1.0, "SRTT before the outage {bloated_s} s");
    let soon: Vec<f64> = with_ts.iter().filter(|(t, _)| *t >= moved_ts && *t <= moved_ts + 0.5).map(|x| x.1).collect();
    let lowest = soon.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(lowest < 0.15, "with timestamps, lowest SRTT within 0.5 s of resending: {lowest} s ({soon:?})");
    println!("SRTT {bloated_s:.3} s leaves its value at {moved_ts:.2} s with timestamps, {moved_no_ts:.2} s without");
    assert!(moved_no_ts >= moved_ts + 1.0, "without timestamps the SRTT moved at {moved_no_ts} s, with them at {moved_ts} s");
    let later = without_ts.iter().filter(|(t, _)| *t >= moved_ts && *t <= moved_ts + 2.0);
    assert!(later.clone().all(|(_, r)| *r > 0.3), "without timestamps: {:?}", later.collect::<Vec<_>>());
}
