//! pcap capture of chosen interfaces with real TCP and MPTCP option bytes.
//!
//! The simulator's [`Packet`] carries header values and sizes, no bytes.
//! [`PcapWriter`] renders each packet as an Ethernet frame (dummy MACs) with
//! a valid IPv4 header, a TCP or UDP header with a valid checksum, the TCP
//! options the segment would carry (MSS, SACK-permitted, timestamps, window
//! scale, SACK and every MPTCP option of RFC 8684 section 3)
//! and a zero-filled payload, so Wireshark/tshark dissect and analyse the
//! capture (spec section 13). The writer keeps no connection state: absolute
//! sequence numbers come from an ISN derived from each direction's 4-tuple.
//!
//! Frame length versus `Packet::wire_bytes`: the model counts 54 header
//! bytes (Ethernet 14 + IPv4 20 + TCP 20), the timestamps option's 12 where
//! the connection negotiated it (the packet carries `ts`), the SYN options
//! and `SackBlocks::option_bytes` and `MptcpOpts::len_bytes`. Frames
//! rendered here have exactly that length, but when options had to be
//! dropped to respect the 40-byte option limit. Segments are sized for the
//! interface MTU, so a frame is at most 14 bytes more than the MTU; the MSS
//! option of a SYN shows 1460 (a 1500-byte MTU) whatever the MTU.

use mpsim_core::checksum::{fold, sum_be16};
use std::io::{self, Write};

use mpsim_core::mptcp::{Dss, MpOption, MptcpOpts, MAX_REMOVE_IDS};
use mpsim_core::time::PS_PER_NS;
use mpsim_core::{Addr, Packet, Proto, SackBlocks, SimTime, TcpFlags, Timestamps};
use mpsim_proto::mptcp::crypto;

/// Classic pcap magic for nanosecond timestamps.
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
const PCAP_VERSION_MAJOR: u16 = 2;
const PCAP_VERSION_MINOR: u16 = 4;
const SNAPLEN_BYTES: u32 = 65_535;
const LINKTYPE_ETHERNET: u32 = 1;

const ETH_HEADER_BYTES: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPV4_HEADER_BYTES: usize = 20;
const IPV4_MAX_TOTAL_BYTES: usize = 65_535;
const IP_PROTO_TCP: u8 = 6;
const IP_PROTO_UDP: u8 = 17;
const IP_TTL: u8 = 64;
/// Don't Fragment, as Linux sets on TCP with path MTU discovery.
const IP_FLAG_DF: u16 = 0x4000;
const TCP_HEADER_BYTES: usize = 20;
const UDP_HEADER_BYTES: usize = 8;
const TCP_MAX_OPTION_BYTES: usize = 40;

/// Window scale announced in every SYN; the window field of other segments
/// is `wnd_bytes >> 7`.
const WINDOW_SCALE_SHIFT: u8 = 7;
/// MSS announced in SYNs: Linux's value for a 1500-byte MTU (the payload
/// that fits after the IPv4 and TCP headers, options not counted).
const SYN_MSS_BYTES: u16 = 1460;

const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMPS: u8 = 8;
const OPT_MPTCP: u8 = 30;
/// NOP NOP + kind/length/TSval/TSecr.
const TIMESTAMP_BLOCK_BYTES: usize = 12;
/// MSS (4) + SACK-permitted (2) + timestamps (10) + NOP + window scale (3).
const SYN_BLOCK_BYTES: usize = 20;
/// MSS (4) + NOP NOP SACK-permitted (4) + NOP window scale (4), no timestamps.
const SYN_BLOCK_NO_TS_BYTES: usize = 12;

/// Zeros the payloads are written from, a chunk at a time.
static ZEROS: [u8; 4096] = [0; 4096];

/// Writes packets as a classic pcap stream (nanosecond timestamps, Ethernet
/// link type) to any byte sink. Each packet is several small writes, so wrap
/// a `File` in a `BufWriter`.
pub struct PcapWriter<W: Write> {
    out: W,
    /// IPv4 identification of the next packet; wraps.
    ip_id: u16,
    /// Headers of the packet being written; reused between packets.
    frame: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the pcap global header and returns the writer.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
        header[4..6].copy_from_slice(&PCAP_VERSION_MAJOR.to_le_bytes());
        header[6..8].copy_from_slice(&PCAP_VERSION_MINOR.to_le_bytes());
        // Bytes 8..16: time zone offset and accuracy, both zero.
        header[16..20].copy_from_slice(&SNAPLEN_BYTES.to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter { out, ip_id: 0, frame: Vec::with_capacity(128) })
    }

    /// Appends one packet seen at `time`. Fails without writing anything if
    /// the packet cannot be an IPv4 datagram (more than 65,535 bytes).
    pub fn write_packet(&mut self, time: SimTime, pkt: &Packet) -> io::Result<()> {
        self.frame.clear();
        let transport = match pkt.proto {
            Proto::Tcp => tcp_header(pkt),
            Proto::Udp => udp_header(pkt),
            Proto::Sctp => sctp_header(pkt),
        };
        // A DATA chunk's payload is padded to 4 bytes (RFC 9260 section 3.2).
        let pad = if pkt.proto == Proto::Sctp && matches!(pkt.ext.sctp(), Some(mpsim_core::sctp::Chunk::Data(_))) {
            (4 - pkt.payload_bytes as usize % 4) % 4
        } else {
            0
        };
        let ip_total = IPV4_HEADER_BYTES + transport.len() + pkt.payload_bytes as usize + pad;
        if ip_total > IPV4_MAX_TOTAL_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("packet of {} payload bytes does not fit in an IPv4 datagram", pkt.payload_bytes),
            ));
        }
        push_ethernet(&mut self.frame, pkt);
        let proto = pkt.proto.ip_number();
        push_ipv4(&mut self.frame, pkt, proto, ip_total as u16, self.ip_id);
        self.ip_id = self.ip_id.wrapping_add(1);
        self.frame.extend_from_slice(&transport);
        self.write_record(time, ETH_HEADER_BYTES + ip_total)
    }

    /// Flushes and returns the underlying sink.
    /// The sink written so far.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes the record header, the rendered headers and the zero payload,
    /// cut at the snap length.
    fn write_record(&mut self, time: SimTime, frame_bytes: usize) -> io::Result<()> {
        let captured = frame_bytes.min(SNAPLEN_BYTES as usize);
        let ns = time.as_ps() / PS_PER_NS;
        let secs = u32::try_from(ns / 1_000_000_000)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "time beyond the pcap 32-bit seconds field"))?;
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&secs.to_le_bytes());
        rec[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&(captured as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&(frame_bytes as u32).to_le_bytes());
        self.out.write_all(&rec)?;
        let headers = self.frame.len().min(captured);
        self.out.write_all(&self.frame[..headers])?;
        let mut zeros_left = captured - headers;
        while zeros_left > 0 {
            let n = zeros_left.min(ZEROS.len());
            self.out.write_all(&ZEROS[..n])?;
            zeros_left -= n;
        }
        Ok(())
    }
}

