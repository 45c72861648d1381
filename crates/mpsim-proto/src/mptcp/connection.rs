//! The MPTCP connection (spec section 1): the subflows it owns by value,
//! the coupled congestion controller, and the sans-IO parts it ties
//! together: the path manager (`pm.rs`), the scheduler (`scheduler.rs`,
//! seeing the subflows through `paths.rs`), the data-level send side
//! (`sender.rs`) and receive side (`receiver.rs`). Handshakes (MP_CAPABLE,
//! MP_JOIN), options and timers live here; turning subflow output into
//! MPTCP segments in `send.rs`, DSS input in `recv.rs`.

use super::crypto;
use super::pm::{InterfaceAction, Keys, PathManager, Phase, SubflowAddrs};
use super::receiver::{DataReceiver, SubflowRx};
use super::scheduler::{Scheduler, Staleness};
use super::sender::DataSender;
use super::{LocalAddr, MptcpConfig, MptcpEvent};
use crate::tcp::{AppEvent, CcCtx, Subflow, TcpConfig, TcpState};
use mpsim_cc::{CcError, CongestionController, Controller, SubflowCc};
use mpsim_core::mptcp::{Dss, DssMapping, MpOption, MptcpOpts};
use mpsim_core::{Addr, Packet, SimDuration, SimRng, SimTime, TcpFlags};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MpState {
    Handshake,
    Established,
    /// Plain TCP on the initial subflow (options stripped or refused).
    Fallback,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Initial,
    Join,
}

/// A subflow and its MPTCP bookkeeping.
///
/// Laid out by hand (`repr(C)`), each `Sub` on cache lines of its own:
/// the scheduler's ranking reads every subflow when it places data, and
/// the fields it reads fill the first line with the start of `Subflow`
/// (and the scoreboard's counters the next), so that a subflow evicted
/// since the last activation costs it two misses, not one per field.
/// The rest goes by decreasing alignment, without padding.
#[repr(C, align(64))]
pub(super) struct Sub {
    /// Closed, reset or removed.
    pub gone: bool,
    /// May carry data (sender side fully established).
    pub ready: bool,
    /// Potentially failed: an RTO fired (upstream scheduler: stale after
    /// more than `stale_loss_cnt` MPTCP timer intervals) and no new data
    /// was acknowledged since.
    pub pf: bool,
    /// The third ACK of the handshake must carry MP_CAPABLE / MP_JOIN.
    pub third_ack_pending: bool,
    /// MP_JOIN initiator: the third ACK just went out.
    pub join_ack_sent: bool,
    /// Backup if either side flagged it.
    pub backup: bool,
    pub kind: Kind,
    pub sf: Subflow,
    /// MP_JOIN initiator: when the third ACK goes out again if no fourth
    /// ACK came (spec 5), and how many times it went out already.
    pub join_ack_due: Option<SimTime>,
    /// Receive mappings and what was delivered in order.
    pub rx: SubflowRx,
    pub timeouts_seen: u64,
    pub una_seen: u64,
    /// Upstream scheduler: MPTCP retransmission intervals this subflow
    /// spent with data outstanding and no progress.
    pub stale: Staleness,
    /// Connection data carried for the first time here after another subflow failed.
    pub reinjected_bytes: u64,
    /// Redundant scheduler: next DSN this subflow has not carried.
    pub redundant_next: u64,
    /// Last time this subflow's window was halved by penalisation.
    pub last_penalised: Option<SimTime>,
    /// Upstream scheduler: the subflow's `sk_sndbuf`, bytes of socket
    /// memory, grown with its window (`tcp_sndbuf_expand`).
    pub sndbuf_bytes: u64,
    /// The receiver's RTT estimate on this subflow (autotuning only).
    pub rcv_rtt: crate::buffers::RcvRtt,
    pub join_ack_backoff: u32,
    pub local_nonce: u32,
    pub remote_nonce: u32,
    pub local_id: u8,
    pub remote_id: u8,
}

impl Sub {
    fn new(sf: Subflow, kind: Kind, local_id: u8, remote_id: u8, backup: bool, nonce: u32) -> Self {
        Sub {
            sf,
            kind,
            local_id,
            remote_id,
            backup,
            local_nonce: nonce,
            remote_nonce: 0,
            ready: false,
            third_ack_pending: false,
            pf: false,
            gone: false,
            rx: SubflowRx::default(),
            timeouts_seen: 0,
            una_seen: 0,
            stale: Staleness::default(),
            reinjected_bytes: 0,
            redundant_next: 1,
            last_penalised: None,
            sndbuf_bytes: crate::buffers::TCP_WMEM_BYTES[1],
            rcv_rtt: Default::default(),
            join_ack_sent: false,
            join_ack_due: None,
            join_ack_backoff: 0,
        }
    }

    pub fn local(&self) -> Addr {
        self.sf.local
    }

    /// When it next needs `Conn::handle_timeout` (a `SimTime`'s
    /// picoseconds): its own timers and its MP_JOIN ACK's; `u64::MAX`
    /// for none, or once it is gone.
    #[inline(always)]
    fn deadline_ps(&self) -> u64 {
        let at = |t: Option<SimTime>| t.map_or(u64::MAX, |t| t.0);
        if self.gone {
            return u64::MAX;
        }
        at(self.sf.poll_timeout()).min(at(self.join_ack_due))
    }

    pub fn remote(&self) -> Addr {
        self.sf.remote
    }
}

/// A set of subflow indices whose emptiness is known without a walk: a
/// member and the count change together. The first 64 indices are the
/// bits of a word held in place, which costs no cache line of its own
/// on every activation; the others (rare) are in a vector.
#[derive(Clone, Debug, Default)]
pub(super) struct SubflowSet {
    /// Bit `r`: index `r`, below 64.
    low: u64,
    /// Index 64 + i at i.
    high: Vec<bool>,
    count: usize,
}

impl SubflowSet {
    const LOW: usize = u64::BITS as usize;

