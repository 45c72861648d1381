//! Wireshark's TCP analysis of whole runs: every Note, Warning and Error
//! it raises must be one the scenario causes. Loss causes duplicate ACKs,
//! retransmissions and, downstream of the loss, "previous segment not
//! captured"; a retransmission sent soon after newer data is labelled
//! out-of-order by Wireshark's timing heuristic, which is allowed only for
//! a frame whose sequence range was captured before at the sender (the
//! network model never reorders without jitter); a spurious retransmission
//! only as often as the receivers counted duplicate segments. Keep-alives,
//! zero windows, ACKs of unseen data, reused ports and anything else fail.
//! No frame may exceed the 1500-byte MTU plus the Ethernet header.
//! Skipped (with a note) when tshark is absent.

mod common;

use common::testbed::{bernoulli, download, run, Dumbbell, TwoPath, PS_PER_MS};
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
}

fn frames(path: &Path) -> Vec<Frame> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "tcp.analyze_sequence_numbers:TRUE", "-o", "mptcp.analyze_mptcp:TRUE", "-Y", "tcp"])
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;"])
        .args(["-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len"])
        .args(["-e", "_ws.expert.message", "-e", "_ws.expert.severity", "-e", "frame.len"])
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
    Frame { number: num(0), ports: (num(1) as u16, num(2) as u16), seq_raw: num(3), len: num(4), frame_bytes: num(7), messages }
}

/// What a scenario may cause.
struct Allowed {
    /// Loss upstream of the capture point: segments go missing.
    loss_upstream: bool,
    /// Segments the receivers got twice (the summary's spurious count).
    spurious: u64,
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
    for f in frames(capture) {
        assert!(
            f.frame_bytes <= ETHERNET_HEADER_BYTES + MTU_BYTES,
            "{}: frame {} of {} bytes",
            capture.display(),
            f.number,
            f.frame_bytes
        );
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
                // A retransmission: its first transmission came earlier.
                sent_before.get(&(f.ports.0, f.ports.1, f.seq_raw)).is_some_and(|&n| !same_file || n < f.number)
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

/// A run's captures in a temporary folder, removed when dropped.
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
        let _ = std::fs::remove_dir_all(&self.dir);
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
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s) };
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
        let allowed = Allowed { loss_upstream: true, spurious: spurious(&s) };
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
    let none = Allowed { loss_upstream: false, spurious: 0 };
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
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s) };
    for iface in ["client:p1", "client:p2"] {
        check(&c.path(iface), &c.path("server:wan"), &allowed);
    }
    check(&c.path("server:wan"), &c.path("server:wan"), &Allowed { loss_upstream: false, ..allowed });
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
    let allowed = Allowed { loss_upstream: true, spurious: spurious(&s) };
    check(&c.path("server:wan"), &c.path("server:wan"), &Allowed { loss_upstream: false, ..allowed });
    let segs = mapped_segments(&c.path("server:wan"));
    assert!(segs.len() > 1000, "{} mapped segments", segs.len());
    assert_eq!(segs.iter().map(|s| s.0).max(), Some(full));
    assert!(segs.iter().all(|&(len, mapped)| len == mapped), "a mapping longer or shorter than its segment");
}