/// Locally administered dummy MACs that embed the IPv4 address, so frames
/// of different hosts are told apart.
fn push_ethernet(frame: &mut Vec<u8>, pkt: &Packet) {
    frame.extend_from_slice(&[0x02, 0x00]);
    frame.extend_from_slice(&pkt.dst.octets());
    frame.extend_from_slice(&[0x02, 0x00]);
    frame.extend_from_slice(&pkt.src.octets());
    frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
}

fn push_ipv4(frame: &mut Vec<u8>, pkt: &Packet, proto: u8, total_bytes: u16, id: u16) {
    let mut h = [0u8; IPV4_HEADER_BYTES];
    h[0] = 0x45; // version 4, IHL 5 words
    h[1] = pkt.ecn as u8; // DSCP 0; the ECN field is the low two bits (RFC 3168 section 5)
    h[2..4].copy_from_slice(&total_bytes.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&IP_FLAG_DF.to_be_bytes());
    h[8] = IP_TTL;
    h[9] = proto;
    h[12..16].copy_from_slice(&pkt.src.octets());
    h[16..20].copy_from_slice(&pkt.dst.octets());
    let checksum = !fold(sum_be16(&h));
    h[10..12].copy_from_slice(&checksum.to_be_bytes());
    frame.extend_from_slice(&h);
}

/// UDP header with its checksum (the payload is zeros, so only the header
/// and pseudo-header contribute).
fn udp_header(pkt: &Packet) -> Vec<u8> {
    let udp_bytes = (UDP_HEADER_BYTES as u32).saturating_add(pkt.payload_bytes);
    let mut h = vec![0u8; UDP_HEADER_BYTES];
    h[0..2].copy_from_slice(&pkt.sport.to_be_bytes());
    h[2..4].copy_from_slice(&pkt.dport.to_be_bytes());
    // Oversized datagrams are rejected by the caller before this is written.
    h[4..6].copy_from_slice(&(udp_bytes as u16).to_be_bytes());
    let sum = pseudo_header_sum(pkt, IP_PROTO_UDP, udp_bytes) + sum_be16(&h);
    // RFC 768: a computed zero is sent as all ones (zero means "no checksum").
    let checksum = match !fold(sum) {
        0 => 0xffff,
        c => c,
    };
    h[6..8].copy_from_slice(&checksum.to_be_bytes());
    h
}

/// CRC32c (Castagnoli, reflected 0x82F63B78) of `bytes` followed by
/// `zeros` zero bytes: the SCTP checksum (RFC 9260 appendix A).
fn crc32c(bytes: &[u8], zeros: usize) -> u32 {
    let step = |mut crc: u32, b: u8| {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
        crc
    };
    let crc = bytes.iter().fold(!0u32, |c, &b| step(c, b));
    !(0..zeros).fold(crc, |c, _| step(c, 0))
}

/// SCTP common header and the packet's chunk (RFC 9260 sections 3.1 and
/// 3.3), up to a DATA chunk's payload, which the zeros after it (and the
/// padding) stand for. The verification tag is the port pair.
fn sctp_header(pkt: &Packet) -> Vec<u8> {
    let mut h = sctp_chunk_bytes(pkt);
    let zeros = if matches!(pkt.ext.sctp(), Some(mpsim_core::sctp::Chunk::Data(_))) {
        pkt.payload_bytes as usize + (4 - pkt.payload_bytes as usize % 4) % 4
    } else {
        0
    };
    // The CRC32c goes in little-endian byte order (RFC 9260 appendix A).
    let crc = crc32c(&h, zeros);
    h[8..12].copy_from_slice(&crc.to_le_bytes());
    h
}

fn sctp_chunk_bytes(pkt: &Packet) -> Vec<u8> {
    use mpsim_core::sctp::Chunk;
    let mut h = Vec::with_capacity(64);
    h.extend_from_slice(&pkt.sport.to_be_bytes());
    h.extend_from_slice(&pkt.dport.to_be_bytes());
    h.extend_from_slice(&((pkt.sport as u32) << 16 | pkt.dport as u32).to_be_bytes());
    h.extend_from_slice(&[0; 4]);
    let Some(chunk) = pkt.ext.sctp() else { return h };
    let flags = match chunk {
        Chunk::Data(d) => d.flags,
        Chunk::Sack(s) => s.flags,
        _ => 0,
    };
    // The chunk length excludes padding (RFC 9260 section 3.2).
    let length = match chunk {
        Chunk::Data(_) => mpsim_core::sctp::DATA_HEADER_BYTES + pkt.payload_bytes,
        c => c.wire_bytes(0),
    };
    h.push(chunk.type_code());
    h.push(flags);
    h.extend_from_slice(&(length as u16).to_be_bytes());
    let be32 = |h: &mut Vec<u8>, v: u32| h.extend_from_slice(&v.to_be_bytes());
    match *chunk {
        Chunk::Data(d) => {
            be32(&mut h, d.tsn);
            h.extend_from_slice(&d.stream_id.to_be_bytes());
            h.extend_from_slice(&d.stream_seq.to_be_bytes());
            be32(&mut h, 0); // PPID
        }
        Chunk::Sack(s) => {
            be32(&mut h, s.cum_tsn);
            be32(&mut h, s.a_rwnd_bytes);
            h.extend_from_slice(&(s.n_gaps as u16).to_be_bytes());
            h.extend_from_slice(&(s.n_dups as u16).to_be_bytes());
            for &(a, b) in s.gaps() {
                h.extend_from_slice(&a.to_be_bytes());
                h.extend_from_slice(&b.to_be_bytes());
            }
            for &d in s.dups() {
                be32(&mut h, d);
            }
        }
        Chunk::Heartbeat { path, sent_ps } | Chunk::HeartbeatAck { path, sent_ps } => {
            // Heartbeat Info parameter (type 1) with the sender's record.
            h.extend_from_slice(&1u16.to_be_bytes());
            h.extend_from_slice(&(mpsim_core::sctp::HEARTBEAT_INFO_BYTES as u16).to_be_bytes());
            h.extend_from_slice(&sent_ps.to_be_bytes());
            be32(&mut h, path as u32);
            be32(&mut h, 0);
        }
        Chunk::Init { initial_tsn, a_rwnd_bytes, n_addrs } | Chunk::InitAck { initial_tsn, a_rwnd_bytes, n_addrs } => {
            be32(&mut h, (pkt.sport as u32) << 16 | pkt.dport as u32); // initiate tag
            be32(&mut h, a_rwnd_bytes);
            h.extend_from_slice(&1u16.to_be_bytes()); // outbound streams
            h.extend_from_slice(&1u16.to_be_bytes()); // inbound streams
            be32(&mut h, initial_tsn);
            for i in 0..n_addrs as u32 {
                // IPv4 Address parameters (type 5): the sender's addresses are
                // not known here; the source address stands for the first.
                h.extend_from_slice(&5u16.to_be_bytes());
                h.extend_from_slice(&8u16.to_be_bytes());
                be32(&mut h, pkt.src.0.wrapping_add(i));
            }
            if matches!(chunk, Chunk::InitAck { .. }) {
                h.extend_from_slice(&7u16.to_be_bytes()); // State Cookie
                h.extend_from_slice(&(4 + mpsim_core::sctp::STATE_COOKIE_BYTES as u16).to_be_bytes());
                h.extend_from_slice(&[0; mpsim_core::sctp::STATE_COOKIE_BYTES as usize]);
            }
        }
        Chunk::CookieEcho => h.extend_from_slice(&[0; mpsim_core::sctp::STATE_COOKIE_BYTES as usize]),
        Chunk::Shutdown { cum_tsn } => be32(&mut h, cum_tsn),
        Chunk::CookieAck | Chunk::ShutdownAck | Chunk::ShutdownComplete => {}
    }
    h
}

