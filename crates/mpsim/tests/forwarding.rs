//! Forwarding end to end: ECMP spreads the subflows of one MPTCP
//! connection over equal-cost spines, and with rerouting a failed link is
//! routed around after the convergence delay.

mod common;

use common::testbed::{dir, download, link, no_loss, run, PS_PER_MS, PS_PER_S};
use serde_json::{json, Value};

/// client - leaf1 - {spine1, spine2} - leaf2 - server, 100 Mbps, 1 ms per
/// link; one MPTCP download with four ndiffports subflows.
fn leaf_spine(forwarding: &str, seed: u64) -> Value {
    let d = || dir(100_000_000, 1.0, 100, no_loss());
    let nodes = json!([
        {"name": "client", "kind": "host"}, {"name": "leaf1", "kind": "switch"},
        {"name": "spine1", "kind": "switch"}, {"name": "spine2", "kind": "switch"},
        {"name": "leaf2", "kind": "switch"}, {"name": "server", "kind": "host"}]);
    let links = vec![
        link("c", "client", "leaf1", d(), d()),
        link("l1s1", "leaf1", "spine1", d(), d()),
        link("l1s2", "leaf1", "spine2", d(), d()),
        link("s1l2", "spine1", "leaf2", d(), d()),
        link("s2l2", "spine2", "leaf2", d(), d()),
        link("s", "leaf2", "server", d(), d()),
    ];
    let flow = json!({"name": "mp", "transport": "mptcp", "client": "client", "server": "server",
        "app": download(None), "start_ps": 0, "cc": "lia", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20,
        "path_manager": "ndiffports", "subflows": 4, "scheduler": "default"});
    json!({"name": "leaf-spine", "seed": seed, "duration_ps": PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": [flow],
           "forwarding": forwarding, "record": {"interfaces": true, "subflows": true, "pcap": []}})
}

/// Data bytes (server to client) that crossed each spine.
fn spine_bytes(summary: &Value) -> [u64; 2] {
    let bytes = |l: &str| summary["links"][l]["b_to_a"]["bytes"].as_u64().expect("link bytes");
    [bytes("s1l2"), bytes("s2l2")]
}

#[test]
fn shortest_forwarding_leaves_the_second_spine_idle() {
    let (_, s) = run(&leaf_spine("shortest", 1)).expect("spec builds");
    let [one, two] = spine_bytes(&s);
    assert!(one > 1_000_000 && two == 0, "spine bytes {one} {two}");
}

#[test]
fn ecmp_spreads_ndiffports_subflows_over_both_spines() {
    for seed in 1..=3 {
        let (_, s) = run(&leaf_spine("ecmp", seed)).expect("spec builds");
        let [one, two] = spine_bytes(&s);
        let total = (one + two) as f64;
        assert!(one as f64 > 0.2 * total && two as f64 > 0.2 * total, "seed {seed}: spine bytes {one} {two}");
    }
}

#[test]
fn a_node_can_override_the_simulation_forwarding() {
    let mut spec = leaf_spine("ecmp", 1);
    spec["nodes"][1]["forwarding"] = json!("shortest"); // leaf1, where the upstream choice is made
    spec["nodes"][4]["forwarding"] = json!("shortest"); // leaf2, the data's first switch
    let (_, s) = run(&spec).expect("spec builds");
    assert_eq!(spine_bytes(&s)[1], 0);
}

