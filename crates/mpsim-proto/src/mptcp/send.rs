//! The sending side: collects what every subflow has to send, decorates it
//! with MPTCP options (handshake, DSS mapping and DATA_ACK, address
//! management), and asks the scheduler where new and reinjected data goes.

use super::connection::{Conn, Kind, MpState};
use super::crypto;
use super::scheduler::Scheduler;
use super::sender::NextSeg;
use super::SchedulerKind;
use crate::tcp::mtu::{ts_option_bytes, IP_TCP_HEADER_BYTES, TCP_OPTION_SPACE_BYTES};
use crate::tcp::CcCtx;
use mpsim_core::mptcp::{Dss, DssMapping, MpOption, MptcpOpts};
use mpsim_core::{Packet, PacketExt, SimTime, TcpFlags};

impl Conn {
    /// Everything there is to send, appended to `sink` in order, built in
    /// `sink` itself (the engine's hot path); with `fill`, what the
    /// subflows and the scheduler have to send is looked for.
    pub(super) fn drain_transmit(&mut self, now: SimTime, sink: &mut Vec<Packet>, fill: bool) {
        // Packets made for `poll_transmit` and emitted since the last call
        // (both rare) go first.
        if !self.polled.is_empty() {
            sink.extend(self.polled.drain(..));
        }
        if !self.out.is_empty() {
            sink.append(&mut self.out);
        }
        std::mem::swap(&mut self.out, sink);
        if fill {
            self.fill(now);
        }
        std::mem::swap(&mut self.out, sink);
    }

    /// A packet ready to leave.
    pub(super) fn emit(&mut self, p: Packet) {
        self.out.push(p);
    }

    fn fill(&mut self, now: SimTime) {
        if self.rx.take_fin_ack_due() {
            self.ack_data_fin(now);
        }
        let wnd = self.rx.window_bytes();
        // The window changes only as out-of-order data comes and goes.
        let new_wnd = self.advertised_wnd_bytes.replace(wnd) != Some(wnd);
        for r in 0..self.subs.len() {
            if new_wnd {
                self.subs[r].sf.set_advertised_window(Some(wnd));
            }
            // Only subflows that saw something can have something new to send.
            if self.dirty.contains(r) && !self.subs[r].gone {
                self.dirty.remove(r);
                if !self.nothing_due(r) {
                    self.drain_subflow(now, r);
                }
            }
        }
        let server_early = self.state == MpState::Handshake && !self.is_client && self.subs.first().is_some_and(|s| s.ready);
        if matches!(self.state, MpState::Established | MpState::Fallback) || server_early {
            match self.cfg.scheduler {
                SchedulerKind::Redundant if self.state == MpState::Established => {
                    // Reinjections take the default scheduler's choice (spec 11.3).
                    self.schedule_reinjections();
                    self.schedule_redundant();
                }
                // Nothing to reinject and no new data: `schedule` would find no segment.
                _ if self.tx.idle() => {}
                _ => self.schedule(now),
            }
            if !self.queued.is_empty() {
                self.push_queued(now);
            }
            self.maybe_send_data_fin(now);
            if self.pm.next_announcement().is_some() {
                self.send_announcements(now);
            }
            if !self.prio_pending.is_empty() {
                self.send_priorities(now);
            }
            self.maybe_close_subflows(now);
        }
        self.arm_meta_timer(now);
    }

    /// Subflow `r` has nothing of its own to send (an empty poll, made
    /// cheaply), nor an MP_JOIN ACK.
    #[inline(always)]
    fn nothing_due(&mut self, r: usize) -> bool {
        let sub = &mut self.subs[r];
        !sub.third_ack_pending && !sub.join_ack_sent && sub.sf.poll_nothing_due(&self.cc[r])
    }

