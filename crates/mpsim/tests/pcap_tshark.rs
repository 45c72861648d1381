//! The pcap writer checked by Wireshark's own dissector: a hand-built,
//! consistent MPTCP v1 exchange (MP_CAPABLE handshake, data with DSS both
//! ways, ADD_ADDR and its echo, an MP_JOIN subflow with real token and
//! HMACs, SACK and a retransmission, MP_PRIO, DATA_FINs, REMOVE_ADDR,
//! subflow FINs) plus a second capture of the rarer forms (checksums, v0,
//! ports, MP_FAIL, MP_FASTCLOSE, MP_TCPRST) is written with [`PcapWriter`]
//! and read back with tshark. The test asserts that tshark finds no
//! malformed packet and no expert error, that the IPv4 and TCP checksums
//! validate, that every MPTCP option is dissected with the values written,
//! that Wireshark's MPTCP analysis puts both subflows in one connection,
//! and that its per-4-tuple payload byte counts equal ours. Without tshark
//! on PATH the test prints a note and passes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpsim::pcap::PcapWriter;
use mpsim_core::mptcp::{Dss, DssMapping, MpOption, MptcpOpts};
use mpsim_core::time::PS_PER_MS;
use mpsim_core::{Addr, Packet, PacketExt, SackBlocks, SimTime, TcpFlags, Timestamps};
use mpsim_proto::mptcp::crypto;

const KEY_C: u64 = 0x0123_4567_89ab_cdef;
const KEY_S: u64 = 0xfedc_ba98_7654_3210;
const R_C: u32 = 0x0102_0304;
const R_S: u32 = 0x0a0b_0c0d;
const CLIENT: Addr = Addr(0x0a00_0101); // 10.0.1.1
const SERVER: Addr = Addr(0x0a00_0001); // 10.0.0.1
const SERVER_2: Addr = Addr(0x0a00_0201); // 10.0.2.1, address id 1
const HEADER_BYTES_MODEL: u32 = 66;

const SYN: u8 = TcpFlags::SYN;
const ACK: u8 = TcpFlags::ACK;
const PSH_ACK: u8 = TcpFlags::PSH | TcpFlags::ACK;
const FIN_ACK: u8 = TcpFlags::FIN | TcpFlags::ACK;

/// One direction of a subflow.
#[derive(Clone, Copy)]
struct Dir {
    src: Addr,
    sport: u16,
    dst: Addr,
    dport: u16,
}

impl Dir {
    fn reverse(self) -> Dir {
        Dir { src: self.dst, sport: self.dport, dst: self.src, dport: self.sport }
    }
    fn key(self) -> String {
        format!("{}:{}>{}:{}", self.src, self.sport, self.dst, self.dport)
    }
}

/// The packets of a capture, in order, with what tshark should report.
#[derive(Default)]
struct Capture {
    pkts: Vec<(SimTime, Packet)>,
}

/// A segment to add; `ext` defaults to no MPTCP option.
struct Seg {
    dir: Dir,
    flags: u8,
    seq: u64,
    ack: u64,
    payload_bytes: u32,
    sack: SackBlocks,
    dss: Option<Dss>,
    option: MpOption,
}

fn seg(dir: Dir, flags: u8, seq: u64, ack: u64) -> Seg {
    Seg { dir, flags, seq, ack, payload_bytes: 0, sack: SackBlocks::default(), dss: None, option: MpOption::None }
}

impl Seg {
    fn data(mut self, payload_bytes: u32) -> Self {
        self.payload_bytes = payload_bytes;
        self
    }
    fn dss(mut self, dss: Dss) -> Self {
        self.dss = Some(dss);
        self
    }
    fn opt(mut self, option: MpOption) -> Self {
        self.option = option;
        self
    }
    fn sack(mut self, start: u64, end: u64) -> Self {
        self.sack.push(start, end);
        self
    }
}