/// client - r1 - r2 - r5 - server (short) and r1 - r3 - r4 - r5 (long),
/// 100 Mbps, 2 ms per link: a round trip of 16 ms on the short path. A
/// Reno download; link r1-r2 fails at 1 s (and comes back at `up_s`).
fn failover(reroute: bool, up_s: Option<f64>) -> Value {
    let d = || dir(100_000_000, 2.0, 100, no_loss());
    let nodes: Vec<Value> = ["client", "r1", "r2", "r3", "r4", "r5", "server"]
        .iter()
        .map(|n| json!({"name": n, "kind": if n.starts_with('r') { "router" } else { "host" }}))
        .collect();
    let mut links = vec![
        link("c", "client", "r1", d(), d()),
        link("r1r2", "r1", "r2", d(), d()),
        link("r2r5", "r2", "r5", d(), d()),
        link("r1r3", "r1", "r3", d(), d()),
        link("r3r4", "r3", "r4", d(), d()),
        link("r4r5", "r4", "r5", d(), d()),
        link("s", "r5", "server", d(), d()),
    ];
    let mut events = vec![json!({"at_ps": PS_PER_S, "up": false})];
    if let Some(t) = up_s {
        events.push(json!({"at_ps": (t * PS_PER_S as f64) as u64, "up": true}));
    }
    links[1]["events"] = json!(events);
    let flow = json!({"name": "f", "transport": "tcp", "client": "client", "server": "server",
        "app": download(None), "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20,
        "min_rto_ps": 200 * PS_PER_MS, "initial_cwnd_pkts": 10});
    json!({"name": "failover", "seed": 1, "duration_ps": 3 * PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": [flow],
           "reroute": reroute, "reroute_delay_ps": 50 * PS_PER_MS,
           "record": {"interfaces": true, "subflows": true, "pcap": []}})
}

/// Bytes delivered to the client every millisecond from `from_ms` to `to_ms`.
fn delivered_per_ms(sim: &mut mpsim::Simulation, from_ms: u64, to_ms: u64) -> Vec<(u64, u64)> {
    (from_ms..=to_ms)
        .map(|ms| {
            sim.run_until(mpsim::SimTime(ms * PS_PER_MS));
            (ms, sim.summary()["flows"]["f"]["bytes_delivered"].as_u64().expect("bytes delivered"))
        })
        .collect()
}

/// The first millisecond after the failure at which delivery grew past
/// what had arrived one round trip after the failure (what was past the
/// failed link by then).
fn resumed_ms(spec: &Value) -> Option<u64> {
    let mut sim = mpsim::Simulation::from_json(&spec.to_string()).expect("spec builds");
    let samples = delivered_per_ms(&mut sim, 1000, 2000);
    let settled = samples.iter().find(|&&(ms, _)| ms == 1016).map(|&(_, b)| b)?;
    samples.iter().find(|&&(ms, b)| ms > 1016 && b > settled).map(|&(ms, _)| ms)
}

#[test]
fn with_rerouting_traffic_resumes_within_the_convergence_delay_plus_one_rto() {
    let resumed = resumed_ms(&failover(true, None)).expect("traffic resumes");
    // Failure at 1,000 ms; routes converge 50 ms later; the sender's
    // retransmission timer (200 ms with a 16 ms round trip) fires at most
    // 200 ms after the last ACK it got, and its segment needs half a round
    // trip (over the 5-hop detour, 10 ms) to arrive.
    let bound = 1000 + 50 + 200 + 16 + 10;
    assert!(resumed <= bound, "resumed at {resumed} ms, bound {bound} ms");
    assert!(resumed >= 1050, "resumed at {resumed} ms, before the routes converged");
}

#[test]
fn without_rerouting_a_failed_link_stops_traffic() {
    assert_eq!(resumed_ms(&failover(false, None)), None);
}

#[test]
fn routes_return_to_a_link_that_comes_back_up() {
    let (_, s) = run(&failover(true, Some(1.5))).expect("spec builds");
    let bytes = |l: &str| s["links"][l]["b_to_a"]["bytes"].as_u64().expect("link bytes");
    // Data (server to client) took the detour while r1-r2 was down and
    // the short path again after it came back.
    assert!(bytes("r3r4") > 1_000_000, "detour carried {} bytes", bytes("r3r4"));
    let (_, long_only) = run(&failover(true, None)).expect("spec builds");
    let detour_only = long_only["links"]["r3r4"]["b_to_a"]["bytes"].as_u64().expect("link bytes");
    assert!(bytes("r3r4") < detour_only / 2, "detour {} bytes with recovery, {detour_only} without", bytes("r3r4"));
}