    /// Everything subflow `r` wants to send by itself (handshake,
    /// retransmissions, ACKs, and data already assigned to it).
    pub(super) fn drain_subflow(&mut self, now: SimTime, r: usize) {
        // Built in place in the output buffer, then decorated there.
        let mut out = std::mem::take(&mut self.out);
        loop {
            let mut cx = CcCtx { subs: &mut self.cc, r, ctrl: &mut self.ctrl };
            if !self.subs[r].sf.poll_transmit_into(now, &mut cx, &mut out) {
                break;
            }
            if let Some(p) = out.last_mut() {
                self.decorate(r, p);
            }
            // The last poll usually finds nothing: it is made cheaply.
            if self.subs[r].sf.poll_nothing_due(&self.cc[r]) {
                break;
            }
        }
        self.out = out;
        let sub = &self.subs[r];
        if sub.third_ack_pending && (!self.is_client || sub.kind == Kind::Join) {
            self.send_join_ack(now, r);
        }
        if std::mem::take(&mut self.subs[r].join_ack_sent) {
            self.arm_join_ack_timer(now, r);
        }
        self.sync_deadline(r);
        // Sending raises no subflow events: `after_subflow_activity` runs
        // after segments and timeouts only.
    }

    /// A pure ACK on subflow `r` (`Subflow::control_packet`).
    fn control_packet(&mut self, now: SimTime, r: usize) -> Option<Packet> {
        let p = self.subs[r].sf.control_packet(now);
        // Sending rearms the delayed ACK.
        self.sync_deadline(r);
        p
    }

    /// The ACKs of an MP_JOIN that no data carried: the initiator's third
    /// (again, after a timeout) and the responder's fourth, which it sends
    /// at once. Until the fourth arrives the initiator may not send on the
    /// subflow (RFC 8684 3.2, spec 5).
    fn send_join_ack(&mut self, now: SimTime, r: usize) {
        let Some(mut p) = self.control_packet(now, r) else { return };
        self.decorate(r, &mut p);
        self.subs[r].third_ack_pending = false;
        self.emit(p);
    }

    /// The third ACK of an MP_JOIN went out: resend it after an RTO
    /// (doubling each time) unless the fourth ACK comes first.
    fn arm_join_ack_timer(&mut self, now: SimTime, r: usize) {
        let s = &mut self.subs[r];
        let rto = s.sf.rtt.rto().saturating_mul(1u64 << s.join_ack_backoff.min(6));
        s.join_ack_backoff += 1;
        s.join_ack_due = Some(now + rto);
    }

    /// Sends what the scheduler queued, one subflow after the other, as
    /// Linux pushes every subflow it entailed data on once the scheduling
    /// round is over (`mptcp_write_xmit`).
    #[inline(always)]
    fn push_queued(&mut self, now: SimTime) {
        for r in 0..self.subs.len() {
            if self.queued.remove(r) {
                self.drain_subflow(now, r);
            }
        }
    }

    /// Default, round-robin and upstream scheduling: segment after segment
    /// (the default scheduler's new data in batches, `schedule_new_data`).
    fn schedule(&mut self, now: SimTime) {
        while let Some(seg) = self.next_segment() {
            if seg.reinject.is_none() && self.send_blocked(&seg) {
                if self.cfg.opportunistic_retransmission || self.cfg.penalisation {
                    self.opportunistic_retransmit(now);
                }
                return;
            }
            if seg.reinject.is_none() && self.cfg.scheduler == SchedulerKind::Default {
                if self.schedule_new_data(seg) {
                    continue;
                }
                return;
            }
            if seg.reinject.is_none() && self.cfg.scheduler == SchedulerKind::Upstream {
                // `mptcp_subflow_get_send` calls `__mptcp_set_timeout`.
                self.set_upstream_timer_ival(now);
            }
            let Some(r) = self.pick_ignoring_window(&seg) else { return };
            if seg.reinject.is_none() {
                self.sched.on_new_data_sent(seg.len);
            }
            self.transmit_on(r, seg);
        }
    }

