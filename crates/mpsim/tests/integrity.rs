//! Transport invariant: whatever the network does (random or bursty loss,
//! reordering, a link going down and up), the receiver gets exactly the
//! bytes sent, in order, and the transfer completes.

mod common;

use common::testbed::{download, no_loss, run, Dumbbell, PS_PER_MS, PS_PER_S};
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
struct Net {
    loss: Value,
    jitter_ms: f64,
    outage: Option<(f64, f64)>,
    size_bytes: u64,
    sack: bool,
    delayed_ack: bool,
    cc: &'static str,
    /// Linux mode (PRR in recovery) rather than reference.
    linux: bool,
    sndbuf_bytes: Option<u64>,
    /// The bottleneck's rate and delay change at a time, by these factors.
    change: Option<(f64, f64, f64)>,
}

fn loss_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0.0f64..0.10).prop_map(|p| json!({"model": "bernoulli", "p": p})),
        // The chain moves per packet (as netem's), so a sender backing off
        // sees a bad state for as many packets as a busy one: bursts much
        // longer or lossier than these starve a flow of ACKs for minutes
        // (RTO backoff to 120 s) on both directions at once.
        (0.001f64..0.05, 0.3f64..0.7, 0.2f64..0.6).prop_map(
            |(gb, bg, lb)| json!({"model": "gilbert", "p_good_bad": gb, "p_bad_good": bg, "loss_good": 0.0, "loss_bad": lb})
        ),
    ]
}

fn net_strategy() -> impl Strategy<Value = Net> {
    (
        loss_strategy(),
        prop_oneof![Just(0.0), 0.0f64..10.0],
        proptest::option::of((0.5f64..5.0, 0.1f64..5.0)),
        20_000u64..5_000_000,
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just("reno"), Just("cubic"), Just("vegas")],
        any::<bool>(),
        proptest::option::of(2_000u64..200_000),
        proptest::option::of((0.1f64..8.0, 0.2f64..3.0, 0.2f64..3.0)),
    )
        .prop_map(|(loss, jitter_ms, outage, size_bytes, sack, delayed_ack, cc, linux, sndbuf_bytes, change)| Net {
            loss,
            jitter_ms,
            outage,
            size_bytes,
            sack,
            delayed_ack,
            cc,
            linux,
            sndbuf_bytes,
            change,
        })
}

fn scenario(n: &Net, seed: u64) -> Value {
    let mut d = Dumbbell::new(1, 5_000_000, 15.0, 40);
    d.loss = n.loss.clone();
    d.ccs = vec![n.cc.to_string()];
    d.duration_s = 1800.0;
    d.seed = seed;
    d.sack = n.sack;
    d.delayed_ack = n.delayed_ack;
    d.record = false;
    let mut spec = d.spec();
    let bn = &mut spec["links"][0];
    // Data and ACKs both suffer.
    bn["b_to_a"]["loss"] = n.loss.clone();
    for dir in ["a_to_b", "b_to_a"] {
        bn[dir]["jitter_ps"] = json!((n.jitter_ms * PS_PER_MS as f64) as u64);
    }
    let ps = |t: f64| (t * PS_PER_S as f64) as u64;
    let mut events = Vec::new();
    if let Some((at, dur)) = n.outage {
        events.push(json!({"at_ps": ps(at), "up": false}));
        events.push(json!({"at_ps": ps(at + dur), "up": true}));
    }
    if let Some((at, rate, delay)) = n.change {
        // 5 Mbps and 15 ms one-way before the change.
        let (bw, delay_ps) = ((5e6 * rate) as u64, (15.0 * delay * PS_PER_MS as f64) as u64);
        events.push(json!({"at_ps": ps(at), "bandwidth_bps": bw, "delay_ps": delay_ps}));
    }
    events.sort_by_key(|e| e["at_ps"].as_u64());
    bn["events"] = json!(events);
    spec["flows"][0]["app"] = download(Some(n.size_bytes));
    spec["flows"][0]["cc_mode"] = json!(if n.linux { "linux" } else { "reference" });
    spec["flows"][0]["sndbuf_bytes"] = json!(n.sndbuf_bytes);
    spec
}