#[test]
fn record_paths_lists_the_links_each_subflow_crossed() {
    let mut spec = leaf_spine("ecmp", 1);
    let (_, plain) = run(&spec).expect("spec builds");
    assert!(plain.get("paths").is_none(), "off by default");
    spec["record"]["paths"] = json!(true);
    let (_, s) = run(&spec).expect("spec builds");
    let paths = s["paths"].as_array().expect("a paths section");
    let names = |p: &Value| -> Vec<String> {
        p["links"].as_array().expect("links").iter().map(|l| l.as_str().expect("a name").to_string()).collect()
    };
    // The data of each subflow: from the server's interface to the client's.
    let data: Vec<Vec<String>> = paths.iter().filter(|p| p["src"] == "server:s").map(names).collect();
    assert_eq!(data.len(), 4, "one 5-tuple per subflow: {paths:?}");
    for p in &data {
        assert_eq!(p.len(), 4, "server link, a spine's two links, client link: {p:?}");
        assert!(p[0] == "s" && p[3] == "c");
    }
    let via_two = data.iter().filter(|p| p[1] == "s2l2").count();
    assert!((1..4).contains(&via_two), "both spines carry subflows: {data:?}");
    assert!(paths.iter().all(|p| p["flow"] == "mp" && p["proto"] == "tcp"));
    // Recording does not change the run.
    assert_eq!(s["links"], plain["links"]);
}

/// SCTP packets are hashed and recorded with their own protocol number
/// (132), not as UDP.
#[test]
fn record_paths_names_the_protocol_of_an_sctp_association() {
    let mut spec = leaf_spine("ecmp", 1);
    spec["flows"] = json!([{"name": "sc", "transport": "cmt", "client": "client", "server": "server",
        "app": download(Some(200_000)), "start_ps": 0, "cc": "reno", "rcvbuf_bytes": 1u64 << 20,
        "variant": "cmt", "rbuf_bytes": 64_000}]);
    spec["record"]["paths"] = json!(true);
    let (_, s) = run(&spec).expect("spec builds");
    let paths = s["paths"].as_array().expect("a paths section");
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| p["flow"] == "sc" && p["proto"] == "sctp"), "{paths:?}");
}

/// client - r1 - {m1, m2} - r2 - server, 100 Mbps, 1 ms per link: two
/// equal paths, the tables take m1 (the lower link index).
fn diamond(flow: Value) -> Value {
    let d = || dir(100_000_000, 1.0, 100, no_loss());
    let nodes: Vec<Value> = ["client", "r1", "m1", "m2", "r2", "server"]
        .iter()
        .map(|n| json!({"name": n, "kind": if n.contains('1') || n.contains('2') { "router" } else { "host" }}))
        .collect();
    let links = vec![
        link("c", "client", "r1", d(), d()),
        link("r1m1", "r1", "m1", d(), d()),
        link("m1r2", "m1", "r2", d(), d()),
        link("r1m2", "r1", "m2", d(), d()),
        link("m2r2", "m2", "r2", d(), d()),
        link("s", "r2", "server", d(), d()),
    ];
    json!({"name": "diamond", "seed": 1, "duration_ps": PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": [flow],
           "record": {"interfaces": true, "subflows": true, "pcap": []}})
}

fn bytes_both_ways(s: &Value, l: &str) -> u64 {
    ["a_to_b", "b_to_a"].iter().map(|d| s["links"][l][d]["bytes"].as_u64().expect("link bytes")).sum()
}