    /// New data under the default scheduler, from `first` on. Queuing on a
    /// subflow changes only that subflow's room, so the answers the
    /// scheduler would give segment after segment are known in advance:
    /// the subflows that have room, lowest SRTT first, each taking full
    /// segments until it is full. Returns true if the scheduler must look
    /// again at what comes next (no data, a shorter segment, or data the
    /// connection-level window blocks), false when every subflow is full.
    #[inline(always)]
    fn schedule_new_data(&mut self, first: NextSeg) -> bool {
        if first.len != self.cfg.tcp.mss_bytes {
            // The last bytes written, less than a segment: one choice.
            if let Some(r) = self.pick_lowest_rtt(&first) {
                self.transmit_on(r, first);
            }
            return false;
        }
        let mut ranked = std::mem::take(&mut self.ranked);
        Scheduler::rank_lowest_rtt(&self.paths(), &mut ranked);
        let mut look_again = false;
        for &(_, r, room) in &ranked {
            let data = self.full_segments_of_data();
            for _ in 0..room.min(data) {
                let seg = NextSeg { dsn: self.tx.nxt(), len: first.len, reinject: None };
                self.transmit_on(r, seg);
            }
            if data <= room {
                look_again = true;
                break;
            }
        }
        self.ranked = ranked;
        look_again
    }

    /// How many full-size segments of new data the application's data and
    /// the connection-level window hold.
    fn full_segments_of_data(&self) -> u64 {
        self.tx.full_segments_of_data(self.cfg.tcp.mss_bytes)
    }

    fn schedule_reinjections(&mut self) {
        while let Some(seg) = self.next_segment().filter(|s| s.reinject.is_some()) {
            match self.pick_lowest_rtt(&seg) {
                Some(r) => self.transmit_on(r, seg),
                None => break,
            }
        }
    }

    /// The reinjection at the head of the queue, else new data within the
    /// connection-level window.
    #[inline(always)]
    fn next_segment(&mut self) -> Option<NextSeg> {
        let (subs, mss) = (&self.subs, self.cfg.tcp.mss_bytes);
        // Some subflow that may send has not carried it.
        let reinjectable = |mask: u64| subs.iter().enumerate().any(|(r, s)| s.ready && !s.gone && mask & (1u64 << (r % 64)) == 0);
        self.tx.next_segment(mss, reinjectable)
    }

    fn send_blocked(&self, seg: &NextSeg) -> bool {
        self.tx.blocked(seg)
    }

    /// Queues `seg` on subflow `r`; `push_queued` sends it.
    #[inline(always)]
    pub(super) fn transmit_on(&mut self, r: usize, seg: NextSeg) {
        if self.tx.on_sent(r, &seg) {
            self.subs[r].reinjected_bytes += seg.len as u64;
            self.stats.reinjected_bytes += seg.len as u64;
        }
        let sub = &mut self.subs[r];
        // The subflow tags the segment with its DSN: the mapping goes on
        // it, and on every retransmission of it (`dss_for`).
        sub.sf.send_segment(seg.len as u64, seg.dsn);
        self.queued.insert(r);
    }

    /// The out-of-tree kernel's opportunistic retransmission and
    /// penalisation (`mptcp_rcv_buf_optimization`, spec 11.1), each if
    /// switched on, when the connection-level window blocks new data.
    fn opportunistic_retransmit(&mut self, now: SimTime) {
        let Some(head) = self.tx.head() else { return };
        let probe = NextSeg { dsn: head.dsn, len: head.len, reinject: None };
        let Some(s) = self.pick_ignoring_window(&probe) else { return };
        let Some(o) = (0..self.subs.len()).find(|&o| head.path_mask & (1u64 << (o % 64)) != 0 && o != s) else { return };
        let (srtt_s, srtt_o) = (self.cc[s].srtt_s(), self.cc[o].srtt_s());
        let penalise = self.cfg.penalisation && srtt_s < srtt_o && self.cc[o].ca_state == mpsim_cc::CaState::Open;
        if penalise && self.penalise_ok(now, s, o) {
            self.stats.penalisations += 1;
            let c = &mut self.cc[o];
            let before = c.cwnd_pkts;
            c.cwnd_pkts = (c.cwnd_pkts / 2.0).max(1.0);
            if before >= c.ssthresh_pkts {
                c.ssthresh_pkts = (c.ssthresh_pkts / 2.0).max(2.0);
            }
        }
        let retransmit = self.cfg.opportunistic_retransmission && head.path_mask & (1u64 << (s % 64)) == 0;
        if retransmit && (self.cc[o].cwnd_pkts <= 4.0 || 4.0 * srtt_s < srtt_o) {
            if let Some(seg) = self.tx.head_as_reinjection() {
                self.transmit_on(s, seg);
            }
        }
    }

