//! Wireshark's TCP analysis of whole runs: every Note, Warning and Error
//! it raises must be one the scenario causes. Loss causes duplicate ACKs,
//! retransmissions and, downstream of the loss, "previous segment not
//! captured"; a retransmission sent soon after newer data is labelled
//! out-of-order by Wireshark's timing heuristic, which is allowed only for
//! a frame whose sequence range was captured before at the sender (the
//! network model never reorders without jitter); a spurious retransmission
//! only as often as the receivers counted duplicate segments. Links with
//! jitter reorder packets: downstream, an out-of-order segment is then
//! allowed if a segment sent after it arrived before it. A reset only where
//! the scenario removes a subflow, or in answer to an MP_JOIN that reached a
//! connection already closing. Keep-alives, zero windows, ACKs of unseen
//! data, reused ports and anything else fail. No frame may exceed the
//! 1500-byte MTU plus the Ethernet header.
//! Skipped (with a note) when tshark is absent.

mod common;

use common::testbed::{bernoulli, dir, download, link, no_loss, run, Dumbbell, TwoPath, PS_PER_MS, PS_PER_S};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Expert severities (Wireshark's PI_NOTE, PI_WARN, PI_ERROR).
const NOTE: u64 = 0x40_0000;
/// The default interface MTU and the Ethernet header around it.
const MTU_BYTES: u64 = 1500;
const ETHERNET_HEADER_BYTES: u64 = 14;

/// One captured TCP frame and the expert messages of Note level and above.
#[derive(Debug)]
struct Frame {
    number: u64,
    /// (source port, destination port).
    ports: (u16, u16),
    seq_raw: u64,
    len: u64,
    /// Bytes of the whole frame.
    frame_bytes: u64,
    messages: Vec<String>,
    /// A SYN with MP_JOIN (MPTCP option subtype 1), not a SYN-ACK.
    join_syn: bool,
}

fn frames(path: &Path) -> Vec<Frame> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "tcp.analyze_sequence_numbers:TRUE", "-o", "mptcp.analyze_mptcp:TRUE", "-Y", "tcp"])
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;"])
        .args(["-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len"])
        .args(["-e", "_ws.expert.message", "-e", "_ws.expert.severity"])
        .args(["-e", "tcp.flags.syn", "-e", "tcp.flags.ack", "-e", "tcp.options.mptcp.subtype"])
        .args(["-e", "frame.len"])
        .output()
        .expect("tshark runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(parse_frame).collect()
}

fn parse_frame(line: &str) -> Frame {
    let f: Vec<&str> = line.split('|').collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let msgs: Vec<&str> = f.get(5).map_or(vec![], |m| m.split(';').collect());
    let sevs: Vec<u64> = f.get(6).map_or(vec![], |s| s.split(';').filter_map(|x| x.parse().ok()).collect());
    let messages = msgs.iter().zip(&sevs).filter(|(_, &s)| s >= NOTE).map(|(m, _)| m.to_string()).collect();
    let flag = |i: usize| f.get(i).is_some_and(|x| *x == "1" || *x == "True");
    let join = f.get(9).is_some_and(|x| x.split(';').any(|t| t == "1"));
    let join_syn = flag(7) && !flag(8) && join;
    Frame {
        number: num(0),
        ports: (num(1) as u16, num(2) as u16),
        seq_raw: num(3),
        len: num(4),
        frame_bytes: num(10),
        messages,
        join_syn,
    }
}

/// What a scenario may cause.
struct Allowed {
    /// Loss upstream of the capture point: segments go missing.
    loss_upstream: bool,
    /// Segments the receivers got twice (the summary's spurious count).
    spurious: u64,
    /// Subflows are removed: an interface goes down under the fullmesh
    /// path manager, whose peer resets them on the REMOVE_ADDR (as the
    /// out-of-tree kernel's `mptcp_sub_force_close`).
    resets: bool,
}

/// Also allowed everywhere: a reset answering an MP_JOIN SYN, which a
/// connection that is no longer established refuses (Linux
/// `mptcp_can_accept_new_subflow`): a short connection may close before
/// its join arrives.
fn answers_a_join(f: &Frame, joins: &BTreeSet<(u16, u16)>) -> bool {
    joins.contains(&(f.ports.1, f.ports.0))
}