#[test]
fn a_pinned_path_moves_a_tcp_flow_off_the_shortest_path() {
    let flow = |paths: Value| {
        json!({"name": "f", "transport": "tcp", "client": "client", "server": "server", "app": download(None),
               "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20, "paths": paths})
    };
    let (_, s) = run(&diamond(flow(Value::Null))).expect("spec builds");
    assert!(bytes_both_ways(&s, "m1r2") > 1_000_000 && bytes_both_ways(&s, "m2r2") == 0);
    let (_, s) = run(&diamond(flow(json!([["c", "r1m2", "m2r2", "s"]])))).expect("spec builds");
    assert!(bytes_both_ways(&s, "m2r2") > 1_000_000, "{}", s["links"]);
    assert_eq!(bytes_both_ways(&s, "m1r2") + bytes_both_ways(&s, "r1m1"), 0, "data and ACKs follow the pin");
}

#[test]
fn pinned_paths_put_each_subflow_on_its_own_path() {
    let flow = json!({"name": "mp", "transport": "mptcp", "client": "client", "server": "server",
        "app": download(None), "start_ps": 0, "cc": "lia", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20,
        "path_manager": "ndiffports", "subflows": 2, "scheduler": "default",
        "paths": [["c", "r1m1", "m1r2", "s"], ["c", "r1m2", "m2r2", "s"]]});
    let (_, s) = run(&diamond(flow)).expect("spec builds");
    let (one, two) = (bytes_both_ways(&s, "m1r2"), bytes_both_ways(&s, "m2r2"));
    assert!(one > 1_000_000 && two > 1_000_000, "m1 {one}, m2 {two}");
}

#[test]
fn a_path_that_does_not_join_client_and_server_is_refused() {
    let flow = |path: Value| {
        json!({"name": "f", "transport": "tcp", "client": "client", "server": "server", "app": download(None),
               "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20, "paths": [path]})
    };
    for (path, why) in [
        (json!(["c", "m1r2", "s"]), "does not continue"),
        (json!(["c", "r1m1"]), "not at the server"),
        (json!(["c", "nope"]), "unknown link"),
        (json!(["c", "r1m1", "r1m1"]), "twice"),
    ] {
        let err = mpsim::Simulation::from_json(&diamond(flow(path.clone())).to_string()).err().expect("refused");
        assert!(err.to_string().contains(why), "{path}: {err}");
    }
}

/// A connected random network of `n` forwarding nodes (a random tree plus
/// `extra` links, parallel ones allowed) with a client and a server on
/// random nodes, each node in its own mode; a 200 KB TCP download.
fn random_network(n: usize, parents: &[usize], extra: &[(usize, usize)], ecmp: &[bool], ends: (usize, usize)) -> Value {
    let d = || dir(100_000_000, 0.5, 1000, no_loss());
    let mut nodes = vec![json!({"name": "client", "kind": "host"}), json!({"name": "server", "kind": "host"})];
    for (i, &e) in ecmp.iter().enumerate().take(n) {
        let kind = if i % 2 == 0 { "switch" } else { "router" };
        nodes.push(json!({"name": format!("n{i}"), "kind": kind, "forwarding": if e { "ecmp" } else { "shortest" }}));
    }
    let mut links = vec![];
    for i in 1..n {
        links.push(link(&format!("t{i}"), &format!("n{}", parents[i - 1] % i), &format!("n{i}"), d(), d()));
    }
    for (k, &(a, b)) in extra.iter().enumerate() {
        if a % n != b % n {
            links.push(link(&format!("x{k}"), &format!("n{}", a % n), &format!("n{}", b % n), d(), d()));
        }
    }
    links.push(link("c", "client", &format!("n{}", ends.0 % n), d(), d()));
    links.push(link("s", &format!("n{}", ends.1 % n), "server", d(), d()));
    let flow = json!({"name": "f", "transport": "tcp", "client": "client", "server": "server",
        "app": download(Some(200_000)), "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 16u64 << 20});
    json!({"name": "random", "seed": 1, "duration_ps": 2 * PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": [flow],
           "record": {"interfaces": true, "subflows": true, "pcap": []}})
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// On random connected networks with any mix of shortest and ECMP
    /// nodes, a download completes with nothing lost and nothing resent: no
    /// packet loops or finds no route.
    #[test]
    fn every_forwarding_mode_delivers_on_random_networks(
        n in 2usize..9,
        parents in proptest::collection::vec(0usize..8, 8),
        extra in proptest::collection::vec((0usize..8, 0usize..8), 0..8),
        ecmp in proptest::collection::vec(proptest::bool::ANY, 8),
        ends in (0usize..8, 0usize..8),
    ) {
        let (_, s) = run(&random_network(n, &parents, &extra, &ecmp, ends)).expect("spec builds");
        let f = &s["flows"]["f"];
        proptest::prop_assert_eq!(f["bytes_delivered"].as_u64(), Some(200_000));
        proptest::prop_assert!(f["completion_time_s"].as_f64().is_some());
        proptest::prop_assert_eq!(f["retransmitted_bytes"].as_u64(), Some(0));
        let drops: u64 = s["links"].as_object().expect("links").values()
            .flat_map(|l| [l["a_to_b"]["drops"].as_u64(), l["b_to_a"]["drops"].as_u64()])
            .map(|d| d.unwrap_or(0)).sum();
        proptest::prop_assert_eq!(drops, 0);
    }
}

/// The longest time, in ms, during which delivery did not grow, sampled
/// every millisecond until the flow completed.
fn longest_stall_ms(spec: &Value) -> (u64, bool) {
    let mut sim = mpsim::Simulation::from_json(&spec.to_string()).expect("spec builds");
    let (mut last_bytes, mut last_change, mut longest) = (0, 0, 0);
    for ms in 1..=2000 {
        sim.run_until(mpsim::SimTime(ms * PS_PER_MS));
        let f = &sim.summary()["flows"]["f"];
        let bytes = f["bytes_delivered"].as_u64().expect("bytes delivered");
        if bytes != last_bytes {
            longest = longest.max(ms - last_change);
            (last_bytes, last_change) = (bytes, ms);
        }
        if f["completion_time_s"].as_f64().is_some() {
            return (longest, true);
        }
    }
    (longest, false)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, ..Default::default() })]

    /// With rerouting, a link outside the random tree failing in the
    /// middle of a download stalls it for at most the convergence delay
    /// plus one RTO (and the round trips around them), and it completes.
    #[test]
    fn with_rerouting_a_failure_on_random_networks_stalls_at_most_delay_plus_rto(
        n in 3usize..9,
        parents in proptest::collection::vec(0usize..8, 8),
        extra in proptest::collection::vec((0usize..8, 0usize..8), 1..6),
        ecmp in proptest::collection::vec(proptest::bool::ANY, 8),
        ends in (0usize..8, 0usize..8),
        fail in 0usize..6,
    ) {
        let mut spec = random_network(n, &parents, &extra, &ecmp, ends);
        let name = format!("x{}", fail % extra.len());
        let Some(l) = spec["links"].as_array_mut().expect("links").iter_mut().find(|l| l["name"] == name.as_str()) else {
            return Ok(()); // that extra link joined a node to itself and was left out
        };
        l["events"] = json!([{"at_ps": 20 * PS_PER_MS, "up": false}]);
        spec["reroute"] = json!(true);
        spec["reroute_delay_ps"] = json!(50 * PS_PER_MS);
        spec["flows"][0]["app"] = download(Some(3_000_000));
        spec["flows"][0]["min_rto_ps"] = json!(200 * PS_PER_MS);
        let (stall, done) = longest_stall_ms(&spec);
        proptest::prop_assert!(done, "the download did not complete");
        // At most 10 hops of 0.5 ms each way: round trips under 10 ms.
        proptest::prop_assert!(stall <= 50 + 200 + 2 * 10 + 2, "stalled {stall} ms");
    }
}
