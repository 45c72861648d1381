//! A finite send buffer bounds what a TCP sender has in flight: with
//! `sndbuf` below the bandwidth-delay product the rate is about
//! `sndbuf / RTT`, and the transfer still delivers exactly what was sent.

mod common;

use common::testbed::{bernoulli, download, run, TwoPath};
use serde_json::json;

/// Goodput (bps) of a sized TCP download on a 10 Mbps path of 20 ms one-way delay.
fn tcp_goodput(sndbuf_bytes: Option<u64>, loss: f64, size_bytes: u64) -> f64 {
    let mut t = TwoPath::new([10_000_000, 10_000_000], [20.0, 20.0]);
    t.duration_s = 300.0;
    if loss > 0.0 {
        t.loss = [bernoulli(loss), bernoulli(loss)];
    }
    let mut f = TwoPath::tcp_flow("t", "reno", "p1", download(Some(size_bytes)));
    f["sndbuf_bytes"] = json!(sndbuf_bytes);
    t.flows = vec![f];
    let (_, s) = run(&t.spec()).expect("spec builds");
    let f = &s["flows"]["t"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(size_bytes), "{f}");
    size_bytes as f64 * 8.0 / f["completion_time_s"].as_f64().expect("completes")
}

#[test]
fn the_send_buffer_bounds_the_rate_at_sndbuf_per_rtt() {
    let unlimited = tcp_goodput(None, 0.0, 10_000_000);
    let small = tcp_goodput(Some(16_384), 0.0, 10_000_000);
    // 16 KiB per 40 ms round trip is 3.3 Mbps (plus queueing delay: less).
    let bound = 16_384.0 * 8.0 / 0.040;
    assert!(small <= bound * 1.02 && small > 0.6 * bound, "16 KiB: {small} bps, bound {bound}");
    assert!(unlimited > 2.0 * small, "unlimited {unlimited} bps, 16 KiB {small} bps");
}

#[test]
fn a_small_send_buffer_under_loss_still_delivers_everything() {
    for (sndbuf, seed_loss) in [(4_000u64, 0.01), (20_000, 0.03), (100_000, 0.02)] {
        let g = tcp_goodput(Some(sndbuf), seed_loss, 2_000_000);
        assert!(g > 0.0);
    }
}
