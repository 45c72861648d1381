//! The SCTP-style association in the engine (`transport = "cmt"`): a
//! download over two paths of different rates between two dual-homed
//! hosts, as in Khan & Qadir's simple scenario (0.2 and 1 Mbit/s, 45 ms,
//! a 64 KB receive buffer).

mod common;

use common::testbed::{dir, download, link, no_loss, run, PS_PER_S};
use serde_json::{json, Value};

/// Two direct links between `client` and `server`: `a` and `b`.
fn two_homed(bw_bps: [u64; 2], delay_ms: f64, flow: Value, duration_s: u64) -> Value {
    let d = |bw| dir(bw, delay_ms, 50, no_loss());
    json!({"name": "cmt", "seed": 1, "duration_ps": duration_s * PS_PER_S, "sample_interval_ps": PS_PER_S,
           "mss_bytes": 1452, "header_bytes": 66,
           "nodes": [{"name": "client", "kind": "host"}, {"name": "server", "kind": "host"}],
           "links": [link("a", "client", "server", d(bw_bps[0]), d(bw_bps[0])),
                     link("b", "client", "server", d(bw_bps[1]), d(bw_bps[1]))],
           "flows": [flow], "record": {"interfaces": false, "subflows": true, "pcap": []}})
}

fn cmt_flow(size_bytes: Option<u64>, rbuf_bytes: u64) -> Value {
    json!({"name": "f", "transport": "cmt", "client": "client", "server": "server", "app": download(size_bytes),
           "start_ps": 0, "cc": "reno", "rcvbuf_bytes": 1u64 << 20, "variant": "cmt", "rbuf_bytes": rbuf_bytes})
}

#[test]
fn a_cmt_download_completes_and_both_paths_carry_data() {
    let size = 2_000_000u64;
    let (_, s) = run(&two_homed([200_000, 1_000_000], 45.0, cmt_flow(Some(size), 64_000), 300)).expect("spec builds");
    let f = &s["flows"]["f"];
    assert_eq!(f["transport"], "cmt");
    assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "{f:#}");
    assert!(f["completion_time_s"].as_f64().is_some(), "{f:#}");
    let rows = f["subflows"].as_array().expect("subflows");
    assert_eq!(rows.len(), 2, "{f:#}");
    let per_path: Vec<u64> = rows.iter().map(|r| r["bytes_delivered"].as_u64().unwrap_or(0)).collect();
    assert!(per_path.iter().all(|&b| b > 50_000), "{f:#}");
    assert_eq!(per_path.iter().sum::<u64>(), size);
    let names: Vec<&str> = rows.iter().map(|r| r["client_interface"].as_str().unwrap_or("")).collect();
    assert_eq!(names, ["a", "b"]);
    // More than the slow path could carry. CMT stays far below the fast
    // path alone: with SFR no reordering cuts the slow path's window, the
    // 64 KB buffer fills behind its holes, and the freed window goes
    // round-robin to both paths (receive-buffer blocking); 0.40 Mbit/s here.
    let goodput = f["goodput_bps"].as_f64().unwrap_or(0.0);
    assert!(goodput > 0.2e6, "{goodput}");
}

