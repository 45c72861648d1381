//! The engine under anything a scenario may ask for: random flows (every
//! transport and application) over two paths whose links change in every
//! way a link event can (down and up, rate, delay, loss, jitter, queue,
//! backup priority), in random order. Every run must finish without a
//! panic, deliver no more than was sent, and give the same summary again.

mod common;

use common::testbed::{run, TwoPath, PS_PER_MS};
use proptest::prelude::*;
use serde_json::{json, Value};

fn app() -> impl Strategy<Value = Value> {
    let sized = prop_oneof![Just(Value::Null), (1_000u64..2_000_000).prop_map(|b| json!(b))];
    prop_oneof![
        sized.clone().prop_map(|s| json!({"kind": "download", "size_bytes": s})),
        sized.prop_map(|s| json!({"kind": "upload", "size_bytes": s})),
        (proptest::collection::vec(100u64..200_000, 1..4), 1u32..5, 0u64..2_000, any::<bool>())
            .prop_map(|(sizes, repeat, gap_ms, new_connection)| json!({"kind": "http", "sizes_bytes": sizes, "repeat": repeat,
                "gap_ps": gap_ms * PS_PER_MS, "new_connection": new_connection, "request_bytes": 100})),
        (100_000u64..5_000_000, 100u32..1_500)
            .prop_map(|(rate, packet)| json!({"kind": "cbr", "rate_bps": rate, "packet_bytes": packet})),
        (100u64..3_000, 100u64..3_000).prop_map(|(on, off)| json!({"kind": "onoff", "on_ps": on * PS_PER_MS,
            "off_ps": off * PS_PER_MS, "inner": {"kind": "download", "size_bytes": null}})),
        (200_000u64..4_000_000, 500u64..4_000)
            .prop_map(|(rate, chunk)| json!({"kind": "video", "bitrate_bps": rate, "chunk_ps": chunk * PS_PER_MS})),
    ]
}

fn flow(i: usize) -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("tcp"), Just("mptcp"), Just("udp")],
        app(),
        prop_oneof![Just("reno"), Just("cubic"), Just("lia"), Just("olia"), Just("balia"), Just("wvegas")],
        prop_oneof![Just("default"), Just("roundrobin"), Just("redundant"), Just("upstream")],
        prop_oneof![Just("fullmesh"), Just("ndiffports"), Just("default"), Just("endpoints")],
        (0u64..5_000, proptest::option::of(1_000u64..20_000), any::<bool>(), any::<bool>()),
    )
        .prop_map(move |(transport, app, cc, scheduler, path_manager, (start_ms, stop_ms, sack, linux))| {
            let name = format!("f{i}");
            let is_cbr = app["kind"] == "cbr" || app["inner"]["kind"] == "cbr";
            let transport = if is_cbr {
                "udp"
            } else if transport == "udp" {
                "tcp"
            } else {
                transport
            };
            let mut f = if transport == "mptcp" {
                TwoPath::mptcp_flow(&name, cc, app)
            } else {
                let cc = if ["reno", "cubic"].contains(&cc) { cc } else { "reno" };
                TwoPath::tcp_flow(&name, cc, if i.is_multiple_of(2) { "p1" } else { "p2" }, app)
            };
            f["transport"] = json!(transport);
            f["start_ps"] = json!(start_ms * PS_PER_MS);
            f["stop_ps"] = json!(stop_ms.map(|s| (start_ms + s) * PS_PER_MS));
            if transport == "udp" {
                f.as_object_mut().map(|o| o.remove("cc"));
            } else {
                f["sack"] = json!(sack);
                f["cc_mode"] = json!(if linux { "linux" } else { "reference" });
            }
            if transport == "mptcp" {
                f["scheduler"] = json!(scheduler);
                f["path_manager"] = json!(path_manager);
            }
            f
        })
}

/// One link event: what it changes, on which link and direction, when.
fn event() -> impl Strategy<Value = (usize, Value)> {
    let change = prop_oneof![
        any::<bool>().prop_map(|up| json!({"up": up})),
        (100_000u64..50_000_000).prop_map(|bw| json!({"bandwidth_bps": bw})),
        (0u64..200).prop_map(|ms| json!({"delay_ps": ms * PS_PER_MS})),
        (0.0f64..0.3).prop_map(|p| json!({"loss": {"model": "bernoulli", "p": p}})),
        (0u64..20).prop_map(|ms| json!({"jitter_ps": ms * PS_PER_MS})),
        (1u32..200).prop_map(|n| json!({"queue": {"packets": n}})),
        (1_500u64..100_000).prop_map(|b| json!({"queue": {"bytes": b}})),
        any::<bool>().prop_map(|b| json!({"backup": b})),
    ];
    (0usize..2, prop_oneof![Just("both"), Just("a_to_b"), Just("b_to_a")], 0u64..25_000, change).prop_map(
        |(link, direction, at_ms, mut ev)| {
            ev["at_ps"] = json!(at_ms * PS_PER_MS);
            ev["direction"] = json!(direction);
            (link, ev)
        },
    )
}