impl Capture {
    fn add(&mut self, time_ms: u64, s: Seg) {
        let ext = if s.dss.is_none() && s.option == MpOption::None {
            PacketExt::None
        } else {
            PacketExt::Mptcp(MptcpOpts { dss: s.dss, option: s.option })
        };
        let pkt = Packet {
            src: s.dir.src,
            dst: s.dir.dst,
            sport: s.dir.sport,
            dport: s.dir.dport,
            flags: TcpFlags(s.flags),
            seq: s.seq,
            ack: s.ack,
            wnd_bytes: 256 * 1024,
            sack: s.sack,
            payload_bytes: s.payload_bytes,
            wire_bytes: s.payload_bytes + HEADER_BYTES_MODEL + s.sack.option_bytes() + ext.option_bytes(),
            ext,
            // A connection with timestamps, which HEADER_BYTES_MODEL counts.
            ts: Some(Timestamps { val_ms: Timestamps::clock_ms(SimTime(time_ms * PS_PER_MS)), ecr_ms: 0 }),
            ..Default::default()
        };
        self.pkts.push((SimTime(time_ms * PS_PER_MS), pkt));
    }

    fn write(&self, path: &Path) {
        let file = File::create(path).expect("temp file is writable");
        let mut w = PcapWriter::new(BufWriter::new(file)).expect("pcap header written");
        for (t, p) in &self.pkts {
            w.write_packet(*t, p).expect("packet written");
        }
        w.into_inner().expect("flushed");
    }

    /// MPTCP subtypes per packet, in the order the writer renders them
    /// (DSS first), as tshark lists them.
    fn expected_subtypes(&self) -> Vec<String> {
        self.pkts
            .iter()
            .map(|(_, p)| {
                let Some(m) = p.ext.mptcp() else { return String::new() };
                let mut v: Vec<String> = Vec::new();
                if m.dss.is_some() {
                    v.push("2".into());
                }
                if let Some(st) = subtype(&m.option) {
                    v.push(st.to_string());
                }
                v.join(";")
            })
            .collect()
    }

    /// Payload bytes per direction of each 4-tuple.
    fn payload_by_tuple(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for (_, p) in &self.pkts {
            let dir = Dir { src: p.src, sport: p.sport, dst: p.dst, dport: p.dport };
            *m.entry(dir.key()).or_insert(0) += p.payload_bytes as u64;
        }
        m
    }
}

fn subtype(opt: &MpOption) -> Option<u8> {
    Some(match opt {
        MpOption::None => return None,
        MpOption::CapableSyn { .. }
        | MpOption::CapableSynAck { .. }
        | MpOption::CapableAck { .. }
        | MpOption::CapableData { .. } => 0,
        MpOption::JoinSyn { .. } | MpOption::JoinSynAck { .. } | MpOption::JoinAck { .. } => 1,
        MpOption::AddAddr { .. } => 3,
        MpOption::RemoveAddr { .. } => 4,
        MpOption::MpPrio { .. } => 5,
        MpOption::MpFail { .. } => 6,
        MpOption::FastClose { .. } => 7,
        MpOption::TcpRst { .. } => 8,
    })
}

fn ack64(data_ack: u64) -> Dss {
    Dss { data_ack: Some(data_ack), ack64: true, ..Default::default() }
}

fn map64(data_ack: u64, dsn: u64, ssn: u32, len: u16) -> Dss {
    Dss { mapping: Some(DssMapping { dsn, ssn, len }), dsn64: true, ..ack64(data_ack) }
}

fn data_fin64(data_ack: u64, dsn: u64) -> Dss {
    Dss { data_fin: true, ..map64(data_ack, dsn, 0, 1) }
}

