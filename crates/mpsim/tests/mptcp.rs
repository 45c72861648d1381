//! Multipath TCP acceptance: the three design goals of RFC 6356, handover,
//! fallback and determinism. Figures are reported in docs/validation.md
//! (`cargo run --release -p mpsim --example validation_mptcp`).

mod common;

use common::multipath::{goal1, goal2, goal3};
use common::testbed::{bernoulli, dir, download, link, no_loss, run, TwoPath, PS_PER_MS, PS_PER_S};
use mpsim::report_column::Column;
use serde_json::{json, Value};

#[test]
fn goal1_coupled_controllers_use_both_paths() {
    for cc in ["lia", "olia", "balia"] {
        let g = goal1(cc, "reference", 60.0, 1);
        assert!(g.ratio() >= 1.8, "{g:?} ratio {}", g.ratio());
    }
    // Uncoupled subflows each take what a TCP flow gets on its path. The
    // sum's ratio to the best TCP (1.89 here) also depends on which path
    // takes the slow-start timeouts, each costing about a second at the
    // reference mode's 1 s minimum RTO, so each path is compared instead.
    let g = goal1("cubic", "reference", 60.0, 1);
    assert!(g.ratio() >= 1.8, "{g:?} ratio {}", g.ratio());
    for &bps in &g.per_path_bps {
        assert!(bps >= 0.9 * g.tcp_best_bps, "{g:?}");
    }
}

#[test]
fn goal2_coupled_controllers_take_one_share_at_a_shared_bottleneck() {
    for cc in ["lia", "olia", "balia"] {
        let g = goal2(cc, "reference", 10, 120.0, 0.5);
        // The acceptance figure is the mean over the seeds; single seeds
        // are reported in docs/validation.md.
        assert!((0.40..=0.60).contains(&g.mean()), "{g:?}");
    }
    // Uncoupled subflows take two TCP shares of three.
    let g = goal2("reno", "reference", 10, 120.0, 0.5);
    assert!(g.mean() > 0.6, "{g:?}");
}

#[test]
fn goal3_coupled_controllers_move_traffic_to_the_idle_path() {
    for cc in ["lia", "olia", "balia"] {
        let g = goal3(cc, "reference", 60.0, 1);
        assert!(g.idle_fraction() > 0.8, "{g:?}");
    }
}

fn two_path_transfer(size_bytes: u64, backup_p2: bool) -> TwoPath {
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 30.0]);
    t.duration_s = 120.0;
    let mut f = TwoPath::mptcp_flow("mp", "lia", download(Some(size_bytes)));
    if backup_p2 {
        f["backup_interfaces"] = json!(["p2"]);
    }
    t.flows = vec![f];
    t
}

/// Seconds after `at_s` until the connection delivers data again (100 ms samples).
fn resume_after(spec: &Value, at_s: f64) -> (f64, Value) {
    let mut spec = spec.clone();
    spec["sample_interval_ps"] = json!(100 * PS_PER_MS);
    let (sim, s) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let flows = &traces.iter().find(|(n, _)| n == "flows").expect("flows table").1;
    let col = |name: &str| flows.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("column");
    let (mpsim::report_column::Column::F64(t), mpsim::report_column::Column::F64(g)) = (col("time_s"), col("goodput_bps")) else {
        panic!("column types");
    };
    let resumed = t.iter().zip(&g).find(|(&ts, &gp)| ts > at_s + 0.1 && gp > 0.0).map_or(f64::INFINITY, |(ts, _)| ts - at_s);
    (resumed, s)
}

fn with_down_at(mut spec: Value, link: usize, at_s: f64) -> Value {
    spec["links"][link]["events"] = json!([{"at_ps": (at_s * PS_PER_S as f64) as u64, "up": false}]);
    spec
}

#[test]
fn handover_to_a_backup_path_when_the_active_one_fails() {
    for scheduler in ["default", "upstream"] {
        let mut t = two_path_transfer(60_000_000, true);
        t.flows[0]["scheduler"] = json!(scheduler);
        let spec = with_down_at(t.spec(), 0, 30.0);
        let (gap_s, s) = resume_after(&spec, 30.0);
        let f = &s["flows"]["mp"];
        assert_eq!(f["bytes_delivered"].as_u64(), Some(60_000_000), "{scheduler}: {f}");
        assert!(f["completion_time_s"].is_number());
        // 1 s plus one RTO (200 ms minimum), at 100 ms sampling.
        assert!(gap_s <= 1.3, "{scheduler}: traffic resumed {gap_s} s after the failure: {f}");
        let subs = f["subflows"].as_array().expect("subflows");
        let on = |iface: &str| {
            subs.iter()
                .filter(|x| x["client_interface"] == iface)
                .map(|x| x["bytes_delivered"].as_u64().unwrap_or(0))
                .sum::<u64>()
        };
        // The backup path carries nothing while the regular one works.
        assert!(on("p1") > 20_000_000 && on("p2") > 20_000_000, "{scheduler}: {f}");
        assert!(subflow_bytes_between_iface(&spec, "p2", 1.0, 29.0) == 0, "{scheduler}: backup used before the failure");
    }
}