/// Knobs of a flow beyond its transport and application.
fn tune(f: &mut Value, (rcvbuf, sndbuf, checksum, delayed_ack): (Option<u64>, Option<u64>, bool, bool)) {
    if let Some(b) = rcvbuf {
        f["rcvbuf_bytes"] = json!(b);
    }
    if f["transport"] == "udp" {
        return;
    }
    f["sndbuf_bytes"] = json!(sndbuf);
    f["delayed_ack"] = json!(delayed_ack);
    if f["transport"] == "mptcp" {
        f["dss_checksum"] = json!(checksum);
    }
}

fn scenario() -> impl Strategy<Value = Value> {
    let knobs = (proptest::option::of(3_000u64..300_000), proptest::option::of(2_000u64..300_000), any::<bool>(), any::<bool>());
    let trace = proptest::option::of(proptest::collection::vec((0u64..30_000, 200_000u64..20_000_000), 1..6));
    (
        (1usize..4).prop_flat_map(|n| (0..n).map(flow).collect::<Vec<_>>()),
        proptest::collection::vec(event(), 0..12),
        (0u64..1000, 0u64..10),
        proptest::collection::vec(knobs, 3),
        (any::<bool>(), any::<bool>(), trace),
    )
        .prop_map(|(mut flows, events, (seed, jitter_ms), knobs, (strip, capture, trace))| {
            for (f, k) in flows.iter_mut().zip(knobs) {
                tune(f, k);
            }
            let mut t = TwoPath::new([8_000_000, 3_000_000], [10.0, 30.0]);
            t.duration_s = 30.0;
            t.seed = seed;
            t.flows = flows;
            let mut s = t.spec();
            // A middlebox stripping MPTCP options on one path.
            s["links"][1]["strip_mptcp"] = json!(strip);
            if capture {
                s["record"]["pcap"] = json!(["client:p1", "server:wan"]);
            }
            if let Some(mut steps) = trace {
                steps.sort_unstable();
                steps.dedup_by_key(|st| st.0);
                let steps: Vec<(u64, u64)> = steps.into_iter().map(|(ms, bw)| (ms * PS_PER_MS, bw)).collect();
                s["links"][1]["a_to_b"]["bandwidth_trace"] = json!(steps);
            }
            let mut per_link: Vec<Vec<Value>> = vec![vec![], vec![]];
            for (l, ev) in events {
                per_link[l].push(ev);
            }
            for (l, mut evs) in per_link.into_iter().enumerate() {
                evs.sort_by_key(|e| e["at_ps"].as_u64());
                s["links"][l]["events"] = json!(evs);
                s["links"][l]["a_to_b"]["jitter_ps"] = json!(jitter_ms * PS_PER_MS);
            }
            s
        })
}

/// What every flow's summary must say, whatever happened: no more
/// delivered than an application of fixed size wrote, no more than a UDP
/// sender sent, and requests that end after they start, of a size asked for.
fn check_flows(spec: &Value, s: &Value) -> Result<(), TestCaseError> {
    for f in spec["flows"].as_array().into_iter().flatten() {
        let name = f["name"].as_str().unwrap_or_default();
        let got = &s["flows"][name];
        let delivered = got["bytes_delivered"].as_u64().unwrap_or(0);
        let app = &f["app"];
        if let Some(size) = app["size_bytes"].as_u64() {
            prop_assert!(delivered <= size, "{}: {} delivered of {}", name, delivered, size);
        }
        if let Some(sent) = got["sent_bytes"].as_u64() {
            prop_assert!(delivered <= sent, "{}: {} delivered of {} sent", name, delivered, sent);
        }
        let sizes: Vec<u64> = app["sizes_bytes"].as_array().into_iter().flatten().filter_map(Value::as_u64).collect();
        for r in got["requests"].as_array().into_iter().flatten() {
            let (start, end) = (r["start_s"].as_f64().unwrap_or(0.0), r["end_s"].as_f64());
            prop_assert!(end.is_none_or(|e| e >= start), "{}: request {}", name, r);
            prop_assert!(sizes.contains(&r["size_bytes"].as_u64().unwrap_or(0)), "{}: request {}", name, r);
        }
    }
    Ok(())
}

