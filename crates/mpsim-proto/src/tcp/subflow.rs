//! One TCP path: handshake, sender (RFC 5681/6582/6675, RFC 6298 with
//! Karn's rule and backoff), receiver (delayed ACK, SACK, finite buffer) and
//! FIN teardown. The congestion window and the controller live with the
//! connection (`CcCtx`), so coupled controllers can see every subflow.

use super::ecn::Ecn;
use super::mtu::{syn_option_bytes, ts_option_bytes};
use super::recv::Receiver;
use super::rtt::RttEstimator;
use super::scoreboard::{SackedInfo, Scoreboard, Seg, NO_TAG};
use super::{AppEvent, TcpConfig, TcpState};
use mpsim_cc::{AckSample, CaState, CcMode, CongestionController, Controller, SubflowCc};
use mpsim_core::{Addr, Packet, Proto, SimDuration, SimTime, TcpFlags, Timestamps};
use std::collections::VecDeque;

/// The connection-owned congestion state a subflow works with.
pub struct CcCtx<'a> {
    pub subs: &'a mut [SubflowCc],
    pub r: usize,
    pub ctrl: &'a mut Controller,
}

impl CcCtx<'_> {
    fn me(&mut self) -> &mut SubflowCc {
        &mut self.subs[self.r]
    }
    fn set_state(&mut self, new: CaState) {
        if self.subs[self.r].ca_state != new {
            self.subs[self.r].ca_state = new;
            self.ctrl.on_state_change(self.subs, self.r, new);
        }
    }
}

/// Counters of one subflow.
#[derive(Clone, Copy, Debug, Default)]
pub struct SubflowStats {
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub retransmitted_bytes: u64,
    pub retransmitted_segs: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Tail loss probes sent (RFC 8985 section 7; Linux TCPLossProbes).
    pub loss_probes: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
}

/// Laid out by hand (`repr(C)`): what the MPTCP scheduler reads of every
/// subflow when it places data (the state and the window: `has_send_room`,
/// `full_segments_with_room`) and what `poll_nothing_due` reads come
/// first, where with the flags of its `Sub` they fill one cache line and
/// the scoreboard's counters lead the next. The rest goes by decreasing
/// alignment, without padding.
#[repr(C)]
pub struct Subflow {
    pub state: TcpState,
    ack_pending: bool,
    syn_pending: bool,
    /// A probe goes out on the next poll, whatever the window.
    tlp_due: bool,
    close_requested: bool,
    fin_sent: bool,
    rescue_done: bool,
    is_cwnd_limited: bool,
    pub snd_nxt: u64,
    /// End of the data the application has written.
    snd_limit: u64,
    peer_wnd_right: u64,
    /// `cfg.mss_bytes`, here on the first cache line: the scheduler reads
    /// it for every subflow when it places data (`write_room_bytes`).
    mss_bytes: u32,
    dupacks: u32,
    pub snd_una: u64,
    max_pkts_out: u64,
    sb: Scoreboard,
    cwnd_usage_seq: u64,
    /// The earliest of the timers (`rto_at`, `delack_at`, `time_wait_at`,
    /// `reo_at`, `tlp_at`), as `earliest_timer` gives it, kept by every
    /// method that may move a timer.
    deadline: Option<SimTime>,
    /// Changed through `refit` only, which keeps `mss_bytes`.
    cfg: TcpConfig,
    /// Writes not yet sent that must leave as segments of their own (MPTCP
    /// mappings), oldest first, as (end, tag, length); empty for a plain
    /// byte stream. Once sent, the scoreboard's segments carry the tags.
    write_ends: VecDeque<(u64, u64, u32)>,
    /// Tag of the segment built last (`NO_TAG` for none or a pure ACK).
    last_tag: u64,
    pub rtt: RttEstimator,
    rto_at: Option<SimTime>,
    /// End of TIME_WAIT (RFC 9293 3.10.7.4), when in that state.
    time_wait_at: Option<SimTime>,
    /// A reset to send for a segment that arrived after the close.
    /// Boxed: rarely set, and a header inline would add 200 bytes to
    /// every subflow.
    reset_reply: Option<Box<Packet>>,
    /// Last.ACK.sent: the acknowledgement of the last segment built.
    last_ack_sent: u64,
    recovery_point: u64,
    /// The episode's rate reduction while in SACK recovery or CWR with `cfg.prr`.
    prr: Option<Prr>,
    /// RACK's reordering timer (Linux ICSK_TIME_REO_TIMEOUT).
    reo_at: Option<SimTime>,
    /// The tail loss probe timer (Linux ICSK_TIME_LOSS_PROBE).
    tlp_at: Option<SimTime>,
    /// SND.NXT after the outstanding probe (Linux `tlp_high_seq`), and
    /// whether that probe was a retransmission (`tlp_retrans`).
    tlp_high_seq: Option<u64>,
    last_send: SimTime,
    pub rcv: Receiver,
    delack_at: Option<SimTime>,
    peer_fin_seq: Option<u64>,
    events: VecDeque<AppEvent>,
    pub stats: SubflowStats,
    /// Window to advertise instead of the subflow buffer's (MPTCP: the
    /// connection-level window, spec section 7).
    adv_wnd_override: Option<u64>,
    /// RFC 3168 state (negotiation, echo, CWR).
    pub ecn: Ecn,
    pub local: Addr,
    pub remote: Addr,
    backoff: u32,
    /// TS.Recent: the peer's TSval to echo (RFC 7323 section 4.3).
    ts_recent_ms: u32,
    unacked_segs: u32,
    pub local_port: u16,
    pub remote_port: u16,
    is_client: bool,
    fin_acked: bool,
    /// The handshake completed once (a closed subflow then resets what arrives).
    was_synchronised: bool,
    /// Both ends use the timestamps option (RFC 7323 section 3.2).
    ts_on: bool,
    force_rtx: bool,
    /// A NewReno partial ACK arrived in this recovery episode.
    partial_ack_seen: bool,
    /// RACK-TLP finds losses (linux mode, SACK, `cfg.rack`).
    rack_on: bool,
    tlp_retrans: bool,
    probe_pending: bool,
    peer_fin_received: bool,
    send_complete_reported: bool,
}

/// The next segment `poll_transmit` sends.
#[derive(Clone, Copy, Debug)]
enum Tx {
    Syn,
    Retransmit(Seg),
    New(u64),
    Fin,
    Ack,
}

/// Sequence values beyond any real transfer ("unlimited" application data).
const UNLIMITED: u64 = u64::MAX / 4;

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000): added to the RACK
/// reordering timer and to a probe timeout with several segments out.
const TCP_TIMEOUT_MIN: SimDuration = SimDuration::from_millis(2);

/// Linux `TCP_RTO_MIN`: a probe with one segment out waits this much more,
/// the longest a delayed ACK may take (RFC 8985 section 7.2).
const TLP_DELACK_ALLOWANCE: SimDuration = SimDuration::from_millis(200);

/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
const TLP_NO_RTT_TIMEOUT: SimDuration = SimDuration::from_secs(1);

/// Proportional Rate Reduction over one recovery episode: RFC 6937 with
/// its slow-start reduction bound, as Linux `tcp_cwnd_reduction`. Counts
/// are whole packets as in Linux; bytes are rounded up to them, which
/// agrees with Linux's segment counts when segments are full-sized.
#[derive(Clone, Copy, Debug)]
struct Prr {
    /// The window when recovery began (Linux `prior_cwnd`, RFC 6937 RecoverFS).
    prior_cwnd_pkts: f64,
    /// Packets newly acknowledged or SACKed since recovery began.
    delivered_pkts: f64,
    /// Packets sent since recovery began, retransmissions included.
    out_pkts: f64,
}

impl Prr {
    fn new(prior_cwnd_pkts: f64) -> Self {
        Prr { prior_cwnd_pkts: prior_cwnd_pkts.max(1.0), delivered_pkts: 0.0, out_pkts: 0.0 }
    }

    fn on_send(&mut self) {
        self.out_pkts += 1.0;
    }

    /// The window after an ACK that delivered `newly_pkts` while `pipe_pkts`
    /// remain in flight, or None to keep the current one. `safe_ack`: the
    /// ACK moved the cumulative point and revealed no new loss.
    fn on_ack(&mut self, newly_pkts: f64, pipe_pkts: f64, ssthresh_pkts: f64, safe_ack: bool) -> Option<f64> {
        // Linux keeps the window on an ACK that delivers nothing; the ACK
        // that begins recovery sets it regardless, or the pre-loss window
        // would let a burst out.
        if newly_pkts <= 0.0 && self.out_pkts > 0.0 {
            return None;
        }
        self.delivered_pkts += newly_pkts;
        let delta_pkts = ssthresh_pkts - pipe_pkts;
        let sndcnt_pkts = if delta_pkts < 0.0 {
            // Pipe above ssthresh: send ssthresh/prior_cwnd of what arrives,
            // so the pipe meets ssthresh as the episode ends.
            (ssthresh_pkts * self.delivered_pkts / self.prior_cwnd_pkts).ceil() - self.out_pkts
        } else if safe_ack {
            // Pipe below it after heavy loss: regrow no faster than slow start.
            delta_pkts.min((self.delivered_pkts - self.out_pkts).max(newly_pkts) + 1.0)
        } else {
            // Losses are still being found: do not outrun the ACK clock.
            delta_pkts.min(newly_pkts)
        };
        // The fast retransmit always goes out when recovery begins.
        let floor_pkts = if self.out_pkts > 0.0 { 0.0 } else { 1.0 };
        Some(pipe_pkts + sndcnt_pkts.max(floor_pkts))
    }
}

fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl Subflow {
    fn new(mut cfg: TcpConfig, local: (Addr, u16), remote: (Addr, u16), state: TcpState, is_client: bool) -> Self {
        // Timestamps, if agreed, shrink the segments later (`negotiate_timestamps`).
        cfg.fit_to_mtu(false);
        let rack_on = cfg.rack && cfg.sack && cfg.cc_mode == CcMode::Linux;
        let mut sb = Scoreboard::default();
        if rack_on {
            sb.enable_rack();
        }
        Subflow {
            mss_bytes: cfg.mss_bytes,
            cfg,
            local: local.0,
            local_port: local.1,
            remote: remote.0,
            remote_port: remote.1,
            state,
            is_client,
            snd_una: 0,
            snd_nxt: 1,
            snd_limit: 1,
            write_ends: VecDeque::new(),
            last_tag: NO_TAG,
            close_requested: false,
            fin_sent: false,
            fin_acked: false,
            peer_wnd_right: 1 + cfg.mss_bytes as u64,
            sb,
            rtt: match cfg.cc_mode {
                CcMode::Reference => RttEstimator::new(cfg.min_rto, cfg.max_rto, cfg.initial_rto),
                CcMode::Linux => RttEstimator::new_linux(cfg.min_rto, cfg.max_rto, cfg.initial_rto),
            },
            backoff: 0,
            rto_at: None,
            time_wait_at: None,
            was_synchronised: false,
            reset_reply: None,
            ts_on: false,
            ts_recent_ms: 0,
            last_ack_sent: 0,
            recovery_point: 0,
            dupacks: 0,
            force_rtx: false,
            rescue_done: false,
            partial_ack_seen: false,
            prr: None,
            rack_on,
            reo_at: None,
            tlp_at: None,
            deadline: None,
            tlp_due: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            syn_pending: true,
            probe_pending: false,
            last_send: SimTime::ZERO,
            is_cwnd_limited: false,
            max_pkts_out: 0,
            cwnd_usage_seq: 0,
            rcv: Receiver::new(1, cfg.rcvbuf_bytes),
            ack_pending: false,
            delack_at: None,
            unacked_segs: 0,
            peer_fin_seq: None,
            peer_fin_received: false,
            send_complete_reported: false,
            events: VecDeque::new(),
            stats: SubflowStats::default(),
            adv_wnd_override: None,
            ecn: Ecn::new(cfg.ecn),
        }
    }

    /// An active open: the first `poll_transmit` sends the SYN.
    pub fn connect(cfg: TcpConfig, local: (Addr, u16), remote: (Addr, u16)) -> Self {
        Self::new(cfg, local, remote, TcpState::SynSent, true)
    }

    /// A passive open from a received SYN: the first `poll_transmit` sends the SYN/ACK.
    pub fn accept(cfg: TcpConfig, syn: &Packet) -> Self {
        let mut s = Self::new(cfg, (syn.dst, syn.dport), (syn.src, syn.sport), TcpState::SynReceived, false);
        s.rcv = Receiver::new(syn.seq + 1, cfg.rcvbuf_bytes);
        s.negotiate_timestamps(syn);
        s.peer_wnd_right = syn.wnd_bytes.max(1);
        s.ecn.on_syn(syn);
        s
    }

    // ----- application side -----

    /// The application writes `bytes` more.
    pub fn send(&mut self, bytes: u64) {
        self.snd_limit = (self.snd_limit + bytes).min(UNLIMITED);
        self.send_complete_reported = false;
    }

    /// The application writes without end.
    pub fn send_unlimited(&mut self) {
        self.snd_limit = UNLIMITED;
    }

    /// The application writes `bytes` that go out as one segment of their
    /// own, never merged with the writes around them (an MPTCP mapping, as
    /// an skb entailed on a Linux subflow). At most one MSS. The segment,
    /// and every retransmission of it, reports `tag` through `last_tag`.
    pub fn send_segment(&mut self, bytes: u64, tag: u64) {
        let start = self.snd_limit;
        self.send(bytes);
        let len = (self.snd_limit - start).min(u32::MAX as u64) as u32;
        self.write_ends.push_back((self.snd_limit, tag, len));
    }

    /// The tagged bytes written and not cumulatively acknowledged, oldest
    /// first, as (tag, length): each tagged segment in flight (its tag and
    /// what is left of it after a partial ACK), then each tagged write not
    /// yet sent whole. A write sent in two segments appears more than once.
    pub fn unacked_tagged(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let sent = self.sb.iter().filter(|s| s.tag != NO_TAG).map(|s| (s.tag, s.len() as u32)); // at most one MSS
        sent.chain(self.write_ends.iter().map(|&(_, tag, len)| (tag, len)))
    }

    /// The tag written with the segment built last, if it carried one.
    pub fn last_tag(&self) -> Option<u64> {
        (self.last_tag != NO_TAG).then_some(self.last_tag)
    }

    /// Sequence number of the next byte the application writes.
    pub fn write_seq(&self) -> u64 {
        self.snd_limit
    }

    /// Stops writing: nothing beyond what was already sent goes out.
    pub fn pause(&mut self) {
        self.snd_limit = self.snd_nxt;
        self.write_ends.clear();
    }

    /// No more data: send FIN after what was written.
    pub fn close(&mut self) {
        self.close_requested = true;
    }

    /// Application bytes written and not yet sent or not yet acknowledged.
    pub fn unacked_app_bytes(&self) -> u64 {
        self.snd_limit.saturating_sub(self.snd_una.max(1))
    }

    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    pub fn is_closed(&self) -> bool {
        self.state == TcpState::Closed
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.sb.pipe_bytes()
    }

    pub fn is_client(&self) -> bool {
        self.is_client
    }

    /// Advertise `w` bytes of window instead of this subflow's free buffer.
    pub fn set_advertised_window(&mut self, w: Option<u64>) {
        self.adv_wnd_override = w;
    }

    /// Room to write `len` more bytes for sending now: established, the
    /// congestion window holds what is in flight, what is written but
    /// unsent, and one more full segment, and the peer's window takes them
    /// (the out-of-tree Linux scheduler's `mptcp_is_temp_unavailable`).
    #[inline]
    pub fn has_send_room(&self, cc: &SubflowCc, len: u64) -> bool {
        let mss = self.mss_bytes as u64;
        let (by_cwnd, by_peer) = self.write_room_bytes(cc);
        self.state.can_send() && by_cwnd >= mss && by_peer >= len.min(mss)
    }

    /// Bytes that may still be written for sending now: what the congestion
    /// window leaves beside what is in flight and what is written but
    /// unsent, and what the peer's window leaves beyond what is written.
    #[inline]
    fn write_room_bytes(&self, cc: &SubflowCc) -> (u64, u64) {
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(self.mss_bytes, self.cfg.mss_bytes, "`cfg` changed without `refit`");
        }
        let mss = self.mss_bytes as u64;
        let cwnd_bytes = ((cc.cwnd_pkts * mss as f64) as u64).max(mss);
        let unsent = self.snd_limit.saturating_sub(self.snd_nxt);
        (cwnd_bytes.saturating_sub(self.sb.pipe_bytes() + unsent), self.peer_wnd_right.saturating_sub(self.snd_limit))
    }

    /// How many full-size segments `has_send_room` would accept one after
    /// the other (each written before the next is asked for).
    #[inline]
    pub fn full_segments_with_room(&self, cc: &SubflowCc) -> u64 {
        if !self.state.can_send() {
            return 0;
        }
        let (by_cwnd, by_peer) = self.write_room_bytes(cc);
        by_cwnd.min(by_peer) / self.mss_bytes as u64
    }

    /// A pure ACK carrying the current acknowledgement and window, for
    /// control options (MPTCP ADD_ADDR, DATA_FIN, ...). None before the
    /// handshake completes.
    pub fn control_packet(&mut self, now: SimTime) -> Option<Packet> {
        if !self.state.is_synchronised() {
            return None;
        }
        let p = self.segment(self.snd_nxt_seq(), 0, TcpFlags::ACK, now);
        self.refresh_deadline();
        Some(p)
    }

    /// SND.NXT, the sequence number a segment without data carries (RFC
    /// 9293 3.10.7.4; Linux `tcp_acceptable_seq`): past our FIN once it is sent.
    fn snd_nxt_seq(&self) -> u64 {
        self.snd_nxt + self.fin_sent as u64
    }

    /// Payload of the next new segment: the full segment less the SACK
    /// blocks it will carry (Linux `tcp_current_mss`). An MPTCP subflow
    /// sends the full mappings its connection cut; its SACK blocks give
    /// way to them instead (`segment`).
    #[inline]
    fn mss_now(&self) -> u64 {
        let full = self.mss_bytes as u64;
        if self.cfg.data_option_bytes > 0 || !self.cfg.sack {
            return full;
        }
        let sack = self.rcv.sack_blocks();
        if sack.len == 0 {
            return full;
        }
        self.cfg.mss_now(self.ts_on, &sack) as u64
    }

    /// The options every data segment carries besides timestamps and SACK
    /// changed (an MPTCP connection fell back to TCP): refits the segments.
    pub fn set_data_option_bytes(&mut self, bytes: u32) {
        self.cfg.data_option_bytes = bytes;
        self.refit();
    }

    /// The segment size for the options now in use (`cfg.fit_to_mtu`),
    /// and its copy.
    fn refit(&mut self) {
        self.cfg.fit_to_mtu(self.ts_on);
        self.mss_bytes = self.cfg.mss_bytes;
    }

    /// The configuration, with the segment size the handshake settled on.
    pub fn cfg(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Aborts the subflow: the returned RST goes to the peer; no timers remain.
    pub fn abort(&mut self, now: SimTime) -> Packet {
        let seq = self.snd_nxt;
        let mut p = self.segment(seq, 0, TcpFlags::ACK | TcpFlags::RST, now);
        p.sack = Default::default();
        p.wire_bytes = self.cfg.header_bytes + ts_option_bytes(p.ts);
        self.state = TcpState::Closed;
        self.rto_at = None;
        self.time_wait_at = None;
        self.delack_at = None;
        self.clear_rack_timers();
        self.ack_pending = false;
        self.syn_pending = false;
        self.refresh_deadline();
        p
    }

    /// The sender is in the RTO (`Loss`) phase or backing off.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// First relative sequence number not yet acknowledged at subflow level.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// One line of sender and receiver state, for debugging.
    pub fn debug_line(&self) -> String {
        format!(
            "{:?} una={} nxt={} limit={} out={} pipe={} rto_at={:?} backoff={} dupacks={} recovery_point={} rcv_nxt={} fin_sent={} fin_acked={} stats={:?}",
            self.state,
            self.snd_una,
            self.snd_nxt,
            self.snd_limit,
            self.sb.outstanding_bytes(),
            self.sb.pipe_bytes(),
            self.rto_at.map(|t| t.as_secs_f64()),
            self.backoff,
            self.dupacks,
            self.recovery_point,
            self.rcv.rcv_nxt,
            self.fin_sent,
            self.fin_acked,
            self.stats
        )
    }

    // ----- timers -----

    #[inline(always)]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(self.deadline, self.earliest_timer(), "a method moved a timer without `refresh_deadline`");
        }
        self.deadline
    }

    /// After a method that may have moved a timer.
    #[inline(always)]
    fn refresh_deadline(&mut self) {
        self.deadline = self.earliest_timer();
    }

    #[inline(always)]
    fn earliest_timer(&self) -> Option<SimTime> {
        let t = earliest(earliest(self.rto_at, self.delack_at), self.time_wait_at);
        if self.rack_on {
            earliest(t, earliest(self.reo_at, self.tlp_at))
        } else {
            t
        }
    }

    /// When the pending retransmission-class timer fires: the RTO, and
    /// with RACK the tail loss probe and the reordering timer (Linux's
    /// `icsk_pending` timers), not the delayed ACK or TIME_WAIT.
    pub fn retransmit_timeout(&self) -> Option<SimTime> {
        if self.rack_on {
            earliest(self.rto_at, earliest(self.reo_at, self.tlp_at))
        } else {
            self.rto_at
        }
    }

    pub fn handle_timeout(&mut self, now: SimTime, cc: &mut CcCtx) {
        self.fire_timers(now, cc);
        self.refresh_deadline();
    }

    fn fire_timers(&mut self, now: SimTime, cc: &mut CcCtx) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.ack_pending = true;
        }
        if self.reo_at.is_some_and(|t| t <= now) {
            self.reo_at = None;
            self.on_reo_timeout(now, cc);
        }
        // Before the RTO: a probe due at the same time goes instead of it.
        if self.tlp_at.is_some_and(|t| t <= now) {
            self.tlp_at = None;
            self.on_tlp_timeout(now);
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now, cc);
        }
        if self.time_wait_at.is_some_and(|t| t <= now) {
            self.time_wait_at = None;
            self.state = TcpState::Closed;
        }
    }

    fn arm_rto(&mut self, now: SimTime) {
        self.rto_at = Some(now + self.rtt.backed_off_rto(self.backoff));
    }

    fn clear_rack_timers(&mut self) {
        self.reo_at = None;
        self.tlp_at = None;
        self.tlp_due = false;
    }

    /// RFC 8985 section 6.2 step 4, Linux `tcp_rack_reo_wnd`: no settling
    /// time for reordering until the path has shown some, once recovery is
    /// under way or dupthresh segments are SACKed; else min_rtt/4, at most SRTT.
    fn rack_reo_wnd(&self, state: CaState) -> SimDuration {
        if !self.sb.reordering_seen() {
            let dupthresh_bytes = self.cfg.dupthresh as u64 * self.mss_bytes as u64;
            if matches!(state, CaState::Recovery | CaState::Loss) || self.sb.sacked_bytes() >= dupthresh_bytes {
                return SimDuration::ZERO;
            }
        }
        let min_rtt = self.rtt.min_rtt.unwrap_or(SimDuration::ZERO);
        SimDuration(min_rtt.0 / 4).min(self.rtt.srtt.unwrap_or(SimDuration::ZERO))
    }

    /// RACK's loss detection (`tcp_rack_mark_lost`): `force` from the
    /// reordering timer, else only after a delivery advanced RACK. The
    /// timer is set for the segments still within the reordering window.
    fn rack_mark_lost(&mut self, now: SimTime, state: CaState, force: bool) {
        if !force && !self.sb.rack_advanced() {
            return; // a pending timer stays
        }
        let reo_wnd = self.rack_reo_wnd(state);
        self.reo_at = self.sb.rack_detect_loss(now, reo_wnd, true).map(|left| now + left + TCP_TIMEOUT_MIN);
    }

    /// Linux `tcp_rack_reo_timeout`: segments whose reordering window has
    /// passed are lost; outside recovery that begins one.
    fn on_reo_timeout(&mut self, now: SimTime, cc: &mut CcCtx) {
        let lost_before = self.sb.marked_lost_bytes();
        let state = cc.me().ca_state;
        self.rack_mark_lost(now, state, true);
        if self.sb.marked_lost_bytes() > lost_before && matches!(state, CaState::Open | CaState::Disorder | CaState::Cwr) {
            self.enter_recovery(cc);
            if self.prr.is_some() {
                // `tcp_cwnd_reduction(sk, 1, newly_lost, 0)`: as one packet delivered.
                self.prr_on_ack(self.mss_bytes as u64, false, cc);
            } else {
                let ss = cc.me().ssthresh_pkts;
                cc.me().cwnd_pkts = ss;
            }
            self.sync_cc(cc);
        }
    }

    /// RFC 8985 section 7.2, Linux `tcp_schedule_loss_probe`: in Open or
    /// CWR with data out, a probe after 2 SRTT (plus the delayed-ACK
    /// allowance with one segment out), no later than the RTO.
    fn schedule_loss_probe(&mut self, now: SimTime, state: CaState) {
        if !self.rack_on || self.sb.is_empty() || !matches!(state, CaState::Open | CaState::Cwr) {
            self.tlp_at = None;
            return;
        }
        let pto = match self.rtt.srtt {
            Some(srtt) if self.sb.len() == 1 => srtt + srtt + TLP_DELACK_ALLOWANCE,
            Some(srtt) => srtt + srtt + TCP_TIMEOUT_MIN,
            None => TLP_NO_RTT_TIMEOUT,
        };
        let at = now + pto;
        self.tlp_at = Some(self.rto_at.filter(|&r| r > now).map_or(at, |r| at.min(r)));
    }

    /// Linux `tcp_send_loss_probe`: at most one probe outstanding; the
    /// next poll sends it.
    fn on_tlp_timeout(&mut self, _now: SimTime) {
        if self.tlp_high_seq.is_none() && !self.sb.is_empty() {
            self.tlp_due = true;
        }
    }

    /// The probe: a new segment if the peer's window takes one, else the
    /// last segment sent again (the last one with data: a bare FIN
    /// would tell the receiver nothing it could SACK). The RTO restarts
    /// from it.
    fn loss_probe(&mut self, now: SimTime) -> Option<Tx> {
        let mss = self.mss_bytes as u64;
        let write_end = self.write_ends.front().map_or(self.snd_limit, |w| w.0);
        let len = mss.min(write_end.saturating_sub(self.snd_nxt));
        let tx = if self.has_unsent_data() && self.state.can_send() && self.snd_nxt + len <= self.peer_wnd_right {
            self.tlp_high_seq = Some(self.snd_nxt + len);
            Tx::New(len)
        } else {
            let seg = self.sb.probe_candidate()?;
            self.tlp_high_seq = Some(self.snd_nxt_seq());
            Tx::Retransmit(seg)
        };
        self.tlp_retrans = matches!(tx, Tx::Retransmit(_));
        self.stats.loss_probes += 1;
        self.arm_rto(now);
        Some(tx)
    }

    /// Linux `tcp_process_tlp_ack`: an ACK beyond the probe's SND.NXT after
    /// a retransmitted probe means it repaired a loss: reduce the window
    /// once (CWR, ended at once). A duplicate ACK at it means the original
    /// and the probe both arrived. `pure_dup`: the ACK moved nothing.
    fn process_tlp_ack(&mut self, ack: u64, pure_dup: bool, cc: &mut CcCtx) {
        let Some(high) = self.tlp_high_seq.filter(|&h| ack >= h) else { return };
        if !self.tlp_retrans || pure_dup {
            self.tlp_high_seq = None;
        } else if ack > high {
            self.tlp_high_seq = None;
            self.sync_cc(cc);
            let ss = self.reduce_ssthresh(cc);
            let s = cc.me();
            s.cwnd_pkts = s.cwnd_pkts.min(ss);
            s.cwnd_cnt = 0;
            cc.set_state(CaState::Cwr);
            let open = if self.sb.sacked_bytes() > 0 { CaState::Disorder } else { CaState::Open };
            cc.set_state(open);
        }
    }

    fn on_rto(&mut self, now: SimTime, cc: &mut CcCtx) {
        if !self.state.is_synchronised() {
            self.on_syn_timeout(now);
            return;
        }
        if self.sb.is_empty() {
            // Persist timer: the peer's window is closed; probe it.
            if self.has_unsent_data() {
                self.probe_pending = true;
                self.backoff = (self.backoff + 1).min(16);
                self.arm_rto(now);
            }
            return;
        }
        self.stats.timeouts += 1;
        self.clear_rack_timers();
        self.tlp_high_seq = None;
        self.sync_cc(cc);
        let state = cc.me().ca_state;
        // RFC 5681 (4): not again for a segment already resent by the timer.
        let already_lost = state == CaState::Loss && self.backoff > 0;
        // Linux `tcp_enter_loss` keeps the threshold a recovery episode
        // still under way has set.
        let in_recovery = state == CaState::Recovery && self.recovery_point > self.snd_una;
        let keep = already_lost || (self.cfg.cc_mode == CcMode::Linux && in_recovery);
        if !keep {
            self.reduce_ssthresh(cc);
        }
        cc.me().cwnd_pkts = 1.0;
        cc.me().cwnd_cnt = 0;
        self.prr = None;
        self.sb.mark_all_lost();
        self.recovery_point = self.snd_nxt;
        self.dupacks = 0;
        self.backoff = (self.backoff + 1).min(16);
        cc.set_state(CaState::Loss);
        cc.ctrl.on_rto(cc.subs, cc.r);
        self.sync_cc(cc);
        self.arm_rto(now);
    }

    fn on_syn_timeout(&mut self, now: SimTime) {
        if self.backoff >= self.cfg.syn_retries {
            self.state = TcpState::Closed;
            self.events.push_back(AppEvent::Failed);
            return;
        }
        self.backoff += 1;
        self.syn_pending = true;
        self.arm_rto(now);
    }

    // ----- incoming segments -----

    #[inline(always)]
    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet, cc: &mut CcCtx) {
        self.input(now, pkt, cc);
        self.refresh_deadline();
    }

    fn input(&mut self, now: SimTime, pkt: &Packet, cc: &mut CcCtx) {
        if pkt.flags.has(TcpFlags::RST) {
            // A reset in TIME_WAIT ends a connection that already completed
            // (Linux `tcp_timewait_state_process` with tcp_rfc1337 = 0).
            if !matches!(self.state, TcpState::Closed | TcpState::TimeWait) {
                self.events.push_back(AppEvent::Failed);
            }
            self.state = TcpState::Closed;
            self.time_wait_at = None;
            return;
        }
        match self.state {
            TcpState::Closed => {
                // RFC 9293 3.10.7.1: a segment for a connection that no
                // longer exists is answered by a reset.
                if self.was_synchronised {
                    self.reset_reply = Some(Box::new(super::rst_reply(pkt, self.cfg.header_bytes)));
                }
                return;
            }
            TcpState::SynSent => {
                self.on_syn_ack(now, pkt, cc);
                return;
            }
            TcpState::SynReceived => {
                if pkt.flags.has(TcpFlags::SYN) {
                    self.syn_pending = true;
                    return;
                }
                if !pkt.flags.has(TcpFlags::ACK) || pkt.ack < 1 {
                    return;
                }
                self.established(now, cc);
            }
            _ => {
                if pkt.flags.has(TcpFlags::SYN) {
                    // Our ACK of its SYN/ACK was lost: acknowledge again.
                    self.ack_pending = true;
                    return;
                }
            }
        }
        self.note_timestamp(pkt);
        if pkt.flags.has(TcpFlags::ACK) {
            self.on_ack(now, pkt, cc);
        }
        self.on_data(now, pkt);
    }

    fn on_syn_ack(&mut self, now: SimTime, pkt: &Packet, cc: &mut CcCtx) {
        let f = pkt.flags;
        if !(f.has(TcpFlags::SYN) && f.has(TcpFlags::ACK)) || pkt.ack != 1 {
            return;
        }
        self.rcv = Receiver::new(pkt.seq + 1, self.cfg.rcvbuf_bytes);
        self.negotiate_timestamps(pkt);
        self.peer_wnd_right = 1 + pkt.wnd_bytes;
        self.ecn.on_syn_ack(pkt);
        self.established(now, cc);
        self.ack_pending = true;
    }

    /// RFC 7323 section 3.2: the option is used when both SYNs carry it.
    fn negotiate_timestamps(&mut self, syn: &Packet) {
        if let Some(ts) = syn.ts.filter(|_| self.cfg.timestamps) {
            self.ts_on = true;
            self.ts_recent_ms = ts.val_ms;
            // Linux `tcp_sync_mss` with the header length the handshake set.
            self.refit();
        }
    }

    /// RFC 7323 section 4.3 (Linux `tcp_replace_ts_recent`): a segment at
    /// or left of the last acknowledgement sent updates TS.Recent, so a
    /// delayed ACK echoes the earliest segment it covers and one after a
    /// hole the segment that filled it.
    fn note_timestamp(&mut self, pkt: &Packet) {
        if let Some(ts) = pkt.ts.filter(|_| self.ts_on) {
            let newer = ts.val_ms.wrapping_sub(self.ts_recent_ms) as i32 >= 0;
            if newer && pkt.seq <= self.last_ack_sent {
                self.ts_recent_ms = ts.val_ms;
            }
        }
    }

    /// Linux `tcp_rtt_tsopt_us`: the RTT an echoed timestamp gives, in
    /// whole milliseconds; 1 µs when under one.
    fn ts_rtt(&self, now: SimTime, pkt: &Packet) -> Option<SimDuration> {
        let ecr = pkt.ts.filter(|t| self.ts_on && t.ecr_ms != 0)?.ecr_ms;
        let delta_ms = Timestamps::clock_ms(now).wrapping_sub(ecr);
        (delta_ms < i32::MAX as u32).then(|| {
            if delta_ms == 0 {
                SimDuration::from_micros(1)
            } else {
                SimDuration::from_millis(delta_ms as u64)
            }
        })
    }

    fn established(&mut self, now: SimTime, cc: &mut CcCtx) {
        if self.backoff == 0 {
            // Karn: only an unretransmitted SYN gives a sample.
            let sample = now - self.last_send;
            self.rtt.on_sample(sample, 1, 1);
            cc.ctrl.on_rtt_sample(cc.subs, cc.r, sample, now);
        }
        self.snd_una = 1;
        self.backoff = 0;
        self.rto_at = None;
        self.syn_pending = false;
        self.state = TcpState::Established;
        self.was_synchronised = true;
        self.last_send = now;
        let s = cc.me();
        s.established = true;
        s.can_send = true;
        s.cwnd_pkts = self.cfg.initial_cwnd_pkts as f64;
        if let Some(ss) = self.cfg.initial_ssthresh_pkts {
            s.ssthresh_pkts = ss as f64;
        }
        self.sync_cc(cc);
        self.events.push_back(AppEvent::Connected);
    }

    fn on_ack(&mut self, now: SimTime, pkt: &Packet, cc: &mut CcCtx) {
        let ack = pkt.ack;
        if ack > self.snd_nxt + self.fin_sent as u64 || ack < self.snd_una {
            return;
        }
        self.peer_wnd_right = self.peer_wnd_right.max(ack + pkt.wnd_bytes);
        let (una_before, lost_before) = (self.snd_una, self.sb.marked_lost_bytes());
        let delivered_before = self.snd_una + self.sb.sacked_bytes();
        if self.rack_on {
            self.sb.begin_ack(now, self.rtt.min_rtt.unwrap_or(SimDuration::ZERO));
        }
        let mut sacked = SackedInfo::default();
        if self.cfg.sack {
            for &(s, e) in pkt.sack.as_slice() {
                if e > self.snd_una {
                    let b = self.sb.sack(s.max(self.snd_una), e);
                    sacked.oldest = earliest(sacked.oldest, b.oldest);
                    sacked.newest = sacked.newest.max(b.newest);
                }
            }
        }
        // Only an echo, or an ACK that may end CWR, has work to do.
        if self.ecn.echoed(pkt) || cc.me().ca_state == CaState::Cwr {
            self.on_ecn_echo(pkt, cc);
        }
        if ack > self.snd_una {
            let ts_rtt = self.ts_rtt(now, pkt);
            self.on_new_ack(now, ack, sacked, delivered_before, ts_rtt, cc);
        } else if let Some(t) = sacked.oldest {
            let ca = sacked.newest.map_or(now - t, |n| now - n);
            self.take_rtt_sample(now, now - t, ca, cc);
        } else if pkt.payload_bytes == 0 && !self.sb.is_empty() && !pkt.flags.has(TcpFlags::FIN) {
            self.on_dupack(cc);
        }
        if self.rack_on {
            let pure_dup =
                ack == una_before && pkt.payload_bytes == 0 && self.snd_una + self.sb.sacked_bytes() == delivered_before;
            self.process_tlp_ack(ack, pure_dup, cc);
            self.detect_rack_loss(now, cc);
        } else if self.cfg.sack {
            self.detect_sack_loss(cc);
        }
        if self.prr.is_some() {
            let delivered_bytes = (self.snd_una + self.sb.sacked_bytes()).saturating_sub(delivered_before);
            // Linux `tcp_cwnd_reduction`: not safe if this ACK found a
            // loss, a lost retransmission included (RACK counts it again).
            let safe_ack = self.snd_una > una_before && self.sb.marked_lost_bytes() == lost_before;
            self.prr_on_ack(delivered_bytes, safe_ack, cc);
        }
        if self.rack_on {
            // Linux `tcp_set_xmit_timer` on an ACK that acknowledged data;
            // outside Open and CWR only the RTO is left.
            let state = cc.me().ca_state;
            if self.snd_una > una_before || !matches!(state, CaState::Open | CaState::Cwr) {
                self.schedule_loss_probe(now, state);
            }
        }
        self.sync_cc(cc);
        self.check_send_complete();
    }

    /// RFC 3168 section 6.1.2, as Linux `tcp_enter_cwr`: an echo reduces
    /// the window once per window of data (ssthresh from the controller),
    /// and CWR ends when data sent after the reduction is acknowledged
    /// (`tcp_fastretrans_alert`). With PRR the cut is spread over the ACKs
    /// of that window as Linux does (`tcp_init_cwnd_reduction`, then
    /// `tcp_cwnd_reduction` per ACK, `tcp_end_cwnd_reduction` at the end);
    /// without it cwnd drops to ssthresh at once (RFC 3168).
    fn on_ecn_echo(&mut self, pkt: &Packet, cc: &mut CcCtx) {
        if cc.me().ca_state == CaState::Cwr && pkt.ack > self.ecn.high_seq {
            if self.prr.take().is_some() {
                let ss = cc.me().ssthresh_pkts;
                cc.me().cwnd_pkts = ss;
            }
            cc.set_state(CaState::Open);
        }
        if !self.ecn.echoed(pkt) || !matches!(cc.me().ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        self.sync_cc(cc);
        let prior_cwnd_pkts = cc.me().cwnd_pkts;
        let ss = self.reduce_ssthresh(cc);
        self.prr = self.prr_enabled().then(|| Prr::new(prior_cwnd_pkts));
        let s = cc.me();
        if self.prr.is_none() {
            s.cwnd_pkts = s.cwnd_pkts.min(ss);
        }
        s.cwnd_cnt = 0;
        self.ecn.on_reduced(self.snd_nxt);
        cc.set_state(CaState::Cwr);
    }

    /// `r` feeds the RTO estimator (Linux `seq_rtt_us`, from the oldest
    /// segment newly acknowledged); controllers get `ca` (Linux
    /// `ca_rtt_us`, from the newest), as `tcp_ack_update_rtt` and
    /// `tcp_clean_rtx_queue` hand them out.
    #[inline(always)]
    fn take_rtt_sample(&mut self, now: SimTime, r: SimDuration, ca: SimDuration, cc: &mut CcCtx) {
        self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
        self.rtt.on_ca_sample(ca);
        self.sync_cc(cc);
        cc.ctrl.on_rtt_sample(cc.subs, cc.r, ca, now);
    }

    fn on_new_ack(
        &mut self,
        now: SimTime,
        ack: u64,
        sacked: SackedInfo,
        delivered_before: u64,
        ts_rtt: Option<SimDuration>,
        cc: &mut CcCtx,
    ) {
        let info = self.sb.cum_ack(ack);
        let acked_bytes = ack - self.snd_una;
        self.snd_una = ack;
        self.stats.bytes_acked += acked_bytes - info.fin_acked as u64;
        self.backoff = 0;
        self.dupacks = 0;
        self.probe_pending = false;
        if info.fin_acked {
            self.on_fin_acked(now);
        }
        // Linux: the cumulative sample, else one from newly SACKed data;
        // for controllers, the newest SACKed, else the newest acknowledged.
        // Where Karn's rule gives none, an echoed timestamp does (Linux
        // `tcp_ack_update_rtt`), for the estimator and controllers alike.
        let rtt = info.rtt_from.or(sacked.oldest).map(|t| now - t).or(ts_rtt);
        let ca_rtt = sacked.newest.or(info.ca_rtt_from).map(|t| now - t).or(ts_rtt);
        if let Some(r) = rtt {
            self.take_rtt_sample(now, r, ca_rtt.unwrap_or(r), cc);
        }
        // Only what this ACK newly delivers (cumulatively acknowledged and
        // not SACKed before, or newly SACKed) may grow the window: Linux
        // `tcp_ack` hands `tcp_cong_control` the delivered count.
        let delivered_bytes = (ack + self.sb.sacked_bytes()).saturating_sub(delivered_before + info.fin_acked as u64);
        self.sync_cc(cc);
        let state = cc.me().ca_state;
        // Spec 1.8 names Open and Disorder; Linux also grows in Loss (after an
        // RTO, `tcp_may_raise_cwnd`), which is how the window leaves 1 packet.
        let mut grow = matches!(state, CaState::Open | CaState::Disorder | CaState::Loss);
        if matches!(state, CaState::Recovery | CaState::Loss) {
            if ack >= self.recovery_point {
                if state == CaState::Recovery {
                    // As Linux tcp_end_cwnd_reduction ends PRR.
                    let ss = cc.me().ssthresh_pkts;
                    cc.me().cwnd_pkts = ss;
                    self.prr = None;
                    grow = false;
                }
                cc.set_state(CaState::Open);
            } else if state == CaState::Recovery && !self.cfg.sack {
                self.newreno_partial_ack(now, acked_bytes, cc);
            }
        }
        if grow && delivered_bytes > 0 && self.cwnd_limited(cc.me()) {
            let mss = self.mss_bytes as f64;
            let sample = AckSample { now, acked_pkts: delivered_bytes as f64 / mss, acked_bytes: delivered_bytes, rtt: ca_rtt };
            cc.ctrl.on_ack(cc.subs, cc.r, &sample);
        }
        if self.sb.is_empty() {
            self.rto_at = None;
            self.clear_rack_timers();
        } else if cc.me().ca_state != CaState::Recovery || self.cfg.sack {
            // RFC 6298 5.3; a NewReno partial ACK re-arms it itself.
            self.arm_rto(now);
        }
    }

    /// RFC 6582: retransmit the next hole, deflate by what was acknowledged.
    fn newreno_partial_ack(&mut self, now: SimTime, acked_bytes: u64, cc: &mut CcCtx) {
        self.sb.mark_head_lost();
        self.force_rtx = true;
        let mss = self.mss_bytes as f64;
        let acked_pkts = acked_bytes as f64 / mss;
        let s = cc.me();
        s.cwnd_pkts = (s.cwnd_pkts - acked_pkts + if acked_pkts >= 1.0 { 1.0 } else { 0.0 }).max(1.0);
        // RFC 6582 3.2 step 3, the Impatient variant: the timer restarts on
        // the first partial ACK of the episode only, so a window with many
        // holes ends in a timeout instead of one repair per RTT.
        if self.rto_at.is_none() || !std::mem::replace(&mut self.partial_ack_seen, true) {
            self.arm_rto(now);
        }
    }

    fn on_dupack(&mut self, cc: &mut CcCtx) {
        self.dupacks += 1;
        if self.cfg.sack {
            return;
        }
        let state = cc.me().ca_state;
        if state == CaState::Recovery {
            cc.me().cwnd_pkts += 1.0; // RFC 5681 inflation
        } else if self.dupacks == self.cfg.dupthresh && state != CaState::Loss && self.snd_una >= self.recovery_point {
            self.sb.mark_head_lost();
            self.enter_recovery(cc);
            let s = cc.me();
            s.cwnd_pkts = s.ssthresh_pkts + self.cfg.dupthresh as f64;
        }
    }

    /// RFC 6675 loss detection and entry into recovery.
    fn detect_sack_loss(&mut self, cc: &mut CcCtx) {
        let mut head_lost = self.sb.mark_lost_by_sack(self.cfg.dupthresh as usize);
        let state = cc.me().ca_state;
        if matches!(state, CaState::Recovery | CaState::Loss) {
            return;
        }
        if self.dupacks >= self.cfg.dupthresh && !self.sb.is_empty() {
            self.sb.mark_head_lost();
            head_lost = true;
        }
        self.after_loss_detection(head_lost, state, cc);
    }

    /// RACK loss detection (Linux `tcp_identify_packet_loss`); a segment
    /// found lost begins recovery (`tcp_time_to_recover`: lost_out > 0).
    /// In recovery and after an RTO it finds lost retransmissions, which
    /// are then sent again.
    fn detect_rack_loss(&mut self, now: SimTime, cc: &mut CcCtx) {
        let state = cc.me().ca_state;
        self.rack_mark_lost(now, state, false);
        if matches!(state, CaState::Recovery | CaState::Loss) {
            return;
        }
        let lost = self.sb.any_lost();
        self.after_loss_detection(lost, state, cc);
    }

    /// Recovery begins on a loss found outside it; else Disorder follows SACKs.
    fn after_loss_detection(&mut self, lost: bool, state: CaState, cc: &mut CcCtx) {
        if lost {
            self.enter_recovery(cc);
            if self.prr.is_none() {
                // With PRR the window is set per ACK, from this one on.
                let ss = cc.me().ssthresh_pkts;
                cc.me().cwnd_pkts = ss;
            }
        } else if state == CaState::Cwr {
            // An ECN reduction under way ends on its own ACK, not on SACKs
            // (Linux `tcp_try_to_open` leaves CWR alone).
        } else if self.sb.sacked_bytes() > 0 {
            cc.set_state(CaState::Disorder);
        } else if state == CaState::Disorder {
            cc.set_state(CaState::Open);
        }
    }

    fn enter_recovery(&mut self, cc: &mut CcCtx) {
        self.sync_cc(cc);
        let prior_cwnd_pkts = cc.me().cwnd_pkts;
        // A loss during an ECN reduction does not reduce again (Linux
        // `tcp_enter_recovery` cuts only when not already reducing).
        if cc.me().ca_state != CaState::Cwr {
            self.reduce_ssthresh(cc);
        }
        cc.me().cwnd_cnt = 0;
        self.recovery_point = self.snd_nxt;
        self.force_rtx = true;
        // RFC 6675 NextSeg rule 4; Linux has no rescue retransmission
        // (`tcp_xmit_retransmit_queue` resends what is marked lost only).
        self.rescue_done = self.rack_on;
        self.partial_ack_seen = false;
        // Linux `tcp_init_cwnd_reduction`: a probe outstanding is forgotten.
        self.tlp_high_seq = None;
        self.tlp_at = None;
        // A reduction already under way (CWR) goes on with its counts
        // (Linux `tcp_enter_recovery` skips `tcp_init_cwnd_reduction`).
        if self.prr.is_none() || cc.me().ca_state != CaState::Cwr {
            self.prr = self.prr_enabled().then(|| Prr::new(prior_cwnd_pkts));
        }
        self.stats.fast_recoveries += 1;
        cc.set_state(CaState::Recovery);
    }

    /// The FlightSize a congestion event halves (RFC 5681 (4)): data sent
    /// and not cumulatively acknowledged, but not what was sent beyond the
    /// window (RFC 3042: limited transmit; with SACK, segments sent as
    /// SACKs freed the pipe), so a decrease never raises the window.
    fn loss_flight_pkts(&self, cwnd_pkts: f64) -> f64 {
        (self.sb.outstanding_bytes() as f64 / self.mss_bytes as f64).min(cwnd_pkts)
    }

    /// A congestion event: the controller sets ssthresh from that
    /// FlightSize (loss, timeout or ECN echo alike); returns it.
    fn reduce_ssthresh(&self, cc: &mut CcCtx) -> f64 {
        let cwnd_pkts = cc.me().cwnd_pkts;
        cc.me().flight_pkts = self.loss_flight_pkts(cwnd_pkts);
        let ss = cc.ctrl.ssthresh_on_loss(cc.subs, cc.r);
        cc.me().ssthresh_pkts = ss;
        ss
    }

    fn prr_enabled(&self) -> bool {
        self.cfg.prr && self.cfg.sack
    }

    /// RFC 6937 (Linux `tcp_cwnd_reduction`): the window after an ACK in recovery or CWR.
    fn prr_on_ack(&mut self, delivered_bytes: u64, safe_ack: bool, cc: &mut CcCtx) {
        let Some(prr) = self.prr.as_mut() else { return };
        let mss = self.mss_bytes as u64;
        let newly_pkts = delivered_bytes.div_ceil(mss) as f64;
        let pipe_pkts = self.sb.pipe_bytes().div_ceil(mss) as f64;
        let ssthresh_pkts = cc.me().ssthresh_pkts;
        if let Some(cwnd_pkts) = prr.on_ack(newly_pkts, pipe_pkts, ssthresh_pkts, safe_ack) {
            cc.me().cwnd_pkts = cwnd_pkts;
        }
    }

    fn on_fin_acked(&mut self, now: SimTime) {
        self.fin_acked = true;
        match self.state {
            TcpState::FinWait1 => self.state = TcpState::FinWait2,
            TcpState::Closing => self.enter_time_wait(now),
            TcpState::LastAck => {
                self.state = TcpState::Closed;
                self.rto_at = None;
            }
            _ => {}
        }
    }

    fn check_send_complete(&mut self) {
        if self.close_requested && self.fin_acked && !self.send_complete_reported {
            self.send_complete_reported = true;
            self.events.push_back(AppEvent::SendComplete);
        }
    }

    // ----- receiver -----

    fn on_data(&mut self, now: SimTime, pkt: &Packet) {
        let ce_ack_now = self.ecn.on_segment(pkt);
        if pkt.payload_bytes > 0 {
            let start = pkt.seq;
            let out = self.rcv.on_data(start, start + pkt.payload_bytes as u64);
            if out.delivered > 0 {
                self.events.push_back(AppEvent::Delivered { bytes: out.delivered });
            }
            self.schedule_ack(now, out.ack_now || ce_ack_now);
        }
        if pkt.flags.has(TcpFlags::FIN) {
            self.peer_fin_seq = Some(pkt.seq + pkt.payload_bytes as u64);
            self.ack_pending = true;
            if self.state == TcpState::TimeWait {
                // RFC 9293 3.10.7.4: the peer's FIN again (our last ACK was
                // lost): acknowledge it and restart the 2 MSL timeout.
                self.enter_time_wait(now);
            }
        }
        if !self.peer_fin_received && self.peer_fin_seq == Some(self.rcv.rcv_nxt) {
            self.rcv.rcv_nxt += 1;
            self.peer_fin_received = true;
            self.ack_pending = true;
            self.events.push_back(AppEvent::PeerClosed);
            match self.state {
                TcpState::Established => self.state = TcpState::CloseWait,
                TcpState::FinWait1 => self.state = TcpState::Closing,
                TcpState::FinWait2 => self.enter_time_wait(now),
                _ => {}
            }
        }
    }

    /// RFC 9293 3.10.7.4: both FINs are acknowledged or being acknowledged
    /// by us; stay to answer a retransmitted FIN for `cfg.time_wait`.
    fn enter_time_wait(&mut self, now: SimTime) {
        self.state = TcpState::TimeWait;
        self.rto_at = None;
        self.time_wait_at = Some(now + self.cfg.time_wait);
    }

    fn schedule_ack(&mut self, now: SimTime, immediate: bool) {
        self.unacked_segs += 1;
        if immediate || !self.cfg.delayed_ack || self.unacked_segs >= 2 {
            self.ack_pending = true;
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + self.cfg.delayed_ack_timeout);
        }
    }

    // ----- outgoing segments -----

    /// A poll that can only find nothing to send, made cheaply: when no
    /// handshake segment, ACK, probe, retransmission, unsent data or FIN is
    /// due, does what `poll_transmit` would do then (validate the window,
    /// RFC 7661 as Linux) and returns true; otherwise changes nothing and
    /// returns false. MPTCP polls every subflow that saw an ACK before
    /// scheduling new data on it; most have nothing of their own to send.
    #[inline]
    pub fn poll_nothing_due(&mut self, cc: &SubflowCc) -> bool {
        let nothing_due = !self.ack_pending && self.state.is_synchronised() && !self.syn_pending && !self.data_may_be_due(cc);
        if nothing_due {
            self.end_empty_round(cc);
        }
        nothing_due
    }

    /// A retransmission, new data, a FIN or a rescue retransmission may be
    /// due (an ACK or a handshake segment aside); if not, a poll sends
    /// nothing.
    #[inline]
    fn data_may_be_due(&self, cc: &SubflowCc) -> bool {
        self.has_unsent_data()
            || self.sb.any_lost()
            || self.tlp_due
            || (self.close_requested && !self.fin_sent)
            || (self.cfg.sack && cc.ca_state == CaState::Recovery && !self.rescue_done)
    }

    /// A round of sending that sent nothing and was not blocked ends.
    #[inline(always)]
    fn end_empty_round(&mut self, cc: &SubflowCc) {
        let mss = self.mss_bytes as u64;
        self.cwnd_validate(false, (cc.cwnd_pkts * mss as f64) as u64);
    }

    fn has_unsent_data(&self) -> bool {
        self.snd_nxt < self.snd_limit
    }

    /// Copies what controllers read into the connection's `SubflowCc`.
    pub fn sync_cc(&self, cc: &mut CcCtx) {
        let mss = self.mss_bytes;
        let s = &mut cc.subs[cc.r];
        s.srtt = self.rtt.srtt;
        s.min_rtt = self.rtt.min_rtt;
        s.mss_bytes = mss;
        s.snd_una = self.snd_una;
        s.snd_nxt = self.snd_nxt;
        s.flight_pkts = self.sb.pipe_bytes() as f64 / mss as f64;
        s.can_send = self.state.can_send() || matches!(self.state, TcpState::FinWait1 | TcpState::LastAck | TcpState::Closing);
    }

    /// Linux `tcp_is_cwnd_limited` (spec 1.5).
    fn cwnd_limited(&self, s: &SubflowCc) -> bool {
        if s.in_slow_start() {
            s.cwnd_pkts < 2.0 * self.max_pkts_out as f64
        } else {
            self.is_cwnd_limited
        }
    }

    /// Linux `tcp_cwnd_validate`, after a round of sending.
    fn cwnd_validate(&mut self, blocked_by_cwnd: bool, cwnd_bytes: u64) {
        let pipe = self.sb.pipe_bytes();
        let limited = blocked_by_cwnd || pipe + self.mss_bytes as u64 > cwnd_bytes;
        let pkts_out = pipe.div_ceil(self.mss_bytes as u64);
        if self.snd_una >= self.cwnd_usage_seq || limited || (!self.is_cwnd_limited && pkts_out > self.max_pkts_out) {
            self.is_cwnd_limited = limited;
            self.max_pkts_out = pkts_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    pub fn poll_transmit(&mut self, now: SimTime, cc: &mut CcCtx) -> Option<Packet> {
        if self.state == TcpState::Closed {
            return self.reset_reply.take().map(|p| *p);
        }
        let Some(tx) = self.next_tx(now, cc) else {
            // A persist timer may have been armed.
            self.refresh_deadline();
            return None;
        };
        let p = self.build(tx, now);
        self.after_build(tx, now, cc);
        self.refresh_deadline();
        Some(p)
    }

    /// Appends the next segment to `out`, built in place (a packet header
    /// is a few hundred bytes, and engines send millions); false when there
    /// is nothing to send.
    pub fn poll_transmit_into(&mut self, now: SimTime, cc: &mut CcCtx, out: &mut Vec<Packet>) -> bool {
        if self.state == TcpState::Closed {
            return self.reset_reply.take().map(|p| out.push(*p)).is_some();
        }
        let Some(tx) = self.next_tx(now, cc) else {
            // A persist timer may have been armed.
            self.refresh_deadline();
            return false;
        };
        out.push(self.build(tx, now));
        self.after_build(tx, now, cc);
        self.refresh_deadline();
        true
    }

    /// Linux `tcp_write_xmit`: new data sent (not the probe itself)
    /// schedules a loss probe.
    #[inline(always)]
    fn after_build(&mut self, tx: Tx, now: SimTime, cc: &mut CcCtx) {
        if self.rack_on && matches!(tx, Tx::New(_)) && self.tlp_high_seq != Some(self.snd_nxt) {
            self.schedule_loss_probe(now, cc.me().ca_state);
        }
    }

    /// What to send next, if anything.
    #[inline(always)]
    fn next_tx(&mut self, now: SimTime, cc: &mut CcCtx) -> Option<Tx> {
        if self.state == TcpState::Closed {
            return None;
        }
        if self.syn_pending {
            return Some(Tx::Syn);
        }
        if !self.state.is_synchronised() {
            return None;
        }
        if let Some(tx) = self.next_data_segment(now, cc) {
            return Some(tx);
        }
        self.ack_pending.then_some(Tx::Ack)
    }

    #[inline(always)]
    fn build(&mut self, tx: Tx, now: SimTime) -> Packet {
        self.last_tag = match tx {
            Tx::Retransmit(seg) => seg.written_tag(),
            Tx::New(_) => self.write_ends.front().map_or(NO_TAG, |w| w.1),
            _ => NO_TAG,
        };
        match tx {
            Tx::Syn => self.syn_packet(now),
            Tx::Retransmit(seg) => self.retransmit(seg, now),
            Tx::New(len) => self.new_segment(len, now),
            Tx::Fin => self.fin_segment(now),
            Tx::Ack => self.segment(self.snd_nxt_seq(), 0, TcpFlags::ACK, now),
        }
    }

    fn syn_packet(&mut self, now: SimTime) -> Packet {
        self.syn_pending = false;
        let flags = if self.is_client { TcpFlags::SYN } else { TcpFlags::SYN | TcpFlags::ACK };
        let mut p = self.segment(0, 0, flags, now);
        p.wire_bytes += syn_option_bytes(p.ts.is_some());
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        p
    }

    fn next_data_segment(&mut self, now: SimTime, cc: &mut CcCtx) -> Option<Tx> {
        if !self.data_may_be_due(cc.me()) {
            self.end_empty_round(cc.me());
            return None;
        }
        if std::mem::take(&mut self.tlp_due) {
            if let Some(tx) = self.loss_probe(now) {
                return Some(tx);
            }
        }
        let mss = self.mss_bytes as u64;
        let cwnd_bytes = (cc.me().cwnd_pkts * mss as f64) as u64;
        let pipe = self.sb.pipe_bytes();
        // RFC 3042 limited transmit (without SACK; with SACK the pipe
        // already excludes SACKed segments): one new segment per dupACK.
        let open = matches!(cc.me().ca_state, CaState::Open | CaState::Disorder);
        let limited_transmit = if !self.cfg.sack && open { self.dupacks.min(2) as u64 * mss } else { 0 };
        let room = |len: u64| pipe + len <= cwnd_bytes.max(mss) + limited_transmit;
        if let Some(seg) = self.sb.next_lost() {
            let forced = std::mem::take(&mut self.force_rtx);
            if forced || (self.cfg.sack || cc.me().ca_state == CaState::Loss) && room(seg.len()) {
                return Some(Tx::Retransmit(seg));
            }
            if !self.cfg.sack && cc.me().ca_state == CaState::Recovery {
                // NewReno retransmits only on dupACK and partial-ACK triggers.
            } else {
                self.cwnd_validate(true, cwnd_bytes);
                return None;
            }
        }
        if self.has_unsent_data() && self.state.can_send() {
            let write_end = self.write_ends.front().map_or(self.snd_limit, |w| w.0);
            let len = mss.min(write_end - self.snd_nxt).min(self.mss_now());
            let in_window = self.snd_nxt + len <= self.peer_wnd_right || std::mem::take(&mut self.probe_pending);
            if !in_window {
                if self.sb.is_empty() && self.rto_at.is_none() {
                    self.arm_rto(now); // persist timer
                }
                self.cwnd_validate(false, cwnd_bytes);
                return None;
            }
            if !room(len) {
                self.cwnd_validate(true, cwnd_bytes);
                return None;
            }
            self.maybe_idle_restart(now, cc);
            return Some(Tx::New(len));
        }
        if self.close_requested && !self.fin_sent && self.snd_nxt == self.snd_limit && self.state.can_send() {
            return Some(Tx::Fin);
        }
        if self.cfg.sack && cc.me().ca_state == CaState::Recovery && !self.rescue_done {
            if let Some(seg) = self.sb.last_unsacked().filter(|s| !s.rtx_in_flight() && room(s.len())) {
                // RFC 6675 NextSeg rule 4: one rescue retransmission per episode.
                self.rescue_done = true;
                return Some(Tx::Retransmit(seg));
            }
        }
        self.cwnd_validate(false, cwnd_bytes);
        None
    }

    /// RFC 5681 restart window after an idle period longer than the RTO.
    fn maybe_idle_restart(&mut self, now: SimTime, cc: &mut CcCtx) {
        if self.sb.is_empty() && self.snd_nxt > 1 && now - self.last_send > self.rtt.rto() {
            let iw = self.cfg.initial_cwnd_pkts as f64;
            let s = cc.me();
            s.cwnd_pkts = s.cwnd_pkts.min(iw);
            cc.ctrl.on_idle_restart(cc.subs, cc.r, now);
        }
    }

    #[inline]
    fn new_segment(&mut self, len: u64, now: SimTime) -> Packet {
        let seq = self.snd_nxt;
        self.snd_nxt += len;
        while self.write_ends.front().is_some_and(|w| w.0 <= self.snd_nxt) {
            self.write_ends.pop_front();
        }
        // `len` is at most the MSS, a u32.
        self.sb.push(Seg::new(seq, len as u32, now, false, self.last_tag));
        self.stats.bytes_sent += len;
        self.after_send(now);
        let mut p = self.segment(seq, len as u32, TcpFlags::ACK | TcpFlags::PSH, now);
        self.ecn.on_new_data(&mut p);
        p
    }

    fn fin_segment(&mut self, now: SimTime) -> Packet {
        let seq = self.snd_nxt;
        self.fin_sent = true;
        self.sb.push(Seg::new(seq, 1, now, true, NO_TAG));
        self.state = match self.state {
            TcpState::Established => TcpState::FinWait1,
            TcpState::CloseWait => TcpState::LastAck,
            s => s,
        };
        self.after_send(now);
        self.segment(seq, 0, TcpFlags::ACK | TcpFlags::FIN, now)
    }

    fn retransmit(&mut self, seg: Seg, now: SimTime) -> Packet {
        // Linux `tcp_xmit_retransmit_queue` restarts the timer when it
        // resends the head (RFC 6675 section 6 allows re-arming it on
        // retransmissions in recovery; on every one, a lost retransmission
        // of the head would never time out). Reference mode without SACK
        // follows RFC 6582's Impatient rule instead.
        let rearm = seg.start == self.snd_una && (self.cfg.sack || self.cfg.cc_mode == CcMode::Linux);
        if rearm {
            self.arm_rto(now);
        }
        self.sb.on_retransmit(seg.start, now);
        let len = if seg.fin() { 0 } else { seg.len() };
        self.stats.bytes_sent += len;
        self.stats.retransmitted_bytes += len;
        self.stats.retransmitted_segs += 1;
        self.after_send(now);
        let flags = if seg.fin() { TcpFlags::ACK | TcpFlags::FIN } else { TcpFlags::ACK | TcpFlags::PSH };
        self.segment(seg.start, len as u32, flags, now)
    }

    fn after_send(&mut self, now: SimTime) {
        if let Some(prr) = self.prr.as_mut() {
            prr.on_send();
        }
        self.last_send = now;
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
    }

    /// Builds a segment carrying the current ACK, window and SACK blocks.
    #[inline]
    fn segment(&mut self, seq: u64, payload: u32, flags: u8, now: SimTime) -> Packet {
        let mut f = flags;
        let synced_rcv = self.state.is_synchronised() || !self.is_client;
        if synced_rcv {
            f |= TcpFlags::ACK;
        }
        let mut sack = if self.cfg.sack { self.rcv.sack_blocks() } else { Default::default() };
        // What does not fit gives way: on new data only with MPTCP (whose
        // mappings are sized for full segments, `mss_now`), and on
        // retransmissions, which Linux would split instead.
        sack.len = self.cfg.sack_blocks_fitting(self.ts_on, &sack, payload);
        self.ack_pending = false;
        self.delack_at = None;
        self.unacked_segs = 0;
        if payload == 0 && flags & (TcpFlags::SYN | TcpFlags::FIN) == 0 {
            // A pure ACK.
        } else {
            self.last_send = now;
        }
        let ack = if f & TcpFlags::ACK != 0 { self.rcv.rcv_nxt } else { 0 };
        self.last_ack_sent = ack;
        // Our SYN offers the option; later segments carry it once agreed.
        let offer = self.cfg.timestamps && flags & TcpFlags::SYN != 0 && self.is_client;
        let ts = (self.ts_on || offer)
            .then(|| Timestamps { val_ms: Timestamps::clock_ms(now), ecr_ms: if self.ts_on { self.ts_recent_ms } else { 0 } });
        let mut p = Packet {
            src: self.local,
            dst: self.remote,
            sport: self.local_port,
            dport: self.remote_port,
            proto: Proto::Tcp,
            flags: TcpFlags(f),
            seq,
            ack,
            ts,
            wnd_bytes: self.adv_wnd_override.unwrap_or_else(|| self.rcv.window_bytes()),
            sack,
            payload_bytes: payload,
            wire_bytes: payload + self.cfg.header_bytes + ts_option_bytes(ts) + sack.option_bytes(),
            ext: Default::default(),
            ecn: Default::default(),
        };
        self.ecn.on_build(&mut p);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::{Prr, Subflow};
    use std::mem::offset_of;

    /// What the MPTCP scheduler and `poll_nothing_due` read stays at the
    /// start, where a `Sub` puts it on its first cache line (after 8 bytes
    /// of its own), and the scoreboard's counters on the next.
    #[test]
    fn the_fields_read_for_every_subflow_lead() {
        let ends = [
            offset_of!(Subflow, state) + 1,
            offset_of!(Subflow, is_cwnd_limited) + 1,
            offset_of!(Subflow, snd_nxt) + 8,
            offset_of!(Subflow, snd_limit) + 8,
            offset_of!(Subflow, peer_wnd_right) + 8,
            offset_of!(Subflow, mss_bytes) + 4,
            offset_of!(Subflow, snd_una) + 8,
            offset_of!(Subflow, max_pkts_out) + 8,
        ];
        assert!(ends.iter().all(|&end| end <= 56), "{ends:?}");
        assert_eq!(offset_of!(Subflow, sb), 56);
    }

    /// Feeds `prr` ACKs of one packet each from a pipe of `pipe_pkts` and
    /// sends what it allows; returns the packets sent per ACK.
    fn sends_per_ack(prr: &mut Prr, mut pipe_pkts: f64, ssthresh_pkts: f64, acks: usize) -> Vec<f64> {
        let mut sent = vec![];
        for _ in 0..acks {
            pipe_pkts -= 1.0;
            let cwnd_pkts = prr.on_ack(1.0, pipe_pkts, ssthresh_pkts, false).unwrap_or(pipe_pkts);
            let n = (cwnd_pkts - pipe_pkts).max(0.0);
            for _ in 0..n as usize {
                prr.on_send();
            }
            pipe_pkts += n;
            sent.push(n);
        }
        sent
    }

    #[test]
    fn prr_sends_one_packet_per_two_delivered_when_ssthresh_is_half_the_window() {
        // The single-loss example of RFC 6937 section 3: cwnd 20, ssthresh 10.
        let mut prr = Prr::new(20.0);
        assert_eq!(sends_per_ack(&mut prr, 19.0, 10.0, 8), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
    }

    #[test]
    fn prr_regrows_no_faster_than_slow_start_below_ssthresh() {
        let mut prr = Prr::new(20.0);
        // Most of the window lost, and losses still being found: one per delivered.
        assert_eq!(prr.on_ack(1.0, 4.0, 10.0, false), Some(5.0));
        prr.on_send();
        // A partial ACK: one more than delivered.
        assert_eq!(prr.on_ack(1.0, 4.0, 10.0, true), Some(6.0));
        prr.on_send();
        prr.on_send();
        // Never beyond ssthresh.
        assert_eq!(prr.on_ack(5.0, 9.0, 10.0, true), Some(10.0));
    }

    #[test]
    fn an_ack_delivering_nothing_keeps_the_window_unless_it_begins_recovery() {
        let mut prr = Prr::new(20.0);
        assert_eq!(prr.on_ack(0.0, 18.0, 10.0, false), Some(19.0));
        prr.on_send();
        assert_eq!(prr.on_ack(0.0, 18.0, 10.0, false), None);
    }
}