/// Payload bytes the subflow on client interface `iface` delivered between two times.
fn subflow_bytes_between_iface(spec: &Value, iface: &str, from_s: f64, to_s: f64) -> i64 {
    let (sim, s) = run(spec).expect("spec builds");
    let subs = s["flows"]["mp"]["subflows"].as_array().expect("subflows");
    let k = subs.iter().position(|x| x["client_interface"] == iface).expect("a subflow on the interface");
    subflow_bytes_between(&sim, k as i64, from_s, to_s)
}

#[test]
fn the_upstream_scheduler_keeps_every_uncoupled_subflow_busy() {
    // Uncoupled subflows each fill their own path when the scheduler hands
    // every one of them enough data: the burst and the send buffer keep the
    // slower path's queue from running dry.
    let bw = [10_000_000, 4_000_000];
    let mut t = TwoPath::new(bw, [10.0, 25.0]);
    t.duration_s = 30.0;
    let mut f = TwoPath::mptcp_flow("mp", "cubic", download(None));
    f["scheduler"] = json!("upstream");
    t.flows = vec![f];
    let (_, s) = run(&t.spec()).expect("spec builds");
    let f = &s["flows"]["mp"];
    let subs = f["subflows"].as_array().expect("subflows");
    assert_eq!(subs.len(), 2, "{f}");
    for (x, &b) in subs.iter().zip(&bw) {
        let g = x["goodput_bps"].as_f64().unwrap_or(0.0);
        assert!(g > 0.85 * common::testbed::payload_capacity_bps(b), "{f}");
    }
}

#[test]
fn a_failure_inside_the_network_is_survived_by_rto_and_reinjection() {
    let t = two_path_transfer(60_000_000, false);
    // The router side of p2 fails: the client's interface stays up.
    let mut spec = t.spec();
    spec["links"][1]["events"] = json!([{"at_ps": 10 * PS_PER_S, "up": false, "direction": "b_to_a"}]);
    let (sim, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(60_000_000), "{f}");
    assert!(f["subflows"].as_array().expect("subflows").iter().any(|x| x["reinjected_bytes"].as_u64().unwrap_or(0) > 0), "{f}");
    drop(sim);
}