    #[inline(always)]
    pub fn insert(&mut self, r: usize) {
        let added = if r < Self::LOW {
            let was = self.low & (1 << r) != 0;
            self.low |= 1 << r;
            !was
        } else {
            let i = r - Self::LOW;
            if self.high.len() <= i {
                self.high.resize(i + 1, false);
            }
            !std::mem::replace(&mut self.high[i], true)
        };
        self.count += added as usize;
    }

    /// Takes `r` out; true if it was in.
    #[inline(always)]
    pub fn remove(&mut self, r: usize) -> bool {
        let was = if r < Self::LOW {
            let was = self.low & (1 << r) != 0;
            self.low &= !(1 << r);
            was
        } else {
            self.high.get_mut(r - Self::LOW).is_some_and(std::mem::take)
        };
        self.count -= was as usize;
        was
    }

    #[inline(always)]
    pub fn contains(&self, r: usize) -> bool {
        if r < Self::LOW {
            self.low & (1 << r) != 0
        } else {
            self.high.get(r - Self::LOW).copied().unwrap_or(false)
        }
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// A subflow's addresses and ports, as a segment for it carries them
/// (destination first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ends {
    local: Addr,
    remote: Addr,
    local_port: u16,
    remote_port: u16,
}

impl Ends {
    fn of_subflow(sf: &Subflow) -> Self {
        Ends { local: sf.local, remote: sf.remote, local_port: sf.local_port, remote_port: sf.remote_port }
    }

    fn of_segment(pkt: &Packet) -> Self {
        Ends { local: pkt.dst, remote: pkt.src, local_port: pkt.dport, remote_port: pkt.sport }
    }
}

/// Connection counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct MptcpStats {
    pub reinjected_bytes: u64,
    pub meta_timeouts: u64,
    /// Windows halved by penalisation.
    pub penalisations: u64,
}

/// What the engine reports per subflow.
#[derive(Clone, Copy)]
pub struct SubflowInfo<'a> {
    pub sf: &'a Subflow,
    pub cc: &'a SubflowCc,
    pub backup: bool,
    pub gone: bool,
    pub reinjected_bytes: u64,
    /// Connection data received in order on this subflow.
    pub rx_bytes: u64,
}

/// An MPTCP endpoint. Its state is a [`Conn`], read through `Deref`;
/// every input reaches it through `woken`, which records that something
/// happened, so that `drain_transmit` looks for something to send again.
/// Only `drain_transmit` skips that look, when nothing happened since it
/// last found nothing: no input can forget to wake it.
#[repr(C)]
pub struct MptcpConnection {
    /// Nothing happened since the last fill found nothing more to send.
    /// First, on the cache line of the connection's own hot fields.
    quiet: bool,
    pub(super) conn: Conn,
}

impl std::ops::Deref for MptcpConnection {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl MptcpConnection {
    fn new(conn: Conn) -> Self {
        MptcpConnection { quiet: false, conn }
    }

    /// The state, for an input: the next `drain_transmit` fills.
    #[inline(always)]
    fn woken(&mut self) -> &mut Conn {
        self.quiet = false;
        &mut self.conn
    }

    /// Active open from the first local address to `remote`.
    pub fn connect(cfg: MptcpConfig, remote: (Addr, u16)) -> Result<Self, CcError> {
        Conn::connect(cfg, remote).map(Self::new)
    }

    /// Passive open from a SYN; without MP_CAPABLE the connection is plain TCP.
    pub fn accept(cfg: MptcpConfig, syn: &Packet) -> Result<Self, CcError> {
        Conn::accept(cfg, syn).map(Self::new)
    }

    /// Draws another key (see [`Conn::regenerate_key`]).
    pub fn regenerate_key(&mut self) {
        self.woken().regenerate_key();
    }

    /// Plain TCP from the start: no token of the host was free.
    pub fn refuse_mptcp(&mut self) {
        self.woken().refuse_mptcp();
    }

    pub fn send(&mut self, bytes: u64) {
        self.woken().send(bytes);
    }
    pub fn send_unlimited(&mut self) {
        self.woken().send_unlimited();
    }
    pub fn pause(&mut self) {
        self.woken().pause();
    }
    pub fn close(&mut self) {
        self.woken().close();
    }
    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.conn.poll_event()
    }
    pub fn poll_mptcp_event(&mut self) -> Option<MptcpEvent> {
        self.conn.poll_mptcp_event()
    }

    pub fn handle_timeout(&mut self, now: SimTime) {
        self.woken().handle_timeout(now);
    }

    /// A segment for this connection (any of its 4-tuples). Returns false if
    /// no subflow matches and it is not an MP_JOIN this connection accepts.
    #[inline(always)]
    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        self.woken().handle_segment(now, pkt)
    }

    /// The interface with address `addr` becomes a backup one or a regular one.
    pub fn set_local_addr_backup(&mut self, addr: Addr, backup: bool) {
        self.woken().set_local_addr_backup(addr, backup);
    }

    /// The host's interface with address `addr` went down or came up.
    pub fn set_local_addr_up(&mut self, now: SimTime, addr: Addr, up: bool) {
        self.woken().set_local_addr_up(now, addr, up);
    }

    /// The next packet to send (one at a time; the engine uses `drain_transmit`).
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Packet> {
        if self.conn.polled.is_empty() {
            let mut batch = Vec::new();
            self.drain_transmit(now, &mut batch);
            self.conn.polled = batch.into();
        }
        self.conn.polled.pop_front()
    }

    /// Everything there is to send, appended to `sink` in order, built in
    /// `sink` itself (the engine's hot path).
    #[inline(always)]
    pub fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>) {
        let fill = !std::mem::replace(&mut self.quiet, true);
        self.conn.drain_transmit(now, sink, fill);
    }
}

