//! SDN end to end: switches forward by flow tables that the SdnController
//! fills on packet-ins. On the three-path testbed of Abu Mohsen's thesis
//! (its Fig. 5.3: P1 10 Mbps, P2 0.1 Mbps, P3 6 Mbps), `disjoint` spreads an
//! MPTCP connection's subflows over the three paths and `mpsshetn` refuses
//! the joins whose bandwidth gap is above the threshold, and the
//! connection completes without them.

mod common;

use common::testbed::{dir, download, link, no_loss, run, PS_PER_MS, PS_PER_S};
use serde_json::{json, Value};

/// client - s1 - {s2: P1, s3: P2, s4: P3} - s5 - server; access links 100 Mbps,
/// 1 ms per link. One MPTCP download of `size` with `subflows` ndiffports
/// subflows, or a TCP one with `subflows` 1.
fn testbed(app: Option<&str>, size: Option<u64>, subflows: u8) -> Value {
    let d = |mbps: f64| dir((mbps * 1e6) as u64, 1.0, 100, no_loss());
    let names = ["client", "s1", "s2", "s3", "s4", "s5", "server"];
    let nodes: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "kind": if n.starts_with('s') && *n != "server" { "switch" } else { "host" }}))
        .collect();
    let mut links = vec![link("c", "client", "s1", d(100.0), d(100.0))];
    for (p, mid, mbps) in [("p1", "s2", 10.0), ("p2", "s3", 0.1), ("p3", "s4", 6.0)] {
        links.push(link(&format!("{p}a"), "s1", mid, d(mbps), d(mbps)));
        links.push(link(&format!("{p}b"), mid, "s5", d(mbps), d(mbps)));
    }
    links.push(link("s", "s5", "server", d(100.0), d(100.0)));
    let mut flow = json!({"name": "f", "transport": "tcp", "client": "client", "server": "server",
        "app": download(size), "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 4u64 << 20});
    if subflows > 1 {
        flow["transport"] = json!("mptcp");
        flow["cc"] = json!("lia");
        flow["path_manager"] = json!("ndiffports");
        flow["subflows"] = json!(subflows);
    }
    let mut spec = json!({"name": "testbed", "seed": 1, "duration_ps": 20 * PS_PER_S, "sample_interval_ps": PS_PER_S,
        "mss_bytes": 1448, "header_bytes": 66, "nodes": nodes, "links": links, "flows": [flow],
        "record": {"interfaces": true, "subflows": true, "pcap": [], "paths": true, "controller": true}});
    if let Some(app) = app {
        spec["controller"] = json!({"app": app, "latency_ps": PS_PER_MS});
    }
    spec
}

/// Bytes that crossed both links of path `p` (`p1`, `p2`, `p3`), both ways.
fn path_bytes(s: &Value, p: &str) -> u64 {
    let one =
        |l: &str| -> u64 { ["a_to_b", "b_to_a"].iter().map(|d| s["links"][l][d]["bytes"].as_u64().expect("link bytes")).sum() };
    one(&format!("{p}a")) + one(&format!("{p}b"))
}

fn completion_s(s: &Value) -> f64 {
    s["flows"]["f"]["completion_time_s"].as_f64().expect("the download completes")
}

#[test]
fn mpsshetn_refuses_the_join_onto_the_slow_path_and_the_connection_completes() {
    let (_, s) = run(&testbed(Some("mpsshetn"), Some(2_000_000), 3)).expect("spec builds");
    completion_s(&s);
    assert_eq!(path_bytes(&s, "p2"), 0, "the 0.1 Mbps path carries nothing: {}", s["controller"]);
    assert!(path_bytes(&s, "p1") > 1_000_000 && path_bytes(&s, "p3") > 300_000, "{}", s["links"]);
    let c = &s["controller"];
    assert!(c["refused"].as_u64().expect("refused") >= 1, "{c}");
    let joins: Vec<&Value> = c["decisions"].as_array().expect("rows").iter().filter(|r| r["opening"] == "mp_join").collect();
    assert!(joins.iter().any(|r| r["links"].is_null()), "a refused join is traced: {c}");
    assert!(joins.iter().any(|r| r["links"] == json!(["c", "p3a", "p3b", "s"])), "{c}");
}

#[test]
fn mpsshetn_sends_a_short_transfer_on_the_reference_path_alone() {
    let (_, s) = run(&testbed(Some("mpsshetn"), Some(10_000), 3)).expect("spec builds");
    completion_s(&s);
    assert_eq!(path_bytes(&s, "p2") + path_bytes(&s, "p3"), 0, "gap threshold 0.0 below 50 KB");
    assert!(path_bytes(&s, "p1") > 10_000);
}

#[test]
fn disjoint_puts_each_subflow_on_its_own_path() {
    let (_, s) = run(&testbed(Some("disjoint"), Some(2_000_000), 3)).expect("spec builds");
    completion_s(&s);
    for p in ["p1", "p2", "p3"] {
        assert!(path_bytes(&s, p) > 10_000, "{p}: {}", path_bytes(&s, p));
    }
    // record.paths: the three client-to-server 5-tuples crossed three different middle links.
    let middles: std::collections::BTreeSet<String> = s["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .filter(|e| e["src"].as_str().is_some_and(|a| a.starts_with("client:")))
        .map(|e| e["links"][1].as_str().expect("a link").to_string())
        .collect();
    assert_eq!(middles.into_iter().collect::<Vec<_>>(), vec!["p1a", "p2a", "p3a"]);
}

#[test]
fn rules_installed_on_the_first_packet_carry_the_rest_without_the_controller() {
    let (_, s) = run(&testbed(Some("shortest"), Some(1_000_000), 1)).expect("spec builds");
    completion_s(&s);
    let c = &s["controller"];
    // One packet-in for the SYN at s1; its flow-mods install both ways on s1 and s5.
    assert_eq!(c["packet_ins"], 1, "{c}");
    assert_eq!(c["decisions"][0]["links"], json!(["c", "p1a", "p1b", "s"]));
    assert!(c["rules_at_end"].as_u64().expect("rules") >= 4, "{c}");
    assert!(path_bytes(&s, "p1") > 1_000_000);
}

#[test]
fn the_controller_latency_delays_the_first_packet_by_two_latencies() {
    let at = |latency_ms: u64| {
        let mut spec = testbed(Some("shortest"), Some(10_000), 1);
        spec["controller"]["latency_ps"] = json!(latency_ms * PS_PER_MS);
        completion_s(&run(&spec).expect("spec builds").1)
    };
    let (fast, slow) = (at(0), at(10));
    // Packet-in plus flow-mod at s1: 20 ms more; the SYN/ACK finds its rules at s5 already.
    assert!((slow - fast - 0.020).abs() < 0.001, "{fast} {slow}");
}

#[test]
fn a_switch_without_buffer_room_drops_every_packet_that_misses() {
    let mut spec = testbed(Some("shortest"), Some(100_000), 1);
    spec["controller"]["buffer_pkts"] = json!(0);
    let (_, s) = run(&spec).expect("spec builds");
    let c = &s["controller"];
    assert!(c["buffer_drops"].as_u64().expect("drops") >= 1, "{c}");
    assert!(s["flows"]["f"]["completion_time_s"].is_null(), "no packet ever reaches the controller");
}

#[test]
fn without_a_controller_switches_keep_the_static_tables() {
    let (_, with) = run(&testbed(None, Some(100_000), 1)).expect("spec builds");
    assert!(with.get("controller").is_none());
    assert!(path_bytes(&with, "p1") > 100_000);
}

#[test]
fn an_app_outside_the_engine_answers_packet_ins_between_slices() {
    let spec = testbed(Some("python:mymod:MyApp"), Some(500_000), 1);
    let mut sim = mpsim::Simulation::from_json(&spec.to_string()).expect("spec builds");
    let mut asked = Vec::new();
    while !sim.run_until(mpsim::SimTime(u64::MAX)) {
        for e in sim.sdn_packet_ins() {
            asked.push((e.switch.clone(), e.in_link.clone(), e.src.clone(), e.opening));
            let path: Vec<String> = ["c", "p3a", "p3b", "s"].iter().map(|l| l.to_string()).collect();
            sim.sdn_answer(e.id, Some(&path)).expect("a path from client to server");
        }
    }
    assert_eq!(asked, vec![("s1".to_string(), "c".to_string(), "client:c".to_string(), "first")]);
    let s = sim.summary();
    completion_s(&s);
    assert_eq!(path_bytes(&s, "p1"), 0);
    assert!(path_bytes(&s, "p3") > 500_000);
}

#[test]
fn an_answer_that_is_not_a_path_is_an_error_and_the_packet_is_refused() {
    let spec = testbed(Some("python:mymod:MyApp"), Some(500_000), 1);
    let mut sim = mpsim::Simulation::from_json(&spec.to_string()).expect("spec builds");
    sim.run_until(mpsim::SimTime(u64::MAX));
    let e = sim.sdn_packet_ins().pop().expect("the SYN asks");
    let err = sim.sdn_answer(e.id, Some(&["p1a".to_string()])).expect_err("not from the client");
    assert!(err.contains("does not continue the path"), "{err}");
    assert!(sim.sdn_answer(e.id, None).is_err(), "answered already");
}

#[test]
fn a_subflow_whose_rules_expired_keeps_its_path() {
    let mut spec = testbed(Some("disjoint"), Some(2_000_000), 3);
    // Rules expire between most packets: every one of them asks again.
    spec["controller"]["idle_timeout_ps"] = json!(PS_PER_MS / 2);
    let (_, s) = run(&spec).expect("spec builds");
    completion_s(&s);
    assert!(s["controller"]["packet_ins"].as_u64().expect("count") > 100, "{}", s["controller"]["packet_ins"]);
    for e in s["paths"].as_array().expect("paths") {
        let middles = e["links"].as_array().expect("links").iter().filter(|l| l != &"c" && l != &"s").count();
        assert_eq!(middles, 2, "one path per 5-tuple: {e}");
    }
}

fn rule(switch: &str, priority: u16, matches: Value, action: &str, links: &[&str]) -> Value {
    let mut r = json!({"switch": switch, "priority": priority, "action": action, "links": links});
    for (k, v) in matches.as_object().expect("an object") {
        r[k] = v.clone();
    }
    r
}

#[test]
fn static_rules_move_a_flow_off_the_shortest_path_without_a_controller() {
    let mut spec = testbed(None, Some(500_000), 1);
    spec["rules"] = json!([
        rule("s1", 10, json!({"dst": "server:s", "proto": 6}), "output", &["p3a"]),
        rule("s5", 10, json!({"dst": "client:c"}), "output", &["p3b"]),
    ]);
    let (_, s) = run(&spec).expect("spec builds");
    completion_s(&s);
    assert_eq!(path_bytes(&s, "p1"), 0);
    assert!(path_bytes(&s, "p3") > 500_000);
    assert!(s.get("controller").is_none(), "no controller ran");
}

#[test]
fn the_higher_priority_static_rule_wins_and_a_miss_follows_the_static_tables() {
    let mut spec = testbed(None, Some(500_000), 1);
    spec["rules"] = json!([
        rule("s1", 10, json!({"proto": 6, "dst": "server:s"}), "output", &["p3a"]),
        rule("s1", 20, json!({"dport": 49152, "in_link": "c"}), "output", &["p2a"]),
    ]);
    let (_, s) = run(&spec).expect("spec builds");
    completion_s(&s);
    // Client to server over P2 (the rule of priority 20); the ACKs' way back
    // has no table at s5 and no rule at s1: the static tables, P1.
    let one_way = |l: &str, d: &str| s["links"][l][d]["bytes"].as_u64().expect("bytes");
    assert!(one_way("p2a", "a_to_b") > 0 && one_way("p3a", "a_to_b") == 0);
    assert!(one_way("p1b", "b_to_a") > 500_000);
}

#[test]
fn a_drop_rule_stops_a_flow_and_a_bad_rule_is_refused_with_its_index() {
    let mut spec = testbed(None, Some(500_000), 1);
    spec["rules"] = json!([rule("s1", 1, json!({"src": "client:c"}), "drop", &[])]);
    let (_, s) = run(&spec).expect("spec builds");
    assert!(s["flows"]["f"]["completion_time_s"].is_null());
    spec["rules"] = json!([rule("s1", 1, json!({}), "drop", &[]), rule("s1", 1, json!({}), "output", &["p1b"])]);
    let err = run(&spec).err().expect("refused").to_string();
    assert!(err.contains("rule[1]") && err.contains("p1b"), "{err}");
    spec["rules"] = json!([rule("s1", 1, json!({}), "controller", &[])]);
    assert!(run(&spec).err().expect("refused").to_string().contains("needs a [controller]"));
}

#[test]
fn the_same_seed_gives_the_same_decisions_and_bytes() {
    let spec = testbed(Some("mpsshetn"), Some(2_000_000), 3);
    let strip = |mut s: Value| {
        s["wall_time_s"] = json!(0);
        s.to_string()
    };
    let a = strip(run(&spec).expect("spec builds").1);
    let b = strip(run(&spec).expect("spec builds").1);
    assert_eq!(a, b);
}