#[test]
fn options_stripped_on_the_path_fall_back_to_tcp() {
    let mut t = two_path_transfer(5_000_000, false);
    t.duration_s = 30.0;
    let mut spec = t.spec();
    spec["links"][0]["strip_mptcp"] = json!(true);
    let (_, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    assert_eq!(f["fallback"], json!(true), "{f}");
    assert_eq!(f["bytes_delivered"].as_u64(), Some(5_000_000), "{f}");
    assert!(f["completion_time_s"].is_number());
    // A fallen-back connection is the initial subflow alone.
    assert_eq!(f["subflows"].as_array().map(|a| a.len()), Some(1), "{f}");
}

fn lossy(seed: u64) -> Value {
    let mut t = TwoPath::new([10_000_000, 5_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    t.seed = seed;
    t.loss = [bernoulli(0.01), bernoulli(0.005)];
    t.flows = vec![TwoPath::mptcp_flow("mp", "olia", download(None))];
    t.spec()
}

#[test]
fn same_seed_same_bytes_and_another_seed_differs() {
    let (a, sa) = run(&lossy(3)).expect("spec builds");
    let (b, sb) = run(&lossy(3)).expect("spec builds");
    let strip = |mut s: Value| {
        s["wall_time_s"] = json!(0);
        s.to_string()
    };
    assert_eq!(strip(sa.clone()), strip(sb));
    // Compared as printed: NaN (a column a transport does not report) is
    // not equal to itself.
    assert_eq!(format!("{:?}", a.traces()), format!("{:?}", b.traces()));
    let (_, sc) = run(&lossy(4)).expect("spec builds");
    assert_ne!(sa["flows"].to_string(), sc["flows"].to_string());
}

/// Bytes the sender's subflow `subflow` of flow "mp" delivered between `from_s` and `to_s`.
fn subflow_bytes_between(sim: &mpsim::Simulation, subflow: i64, from_s: f64, to_s: f64) -> i64 {
    let traces = sim.traces();
    let t = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |name: &str| t.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("column");
    let (Column::F64(time), Column::I64(sub), Column::Str(side), Column::I64(bytes)) =
        (col("time_s"), col("subflow"), col("side"), col("bytes_delivered"))
    else {
        panic!("column types");
    };
    let at = |x: f64| {
        (0..time.len())
            .filter(|&i| sub[i] == subflow && side[i] == "server" && time[i] <= x + 1e-9)
            .max_by(|&a, &b| time[a].total_cmp(&time[b]))
            .map_or(0, |i| bytes[i])
    };
    at(to_s) - at(from_s)
}

#[test]
fn mp_prio_moves_traffic_off_an_interface_made_backup_and_back() {
    let mut t = two_path_transfer(1, false);
    t.flows = vec![TwoPath::mptcp_flow("mp", "lia", download(None))];
    t.duration_s = 30.0;
    let mut spec = t.spec();
    // The client makes p2 a backup interface at 10 s and a regular one at 20 s;
    // the server, which sends, learns it only from MP_PRIO.
    spec["links"][1]["events"] = json!([
        {"at_ps": 10 * PS_PER_S, "backup": true},
        {"at_ps": 20 * PS_PER_S, "backup": false},
    ]);
    let (sim, s) = run(&spec).expect("spec builds");
    let before = subflow_bytes_between(&sim, 1, 2.0, 9.0);
    let during = subflow_bytes_between(&sim, 1, 11.0, 19.0);
    let after = subflow_bytes_between(&sim, 1, 22.0, 29.0);
    let p1_during = subflow_bytes_between(&sim, 0, 11.0, 19.0);
    // 10 Mbps for 7 s is 8.75 MB: each path carries most of that when regular.
    assert!(before > 5_000_000 && after > 5_000_000, "p2 before {before}, after {after}: {s}");
    assert!(during == 0, "p2 carried {during} bytes as a backup while p1 carried {p1_during}");
    assert!(p1_during > 5_000_000, "{p1_during}");
    let subs = s["flows"]["mp"]["subflows"].as_array().expect("subflows");
    assert!(subs.iter().all(|x| x["backup"] != json!(true)), "{s}");
}

/// A client with one interface and a server with two (`w1`, `w2`) behind a router.
fn multihomed_server(add_addr_timeout_s: Option<f64>, lose_server_to_client: (f64, f64)) -> Value {
    let d = |ms: f64| dir(10_000_000, ms, 100, no_loss());
    let mut links = vec![link("c", "client", "r", d(10.0), d(10.0)), link("w1", "r", "server", d(10.0), d(10.0))];
    links.push(link("w2", "r", "server", d(10.0), d(10.0)));
    let (from, to) = lose_server_to_client;
    links[1]["events"] = json!([
        {"at_ps": (from * PS_PER_S as f64) as u64, "direction": "b_to_a", "loss": bernoulli(1.0)},
        {"at_ps": (to * PS_PER_S as f64) as u64, "direction": "b_to_a", "loss": no_loss()},
    ]);
    let mut f = TwoPath::mptcp_flow("mp", "lia", download(None));
    if let Some(t) = add_addr_timeout_s {
        f["add_addr_timeout_ps"] = json!((t * PS_PER_S as f64) as u64);
    }
    client_router_server("multihomed", 10, links, f)
}

/// A spec of hosts `client` and `server` around router `r`, one flow.
fn client_router_server(name: &str, duration_s: u64, links: Vec<Value>, flow: Value) -> Value {
    json!({"name": name, "seed": 1, "duration_ps": duration_s * PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66,
           "nodes": [{"name": "client", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "server", "kind": "host"}],
           "links": links, "flows": [flow], "record": {"interfaces": false, "subflows": false, "pcap": []}})
}

#[test]
fn a_lost_add_addr_is_sent_again_until_echoed() {
    let subflows = |s: &Value| s["flows"]["mp"]["subflows"].as_array().map_or(0, |a| a.len());
    // Nothing lost: the ADD_ADDR for w2 is echoed and the client joins it.
    let (_, s) = run(&multihomed_server(None, (20.0, 20.0))).expect("spec builds");
    assert_eq!(subflows(&s), 2, "{s}");
    // Everything from the server is lost while it announces w2 (the third
    // ACK arrives at 60 ms): with Linux's 120 s timer nothing comes back in 10 s ...
    let (_, s) = run(&multihomed_server(None, (0.05, 0.5))).expect("spec builds");
    assert_eq!(subflows(&s), 1, "{s}");
    // ... with a 1 s timer the ADD_ADDR goes out again and the join follows.
    let (_, s) = run(&multihomed_server(Some(1.0), (0.05, 0.5))).expect("spec builds");
    assert_eq!(subflows(&s), 2, "{s}");
    assert!(s["flows"]["mp"]["bytes_delivered"].as_u64().unwrap_or(0) > 5_000_000, "{s}");
}

#[test]
fn a_small_send_buffer_limits_what_is_in_flight() {
    let goodput = |sndbuf: Option<u64>| {
        let mut t = two_path_transfer(20_000_000, false);
        t.duration_s = 60.0;
        if let Some(b) = sndbuf {
            t.flows[0]["sndbuf_bytes"] = json!(b);
        }
        let (_, s) = run(&t.spec()).expect("spec builds");
        let f = &s["flows"]["mp"];
        assert_eq!(f["bytes_delivered"].as_u64(), Some(20_000_000), "{f}");
        let secs = f["completion_time_s"].as_f64().expect("completes");
        20_000_000.0 * 8.0 / secs
    };
    let (unlimited, big, small) = (goodput(None), goodput(Some(1 << 20)), goodput(Some(32 << 10)));
    // 32 KiB is less than one path's bandwidth-delay product (10 Mbps x 60 ms = 75 KB).
    assert!(small < 0.6 * unlimited, "32 KiB: {small} bps, unlimited: {unlimited} bps");
    assert!(big > 0.9 * unlimited, "1 MiB: {big} bps, unlimited: {unlimited} bps");
}

#[test]
fn data_every_subflow_carried_is_retried_once_after_a_failure() {
    // The redundant scheduler sends everything on both paths; when p2 fails
    // its unacknowledged data has been on every subflow, so it is retried
    // once on p1 with a cleared path mask (spec 11.1) rather than dropped
    // from the reinjection queue.
    let mut t = two_path_transfer(10_000_000, false);
    t.flows[0]["scheduler"] = json!("redundant");
    let mut spec = t.spec();
    spec["links"][1]["events"] = json!([{"at_ps": 3 * PS_PER_S, "up": false, "direction": "b_to_a"}]);
    let (_, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(10_000_000), "{f}");
    // Every byte went on p1 once; the retried segments go there a second time.
    let p1 = f["subflows"][0]["bytes_delivered"].as_u64().unwrap_or(0);
    assert!(p1 > 10_000_000, "{f}");
}

#[test]
fn an_upload_uses_every_subflow() {
    // The client sends: it may use an MP_JOIN subflow only after the
    // server's fourth ACK (RFC 8684 3.2), which the server must send at once.
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 40.0]);
    t.duration_s = 30.0;
    t.flows = vec![TwoPath::mptcp_flow("mp", "lia", json!({"kind": "upload", "size_bytes": null}))];
    let (_, s) = run(&t.spec()).expect("spec builds");
    let f = &s["flows"]["mp"];
    let per_path: Vec<f64> =
        f["subflows"].as_array().expect("subflows").iter().map(|x| x["goodput_bps"].as_f64().unwrap_or(0.0)).collect();
    assert_eq!(per_path.len(), 2, "{f}");
    assert!(per_path.iter().all(|&g| g > 8_000_000.0), "{f}");
}

/// An MPTCP transfer running `app` over two 10 Mbps paths (10 and 30 ms
/// one-way) for `duration_s`, where `link` loses everything in direction
/// `dir` from `from_ms` for `len_ms`.
fn with_blackout(app: Value, link: usize, dir: &str, from_ms: u64, len_ms: u64, duration_s: f64) -> Value {
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 30.0]);
    t.duration_s = duration_s;
    t.flows = vec![TwoPath::mptcp_flow("mp", "lia", app)];
    let mut spec = t.spec();
    spec["links"][link]["events"] = json!([
        {"at_ps": from_ms * PS_PER_MS, "direction": dir, "loss": bernoulli(1.0)},
        {"at_ps": (from_ms + len_ms) * PS_PER_MS, "direction": dir, "loss": no_loss()},
    ]);
    spec
}

