//! TCP, sans-IO. [`Subflow`] is the whole per-path machinery (handshake,
//! sender with SACK scoreboard and RTO, receiver with delayed ACKs); a
//! single-path [`TcpConnection`] is one subflow plus its congestion
//! controller, and MPTCP reuses the same subflow for each path.
//!
//! The steps of building a segment and taking an RTT sample are marked
//! `#[inline(always)]`: out of line, their calls cost about 3 % of every
//! benchmark case's instructions (docs/performance.md).

mod connection;
mod ecn;
pub mod mtu;
mod recv;
mod rtt;
mod scoreboard;
mod subflow;

pub use connection::TcpConnection;
pub use ecn::Ecn;
pub use recv::{Receiver, RecvOutcome};
pub use rtt::RttEstimator;
pub use scoreboard::{AckedInfo, SackedInfo, Scoreboard, Seg};
pub use subflow::{CcCtx, Subflow, SubflowStats};

use mpsim_cc::CcMode;
use mpsim_core::SimDuration;

/// Connection states of RFC 9293 (LISTEN is the server's listener, not a subflow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

impl TcpState {
    /// States in which new data may be sent (ESTABLISHED, CLOSE_WAIT).
    pub fn can_send(self) -> bool {
        matches!(self, TcpState::Established | TcpState::CloseWait)
    }
    pub fn is_synchronised(self) -> bool {
        !matches!(self, TcpState::SynSent | TcpState::SynReceived | TcpState::Closed)
    }
}

/// What the application learns from its endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// The handshake completed.
    Connected,
    /// Bytes newly delivered in order to the application.
    Delivered { bytes: u64 },
    /// The peer's FIN arrived (after all its data).
    PeerClosed,
    /// Everything the application wrote, and our FIN, is acknowledged.
    SendComplete,
    /// The connection gave up (SYN retries exhausted or reset).
    Failed,
}

/// Per-connection TCP parameters. Defaults follow Linux, but for the
/// minimum RTO: `Default` is reference mode (see `for_mode`).
#[derive(Clone, Copy, Debug)]
pub struct TcpConfig {
    /// Payload of a full data segment (Linux `tp->mss_cache` less the
    /// options every data segment carries): what `mtu_bytes` leaves after
    /// the headers and those options, at most `max_payload_bytes`. A
    /// subflow refits its copy once the handshake tells whether timestamps
    /// are on (`TcpConfig::fit_to_mtu`); congestion windows count segments
    /// of this size.
    pub mss_bytes: u32,
    /// The configured largest payload (the scenario's `mss`); the MTU may
    /// leave less.
    pub max_payload_bytes: u32,
    /// The interface MTU: the IP packet, headers and options included.
    pub mtu_bytes: u32,
    /// Option bytes every data segment carries besides timestamps and SACK
    /// (MPTCP's DSS with DATA_ACK and mapping); 0 for plain TCP.
    pub data_option_bytes: u32,
    /// Wire bytes of a segment beyond its payload and TCP options: the
    /// link framing and the IPv4 and TCP headers (Ethernet 14 + 20 + 20).
    pub header_bytes: u32,
    pub sack: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: SimDuration,
    pub min_rto: SimDuration,
    pub max_rto: SimDuration,
    pub initial_rto: SimDuration,
    pub initial_cwnd_pkts: u32,
    /// Slow-start threshold at the start; None: infinite (Linux; htsim
    /// starts at 15 packets).
    pub initial_ssthresh_pkts: Option<u32>,
    /// Receive buffer; the advertised window is its free space.
    pub rcvbuf_bytes: u64,
    /// Linux's receive-buffer autotuning instead of a fixed `rcvbuf_bytes`
    /// (no `SO_RCVBUF`, so no `SOCK_RCVBUF_LOCK`): the window starts at
    /// half of `tcp_rmem[1]` and grows by dynamic right-sizing
    /// (`crate::buffers::RcvSpace`).
    pub rcvbuf_auto: bool,
    pub dupthresh: u32,
    /// SYN (and SYN/ACK) retransmissions before giving up (Linux tcp_syn_retries).
    pub syn_retries: u32,
    pub cc_mode: CcMode,
    /// Proportional Rate Reduction (RFC 6937, as Linux) sets the window
    /// during SACK recovery; off, the window is ssthresh for the whole
    /// episode (RFC 6675). Scenario flows have it on in linux mode only.
    pub prr: bool,
    /// Offer and use the timestamps option (RFC 7323): RTT samples from
    /// echoed timestamps where Karn's rule allows none (Linux
    /// `tcp_ack_update_rtt`). On in linux mode, as Linux's tcp_timestamps.
    pub timestamps: bool,
    /// RACK-TLP (RFC 8985) in linux mode with SACK, as Linux's default
    /// tcp_recovery = 1: losses, lost retransmissions included, are found
    /// by transmit time (`tcp_rack_detect_loss`) instead of RFC 6675's
    /// dupthresh, and a tail loss probe (`tcp_send_loss_probe`) comes
    /// before the RTO. Ignored in reference mode and without SACK.
    pub rack: bool,
    /// How long the side that closed first stays in TIME_WAIT (RFC 9293
    /// 2 MSL; Linux `TCP_TIMEWAIT_LEN`, 60 s).
    pub time_wait: SimDuration,
    /// Ask for ECN in the SYN (RFC 3168; Linux tcp_ecn = 1). A server
    /// accepts a request whatever this says (tcp_ecn = 2, the default).
    pub ecn: bool,
}

