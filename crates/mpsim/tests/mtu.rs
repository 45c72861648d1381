//! The interface MTU end to end: segments are sized so that frames fit the
//! smallest MTU of the links at a flow's hosts (1500 bytes by default), as
//! Linux sizes them (`tcp_sync_mss`, `tcp_current_mss`), and goodput moves
//! by the header bytes a segment carries.

mod common;

use common::testbed::{bernoulli, download, run, Dumbbell, TwoPath, PS_PER_MS};
use serde_json::{json, Value};

const ETHERNET_HEADER_BYTES: u32 = 14;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const IP_PROTO_TCP: u8 = 6;

/// (frame bytes, TCP payload bytes) of every TCP frame of a pcap file.
fn tcp_frames(pcap: &[u8]) -> Vec<(u32, u32)> {
    let mut out = vec![];
    let mut i = 24; // global header
    while i + 16 <= pcap.len() {
        let word = |at: usize| u32::from_le_bytes([pcap[at], pcap[at + 1], pcap[at + 2], pcap[at + 3]]);
        let (incl, orig) = (word(i + 8) as usize, word(i + 12));
        let f = &pcap[i + 16..i + 16 + incl];
        let ip = &f[ETHERNET_HEADER_BYTES as usize..];
        if f[12..14] == ETHERTYPE_IPV4 && ip[9] == IP_PROTO_TCP {
            let ihl = (ip[0] & 0x0f) as u32 * 4;
            let total = u16::from_be_bytes([ip[2], ip[3]]) as u32;
            let data_offset = (ip[ihl as usize + 12] >> 4) as u32 * 4;
            out.push((orig, total - ihl - data_offset));
        }
        i += 16 + incl;
    }
    out
}

/// Runs `spec` capturing `ifaces`; returns the summary and the TCP frames of each.
fn captured(mut spec: Value, ifaces: &[&str]) -> (Value, Vec<Vec<(u32, u32)>>) {
    spec["record"]["pcap"] = json!(ifaces);
    let (sim, summary) = run(&spec).expect("spec builds");
    let pcaps = sim.pcaps();
    let frames =
        ifaces.iter().map(|name| tcp_frames(&pcaps.iter().find(|(n, _)| n == name).expect("captured interface").1)).collect();
    (summary, frames)
}

/// A lossy dumbbell download (SACK blocks on the ACKs) in `mode`, with the
/// payload left to the MTU.
fn lossy_download(mode: &str) -> Value {
    let mut d = Dumbbell::new(1, 10_000_000, 20.0, 100);
    d.loss = bernoulli(0.01);
    d.duration_s = 10.0;
    d.record = false;
    let mut spec = d.spec();
    spec["flows"][0]["cc_mode"] = json!(mode);
    spec["flows"][0]["mss_bytes"] = Value::Null;
    spec
}

fn assert_fit(frames: &[(u32, u32)], mtu_bytes: u32, full_payload_bytes: u32) {
    assert!(frames.len() > 100);
    let largest = frames.iter().map(|f| f.0).max();
    assert!(largest <= Some(mtu_bytes + ETHERNET_HEADER_BYTES), "a frame of {largest:?} bytes");
    assert_eq!(frames.iter().map(|f| f.1).max(), Some(full_payload_bytes));
}

#[test]
fn tcp_segments_fill_a_1500_byte_mtu_and_never_exceed_it() {
    // Linux: 1460 payload bytes without timestamps, 1448 with them.
    for (mode, full) in [("reference", 1460), ("linux", 1448)] {
        let (_, frames) = captured(lossy_download(mode), &["snd0:a0", "rcv0:b0"]);
        for f in &frames {
            assert_fit(f, 1500, full);
        }
    }
}

