//! A whole MPTCP run captured with `record.pcap` and read back by tshark:
//! every MPTCP option dissects cleanly and tshark's per-subflow byte counts
//! equal the simulator's. Skipped (with a note) when tshark is absent.

use mpsim::testbed::{download, run, TwoPath};
use serde_json::json;
use std::collections::BTreeMap;
use std::process::Command;

fn tshark() -> bool {
    Command::new("tshark").arg("-v").output().is_ok_and(|o| o.status.success())
}

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

#[test]
fn captured_mptcp_run_dissects_and_byte_counts_match() {
    if !tshark() {
        eprintln!("tshark not installed: pcap dissection test skipped");
        return;
    }
    let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
    t.duration_s = 20.0;
    t.loss = [json!({"model": "bernoulli", "p": 0.005}), json!({"model": "none"})];
    t.flows = vec![TwoPath::mptcp_flow("mp", "olia", download(Some(3_000_000)))];
    let mut spec = t.spec();
    spec["record"]["pcap"] = json!(["client:p1", "client:p2"]);
    let (sim, s) = run(&spec).expect("spec builds");
    let f = &s["flows"]["mp"];
    assert_eq!(f["bytes_delivered"].as_u64(), Some(3_000_000), "{f}");
    let dir = std::env::temp_dir().join(format!("mpsim-pcap-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, bytes) in sim.pcaps() {
        let iface = name.split(':').nth(1).expect("node:link");
        let path = dir.join(format!("{iface}.pcap"));
        std::fs::write(&path, bytes).expect("write pcap");
        // No malformed packets, no expert errors.
        let verbose = tshark_out(&path, &["-V"]);
        assert!(!verbose.to_lowercase().contains("malformed"), "{iface}: malformed packet");
        let subtypes = tshark_out(&path, &["-Y", "mptcp", "-T", "fields", "-e", "tcp.options.mptcp.subtype"]);
        let seen: std::collections::BTreeSet<&str> =
            subtypes.split(|c: char| c == ',' || c.is_whitespace()).filter(|x| !x.is_empty()).collect();
        assert!(seen.contains("2"), "{iface}: no DSS seen: {seen:?}");
        // The server is on the third link (wan), side b: 10.0.2.2.
        // Highest cumulative ACK the client sent per stream = subflow bytes received in order (+1 for FIN).
        let acks = tshark_out(
            &path,
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
            .filter(|x| x["client_interface"] == iface)
            .map(|x| x["bytes_delivered"].as_u64().unwrap_or(0))
            .sum();
        // The server's FIN takes one sequence number on each subflow that carried it.
        let fins = max_ack.len() as u64;
        assert!(
            tshark_bytes == ours || tshark_bytes == ours + fins,
            "{iface}: tshark {tshark_bytes} vs ours {ours} ({max_ack:?})"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn our_data_fin_goes_back_on_the_subflow_the_peer_s_came_on() {
    if !tshark() {
        eprintln!("tshark not installed: DATA_FIN subflow test skipped");
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
    let mut spec = t.spec();
    spec["record"]["pcap"] = json!(["client:p1", "client:p2"]);
    let (sim, s) = run(&spec).expect("spec builds");
    assert!(s["flows"]["mp"]["completion_time_s"].is_number());
    let dir = std::env::temp_dir().join(format!("mpsim-pcap-fin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut fins = BTreeMap::new();
    for (name, bytes) in sim.pcaps() {
        let iface = name.split(':').nth(1).expect("node:link").to_string();
        let path = dir.join(format!("{iface}.pcap"));
        std::fs::write(&path, bytes).expect("write pcap");
        let src = tshark_out(&path, &["-Y", "tcp.options.mptcp.datafin.flag == 1", "-T", "fields", "-e", "ip.src"]);
        let from_server = src.lines().any(|l| l.trim() == "10.0.2.2");
        let from_client = src.lines().any(|l| !l.trim().is_empty() && l.trim() != "10.0.2.2");
        fins.insert(iface, (from_server, from_client));
    }
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(fins.get("p1"), Some(&(true, true)), "{fins:?}");
    assert_eq!(fins.get("p2"), Some(&(false, false)), "{fins:?}");
}
