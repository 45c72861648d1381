//! The names and defaults a scenario may use, gathered from the modules
//! that parse them, for the front end: it validates scenarios (with the
//! file, line and key of a mistake) against these lists instead of keeping
//! its own copies. The front end must validate without the compiled
//! engine, so it reads them from python/mpsim/vocabulary.json, which is
//! written from [`vocabulary`] and checked against it by a test here.

use crate::spec::TransportSpec;
use mpsim_proto::mptcp::{DEFAULT_MAX_ADD_ADDR_ACCEPTED, DEFAULT_MAX_SUBFLOWS, DEFAULT_NDIFFPORTS_SUBFLOWS, MAX_SUBFLOWS};
use mpsim_proto::sctp::{variants::rtx_policy::RtxPolicy, Variant};
use mpsim_proto::tcp::mtu::{DEFAULT_MTU_BYTES, MAX_MTU_BYTES, MIN_MTU_BYTES};
use mpsim_proto::{PathManagerKind, SchedulerKind, DEFAULT_ADD_ADDR_TIMEOUT};
use serde_json::{json, Map, Value};

/// A transport, the congestion controllers it accepts and the one a flow
/// gets when it names none.
pub struct TransportNames {
    pub name: &'static str,
    pub ccs: &'static [&'static str],
    pub default_cc: Option<&'static str>,
}

/// Every transport of the `transport` key.
pub const TRANSPORTS: &[TransportNames] = &[
    TransportNames { name: "tcp", ccs: mpsim_cc::TCP_ALGORITHMS, default_cc: Some("reno") },
    // RFC 6356's coupled increase is the multipath default (spec section 7).
    TransportNames { name: "mptcp", ccs: mpsim_cc::MPTCP_ALGORITHMS, default_cc: Some("lia") },
    // The association keeps RFC 4960's per-destination windows (Reno's rules).
    TransportNames { name: "cmt", ccs: &["reno"], default_cc: Some("reno") },
    TransportNames { name: "udp", ccs: &[], default_cc: None },
];

/// The transport named `name`.
pub fn transport(name: &str) -> Option<&'static TransportNames> {
    TRANSPORTS.iter().find(|t| t.name == name)
}

/// The names of a `TransportSpec` (the spec's lower-case serde names).
pub fn transport_name(t: TransportSpec) -> &'static str {
    match t {
        TransportSpec::Tcp => "tcp",
        TransportSpec::Udp => "udp",
        TransportSpec::Mptcp => "mptcp",
        TransportSpec::Cmt => "cmt",
    }
}

/// Applications of the `app` key (the spec's `AppSpec` kinds).
pub const APPS: &[&str] = &["download", "upload", "http", "cbr", "onoff", "video"];
/// Queue disciplines of the `qdisc` key (the spec's `QdiscSpec` kinds).
pub const QDISCS: &[&str] = &["droptail", "red", "random_drop", "codel", "fq_codel"];
/// `forwarding` of the simulation and of a node.
pub const FORWARDING: &[&str] = &["shortest", "ecmp"];
/// `smos_schedule` of an smos flow, with whether it is the trunk form;
/// the first is the default.
pub const SMOS_SCHEDULES: &[(&str, bool)] = &[("online", false), ("trunk", true)];
/// `cc_mode` of a flow; the first is the default.
pub const CC_MODES: &[&str] = &["reference", "linux"];

/// The file the front end reads, relative to this crate.
pub const FRONT_END_FILE: &str = "../../python/mpsim/vocabulary.json";

/// The vocabulary as the front end's file holds it.
pub fn vocabulary_file_text() -> String {
    serde_json::to_string_pretty(&vocabulary()).unwrap_or_default() + "\n"
}

/// The vocabulary as one JSON object (the binding hands it to Python).
pub fn vocabulary() -> Value {
    json!({
        "transports": TRANSPORTS.iter().map(|t| t.name).collect::<Vec<_>>(),
        "cc_by_transport": TRANSPORTS.iter().map(|t| (t.name.to_string(), json!(t.ccs))).collect::<Map<_, _>>(),
        "default_cc": TRANSPORTS.iter().map(|t| (t.name.to_string(), json!(t.default_cc))).collect::<Map<_, _>>(),
        "cc_params": cc_params(),
        "cc_param_defaults": cc_param_defaults(),
        "cc_modes": CC_MODES,
        "apps": APPS,
        "qdiscs": QDISCS,
        "forwarding": FORWARDING,
        "schedulers": SchedulerKind::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "path_managers": PathManagerKind::NAMES,
        "cmt_variants": Variant::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "rtx_policies": RtxPolicy::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "smos_schedules": SMOS_SCHEDULES.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "controller_apps": crate::sdn::CONTROLLER_APPS,
        "max_subflows": MAX_SUBFLOWS,
        "defaults": {
            "scheduler": SchedulerKind::NAMES[0].0,
            "path_manager": PathManagerKind::NAMES[0],
            "cmt_variant": Variant::NAMES[0].0,
            "rtx_policy": RtxPolicy::NAMES[0].0,
            "ndiffports_subflows": DEFAULT_NDIFFPORTS_SUBFLOWS,
            "max_subflows": DEFAULT_MAX_SUBFLOWS,
            "max_add_addr_accepted": DEFAULT_MAX_ADD_ADDR_ACCEPTED,
            "add_addr_timeout_ps": DEFAULT_ADD_ADDR_TIMEOUT.0,
            "mtu_bytes": DEFAULT_MTU_BYTES,
        },
        "mtu_bytes_range": [MIN_MTU_BYTES, MAX_MTU_BYTES],
    })
}

