//! The applications other than bulk transfer over the SCTP-style
//! association (`transport = "cmt"`): http (a new association per request,
//! or one for all, or open-loop arrivals), video and on/off bulk, each
//! under random loss on one path and the other path's failure and return.
//! Each checks that every byte the application wrote reached the other
//! application exactly once; the association delivers in TSN order, which
//! the association's own property test checks.

mod common;

use common::testbed::{dir, link, no_loss, run, PS_PER_S};
use serde_json::{json, Value};

/// Two direct 1 Mbit/s links between `client` and `server`, 20 ms: `a`
/// loses 1 % of its packets each way from 1 s on; `b` is down from 5 s to
/// 20 s.
fn lossy_two_homed(app: Value, stop_s: Option<u64>, duration_s: u64) -> Value {
    let d = || dir(1_000_000, 20.0, 50, no_loss());
    let mut a = link("a", "client", "server", d(), d());
    a["events"] = json!([{"at_ps": PS_PER_S, "direction": "both", "loss": {"model": "bernoulli", "p": 0.01}}]);
    let mut b = link("b", "client", "server", d(), d());
    b["events"] = json!([
        {"at_ps": 5 * PS_PER_S, "direction": "both", "up": false},
        {"at_ps": 20 * PS_PER_S, "direction": "both", "up": true},
    ]);
    let flow = json!({"name": "f", "transport": "cmt", "client": "client", "server": "server", "app": app,
                      "start_ps": 0, "stop_ps": stop_s.map(|s| s * PS_PER_S), "cc": "reno",
                      "rcvbuf_bytes": 1u64 << 20, "variant": "cmt", "rbuf_bytes": 64_000});
    json!({"name": "cmt-apps", "seed": 3, "duration_ps": duration_s * PS_PER_S, "sample_interval_ps": PS_PER_S / 100,
           "mss_bytes": 1452, "header_bytes": 66,
           "nodes": [{"name": "client", "kind": "host"}, {"name": "server", "kind": "host"}],
           "links": [a, b], "flows": [flow], "record": {"interfaces": false, "subflows": true, "pcap": []}})
}

fn http(sizes: &[u64], repeat: u32, new_connection: bool) -> Value {
    json!({"kind": "http", "sizes_bytes": sizes, "repeat": repeat, "gap_ps": PS_PER_S / 2,
           "new_connection": new_connection, "request_bytes": 300})
}

/// Runs `spec` and checks that every association ended and was released.
fn run_to_the_end(spec: &Value) -> (mpsim::Simulation, Value) {
    let (sim, s) = run(spec).expect("spec builds");
    assert!(sim.endpoint_lines().is_empty(), "associations left: {:#?}", sim.endpoint_lines());
    (sim, s)
}

/// Every request's response arrived whole, in order of the requests.
fn assert_http_complete(s: &Value, sizes: &[u64], repeat: u32) {
    let f = &s["flows"]["f"];
    // The requests ran into b's outage, and the association timed out on it.
    let ends: Vec<f64> = f["requests"].as_array().expect("requests").iter().map(|r| r["end_s"].as_f64().unwrap_or(0.0)).collect();
    assert!(ends.last().is_some_and(|&e| e > 20.0), "{ends:?}");
    let timeouts: u64 = f["subflows"].as_array().expect("subflows").iter().map(|r| r["timeouts"].as_u64().unwrap_or(0)).sum();
    assert!(timeouts > 0, "{f:#}");
    let expected: Vec<u64> = (0..repeat).flat_map(|_| sizes.iter().copied()).collect();
    let got: Vec<u64> =
        f["requests"].as_array().expect("requests").iter().map(|r| r["size_bytes"].as_u64().unwrap_or(0)).collect();
    assert_eq!(got, expected, "{f:#}");
    assert_eq!(f["bytes_delivered"].as_u64(), Some(expected.iter().sum()), "{f:#}");
    assert!(f["completion_time_s"].as_f64().is_some(), "{f:#}");
}

#[test]
fn http_with_an_association_per_request_delivers_every_response_whole() {
    let sizes = [30_000, 100_000, 5_000];
    let (_, s) = run_to_the_end(&lossy_two_homed(http(&sizes, 4, true), None, 600));
    assert_http_complete(&s, &sizes, 4);
    // A row per association and path: several associations, both paths used.
    let rows = s["flows"]["f"]["subflows"].as_array().expect("subflows");
    assert!(rows.len() >= 2 * 12, "{} rows", rows.len());
    for path in ["a", "b"] {
        let carried: u64 =
            rows.iter().filter(|r| r["client_interface"] == path).map(|r| r["bytes_delivered"].as_u64().unwrap_or(0)).sum();
        assert!(carried > 0, "path {path} carried nothing");
    }
}