/// The consistent v1 exchange. Frame numbers (1-based) are noted where the
/// assertions below look at them.
fn main_exchange() -> Capture {
    let up = Dir { src: CLIENT, sport: 40_000, dst: SERVER, dport: 80 };
    let down = up.reverse();
    let up2 = Dir { src: CLIENT, sport: 40_001, dst: SERVER_2, dport: 80 };
    let down2 = up2.reverse();
    let (token_s, idsn_s) = crypto::token_idsn_v1(KEY_S);
    let (_, idsn_c) = crypto::token_idsn_v1(KEY_C);
    // Connection-level offsets from each side's first data byte.
    let dc = |off: u64| idsn_c + 1 + off;
    let ds = |off: u64| idsn_s + 1 + off;
    let v = 1;
    let mut c = Capture::default();
    // Subflow 1: MP_CAPABLE handshake (frames 1-3) and first data (4).
    c.add(0, seg(up, SYN, 0, 0).opt(MpOption::CapableSyn { version: v, checksum: false }));
    c.add(10, seg(down, SYN | ACK, 0, 1).opt(MpOption::CapableSynAck { version: v, checksum: false, key: KEY_S }));
    c.add(
        20,
        seg(up, ACK, 1, 1).opt(MpOption::CapableAck { version: v, checksum: false, sender_key: KEY_C, receiver_key: KEY_S }),
    );
    let first = MpOption::CapableData { version: v, checksum: false, sender_key: KEY_C, receiver_key: KEY_S, data_len: 1000 };
    c.add(21, seg(up, PSH_ACK, 1, 1).data(1000).opt(first));
    // Frames 5-7: DATA_ACK, server data (64-bit), client data (32-bit).
    c.add(30, seg(down, ACK, 1, 1001).dss(ack64(dc(1000))));
    c.add(31, seg(down, PSH_ACK, 1, 1001).data(500).dss(map64(dc(1000), ds(0), 1, 500)));
    let d32 =
        Dss { data_ack: Some(ds(500)), mapping: Some(DssMapping { dsn: dc(1000), ssn: 1001, len: 1000 }), ..Default::default() };
    c.add(32, seg(up, PSH_ACK, 1001, 501).data(1000).dss(d32));
    // Frames 8-9: the server announces 10.0.2.1 (id 1); the client echoes.
    let hmac = crypto::add_addr_hmac64(KEY_S, KEY_C, 1, SERVER_2.0, None);
    let add = MpOption::AddAddr { addr_id: 1, addr: SERVER_2.0, port: None, hmac64: Some(hmac), echo: false };
    c.add(40, seg(down, ACK, 501, 2001).dss(ack64(dc(2000))).opt(add));
    let echo = MpOption::AddAddr { addr_id: 1, addr: SERVER_2.0, port: None, hmac64: None, echo: true };
    c.add(45, seg(up, ACK, 2001, 501).dss(ack64(ds(500))).opt(echo));
    // Frames 10-13: MP_JOIN to the announced address, then the 4th ACK.
    c.add(50, seg(up2, SYN, 0, 0).opt(MpOption::JoinSyn { token: token_s, nonce: R_C, addr_id: 0, backup: false }));
    let hmac64 = crypto::join_synack_hmac64(KEY_S, KEY_C, R_S, R_C);
    c.add(60, seg(down2, SYN | ACK, 0, 1).opt(MpOption::JoinSynAck { hmac64, nonce: R_S, addr_id: 1, backup: false }));
    let hmac = crypto::join_ack_hmac160(KEY_C, KEY_S, R_C, R_S);
    c.add(70, seg(up2, ACK, 1, 1).opt(MpOption::JoinAck { hmac }));
    c.add(80, seg(down2, ACK, 1, 1).dss(ack64(dc(2000))));
    // Frames 14-16: data on both subflows; frame 15's segment is lost
    // after the capture point (client egress).
    c.add(81, seg(up2, PSH_ACK, 1, 1).data(1200).dss(map64(ds(500), dc(2000), 1, 1200)));
    c.add(82, seg(up, PSH_ACK, 2001, 501).data(1000).dss(map64(ds(500), dc(3200), 2001, 1000)));
    c.add(83, seg(up, PSH_ACK, 3001, 501).data(1000).dss(map64(ds(500), dc(4200), 3001, 1000)));
    // Frames 17-19: ACKs, a SACK for the hole, the retransmission.
    c.add(90, seg(down2, ACK, 1, 1201).dss(ack64(dc(3200))));
    c.add(92, seg(down, ACK, 501, 2001).sack(3001, 4001).dss(ack64(dc(3200))));
    c.add(95, seg(up, PSH_ACK, 2001, 501).data(1000).dss(map64(ds(500), dc(3200), 2001, 1000)));
    // Frames 20-21: everything acknowledged; subflow 2 becomes backup.
    c.add(100, seg(down, ACK, 501, 4001).dss(ack64(dc(5200))));
    c.add(101, seg(up2, ACK, 1201, 1).dss(ack64(ds(500))).opt(MpOption::MpPrio { backup: true }));
    // Frames 22-25: DATA_FINs both ways, REMOVE_ADDR of address 1.
    c.add(102, seg(up, ACK, 4001, 501).dss(data_fin64(ds(500), dc(5200))));
    c.add(110, seg(down, ACK, 501, 4001).dss(ack64(dc(5201))).opt(MpOption::RemoveAddr { ids: [1, 0, 0, 0], n: 1 }));
    c.add(111, seg(down, ACK, 501, 4001).dss(data_fin64(dc(5201), ds(500))));
    c.add(120, seg(up, ACK, 4001, 501).dss(ack64(ds(501))));
    // Frames 26-31: subflow FINs.
    c.add(121, seg(up2, FIN_ACK, 1201, 1).dss(ack64(ds(501))));
    c.add(125, seg(down2, FIN_ACK, 1, 1202).dss(ack64(dc(5201))));
    c.add(130, seg(up2, ACK, 1202, 2).dss(ack64(ds(501))));
    c.add(131, seg(up, FIN_ACK, 4001, 501).dss(ack64(ds(501))));
    c.add(135, seg(down, FIN_ACK, 501, 4002).dss(ack64(dc(5201))));
    c.add(140, seg(up, ACK, 4002, 502).dss(ack64(ds(501))));
    c
}