/// Checks every expert message of `capture`; `sender` is a capture at the
/// data sender's own interface (where every first transmission is seen).
fn check(capture: &Path, sender: &Path, allowed: &Allowed) {
    let sent_before: BTreeMap<(u16, u16, u64), u64> = {
        let mut m = BTreeMap::new();
        for f in frames(sender).into_iter().filter(|f| f.len > 0) {
            m.entry((f.ports.0, f.ports.1, f.seq_raw)).or_insert(f.number);
        }
        m
    };
    let same_file = capture == sender;
    let mut spurious = 0;
    let mut unexpected = BTreeSet::new();
    // Per direction of a subflow, the latest first transmission (the
    // sender's frame number) among the segments captured so far.
    let mut latest_sent: BTreeMap<(u16, u16), u64> = BTreeMap::new();
    let mut joins = BTreeSet::new();
    for f in frames(capture) {
        assert!(
            f.frame_bytes <= ETHERNET_HEADER_BYTES + MTU_BYTES,
            "{}: frame {} of {} bytes",
            capture.display(),
            f.number,
            f.frame_bytes
        );
        if f.join_syn {
            joins.insert(f.ports);
        }
        let sent = sent_before.get(&(f.ports.0, f.ports.1, f.seq_raw)).copied();
        let overtaken = !same_file && sent.is_some_and(|n| latest_sent.get(&f.ports).is_some_and(|&l| l > n));
        if let Some(n) = sent {
            let l = latest_sent.entry(f.ports).or_insert(n);
            *l = (*l).max(n);
        }
        for m in &f.messages {
            let ok = if m.starts_with("Duplicate ACK") || m.contains("connection closing") {
                true
            } else if m.contains("spurious retransmission") {
                spurious += 1;
                true
            } else if m.contains("retransmission") {
                true
            } else if m.starts_with("Previous segment(s) not captured") {
                allowed.loss_upstream
            } else if m.contains("out-of-order segment") {
                // At the sender, a retransmission (its first transmission
                // came earlier); downstream, a segment sent after its first
                // transmission arrived before it: it is a retransmission or
                // was reordered.
                if same_file {
                    sent.is_some_and(|n| n < f.number)
                } else {
                    overtaken
                }
            } else if m.starts_with("Connection reset") {
                allowed.resets || answers_a_join(&f, &joins)
            } else {
                false
            };
            if !ok {
                unexpected.insert(format!("frame {}: {m}", f.number));
            }
        }
    }
    let first: Vec<_> = unexpected.iter().take(10).collect();
    assert!(unexpected.is_empty(), "{}: {} unexpected, e.g. {first:#?}", capture.display(), unexpected.len());
    assert!(
        spurious <= allowed.spurious,
        "{}: {spurious} spurious retransmissions flagged, {} counted",
        capture.display(),
        allowed.spurious
    );
}

/// A run's captures in a temporary folder, removed when dropped (kept
/// for a look with Wireshark if MPSIM_KEEP_CAPTURES is set).
struct Captures {
    dir: PathBuf,
}

impl Captures {
    fn of(spec: &Value, tag: &str) -> (Value, Captures) {
        let (sim, s) = run(spec).expect("spec builds");
        let dir = std::env::temp_dir().join(format!("mpsim-expert-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for (name, bytes) in sim.pcaps() {
            std::fs::write(dir.join(format!("{}.pcap", name.replace(':', "-"))), bytes).expect("write pcap");
        }
        (s, Captures { dir })
    }
    fn path(&self, iface: &str) -> PathBuf {
        self.dir.join(format!("{}.pcap", iface.replace(':', "-")))
    }
}

impl Drop for Captures {
    fn drop(&mut self) {
        if std::env::var_os("MPSIM_KEEP_CAPTURES").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn spurious(s: &Value) -> u64 {
    let flows = s["flows"].as_object().expect("flows");
    flows
        .values()
        .flat_map(|f| f["subflows"].as_array().cloned().unwrap_or_default())
        .map(|p| p["spurious_retransmissions"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn a_dumbbell_with_drop_tail_losses_raises_only_what_loss_causes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    let mut d = Dumbbell::new(2, 10_000_000, 20.0, 50);
    d.ccs = vec!["reno".into(), "cubic".into()];
    d.duration_s = 10.0;
    d.record = false;
    let mut spec = d.spec();
    spec["record"]["pcap"] = json!(["rcv0:b0", "snd0:a0"]);
    let (s, c) = Captures::of(&spec, "dumbbell");
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s), resets: false };
    check(&c.path("rcv0:b0"), &c.path("snd0:a0"), &allowed);
    check(&c.path("snd0:a0"), &c.path("snd0:a0"), &Allowed { loss_upstream: false, ..allowed });
}

#[test]
fn a_lossy_path_raises_only_what_loss_causes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    for mode in ["reference", "linux"] {
        let mut d = Dumbbell::new(1, 10_000_000, 20.0, 1000);
        d.loss = bernoulli(0.01);
        d.duration_s = 10.0;
        d.record = false;
        let mut spec = d.spec();
        spec["links"][0]["b_to_a"]["loss"] = bernoulli(0.01);
        spec["flows"][0]["cc_mode"] = json!(mode);
        spec["record"]["pcap"] = json!(["rcv0:b0", "snd0:a0"]);
        let (s, c) = Captures::of(&spec, mode);
        // Data is lost between the two capture points; the sender's own
        // capture sees everything it sent.
        let allowed = Allowed { loss_upstream: true, spurious: spurious(&s), resets: false };
        check(&c.path("rcv0:b0"), &c.path("snd0:a0"), &allowed);
        check(&c.path("snd0:a0"), &c.path("snd0:a0"), &Allowed { loss_upstream: false, ..allowed });
    }
}

#[test]
fn a_hundred_http_connections_raise_nothing_but_their_closes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    let mut d = Dumbbell::new(1, 10_000_000, 20.0, 100);
    d.duration_s = 30.0;
    d.record = false;
    let mut spec = d.spec();
    spec["flows"][0]["app"] = json!({"kind": "http", "sizes_bytes": [10_000], "repeat": 100,
        "gap_ps": 100 * PS_PER_MS, "new_connection": true, "request_bytes": 100});
    spec["record"]["pcap"] = json!(["rcv0:b0", "snd0:a0"]);
    let (s, c) = Captures::of(&spec, "http");
    assert_eq!(s["flows"]["f0"]["requests"].as_array().map(Vec::len), Some(100));
    let none = Allowed { loss_upstream: false, spurious: 0, resets: false };
    check(&c.path("rcv0:b0"), &c.path("snd0:a0"), &none);
    check(&c.path("snd0:a0"), &c.path("snd0:a0"), &none);
}

#[test]
fn an_mptcp_download_over_two_paths_raises_only_what_loss_causes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    t.loss = [bernoulli(0.01), json!({"model": "none"})];
    t.flows = vec![TwoPath::mptcp_flow("mp", "olia", download(Some(3_000_000)))];
    let mut spec = t.spec();
    spec["record"]["pcap"] = json!(["client:p1", "client:p2", "server:wan"]);
    let (s, c) = Captures::of(&spec, "mptcp");
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s), resets: false };
    for iface in ["client:p1", "client:p2"] {
        check(&c.path(iface), &c.path("server:wan"), &allowed);
    }
    check(&c.path("server:wan"), &c.path("server:wan"), &Allowed { loss_upstream: false, ..allowed });
}

