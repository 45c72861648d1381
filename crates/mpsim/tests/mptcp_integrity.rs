//! Data-level integrity of MPTCP for every scheduler and path manager:
//! whatever the paths do (random or bursty loss, reordering, one path
//! going down and coming back), the receiving application gets exactly the
//! bytes sent, in order, and the transfer completes.

mod common;

use common::testbed::{no_loss, run, TwoPath, PS_PER_MS, PS_PER_S};
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
struct Case {
    scheduler: &'static str,
    path_manager: &'static str,
    cc: &'static str,
    loss: [Value; 2],
    jitter_ms: f64,
    outage: Option<(usize, f64, f64)>,
    /// A link made backup (MP_PRIO) at a time, and regular again later.
    priority: Option<(usize, f64, f64)>,
    sndbuf_bytes: Option<u64>,
    /// The client sends (upload) rather than receives.
    upload: bool,
    /// Every controller and the subflows in linux mode (PRR in recovery).
    linux: bool,
    backup_p2: bool,
    size_bytes: u64,
    /// A path's rate and delay change at a time, by these factors.
    change: Option<(usize, f64, f64, f64)>,
}

fn loss() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(no_loss()),
        (0.0f64..0.05).prop_map(|p| json!({"model": "bernoulli", "p": p})),
        (0.001f64..0.03, 0.3f64..0.7, 0.2f64..0.6).prop_map(
            |(gb, bg, lb)| json!({"model": "gilbert", "p_good_bad": gb, "p_bad_good": bg, "loss_good": 0.0, "loss_bad": lb})
        ),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just("default"), Just("roundrobin"), Just("redundant"), Just("upstream")],
        prop_oneof![Just("fullmesh"), Just("ndiffports"), Just("default"), Just("endpoints")],
        prop_oneof![Just("lia"), Just("olia"), Just("balia"), Just("cubic"), Just("wvegas"), Just("coupled")],
        [loss(), loss()],
        prop_oneof![Just(0.0), 0.0f64..5.0],
        proptest::option::of((0usize..2, 0.5f64..5.0, 0.5f64..5.0)),
        proptest::option::of((0usize..2, 0.1f64..3.0, 0.1f64..3.0)),
        proptest::option::of(8_000u64..512_000),
        (any::<bool>(), any::<bool>()),
        any::<bool>(),
        50_000u64..4_000_000,
        proptest::option::of((0usize..2, 0.1f64..6.0, 0.2f64..3.0, 0.2f64..3.0)),
    )
        .prop_map(
            |(
                scheduler,
                path_manager,
                cc,
                loss,
                jitter_ms,
                outage,
                priority,
                sndbuf_bytes,
                (upload, linux),
                backup_p2,
                size_bytes,
                change,
            )| {
                Case {
                    scheduler,
                    path_manager,
                    cc,
                    loss,
                    jitter_ms,
                    outage,
                    priority,
                    sndbuf_bytes,
                    upload,
                    linux,
                    backup_p2,
                    size_bytes,
                    change,
                }
            },
        )
}

fn spec(c: &Case, seed: u64) -> Value {
    let mut t = TwoPath::new([8_000_000, 4_000_000], [10.0, 25.0]);
    t.duration_s = 1800.0;
    t.seed = seed;
    t.loss = c.loss.clone();
    let app = json!({"kind": if c.upload { "upload" } else { "download" }, "size_bytes": c.size_bytes});
    let mut f = TwoPath::mptcp_flow("mp", c.cc, app);
    f["scheduler"] = json!(c.scheduler);
    f["path_manager"] = json!(c.path_manager);
    if c.backup_p2 {
        f["backup_interfaces"] = json!(["p2"]);
    }
    f["sndbuf_bytes"] = json!(c.sndbuf_bytes);
    f["cc_mode"] = json!(if c.linux { "linux" } else { "reference" });
    t.flows = vec![f];
    let mut s = t.spec();
    for l in 0..2 {
        for d in ["a_to_b", "b_to_a"] {
            s["links"][l][d]["jitter_ps"] = json!((c.jitter_ms * PS_PER_MS as f64) as u64);
            // ACKs suffer too.
            s["links"][l][d]["loss"] = c.loss[l].clone();
        }
    }
    let ps = |t: f64| (t * PS_PER_S as f64) as u64;
    let mut events: Vec<Vec<Value>> = vec![vec![], vec![]];
    if let Some((l, at, dur)) = c.outage {
        events[l].push(json!({"at_ps": ps(at), "up": false}));
        events[l].push(json!({"at_ps": ps(at + dur), "up": true}));
    }
    if let Some((l, at, rate, delay)) = c.change {
        let (bw, ms) = ([8e6, 4e6][l] * rate, [10.0, 25.0][l] * delay);
        events[l].push(json!({"at_ps": ps(at), "bandwidth_bps": bw as u64, "delay_ps": (ms * PS_PER_MS as f64) as u64}));
    }
    if let Some((l, at, dur)) = c.priority {
        events[l].push(json!({"at_ps": ps(at), "backup": true}));
        events[l].push(json!({"at_ps": ps(at + dur), "backup": false}));
    }
    for (l, mut ev) in events.into_iter().enumerate() {
        ev.sort_by_key(|e| e["at_ps"].as_u64());
        s["links"][l]["events"] = json!(ev);
    }
    s
}

/// The one outcome without a transfer: of the client's packets on the
/// initial path, only its SYN crossed; every answer to the server's SYN/ACKs
/// was lost, so the server's half-open subflow timed out, as in any TCP
/// stack, and the client, with nothing to send, never learns of it.
fn handshake_timed_out(summary: &Value) -> bool {
    let up = &summary["links"]["p1"]["a_to_b"];
    let crossed = up["packets"].as_u64().unwrap_or(0) - up["loss_drops"].as_u64().unwrap_or(0);
    crossed == 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn mptcp_delivers_exactly_the_bytes_sent(c in case(), seed in 0u64..1000) {
        let (_, s) = run(&spec(&c, seed)).expect("spec builds");
        let f = &s["flows"]["mp"];
        if handshake_timed_out(&s) {
            prop_assert_eq!(f["bytes_delivered"].as_u64(), Some(0), "{}", f);
            return Ok(());
        }
        prop_assert_eq!(f["bytes_delivered"].as_u64(), Some(c.size_bytes), "{}", f);
        prop_assert!(f["completion_time_s"].is_number(), "did not complete: {}", f);
    }
}

#[test]
fn every_scheduler_and_path_manager_completes_a_clean_transfer() {
    for scheduler in ["default", "roundrobin", "redundant", "upstream"] {
        for path_manager in ["fullmesh", "ndiffports", "default", "endpoints"] {
            let c = Case {
                scheduler,
                path_manager,
                cc: "lia",
                loss: [no_loss(), no_loss()],
                jitter_ms: 0.0,
                outage: None,
                priority: None,
                sndbuf_bytes: None,
                upload: false,
                linux: false,
                backup_p2: false,
                size_bytes: 3_000_000,
                change: None,
            };
            let (_, s) = run(&spec(&c, 1)).expect("spec builds");
            let f = &s["flows"]["mp"];
            assert_eq!(f["bytes_delivered"].as_u64(), Some(3_000_000), "{scheduler}/{path_manager}: {f}");
            let n = f["subflows"].as_array().map_or(0, |a| a.len());
            let want = match path_manager {
                "default" => 1,
                _ => 2,
            };
            assert_eq!(n, want, "{scheduler}/{path_manager}: {f}");
        }
    }
}
