//! Linux's send- and receive-buffer model on the head-of-line case that no
//! fixed buffer reproduces: 5 MB over a 10 and a 0.1 Mbit/s path (MPTCP,
//! linux mode, upstream scheduler). Linux 6.18 takes 5.85 s with its
//! autotuned buffers and 51.5 s with a 256 KB receive buffer. Figures in
//! docs/validation.md ("Send and receive buffers").

mod common;

use common::testbed::{download, run, TwoPath};
use serde_json::{json, Value};

/// Both paths 10 ms RTT with netem's default queue of 1000 packets; cubic
/// on each subflow (Linux's default), the endpoints path manager.
/// `rcvbuf_bytes`: None autotunes; Some fixes the receive buffer.
fn ten_and_a_tenth(rcvbuf_bytes: Option<u64>) -> Value {
    let mut t = TwoPath::new([10_000_000, 100_000], [5.0, 5.0]);
    t.queue_pkts = [1000, 1000];
    t.duration_s = 200.0;
    let mut f = TwoPath::mptcp_flow("mp", "cubic", download(Some(5_000_000)));
    f["cc_mode"] = json!("linux");
    f["scheduler"] = json!("upstream");
    f["path_manager"] = json!("endpoints");
    match rcvbuf_bytes {
        Some(b) => f["rcvbuf_bytes"] = json!(b),
        None => f["rcvbuf_auto"] = json!(true),
    }
    t.flows = vec![f];
    t.spec()
}

/// Completion time of the 5 MB, seconds, and the bytes the slow path carried.
fn completion_s(rcvbuf_bytes: Option<u64>) -> (f64, u64) {
    completion_of(&ten_and_a_tenth(rcvbuf_bytes))
}

fn completion_of(spec: &Value) -> (f64, u64) {
    let (_, s) = run(spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(5_000_000), "{f}");
    let slow = f["subflows"][1]["bytes_delivered"].as_u64().or_else(|| f["subflows"][1]["rx_bytes"].as_u64()).unwrap_or(0);
    (f["completion_time_s"].as_f64().expect("completes"), slow)
}

#[test]
fn autotuned_buffers_finish_5_mb_over_10_and_0_1_mbps_where_a_small_fixed_one_stalls() {
    let (auto_s, auto_slow) = completion_s(None);
    let (fixed_s, fixed_slow) = completion_s(Some(256 << 10));
    let (large_s, large_slow) = completion_s(Some(6 << 20));
    eprintln!(
        "autotuned: {auto_s:.2} s ({auto_slow} B on the slow path); 256 KB fixed: {fixed_s:.2} s ({fixed_slow} B); \
         6 MiB fixed: {large_s:.2} s ({large_slow} B)"
    );
    // Linux 6.18: 5.85 s autotuned, 51.5 s with 256 KB, 8.8 times longer.
    // The model takes 6.5 s and 87 s (docs/validation.md says why): the
    // small buffer stalls the fast path behind the slow path's data, the
    // autotuned one lets it run ahead while the MPTCP timer resends the
    // slow path's head on the fast one.
    assert!(fixed_s > 30.0, "256 KB fixed {fixed_s} s");
    assert!(auto_s < fixed_s / 4.0, "autotuned {auto_s} s, 256 KB fixed {fixed_s} s");
    // Within the 15 % the comparison allows MPTCP short flows.
    assert!(auto_s < 1.15 * 5.85, "autotuned {auto_s} s (Linux 5.85)");
}

/// Linux bounds the data not yet DATA_ACKed by the MPTCP socket's send
/// buffer, `tcp_wmem[0]` plus the subflows' (`__mptcp_sync_sndbuf`), and
/// still takes 5.85 s. With that buffer (`msk_sndbuf_auto`) the model
/// takes 18.5 s: its slow subflow holds 216 KB, sent in about ten separate
/// runs of the data sequence, each a hole behind which the buffer stops
/// the fast subflow until the MPTCP timer resends the fragment holding it
/// (docs/validation.md, "A failure on the client side").
#[test]
#[ignore = "MPTCP model: the slow subflow's share is not Linux's; with the MPTCP socket's send buffer the transfer stalls (docs/validation.md)"]
fn with_the_mptcp_socket_send_buffer_5_mb_over_10_and_0_1_mbps_take_as_long_as_on_linux() {
    let mut spec = ten_and_a_tenth(None);
    spec["flows"][0]["msk_sndbuf_auto"] = json!(true);
    let (t_s, slow) = completion_of(&spec);
    eprintln!("MPTCP socket send buffer: {t_s:.2} s ({slow} B on the slow path)");
    assert!(t_s < 1.15 * 5.85, "{t_s} s (Linux 5.85)");
}