#[test]
fn a_lost_third_ack_of_an_mp_join_is_sent_again() {
    // Everything from the client on p2 is lost from 60 to 130 ms, when the
    // MP_JOIN's third ACK goes out (SYN at about 40 ms, 60 ms round trip).
    // Without a retransmission the subflow never becomes usable (spec 5).
    assert_joined_subflow_carries_data(&with_blackout(download(None), 1, "a_to_b", 60, 70, 20.0));
}

/// The MP_JOIN subflow (on p2) ends up carrying more than 8 Mbps.
fn assert_joined_subflow_carries_data(spec: &Value) {
    let (_, s) = run(spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    let p2 = f["subflows"][1]["goodput_bps"].as_f64().unwrap_or(0.0);
    assert!(p2 > 8_000_000.0, "{f}");
}

#[test]
fn a_lost_fourth_ack_is_sent_again_when_the_third_comes_again() {
    // An upload: the server sends nothing on the joined subflow but its
    // fourth ACK, lost here (everything towards the client on p2 is lost
    // from 90 to 400 ms); the client's repeated third ACK must get another.
    let upload = json!({"kind": "upload", "size_bytes": null});
    assert_joined_subflow_carries_data(&with_blackout(upload, 1, "b_to_a", 90, 310, 20.0));
}

#[test]
fn handshake_losses_never_leave_a_subflow_unusable() {
    // Every direction of both paths loses everything for a while, at the
    // moments of the MP_CAPABLE and MP_JOIN handshakes (SYN, SYN/ACK, third
    // and fourth ACKs, ADD_ADDR) and for longer spells: both subflows end up
    // carrying data, in downloads and uploads, and nothing falls back.
    let mut failures = vec![];
    for kind in ["download", "upload"] {
        for link in [0usize, 1] {
            for dir in ["a_to_b", "b_to_a"] {
                for (from_ms, len_ms) in [(0u64, 25u64), (15, 30), (30, 50), (50, 60), (80, 100), (0, 300), (100, 1500)] {
                    let app = json!({"kind": kind, "size_bytes": 20_000_000u64});
                    let (_, s) = run(&with_blackout(app, link, dir, from_ms, len_ms, 30.0)).expect("spec builds");
                    let f = &s["flows"]["mp"];
                    let carrying = f["subflows"]
                        .as_array()
                        .map_or(0, |a| a.iter().filter(|x| x["bytes_delivered"].as_u64().unwrap_or(0) > 3_000_000).count());
                    if f["bytes_delivered"].as_u64() != Some(20_000_000) || carrying < 2 || f["fallback"] != json!(false) {
                        failures.push(format!("{kind} link {link} {dir} {from_ms}+{len_ms} ms: {f}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Client `c1`, `c2` and server `w1`, `w2` interfaces around one router:
/// fullmesh opens four subflows (two after the server's ADD_ADDR).
fn both_multihomed(kind: &str, events_on: usize, events: Value) -> Value {
    let d = |ms: f64| dir(10_000_000, ms, 100, no_loss());
    let mut links = vec![
        link("c1", "client", "r", d(10.0), d(10.0)),
        link("c2", "client", "r", d(20.0), d(20.0)),
        link("w1", "r", "server", d(5.0), d(5.0)),
        link("w2", "r", "server", d(5.0), d(5.0)),
    ];
    links[events_on]["events"] = events;
    let f = TwoPath::mptcp_flow("mp", "lia", json!({"kind": kind, "size_bytes": 30_000_000u64}));
    client_router_server("both-multihomed", 120, links, f)
}

#[test]
fn four_subflows_between_multihomed_hosts_survive_an_interface_outage() {
    for kind in ["download", "upload"] {
        let (_, s) = run(&both_multihomed(kind, 0, json!([]))).expect("spec builds");
        let f = &s["flows"]["mp"];
        let subs = f["subflows"].as_array().expect("subflows");
        assert_eq!(subs.len(), 4, "{f}");
        assert!(subs.iter().all(|x| x["bytes_delivered"].as_u64().unwrap_or(0) > 3_000_000), "{f}");
        for l in 0..4 {
            let outage = json!([{"at_ps": 5 * PS_PER_S, "up": false}, {"at_ps": 8 * PS_PER_S, "up": true}]);
            let (_, s) = run(&both_multihomed(kind, l, outage)).expect("spec builds");
            let f = &s["flows"]["mp"];
            assert_eq!(f["bytes_delivered"].as_u64(), Some(30_000_000), "{kind}, link {l} down: {f}");
            let carrying = f["subflows"]
                .as_array()
                .map_or(0, |a| a.iter().filter(|x| x["bytes_delivered"].as_u64().unwrap_or(0) > 1_000_000).count());
            assert!(carrying >= 3, "{kind}, link {l} down: {f}");
        }
    }
}

/// Payload bytes the sender's subflows on client interface `iface`
/// delivered between two times, summed over every subflow opened there.
fn iface_bytes_between(sim: &mpsim::Simulation, summary: &Value, iface: &str, from_s: f64, to_s: f64) -> i64 {
    let subs = summary["flows"]["mp"]["subflows"].as_array().expect("subflows");
    (0..subs.len())
        .filter(|&k| subs[k]["client_interface"] == iface)
        .map(|k| subflow_bytes_between(sim, k as i64, from_s, to_s))
        .sum()
}

/// Wifi (`p1`, 10 Mbps) and 3G (`p2`, 2 Mbps) under path manager `pm`;
/// 3G goes down at 10, 30 and 50 s and comes back 10 s later each time.
fn flapping_3g(pm: &str) -> Value {
    let mut t = TwoPath::new([10_000_000, 2_000_000], [10.0, 40.0]);
    t.duration_s = 70.0;
    let mut f = TwoPath::mptcp_flow("mp", "cubic", download(None));
    f["path_manager"] = json!(pm);
    // As upstream Linux runs it: its timers (RTO >= SRTT + 200 ms) decide
    // how soon a subflow recovers after an outage.
    f["cc_mode"] = json!("linux");
    t.flows = vec![f];
    let mut spec = t.spec();
    let at = |s: u64| s * PS_PER_S;
    spec["links"][1]["events"] = json!([
        {"at_ps": at(10), "up": false}, {"at_ps": at(20), "up": true},
        {"at_ps": at(30), "up": false}, {"at_ps": at(40), "up": true},
        {"at_ps": at(50), "up": false}, {"at_ps": at(60), "up": true},
    ]);
    spec
}

#[test]
fn the_endpoints_path_manager_reuses_3g_after_every_return() {
    let (sim, s) = run(&flapping_3g("endpoints")).expect("spec builds");
    // 2 Mbps for 7 s is 1.75 MB.
    for (from, to) in [(2.0, 9.0), (22.0, 29.0), (42.0, 49.0), (62.0, 69.0)] {
        let b = iface_bytes_between(&sim, &s, "p2", from, to);
        assert!(b > 1_000_000, "3G carried {b} bytes from {from} to {to} s: {}", s["flows"]["mp"]);
    }
}

#[test]
fn endpoints_keep_a_stale_subflow_across_an_outage_and_fullmesh_replaces_it() {
    // Upstream Linux's in-kernel path manager leaves subflows alone when
    // an interface goes down (closing them is mptcpd's job): the 3G
    // subflow goes stale and recovers. The out-of-tree fullmesh closes it
    // and opens a new one when the interface returns.
    for (pm, p2_subflows) in [("endpoints", 1), ("fullmesh", 4)] {
        let (sim, s) = run(&flapping_3g(pm)).expect("spec builds");
        let f = &s["flows"]["mp"];
        let subs = f["subflows"].as_array().expect("subflows");
        let on_p2 = subs.iter().filter(|x| x["client_interface"] == "p2").count();
        assert_eq!(on_p2, p2_subflows, "{pm}: {f}");
        for (from, to) in [(24.0, 29.0), (44.0, 49.0), (64.0, 69.0)] {
            let b = iface_bytes_between(&sim, &s, "p2", from, to);
            assert!(b > 500_000, "{pm}: 3G carried {b} bytes from {from} to {to} s: {f}");
        }
    }
}

/// A client (`c1`, `c2`) and a server (`w1`, `w2`) joined by two disjoint
/// 10 Mbps paths, `c1`-`r1`-`w1` (10 ms each way) and `c2`-`r2`-`w2`
/// (20 ms): nothing routes between them. The server announces `w2`
/// (endpoints path manager, one ADD_ADDR accepted).
fn disjoint_paths(cc: &str) -> Value {
    let d = |ms: f64| dir(10_000_000, ms, 100, no_loss());
    let fast = || dir(1_000_000_000, 0.0, 1000, no_loss());
    let links = vec![
        link("c1", "client", "r1", d(10.0), d(10.0)),
        link("c2", "client", "r2", d(20.0), d(20.0)),
        link("w1", "r1", "server", fast(), fast()),
        link("w2", "r2", "server", fast(), fast()),
    ];
    let mut f = TwoPath::mptcp_flow("mp", cc, download(None));
    f["path_manager"] = json!("endpoints");
    f["max_add_addr_accepted"] = json!(1);
    json!({"name": "disjoint", "seed": 1, "duration_ps": 30 * PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1448, "header_bytes": 66,
           "nodes": [{"name": "client", "kind": "host"}, {"name": "r1", "kind": "router"},
                     {"name": "r2", "kind": "router"}, {"name": "server", "kind": "host"}],
           "links": links, "flows": [f], "record": {"interfaces": false, "subflows": false, "pcap": []}})
}

#[test]
fn a_server_announcing_its_second_address_over_disjoint_paths_gets_both_capacities() {
    // The subflow to the announced address leaves from the address routing
    // picks for it (c2), not from the initial one (which has no route).
    let one_path_bps = common::testbed::payload_capacity_bps(10_000_000);
    for cc in ["lia", "cubic"] {
        let (_, s) = run(&disjoint_paths(cc)).expect("spec builds");
        let f = &s["flows"]["mp"];
        let goodput = f["goodput_bps"].as_f64().unwrap_or(0.0);
        let subs = f["subflows"].as_array().expect("subflows");
        let via = |iface: &str| {
            subs.iter().filter(|x| x["client_interface"] == iface).map(|x| x["goodput_bps"].as_f64().unwrap_or(0.0)).sum::<f64>()
        };
        eprintln!(
            "{cc}: {goodput:.0} bps in all, {:.0} via c1, {:.0} via c2; one path carries {one_path_bps:.0}",
            via("c1"),
            via("c2")
        );
        assert!(goodput > 1.8 * one_path_bps, "{cc}: {f}");
        assert!(via("c2") > 0.8 * one_path_bps, "{cc}: {f}");
    }
}

#[test]
fn a_timeout_on_the_fast_path_puts_no_delivered_data_on_the_slow_one() {
    // 10 and 0.1 Mbps paths, uncoupled reno: the slow path's deep queue
    // holds back the DATA_ACK of much that the fast path delivered. The
    // fast path loses everything for 100 ms at 2 s and its subflow times
    // out: only what was outstanding on it may move to the slow path (RFC
    // 8684, Linux). That is data the fast subflow itself retransmits after
    // its RTO, so the slow path cannot carry more than that.
    for (scheduler, slow_queue_pkts) in [("upstream", 30), ("default", 100)] {
        let mut t = TwoPath::new([10_000_000, 100_000], [10.0, 40.0]);
        t.queue_pkts[1] = slow_queue_pkts;
        t.duration_s = 60.0;
        let mut f = TwoPath::mptcp_flow("mp", "reno", download(Some(20_000_000)));
        f["scheduler"] = json!(scheduler);
        t.flows = vec![f];
        let mut spec = t.spec();
        spec["links"][0]["events"] = json!([
            {"at_ps": 2 * PS_PER_S, "loss": bernoulli(1.0)},
            {"at_ps": 2 * PS_PER_S + 100 * PS_PER_MS, "loss": no_loss()},
        ]);
        let (_, s) = run(&spec).expect("spec builds");
        let f = &s["flows"]["mp"];
        let (fast, slow) = (&f["subflows"][0], &f["subflows"][1]);
        let reinjected = slow["reinjected_bytes"].as_u64().unwrap_or(0);
        let fast_retransmitted = fast["retransmitted_bytes"].as_u64().unwrap_or(0);
        eprintln!(
            "{scheduler}: slow path {reinjected} bytes reinjected, fast path {fast_retransmitted} retransmitted, completion {} s",
            f["completion_time_s"]
        );
        assert_eq!(f["bytes_delivered"].as_u64(), Some(20_000_000), "{f}");
        assert!(reinjected <= fast_retransmitted, "{scheduler}: {f}");
        if scheduler == "default" {
            assert!(reinjected > 0, "{scheduler}: {f}");
        }
    }
}

/// The upstream scheduler moves nothing on a subflow's timeout: its MPTCP
/// timer does, and p1 recovers from the outage before going stale. Late in
/// the transfer drop-tail loses p1's last segment, and nothing after it
/// brings duplicate ACKs. In linux mode the tail loss probe repairs it. In
/// reference mode p1's RTO does, 1 s later: the MPTCP timer runs for the
/// interval the scheduler set when it gave p1 the tail, the time then left
/// on p1's timer (`timer_ival`, `mptcp_reset_rtx_timer` in
/// net/mptcp/protocol.c), re-armed at the last DATA_ACK, so it fires after
/// p1's RTO, which has resent the tail by then. Nothing goes on p2.
#[test]
fn after_a_fast_path_outage_the_upstream_scheduler_reinjects_only_what_a_timer_finds_unrepaired() {
    let mut t = TwoPath::new([10_000_000, 100_000], [10.0, 40.0]);
    t.queue_pkts[1] = 30;
    t.duration_s = 60.0;
    let mut f = TwoPath::mptcp_flow("mp", "reno", download(Some(20_000_000)));
    f["scheduler"] = json!("upstream");
    t.flows = vec![f];
    let mut spec = t.spec();
    spec["links"][0]["events"] = json!([
        {"at_ps": 2 * PS_PER_S, "loss": bernoulli(1.0)},
        {"at_ps": 2 * PS_PER_S + 100 * PS_PER_MS, "loss": no_loss()},
    ]);
    for (mode, tail_bytes) in [("linux", 0), ("reference", 0)] {
        let mut spec = spec.clone();
        spec["flows"][0]["cc_mode"] = json!(mode);
        let (_, s) = run(&spec).expect("spec builds");
        let f = &s["flows"]["mp"];
        assert_eq!(f["bytes_delivered"].as_u64(), Some(20_000_000), "{mode}: {f}");
        assert_eq!(f["subflows"][1]["reinjected_bytes"].as_u64(), Some(tail_bytes), "{mode}: {f}");
    }
}

#[test]
fn opportunistic_retransmission_has_a_key_of_its_own() {
    // A 64 KiB receive buffer over 10 and 100 ms paths: the window blocks
    // while the slow path holds its head. Reinjection without loss is
    // opportunistic retransmission, whatever penalisation does.
    for (retransmit, penalise) in [(true, false), (false, true), (false, false), (true, true)] {
        let mut t = TwoPath::new([10_000_000, 10_000_000], [5.0, 50.0]);
        // Queues that never fill: no loss, no RTO, no reinjection after a failure.
        t.queue_pkts = [1000, 1000];
        t.duration_s = 20.0;
        let mut f = TwoPath::mptcp_flow("mp", "lia", download(None));
        f["rcvbuf_bytes"] = json!(64 << 10);
        f["scheduler"] = json!("roundrobin");
        f["opportunistic_retransmission"] = json!(retransmit);
        f["penalisation"] = json!(penalise);
        t.flows = vec![f];
        let (_, s) = run(&t.spec()).expect("spec builds");
        let f = &s["flows"]["mp"];
        let reinjected: u64 =
            f["subflows"].as_array().expect("subflows").iter().map(|x| x["reinjected_bytes"].as_u64().unwrap_or(0)).sum();
        assert_eq!(reinjected > 0, retransmit, "retransmit {retransmit}, penalise {penalise}: {f}");
    }
}

/// Goodput samples (time, bit/s) of the flow, every `interval_ms`.
fn flow_goodput_samples(spec: &Value, interval_ms: u64) -> (Vec<(f64, f64)>, Value) {
    let mut spec = spec.clone();
    spec["sample_interval_ps"] = json!(interval_ms * PS_PER_MS);
    let (sim, s) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let flows = &traces.iter().find(|(n, _)| n == "flows").expect("flows table").1;
    let col = |name: &str| flows.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("column");
    let (Column::F64(t), Column::F64(g)) = (col("time_s"), col("goodput_bps")) else { panic!("column types") };
    (t.into_iter().zip(g).collect(), s)
}

#[test]
fn after_a_path_failure_the_upstream_scheduler_retransmits_on_its_timer() {
    let mode = "linux";
    // Two 10 Mbps paths, uncoupled cubic as upstream Linux; p2 loses
    // everything from 10 s on (inside the network: no interface goes
    // down). Upstream Linux moves nothing when p2's subflow times out: its
    // MPTCP timer retransmits the oldest data on a subflow with empty
    // queues, and p2's data moves when p2 is stale, after more than 4
    // intervals without progress (`mptcp_pm_subflows_chk_stale`): five
    // intervals of at most p2's RTO (about 0.3 s). Linux 6.18 stalls
    // 0.4-0.85 s there; the model 1.25 s (kernel_differences.rs says why).
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    let mut f = TwoPath::mptcp_flow("mp", "cubic", download(None));
    f["scheduler"] = json!("upstream");
    f["cc_mode"] = json!(mode);
    t.flows = vec![f];
    let mut spec = t.spec();
    spec["links"][1]["events"] = json!([{"at_ps": 10 * PS_PER_S, "loss": bernoulli(1.0)}]);
    let (samples, s) = flow_goodput_samples(&spec, 50);
    let stalled: Vec<f64> = samples.iter().filter(|&&(t, g)| t > 10.0 && t <= 13.0 && g < 1_000_000.0).map(|&(t, _)| t).collect();
    let stall_s = stalled.len() as f64 * 0.05;
    let after: f64 = samples.iter().filter(|&&(t, _)| t > 15.0).map(|&(_, g)| g).sum::<f64>()
        / samples.iter().filter(|&&(t, _)| t > 15.0).count().max(1) as f64;
    eprintln!("stalled {stall_s:.2} s in 10-13 s ({stalled:?}); {after:.0} bps after 15 s; {}", s["flows"]["mp"]);
    assert!((0.35..=1.5).contains(&stall_s), "stalled {stall_s} s");
    assert!(after > 0.85 * common::testbed::payload_capacity_bps(10_000_000), "{after}");
}