/// Each controller's `cc_params` keys with the smallest value each accepts.
fn cc_params() -> Map<String, Value> {
    let keys = |defs: &[mpsim_cc::ParamDef]| defs.iter().map(|d| (d.key.to_string(), json!(d.min))).collect::<Map<_, _>>();
    mpsim_cc::CC_PARAMS.iter().map(|(name, defs)| (name.to_string(), Value::Object(keys(defs)))).collect()
}

/// The values the parameters of Vegas and wVegas take when not given
/// (Balia's floor depends on the mode and is left out).
fn cc_param_defaults() -> Value {
    let v = mpsim_cc::VegasParams::default();
    let w = mpsim_cc::WVegasParams::default();
    json!({
        "vegas": {"alpha": v.alpha_pkts, "beta": v.beta_pkts, "gamma": v.gamma_pkts},
        "wvegas": {"total_alpha": w.total_alpha_pkts, "initial_alpha": w.initial_alpha_pkts, "gamma": w.gamma_pkts},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{AppSpec, CcModeSpec, ForwardingSpec, QdiscSpec};
    use serde::de::DeserializeOwned;

    /// `value` names a variant of `T`: it parses, or fails for another
    /// reason than an unknown variant (a missing field of that variant).
    fn names_a_variant<T: DeserializeOwned>(value: Value) -> bool {
        match serde_json::from_value::<T>(value) {
            Ok(_) => true,
            Err(e) => !e.to_string().contains("unknown variant"),
        }
    }

    #[test]
    fn every_listed_name_is_one_the_spec_accepts() {
        for t in TRANSPORTS {
            let spec: TransportSpec = serde_json::from_value(json!(t.name)).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            assert_eq!(transport_name(spec), t.name);
            assert!(t.default_cc.is_none_or(|cc| t.ccs.contains(&cc)), "{}", t.name);
        }
        for q in QDISCS {
            assert!(names_a_variant::<QdiscSpec>(json!({"kind": q})), "{q}");
        }
        for a in APPS {
            assert!(names_a_variant::<AppSpec>(json!({"kind": a})), "{a}");
        }
        for f in FORWARDING {
            assert!(serde_json::from_value::<ForwardingSpec>(json!(f)).is_ok(), "{f}");
        }
        for m in CC_MODES {
            assert!(serde_json::from_value::<CcModeSpec>(json!(m)).is_ok(), "{m}");
        }
        assert!(!names_a_variant::<QdiscSpec>(json!({"kind": "pie"})));
        assert!(!names_a_variant::<AppSpec>(json!({"kind": "voip"})));
    }

    /// The front end's copy is this vocabulary; `MPSIM_WRITE_VOCABULARY=1
    /// cargo test -p mpsim --lib vocabulary` rewrites it after a change.
    #[test]
    fn the_front_ends_file_is_this_vocabulary() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FRONT_END_FILE);
        let text = vocabulary_file_text();
        if std::env::var_os("MPSIM_WRITE_VOCABULARY").is_some() {
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let found = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            found == text,
            "{} differs from the engine's vocabulary: run MPSIM_WRITE_VOCABULARY=1 cargo test -p mpsim --lib vocabulary",
            path.display()
        );
    }

    #[test]
    fn the_default_cc_mode_is_the_spec_default() {
        let first: CcModeSpec = serde_json::from_value(json!(CC_MODES[0])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first, CcModeSpec::default());
        let first: ForwardingSpec = serde_json::from_value(json!(FORWARDING[0])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first, ForwardingSpec::default());
    }

    #[test]
    fn the_vocabulary_lists_every_controller_app_and_parameter() {
        let v = vocabulary();
        assert_eq!(v["controller_apps"], json!(["shortest", "ecmp", "disjoint", "mpsshetn"]));
        assert_eq!(v["cc_params"]["wvegas"]["total_alpha"], json!(1.0));
        assert_eq!(v["cc_param_defaults"]["vegas"]["beta"], json!(4.0));
        assert_eq!(v["default_cc"]["udp"], Value::Null);
        assert_eq!(v["defaults"]["path_manager"], json!("fullmesh"));
    }
}
