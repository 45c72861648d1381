//! A whole MPTCP run captured with `record.pcap` and read back by tshark:
//! every MPTCP option dissects cleanly and tshark's per-subflow byte counts
//! equal the simulator's. Skipped (with a note) when tshark is absent.

mod common;

use common::testbed::{download, run, TwoPath};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn tshark_out(path: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "mptcp.analyze_mptcp:TRUE", "-o", "tcp.analyze_sequence_numbers:TRUE"])
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A run's pcap files, one per captured interface, deleted when dropped.
struct Captures {
    dir: PathBuf,
    /// (interface name, file), in capture order.
    files: Vec<(String, PathBuf)>,
}

impl Drop for Captures {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `t` capturing both client interfaces; returns the summary and the
/// captures written to a temporary folder named after `tag`.
fn run_captured(t: &TwoPath, tag: &str) -> (Value, Captures) {
    let mut spec = t.spec();
    spec["record"]["pcap"] = json!(["client:p1", "client:p2"]);
    let (sim, s) = run(&spec).expect("spec builds");
    let dir = std::env::temp_dir().join(format!("mpsim-pcap-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = sim
        .pcaps()
        .into_iter()
        .map(|(name, bytes)| {
            let iface = name.split(':').nth(1).expect("node:link").to_string();
            let path = dir.join(format!("{iface}.pcap"));
            std::fs::write(&path, bytes).expect("write pcap");
            (iface, path)
        })
        .collect();
    (s, Captures { dir, files })
}

#[test]
fn captured_mptcp_run_dissects_and_byte_counts_match() {
    if !common::tshark::installed_or_skip("pcap dissection test") {
        return;
    }
    let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    t.loss = [json!({"model": "bernoulli", "p": 0.005}), json!({"model": "none"})];
    t.flows = vec![TwoPath::mptcp_flow("mp", "olia", download(Some(3_000_000)))];
    let (s, captures) = run_captured(&t, "run");
    let f = &s["flows"]["mp"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(3_000_000), "{f}");
    for (iface, path) in &captures.files {
        // No malformed packets, no expert errors.
        let verbose = tshark_out(path, &["-V"]);
        assert!(!verbose.to_lowercase().contains("malformed"), "{iface}: malformed packet");
        let subtypes = tshark_out(path, &["-Y", "mptcp", "-T", "fields", "-e", "tcp.options.mptcp.subtype"]);
        let seen: std::collections::BTreeSet<&str> =
            subtypes.split(|c: char| c == ',' || c.is_whitespace()).filter(|x| !x.is_empty()).collect();
        assert!(seen.contains("2"), "{iface}: no DSS seen: {seen:?}");
        // The server is on the third link (wan), side b: 10.0.2.2.
        // Highest cumulative ACK the client sent per stream = subflow bytes received in order (+1 for FIN).
        let acks = tshark_out(
            path,
            &["-Y", "ip.dst == 10.0.2.2", "-T", "fields", "-e", "tcp.stream", "-e", "tcp.ack", "-e", "tcp.flags.fin"],
        );
        let mut max_ack: BTreeMap<u64, u64> = BTreeMap::new();
        for line in acks.lines() {
            let mut it = line.split('\t');
            let (Some(st), Some(ack)) = (it.next(), it.next()) else { continue };
            let (Ok(st), Ok(ack)) = (st.parse::<u64>(), ack.parse::<u64>()) else { continue };
            let e = max_ack.entry(st).or_default();
            *e = (*e).max(ack);
        }
        let tshark_bytes: u64 = max_ack.values().map(|a| a.saturating_sub(1)).sum();
        let ours: u64 = f["subflows"]
            .as_array()
            .expect("subflows")
            .iter()
            .filter(|x| x["client_interface"] == iface.as_str())
            .map(|x| x["bytes_delivered"].as_u64().unwrap_or(0))
            .sum();
        // The server's FIN takes one sequence number on each subflow that carried it.
        let fins = max_ack.len() as u64;
        assert!(
            tshark_bytes == ours || tshark_bytes == ours + fins,
            "{iface}: tshark {tshark_bytes} vs ours {ours} ({max_ack:?})"
        );
    }
}

#[test]
fn our_data_fin_goes_back_on_the_subflow_the_peer_s_came_on() {
    if !common::tshark::installed_or_skip("DATA_FIN subflow test") {
        return;
    }
    // p2 is short but slow with a deep queue: by the end of the download the
    // server's SRTT on p2 is far above p1's, and it sends its DATA_FIN on p1.
    // The client's SRTTs come from the handshakes (it sends only ACKs), when
    // p2's queue was empty: without the rule of spec 11.1 its DATA_FIN would
    // take p2.
    let mut t = TwoPath::new([4_000_000, 1_000_000], [20.0, 5.0]);
    t.queue_pkts = [50, 300];
    t.duration_s = 60.0;
    t.flows = vec![TwoPath::mptcp_flow("mp", "lia", download(Some(1_000_000)))];
    let (s, captures) = run_captured(&t, "fin");
    assert!(s["flows"]["mp"]["completion_time_s"].is_number());
    let mut fins = BTreeMap::new();
    for (iface, path) in &captures.files {
        let src = tshark_out(path, &["-Y", "tcp.options.mptcp.datafin.flag == 1", "-T", "fields", "-e", "ip.src"]);
        let from_server = src.lines().any(|l| l.trim() == "10.0.2.2");
        let from_client = src.lines().any(|l| !l.trim().is_empty() && l.trim() != "10.0.2.2");
        fins.insert(iface.clone(), (from_server, from_client));
    }
    assert_eq!(fins.get("p1"), Some(&(true, true)), "{fins:?}");
    assert_eq!(fins.get("p2"), Some(&(false, false)), "{fins:?}");
}

/// The checksum of the DSS mapping in a segment's raw TCP options (hex, as
/// tshark's `tcp.options` prints them). tshark reads the mapping's fields
/// but does not show the checksum that follows them.
fn dss_checksum_in(options_hex: &str) -> Option<u16> {
    let hex = options_hex.replace(':', "");
    let bytes: Vec<u8> = (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0 | 1 => i += 1,
            kind => {
                let len = *bytes.get(i + 1)? as usize;
                let opt = bytes.get(i..i + len)?;
                // MPTCP DSS with a mapping: the checksum, when present, is
                // the two bytes after the data-level length (spec 3.3).
                if kind == 30 && opt[2] >> 4 == 2 {
                    let flags = opt[3];
                    let ack = if flags & 0x01 == 0 {
                        0
                    } else if flags & 0x02 == 0 {
                        4
                    } else {
                        8
                    };
                    let dsn = if flags & 0x08 == 0 { 4 } else { 8 };
                    let without = 4 + ack + dsn + 4 + 2;
                    if flags & 0x04 != 0 && len == without + 2 {
                        return Some(u16::from_be_bytes([opt[without], opt[without + 1]]));
                    }
                }
                i += len.max(2);
            }
        }
    }
    None
}

#[test]
fn dss_checksums_on_the_wire_verify_against_the_captured_payload() {
    if !common::tshark::installed_or_skip("DSS checksum test") {
        return;
    }
    let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
    t.duration_s = 10.0;
    let mut f = TwoPath::mptcp_flow("mp", "lia", download(Some(1_000_000)));
    f["dss_checksum"] = json!(true);
    t.flows = vec![f];
    let (s, captures) = run_captured(&t, "csum");
    assert_eq!(s["flows"]["mp"]["bytes_delivered"].as_u64(), Some(1_000_000));
    let mut verified = 0;
    for (name, path) in &captures.files {
        assert!(!tshark_out(path, &["-V"]).to_lowercase().contains("malformed"), "{name}: malformed packet");
        let capable_syns = "tcp.options.mptcp.subtype == 0 && tcp.flags.syn == 1";
        let syn = tshark_out(path, &["-Y", capable_syns, "-T", "fields", "-e", "tcp.options.mptcp.checksumreq.flags"]);
        assert!(syn.lines().all(|l| l.trim() == "1"), "{name}: an MP_CAPABLE without flag A: {syn:?}");
        // Each mapping, as tshark reads it, against its checksum over the captured (zero) payload.
        let mut args = vec!["-Y", "tcp.options.mptcp.rawdataseqno && tcp.len > 0", "-T", "fields"];
        for field in [
            "tcp.options.mptcp.rawdataseqno",
            "tcp.options.mptcp.subflowseqno",
            "tcp.options.mptcp.datalvllen",
            "tcp.len",
            "tcp.options",
        ] {
            args.extend(["-e", field]);
        }
        for line in tshark_out(path, &args).lines() {
            let v: Vec<&str> = line.split('\t').collect();
            let (Ok(dsn), Ok(ssn), Ok(len), Ok(payload)) =
                (v[0].parse::<u64>(), v[1].parse::<u32>(), v[2].parse::<u16>(), v[3].parse::<usize>())
            else {
                panic!("{name}: fields {line:?}")
            };
            let checksum = dss_checksum_in(v[4]).unwrap_or_else(|| panic!("{name}: no DSS checksum in {line:?}"));
            assert!(
                mpsim_proto::mptcp::crypto::dss_checksum_ok(dsn, ssn, len, &vec![0; payload], checksum),
                "{name}: checksum {checksum:#06x} does not verify for DSN {dsn}, SSN {ssn}, length {len}"
            );
            verified += 1;
        }
    }
    assert!(verified > 1_000_000 / 1448, "only {verified} mappings verified");
}