/// Rarer forms, each on its own 4-tuple: a checksum-negotiated v1
/// connection (MP_CAPABLE with data and checksum, DSS with checksum,
/// ADD_ADDR with a port, MP_FAIL, MP_FASTCLOSE, MP_TCPRST on a RST) and a v0
/// handshake.
fn rare_forms() -> Capture {
    let up = Dir { src: CLIENT, sport: 41_000, dst: SERVER, dport: 443 };
    let down = up.reverse();
    let (_, idsn_c) = crypto::token_idsn_v1(KEY_C);
    let (_, idsn_s) = crypto::token_idsn_v1(KEY_S);
    let mut c = Capture::default();
    c.add(0, seg(up, SYN, 0, 0).opt(MpOption::CapableSyn { version: 1, checksum: true }));
    c.add(10, seg(down, SYN | ACK, 0, 1).opt(MpOption::CapableSynAck { version: 1, checksum: true, key: KEY_S }));
    c.add(
        20,
        seg(up, ACK, 1, 1).opt(MpOption::CapableAck { version: 1, checksum: true, sender_key: KEY_C, receiver_key: KEY_S }),
    );
    let first = MpOption::CapableData { version: 1, checksum: true, sender_key: KEY_C, receiver_key: KEY_S, data_len: 100 };
    c.add(21, seg(up, PSH_ACK, 1, 1).data(100).opt(first));
    // Frame 5: DSS with a checksum over the zero payload the writer emits.
    let (dsn, ssn, len) = (idsn_c + 101, 101, 200);
    let csum = crypto::dss_checksum(dsn, ssn, len, &[]);
    let dss = Dss { checksum: Some(csum), ..map64(idsn_s + 1, dsn, ssn, len) };
    c.add(22, seg(up, PSH_ACK, 101, 1).data(200).dss(dss));
    // Frame 6: ADD_ADDR with a port, on a pure ACK.
    let hmac = crypto::add_addr_hmac64(KEY_S, KEY_C, 1, SERVER_2.0, Some(10_100));
    let add = MpOption::AddAddr { addr_id: 1, addr: SERVER_2.0, port: Some(10_100), hmac64: Some(hmac), echo: false };
    c.add(30, seg(down, ACK, 1, 301).dss(Dss { data_ack: Some(idsn_c + 301), ..Default::default() }).opt(add));
    // Frames 7-9: MP_FAIL, MP_FASTCLOSE, MP_TCPRST.
    c.add(40, seg(down, ACK, 1, 301).opt(MpOption::MpFail { dsn: idsn_c + 101 }));
    c.add(50, seg(up, ACK, 301, 1).opt(MpOption::FastClose { receiver_key: KEY_S }));
    c.add(51, seg(down, TcpFlags::RST | ACK, 1, 301).opt(MpOption::TcpRst { reason: 6, transient: true }));
    // Frames 10-12: a v0 handshake on another 4-tuple.
    let up0 = Dir { src: CLIENT, sport: 42_000, dst: SERVER, dport: 8080 };
    c.add(60, seg(up0, SYN, 0, 0).opt(MpOption::CapableSyn { version: 0, checksum: false }));
    c.add(70, seg(up0.reverse(), SYN | ACK, 0, 1).opt(MpOption::CapableSynAck { version: 0, checksum: false, key: KEY_S }));
    c.add(
        80,
        seg(up0, ACK, 1, 1).opt(MpOption::CapableAck { version: 0, checksum: false, sender_key: KEY_C, receiver_key: KEY_S }),
    );
    c
}