    /// At most one penalisation of `o` per SRTT of `s`.
    fn penalise_ok(&mut self, now: SimTime, s: usize, o: usize) -> bool {
        let srtt = self.subs[s].sf.rtt.srtt.unwrap_or_default();
        let last = &mut self.subs[o].last_penalised;
        if last.is_some_and(|t| now - t < srtt) {
            return false;
        }
        *last = Some(now);
        true
    }

    /// MPTCP options for a segment subflow `r` produced.
    #[inline(always)]
    fn decorate(&mut self, r: usize, p: &mut Packet) {
        let handshakes_done = self.state == MpState::Established && self.peer_confirmed && !self.subs[r].third_ack_pending;
        if handshakes_done && !self.checksums && !p.flags.has(TcpFlags::SYN | TcpFlags::RST) {
            // The common case: no handshake option can be due, no checksum.
            let dss = self.dss_for(r, p);
            self.attach(p, MptcpOpts { dss: Some(dss), option: MpOption::None });
            return;
        }
        if self.state == MpState::Fallback || p.flags.has(TcpFlags::RST) {
            return;
        }
        let option = self.handshake_option(r, p);
        let mut dss = None;
        let carries_keys = matches!(option, MpOption::CapableAck { .. } | MpOption::CapableData { .. });
        let server_early = self.state == MpState::Handshake && !self.is_client;
        if !p.flags.has(TcpFlags::SYN) && !carries_keys && (self.state == MpState::Established || server_early) {
            let mut d = self.dss_for(r, p);
            self.add_checksum(&mut d);
            dss = Some(d);
        }
        self.attach(p, MptcpOpts { dss, option });
    }

    fn handshake_option(&mut self, r: usize, p: &Packet) -> MpOption {
        let syn = p.flags.has(TcpFlags::SYN);
        let sub = &mut self.subs[r];
        match (sub.kind, self.is_client, syn) {
            (Kind::Initial, true, true) => MpOption::CapableSyn { version: 1, checksum: self.cfg.dss_checksum },
            (Kind::Initial, false, true) => MpOption::CapableSynAck { version: 1, checksum: self.checksums, key: self.local_key },
            (Kind::Join, true, true) => {
                MpOption::JoinSyn { token: self.remote_token, nonce: sub.local_nonce, addr_id: sub.local_id, backup: sub.backup }
            }
            (Kind::Join, false, true) => MpOption::JoinSynAck {
                hmac64: crypto::join_synack_hmac64(self.local_key, self.remote_key, sub.local_nonce, sub.remote_nonce),
                nonce: sub.local_nonce,
                addr_id: sub.local_id,
                backup: sub.backup,
            },
            // Until the server proves it has our key (a DSS arrives), every
            // segment of the initial subflow repeats both keys (RFC 8684 3.1).
            (Kind::Initial, true, false) if !self.peer_confirmed && self.state == MpState::Established => {
                sub.third_ack_pending = false;
                if p.payload_bytes > 0 {
                    MpOption::CapableData {
                        version: 1,
                        checksum: self.checksums,
                        sender_key: self.local_key,
                        receiver_key: self.remote_key,
                        data_len: p.payload_bytes as u16,
                    }
                } else {
                    MpOption::CapableAck {
                        version: 1,
                        checksum: self.checksums,
                        sender_key: self.local_key,
                        receiver_key: self.remote_key,
                    }
                }
            }
            (kind, client, false) if sub.third_ack_pending => {
                sub.third_ack_pending = false;
                match (kind, client) {
                    (Kind::Initial, true) => MpOption::CapableAck {
                        version: 1,
                        checksum: self.checksums,
                        sender_key: self.local_key,
                        receiver_key: self.remote_key,
                    },
                    (Kind::Join, true) => {
                        sub.join_ack_sent = true;
                        MpOption::JoinAck {
                            hmac: crypto::join_ack_hmac160(self.local_key, self.remote_key, sub.local_nonce, sub.remote_nonce),
                        }
                    }
                    _ => MpOption::None,
                }
            }
            _ => MpOption::None,
        }
    }

