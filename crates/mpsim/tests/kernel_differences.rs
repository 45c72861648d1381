//! The simulator against Linux 6.18 (docs/validation.md, "The simulator
//! against the Linux kernel"): the differences whose root cause is in the
//! MPTCP model, found by comparing the kernel backend's captures with the
//! simulator's. Each ignored test states the kernel's behaviour and fails
//! on today's model (the reason says what is missing); the one that runs
//! checks what the comparison now uses, the upstream scheduler, against
//! the kernel's split.
//!
//! The topology is the comparison's: a client with links a and b to a
//! router (10 Mbit/s, 100-packet queues), the router to the server at
//! 100 Mbit/s, 1 ms; uncoupled cubic, `linux` mode, the `endpoints` path
//! manager and the upstream scheduler, as the kernel runs.

mod common;

use common::testbed::{run, PS_PER_MS, PS_PER_S};
use mpsim::report_column::Column;
use serde_json::{json, Value};

fn direction(bw_bps: u64, delay_ms: u64, queue_pkts: u32) -> Value {
    json!({"bandwidth_bps": bw_bps, "delay_ps": delay_ms * PS_PER_MS, "queue": {"packets": queue_pkts},
           "loss": {"model": "none"}, "jitter_ps": 0, "bandwidth_trace": null})
}

fn link(name: &str, a: &str, b: &str, bw_bps: u64, delay_ms: u64, queue_pkts: u32, events: Value) -> Value {
    let d = direction(bw_bps, delay_ms, queue_pkts);
    json!({"name": name, "a": a, "b": b, "strip_mptcp": false, "a_to_b": d, "b_to_a": d, "events": events})
}

/// The comparison's scenario: paths a and b of `delay_ms` one way, b at
/// `rate_b_bps`, an MPTCP flow with `app` and b as backup if asked.
fn comparison(delay_ms: u64, rate_b_bps: u64, app: Value, backup_b: bool, events_a: Value, duration_s: u64) -> Value {
    let flow = json!({
        "name": "f", "transport": "mptcp", "client": "client", "server": "server", "app": app,
        "start_ps": 0, "cc": "cubic", "cc_mode": "linux", "rcvbuf_bytes": 6u64 << 20, "rcvbuf_auto": true,
        "sack": true, "delayed_ack": true, "delayed_ack_ps": 40 * PS_PER_MS, "initial_cwnd_pkts": 10,
        "client_interfaces": ["a", "b"], "scheduler": "upstream", "path_manager": "endpoints",
        "backup_interfaces": if backup_b { json!(["b"]) } else { json!([]) },
        "max_subflows": 2, "max_add_addr_accepted": 0,
    });
    json!({
        "name": "kernel-comparison", "seed": 1, "duration_ps": duration_s * PS_PER_S,
        "sample_interval_ps": 100 * PS_PER_MS, "header_bytes": 66,
        "nodes": [{"name": "client", "kind": "host"}, {"name": "router", "kind": "router"},
                  {"name": "server", "kind": "host"}],
        "links": [link("a", "client", "router", 10_000_000, delay_ms, 100, events_a),
                  link("b", "client", "router", rate_b_bps, delay_ms, 100, json!([])),
                  link("wan", "router", "server", 100_000_000, 1, 1000, json!([]))],
        "flows": [flow],
        "record": {"interfaces": true, "subflows": false, "pcap": []},
    })
}

fn http(sizes_bytes: &[u64]) -> Value {
    json!({"kind": "http", "sizes_bytes": sizes_bytes, "repeat": 1, "gap_ps": 200 * PS_PER_MS,
           "new_connection": true, "request_bytes": 100})
}

/// Response times (ms) of the flow's requests, in order.
fn response_times_ms(summary: &Value) -> Vec<f64> {
    let requests = summary["flows"]["f"]["requests"].as_array().cloned().unwrap_or_default();
    requests.iter().map(|r| (r["end_s"].as_f64().unwrap_or(f64::NAN) - r["start_s"].as_f64().unwrap_or(0.0)) * 1e3).collect()
}