/// The run reaches its end, its flows' summaries hold together, and a
/// second run gives the same summary.
fn runs_to_its_end_and_again_the_same(spec: &Value) -> Result<(), TestCaseError> {
    let (sim, s) = run(spec).expect("spec builds");
    prop_assert_eq!(sim.now(), sim.end(), "the run stopped early");
    check_flows(spec, &s)?;
    let (_, again) = run(spec).expect("spec builds");
    prop_assert_eq!(without_wall_time(s), without_wall_time(again));
    Ok(())
}

fn without_wall_time(mut s: Value) -> Value {
    s.as_object_mut().map(|o| o.remove("wall_time_s"));
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_scenario_runs_to_its_end_and_again_the_same(spec in scenario()) {
        runs_to_its_end_and_again_the_same(&spec)?;
    }
}

/// A random connected topology: a spanning tree over the switches and
/// routers plus extra links between them, hosts attached to one or two of
/// them (multihomed), and flows between random pairs of hosts.
fn topology() -> impl Strategy<Value = Value> {
    (2usize..6, 2usize..6)
        .prop_flat_map(|(n_sw, n_host)| {
            (
                Just((n_sw, n_host)),
                proptest::collection::vec((any::<usize>(), any::<bool>()), n_sw),
                proptest::collection::vec((any::<usize>(), any::<usize>()), 0..4),
                proptest::collection::vec((any::<usize>(), proptest::option::of(any::<usize>())), n_host),
                proptest::collection::vec((any::<usize>(), any::<usize>(), flow(0)), 1..4),
                proptest::collection::vec((any::<usize>(), event()), 0..8),
                (1_000_000u64..100_000_000, 0u64..20, 0u64..1000),
            )
        })
        .prop_map(|((n_sw, n_host), sw, extra, hosts, flows, events, (bw, delay_ms, seed))| {
            let d = common::testbed::dir(bw, delay_ms as f64, 100, common::testbed::no_loss());
            let mut nodes = Vec::new();
            let mut links = Vec::new();
            for (i, &(parent, router)) in sw.iter().enumerate() {
                nodes.push(json!({"name": format!("n{i}"), "kind": if router { "router" } else { "switch" }}));
                if i > 0 {
                    links.push(common::testbed::link(
                        &format!("t{i}"),
                        &format!("n{}", parent % i),
                        &format!("n{i}"),
                        d.clone(),
                        d.clone(),
                    ));
                }
            }
            for (k, &(a, b)) in extra.iter().enumerate() {
                let (a, b) = (a % n_sw, b % n_sw);
                if a != b {
                    links.push(common::testbed::link(&format!("x{k}"), &format!("n{a}"), &format!("n{b}"), d.clone(), d.clone()));
                }
            }
            for (h, &(first, second)) in hosts.iter().enumerate() {
                nodes.push(json!({"name": format!("h{h}"), "kind": "host"}));
                links.push(common::testbed::link(
                    &format!("h{h}a"),
                    &format!("h{h}"),
                    &format!("n{}", first % n_sw),
                    d.clone(),
                    d.clone(),
                ));
                if let Some(s) = second.map(|s| s % n_sw).filter(|&s| s != first % n_sw) {
                    links.push(common::testbed::link(
                        &format!("h{h}b"),
                        &format!("h{h}"),
                        &format!("n{s}"),
                        d.clone(),
                        d.clone(),
                    ));
                }
            }
            let mut fl = Vec::new();
            for (i, (c, s, mut f)) in flows.into_iter().enumerate() {
                let (c, s) = (c % n_host, s % n_host);
                let s = if s == c { (c + 1) % n_host } else { s };
                f["name"] = json!(format!("f{i}"));
                f["client"] = json!(format!("h{c}"));
                f["server"] = json!(format!("h{s}"));
                f.as_object_mut().map(|o| o.remove("client_interfaces"));
                fl.push(f);
            }
            let n_links = links.len();
            let mut per_link: Vec<Vec<Value>> = vec![vec![]; n_links];
            for (l, (_, ev)) in events {
                per_link[l % n_links].push(ev);
            }
            for (l, mut evs) in per_link.into_iter().enumerate() {
                evs.sort_by_key(|e| e["at_ps"].as_u64());
                links[l]["events"] = json!(evs);
            }
            json!({"name": "random", "seed": seed, "duration_ps": 20 * common::testbed::PS_PER_S,
               "sample_interval_ps": common::testbed::PS_PER_S, "mss_bytes": 1448, "header_bytes": 66,
               "nodes": nodes, "links": links, "flows": fl,
               "record": {"interfaces": true, "subflows": true, "pcap": []}})
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_connected_topology_runs_to_its_end_and_again_the_same(spec in topology()) {
        runs_to_its_end_and_again_the_same(&spec)?;
    }
}