impl TcpConfig {
    /// The defaults of `mode`: the minimum RTO is RFC 6298's 1 s in
    /// reference mode and Linux's `TCP_RTO_MIN`, 200 ms, in linux mode,
    /// where PRR is on (Linux's recovery).
    pub fn for_mode(mode: CcMode) -> Self {
        match mode {
            CcMode::Reference => TcpConfig::default(),
            CcMode::Linux => TcpConfig {
                cc_mode: mode,
                prr: true,
                timestamps: true,
                rack: true,
                min_rto: SimDuration::from_millis(200),
                ..Default::default()
            }
            .fitted(),
        }
    }
}

impl TcpConfig {
    /// The configuration endpoints start from: with autotuning, the
    /// receive buffer is the window `tcp_rmem[1]` offers.
    pub fn starting(self) -> Self {
        if !self.rcvbuf_auto {
            return self;
        }
        let rcvbuf_bytes = crate::buffers::win_from_space(crate::buffers::TCP_RMEM_BYTES[1]);
        TcpConfig { rcvbuf_bytes, ..self }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            // 1500 - 40: no timestamps in reference mode.
            mss_bytes: mtu::DEFAULT_MTU_BYTES - mtu::IP_TCP_HEADER_BYTES,
            max_payload_bytes: mtu::DEFAULT_MTU_BYTES - mtu::IP_TCP_HEADER_BYTES,
            mtu_bytes: mtu::DEFAULT_MTU_BYTES,
            data_option_bytes: 0,
            header_bytes: mtu::ETHERNET_HEADER_BYTES + mtu::IP_TCP_HEADER_BYTES,
            sack: true,
            delayed_ack: true,
            delayed_ack_timeout: SimDuration::from_millis(40),
            min_rto: SimDuration::from_secs(1),
            max_rto: SimDuration::from_secs(120),
            initial_rto: SimDuration::from_secs(1),
            initial_cwnd_pkts: 10,
            initial_ssthresh_pkts: None,
            rcvbuf_bytes: 6 * 1024 * 1024,
            rcvbuf_auto: false,
            dupthresh: 3,
            syn_retries: 6,
            cc_mode: CcMode::Reference,
            prr: false,
            time_wait: SimDuration::from_secs(60),
            timestamps: false,
            rack: false,
            ecn: false,
        }
    }
}

#[cfg(test)]
mod tests;

/// The RST answering `pkt`, a segment no connection wants (RFC 9293 3.10.7.1).
pub fn rst_reply(pkt: &mpsim_core::Packet, wire_bytes: u32) -> mpsim_core::Packet {
    use mpsim_core::{Packet, TcpFlags};
    let has_ack = pkt.flags.has(TcpFlags::ACK);
    Packet {
        src: pkt.dst,
        dst: pkt.src,
        sport: pkt.dport,
        dport: pkt.sport,
        flags: TcpFlags(if has_ack { TcpFlags::RST } else { TcpFlags::RST | TcpFlags::ACK }),
        seq: if has_ack { pkt.ack } else { 0 },
        ack: pkt.seq + pkt.seq_len(),
        wire_bytes,
        ..Default::default()
    }
}