/// TCP header and options, checksum included.
fn tcp_header(pkt: &Packet) -> Vec<u8> {
    let options = tcp_options(pkt);
    let header_bytes = TCP_HEADER_BYTES + options.len();
    let own_isn = isn(pkt.src, pkt.sport, pkt.dst, pkt.dport);
    let ack = if pkt.flags.has(TcpFlags::ACK) { peer_isn(pkt).wrapping_add(pkt.ack as u32) } else { 0 };
    let mut h = vec![0u8; TCP_HEADER_BYTES];
    h[0..2].copy_from_slice(&pkt.sport.to_be_bytes());
    h[2..4].copy_from_slice(&pkt.dport.to_be_bytes());
    // Relative numbers are 64-bit; the wire keeps their low 32 bits.
    h[4..8].copy_from_slice(&own_isn.wrapping_add(pkt.seq as u32).to_be_bytes());
    h[8..12].copy_from_slice(&ack.to_be_bytes());
    h[12] = ((header_bytes / 4) as u8) << 4;
    h[13] = pkt.flags.0;
    h[14..16].copy_from_slice(&window_field(pkt).to_be_bytes());
    h.extend_from_slice(&options);
    let tcp_bytes = (header_bytes as u32).saturating_add(pkt.payload_bytes);
    let checksum = !fold(pseudo_header_sum(pkt, IP_PROTO_TCP, tcp_bytes) + sum_be16(&h));
    h[16..18].copy_from_slice(&checksum.to_be_bytes());
    h
}

/// RFC 7323 section 2.2: the window of a SYN is never scaled.
fn window_field(pkt: &Packet) -> u16 {
    let wnd = if pkt.flags.has(TcpFlags::SYN) { pkt.wnd_bytes } else { pkt.wnd_bytes >> WINDOW_SCALE_SHIFT };
    wnd.min(u16::MAX as u64) as u16
}

/// ISN of the direction `src:sport -> dst:dport`: a SplitMix64 hash of the
/// 4-tuple, so both ends agree without connection state.
fn isn(src: Addr, sport: u16, dst: Addr, dport: u16) -> u32 {
    let ports = ((sport as u64) << 16 | dport as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut z = ((src.0 as u64) << 32 | dst.0 as u64) ^ ports;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// ISN of the opposite direction, base of the ACK field and SACK blocks.
fn peer_isn(pkt: &Packet) -> u32 {
    isn(pkt.dst, pkt.dport, pkt.src, pkt.sport)
}

/// The TCP options of a segment, padded to a multiple of 4 and at most 40
/// bytes. When everything does not fit, SACK blocks go first (oldest first,
/// as Linux trims them), then timestamps, then one of the MPTCP options
/// (see [`mptcp_options`]).
///
/// The final padding is EOL (0) bytes, which RFC 9293 allows at the end of
/// the list. Linux pads with NOPs, but Wireshark counts every NOP of a
/// header and warns "4 NOP in a row" once there are four (the two before
/// the timestamps plus two after a 26-byte DSS would trigger it).
fn tcp_options(pkt: &Packet) -> Vec<u8> {
    let syn = pkt.flags.has(TcpFlags::SYN);
    let floor = if syn { SYN_BLOCK_NO_TS_BYTES } else { 0 };
    let mptcp = pkt.ext.mptcp().map_or_else(Vec::new, |m| mptcp_options(m, pkt.payload_bytes, TCP_MAX_OPTION_BYTES - floor));
    let mptcp_bytes = pad4(mptcp.len());
    // RFC 7323: the option where the connection negotiated it (or a SYN
    // offers it), as the model counts it.
    let ts = pkt.ts;
    let mut out = Vec::with_capacity(TCP_MAX_OPTION_BYTES);
    if syn {
        let with_ts = SYN_BLOCK_BYTES + mptcp_bytes <= TCP_MAX_OPTION_BYTES;
        push_syn_options(&mut out, ts.filter(|_| with_ts));
    } else {
        let ts_bytes = if ts.is_some() { TIMESTAMP_BLOCK_BYTES } else { 0 };
        let mut sack_blocks = pkt.sack.len.min(3) as usize;
        let sack_bytes = |n: usize| if n == 0 { 0 } else { 4 + 8 * n };
        while sack_blocks > 0 && ts_bytes + sack_bytes(sack_blocks) + mptcp_bytes > TCP_MAX_OPTION_BYTES {
            sack_blocks -= 1;
        }
        if let Some(ts) = ts.filter(|_| ts_bytes + mptcp_bytes <= TCP_MAX_OPTION_BYTES) {
            out.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, 10]);
            out.extend_from_slice(&ts.val_ms.to_be_bytes());
            out.extend_from_slice(&ts.ecr_ms.to_be_bytes());
        }
        push_sack(&mut out, &pkt.sack, sack_blocks, peer_isn(pkt));
    }
    out.extend_from_slice(&mptcp);
    out.resize(pad4(out.len()), OPT_EOL);
    out
}

/// Linux's SYN layout: MSS, SACK-permitted + timestamps, NOP + window
/// scale (20 bytes); without timestamps, NOPs align the SACK-permitted.
fn push_syn_options(out: &mut Vec<u8>, ts: Option<Timestamps>) {
    out.extend_from_slice(&[OPT_MSS, 4]);
    out.extend_from_slice(&SYN_MSS_BYTES.to_be_bytes());
    match ts {
        Some(ts) => {
            out.extend_from_slice(&[OPT_SACK_PERMITTED, 2, OPT_TIMESTAMPS, 10]);
            out.extend_from_slice(&ts.val_ms.to_be_bytes());
            out.extend_from_slice(&ts.ecr_ms.to_be_bytes());
        }
        None => out.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]),
    }
    out.extend_from_slice(&[OPT_NOP, OPT_WSCALE, 3, WINDOW_SCALE_SHIFT]);
}