/// scenarios/wifi-3g.toml as the front end gives it to the engine: an
/// MPTCP (lia, fullmesh) download over wifi (4 Mbit/s, 10 ms, 50 packets,
/// 1 ms jitter) and 3G (2 Mbit/s, 40 ms, 100 packets, 2 ms jitter) to a
/// router, 100 Mbit/s and 5 ms on to the server; with `wifi_events` on
/// the wifi link and 3G a backup path if `backup_3g`
/// (scenarios/wifi-3g-backup.toml).
fn wifi_3g(duration_s: u64, wifi_events: Value, backup_3g: bool) -> Value {
    let jittered = |bw, delay_ms, queue, jitter_ms: u64| {
        let mut d = dir(bw, delay_ms, queue, no_loss());
        d["jitter_ps"] = json!(jitter_ms * PS_PER_MS);
        d
    };
    let mut wifi = link("wifi", "client", "router", jittered(4_000_000, 10.0, 50, 1), jittered(4_000_000, 10.0, 50, 1));
    wifi["events"] = wifi_events;
    let g3 = link("3g", "client", "router", jittered(2_000_000, 40.0, 100, 2), jittered(2_000_000, 40.0, 100, 2));
    let wan = link("wan", "router", "server", dir(100_000_000, 5.0, 100, no_loss()), dir(100_000_000, 5.0, 100, no_loss()));
    let mut flow = TwoPath::mptcp_flow("ftp", "lia", download(None));
    flow["rcvbuf_bytes"] = json!(6u64 << 20);
    flow["start_jitter_ps"] = json!(50 * PS_PER_MS);
    if backup_3g {
        flow["backup_interfaces"] = json!(["3g"]);
    }
    json!({"name": "wifi-3g", "seed": 1, "duration_ps": duration_s * PS_PER_S, "sample_interval_ps": PS_PER_S,
        "mss_bytes": 1448, "header_bytes": 66,
        "nodes": [{"name": "client", "kind": "host"}, {"name": "router", "kind": "router"}, {"name": "server", "kind": "host"}],
        "links": [wifi, g3, wan], "flows": [flow],
        "record": {"interfaces": false, "subflows": false, "pcap": ["client:wifi", "client:3g", "server:wan"]}})
}

/// Checks the client's two captures against the server's, and the
/// server's own: queues drop (loss upstream of the client) and jitter
/// reorders.
fn check_wifi_3g(spec: &Value, tag: &str, resets: bool) {
    let (s, c) = Captures::of(spec, tag);
    assert!(s["flows"]["ftp"]["bytes_delivered"].as_u64().unwrap_or(0) > 1_000_000, "{tag}: {s}");
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s), resets };
    for iface in ["client:wifi", "client:3g"] {
        check(&c.path(iface), &c.path("server:wan"), &allowed);
    }
    check(&c.path("server:wan"), &c.path("server:wan"), &Allowed { loss_upstream: false, ..allowed });
}