/// The state of an MPTCP connection: the parts (path manager, scheduler,
/// data-level send and receive sides) and the subflows, and what ties
/// them (handshakes, options, timers).
///
/// Laid out by hand (`repr(C)`): the small fields read on every
/// activation come first, together on a few cache lines, then the parts,
/// then what handshakes, rare events and reports read.
#[repr(C)]
pub struct Conn {
    pub(super) state: MpState,
    pub(super) is_client: bool,
    pub(super) subflows_closed: bool,
    pub(super) connected_reported: bool,
    /// A DSS arrived from the peer: it holds our key, so MP_JOINs will find
    /// the connection ("fully established", RFC 8684 3.1).
    pub(super) peer_confirmed: bool,
    /// DSS checksums are in use: this end or the peer asked for them in
    /// its MP_CAPABLE (flag A).
    pub(super) checksums: bool,
    /// Subflow of the last segment received (most segments follow it).
    pub(super) last_rx_sub: usize,
    pub(super) subs: Vec<Sub>,
    pub(super) cc: Vec<SubflowCc>,
    /// `Sub::deadline_ps` of every subflow, kept by `sync_deadline` wherever
    /// one moves: the engine asks `poll_timeout` after every activation,
    /// and this array is a cache line or two where the subflows are one each.
    pub(super) deadlines_ps: Vec<u64>,
    /// `Ends` of every subflow (they never change), which `subflow_of`
    /// searches for every segment: an array of a cache line or two, where
    /// the subflows hold them a line apart.
    pub(super) ends: Vec<Ends>,
    /// The connection-level window every subflow was last told to
    /// advertise; None while a subflow was added since.
    pub(super) advertised_wnd_bytes: Option<u64>,
    /// Subflows that saw something (a segment, a timeout, a wake-up)
    /// since `fill` last asked them what to send: only these may have
    /// something new of their own, and `fill` reads no other.
    pub(super) dirty: SubflowSet,
    /// Subflows the scheduler queued data on this round.
    pub(super) queued: SubflowSet,
    /// Subflows whose priority changed: an MP_PRIO with their `backup`
    /// is to be sent on each.
    pub(super) prio_pending: SubflowSet,
    /// Packets to send, in order (during `drain_transmit`, the engine's buffer).
    pub(super) out: Vec<Packet>,
    /// Reused buffer of the scheduler's ranking.
    pub(super) ranked: Vec<(u64, usize, u64)>,
    pub(super) events: VecDeque<AppEvent>,
    /// The data-level send side.
    pub(super) tx: DataSender,
    /// The data-level receive side.
    pub(super) rx: DataReceiver,
    pub(super) sched: Scheduler,
    pub(super) pm: PathManager,
    pub(super) ctrl: Controller,
    pub(super) cfg: MptcpConfig,
    /// Packets made for `poll_transmit` and not yet taken, in order.
    pub(super) polled: VecDeque<Packet>,
    pub(super) mevents: VecDeque<MptcpEvent>,
    /// Reused buffer of DSN ranges moved from a subflow to the connection.
    pub(super) scratch_ranges: Vec<(u64, u64)>,
    pub(super) rng: SimRng,
    pub(super) local_key: u64,
    pub(super) remote_key: u64,
    pub(super) local_idsn: u64,
    pub(super) remote_idsn: u64,
    /// Upstream: the MPTCP timer's interval as the scheduler last set it
    /// (`msk->timer_ival`).
    pub(super) upstream_timer_ival: SimDuration,
    pub stats: MptcpStats,
    pub(super) local_token: u32,
    pub(super) remote_token: u32,
}

impl Conn {
    fn base(mut cfg: MptcpConfig, is_client: bool) -> Result<Self, CcError> {
        let mut ctrl = Controller::new(&cfg.cc, cfg.tcp.cc_mode)?;
        ctrl.on_subflow_added(0);
        let mut rng = SimRng::new(cfg.seed, 0x6d70_7463);
        let local_key = rng.next_u64();
        let (local_token, local_idsn) = crypto::token_idsn_v1(local_key);
        let sched = Scheduler::new(cfg.scheduler);
        let pm = PathManager::new(&mut cfg, is_client);
        let rcvbuf = cfg.tcp.starting().rcvbuf_bytes;
        let tx = DataSender::new(rcvbuf, cfg.sndbuf_bytes);
        let rcv_space = cfg.tcp.rcvbuf_auto.then(|| crate::buffers::RcvSpace::new(SimTime::ZERO, cfg.tcp.mss_bytes as u64));
        Ok(Conn {
            cfg,
            is_client,
            state: MpState::Handshake,
            subs: Vec::new(),
            cc: Vec::new(),
            ctrl,
            rng,
            local_key,
            remote_key: 0,
            local_token,
            remote_token: 0,
            local_idsn,
            remote_idsn: 0,
            tx,
            rx: DataReceiver::new(rcvbuf, rcv_space),
            subflows_closed: false,
            pm,
            dirty: SubflowSet::default(),
            deadlines_ps: Vec::new(),
            ends: Vec::new(),
            queued: SubflowSet::default(),
            prio_pending: SubflowSet::default(),
            last_rx_sub: 0,
            sched,
            out: Vec::new(),
            polled: VecDeque::new(),
            events: VecDeque::new(),
            mevents: VecDeque::new(),
            connected_reported: false,
            peer_confirmed: false,
            checksums: false,
            scratch_ranges: Vec::new(),
            ranked: Vec::new(),
            advertised_wnd_bytes: None,
            upstream_timer_ival: super::paths::UPSTREAM_TIMER_MIN,
            stats: MptcpStats::default(),
        })
    }

    /// Subflows carry no buffer of their own: the connection's is shared.
    /// An autotuned one may grow to `tcp_rmem[2]`, and the subflows'
    /// follow it (`mptcp_rcv_space_adjust`).
    fn subflow_tcp(cfg: &TcpConfig) -> TcpConfig {
        let rcvbuf = if cfg.rcvbuf_auto { crate::buffers::TCP_RMEM_BYTES[2] } else { cfg.rcvbuf_bytes };
        TcpConfig { rcvbuf_bytes: rcvbuf.saturating_mul(4), rcvbuf_auto: false, ..*cfg }
    }