/// NOP NOP + the first `n` SACK blocks in absolute sequence numbers of the
/// peer's direction (the blocks acknowledge what the peer sent).
fn push_sack(out: &mut Vec<u8>, sack: &SackBlocks, n: usize, peer_isn: u32) {
    if n == 0 {
        return;
    }
    out.extend_from_slice(&[OPT_NOP, OPT_NOP, OPT_SACK, (2 + 8 * n) as u8]);
    for &(start, end) in sack.as_slice().iter().take(n) {
        out.extend_from_slice(&peer_isn.wrapping_add(start as u32).to_be_bytes());
        out.extend_from_slice(&peer_isn.wrapping_add(end as u32).to_be_bytes());
    }
}

/// The MPTCP options of a segment, DSS first, unpadded, taking at most
/// `budget_bytes` once padded. If the two do not fit together (a DSS with a
/// 64-bit mapping and an ADD_ADDR, or anything beside a SYN's own options),
/// one is dropped: the DSS when it only carries a DATA_ACK (a later segment
/// repeats it; Linux sends ADD_ADDR on a pure ACK for this reason), else the
/// other option, since a mapping must not be lost.
fn mptcp_options(opts: &MptcpOpts, payload_bytes: u32, budget_bytes: usize) -> Vec<u8> {
    let mut dss = Vec::new();
    if let Some(d) = &opts.dss {
        push_dss(&mut dss, d, payload_bytes);
    }
    let mut other = Vec::new();
    push_mp_option(&mut other, &opts.option);
    if pad4(dss.len() + other.len()) <= budget_bytes {
        dss.extend_from_slice(&other);
        return dss;
    }
    let dss_maps = opts.dss.is_some_and(|d| d.mapping.is_some() || d.data_fin);
    let (kept, fallback) = if dss_maps { (dss, other) } else { (other, dss) };
    [kept, fallback].into_iter().find(|o| pad4(o.len()) <= budget_bytes).unwrap_or_default()
}

/// Starts an MPTCP option; [`finish_option`] fills in its length.
fn begin_option(out: &mut Vec<u8>, byte2: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&[OPT_MPTCP, 0, byte2]);
    start
}

fn finish_option(out: &mut [u8], start: usize) {
    // Every MPTCP option rendered here is at most 30 bytes long.
    out[start + 1] = (out.len() - start) as u8;
}