#[test]
fn http_over_one_association_delivers_every_response_whole() {
    let sizes = [30_000, 100_000, 5_000];
    let (_, s) = run_to_the_end(&lossy_two_homed(http(&sizes, 4, false), None, 600));
    assert_http_complete(&s, &sizes, 4);
    assert_eq!(s["flows"]["f"]["subflows"].as_array().map(Vec::len), Some(2), "one association, two paths");
}

#[test]
fn open_loop_http_runs_concurrent_associations_to_completion() {
    let app = json!({"kind": "http", "sizes_bytes": [20_000], "repeat": 1, "gap_ps": 0, "new_connection": true,
                     "request_bytes": 300, "size_distribution": {"kind": "uniform", "min_bytes": 10_000, "max_bytes": 60_000},
                     "requests": 30, "arrival_rate_per_s": 4.0});
    let (_, s) = run_to_the_end(&lossy_two_homed(app, None, 600));
    let f = &s["flows"]["f"];
    let requests = f["requests"].as_array().expect("requests");
    assert_eq!(requests.len(), 30, "{f:#}");
    let sum: u64 = requests.iter().map(|r| r["size_bytes"].as_u64().unwrap_or(0)).sum();
    assert_eq!(f["bytes_delivered"].as_u64(), Some(sum), "{f:#}");
}

/// The most the sender's destinations had acknowledged together at one
/// sample: every byte sent, once the association has shut down.
fn most_acked_bytes(sim: &mpsim::Simulation) -> i64 {
    use mpsim::report_column::Column;
    let traces = sim.traces();
    let table = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |c: &str| table.columns.iter().find(|(n, _)| n == c).expect("column").1.clone();
    let (Column::F64(time), Column::Str(side), Column::I64(acked)) = (col("time_s"), col("side"), col("bytes_delivered")) else {
        panic!("column types")
    };
    let mut per_time = std::collections::BTreeMap::<u64, i64>::new();
    for i in (0..time.len()).filter(|&i| side[i] == "server") {
        *per_time.entry(time[i].to_bits()).or_default() += acked[i];
    }
    per_time.values().copied().max().unwrap_or(0)
}

#[test]
fn video_chunks_arrive_whole_and_once() {
    // 25,000-byte chunks every second from the server's connection
    // (within the first 0.1 s) to the stop at 30.5 s: 31 chunks.
    let app = json!({"kind": "video", "bitrate_bps": 200_000, "chunk_ps": PS_PER_S});
    let mut spec = lossy_two_homed(app, None, 200);
    spec["flows"][0]["stop_ps"] = json!(30 * PS_PER_S + PS_PER_S / 2);
    let (sim, s) = run_to_the_end(&spec);
    assert_eq!(s["flows"]["f"]["bytes_delivered"].as_u64(), Some(31 * 25_000), "{:#}", s["flows"]["f"]);
    assert_eq!(most_acked_bytes(&sim), 31 * 25_000);
}

#[test]
fn onoff_bulk_delivers_what_it_sent_once() {
    let app = json!({"kind": "onoff", "on_ps": 3 * PS_PER_S, "off_ps": 2 * PS_PER_S,
                     "inner": {"kind": "download", "size_bytes": null}});
    let (sim, s) = run_to_the_end(&lossy_two_homed(app, Some(30), 200));
    let delivered = s["flows"]["f"]["bytes_delivered"].as_u64().unwrap_or(0);
    // Six on periods of 3 s at up to 2 Mbit/s, less the outage of b.
    assert!(delivered > 1_000_000, "{delivered}");
    assert_eq!(most_acked_bytes(&sim), delivered as i64, "acknowledged and delivered bytes differ");
}

#[test]
fn datagram_apps_are_refused_on_cmt_naming_the_app() {
    let cbr = json!({"kind": "cbr", "rate_bps": 100_000, "packet_bytes": 1000});
    let onoff_cbr = json!({"kind": "onoff", "on_ps": PS_PER_S, "off_ps": PS_PER_S, "inner": cbr.clone()});
    for app in [cbr, onoff_cbr] {
        let err = run(&lossy_two_homed(app.clone(), None, 10)).err().expect("refused");
        let text = err.to_string();
        assert!(matches!(err, mpsim::BuildError::Unsupported(_)), "{text}");
        assert!(text.contains("flow 'f'") && text.contains("cbr"), "{text}");
    }
}

#[test]
fn http_associations_open_while_the_primary_path_is_down() {
    // Path a (every association's primary) fails from 5 s to 20 s and b
    // is lossy: an INIT lost on a goes again on b after T1 (3 s).
    let sizes = [30_000, 100_000, 5_000];
    let mut spec = lossy_two_homed(http(&sizes, 4, true), None, 600);
    let (a_events, b_events) = (spec["links"][0]["events"].clone(), spec["links"][1]["events"].clone());
    spec["links"][0]["events"] = b_events;
    spec["links"][1]["events"] = a_events;
    let (_, s) = run_to_the_end(&spec);
    assert_http_complete(&s, &sizes, 4);
}
