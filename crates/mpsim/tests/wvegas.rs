//! wVegas in the engine (docs/validation.md, wVegas): with the drain rule
//! quiet for the round after a drain and ssthresh following the window up
//! again (`tcp_current_ssthresh`), reference mode keeps a bottleneck it has
//! alone busy and takes it back after a competing flow leaves. (Before:
//! 0.83 alone, 0.32 after the competitor left.)

mod common;

use common::validation_wvegas::bottleneck;
use serde_json::json;

#[test]
fn reference_wvegas_keeps_a_bottleneck_it_has_alone_busy() {
    let b = bottleneck("reference", &json!({}), 0.0, 10.0, 40.0);
    assert!(b.utilisation() >= 0.9, "{b:?}: {}", b.utilisation());
    assert!(b.mean_queue_pkts < 12.0, "a Vegas-sized queue, not a full buffer: {b:?}");
}

#[test]
fn reference_wvegas_takes_the_bottleneck_back_after_a_competitor_leaves() {
    let b = bottleneck("reference", &json!({}), 20.0, 25.0, 45.0);
    assert!(b.utilisation() >= 0.42, "{b:?}: {}", b.utilisation());
}

#[test]
fn mptcp_flows_take_their_cc_params_to_the_builder() {
    // Refused by the engine with the key: the flow's parameters reach the
    // MPTCP controller's constructor (the same string the connection uses).
    let spec = || {
        let mut b = common::testbed::SharedBottleneck::new("wvegas");
        b.duration_s = 1.0;
        b.spec()
    };
    let mut bad = spec();
    bad["flows"][0]["cc_params"] = json!({"total_alpha": 0.5});
    let err = common::testbed::run(&bad).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("'total_alpha'"), "{err}");
    let mut good = spec();
    good["flows"][0]["cc_params"] = json!({"total_alpha": 20.0, "gamma": 2.0});
    assert!(common::testbed::run(&good).is_ok());
}