/// DSS (spec 3.3). Flags follow the fields present; 32-bit forms carry the
/// low 32 bits. A DATA_FIN on a segment without payload is the
/// "DATA_FIN-only" mapping: SSN 0, length 1 (RFC 8684 section 3.3.3). A
/// DATA_FIN without any mapping has no DSN to write; DSN 0 keeps the length
/// the model counted. The checksum is the model's value, written as given.
fn push_dss(out: &mut Vec<u8>, dss: &Dss, payload_bytes: u32) {
    let has_map = dss.mapping.is_some() || dss.data_fin;
    let mut flags = 0u8;
    if dss.data_ack.is_some() {
        flags |= 0x01 | if dss.ack64 { 0x02 } else { 0 };
    }
    if has_map {
        flags |= 0x04 | if dss.dsn64 { 0x08 } else { 0 };
    }
    if dss.data_fin {
        flags |= 0x10;
    }
    let start = begin_option(out, 0x20);
    out.push(flags);
    if let Some(ack) = dss.data_ack {
        push_seq(out, ack, dss.ack64);
    }
    if has_map {
        let fin_only = dss.data_fin && payload_bytes == 0;
        let (dsn, ssn, len) = match dss.mapping {
            Some(m) if !fin_only => (m.dsn, m.ssn, m.len),
            Some(m) => (m.dsn, 0, 1),
            None => (0, 0, 1),
        };
        push_seq(out, dsn, dss.dsn64);
        out.extend_from_slice(&ssn.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        if let Some(c) = dss.checksum {
            out.extend_from_slice(&c.to_be_bytes());
        }
    }
    finish_option(out, start);
}

fn push_seq(out: &mut Vec<u8>, value: u64, wide: bool) {
    if wide {
        out.extend_from_slice(&value.to_be_bytes());
    } else {
        out.extend_from_slice(&(value as u32).to_be_bytes());
    }
}

/// The non-DSS MPTCP options, byte layouts of spec sections 3.1-3.9.
fn push_mp_option(out: &mut Vec<u8>, opt: &MpOption) {
    match *opt {
        MpOption::None => {}
        MpOption::CapableSyn { version, checksum } => {
            let start = push_capable_head(out, version, checksum);
            if version == 0 {
                // v0 SYNs carry the sender's key, which this option value
                // does not hold: zeros keep the 12-byte length.
                out.extend_from_slice(&0u64.to_be_bytes());
            }
            finish_option(out, start);
        }
        MpOption::CapableSynAck { version, checksum, key } => {
            let start = push_capable_head(out, version, checksum);
            out.extend_from_slice(&key.to_be_bytes());
            finish_option(out, start);
        }
        MpOption::CapableAck { version, checksum, sender_key, receiver_key } => {
            let start = push_capable_head(out, version, checksum);
            out.extend_from_slice(&sender_key.to_be_bytes());
            out.extend_from_slice(&receiver_key.to_be_bytes());
            finish_option(out, start);
        }
        MpOption::CapableData { version, checksum, sender_key, receiver_key, data_len } => {
            push_capable_data(out, version, checksum, sender_key, receiver_key, data_len);
        }
        MpOption::JoinSyn { token, nonce, addr_id, backup } => {
            let start = begin_option(out, 0x10 | backup as u8);
            out.push(addr_id);
            out.extend_from_slice(&token.to_be_bytes());
            out.extend_from_slice(&nonce.to_be_bytes());
            finish_option(out, start);
        }
        MpOption::JoinSynAck { hmac64, nonce, addr_id, backup } => {
            let start = begin_option(out, 0x10 | backup as u8);
            out.push(addr_id);
            out.extend_from_slice(&hmac64.to_be_bytes());
            out.extend_from_slice(&nonce.to_be_bytes());
            finish_option(out, start);
        }
        MpOption::JoinAck { hmac } => {
            let start = begin_option(out, 0x10);
            out.push(0);
            out.extend_from_slice(&hmac);
            finish_option(out, start);
        }
        MpOption::AddAddr { addr_id, addr, port, hmac64, echo } => {
            let start = begin_option(out, 0x30 | echo as u8);
            out.push(addr_id);
            out.extend_from_slice(&addr.to_be_bytes());
            if let Some(p) = port {
                out.extend_from_slice(&p.to_be_bytes());
            }
            if !echo {
                // A missing HMAC is written as zeros to keep the length.
                out.extend_from_slice(&hmac64.unwrap_or(0).to_be_bytes());
            }
            finish_option(out, start);
        }
        MpOption::RemoveAddr { ids, n } => {
            let start = begin_option(out, 0x40);
            out.extend_from_slice(&ids[..(n as usize).min(MAX_REMOVE_IDS)]);
            finish_option(out, start);
        }
        MpOption::MpPrio { backup } => {
            let start = begin_option(out, 0x50 | backup as u8);
            finish_option(out, start);
        }
        MpOption::MpFail { dsn } => push_reserved_u64(out, 0x60, dsn),
        MpOption::FastClose { receiver_key } => push_reserved_u64(out, 0x70, receiver_key),
        MpOption::TcpRst { reason, transient } => {
            let start = begin_option(out, 0x80 | transient as u8);
            out.push(reason);
            finish_option(out, start);
        }
    }
}

/// MP_CAPABLE kind, length, version nibble and flags: A (0x80) when
/// checksums are required, H (0x01: HMAC-SHA256 in v1, HMAC-SHA1 in v0).
fn push_capable_head(out: &mut Vec<u8>, version: u8, checksum: bool) -> usize {
    let start = begin_option(out, version & 0x0f);
    out.push(if checksum { 0x81 } else { 0x01 });
    start
}

/// MP_CAPABLE on the first data segment (v1): both keys and the data-level
/// length of the implied mapping `DSN = IDSN + 1, SSN = 1`. The option value
/// holds no checksum, so it is computed here over the zero payload written.
fn push_capable_data(out: &mut Vec<u8>, version: u8, checksum: bool, sender_key: u64, receiver_key: u64, data_len: u16) {
    let start = push_capable_head(out, version, checksum);
    out.extend_from_slice(&sender_key.to_be_bytes());
    out.extend_from_slice(&receiver_key.to_be_bytes());
    out.extend_from_slice(&data_len.to_be_bytes());
    if checksum {
        let (_, idsn) = if version == 0 { crypto::token_idsn_v0(sender_key) } else { crypto::token_idsn_v1(sender_key) };
        // Zero payload bytes add nothing to the sum (crypto::dss_checksum).
        let c = crypto::dss_checksum(idsn.wrapping_add(1), 1, data_len, &[]);
        out.extend_from_slice(&c.to_be_bytes());
    }
    finish_option(out, start);
}

/// MP_FAIL and MP_FASTCLOSE: 12 reserved bits, then 64 bits.
fn push_reserved_u64(out: &mut Vec<u8>, byte2: u8, value: u64) {
    let start = begin_option(out, byte2);
    out.push(0);
    out.extend_from_slice(&value.to_be_bytes());
    finish_option(out, start);
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// One's-complement sum of the TCP/UDP pseudo-header (RFC 9293 3.1).
fn pseudo_header_sum(pkt: &Packet, proto: u8, l4_bytes: u32) -> u64 {
    let mut p = [0u8; 12];
    p[0..4].copy_from_slice(&pkt.src.octets());
    p[4..8].copy_from_slice(&pkt.dst.octets());
    p[9] = proto;
    // Lengths above 65,535 are rejected before the frame is written.
    p[10..12].copy_from_slice(&(l4_bytes as u16).to_be_bytes());
    sum_be16(&p)
}

#[cfg(test)]
mod sctp_tests {
    #[test]
    fn crc32c_matches_rfc3720s_check_values() {
        // RFC 3720 appendix B.4: 32 bytes of zeros, and 32 bytes of 0xff.
        assert_eq!(super::crc32c(&[], 32), 0x8a91_36aa);
        assert_eq!(super::crc32c(&[0xff; 32], 0), 0x62a8_ab43);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::mptcp::DssMapping;
    use mpsim_core::PacketExt;

    const KEY_A: u64 = 0x0123_4567_89ab_cdef;
    const KEY_B: u64 = 0xfedc_ba98_7654_3210;
    const HEADER_BYTES_MODEL: u32 = 66;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace().map(|b| u8::from_str_radix(b, 16).expect("test hex")).collect()
    }

    fn mp(opt: MpOption) -> Vec<u8> {
        let mut out = Vec::new();
        push_mp_option(&mut out, &opt);
        out
    }

    fn dss(d: Dss, payload_bytes: u32) -> Vec<u8> {
        let mut out = Vec::new();
        push_dss(&mut out, &d, payload_bytes);
        out
    }

    fn segment(flags: u8, payload_bytes: u32, sack: SackBlocks, ext: PacketExt) -> Packet {
        let wire_bytes = payload_bytes + HEADER_BYTES_MODEL + sack.option_bytes() + ext.option_bytes();
        Packet {
            src: Addr(0x0a00_0101),
            dst: Addr(0x0a00_0001),
            sport: 40_000,
            dport: 80,
            flags: TcpFlags(flags),
            seq: 1001,
            ack: 501,
            wnd_bytes: 1 << 20,
            sack,
            payload_bytes,
            wire_bytes,
            ext,
            ts: Some(Timestamps { val_ms: 7, ecr_ms: 3 }),
            ..Default::default()
        }
    }

    /// The bytes of the single record of a one-packet capture.
    fn frame_of(pkt: &Packet) -> (u32, Vec<u8>) {
        let mut w = PcapWriter::new(Vec::new()).expect("Vec sink");
        w.write_packet(SimTime(1_234_567_890_123), pkt).expect("valid packet");
        let bytes = w.into_inner().expect("Vec sink");
        let orig_len = u32::from_le_bytes([bytes[36], bytes[37], bytes[38], bytes[39]]);
        (orig_len, bytes[40..].to_vec())
    }

    fn tcp_options_of(frame: &[u8]) -> Vec<u8> {
        let tcp = &frame[ETH_HEADER_BYTES + IPV4_HEADER_BYTES..];
        let header_bytes = (tcp[12] >> 4) as usize * 4;
        tcp[TCP_HEADER_BYTES..header_bytes].to_vec()
    }

    /// Option kinds in order, walking kind/length pairs.
    fn option_kinds(opts: &[u8]) -> Vec<u8> {
        let mut kinds = Vec::new();
        let mut i = 0;
        while i < opts.len() {
            kinds.push(opts[i]);
            i += if opts[i] <= OPT_NOP { 1 } else { opts[i + 1] as usize };
        }
        kinds
    }

    fn sack(blocks: &[(u64, u64)]) -> SackBlocks {
        let mut s = SackBlocks::default();
        for &(a, b) in blocks {
            s.push(a, b);
        }
        s
    }

    fn data_dss() -> Dss {
        Dss {
            data_ack: Some(0x1_0000_0001),
            mapping: Some(DssMapping { dsn: 0x2_0000_0001, ssn: 1001, len: 1448 }),
            ack64: true,
            dsn64: true,
            ..Default::default()
        }
    }

    #[test]
    fn global_header_is_nanosecond_pcap_2_4_ethernet() {
        let bytes = PcapWriter::new(Vec::new()).and_then(|w| w.into_inner()).expect("Vec sink");
        assert_eq!(bytes, hex("4d 3c b2 a1 02 00 04 00 00 00 00 00 00 00 00 00 ff ff 00 00 01 00 00 00"));
    }

    #[test]
    fn record_header_carries_seconds_and_nanoseconds() {
        let mut w = PcapWriter::new(Vec::new()).expect("Vec sink");
        w.write_packet(SimTime(1_234_567_890_123), &segment(TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::None))
            .expect("valid packet");
        let b = w.into_inner().expect("Vec sink");
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        assert_eq!(word(24), 1);
        assert_eq!(word(28), 234_567_890);
        assert_eq!(word(32), word(36));
        assert_eq!(b.len(), 40 + word(32) as usize);
    }

    #[test]
    fn ip_and_tcp_checksums_verify() {
        let pkt = segment(
            TcpFlags::ACK | TcpFlags::PSH,
            1001,
            sack(&[(3001, 4001)]),
            PacketExt::Mptcp(MptcpOpts { dss: Some(data_dss()), option: MpOption::None }),
        );
        let (_, frame) = frame_of(&pkt);
        let ip = &frame[ETH_HEADER_BYTES..ETH_HEADER_BYTES + IPV4_HEADER_BYTES];
        assert_eq!(fold(sum_be16(ip)), 0xffff);
        let tcp = &frame[ETH_HEADER_BYTES + IPV4_HEADER_BYTES..];
        let sum = pseudo_header_sum(&pkt, IP_PROTO_TCP, tcp.len() as u32) + sum_be16(tcp);
        assert_eq!(fold(sum), 0xffff);
    }

    #[test]
    fn udp_checksum_verifies_and_frame_is_42_bytes_plus_payload() {
        let pkt = Packet {
            src: Addr(1),
            dst: Addr(2),
            sport: 5000,
            dport: 6000,
            proto: Proto::Udp,
            payload_bytes: 101,
            wire_bytes: 101 + 42,
            ..Default::default()
        };
        let (orig_len, frame) = frame_of(&pkt);
        assert_eq!(orig_len, pkt.wire_bytes);
        assert_eq!(frame[ETH_HEADER_BYTES + 9], IP_PROTO_UDP);
        let udp = &frame[ETH_HEADER_BYTES + IPV4_HEADER_BYTES..];
        assert_eq!(fold(pseudo_header_sum(&pkt, IP_PROTO_UDP, udp.len() as u32) + sum_be16(udp)), 0xffff);
    }

    #[test]
    fn the_ecn_codepoint_and_the_ece_cwr_flags_reach_the_headers() {
        let mut p = segment(TcpFlags::ACK | TcpFlags::ECE | TcpFlags::CWR, 100, SackBlocks::default(), PacketExt::None);
        p.ecn = mpsim_core::IpEcn::Ce;
        let (_, frame) = frame_of(&p);
        assert_eq!(frame[ETH_HEADER_BYTES + 1], 0b11);
        assert_eq!(frame[ETH_HEADER_BYTES + IPV4_HEADER_BYTES + 13], 0x10 | 0x40 | 0x80);
        p.ecn = mpsim_core::IpEcn::Ect0;
        assert_eq!(frame_of(&p).1[ETH_HEADER_BYTES + 1], 0b10);
    }

    #[test]
    fn frame_length_equals_wire_bytes_for_data_acks_and_sacks() {
        let mptcp = |d: Dss, o: MpOption| PacketExt::Mptcp(MptcpOpts { dss: Some(d), option: o });
        let ack_only = Dss { data_ack: Some(7), ..Default::default() };
        let ack32_map32 = Dss { ack64: false, dsn64: false, ..data_dss() };
        let cases = [
            segment(TcpFlags::ACK, 1448, SackBlocks::default(), PacketExt::None),
            segment(TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::None),
            segment(TcpFlags::ACK, 0, sack(&[(3001, 4001)]), PacketExt::None),
            segment(TcpFlags::ACK, 0, sack(&[(3001, 4001), (5001, 6001), (7001, 8001)]), PacketExt::None),
            segment(TcpFlags::ACK, 1448, SackBlocks::default(), mptcp(data_dss(), MpOption::None)),
            segment(TcpFlags::ACK, 1448, SackBlocks::default(), mptcp(ack32_map32, MpOption::None)),
            segment(TcpFlags::ACK, 0, sack(&[(3001, 4001), (5001, 6001)]), mptcp(ack_only, MpOption::None)),
            segment(TcpFlags::ACK, 0, SackBlocks::default(), mptcp(ack_only, MpOption::MpPrio { backup: true })),
            segment(
                TcpFlags::ACK,
                0,
                SackBlocks::default(),
                mptcp(ack_only, MpOption::AddAddr { addr_id: 1, addr: 0x0a00_0201, port: None, hmac64: Some(1), echo: false }),
            ),
        ];
        for pkt in &cases {
            let (orig_len, frame) = frame_of(pkt);
            assert_eq!(orig_len, pkt.wire_bytes, "{pkt:?}");
            assert_eq!(frame.len(), orig_len as usize);
        }
    }

    #[test]
    fn a_segment_without_timestamps_has_no_timestamps_option() {
        let mut pkt = segment(TcpFlags::ACK, 1460, SackBlocks::default(), PacketExt::None);
        pkt.ts = None;
        pkt.wire_bytes = 1460 + 54;
        let (orig_len, frame) = frame_of(&pkt);
        assert_eq!(orig_len, 1514);
        assert!(tcp_options_of(&frame).is_empty());
    }

    #[test]
    fn syn_frames_are_eight_bytes_longer_than_the_model_counts() {
        // MSS, SACK-permitted and window scale: 20 option bytes, not 12.
        let ext = PacketExt::Mptcp(MptcpOpts { dss: None, option: MpOption::CapableSyn { version: 1, checksum: false } });
        let pkt = segment(TcpFlags::SYN, 0, SackBlocks::default(), ext);
        let (orig_len, frame) = frame_of(&pkt);
        assert_eq!(orig_len, pkt.wire_bytes + 8);
        let opts = tcp_options_of(&frame);
        assert_eq!(&opts[..4], &[OPT_MSS, 4, 0x05, 0xb4]);
        assert_eq!(option_kinds(&opts), vec![OPT_MSS, OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_NOP, OPT_WSCALE, OPT_MPTCP]);
        assert_eq!(&opts[20..], &hex("1e 04 01 01")[..]);
    }

    #[test]
    fn syn_window_is_unscaled_and_others_are_shifted_by_seven() {
        let mut pkt = segment(TcpFlags::SYN, 0, SackBlocks::default(), PacketExt::None);
        pkt.wnd_bytes = 29_200;
        assert_eq!(window_field(&pkt), 29_200);
        pkt.flags = TcpFlags(TcpFlags::ACK);
        pkt.wnd_bytes = 1 << 20;
        assert_eq!(window_field(&pkt), 8192);
        pkt.wnd_bytes = u64::MAX;
        assert_eq!(window_field(&pkt), u16::MAX);
    }

    #[test]
    fn sequence_numbers_are_isn_plus_relative_and_ack_uses_the_peer_isn() {
        let pkt = segment(TcpFlags::ACK, 10, sack(&[(3001, 4001)]), PacketExt::None);
        let (_, frame) = frame_of(&pkt);
        let tcp = &frame[ETH_HEADER_BYTES + IPV4_HEADER_BYTES..];
        let word = |i: usize| u32::from_be_bytes([tcp[i], tcp[i + 1], tcp[i + 2], tcp[i + 3]]);
        let own = isn(pkt.src, pkt.sport, pkt.dst, pkt.dport);
        let peer = isn(pkt.dst, pkt.dport, pkt.src, pkt.sport);
        assert_ne!(own, peer);
        assert_eq!(word(4), own.wrapping_add(1001));
        assert_eq!(word(8), peer.wrapping_add(501));
        // NOP NOP TS (12), then NOP NOP SACK: the first block edge at +24.
        assert_eq!(word(TCP_HEADER_BYTES + 16), peer.wrapping_add(3001));
        assert_eq!(word(TCP_HEADER_BYTES + 20), peer.wrapping_add(4001));
    }

    #[test]
    fn options_never_exceed_forty_bytes_and_sack_goes_first() {
        let d = Dss { checksum: Some(0x1234), ..data_dss() }; // 28 bytes
        let ext = PacketExt::Mptcp(MptcpOpts { dss: Some(d), option: MpOption::None });
        let pkt = segment(TcpFlags::ACK, 100, sack(&[(1, 2), (3, 4), (5, 6)]), ext);
        let (orig_len, frame) = frame_of(&pkt);
        let opts = tcp_options_of(&frame);
        assert_eq!(opts.len(), 40);
        assert_eq!(option_kinds(&opts), vec![OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, OPT_MPTCP]);
        assert_eq!(orig_len, pkt.wire_bytes - pkt.sack.option_bytes());
    }

    #[test]
    fn sack_blocks_are_trimmed_one_at_a_time() {
        let ext =
            PacketExt::Mptcp(MptcpOpts { dss: Some(Dss { data_ack: Some(1), ..Default::default() }), option: MpOption::None });
        let pkt = segment(TcpFlags::ACK, 0, sack(&[(1, 2), (3, 4), (5, 6)]), ext);
        let opts = tcp_options_of(&frame_of(&pkt).1);
        // 12 (TS) + 20 (two blocks) + 8 (DSS) = 40.
        assert_eq!(opts.len(), 40);
        assert_eq!(&opts[12..16], &[OPT_NOP, OPT_NOP, OPT_SACK, 2 + 16]);
    }

    #[test]
    fn a_mapping_dss_wins_over_add_addr_when_both_do_not_fit() {
        let add = MpOption::AddAddr { addr_id: 1, addr: 1, port: Some(1), hmac64: Some(1), echo: false };
        let with_map = MptcpOpts { dss: Some(data_dss()), option: add };
        assert_eq!(mptcp_options(&with_map, 1448, 40), dss(data_dss(), 1448));
        let ack_only = MptcpOpts { dss: Some(Dss { data_ack: Some(1), ack64: true, ..Default::default() }), option: add };
        assert_eq!(mptcp_options(&ack_only, 0, 40).len(), 12 + 18);
        let pkt = segment(TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::Mptcp(ack_only));
        // 12 (TS) + 32 > 40: timestamps go, both MPTCP options stay.
        let opts = tcp_options_of(&frame_of(&pkt).1);
        assert_eq!(option_kinds(&opts)[..2], [OPT_MPTCP, OPT_MPTCP]);
        assert!(opts.len() <= 40);
    }

    #[test]
    fn an_overfull_syn_drops_its_timestamps() {
        let opts = MptcpOpts {
            dss: Some(Dss { data_ack: Some(1), ..Default::default() }),
            option: MpOption::JoinSynAck { hmac64: 1, nonce: 2, addr_id: 3, backup: false },
        };
        let pkt = segment(TcpFlags::SYN | TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::Mptcp(opts));
        let tcp_opts = tcp_options_of(&frame_of(&pkt).1);
        assert_eq!(tcp_opts.len(), SYN_BLOCK_NO_TS_BYTES + 24);
        assert!(!option_kinds(&tcp_opts).contains(&OPT_TIMESTAMPS));
    }

    #[test]
    fn a_syn_never_exceeds_forty_option_bytes() {
        let dss = Dss { checksum: Some(1), ..data_dss() }; // 28 bytes
        let opts = MptcpOpts { dss: Some(dss), option: MpOption::JoinSynAck { hmac64: 1, nonce: 2, addr_id: 3, backup: false } };
        let pkt = segment(TcpFlags::SYN | TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::Mptcp(opts));
        let tcp_opts = tcp_options_of(&frame_of(&pkt).1);
        assert_eq!(tcp_opts.len(), 40);
        assert_eq!(&tcp_opts[SYN_BLOCK_NO_TS_BYTES..], &self::dss(dss, 0)[..]);
    }

    #[test]
    fn mp_capable_bytes_match_the_spec_examples() {
        assert_eq!(mp(MpOption::CapableSyn { version: 1, checksum: false }), hex("1e 04 01 01"));
        assert_eq!(
            mp(MpOption::CapableSynAck { version: 1, checksum: false, key: KEY_B }),
            hex("1e 0c 01 01 fe dc ba 98 76 54 32 10")
        );
        assert_eq!(
            mp(MpOption::CapableAck { version: 1, checksum: false, sender_key: KEY_A, receiver_key: KEY_B }),
            hex("1e 14 01 01 01 23 45 67 89 ab cd ef fe dc ba 98 76 54 32 10")
        );
    }

    #[test]
    fn mp_capable_v0_and_checksum_forms_have_their_lengths_and_flags() {
        assert_eq!(mp(MpOption::CapableSyn { version: 0, checksum: true }), hex("1e 0c 00 81 00 00 00 00 00 00 00 00"));
        assert_eq!(mp(MpOption::CapableSynAck { version: 0, checksum: false, key: KEY_B })[..4], hex("1e 0c 00 01")[..]);
        let data =
            |checksum| MpOption::CapableData { version: 1, checksum, sender_key: KEY_A, receiver_key: KEY_B, data_len: 14 };
        let plain = mp(data(false));
        assert_eq!(plain.len(), 22);
        assert_eq!(&plain[20..], &[0x00, 0x0e]);
        let with_csum = mp(data(true));
        assert_eq!(with_csum.len(), 24);
        assert_eq!(with_csum[3], 0x81);
        let idsn_a = crypto::token_idsn_v1(KEY_A).1;
        let c = u16::from_be_bytes([with_csum[22], with_csum[23]]);
        assert!(crypto::dss_checksum_ok(idsn_a + 1, 1, 14, &[0u8; 14], c));
    }

    #[test]
    fn mp_join_bytes_match_the_spec_examples() {
        let token_b = crypto::token_idsn_v1(KEY_B).0;
        assert_eq!(
            mp(MpOption::JoinSyn { token: token_b, nonce: 0x0102_0304, addr_id: 2, backup: false }),
            hex("1e 0c 10 02 18 f9 78 1b 01 02 03 04")
        );
        let hmac64 = crypto::join_synack_hmac64(KEY_B, KEY_A, 0x0a0b_0c0d, 0x0102_0304);
        assert_eq!(
            mp(MpOption::JoinSynAck { hmac64, nonce: 0x0a0b_0c0d, addr_id: 0, backup: false }),
            hex("1e 10 10 00 76 01 37 12 c0 4b d2 bc 0a 0b 0c 0d")
        );
        let hmac = crypto::join_ack_hmac160(KEY_A, KEY_B, 0x0102_0304, 0x0a0b_0c0d);
        assert_eq!(
            mp(MpOption::JoinAck { hmac }),
            hex("1e 18 10 00 48 58 03 b6 95 6a 2e d7 fd b8 45 8e 5e 9b 64 47 74 ec 1b 24")
        );
        assert_eq!(mp(MpOption::JoinSyn { token: 0, nonce: 0, addr_id: 3, backup: true })[2..4], [0x11, 3]);
    }

    #[test]
    fn dss_bytes_match_the_spec_examples() {
        let map = DssMapping { dsn: 0x1122_3344_5566_7788, ssn: 1, len: 1448 };
        let d32 = Dss { data_ack: Some(0xaabb_ccdd_eeff_0011), mapping: Some(map), ..Default::default() };
        assert_eq!(dss(d32, 1448), hex("1e 12 20 05 ee ff 00 11 55 66 77 88 00 00 00 01 05 a8"));
        let d64 = Dss { ack64: true, dsn64: true, checksum: Some(0xbeef), ..d32 };
        assert_eq!(dss(d64, 1448), hex("1e 1c 20 0f aa bb cc dd ee ff 00 11 11 22 33 44 55 66 77 88 00 00 00 01 05 a8 be ef"));
        let fin = Dss { data_fin: true, mapping: Some(DssMapping { dsn: 0x5566_7788, ssn: 4001, len: 1 }), ..d32 };
        assert_eq!(dss(fin, 0), hex("1e 12 20 15 ee ff 00 11 55 66 77 88 00 00 00 00 00 01"));
        let ack_only = Dss { data_ack: Some(5), ack64: true, ..Default::default() };
        assert_eq!(dss(ack_only, 0), hex("1e 0c 20 03 00 00 00 00 00 00 00 05"));
    }

    #[test]
    fn dss_lengths_agree_with_the_model() {
        let map = Some(DssMapping { dsn: 1, ssn: 1, len: 1 });
        for ack in [None, Some(1)] {
            for mapping in [None, map] {
                for (ack64, dsn64, data_fin) in [(false, false, false), (true, true, true), (true, false, true)] {
                    for checksum in [None, Some(7)] {
                        let d = Dss { data_ack: ack, mapping, data_fin, ack64, dsn64, checksum };
                        assert_eq!(dss(d, 0).len() as u32, d.len_bytes(), "{d:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn address_option_bytes_match_the_spec_examples() {
        let addr = 0x0a00_0201;
        let hmac64 = crypto::add_addr_hmac64(KEY_B, KEY_A, 1, addr, None);
        assert_eq!(
            mp(MpOption::AddAddr { addr_id: 1, addr, port: None, hmac64: Some(hmac64), echo: false }),
            hex("1e 10 30 01 0a 00 02 01 e0 31 87 b7 14 3a 0a 2b")
        );
        assert_eq!(
            mp(MpOption::AddAddr { addr_id: 1, addr, port: None, hmac64: None, echo: true }),
            hex("1e 08 31 01 0a 00 02 01")
        );
        let with_port = mp(MpOption::AddAddr { addr_id: 1, addr, port: Some(10100), hmac64: Some(1), echo: false });
        assert_eq!(with_port.len(), 18);
        assert_eq!(&with_port[8..10], &[0x27, 0x74]);
        assert_eq!(mp(MpOption::RemoveAddr { ids: [1, 0, 0, 0], n: 1 }), hex("1e 04 40 01"));
        assert_eq!(mp(MpOption::RemoveAddr { ids: [1, 2, 3, 4], n: 9 }), hex("1e 07 40 01 02 03 04"));
        assert_eq!(mp(MpOption::MpPrio { backup: true }), hex("1e 03 51"));
    }

    #[test]
    fn failure_option_bytes_match_the_spec_examples() {
        assert_eq!(mp(MpOption::MpFail { dsn: 0x0102_0304_0506_0708 }), hex("1e 0c 60 00 01 02 03 04 05 06 07 08"));
        assert_eq!(mp(MpOption::FastClose { receiver_key: KEY_B }), hex("1e 0c 70 00 fe dc ba 98 76 54 32 10"));
        assert_eq!(mp(MpOption::TcpRst { reason: 6, transient: true }), hex("1e 04 81 06"));
    }

    #[test]
    fn mp_prio_is_padded_with_an_eol() {
        let ext = PacketExt::Mptcp(MptcpOpts { dss: None, option: MpOption::MpPrio { backup: true } });
        let opts = tcp_options_of(&frame_of(&segment(TcpFlags::ACK, 0, SackBlocks::default(), ext)).1);
        assert_eq!(&opts[12..], &hex("1e 03 51 00")[..]);
    }

    #[test]
    fn oversized_packets_are_an_error_not_a_panic() {
        let pkt = segment(TcpFlags::ACK, 70_000, SackBlocks::default(), PacketExt::None);
        let mut w = PcapWriter::new(Vec::new()).expect("Vec sink");
        let err = w.write_packet(SimTime::ZERO, &pkt).expect_err("too large");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.into_inner().expect("Vec sink").len(), 24);
    }

    #[test]
    fn ip_identification_counts_up_per_packet() {
        let pkt = segment(TcpFlags::ACK, 0, SackBlocks::default(), PacketExt::None);
        let mut w = PcapWriter::new(Vec::new()).expect("Vec sink");
        w.write_packet(SimTime::ZERO, &pkt).expect("valid");
        w.write_packet(SimTime::ZERO, &pkt).expect("valid");
        let b = w.into_inner().expect("Vec sink");
        let rec = 16 + pkt.wire_bytes as usize;
        let id_at = |i: usize| u16::from_be_bytes([b[i + 40 + 18], b[i + 40 + 19]]);
        assert_eq!((id_at(0), id_at(rec)), (0, 1));
    }
}