    /// DATA_ACK, plus the mapping of the payload if there is one.
    #[inline(always)]
    fn dss_for(&self, r: usize, p: &Packet) -> Dss {
        // Without the peer's key there is no IDSN to acknowledge against.
        let data_ack = (self.state == MpState::Established).then(|| self.remote_idsn.wrapping_add(self.rx.rcv_nxt()));
        let mut dss = Dss { data_ack, ack64: true, dsn64: true, ..Default::default() };
        if p.payload_bytes > 0 {
            if let Some(dsn) = self.subs[r].sf.last_tag() {
                dss.mapping =
                    Some(DssMapping { dsn: self.local_idsn.wrapping_add(dsn), ssn: p.seq as u32, len: p.payload_bytes as u16 });
            }
        }
        dss
    }

    /// The checksum of the DSS's mapping, if checksums are in use (spec 2).
    /// The model's payloads are zeros (as in its pcap files), which add
    /// nothing to the sum.
    fn add_checksum(&self, dss: &mut Dss) {
        if let Some(m) = dss.mapping.filter(|_| self.checksums) {
            dss.checksum = Some(crypto::dss_checksum(m.dsn, m.ssn, m.len, &[]));
        }
    }

    /// Puts `opts` on `p`, trimming SACK blocks to the option space left
    /// (as Linux `tcp_established_options` does) and, on a data segment,
    /// to the room its mapping leaves in the MTU, and counts the bytes on
    /// the wire.
    #[inline(always)]
    pub(super) fn attach(&self, p: &mut Packet, opts: MptcpOpts) {
        let mp = opts.len_bytes();
        let ts = ts_option_bytes(p.ts);
        let by_space = TCP_OPTION_SPACE_BYTES.saturating_sub(ts + mp);
        let by_mtu = match p.payload_bytes {
            0 => u32::MAX,
            len => self.cfg.tcp.mtu_bytes.saturating_sub(IP_TCP_HEADER_BYTES + ts + mp + len),
        };
        let room = by_space.min(by_mtu);
        let max_blocks = if room >= 10 { ((room - 2) / 8).min(3) as u8 } else { 0 };
        if p.sack.len > max_blocks {
            p.wire_bytes -= p.sack.option_bytes();
            p.sack.len = max_blocks;
            p.wire_bytes += p.sack.option_bytes();
        }
        p.wire_bytes += mp;
        p.ext = PacketExt::Mptcp(opts);
    }

    fn maybe_send_data_fin(&mut self, now: SimTime) {
        if !self.tx.fin_due() {
            return;
        }
        if self.state == MpState::Fallback {
            self.tx.on_fin_sent();
            self.subs[0].sf.close();
            self.drain_subflow(now, 0);
            return;
        }
        let peers = self.rx.peer_fin_sub().filter(|&r| self.subs[r].ready && !self.subs[r].gone);
        let Some(r) = peers.or_else(|| self.best_ready_subflow()) else { return };
        let Some(mut p) = self.control_packet(now, r) else { return };
        let mut dss = self.dss_for(r, &p);
        dss.mapping = Some(DssMapping { dsn: self.local_idsn.wrapping_add(self.tx.nxt()), ssn: 0, len: 1 });
        dss.data_fin = true;
        self.add_checksum(&mut dss);
        self.attach(&mut p, MptcpOpts { dss: Some(dss), option: MpOption::None });
        self.emit(p);
        self.tx.on_fin_sent();
    }