#[test]
fn a_smaller_mtu_on_a_host_link_shrinks_the_segments_of_its_flows() {
    let mut spec = lossy_download("linux");
    // Links: bottleneck, a0 (the server snd0's), b0 (the client rcv0's).
    assert_eq!(spec["links"][1]["name"], "a0");
    spec["links"][1]["mtu_bytes"] = json!(1280);
    let (summary, frames) = captured(spec, &["snd0:a0", "rcv0:b0"]);
    assert!(summary["flows"]["f0"]["bytes_delivered"].as_u64() > Some(1_000_000));
    for f in &frames {
        assert_fit(f, 1280, 1280 - 20 - 20 - 12);
    }
}

#[test]
fn mptcp_mappings_fit_the_smallest_mtu_of_the_client_interfaces() {
    // 1500 - 20 - 20 - 12 - 28 = 1420 (Linux); with a 1400-byte MTU on one
    // path, every subflow's segments are sized for it.
    for (mtu, full) in [(None, 1420), (Some(1400), 1320)] {
        let mut t = TwoPath::new([4_000_000, 2_000_000], [10.0, 30.0]);
        t.duration_s = 10.0;
        t.loss = [bernoulli(0.01), json!({"model": "none"})];
        let mut flow = TwoPath::mptcp_flow("mp", "lia", download(Some(2_000_000)));
        flow["cc_mode"] = json!("linux");
        flow["mss_bytes"] = Value::Null;
        t.flows = vec![flow];
        let mut spec = t.spec();
        spec["links"][1]["mtu_bytes"] = json!(mtu);
        let (summary, frames) = captured(spec, &["client:p1", "client:p2"]);
        assert_eq!(summary["flows"]["mp"]["bytes_delivered"], 2_000_000);
        for f in &frames {
            assert_fit(f, mtu.unwrap_or(1500), full);
        }
    }
}

/// Goodput and bottleneck (bytes, packets) of a window-limited download
/// (no loss) on a 10 Mbit/s, 40 ms path, linux mode.
fn bulk(timestamps: bool) -> (f64, u64, u64) {
    let mut d = Dumbbell::new(1, 10_000_000, 20.0, 1000);
    d.duration_s = 30.0;
    d.record = false;
    let mut spec = d.spec();
    let f = &mut spec["flows"][0];
    f["cc_mode"] = json!("linux");
    f["timestamps"] = json!(timestamps);
    f["mss_bytes"] = Value::Null;
    // Three bandwidth-delay products: the link stays busy and the queue never fills.
    f["rcvbuf_bytes"] = json!(150_000);
    f["min_rto_ps"] = json!(200 * PS_PER_MS);
    let (_, s) = run(&spec).expect("spec builds");
    let bn = &s["links"]["bottleneck"]["a_to_b"];
    assert_eq!(bn["drops"], 0);
    let goodput_bps = s["flows"]["f0"]["goodput_bps"].as_f64().expect("goodput in the summary");
    (goodput_bps, bn["bytes"].as_u64().expect("link bytes"), bn["packets"].as_u64().expect("link packets"))
}

#[test]
fn bulk_goodput_moves_by_the_header_fraction() {
    let (with_ts, bytes, packets) = bulk(true);
    let (without_ts, _, _) = bulk(false);
    // Both fill 1514-byte frames: the payload is 1448 of them with
    // timestamps, 1460 without.
    assert!(bytes / packets > 1500 && bytes / packets <= 1514, "{} bytes per packet", bytes / packets);
    let expected = 1460.0 / 1448.0;
    assert!((without_ts / with_ts - expected).abs() < 0.001, "{without_ts} / {with_ts}, expected {expected}");
    // The link carries 10 Mbit/s of frames, less the start.
    let share = with_ts / (10e6 * 1448.0 / 1514.0);
    assert!(share > 0.98 && share <= 1.0, "{share}");
}

#[test]
fn an_mtu_outside_576_to_65535_bytes_is_refused() {
    for mtu in [575, 65_536] {
        let mut spec = lossy_download("linux");
        spec["links"][1]["mtu_bytes"] = json!(mtu);
        let err = run(&spec).err().expect("refused").to_string();
        assert!(err.contains("link 'a0': mtu must be 576 to 65535 bytes"), "{err}");
    }
}