/// (time, received bit/s) samples of the client's interface `iface`.
fn client_rx_bps(sim: &mpsim::Simulation, iface: &str) -> Vec<(f64, f64)> {
    let traces = sim.traces();
    let table = &traces.iter().find(|(n, _)| n == "interfaces").expect("interfaces table").1;
    let col = |name: &str| table.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone()).expect("column");
    let (Column::F64(t), Column::Str(node), Column::Str(ifc), Column::F64(rx)) =
        (col("time_s"), col("node"), col("interface"), col("rx_bps"))
    else {
        panic!("column types")
    };
    (0..t.len()).filter(|&i| node[i] == "client" && ifc[i] == iface).map(|i| (t[i], rx[i])).collect()
}

/// Linux 6.18 keeps data not yet DATA_ACKed within the MPTCP socket's send
/// buffer (`sk_stream_memory_free` on the msk in `mptcp_sendmsg`; its
/// size is `tcp_wmem[0]` plus the subflows' send buffers,
/// `__mptcp_sync_sndbuf` in net/mptcp/protocol.c). When link a fails,
/// what was in flight on a leaves a hole at the data level: path b sends
/// new data until the buffer is full (about 1.2 MB, 0.5 s), then idles;
/// with b idle, the MPTCP timer resends the oldest data on it one data
/// fragment per interval (`__mptcp_retrans`, `mptcp_subflow_get_retrans`
/// takes only a subflow with nothing outstanding), and a's data moves
/// when a goes stale, after more than four intervals. In the captures b
/// carries nothing from 5.55 to 5.9 s and little until 6.6 s; ten runs
/// give b 7.4-9.1 Mbit/s over the outage (8.1 on average) against 10.0
/// before. The model has the MPTCP socket's buffer (`msk_sndbuf_auto`,
/// which the front end sets in linux mode and this test sets): b idles,
/// but later and shorter than Linux's (9.49 Mbit/s, 0.26 s idle from
/// 5.93 s). Its subflow send buffers are larger than this kernel's (the
/// model's `tcp_sndbuf_expand` costs a segment 4,352 bytes, the kernel
/// here 2,304), so the buffer fills later, and its timer fires at 200 ms
/// intervals, where the kernel's stays at b's 344 ms (docs/validation.md).
#[test]
#[ignore = "MPTCP model: with the MPTCP socket's send buffer, b idles later and shorter than Linux's (docs/validation.md)"]
fn after_a_client_side_failure_the_full_mptcp_send_buffer_idles_the_surviving_path() {
    let down = json!([{"at_ps": 5 * PS_PER_S, "up": false}, {"at_ps": 10 * PS_PER_S, "up": true}]);
    let mut spec = comparison(10, 10_000_000, json!({"kind": "download", "size_bytes": null}), false, down, 12);
    spec["flows"][0]["msk_sndbuf_auto"] = json!(true);
    let (sim, _) = run(&spec).expect("spec builds");
    let b = client_rx_bps(&sim, "b");
    let during: Vec<f64> = b.iter().filter(|&&(t, _)| t > 5.0 && t <= 10.0).map(|&(_, r)| r).collect();
    let mean = during.iter().sum::<f64>() / during.len().max(1) as f64;
    let idle = b.iter().filter(|&&(t, r)| t > 5.0 && t <= 7.0 && r < 2e6).count();
    eprintln!("b over the outage: {:.2} Mbit/s; 100 ms samples under 2 Mbit/s in 5-7 s: {idle}", mean / 1e6);
    let early: Vec<&(f64, f64)> = b.iter().filter(|&&(t, _)| t > 5.0 && t <= 7.0).collect();
    assert!(idle >= 3, "b never idles in 5-7 s: {early:?}");
    assert!(mean < 9.0e6, "b keeps {:.2} Mbit/s over the outage (Linux: 7.5-8.7)", mean / 1e6);
}