// ---------------------------------------------------------------------------
// tshark plumbing

fn tshark_available() -> bool {
    Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn temp_pcap(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.pcap", std::process::id()))
}

const ANALYSIS_PREFS: [&str; 14] = [
    "-o",
    "tcp.analyze_sequence_numbers:TRUE",
    "-o",
    "tcp.check_checksum:TRUE",
    "-o",
    "ip.check_checksum:TRUE",
    "-o",
    "mptcp.analyze_mptcp:TRUE",
    "-o",
    "mptcp.relative_sequence_numbers:TRUE",
    "-o",
    "mptcp.analyze_mappings:TRUE",
    "-o",
    "mptcp.intersubflows_retransmission:TRUE",
];

fn tshark(file: &Path, extra: &[&str]) -> String {
    let out =
        Command::new("tshark").arg("-n").arg("-r").arg(file).args(ANALYSIS_PREFS).args(extra).output().expect("tshark runs");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One row per frame, one column per field; several occurrences of a field
/// joined with ';'.
fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<BTreeMap<String, String>> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;", "-E", "separator=/t"];
    for f in fields {
        args.push("-e");
        args.push(f);
    }
    tshark(file, &args)
        .lines()
        .map(|line| fields.iter().map(|f| f.to_string()).zip(line.split('\t').map(str::to_string)).collect())
        .collect()
}

/// tshark prints integer fields in decimal or 0x-hex depending on the
/// field's display base; both are accepted.
fn num(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

const MP: &str = "tcp.options.mptcp.";

fn field<'a>(rows: &'a [BTreeMap<String, String>], frame: usize, name: &str) -> &'a str {
    rows[frame - 1].get(name).map_or("", String::as_str)
}

fn mp_num(rows: &[BTreeMap<String, String>], frame: usize, name: &str) -> u64 {
    num(field(rows, frame, &format!("{MP}{name}")))
}

/// Expert info severities as tshark prints them (epan/proto.h).
const SEVERITY_WARN: u64 = 0x0060_0000;

/// No malformed packet, no expert info of severity Error, and no warning
/// but the expected ones: "No mapping available" on segments without
/// payload (Wireshark's mapping analysis looks one up for every segment;
/// Linux captures show it on pure ACKs too) and "Connection reset" on RSTs.
/// This also proves every data segment found its DSS mapping.
fn assert_no_malformed_or_errors(file: &Path) {
    let verbose = tshark(file, &["-V"]).to_lowercase();
    for bad in ["malformed", "bad checksum", "invalid length", "bogus", "past end of option"] {
        let hits: Vec<&str> = verbose.lines().filter(|l| l.contains(bad)).take(10).collect();
        assert!(hits.is_empty(), "tshark says {bad:?}:\n{}", hits.join("\n"));
    }
    let rows = tshark_fields(file, &["tcp.len", "tcp.flags.reset", "_ws.expert.severity", "_ws.expert.message"]);
    for (i, r) in rows.iter().enumerate() {
        let severities = r["_ws.expert.severity"].split(';').filter(|s| !s.is_empty()).map(num);
        for (severity, message) in severities.zip(r["_ws.expert.message"].split(';')) {
            if severity < SEVERITY_WARN {
                continue;
            }
            let expected = match message {
                "No mapping available" => r["tcp.len"] == "0",
                "Connection reset (RST)" => matches!(r["tcp.flags.reset"].as_str(), "1" | "True"),
                _ => false,
            };
            assert!(expected && severity == SEVERITY_WARN, "frame {}: expert {severity:#x} {message:?}", i + 1);
        }
    }
}