    /// Room for a DSS with a 64-bit DATA_ACK and mapping (and its checksum
    /// if we ask for one) in every data segment, so that a mapping covers
    /// what fits in the MTU beside it. Linux `tcp_current_mss` reserves
    /// the same: `mptcp_established_options` without a segment counts a
    /// full DSS (net/mptcp/options.c, `mptcp_established_options_dss`),
    /// 28 bytes either way once padded.
    fn sized(mut cfg: MptcpConfig) -> MptcpConfig {
        let mapping = Some(DssMapping { dsn: 0, ssn: 0, len: 0 });
        let checksum = cfg.dss_checksum.then_some(0);
        let dss = Dss { data_ack: Some(0), ack64: true, dsn64: true, mapping, checksum, ..Default::default() };
        cfg.tcp.data_option_bytes = MptcpOpts { dss: Some(dss), option: MpOption::None }.len_bytes();
        cfg.tcp = cfg.tcp.fitted();
        cfg
    }

    /// Active open from the first local address to `remote`.
    pub(super) fn connect(cfg: MptcpConfig, remote: (Addr, u16)) -> Result<Self, CcError> {
        let cfg = Self::sized(cfg);
        let local = cfg.local_addrs.first().map_or(Addr(0), |a| a.addr);
        let tcp = Self::subflow_tcp(&cfg.tcp);
        let port = cfg.port_base;
        let mut c = Self::base(cfg, true)?;
        c.pm.set_peer(remote.0, remote.1);
        let sf = Subflow::connect(tcp, (local, port), remote);
        c.push_sub(Sub::new(sf, Kind::Initial, 0, 0, false, 0));
        c.mevents.push_back(MptcpEvent::Token(c.local_token));
        Ok(c)
    }

    /// Passive open from a SYN; without MP_CAPABLE the connection is plain TCP.
    pub(super) fn accept(cfg: MptcpConfig, syn: &Packet) -> Result<Self, CcError> {
        let mut c = Self::base(Self::sized(cfg), false)?;
        c.pm.set_peer(syn.src, syn.sport);
        match syn.ext.mptcp().map(|m| m.option) {
            Some(MpOption::CapableSyn { checksum, .. }) => c.checksums = c.cfg.dss_checksum || checksum,
            _ => c.fall_back(),
        }
        // After the fallback decision: a plain TCP subflow has no DSS to make room for.
        let sf = Subflow::accept(Self::subflow_tcp(&c.cfg.tcp), syn);
        let id = c.local_id_of(syn.dst);
        c.push_sub(Sub::new(sf, Kind::Initial, id, 0, false, 0));
        c.mevents.push_back(MptcpEvent::Token(c.local_token));
        Ok(c)
    }

    fn push_sub(&mut self, sub: Sub) -> usize {
        let r = self.subs.len();
        let (iw, mss) = (self.cfg.tcp.initial_cwnd_pkts as f64, self.cfg.tcp.mss_bytes);
        self.cc.push(SubflowCc::new(iw, mss));
        if r > 0 {
            self.ctrl.on_subflow_added(r);
        }
        self.ends.push(Ends::of_subflow(&sub.sf));
        self.subs.push(sub);
        self.deadlines_ps.push(u64::MAX);
        self.sync_deadline(r);
        // A new subflow has its handshake to send.
        self.dirty.insert(r);
        self.advertised_wnd_bytes = None;
        r
    }

    pub(super) fn local_id_of(&self, addr: Addr) -> u8 {
        self.pm.local_id_of(addr)
    }

    pub(super) fn fall_back(&mut self) {
        if self.state != MpState::Fallback {
            self.state = MpState::Fallback;
            self.mevents.push_back(MptcpEvent::Fallback);
            // Plain TCP segments carry no DSS: they take the whole MTU again.
            self.cfg.tcp.data_option_bytes = 0;
            self.cfg.tcp = self.cfg.tcp.fitted();
            for s in &mut self.subs {
                s.sf.set_data_option_bytes(0);
            }
        }
    }

    /// Connection-level state in one line, for debugging.
    pub fn debug_line(&self) -> String {
        format!(
            "{:?} confirmed={} data_una={} data_nxt={} app_end={} fin_sent={} fin_acked={} rcv_nxt={} peer_fin={:?} reinject={:?} meta_rto={:?}",
            self.state,
            self.peer_confirmed,
            self.tx.una(),
            self.tx.nxt(),
            self.tx.app_end(),
            self.tx.fin_sent(),
            self.tx.fin_acked(),
            self.rx.rcv_nxt(),
            self.rx.peer_fin(),
            self.tx.reinject_queue(),
            self.tx.timer().map(|t| t.as_secs_f64())
        )
    }

    pub fn is_fallback(&self) -> bool {
        self.state == MpState::Fallback
    }

    pub fn local_token(&self) -> u32 {
        self.local_token
    }

    /// Draws another key, as Linux does when the token of the one drawn is
    /// taken on the host (`mptcp_token_new_connect`,
    /// `mptcp_token_new_request`, net/mptcp/token.c). Only before the
    /// connection sent anything: the key goes out in its handshake.
    pub(super) fn regenerate_key(&mut self) {
        self.local_key = self.rng.next_u64();
        (self.local_token, self.local_idsn) = crypto::token_idsn_v1(self.local_key);
        let token = self.local_token;
        self.mevents.iter_mut().for_each(|e| {
            if let MptcpEvent::Token(t) = e {
                *t = token;
            }
        });
    }

    /// Plain TCP from the start: no token of the host was free (Linux
    /// falls back when `mptcp_token_new_*` keeps failing).
    pub(super) fn refuse_mptcp(&mut self) {
        self.fall_back();
    }

    // ----- application side -----

