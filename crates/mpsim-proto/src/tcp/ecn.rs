//! Explicit Congestion Notification for one TCP subflow (RFC 3168 section
//! 6.1), sans-IO: negotiation in the handshake, ECT(0) on new data, the
//! receiver's ECE echo until CWR, and the sender's CWR after it reduced its
//! window. The subflow calls these hooks; the window reduction itself
//! (Linux `tcp_enter_cwr`) is the subflow's.

use mpsim_core::{IpEcn, Packet, TcpFlags};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ecn {
    /// This end asks for ECN in its SYN (Linux tcp_ecn = 1); a server
    /// always accepts a request (tcp_ecn = 2, the default).
    enabled: bool,
    /// Negotiated: data goes out ECT(0) and echoes are honoured.
    pub ok: bool,
    /// SYNs sent: a retransmitted SYN asks no more (Linux
    /// `tcp_ecn_clear_syn`), in case a middlebox drops ECN SYNs.
    syns_sent: u32,
    /// Receiver: a CE arrived; set ECE on every segment until CWR arrives.
    demand_cwr: bool,
    /// Sender: the window was reduced; set CWR on the next new data.
    queue_cwr: bool,
    /// Sender: SND.NXT at the last reduction; the next echo may reduce
    /// again once data beyond it is acknowledged (Linux `high_seq`).
    pub high_seq: u64,
    /// CE-marked segments received.
    pub ce_received: u64,
    /// Window reductions made for an echo.
    pub reductions: u64,
}

impl Ecn {
    pub fn new(enabled: bool) -> Self {
        Ecn { enabled, ..Default::default() }
    }

    /// Server: the peer's SYN. An ECN-setup SYN carries ECE and CWR
    /// (RFC 3168 section 6.1.1).
    pub fn on_syn(&mut self, syn: &Packet) {
        self.ok = syn.flags.has(TcpFlags::ECE) && syn.flags.has(TcpFlags::CWR);
    }

    /// Client: the SYN/ACK. An ECN-setup SYN/ACK carries ECE without CWR
    /// (Linux `tcp_ecn_rcv_synack`).
    pub fn on_syn_ack(&mut self, syn_ack: &Packet) {
        self.ok = self.ok && syn_ack.flags.has(TcpFlags::ECE) && !syn_ack.flags.has(TcpFlags::CWR);
    }

    /// Every segment built: the handshake's flags and the receiver's echo
    /// (Linux `tcp_ecn_make_synack`, `tcp_ecn_send`).
    pub fn on_build(&mut self, p: &mut Packet) {
        let f = &mut p.flags.0;
        if *f & TcpFlags::SYN != 0 {
            if *f & TcpFlags::ACK == 0 {
                self.syns_sent += 1;
                self.ok = self.enabled && self.syns_sent == 1;
                if self.ok {
                    *f |= TcpFlags::ECE | TcpFlags::CWR;
                }
            } else if self.ok {
                *f |= TcpFlags::ECE;
            }
            return;
        }
        if self.ok && self.demand_cwr {
            *f |= TcpFlags::ECE;
        }
    }

    /// A segment of new data (not a retransmission, RFC 3168 section
    /// 6.1.5): ECT(0), and CWR once after a reduction (section 6.1.2).
    pub fn on_new_data(&mut self, p: &mut Packet) {
        if !self.ok {
            return;
        }
        p.ecn = IpEcn::Ect0;
        if std::mem::take(&mut self.queue_cwr) {
            p.flags.0 |= TcpFlags::CWR;
        }
    }

    /// Receiver: a segment arrived. CWR ends the echo, then a CE starts it
    /// again (Linux `tcp_ecn_accept_cwr` before `tcp_ecn_check_ce`).
    /// True when the ACK should go at once (a new CE: Linux enters quick
    /// ACK mode so the sender learns within an RTT).
    pub fn on_segment(&mut self, p: &Packet) -> bool {
        if !self.ok || p.flags.has(TcpFlags::SYN) {
            return false;
        }
        if p.flags.has(TcpFlags::CWR) {
            self.demand_cwr = false;
        }
        if p.ecn == IpEcn::Ce {
            self.ce_received += 1;
            return !std::mem::replace(&mut self.demand_cwr, true);
        }
        false
    }

    /// Sender: an ACK echoes congestion (Linux `tcp_ecn_rcv_ecn_echo`).
    pub fn echoed(&self, ack: &Packet) -> bool {
        self.ok && ack.flags.has(TcpFlags::ECE) && !ack.flags.has(TcpFlags::SYN)
    }