fn assert_checksums_good(rows: &[BTreeMap<String, String>]) {
    // ip/tcp.checksum.status: 0 = bad, 1 = good, 2 = unverified.
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["ip.checksum.status"], "1", "IPv4 checksum of frame {}", i + 1);
        assert_eq!(r["tcp.checksum.status"], "1", "TCP checksum of frame {}", i + 1);
    }
}

fn assert_subtypes(rows: &[BTreeMap<String, String>], cap: &Capture) {
    let got: Vec<&str> = rows.iter().map(|r| r[&format!("{MP}subtype")].as_str()).collect();
    assert_eq!(got, cap.expected_subtypes(), "MPTCP subtypes per frame");
}

fn assert_payload_bytes(rows: &[BTreeMap<String, String>], cap: &Capture) {
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for r in rows {
        let key = format!("{}:{}>{}:{}", r["ip.src"], r["tcp.srcport"], r["ip.dst"], r["tcp.dstport"]);
        *got.entry(key).or_insert(0) += num(&r["tcp.len"]);
    }
    assert_eq!(got, cap.payload_by_tuple());
}

const COMMON_FIELDS: [&str; 10] = [
    "ip.src",
    "tcp.srcport",
    "ip.dst",
    "tcp.dstport",
    "tcp.stream",
    "tcp.len",
    "frame.len",
    "ip.checksum.status",
    "tcp.checksum.status",
    "tcp.options.mptcp.subtype",
];

// ---------------------------------------------------------------------------