/// The one outcome without a transfer: of the client's packets, only its
/// SYN reached the server; every answer to the server's SYN/ACKs was lost,
/// so the server's half-open connection timed out, as in any TCP stack, and
/// the client of a download, with nothing to send, never learns of it.
fn handshake_timed_out(summary: &Value) -> bool {
    let into_server = &summary["links"]["a0"]["b_to_a"];
    let crossed = into_server["packets"].as_u64().unwrap_or(0) - into_server["loss_drops"].as_u64().unwrap_or(0);
    crossed == 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn receiver_gets_exactly_the_bytes_sent(n in net_strategy(), seed in 0u64..1000) {
        let mode = if n.linux { mpsim_cc::CcMode::Linux } else { mpsim_cc::CcMode::Reference };
        if mpsim_cc::Controller::new(n.cc, mode).is_err() { return Ok(()); }
        let (_sim, s) = run(&scenario(&n, seed)).expect("spec builds");
        let f = &s["flows"]["f0"];
        if handshake_timed_out(&s) {
            prop_assert_eq!(f["bytes_delivered"].as_u64(), Some(0), "{}", f);
            return Ok(());
        }
        prop_assert_eq!(f["bytes_delivered"].as_u64(), Some(n.size_bytes), "{}", f);
        prop_assert!(f["completion_time_s"].is_number(), "did not complete: {}", f);
    }
}

#[test]
fn a_transfer_survives_a_ten_second_outage() {
    let n = Net {
        loss: no_loss(),
        jitter_ms: 0.0,
        outage: Some((2.0, 10.0)),
        size_bytes: 5_000_000,
        sack: true,
        delayed_ack: true,
        cc: "reno",
        linux: false,
        sndbuf_bytes: None,
        change: None,
    };
    let (_sim, s) = run(&scenario(&n, 1)).expect("spec builds");
    let f = &s["flows"]["f0"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(5_000_000));
    let t = f["completion_time_s"].as_f64().unwrap();
    // 8 s of transfer at 5 Mbps plus the outage plus at most one backed-off RTO.
    assert!(t > 12.0 && t < 35.0, "{t}");
}

#[test]
fn rate_and_delay_changes_on_a_jittered_link_lose_nothing() {
    let n = Net {
        loss: no_loss(),
        jitter_ms: 3.0,
        outage: None,
        size_bytes: 3_000_000,
        sack: true,
        delayed_ack: true,
        cc: "reno",
        linux: false,
        sndbuf_bytes: None,
        change: Some((2.0, 0.5, 2.0)),
    };
    let (_sim, s) = run(&scenario(&n, 1)).expect("spec builds");
    let f = &s["flows"]["f0"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(3_000_000));
    assert!(f["completion_time_s"].is_number(), "{f}");
    // No loss model and no outage: the only drops are the queue's.
    let d = &s["links"]["bottleneck"]["a_to_b"];
    assert_eq!(d["drops"].as_u64(), d["queue_drops"].as_u64(), "{d}");
}

#[test]
fn heavy_reordering_alone_loses_nothing() {
    let n = Net {
        loss: no_loss(),
        jitter_ms: 20.0,
        outage: None,
        size_bytes: 2_000_000,
        sack: true,
        delayed_ack: true,
        cc: "reno",
        linux: false,
        sndbuf_bytes: None,
        change: None,
    };
    let (_sim, s) = run(&scenario(&n, 3)).expect("spec builds");
    assert_eq!(s["flows"]["f0"]["bytes_delivered"].as_u64(), Some(2_000_000));
    assert_eq!(s["links"]["bottleneck"]["a_to_b"]["drops"].as_u64(), Some(0));
}