    /// The peer's DATA_FIN arrived: a DATA_ACK for it at once on every
    /// subflow, as Linux's `mptcp_check_data_fin` calls `mptcp_send_ack`
    /// (net/mptcp/protocol.c; not after a fallback, whose FIN the subflow
    /// acknowledges). A DATA_FIN on a segment without data gets no TCP
    /// ACK, so when both ends close at once nothing else would carry the
    /// DATA_ACK until a connection-level retransmission. Each ACK stands for
    /// the subflow's own pending one.
    fn ack_data_fin(&mut self, now: SimTime) {
        if self.state != MpState::Established {
            return;
        }
        let wnd = self.rx.window_bytes();
        for r in 0..self.subs.len() {
            if self.subs[r].gone || !self.subs[r].ready {
                continue;
            }
            self.subs[r].sf.set_advertised_window(Some(wnd));
            let Some(mut p) = self.control_packet(now, r) else { continue };
            let dss = self.dss_for(r, &p);
            self.attach(&mut p, MptcpOpts { dss: Some(dss), option: MpOption::None });
            self.emit(p);
        }
    }

    fn send_announcements(&mut self, now: SimTime) {
        if self.state != MpState::Established || (self.is_client && !self.peer_confirmed) {
            return;
        }
        while let Some(option) = self.pm.next_announcement() {
            let Some(r) = self.best_ready_subflow() else { return };
            let Some(mut p) = self.control_packet(now, r) else { return };
            let dss = self.dss_for(r, &p);
            self.attach(&mut p, MptcpOpts { dss: Some(dss), option });
            self.emit(p);
            self.pm.on_announcement_sent(now);
        }
    }

    /// MP_PRIO on each subflow whose priority changed, on a pure ACK of
    /// its own (Linux does not retransmit it).
    fn send_priorities(&mut self, now: SimTime) {
        if self.state != MpState::Established {
            return;
        }
        for r in 0..self.subs.len() {
            if !self.prio_pending.contains(r) {
                continue;
            }
            if self.subs[r].gone {
                self.prio_pending.remove(r);
                continue;
            }
            if !self.subs[r].ready {
                continue; // once it is
            }
            let Some(mut p) = self.control_packet(now, r) else { continue };
            let dss = self.dss_for(r, &p);
            let option = MpOption::MpPrio { backup: self.subs[r].backup };
            self.attach(&mut p, MptcpOpts { dss: Some(dss), option });
            self.emit(p);
            self.prio_pending.remove(r);
        }
    }

    /// Both DATA_FINs done: close every subflow with FIN (RFC 8684
    /// section 3.3.3), sent now: nothing else may come to send them.
    fn maybe_close_subflows(&mut self, now: SimTime) {
        if self.state != MpState::Established || self.subflows_closed || !self.finished() {
            return;
        }
        self.subflows_closed = true;
        self.pm.stop_retransmitting(); // nothing is announced on a closing connection
        for r in 0..self.subs.len() {
            if !self.subs[r].gone {
                self.subs[r].sf.close();
                self.drain_subflow(now, r);
            }
        }
    }

    pub(super) fn best_ready_subflow(&self) -> Option<usize> {
        (0..self.subs.len())
            .filter(|&r| self.subs[r].ready && !self.subs[r].gone && self.subs[r].sf.state.is_synchronised())
            .min_by(|&a, &b| self.cc[a].srtt_s().total_cmp(&self.cc[b].srtt_s()).then(a.cmp(&b)))
    }
}