#[test]
fn the_wifi_3g_scenario_raises_only_what_its_queues_and_jitter_cause() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    check_wifi_3g(&wifi_3g(30, json!([]), false), "wifi-3g", false);
}

#[test]
fn a_wifi_failure_and_return_under_mptcp_raises_only_what_it_causes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    // scenarios/wifi-3g-backup.toml: wifi down at 30 s and back at 50 s,
    // 3G a backup path until then, wifi the backup from 70 to 90 s.
    let at = |s: u64| json!(s * PS_PER_S);
    let event = |t: u64, up: Value, backup: Value| {
        json!({"at_ps": at(t), "direction": "both", "up": up, "bandwidth_bps": null, "delay_ps": null,
               "loss": null, "queue": null, "jitter_ps": null, "backup": backup})
    };
    let events = json!([
        event(30, json!(false), Value::Null),
        event(50, json!(true), Value::Null),
        event(70, Value::Null, json!(true)),
        event(90, Value::Null, json!(false)),
    ]);
    // The wifi subflow removed at 30 s is reset by the server.
    check_wifi_3g(&wifi_3g(120, events, true), "wifi-3g-backup", true);
}

#[test]
fn a_hundred_mptcp_http_connections_raise_nothing_but_their_closes() {
    if !common::tshark::installed_or_skip("expert-info test") {
        return;
    }
    // Two lossless paths with room in their queues: nothing is lost,
    // and each connection ends by the DATA_FIN exchange and subflow FINs.
    let mut t = TwoPath::new([10_000_000, 10_000_000], [10.0, 20.0]);
    t.queue_pkts = [1000, 1000];
    t.duration_s = 90.0;
    let app = json!({"kind": "http", "sizes_bytes": [10_000], "repeat": 100, "gap_ps": 100 * PS_PER_MS,
                     "new_connection": true, "request_bytes": 100});
    t.flows = vec![TwoPath::mptcp_flow("web", "lia", app)];
    let mut spec = t.spec();
    spec["record"] = json!({"interfaces": false, "subflows": false, "pcap": ["client:p1", "client:p2", "server:wan"]});
    let (s, c) = Captures::of(&spec, "mptcp-http");
    assert_eq!(s["flows"]["web"]["requests"].as_array().map(Vec::len), Some(100));
    let none = Allowed { loss_upstream: false, spurious: 0, resets: false };
    for iface in ["client:p1", "client:p2"] {
        check(&c.path(iface), &c.path("server:wan"), &none);
    }
    check(&c.path("server:wan"), &c.path("server:wan"), &none);
}

/// (TCP payload, data-level length of its DSS mapping) of every MPTCP
/// data segment that carries a mapping.
fn mapped_segments(path: &Path) -> Vec<(u64, u64)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-Y", "tcp.len > 0 && tcp.options.mptcp.datalvllen", "-T", "fields", "-E", "separator=|"])
        .args(["-e", "tcp.len", "-e", "tcp.options.mptcp.datalvllen"])
        .output()
        .expect("tshark runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let num = |x: Option<&str>| x.and_then(|v| v.split(',').next()?.parse::<u64>().ok()).unwrap_or(0);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut f = l.split('|');
            (num(f.next()), num(f.next()))
        })
        .collect()
}

#[test]
fn mptcp_segments_in_linux_mode_carry_what_the_mtu_leaves_beside_the_options() {
    if !common::tshark::installed_or_skip("MTU test") {
        return;
    }
    // Linux: 1500 - IPv4 20 - TCP 20 - timestamps 12 - DSS 28 = 1420.
    let full = MTU_BYTES - 20 - 20 - 12 - 28;
    let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    t.loss = [bernoulli(0.01), json!({"model": "none"})];
    let mut flow = TwoPath::mptcp_flow("mp", "lia", download(Some(3_000_000)));
    flow["cc_mode"] = json!("linux");
    flow["mss_bytes"] = json!(null);
    t.flows = vec![flow];
    let mut spec = t.spec();
    spec["record"]["pcap"] = json!(["client:p1", "client:p2", "server:wan"]);
    let (s, c) = Captures::of(&spec, "mtu");
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s), resets: false };
    check(&c.path("server:wan"), &c.path("server:wan"), &Allowed { loss_upstream: false, ..allowed });
    let segs = mapped_segments(&c.path("server:wan"));
    assert!(segs.len() > 1000, "{} mapped segments", segs.len());
    assert_eq!(segs.iter().map(|s| s.0).max(), Some(full));
    assert!(segs.iter().all(|&(len, mapped)| len == mapped), "a mapping longer or shorter than its segment");
}