    pub(super) fn send(&mut self, bytes: u64) {
        self.tx.write(bytes);
    }
    pub(super) fn send_unlimited(&mut self) {
        self.tx.write_unlimited();
    }
    pub(super) fn pause(&mut self) {
        self.tx.pause();
    }
    pub(super) fn close(&mut self) {
        self.tx.close();
    }
    pub(super) fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }
    pub(super) fn poll_mptcp_event(&mut self) -> Option<MptcpEvent> {
        self.mevents.pop_front()
    }

    /// Per-subflow views, in subflow order.
    pub fn subflows(&self) -> impl Iterator<Item = SubflowInfo<'_>> {
        self.subs.iter().zip(&self.cc).map(|(s, cc)| SubflowInfo {
            sf: &s.sf,
            cc,
            backup: s.backup,
            gone: s.gone,
            reinjected_bytes: s.reinjected_bytes,
            rx_bytes: s.rx.delivered_bytes(),
        })
    }

    /// Bytes held in the connection's receive buffer (out of order).
    pub fn rcv_buffer_bytes(&self) -> u64 {
        self.rx.ooo_bytes()
    }

    pub fn cc_name(&self) -> &'static str {
        self.ctrl.name()
    }

    // ----- timers -----

    #[inline(always)]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        if cfg!(any(test, debug_assertions)) {
            let fresh: Vec<u64> = self.subs.iter().map(Sub::deadline_ps).collect();
            assert_eq!(self.deadlines_ps, fresh, "a subflow's deadline moved without `sync_deadline`");
        }
        // A plain loop over plain integers: the engine asks after every segment.
        let at = |t: Option<SimTime>| t.map_or(u64::MAX, |t| t.0);
        let mut next = at(self.tx.timer());
        next = next.min(at(self.pm.poll_timeout()));
        next = self.deadlines_ps.iter().fold(next, |next, &t| next.min(t));
        (next != u64::MAX).then_some(SimTime(next))
    }

    /// After subflow `r`'s timers, its MP_JOIN ACK timer or its `gone`
    /// may have changed.
    #[inline(always)]
    pub(super) fn sync_deadline(&mut self, r: usize) {
        self.deadlines_ps[r] = self.subs[r].deadline_ps();
    }

    pub(super) fn handle_timeout(&mut self, now: SimTime) {
        for r in 0..self.subs.len() {
            // `deadlines_ps` first: it reads no subflow whose timers are all later.
            if self.deadlines_ps[r] > now.0 || self.subs[r].gone || self.subs[r].sf.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let mut cx = CcCtx { subs: &mut self.cc, r, ctrl: &mut self.ctrl };
            self.subs[r].sf.handle_timeout(now, &mut cx);
            self.sync_deadline(r);
            self.dirty.insert(r);
            self.after_subflow_activity(now, r);
        }
        if self.tx.timer().is_some_and(|t| t <= now) {
            self.on_meta_timeout(now);
        }
        self.pm.handle_timeout(now);
        self.on_join_ack_timeout(now);
    }

    /// The fourth ACK of an MP_JOIN did not come: the third goes out again (spec 5).
    fn on_join_ack_timeout(&mut self, now: SimTime) {
        for r in 0..self.subs.len() {
            // A due MP_JOIN ACK timer makes the deadline due too.
            if self.deadlines_ps[r] > now.0 || self.subs[r].join_ack_due.is_none_or(|t| t > now) {
                continue;
            }
            let s = &mut self.subs[r];
            s.join_ack_due = None;
            if !s.ready && !s.gone {
                s.third_ack_pending = true;
                self.dirty.insert(r);
            }
            self.sync_deadline(r);
        }
    }

    /// Meta-level retransmission (spec section 8): no DATA_ACK progress for
    /// twice the largest subflow RTO: the oldest segment goes out again.
    fn on_meta_timeout(&mut self, now: SimTime) {
        self.stats.meta_timeouts += 1;
        if self.cfg.scheduler == super::SchedulerKind::Upstream {
            self.tx.stop_timer();
            self.upstream_retransmit();
            self.tx.on_upstream_timeout();
        } else {
            self.tx.on_timeout();
        }
        self.arm_meta_timer(now);
    }

    #[inline(always)]
    pub(super) fn arm_meta_timer(&mut self, now: SimTime) {
        if !self.tx.retransmission_pending() || self.state == MpState::Fallback {
            self.tx.stop_timer();
            return;
        }
        if self.tx.timer().is_some() {
            return;
        }
        let interval = if self.cfg.scheduler == super::SchedulerKind::Upstream {
            // `mptcp_reset_rtx_timer`: the interval the scheduler last set.
            self.upstream_timer_ival
        } else {
            let rto = self.subs.iter().filter(|s| !s.gone).map(|s| s.sf.rtt.rto()).max().unwrap_or(SimDuration::from_secs(1));
            self.tx.backed_off(rto)
        };
        self.tx.arm_timer(now + interval);
    }

    // ----- incoming segments -----

    /// A segment for this connection (any of its 4-tuples). Returns false if
    /// no subflow matches and it is not an MP_JOIN this connection accepts.
    pub(super) fn handle_segment(&mut self, now: SimTime, pkt: &Packet) -> bool {
        let Some(r) = self.subflow_of(pkt) else {
            return self.accept_join(now, pkt);
        };
        if self.subs[r].gone {
            return true;
        }
        let opts = pkt.ext.mptcp();
        // Past the handshake of this subflow no arm of `before_subflow` applies.
        let handshake_over = self.subs[r].ready && self.state != MpState::Handshake && !pkt.flags.has(TcpFlags::SYN);
        if !handshake_over && !self.before_subflow(now, r, pkt, opts) {
            return true;
        }
        let sub = &mut self.subs[r];
        if self.rx.autotuned() {
            sub.rcv_rtt.on_segment(now, pkt.ts, pkt.payload_bytes, self.cfg.tcp.mss_bytes);
        }
        let mut cx = CcCtx { subs: &mut self.cc, r, ctrl: &mut self.ctrl };
        sub.sf.handle_segment(now, pkt, &mut cx);
        self.sync_deadline(r);
        self.dirty.insert(r);
        if let Some(m) = opts {
            self.after_options(now, r, pkt, m);
        } else if self.state == MpState::Fallback {
            self.on_fallback_ack(now, pkt);
        }
        self.after_subflow_activity(now, r);
        true
    }

    #[inline(always)]
    fn subflow_of(&mut self, pkt: &Packet) -> Option<usize> {
        if cfg!(any(test, debug_assertions)) {
            assert!(self.subs.iter().map(|s| Ends::of_subflow(&s.sf)).eq(self.ends.iter().copied()), "a subflow's ends moved");
        }
        let ends = Ends::of_segment(pkt);
        if self.ends.get(self.last_rx_sub) == Some(&ends) {
            return Some(self.last_rx_sub);
        }
        let r = self.ends.iter().position(|&e| e == ends)?;
        self.last_rx_sub = r;
        Some(r)
    }

    /// Handshake options, checked before the subflow sees the segment.
    /// Returns false if the segment must be dropped.
    fn before_subflow(&mut self, now: SimTime, r: usize, pkt: &Packet, opts: Option<&MptcpOpts>) -> bool {
        let syn_ack = pkt.flags.has(TcpFlags::SYN) && pkt.flags.has(TcpFlags::ACK);
        let option = opts.map_or(MpOption::None, |m| m.option);
        match (self.subs[r].kind, self.is_client) {
            (Kind::Initial, true) if syn_ack && self.subs[r].sf.state == TcpState::SynSent => {
                match option {
                    MpOption::CapableSynAck { key, checksum, .. } => {
                        self.checksums = self.cfg.dss_checksum || checksum;
                        self.learn_remote_key(key);
                    }
                    _ => self.fall_back(),
                }
                if self.state != MpState::Fallback {
                    self.subs[r].third_ack_pending = true;
                    self.subs[r].ready = true;
                }
            }
            (Kind::Join, true) if syn_ack && self.subs[r].sf.state == TcpState::SynSent => {
                let MpOption::JoinSynAck { hmac64, nonce, backup, addr_id } = option else {
                    self.reset_subflow(now, r);
                    return false;
                };
                let expected = crypto::join_synack_hmac64(self.remote_key, self.local_key, nonce, self.subs[r].local_nonce);
                if expected != hmac64 {
                    self.reset_subflow(now, r);
                    return false;
                }
                let s = &mut self.subs[r];
                s.remote_nonce = nonce;
                s.remote_id = addr_id;
                s.backup |= backup;
                s.third_ack_pending = true;
            }
            (Kind::Initial, false)
                if self.state == MpState::Handshake && pkt.flags.has(TcpFlags::ACK) && !pkt.flags.has(TcpFlags::SYN) =>
            {
                match option {
                    MpOption::CapableAck { sender_key, .. } | MpOption::CapableData { sender_key, .. } => {
                        self.learn_remote_key(sender_key);
                        self.subs[r].ready = true;
                        self.announce_local_addrs();
                    }
                    // Options present but no keys yet (reordered): wait for them.
                    _ if opts.is_some() => {}
                    _ => self.fall_back(),
                }
            }
            (Kind::Join, false) if !self.subs[r].ready && pkt.flags.has(TcpFlags::ACK) && !pkt.flags.has(TcpFlags::SYN) => {
                let MpOption::JoinAck { hmac } = option else {
                    self.reset_subflow(now, r);
                    return false;
                };
                let expected = crypto::join_ack_hmac160(
                    self.remote_key,
                    self.local_key,
                    self.subs[r].remote_nonce,
                    self.subs[r].local_nonce,
                );
                if expected != hmac {
                    self.reset_subflow(now, r);
                    return false;
                }
                self.subs[r].ready = true;
                // The fourth ACK tells the client it may send.
                self.subs[r].third_ack_pending = true;
            }
            // The responder sent its SYN/ACK again: it has not seen our
            // third ACK, which goes out again with the answer.
            (Kind::Join, true) if !self.subs[r].ready && self.subs[r].sf.state.is_synchronised() && syn_ack => {
                self.subs[r].third_ack_pending = true;
            }
            (Kind::Join, true) if !self.subs[r].ready && self.subs[r].sf.state.is_synchronised() && !syn_ack => {
                self.subs[r].ready = true; // fourth ACK
                self.subs[r].join_ack_due = None;
                self.sync_deadline(r);
            }
            _ => {}
        }
        true
    }

    fn learn_remote_key(&mut self, key: u64) {
        self.remote_key = key;
        let (token, idsn) = crypto::token_idsn_v1(key);
        self.remote_token = token;
        self.remote_idsn = idsn;
        self.state = MpState::Established;
    }

    /// Options that act after the subflow processed the segment.
    #[inline(always)]
    fn after_options(&mut self, now: SimTime, r: usize, pkt: &Packet, m: &MptcpOpts) {
        if let MpOption::CapableData { data_len, .. } = m.option {
            // Implied mapping of the initial subflow's first data (RFC 8684 3.1).
            if pkt.payload_bytes > 0 && self.subs[r].kind == Kind::Initial {
                let len = (data_len as u32).min(pkt.payload_bytes);
                self.subs[r].rx.insert_map(pkt.seq, pkt.seq, len);
            }
        }
        // A DATA_ACK proves the peer has our key (it derives our IDSN).
        if m.dss.as_ref().is_some_and(|d| d.data_ack.is_some()) && !self.peer_confirmed && self.state == MpState::Established {
            self.peer_confirmed = true;
            self.announce_local_addrs();
            self.run_path_manager(now);
        }
        if let Some(dss) = &m.dss {
            if let Some(ack) = dss.data_ack {
                self.on_data_ack(now, ack, dss.ack64, pkt.wnd_bytes);
            }
            if let Some(map) = dss.mapping {
                self.on_mapping(r, pkt, map, dss.data_fin);
            }
        }
        match m.option {
            MpOption::AddAddr { addr_id, addr, port, hmac64, echo: false } => {
                self.on_add_addr(now, addr_id, Addr(addr), port, hmac64)
            }
            MpOption::AddAddr { addr_id, addr, echo: true, .. } => self.pm.on_echo(addr_id, addr),
            MpOption::RemoveAddr { ids, n } => {
                for &id in &ids[..n as usize] {
                    self.on_remove_addr(now, id);
                }
            }
            MpOption::MpPrio { backup } => self.subs[r].backup = backup,
            // The initiator sent its third ACK again: our fourth was lost.
            MpOption::JoinAck { .. } if !self.is_client && self.subs[r].ready => self.subs[r].third_ack_pending = true,
            _ => {}
        }
    }

    fn on_add_addr(&mut self, now: SimTime, id: u8, addr: Addr, port: Option<u16>, hmac: Option<u64>) {
        if self.pm.on_add_addr(self.keys(), id, addr, port, hmac) {
            self.run_path_manager(now);
        }
    }

    fn on_remove_addr(&mut self, now: SimTime, id: u8) {
        self.pm.on_remove_addr(id);
        for r in 0..self.subs.len() {
            if !self.subs[r].gone && self.subs[r].remote_id == id {
                self.reset_subflow(now, r);
            }
        }
    }

    /// Handles whatever the subflow reported, RTOs and ACK progress.
    #[inline(always)]
    pub(super) fn after_subflow_activity(&mut self, now: SimTime, r: usize) {
        while let Some(ev) = self.subs[r].sf.poll_event() {
            self.on_subflow_event(now, r, ev);
        }
        let sub = &mut self.subs[r];
        // Coupling counts only fully established subflows (spec 1.7).
        self.cc[r].established = sub.ready && !sub.gone;
        let una = sub.sf.snd_una();
        if una > sub.una_seen {
            sub.una_seen = una;
            sub.pf = false;
            if self.cfg.scheduler == super::SchedulerKind::Upstream {
                self.expand_sndbuf(r);
            }
        }
        let sub = &mut self.subs[r];
        if sub.sf.stats.timeouts > sub.timeouts_seen {
            sub.timeouts_seen = sub.sf.stats.timeouts;
            // Upstream Linux leaves a timed-out subflow's data where it is:
            // only the MPTCP retransmission timer moves data (`mptcp_retransmit_timer`).
            let upstream = self.cfg.scheduler == super::SchedulerKind::Upstream;
            if self.state != MpState::Fallback && sub.ready && !upstream {
                sub.pf = true;
                self.reinject_from(r);
            }
        }
    }

    #[inline(always)]
    fn on_subflow_event(&mut self, now: SimTime, r: usize, ev: AppEvent) {
        match ev {
            AppEvent::Connected => self.on_subflow_connected(now, r),
            AppEvent::Delivered { bytes } => self.on_subflow_data(now, r, bytes),
            AppEvent::PeerClosed => {
                if self.state == MpState::Fallback {
                    self.on_peer_data_fin_reached();
                }
            }
            AppEvent::SendComplete => {
                if self.state == MpState::Fallback {
                    self.tx.on_fallback_fin_acked();
                    self.events.push_back(AppEvent::SendComplete);
                }
            }
            AppEvent::Failed => {
                let initial_handshake = self.subs[r].kind == Kind::Initial && !self.connected_reported;
                self.subflow_gone(r);
                if initial_handshake {
                    self.events.push_back(AppEvent::Failed);
                }
            }
        }
    }

    fn on_subflow_connected(&mut self, now: SimTime, r: usize) {
        self.init_sndbuf(r);
        let kind = self.subs[r].kind;
        if self.state == MpState::Fallback && kind == Kind::Initial {
            self.subs[r].ready = true;
        }
        self.cc[r].established = kind == Kind::Initial || self.subs[r].ready || self.is_client;
        if kind == Kind::Initial && !self.is_client {
            // The server may send before the client's key arrives: its DSS
            // then carries mappings without a DATA_ACK (RFC 8684 3.1).
            self.subs[r].ready = true;
        }
        if kind == Kind::Initial && !self.connected_reported {
            self.connected_reported = true;
            self.events.push_back(AppEvent::Connected);
            self.run_path_manager(now);
        }
        if kind == Kind::Join {
            self.subs[r].ready |= !self.is_client;
        }
    }

    /// Closes subflow `r` abortively (RST) and reinjects what it carried.
    pub(super) fn reset_subflow(&mut self, now: SimTime, r: usize) {
        if self.subs[r].gone {
            return;
        }
        let rst = self.subs[r].sf.abort(now);
        self.emit(rst);
        self.subflow_gone(r);
    }

    pub(super) fn subflow_gone(&mut self, r: usize) {
        if self.subs[r].gone {
            return;
        }
        self.subs[r].gone = true;
        self.subs[r].ready = false;
        self.subs[r].join_ack_due = None;
        self.sync_deadline(r);
        self.cc[r].established = false;
        self.cc[r].can_send = false;
        self.ctrl.on_subflow_removed(&self.cc, r);
        self.reinject_from(r);
        self.sync_msk_sndbuf();
    }

    /// Queues for another subflow the data still outstanding on subflow
    /// `r` (not acknowledged at subflow level) and not yet DATA_ACKed:
    /// the subflow's segments carry their DSNs as tags.
    pub(super) fn reinject_from(&mut self, r: usize) {
        self.tx.reinject_outstanding(r, self.subs[r].sf.unacked_tagged());
    }

    // ----- address management -----

    fn keys(&self) -> Keys {
        Keys { local: self.local_key, remote: self.remote_key }
    }

    /// The subflows as the path manager sees them, in order.
    fn subflow_addrs(&self) -> Vec<SubflowAddrs> {
        let view = |s: &Sub| SubflowAddrs {
            local: s.local(),
            remote: s.remote(),
            join: s.kind == Kind::Join,
            open: !s.gone,
            ready: s.ready,
        };
        self.subs.iter().map(view).collect()
    }

    /// ADD_ADDR for the addresses the path manager announces, once.
    fn announce_local_addrs(&mut self) {
        let initial = self.subs.first().map(|s| s.local());
        self.pm.announce_local_addrs(initial, self.keys());
    }

    /// Both DATA_FINs are acknowledged: the connection is over, only its
    /// subflows' closing remains.
    pub(super) fn finished(&self) -> bool {
        self.tx.fin_acked() && self.rx.peer_closed()
    }

    /// Both DATA_FINs are acknowledged.
    pub fn is_finished(&self) -> bool {
        self.finished()
    }

    /// Opens the subflows the path manager wants (client side).
    pub(super) fn run_path_manager(&mut self, now: SimTime) {
        // Linux creates subflows only on a fully established connection
        // (`__mptcp_subflow_connect`, net/mptcp/subflow.c); a finished one
        // never again.
        if !self.is_client || self.state != MpState::Established || !self.peer_confirmed || self.finished() {
            return;
        }
        for (l, rid, ra) in self.pm.subflows_to_open(&self.subflow_addrs()) {
            self.open_join(now, l, rid, ra);
        }
    }

    fn open_join(&mut self, _now: SimTime, l: LocalAddr, remote_id: u8, remote: Addr) {
        let port = self.pm.take_port();
        let remote_port = self.pm.remote_port();
        let tcp = Self::subflow_tcp(&self.cfg.tcp);
        let sf = Subflow::connect(tcp, (l.addr, port), (remote, remote_port));
        let nonce = self.rng.next_u32();
        self.push_sub(Sub::new(sf, Kind::Join, l.id, remote_id, l.backup, nonce));
        self.mevents.push_back(MptcpEvent::SubflowOpened { local: l.addr, local_port: port, remote, remote_port });
    }

    /// A SYN with MP_JOIN on a new 4-tuple (server side).
    fn accept_join(&mut self, now: SimTime, syn: &Packet) -> bool {
        let Some(MpOption::JoinSyn { token, nonce, addr_id, backup }) = syn.ext.mptcp().map(|m| m.option) else {
            return false;
        };
        // Linux accepts joins only on a fully established connection
        // (`mptcp_can_accept_new_subflow`, net/mptcp/subflow.c).
        if token != self.local_token || self.state != MpState::Established || !syn.flags.has(TcpFlags::SYN) || self.finished() {
            return false;
        }
        if !self.pm.accepts_join(&self.subflow_addrs()) {
            return false;
        }
        let tcp = Self::subflow_tcp(&self.cfg.tcp);
        let sf = Subflow::accept(tcp, syn);
        let local_backup = self.pm.is_backup(syn.dst);
        let my_nonce = self.rng.next_u32();
        let id = self.local_id_of(syn.dst);
        let r = self.push_sub(Sub::new(sf, Kind::Join, id, addr_id, backup || local_backup, my_nonce));
        self.subs[r].remote_nonce = nonce;
        self.mevents.push_back(MptcpEvent::SubflowOpened {
            local: syn.dst,
            local_port: syn.dport,
            remote: syn.src,
            remote_port: syn.sport,
        });
        let _ = now;
        true
    }

    /// The interface with address `addr` becomes a backup one (or a
    /// regular one again): its subflows change priority and tell the peer
    /// with MP_PRIO (spec 3.6, 9), as Linux does on
    /// `ip link set dev X multipath backup`.
    pub(super) fn set_local_addr_backup(&mut self, addr: Addr, backup: bool) {
        self.pm.set_backup(addr, backup);
        for (r, s) in self.subs.iter_mut().enumerate().filter(|(_, s)| !s.gone && s.local() == addr && s.backup != backup) {
            s.backup = backup;
            self.prio_pending.insert(r);
        }
    }

    /// The host's interface with address `addr` went down or came up.
    pub(super) fn set_local_addr_up(&mut self, now: SimTime, addr: Addr, up: bool) {
        (0..self.subs.len()).for_each(|r| self.dirty.insert(r));
        let phase = Phase { established: self.state == MpState::Established, finished: self.finished() };
        match self.pm.set_local_addr_up(addr, up, &self.subflow_addrs(), phase, self.keys()) {
            InterfaceAction::Nothing => {}
            InterfaceAction::OpenSubflows => self.run_path_manager(now),
            InterfaceAction::ResetSubflowsFrom(from) => {
                for r in 0..self.subs.len() {
                    if !self.subs[r].gone && self.subs[r].local() == from {
                        self.reset_subflow(now, r);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Sub, SubflowSet};
    use std::mem::{align_of, offset_of};

    /// Each `Sub` starts a cache line, which holds its flags and the
    /// start of its subflow (see `Subflow`).
    #[test]
    fn a_sub_leads_with_what_the_scheduler_reads() {
        assert_eq!(align_of::<Sub>(), 64);
        assert_eq!(offset_of!(Sub, sf), 8);
        assert!([offset_of!(Sub, gone), offset_of!(Sub, ready), offset_of!(Sub, pf), offset_of!(Sub, backup)]
            .iter()
            .all(|&o| o < 8));
    }

    #[test]
    fn a_subflow_set_knows_it_is_empty_without_a_walk() {
        let mut set = SubflowSet::default();
        assert!(set.is_empty() && !set.remove(3) && !set.contains(3));
        set.insert(3);
        set.insert(3);
        set.insert(0);
        assert!(!set.is_empty() && set.contains(3) && set.contains(0) && !set.contains(1));
        assert!(set.remove(3) && !set.remove(3));
        assert!(!set.is_empty());
        assert!(set.remove(0));
        assert!(set.is_empty());
        // Past the inline word.
        set.insert(64);
        set.insert(130);
        set.insert(130);
        assert!(set.contains(64) && set.contains(130) && !set.contains(65) && !set.contains(0));
        assert!(set.remove(130) && !set.remove(130) && !set.is_empty());
        assert!(set.remove(64) && set.is_empty());
    }
}