    /// Sender: the window was reduced for an echo with `snd_nxt` sent;
    /// the next new data carries CWR (Linux `tcp_ecn_queue_cwr`).
    pub fn on_reduced(&mut self, snd_nxt: u64) {
        self.queue_cwr = true;
        self.high_seq = snd_nxt;
        self.reductions += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(flags: u8) -> Packet {
        Packet { flags: TcpFlags(flags), ..Default::default() }
    }

    /// Client and server negotiate; returns them established.
    fn pair(client_wants: bool) -> (Ecn, Ecn) {
        let (mut c, mut s) = (Ecn::new(client_wants), Ecn::new(false));
        let mut syn = seg(TcpFlags::SYN);
        c.on_build(&mut syn);
        s.on_syn(&syn);
        let mut syn_ack = seg(TcpFlags::SYN | TcpFlags::ACK);
        s.on_build(&mut syn_ack);
        c.on_syn_ack(&syn_ack);
        (c, s)
    }

    #[test]
    fn the_handshake_negotiates_ecn_when_the_client_asks() {
        let (c, s) = pair(true);
        assert!(c.ok && s.ok);
        let (c, s) = pair(false);
        assert!(!c.ok && !s.ok);
    }

    #[test]
    fn setup_flags_are_ece_cwr_on_syn_and_ece_on_syn_ack() {
        let mut c = Ecn::new(true);
        let mut syn = seg(TcpFlags::SYN);
        c.on_build(&mut syn);
        assert_eq!(syn.flags.0, TcpFlags::SYN | TcpFlags::ECE | TcpFlags::CWR);
        // A retransmitted SYN no longer asks.
        let mut again = seg(TcpFlags::SYN);
        c.on_build(&mut again);
        assert_eq!(again.flags.0, TcpFlags::SYN);
        let mut s = Ecn::new(false);
        s.on_syn(&syn);
        let mut syn_ack = seg(TcpFlags::SYN | TcpFlags::ACK);
        s.on_build(&mut syn_ack);
        assert_eq!(syn_ack.flags.0, TcpFlags::SYN | TcpFlags::ACK | TcpFlags::ECE);
        // A SYN/ACK with CWR too (a reflecting middlebox) is no agreement.
        let mut c2 = Ecn::new(true);
        c2.on_build(&mut seg(TcpFlags::SYN));
        c2.on_syn_ack(&syn);
        assert!(!c2.ok);
    }

    #[test]
    fn only_new_data_is_ect_and_the_first_after_a_reduction_carries_cwr() {
        let (mut c, _) = pair(true);
        let mut d = seg(TcpFlags::ACK);
        c.on_new_data(&mut d);
        assert_eq!((d.ecn, d.flags.has(TcpFlags::CWR)), (IpEcn::Ect0, false));
        let mut ack = seg(TcpFlags::ACK);
        c.on_build(&mut ack);
        assert_eq!(ack.ecn, IpEcn::NotEct, "pure ACKs and retransmissions are not ECT");
        c.on_reduced(1);
        let (mut d1, mut d2) = (seg(TcpFlags::ACK), seg(TcpFlags::ACK));
        c.on_new_data(&mut d1);
        c.on_new_data(&mut d2);
        assert!(d1.flags.has(TcpFlags::CWR) && !d2.flags.has(TcpFlags::CWR));
    }

    #[test]
    fn the_receiver_echoes_from_a_ce_mark_until_it_sees_cwr() {
        let (_, mut s) = pair(true);
        let ce = Packet { ecn: IpEcn::Ce, ..seg(TcpFlags::ACK) };
        let plain = Packet { ecn: IpEcn::Ect0, ..seg(TcpFlags::ACK) };
        let echo = |s: &mut Ecn| {
            let mut a = seg(TcpFlags::ACK);
            s.on_build(&mut a);
            a.flags.has(TcpFlags::ECE)
        };
        assert!(!echo(&mut s));
        assert!(s.on_segment(&ce), "a new CE is acknowledged at once");
        assert!(echo(&mut s));
        assert!(!s.on_segment(&plain));
        assert!(echo(&mut s) && echo(&mut s), "every ACK until CWR");
        let cwr = Packet { flags: TcpFlags(TcpFlags::ACK | TcpFlags::CWR), ..plain };
        s.on_segment(&cwr);
        assert!(!echo(&mut s));
        // CWR and CE on one segment: the echo starts again.
        let both = Packet { flags: TcpFlags(TcpFlags::ACK | TcpFlags::CWR), ..ce };
        assert!(s.on_segment(&both));
        assert!(echo(&mut s));
        assert_eq!(s.ce_received, 2);
    }

    #[test]
    fn echoes_count_only_when_negotiated() {
        let (c, _) = pair(true);
        let ece = seg(TcpFlags::ACK | TcpFlags::ECE);
        assert!(c.echoed(&ece));
        assert!(!c.echoed(&seg(TcpFlags::SYN | TcpFlags::ACK | TcpFlags::ECE)));
        let (c, _) = pair(false);
        assert!(!c.echoed(&ece));
    }

    /// Two connections 10 ms apart; the client uploads `bytes` and the
    /// wire sets CE on the client's data segments numbered in `ce_segs`.
    /// Records every client data segment and the client's state per ACK.
    struct Run {
        data: Vec<Packet>,
        reductions_seen: Vec<u64>,
        cwnd_after_first_echo: Option<f64>,
        cwnd_before_first_echo: f64,
        /// (cwnd, ssthresh, state is CWR) after every ACK.
        per_ack: Vec<(f64, f64, bool)>,
        delivered: u64,
        acks_with_ece: u64,
    }

    fn upload_with_marks(bytes: u64, ce_segs: std::ops::Range<usize>) -> Run {
        upload_with_marks_in(super::super::TcpConfig::default(), bytes, ce_segs)
    }

    fn upload_with_marks_in(cfg: super::super::TcpConfig, bytes: u64, ce_segs: std::ops::Range<usize>) -> Run {
        use super::super::{AppEvent, TcpConnection};
        use mpsim_cc::CaState;
        use mpsim_core::{Addr, SimDuration, SimTime};
        let cfg = super::super::TcpConfig { ecn: true, ..cfg };
        let mut client = TcpConnection::connect(cfg, "reno", (Addr(1), 40000), (Addr(2), 80)).expect("reno");
        let mut server: Option<TcpConnection> = None;
        client.send(bytes);
        client.close();
        let delay = SimDuration::from_millis(10);
        let mut wire: Vec<(SimTime, bool, Packet)> = Vec::new();
        let mut now = SimTime::ZERO;
        let mut run = Run {
            data: vec![],
            reductions_seen: vec![],
            cwnd_after_first_echo: None,
            cwnd_before_first_echo: 0.0,
            per_ack: vec![],
            delivered: 0,
            acks_with_ece: 0,
        };
        for _ in 0..200_000 {
            let mut out = Vec::new();
            client.drain_transmit(now, &mut out);
            for mut p in out {
                if p.payload_bytes > 0 {
                    if ce_segs.contains(&run.data.len()) && p.ecn.is_ect() {
                        p.ecn = IpEcn::Ce;
                    }
                    run.data.push(p);
                }
                wire.push((now + delay, true, p));
            }
            if let Some(s) = server.as_mut() {
                let mut out = Vec::new();
                s.drain_transmit(now, &mut out);
                wire.extend(out.into_iter().map(|p| (now + delay, false, p)));
                while let Some(e) = s.poll_event() {
                    if let AppEvent::Delivered { bytes } = e {
                        run.delivered += bytes;
                    }
                }
            }
            let next_wire = wire.iter().map(|w| w.0).min();
            let next_timer = [client.poll_timeout(), server.as_ref().and_then(|s| s.poll_timeout())].into_iter().flatten().min();
            let Some(t) = next_wire.into_iter().chain(next_timer).min() else { break };
            now = t;
            if let Some(i) = wire.iter().position(|w| w.0 == t) {
                let (_, to_server, p) = wire.remove(i);
                if to_server {
                    match server.as_mut() {
                        Some(s) => s.handle_segment(now, &p),
                        None => server = Some(TcpConnection::accept(cfg, "reno", &p).expect("reno")),
                    }
                } else {
                    let echo = p.flags.has(TcpFlags::ECE) && !p.flags.has(TcpFlags::SYN);
                    run.acks_with_ece += echo as u64;
                    let before = client.cc().cwnd_pkts;
                    client.handle_segment(now, &p);
                    if echo && run.cwnd_after_first_echo.is_none() {
                        run.cwnd_before_first_echo = before;
                        run.cwnd_after_first_echo = Some(client.cc().cwnd_pkts);
                        assert_eq!(client.cc().ca_state, CaState::Cwr);
                    }
                    run.reductions_seen.push(client.sf.ecn.reductions);
                    let cc = client.cc();
                    run.per_ack.push((cc.cwnd_pkts, cc.ssthresh_pkts, cc.ca_state == CaState::Cwr));
                }
            } else {
                client.handle_timeout(now);
                if let Some(s) = server.as_mut() {
                    s.handle_timeout(now);
                }
            }
        }
        run
    }

    /// Marks on three segments of one window cause one reduction (RFC 3168
    /// section 6.1.2): cwnd halves once, the next new segment carries CWR,
    /// the receiver stops echoing after it, nothing is retransmitted and
    /// every byte arrives.
    #[test]
    fn marks_in_one_window_reduce_the_window_once() {
        let bytes = 2_000_000;
        let run = upload_with_marks(bytes, 40..43);
        assert_eq!(run.delivered, bytes);
        assert_eq!(*run.reductions_seen.last().expect("acks"), 1);
        let before = run.cwnd_before_first_echo;
        let after = run.cwnd_after_first_echo.expect("an echo arrived");
        assert!((after - before / 2.0).abs() <= 1.0, "{before} -> {after}");
        let cwr: Vec<usize> = run.data.iter().enumerate().filter(|(_, p)| p.flags.has(TcpFlags::CWR)).map(|(i, _)| i).collect();
        assert_eq!(cwr.len(), 1, "{cwr:?}");
        assert!(cwr[0] > 42);
        // The echo lasts until CWR reaches the receiver: at most a window
        // of segments, one ACK per two (delayed ACKs; a CE is acknowledged at once).
        assert!(run.acks_with_ece >= 1 && (run.acks_with_ece as f64) < before, "{} {before}", run.acks_with_ece);
        let mut seqs: Vec<u64> = run.data.iter().map(|p| p.seq).collect();
        seqs.dedup();
        assert_eq!(seqs.len(), run.data.len(), "no retransmission");
        assert!(run.data.iter().all(|p| p.ecn.is_ect()));
    }

    /// Marks a window apart cause a reduction each.
    #[test]
    fn marks_in_separate_windows_reduce_twice() {
        let run = upload_with_marks(2_000_000, 40..41);
        assert_eq!(*run.reductions_seen.last().expect("acks"), 1);
        let mut marks = upload_with_marks(2_000_000, 40..400);
        marks.reductions_seen.dedup();
        assert!(marks.reductions_seen.len() > 3, "{:?}", marks.reductions_seen);
    }

    /// Linux mode spreads an ECN reduction with PRR as a loss recovery
    /// (`tcp_enter_cwr` starts `tcp_init_cwnd_reduction`, each ACK in CWR
    /// runs `tcp_cwnd_reduction`, and `tcp_end_cwnd_reduction` sets cwnd to
    /// ssthresh when CWR ends): the window steps down over about one RTT
    /// instead of halving on the echo, and ends at ssthresh.
    #[test]
    fn linux_mode_spreads_an_ecn_reduction_with_prr() {
        use crate::tcp::TcpConfig;
        use mpsim_cc::CcMode;
        let bytes = 2_000_000;
        let run = upload_with_marks_in(TcpConfig::for_mode(CcMode::Linux), bytes, 40..41);
        assert_eq!(run.delivered, bytes);
        assert_eq!(*run.reductions_seen.last().expect("acks"), 1);
        let before = run.cwnd_before_first_echo;
        let after = run.cwnd_after_first_echo.expect("an echo arrived");
        assert!(after > before / 2.0 + 2.0, "not cut at once: {before} -> {after}");
        let in_cwr: Vec<&(f64, f64, bool)> = run.per_ack.iter().filter(|a| a.2).collect();
        assert!(in_cwr.len() >= 3, "CWR lasts several ACKs: {}", in_cwr.len());
        let ssthresh = in_cwr[0].1;
        assert!((ssthresh - before / 2.0).abs() <= 1.0, "{before} -> ssthresh {ssthresh}");
        assert!(in_cwr.windows(2).all(|w| w[1].0 <= w[0].0 + 1e-9), "cwnd never grows in CWR");
        let first_open = run.per_ack.iter().skip_while(|a| !a.2).find(|a| !a.2).expect("CWR ends");
        assert!(first_open.0 >= ssthresh && first_open.0 <= ssthresh + 1.0, "ends at ssthresh: {first_open:?}");
    }
}