/// Upstream MPTCP ends a DSS mapping at each of its data fragments (about
/// 32 KB of the socket's page fragment, `mptcp_sendmsg` and
/// `mptcp_sendmsg_frag` in net/mptcp/protocol.c), and a segment never
/// spans two mappings, so a response leaves a sub-MSS segment every
/// 32 KB or so (the kernel capture of a 100 KB response: 612, 1012 and
/// 396 bytes). Nagle's rule with Minshall's check (`tcp_nagle_check`,
/// `tcp_minshall_check` in net/ipv4/tcp_output.c) holds a sub-MSS
/// segment while an earlier one is unacknowledged: the last 396 bytes
/// wait one round trip. Linux: 160-163 ms for 100 KB on 10 Mbit/s and
/// 20 ms RTT with the other path as backup; with TCP_NODELAY 141-144 ms,
/// as the model, which has neither the mapping boundaries nor Nagle.
#[test]
#[ignore = "MPTCP model: segments are full-sized across mapping boundaries and there is no Nagle (docs/validation.md)"]
fn an_mptcp_response_whose_tail_follows_a_sub_mss_segment_waits_one_round_trip() {
    let spec = comparison(10, 100_000, http(&[100_000]), true, json!([]), 3);
    let (_, s) = run(&spec).expect("spec builds");
    let times = response_times_ms(&s);
    eprintln!("100 KB response: {times:?} ms");
    assert!(times.first().is_some_and(|&ms| (155.0..170.0).contains(&ms)), "{times:?} ms (Linux 160-163)");
}

/// With the upstream scheduler the model commits a burst to the joining
/// subflow beyond its window, as Linux's `mptcp_subflow_get_send` does:
/// at 40 ms RTT the second subflow of a 100 KB response then carries a
/// second round of data and the response takes longer than with the
/// out-of-tree scheduler (which fills only free windows). The kernel's
/// capture: b carries 35 KB of the 100 KB in two rounds, 232 ms.
#[test]
fn at_40_ms_rtt_the_upstream_scheduler_queues_a_second_round_on_the_joining_subflow() {
    let upstream = comparison(20, 10_000_000, http(&[100_000]), false, json!([]), 3);
    let mut default = upstream.clone();
    default["flows"][0]["scheduler"] = json!("default");
    let t_upstream = response_times_ms(&run(&upstream).expect("spec builds").1);
    let t_default = response_times_ms(&run(&default).expect("spec builds").1);
    eprintln!("100 KB at 40 ms RTT: upstream {t_upstream:?} ms, default {t_default:?} ms (Linux 231-256)");
    let (u, d) = (t_upstream[0], t_default[0]);
    assert!(u > d + 10.0, "upstream {u} ms, default {d} ms");
    assert!(u < 260.0, "upstream {u} ms");
}

/// At 10/0.1 Mbit/s the upstream scheduler gives the slow subflow a burst
/// it holds for seconds. Linux's MPTCP retransmission timer then sends the
/// oldest data not DATA_ACKed again on the fast subflow, as soon as that
/// one has nothing outstanding, a whole data fragment at a time
/// (`__mptcp_retrans` in net/mptcp/protocol.c sends `mptcp_rtx_head` up
/// to what was sent of it): in the kernel capture of a 100 KB response,
/// 30.8 KB at +195 ms and the last 1.8 KB at +303 ms; ten runs take
/// 0.30-0.35 s. The model resends the head fragment too and, as Linux,
/// re-arms the timer with the interval `mptcp_subflow_get_send` last set
/// (`timer_ival`), not with the time left on the subflows' timers then
/// (0.42 s that way: its second expiry came 230 ms after the first, the
/// kernel's 108 ms); a subflow counting intervals without progress keeps
/// its timer out of that interval until the next expiry sees its progress
/// (`mptcp_pm_subflow_chk_stale`).
#[test]
fn at_10_over_0_1_the_mptcp_timer_resends_a_whole_fragment_on_the_fast_subflow() {
    let spec = comparison(10, 100_000, http(&[100_000]), false, json!([]), 3);
    let times = response_times_ms(&run(&spec).expect("spec builds").1);
    eprintln!("100 KB over 10/0.1 Mbit/s: {times:?} ms (Linux 301-353)");
    assert!(times.first().is_some_and(|&ms| ms < 400.0), "{times:?} ms");
}