#[test]
fn tshark_dissects_the_mptcp_exchange_without_errors_and_with_our_values() {
    if !tshark_available() {
        println!("note: tshark not on PATH; skipping the Wireshark check of the pcap writer");
        return;
    }
    let cap = main_exchange();
    let file = temp_pcap("mptcp-exchange");
    cap.write(&file);
    assert_no_malformed_or_errors(&file);

    let mp_fields = [
        "sendkey",
        "recvkey",
        "recvtok",
        "sendrand",
        "sendtrunchmac",
        "sendhmac",
        "addrid",
        "rawdataack",
        "rawdataseqno",
        "subflowseqno",
        "datalvllen",
        "addaddrtrunchmac",
        "ipv4",
        "echo",
        "backup.flag",
        "datafin.flag",
        "dataack8.flag",
        "dseqn8.flag",
        "sha256.flag",
        "version",
    ]
    .map(|f| format!("{MP}{f}"));
    let mut fields: Vec<&str> = COMMON_FIELDS.to_vec();
    fields.extend(mp_fields.iter().map(String::as_str));
    fields.extend([
        "mptcp.stream",
        "mptcp.analysis.subflows",
        "mptcp.expected_token",
        "mptcp.expected_idsn",
        "mptcp.rm_addr.count",
        "tcp.analysis.retransmission",
    ]);
    let rows = tshark_fields(&file, &fields);
    assert_eq!(rows.len(), cap.pkts.len());

    assert_checksums_good(&rows);
    assert_subtypes(&rows, &cap);
    assert_payload_bytes(&rows, &cap);
    // Two subflows, one MPTCP connection (the join's token matched).
    let streams: Vec<&str> = rows.iter().map(|r| r["tcp.stream"].as_str()).collect();
    assert!(streams.iter().all(|s| *s == "0" || *s == "1"), "{streams:?}");
    // The first SYN carries no key yet, so it has no MPTCP stream.
    assert!(rows.iter().all(|r| matches!(r["mptcp.stream"].as_str(), "" | "0")), "one MPTCP connection");
    assert!(rows.iter().filter(|r| r["tcp.stream"] == "1").all(|r| r["mptcp.stream"] == "0"), "the join is associated");
    let mut subflows: Vec<&str> = rows[rows.len() - 1]["mptcp.analysis.subflows"].split_whitespace().collect();
    subflows.sort_unstable();
    assert_eq!(subflows, ["0", "1"]);
    for (i, (_, p)) in cap.pkts.iter().enumerate() {
        assert_eq!(num(&rows[i]["frame.len"]), p.wire_bytes as u64 + if p.flags.has(TcpFlags::SYN) { 8 } else { 0 });
    }

    let (token_s, idsn_s) = crypto::token_idsn_v1(KEY_S);
    let (token_c, idsn_c) = crypto::token_idsn_v1(KEY_C);
    // MP_CAPABLE: keys, version 1, SHA-256; Wireshark's own token/IDSN.
    assert_eq!(mp_num(&rows, 1, "version"), 1);
    assert_eq!(mp_num(&rows, 1, "sha256.flag"), 1);
    assert_eq!(mp_num(&rows, 2, "sendkey"), KEY_S);
    assert_eq!(mp_num(&rows, 3, "sendkey"), KEY_C);
    assert_eq!(mp_num(&rows, 3, "recvkey"), KEY_S);
    assert_eq!(mp_num(&rows, 4, "datalvllen"), 1000);
    let tokens: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.get("mptcp.expected_token"))
        .flat_map(|s| s.split(';'))
        .filter(|s| !s.is_empty())
        .map(num)
        .collect();
    assert!(tokens.contains(&(token_s as u64)) && tokens.contains(&(token_c as u64)), "expected tokens {tokens:?}");
    let idsns: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.get("mptcp.expected_idsn"))
        .flat_map(|s| s.split(';'))
        .filter(|s| !s.is_empty())
        .map(num)
        .collect();
    assert!(idsns.contains(&idsn_s) && idsns.contains(&idsn_c), "expected IDSNs {idsns:?}");
    // DSS, 64-bit (frame 6) and 32-bit (frame 7) forms.
    assert_eq!(mp_num(&rows, 6, "rawdataack"), idsn_c + 1001);
    assert_eq!(mp_num(&rows, 6, "rawdataseqno"), idsn_s + 1);
    assert_eq!(mp_num(&rows, 6, "subflowseqno"), 1);
    assert_eq!(mp_num(&rows, 6, "datalvllen"), 500);
    assert_eq!(mp_num(&rows, 6, "dataack8.flag"), 1);
    assert_eq!(mp_num(&rows, 7, "dataack8.flag"), 0);
    assert_eq!(mp_num(&rows, 7, "dseqn8.flag"), 0);
    assert_eq!(mp_num(&rows, 7, "rawdataack"), (idsn_s + 501) & 0xffff_ffff);
    assert_eq!(mp_num(&rows, 7, "rawdataseqno"), (idsn_c + 1001) & 0xffff_ffff);
    assert_eq!(mp_num(&rows, 7, "subflowseqno"), 1001);
    // ADD_ADDR and echo.
    assert_eq!(field(&rows, 8, &format!("{MP}ipv4")), "10.0.2.1");
    assert_eq!(mp_num(&rows, 8, "addrid"), 1);
    assert_eq!(mp_num(&rows, 8, "addaddrtrunchmac"), crypto::add_addr_hmac64(KEY_S, KEY_C, 1, SERVER_2.0, None));
    assert_eq!(mp_num(&rows, 9, "echo"), 1);
    // MP_JOIN: token of the server's key, nonces, HMACs.
    assert_eq!(mp_num(&rows, 10, "recvtok"), token_s as u64);
    assert_eq!(mp_num(&rows, 10, "sendrand"), R_C as u64);
    assert_eq!(mp_num(&rows, 11, "sendtrunchmac"), crypto::join_synack_hmac64(KEY_S, KEY_C, R_S, R_C));
    assert_eq!(mp_num(&rows, 11, "sendrand"), R_S as u64);
    assert_eq!(mp_num(&rows, 11, "addrid"), 1);
    let hmac: String = crypto::join_ack_hmac160(KEY_C, KEY_S, R_C, R_S).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(field(&rows, 12, &format!("{MP}sendhmac")).replace(':', ""), hmac);
    // The retransmission, MP_PRIO, DATA_FIN, REMOVE_ADDR.
    assert!(!field(&rows, 19, "tcp.analysis.retransmission").is_empty(), "frame 19 is a retransmission");
    assert_eq!(mp_num(&rows, 21, "backup.flag"), 1);
    assert_eq!(mp_num(&rows, 22, "datafin.flag"), 1);
    assert_eq!(mp_num(&rows, 22, "rawdataseqno"), idsn_c + 5201);
    assert_eq!(mp_num(&rows, 22, "subflowseqno"), 0);
    assert_eq!(mp_num(&rows, 22, "datalvllen"), 1);
    assert_eq!(num(field(&rows, 23, "mptcp.rm_addr.count")), 1);
    assert_eq!(mp_num(&rows, 23, "addrid"), 1);
    // Reached only on success: a failing run leaves the file for inspection.
    let _ = std::fs::remove_file(&file);
}

