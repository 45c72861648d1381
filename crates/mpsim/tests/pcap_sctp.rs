//! SCTP chunks in the pcap writer, read back by Wireshark's dissector: a
//! hand-built association (INIT to SHUTDOWN COMPLETE, DATA with a padded
//! payload, a SACK with gap blocks and duplicate TSNs, HEARTBEAT and its
//! ACK) and the capture of an engine run over two paths. tshark must
//! report no malformed packet and no expert warning, and read back the
//! values written. Without tshark on PATH the test prints a note and passes.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::testbed::{dir, download, link, no_loss, run, PS_PER_S};
use mpsim::pcap::PcapWriter;
use mpsim_core::sctp::{Chunk, DataChunk, SackChunk, COMMON_HEADER_BYTES, DATA_FLAG_B, DATA_FLAG_E};
use mpsim_core::{Addr, Packet, PacketExt, Proto, SimTime};
use serde_json::json;

const CLIENT: Addr = Addr(0x0a00_0101);
const SERVER: Addr = Addr(0x0a00_0001);

fn tshark_available() -> bool {
    Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn temp_pcap(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.pcap", std::process::id()))
}

fn tshark(file: &Path, extra: &[&str]) -> String {
    // Absolute TSNs, and the CRC32c checked.
    let prefs = ["-o", "sctp.relative_tsns:FALSE", "-o", "sctp.checksum:CRC-32C"];
    let out = Command::new("tshark").arg("-n").arg("-r").arg(file).args(prefs).args(extra).output().expect("tshark runs");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One row per frame, one column per field; occurrences joined with ';'.
fn fields(file: &Path, names: &[&str]) -> Vec<BTreeMap<String, String>> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;", "-E", "separator=/t"];
    for f in names {
        args.push("-e");
        args.push(f);
    }
    tshark(file, &args)
        .lines()
        .map(|line| names.iter().map(|f| f.to_string()).zip(line.split('\t').map(str::to_string)).collect())
        .collect()
}

/// No malformed packet and no expert info but the TSN analysis' notes in
/// `allowed` (a run that loses and retransmits chunks gets them).
fn assert_clean(file: &Path, allowed: &[&str]) {
    let verbose = tshark(file, &["-V"]).to_lowercase();
    for bad in ["malformed", "bad checksum", "invalid length", "bogus"] {
        let hits: Vec<&str> = verbose.lines().filter(|l| l.contains(bad)).take(10).collect();
        assert!(hits.is_empty(), "tshark says {bad:?}:\n{}", hits.join("\n"));
    }
    for (i, r) in fields(file, &["_ws.expert.severity", "_ws.expert.message"]).iter().enumerate() {
        let messages = r["_ws.expert.message"].split(';').filter(|m| !m.is_empty());
        for m in messages {
            assert!(allowed.iter().any(|a| m.starts_with(a)), "frame {}: {m:?}", i + 1);
        }
    }
}

fn packet(from_client: bool, chunk: Chunk, payload_bytes: u32) -> Packet {
    let (src, dst, sport, dport) = if from_client { (CLIENT, SERVER, 40_000, 80) } else { (SERVER, CLIENT, 80, 40_000) };
    Packet {
        src,
        dst,
        sport,
        dport,
        proto: Proto::Sctp,
        payload_bytes,
        wire_bytes: 34 + COMMON_HEADER_BYTES + chunk.wire_bytes(payload_bytes),
        ext: PacketExt::Sctp(chunk),
        ..Default::default()
    }
}

fn data(tsn: u32) -> Chunk {
    Chunk::Data(DataChunk { tsn, stream_id: 0, stream_seq: 0, flags: DATA_FLAG_B | DATA_FLAG_E })
}

#[test]
fn tshark_dissects_every_chunk_kind_with_our_values() {
    if !tshark_available() {
        eprintln!("tshark not found: SCTP pcap check skipped");
        return;
    }
    let mut sack = SackChunk { cum_tsn: 1, a_rwnd_bytes: 60_000, ..Default::default() };
    sack.push_gap(2, 3);
    sack.push_gap(5, 5);
    sack.push_dup(1);
    let frames = [
        packet(true, Chunk::Init { initial_tsn: 1, a_rwnd_bytes: 65_536, n_addrs: 2 }, 0),
        packet(false, Chunk::InitAck { initial_tsn: 1, a_rwnd_bytes: 65_536, n_addrs: 2 }, 0),
        packet(true, Chunk::CookieEcho, 0),
        packet(false, Chunk::CookieAck, 0),
        packet(false, data(1), 1452),
        packet(false, data(3), 1001),
        packet(true, Chunk::Sack(sack), 0),
        packet(false, Chunk::Heartbeat { path: 1, sent_ps: 123_456_789 }, 0),
        packet(true, Chunk::HeartbeatAck { path: 1, sent_ps: 123_456_789 }, 0),
        packet(false, Chunk::Shutdown { cum_tsn: 0 }, 0),
        packet(true, Chunk::ShutdownAck, 0),
        packet(false, Chunk::ShutdownComplete, 0),
    ];
    let mut w = PcapWriter::new(Vec::new()).expect("header");
    for (i, p) in frames.iter().enumerate() {
        w.write_packet(SimTime(i as u64 * 1_000_000_000), p).expect("a packet fits");
    }
    let path = temp_pcap("sctp-chunks");
    std::fs::write(&path, w.into_inner().expect("bytes")).expect("written");
    assert_clean(&path, &[]);
    let rows = fields(
        &path,
        &[
            "sctp.chunk_type",
            "frame.len",
            "sctp.data_tsn_raw",
            "sctp.data_payload_proto_id",
            "sctp.sack_cumulative_tsn_ack_raw",
            "sctp.sack_a_rwnd",
            "sctp.sack_gap_block_start",
            "sctp.sack_gap_block_end",
            "sctp.sack_duplicate_tsn",
            "sctp.init_initial_tsn",
            "sctp.shutdown_cumulative_tsn_ack",
            "sctp.checksum.status",
        ],
    );
    let types: Vec<&str> = rows.iter().map(|r| r["sctp.chunk_type"].as_str()).collect();
    assert_eq!(types, ["1", "2", "10", "11", "0", "0", "3", "4", "5", "7", "8", "14"]);
    for (r, p) in rows.iter().zip(&frames) {
        assert_eq!(r["frame.len"], p.wire_bytes.to_string(), "frame length is the wire size");
        assert_eq!(r["sctp.checksum.status"], "1", "CRC32c of {p:?}");
    }
    assert_eq!((rows[4]["sctp.data_tsn_raw"].as_str(), rows[5]["sctp.data_tsn_raw"].as_str()), ("1", "3"));
    assert_eq!(rows[6]["sctp.sack_cumulative_tsn_ack_raw"], "1");
    assert_eq!(rows[6]["sctp.sack_a_rwnd"], "60000");
    assert_eq!(rows[6]["sctp.sack_gap_block_start"], "2;5");
    assert_eq!(rows[6]["sctp.sack_gap_block_end"], "3;5");
    assert_eq!(rows[6]["sctp.sack_duplicate_tsn"], "1");
    assert_eq!(rows[0]["sctp.init_initial_tsn"], "1");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn tshark_reads_the_capture_of_a_cmt_run() {
    if !tshark_available() {
        eprintln!("tshark not found: SCTP pcap check skipped");
        return;
    }
    let d = |bw| dir(bw, 45.0, 50, no_loss());
    let flow = json!({"name": "f", "transport": "cmt", "client": "client", "server": "server", "app": download(Some(200_000)),
                      "start_ps": 0, "cc": "reno", "rcvbuf_bytes": 1u64 << 20, "rbuf_bytes": 64_000});
    let spec = json!({"name": "cmt-pcap", "seed": 1, "duration_ps": 60 * PS_PER_S, "sample_interval_ps": 0,
        "mss_bytes": 1452, "header_bytes": 66,
        "nodes": [{"name": "client", "kind": "host"}, {"name": "server", "kind": "host"}],
        "links": [link("a", "client", "server", d(200_000), d(200_000)), link("b", "client", "server", d(1_000_000), d(1_000_000))],
        "flows": [flow], "record": {"interfaces": false, "subflows": false, "pcap": ["client:a", "client:b"]}});
    let (sim, summary) = run(&spec).expect("spec builds");
    assert_eq!(summary["flows"]["f"]["bytes_delivered"], 200_000);
    let mut data_bytes = 0u64;
    for (name, bytes) in sim.pcaps() {
        let path = temp_pcap(&format!("cmt-run-{name}"));
        std::fs::write(&path, bytes).expect("written");
        // Plain CMT retransmits chunks spuriously, and a SACK may leave
        // before a retransmission it makes needless arrives.
        assert_clean(&path, &["Retransmitted TSN", "This TSN was acked prior to this retransmission"]);
        for r in fields(&path, &["sctp.chunk_type", "sctp.chunk_length"]) {
            if r["sctp.chunk_type"] == "0" {
                data_bytes += r["sctp.chunk_length"].parse::<u64>().expect("a length") - 16;
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    // Every payload byte crossed one of the two links (retransmissions add some).
    let retransmitted = summary["flows"]["f"]["retransmitted_bytes"].as_u64().expect("a count");
    assert_eq!(data_bytes, 200_000 + retransmitted);
}