#[test]
fn one_destination_is_plain_sctp_and_completes() {
    let size = 500_000u64;
    let mut spec = two_homed([1_000_000, 1_000_000], 20.0, cmt_flow(Some(size), 64_000), 120);
    spec["links"].as_array_mut().expect("links").pop();
    let (_, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["f"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "{f:#}");
    assert_eq!(f["subflows"].as_array().map(Vec::len), Some(1));
}

#[test]
fn cmt_runs_are_deterministic_and_release_their_endpoints() {
    let spec = two_homed([200_000, 1_000_000], 45.0, cmt_flow(Some(300_000), 64_000), 120);
    let (sim, a) = run(&spec).expect("spec builds");
    let (_, b) = run(&spec).expect("spec builds");
    let strip = |mut v: Value| {
        v["wall_time_s"] = Value::Null;
        v
    };
    assert_eq!(strip(a.clone()), strip(b));
    assert!(sim.endpoint_lines().is_empty(), "{:#?}", sim.endpoint_lines());
}

#[test]
fn an_unknown_variant_is_refused() {
    let mut flow = cmt_flow(None, 64_000);
    flow["variant"] = json!("fast");
    let err = run(&two_homed([200_000, 1_000_000], 45.0, flow, 10)).err().expect("refused");
    assert!(err.to_string().contains("variant"), "{err}");
}

#[test]
fn a_cmt_upload_completes() {
    let mut flow = cmt_flow(None, 64_000);
    flow["app"] = json!({"kind": "upload", "size_bytes": 400_000});
    let (_, s) = run(&two_homed([1_000_000, 1_000_000], 20.0, flow, 60)).expect("spec builds");
    assert_eq!(s["flows"]["f"]["bytes_delivered"].as_u64(), Some(400_000), "{:#}", s["flows"]["f"]);
}

#[test]
fn per_destination_traces_show_the_window_and_the_buffer() {
    use mpsim::report_column::Column;
    let mut spec = two_homed([200_000, 1_000_000], 45.0, cmt_flow(None, 64_000), 30);
    spec["sample_interval_ps"] = json!(PS_PER_S / 10);
    let (sim, _) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let table = |name: &str| &traces.iter().find(|(n, _)| n == name).expect("table").1;
    let col = |t: &str, c: &str| table(t).columns.iter().find(|(n, _)| n == c).expect("column").1.clone();
    let (Column::I64(subflow), Column::F64(cwnd), Column::F64(rwnd), Column::Str(side)) =
        (col("subflows", "subflow"), col("subflows", "cwnd_bytes"), col("subflows", "peer_rwnd_bytes"), col("subflows", "side"))
    else {
        panic!("column types")
    };
    assert!(side.iter().all(|s| s == "server"), "only the sender's destinations have sent data");
    for path in [0, 1] {
        let rows: Vec<usize> = (0..subflow.len()).filter(|&i| subflow[i] == path).collect();
        assert!(rows.len() > 100, "path {path}: {} rows", rows.len());
        assert!(rows.iter().all(|&i| cwnd[i] >= 1500.0 && rwnd[i].is_finite()));
    }
    // Receive-buffer blocking: the window the sender sees closes while the
    // fast path's cwnd stays open.
    let blocked = (0..rwnd.len()).filter(|&i| subflow[i] == 1 && rwnd[i] < 1452.0 && cwnd[i] > 4.0 * 1500.0).count();
    assert!(blocked > 10, "{blocked} blocked samples");
    let (Column::I64(held), Column::Str(conn_side)) = (col("connections", "rcv_buffer_bytes"), col("connections", "side")) else {
        panic!("column types")
    };
    let most = (0..held.len()).filter(|&i| conn_side[i] == "client").map(|i| held[i]).max().unwrap_or(0);
    assert!(most > 32_000, "the client's buffer held at most {most} bytes");
}

#[test]
fn a_path_that_goes_down_and_returns_loses_no_byte() {
    let size = 3_000_000u64;
    let mut spec = two_homed([1_000_000, 1_000_000], 20.0, cmt_flow(Some(size), 64_000), 300);
    spec["links"][1]["events"] = json!([
        {"at_ps": 5 * PS_PER_S, "direction": "both", "up": false},
        {"at_ps": 20 * PS_PER_S, "direction": "both", "up": true},
    ]);
    spec["links"][0]["a_to_b"]["loss"] = json!({"model": "bernoulli", "p": 0.01});
    let (_, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["f"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "{f:#}");
    let rows = f["subflows"].as_array().expect("subflows");
    assert!(rows[1]["timeouts"].as_u64() >= Some(1), "{f:#}");
    assert!(rows.iter().all(|r| r["bytes_delivered"].as_u64() > Some(200_000)), "{f:#}");
}

/// Share of the sender's samples on path `b` (the fast one) during which
/// the peer's window was closed while cwnd was open: receive-buffer
/// blocking. Also the goodput, bit/s.
fn blocking_and_goodput(variant: &str) -> (f64, f64) {
    let mut flow = cmt_flow(None, 64_000);
    flow["variant"] = json!(variant);
    blocking_and_goodput_of(flow)
}

fn blocking_and_goodput_of(flow: Value) -> (f64, f64) {
    use mpsim::report_column::Column;
    let mut spec = two_homed([200_000, 1_000_000], 45.0, flow, 50);
    spec["sample_interval_ps"] = json!(PS_PER_S / 10);
    let (sim, s) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let table = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |c: &str| table.columns.iter().find(|(n, _)| n == c).expect("column").1.clone();
    let (Column::I64(subflow), Column::F64(cwnd), Column::F64(rwnd)) =
        (col("subflow"), col("cwnd_bytes"), col("peer_rwnd_bytes"))
    else {
        panic!("column types")
    };
    let rows: Vec<usize> = (0..subflow.len()).filter(|&i| subflow[i] == 1).collect();
    let blocked = rows.iter().filter(|&&i| rwnd[i] < 1452.0 && cwnd[i] > 4.0 * 1500.0).count();
    let goodput = s["flows"]["f"]["goodput_bps"].as_f64().unwrap_or(0.0);
    (blocked as f64 / rows.len().max(1) as f64, goodput)
}

/// Khan & Qadir's simple scenario: CMT's window on the fast path stays open
/// while the peer's window is closed behind the slow path's holes; SMT
/// repairs inter-path holes at once on the fast path, so the buffer blocks
/// less of the time.
#[test]
fn smt_blocks_the_receive_buffer_less_than_cmt_in_the_simple_scenario() {
    let (cmt, cmt_bps) = blocking_and_goodput("cmt");
    let (smt, smt_bps) = blocking_and_goodput("smt");
    let (smos, smos_bps) = blocking_and_goodput("smos");
    let mut trunk = cmt_flow(None, 64_000);
    trunk["variant"] = json!("smos");
    trunk["smos_schedule"] = json!("trunk");
    let (smos_trunk, smos_trunk_bps) = blocking_and_goodput_of(trunk);
    eprintln!("blocked share of samples on path b: cmt {cmt:.3} smt {smt:.3} smos {smos:.3} smos trunk {smos_trunk:.3}");
    eprintln!("goodput bit/s: cmt {cmt_bps:.0} smt {smt_bps:.0} smos {smos_bps:.0} smos trunk {smos_trunk_bps:.0}");
    for bps in [cmt_bps, smt_bps, smos_bps, smos_trunk_bps] {
        assert!(bps > 0.2e6, "{bps}");
    }
    assert!(cmt > 0.0, "CMT never blocked: {cmt}");
    assert!(smt < cmt, "smt {smt} vs cmt {cmt}");
}

#[test]
fn rtx_policy_is_read_and_an_unknown_one_refused() {
    let mut flow = cmt_flow(Some(300_000), 64_000);
    flow["rtx_policy"] = json!("lossrate");
    let mut spec = two_homed([200_000, 1_000_000], 45.0, flow.clone(), 120);
    spec["links"][0]["a_to_b"]["loss"] = json!({"model": "bernoulli", "p": 0.02});
    spec["links"][0]["b_to_a"]["loss"] = json!({"model": "bernoulli", "p": 0.02});
    let (_, s) = run(&spec).expect("spec builds");
    assert_eq!(s["flows"]["f"]["bytes_delivered"].as_u64(), Some(300_000), "{:#}", s["flows"]["f"]);
    flow["rtx_policy"] = json!("fastest");
    let err = run(&two_homed([200_000, 1_000_000], 45.0, flow, 10)).err().expect("refused");
    assert!(err.to_string().contains("rtx_policy"), "{err}");
}

/// SCTP names a path by its destination address and routing picks the way
/// (RFC 4960 §6.4): a flow restricted to interface `b` sends to the
/// server's address on link `b`, so that both directions cross `b`.
#[test]
fn a_flow_restricted_to_one_interface_uses_the_path_through_it() {
    let size = 300_000u64;
    let mut flow = cmt_flow(Some(size), 64_000);
    flow["client_interfaces"] = json!(["b"]);
    let spec = two_homed([1_000_000, 1_000_000], 10.0, flow, 60);
    let (_, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["f"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "{f:#}");
    let carried = |name: &str| s["links"][name]["b_to_a"]["bytes"].as_u64().unwrap_or(0);
    assert!(carried("b") > size, "link b carried {} bytes: {:#}", carried("b"), s["links"]);
    assert_eq!(carried("a"), 0, "{:#}", s["links"]);
}

/// The simple scenario with a bottleneck on path b (a 5-packet queue that
/// the 64 KB window overflows): the flow's summary and the sender's last
/// trace row per destination of `variant`.
fn fast_retransmissions_by_class(variant: &str) -> (Value, Vec<[f64; 3]>) {
    use mpsim::report_column::Column;
    let mut flow = cmt_flow(None, 64_000);
    flow["variant"] = json!(variant);
    let mut spec = two_homed([200_000, 1_000_000], 45.0, flow, 50);
    spec["links"][1]["a_to_b"]["queue"] = json!({"packets": 5});
    spec["links"][1]["b_to_a"]["queue"] = json!({"packets": 5});
    let (sim, s) = run(&spec).expect("spec builds");
    let flow = s["flows"]["f"].clone();
    let traces = sim.traces();
    let table = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |c: &str| table.columns.iter().find(|(n, _)| n == c).unwrap_or_else(|| panic!("column {c}")).1.clone();
    let (Column::I64(subflow), Column::Str(side), Column::F64(total), Column::F64(inter), Column::F64(intra)) = (
        col("subflow"),
        col("side"),
        col("fast_retransmissions"),
        col("fast_retransmissions_inter"),
        col("fast_retransmissions_intra"),
    ) else {
        panic!("column types")
    };
    let last = |path: i64| {
        let i = (0..subflow.len()).rev().find(|&i| subflow[i] == path && side[i] == "server").expect("a sender row");
        [total[i], inter[i], intra[i]]
    };
    (flow, vec![last(0), last(1)])
}

fn fast_rtx_counts(row: &Value) -> [u64; 3] {
    let n = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("no {k} in {row:#}"));
    [n("fast_retransmissions"), n("fast_retransmissions_inter"), n("fast_retransmissions_intra")]
}

/// Khan & Qadir's classes, per destination: with a slow path a, SMT sees
/// a's TSNs overtaken by b's and resends them as inter-path; b's own
/// queue drops are intra-path. CMT counts its fast retransmissions per
/// destination and classes none.
#[test]
fn fast_retransmissions_are_reported_per_destination_and_by_class() {
    let (smt_flow, smt_last) = fast_retransmissions_by_class("smt");
    let (cmt_flow, cmt_last) = fast_retransmissions_by_class("cmt");
    let (smt_rows, cmt_rows) = (smt_flow["subflows"].as_array().expect("rows"), cmt_flow["subflows"].as_array().expect("rows"));
    let smt: Vec<[u64; 3]> = smt_rows.iter().map(fast_rtx_counts).collect();
    let cmt: Vec<[u64; 3]> = cmt_rows.iter().map(fast_rtx_counts).collect();
    eprintln!("fast retransmissions [total, inter, intra] per destination (a, b): smt {smt:?} cmt {cmt:?}");
    for [total, inter, intra] in &smt {
        assert_eq!(inter + intra, *total, "SMT classes every fast retransmission: {smt:?}");
    }
    assert!(smt[0][1] > 0, "no inter-path fast retransmission on the slow path: {smt:?}");
    assert!(smt[1][2] > 0, "no intra-path fast retransmission on the bottleneck: {smt:?}");
    assert!(cmt[1][0] > 0, "CMT never fast retransmitted on the bottleneck: {cmt:?}");
    assert!(cmt.iter().all(|c| c[1] == 0 && c[2] == 0), "CMT classed some: {cmt:?}");
    // The flow's totals add up its destinations'.
    for (flow, counts) in [(&smt_flow, &smt), (&cmt_flow, &cmt)] {
        let total: Vec<u64> = (0..3).map(|k| counts.iter().map(|c| c[k]).sum()).collect();
        assert_eq!(fast_rtx_counts(flow).to_vec(), total);
    }
    // The trace's last sender row per destination carries the summary's counts.
    for (counts, last) in [(&smt, &smt_last), (&cmt, &cmt_last)] {
        for (c, l) in counts.iter().zip(last.iter()) {
            assert_eq!(c.map(|x| x as f64), *l);
        }
    }
}

#[test]
fn the_smos_trunk_schedule_is_read_and_completes_a_download_under_loss() {
    let size = 1_000_000u64;
    let mut flow = cmt_flow(Some(size), 64_000);
    flow["variant"] = json!("smos");
    let mut spec = two_homed([200_000, 1_000_000], 45.0, flow, 300);
    spec["links"][1]["a_to_b"]["loss"] = json!({"model": "bernoulli", "p": 0.01});
    spec["links"][1]["b_to_a"]["loss"] = json!({"model": "bernoulli", "p": 0.01});
    let (_, online) = run(&spec).expect("spec builds");
    spec["flows"][0]["smos_schedule"] = json!("trunk");
    let (_, trunk) = run(&spec).expect("spec builds");
    for s in [&online, &trunk] {
        let f = &s["flows"]["f"];
        assert_eq!(f["bytes_delivered"].as_u64(), Some(size), "{f:#}");
        assert!(f["subflows"].as_array().expect("rows").iter().all(|r| r["bytes_delivered"].as_u64() > Some(0)), "{f:#}");
    }
    assert_ne!(online["flows"]["f"]["subflows"], trunk["flows"]["f"]["subflows"], "the key changed nothing");
    spec["flows"][0]["smos_schedule"] = json!("batch");
    let err = run(&spec).err().expect("refused");
    assert!(err.to_string().contains("smos_schedule"), "{err}");
}

/// RFC 4960 section 6.3.1 C5: a chunk of the fast path b sent before a
/// hole of the slow path a was retransmitted can sit at the receiver
/// beyond the SACK's gap blocks until the hole fills; a sample from it
/// measured the hole's repair, not b, and b's smoothed RTT rose above
/// its real round trip (and, with cross traffic, above a's). b's round
/// trip is 90 ms of propagation plus its own queue, which the receive
/// window (64 KB, shared with a) keeps to a few packets of 12 ms each.
#[test]
fn smt_measures_the_fast_paths_round_trip_not_the_slow_paths_holes() {
    use mpsim::report_column::Column;
    let mut flow = cmt_flow(None, 64_000);
    flow["variant"] = json!("smt");
    let mut spec = two_homed([200_000, 1_000_000], 45.0, flow, 50);
    spec["sample_interval_ps"] = json!(PS_PER_S / 10);
    let (sim, _) = run(&spec).expect("spec builds");
    let traces = sim.traces();
    let table = &traces.iter().find(|(n, _)| n == "subflows").expect("subflows table").1;
    let col = |c: &str| table.columns.iter().find(|(n, _)| n == c).expect("column").1.clone();
    let (Column::I64(subflow), Column::F64(srtt), Column::F64(time)) = (col("subflow"), col("srtt_s"), col("time_s")) else {
        panic!("column types")
    };
    let mut b: Vec<f64> = (0..subflow.len()).filter(|&i| subflow[i] == 1 && time[i] > 5.0).map(|i| srtt[i]).collect();
    b.sort_by(f64::total_cmp);
    let median = b[b.len() / 2];
    eprintln!("path b smoothed RTT after 5 s: median {median:.3} s, max {:.3} s", b[b.len() - 1]);
    assert!(median < 0.22, "b's smoothed RTT {median} s");
}