#[test]
fn tshark_dissects_checksums_ports_v0_and_failure_options() {
    if !tshark_available() {
        println!("note: tshark not on PATH; skipping the Wireshark check of the pcap writer");
        return;
    }
    let cap = rare_forms();
    let file = temp_pcap("mptcp-rare-forms");
    cap.write(&file);
    assert_no_malformed_or_errors(&file);
    let mp_fields = [
        "checksumreq.flags",
        "checksum",
        "port",
        "rawdataseqno",
        "sendkey",
        "version",
        "sha1.flag",
        "rst_reason",
        "flag_T.flag",
        "datalvllen",
        "recvkey",
    ]
    .map(|f| format!("{MP}{f}"));
    let mut fields: Vec<&str> = COMMON_FIELDS.to_vec();
    fields.extend(mp_fields.iter().map(String::as_str));
    let rows = tshark_fields(&file, &fields);
    assert_eq!(rows.len(), cap.pkts.len());
    assert_checksums_good(&rows);
    assert_subtypes(&rows, &cap);
    assert_payload_bytes(&rows, &cap);

    let (_, idsn_c) = crypto::token_idsn_v1(KEY_C);
    assert_eq!(mp_num(&rows, 1, "checksumreq.flags"), 1);
    assert_eq!(mp_num(&rows, 4, "datalvllen"), 100);
    let csum = crypto::dss_checksum(idsn_c + 101, 101, 200, &[]);
    // Some Wireshark versions do not show the DSS checksum (spec 13).
    let shown = field(&rows, 5, &format!("{MP}checksum"));
    if !shown.is_empty() {
        assert!(shown.split(';').map(num).any(|c| c == csum as u64), "DSS checksum {shown}");
    }
    assert_eq!(mp_num(&rows, 6, "port"), 10_100);
    assert_eq!(mp_num(&rows, 7, "rawdataseqno"), idsn_c + 101);
    assert_eq!(mp_num(&rows, 8, "recvkey"), KEY_S);
    assert_eq!(mp_num(&rows, 9, "rst_reason"), 6);
    assert_eq!(mp_num(&rows, 9, "flag_T.flag"), 1);
    assert_eq!(mp_num(&rows, 10, "version"), 0);
    assert_eq!(mp_num(&rows, 10, "sha1.flag"), 1);
    assert_eq!(mp_num(&rows, 11, "sendkey"), KEY_S);
    assert_eq!(mp_num(&rows, 12, "sendkey"), KEY_C);
    // Reached only on success: a failing run leaves the file for inspection.
    let _ = std::fs::remove_file(&file);
}
