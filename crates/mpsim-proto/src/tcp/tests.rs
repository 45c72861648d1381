//! Two endpoints wired back to back by a tiny deterministic pipe (the
//! quinn-proto `Pair` idea): fixed delay, optional loss by packet index.

use super::*;
use mpsim_cc::CaState;
use mpsim_core::{Addr, Packet, SimDuration, SimTime, TcpFlags};
use std::collections::VecDeque;

/// Decides, from the packet index and header, whether the wire loses it.
type DropRule = Box<dyn FnMut(u64, &Packet) -> bool>;

struct Pair {
    now: SimTime,
    client: TcpConnection,
    server: Option<TcpConnection>,
    cfg: TcpConfig,
    /// (arrival, to_server, packet)
    wire: VecDeque<(SimTime, bool, Packet)>,
    delay: SimDuration,
    sent: u64,
    drop: DropRule,
    delivered_to_client: u64,
    delivered_to_server: u64,
    client_events: Vec<AppEvent>,
    server_events: Vec<AppEvent>,
    /// Serialisation gap between packets of one direction (a crude rate).
    gap: SimDuration,
    next_free: [SimTime; 2],
    /// Packets handed to the client.
    client_rx: u64,
    /// Data segments the client sent (lost ones included).
    client_data_segs: u64,
    /// Every packet put on the wire (lost ones included), with its time.
    wire_log: Vec<(SimTime, Packet)>,
}

impl Pair {
    fn new(cfg: TcpConfig, cc: &str) -> Self {
        let client = TcpConnection::connect(cfg, cc, (Addr(1), 40000), (Addr(2), 80)).unwrap();
        Pair {
            now: SimTime::ZERO,
            client,
            server: None,
            cfg,
            wire: VecDeque::new(),
            delay: SimDuration::from_millis(10),
            sent: 0,
            drop: Box::new(|_, _| false),
            delivered_to_client: 0,
            delivered_to_server: 0,
            client_events: vec![],
            server_events: vec![],
            gap: SimDuration::from_micros(100),
            next_free: [SimTime::ZERO; 2],
            client_rx: 0,
            client_data_segs: 0,
            wire_log: vec![],
        }
    }

    fn flush(&mut self) {
        while let Some(p) = self.client.poll_transmit(self.now) {
            self.put(true, p);
        }
        if let Some(s) = self.server.as_mut() {
            let mut out = vec![];
            while let Some(p) = s.poll_transmit(self.now) {
                out.push(p);
            }
            for p in out {
                self.put(false, p);
            }
        }
        while let Some(e) = self.client.poll_event() {
            if let AppEvent::Delivered { bytes } = e {
                self.delivered_to_client += bytes;
            }
            self.client_events.push(e);
        }
        if let Some(s) = self.server.as_mut() {
            while let Some(e) = s.poll_event() {
                if let AppEvent::Delivered { bytes } = e {
                    self.delivered_to_server += bytes;
                }
                self.server_events.push(e);
            }
        }
    }

    fn put(&mut self, to_server: bool, p: Packet) {
        let i = self.sent;
        self.sent += 1;
        self.client_data_segs += (to_server && p.payload_bytes > 0) as u64;
        self.wire_log.push((self.now, p));
        if (self.drop)(i, &p) {
            return;
        }
        let lane = to_server as usize;
        let start = self.next_free[lane].max(self.now);
        self.next_free[lane] = start + self.gap;
        let at = start + self.gap + self.delay;
        let pos = self.wire.partition_point(|(t, _, _)| *t <= at);
        self.wire.insert(pos, (at, to_server, p));
    }

    fn next_time(&self) -> Option<SimTime> {
        let mut t = self.wire.front().map(|w| w.0);
        for d in [self.client.poll_timeout(), self.server.as_ref().and_then(|s| s.poll_timeout())].into_iter().flatten() {
            t = Some(t.map_or(d, |x| x.min(d)));
        }
        t
    }

    fn step(&mut self) -> bool {
        self.flush();
        let Some(t) = self.next_time() else { return false };
        self.now = t;
        if self.wire.front().is_some_and(|w| w.0 <= t) {
            let (_, to_server, p) = self.wire.pop_front().unwrap();
            if to_server {
                if self.server.is_none() {
                    self.server = Some(TcpConnection::accept(self.cfg, "reno", &p).unwrap());
                }
                self.server.as_mut().unwrap().handle_segment(t, &p);
            } else {
                self.client_rx += 1;
                self.client.handle_segment(t, &p);
            }
        }
        if self.client.poll_timeout().is_some_and(|d| d <= t) {
            self.client.handle_timeout(t);
        }
        if let Some(s) = self.server.as_mut() {
            if s.poll_timeout().is_some_and(|d| d <= t) {
                s.handle_timeout(t);
            }
        }
        true
    }

    fn run_until(&mut self, end: SimTime) {
        while self.now < end && self.step() {}
    }

    /// Runs to `end`, returning what the client did on each ACK it handled
    /// in fast recovery (the ACKs that begin and end an episode included).
    fn run_recording_recovery(&mut self, end: SimTime) -> Vec<RecoveryAck> {
        let mut acks = vec![];
        while self.now < end {
            self.flush();
            let (rx, segs, before) = (self.client_rx, self.client_data_segs, *self.client.cc());
            if !self.step() {
                break;
            }
            // Send the reply now, so it is counted against this ACK.
            self.flush();
            let cc = self.client.cc();
            let in_recovery = |s: CaState| s == CaState::Recovery;
            if self.client_rx > rx && (in_recovery(before.ca_state) || in_recovery(cc.ca_state)) {
                acks.push(RecoveryAck {
                    entered: !in_recovery(before.ca_state),
                    exited: !in_recovery(cc.ca_state),
                    sent_segs: self.client_data_segs - segs,
                    pipe_pkts: self.client.sf.bytes_in_flight() as f64 / self.client.sf.cfg().mss_bytes as f64,
                    cwnd_before_pkts: before.cwnd_pkts,
                    cwnd_pkts: cc.cwnd_pkts,
                    ssthresh_pkts: cc.ssthresh_pkts,
                });
            }
        }
        acks
    }
}

/// What the client did on one ACK during fast recovery.
#[derive(Clone, Copy, Debug)]
struct RecoveryAck {
    /// This ACK began the episode.
    entered: bool,
    /// This ACK ended it.
    exited: bool,
    /// Data segments sent in reply, retransmissions included.
    sent_segs: u64,
    /// Pipe after the reply.
    pipe_pkts: f64,
    cwnd_before_pkts: f64,
    cwnd_pkts: f64,
    ssthresh_pkts: f64,
}

fn upload(bytes: u64, cfg: TcpConfig) -> Pair {
    let mut p = Pair::new(cfg, "reno");
    p.client.send(bytes);
    p.client.close();
    p
}

#[test]
fn handshake_then_transfer_then_fin() {
    let mut p = upload(100_000, TcpConfig::default());
    p.run_until(SimTime::from_secs_f64(10.0));
    assert_eq!(p.delivered_to_server, 100_000);
    assert!(p.client_events.contains(&AppEvent::Connected));
    assert!(p.client_events.contains(&AppEvent::SendComplete));
    assert!(p.server_events.contains(&AppEvent::PeerClosed));
    assert_eq!(p.client.sf.stats.retransmitted_segs, 0);
    // srtt ~ 20 ms plus serialisation gaps
    let srtt = p.client.sf.rtt.srtt.unwrap().as_secs_f64();
    assert!(srtt > 0.019 && srtt < 0.03, "{srtt}");
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto() {
    let mut p = upload(10_000, TcpConfig::default());
    p.drop = Box::new(|i, _| i == 0);
    p.run_until(SimTime::from_secs_f64(5.0));
    assert_eq!(p.delivered_to_server, 10_000);
}

#[test]
fn single_loss_is_repaired_by_fast_retransmit_with_sack() {
    let mut p = upload(500_000, TcpConfig::default());
    p.drop = Box::new(|i, pk| i == 30 && pk.payload_bytes > 0);
    p.run_until(SimTime::from_secs_f64(10.0));
    assert_eq!(p.delivered_to_server, 500_000);
    assert_eq!(p.client.sf.stats.timeouts, 0);
    assert_eq!(p.client.sf.stats.fast_recoveries, 1);
    assert_eq!(p.client.sf.stats.retransmitted_segs, 1);
}

#[test]
fn newreno_repairs_two_losses_in_one_window_without_timeout() {
    let cfg = TcpConfig { sack: false, ..Default::default() };
    let mut p = upload(500_000, cfg);
    p.drop = Box::new(|i, pk| (i == 30 || i == 34) && pk.payload_bytes > 0);
    p.run_until(SimTime::from_secs_f64(10.0));
    assert_eq!(p.delivered_to_server, 500_000);
    assert_eq!(p.client.sf.stats.timeouts, 0);
    assert_eq!(p.client.sf.stats.fast_recoveries, 1);
    assert_eq!(p.client.sf.stats.retransmitted_segs, 2);
}

#[test]
fn a_blackout_is_survived_by_rto_with_backoff() {
    let mut p = upload(300_000, TcpConfig::default());
    // Everything sent between 100 and 1500 ms is lost.
    let now = std::rc::Rc::new(std::cell::Cell::new(SimTime::ZERO));
    let n2 = now.clone();
    p.drop = Box::new(move |_, _| {
        let t = n2.get().as_secs_f64();
        t > 0.1 && t < 1.5
    });
    while p.now < SimTime::from_secs_f64(30.0) {
        now.set(p.now);
        if !p.step() {
            break;
        }
    }
    assert_eq!(p.delivered_to_server, 300_000);
    assert!(p.client.sf.stats.timeouts >= 2, "{:?}", p.client.sf.stats);
}

#[test]
fn delayed_ack_halves_the_ack_count() {
    let mut p = upload(1_448_000, TcpConfig::default());
    p.run_until(SimTime::from_secs_f64(10.0));
    let acks_from_server = p.sent - (1000 + 3); // roughly: total minus data, SYN, ACK, FIN
    assert!(acks_from_server < 600, "{acks_from_server}");
    let mut q = upload(1_448_000, TcpConfig { delayed_ack: false, ..Default::default() });
    q.run_until(SimTime::from_secs_f64(10.0));
    assert!(q.sent - 1003 > 950, "{}", q.sent);
}

#[test]
fn receive_window_limits_the_sender() {
    let cfg = TcpConfig { rcvbuf_bytes: 4 * 1448, ..Default::default() };
    let mut p = upload(200_000, cfg);
    p.drop = Box::new(|i, pk| i == 12 && pk.payload_bytes > 0);
    p.run_until(SimTime::from_secs_f64(20.0));
    assert_eq!(p.delivered_to_server, 200_000);
}

#[test]
fn download_direction_works_too() {
    let mut p = Pair::new(TcpConfig::default(), "reno");
    p.run_until(SimTime::from_secs_f64(0.05));
    let s = p.server.as_mut().unwrap();
    s.send(50_000);
    s.close();
    p.run_until(SimTime::from_secs_f64(5.0));
    assert_eq!(p.delivered_to_client, 50_000);
    assert!(p.client_events.contains(&AppEvent::PeerClosed));
}

#[test]
fn newreno_limited_transmit_sends_new_data_on_the_first_dupacks() {
    let cfg = TcpConfig { sack: false, delayed_ack: false, initial_cwnd_pkts: 3, ..Default::default() };
    let mut p = upload(20 * 1448, cfg);
    // Lose the first data segment: with a window of 3, only 2 dupACKs can
    // come back, and limited transmit adds the segments that make them.
    let mut dropped = false;
    p.drop = Box::new(move |_, pk| {
        let hit = !dropped && pk.payload_bytes > 0 && pk.seq == 1;
        dropped |= hit;
        hit
    });
    p.run_until(SimTime::from_secs_f64(5.0));
    assert_eq!(p.delivered_to_server, 20 * 1448);
    assert_eq!(p.client.sf.stats.timeouts, 0, "{:?}", p.client.sf.stats);
}

/// Linux mode with PRR, one ACK per segment (each ACK then delivers one packet).
fn linux_prr() -> TcpConfig {
    TcpConfig { cc_mode: CcMode::Linux, prr: true, delayed_ack: false, ..Default::default() }
}

/// Loses the first transmission of the data segments numbered in `segs` (0 is the first).
fn lose_first_sends(segs: Vec<u64>) -> DropRule {
    let (mut lost, mut mss) = (vec![], None);
    Box::new(move |_, pk| {
        if pk.payload_bytes == 0 {
            return false;
        }
        // Only data segments are numbered, in full segments (the first one's size).
        let n = pk.seq.saturating_sub(1) / *mss.get_or_insert(pk.payload_bytes as u64);
        let hit = segs.contains(&n) && !lost.contains(&n);
        if hit {
            lost.push(n);
        }
        hit
    })
}

/// The recovery ACKs of an upload of 2 MB losing `segs` once.
fn recovery_of(cfg: TcpConfig, segs: Vec<u64>) -> (Pair, Vec<RecoveryAck>) {
    let mut p = upload(2_000_000, cfg);
    p.drop = lose_first_sends(segs);
    let acks = p.run_recording_recovery(SimTime::from_secs_f64(20.0));
    assert_eq!(p.delivered_to_server, 2_000_000);
    assert_eq!(p.client.sf.stats.timeouts, 0, "{:?}", p.client.sf.stats);
    assert_eq!(p.client.sf.stats.fast_recoveries, 1, "{:?}", p.client.sf.stats);
    (p, acks)
}

#[test]
fn prr_sends_ssthresh_over_prior_cwnd_of_what_is_delivered() {
    let (_, acks) = recovery_of(linux_prr(), vec![60]);
    let entry = acks[0];
    assert!(entry.entered);
    let (prior, ss) = (entry.cwnd_before_pkts, entry.ssthresh_pkts);
    assert!(prior >= 40.0 && ss <= prior / 2.0, "{entry:?}");
    // No burst: the ACK that starts recovery sends the retransmission only.
    assert_eq!(entry.sent_segs, 1);
    // Every ACK delivers one packet, so after k ACKs PRR has sent ceil(ss·k/prior).
    let mut out = 0;
    for (k, a) in acks.iter().take_while(|a| !a.exited && a.pipe_pkts > ss).enumerate() {
        out += a.sent_segs;
        assert_eq!(out as f64, (ss * (k + 1) as f64 / prior).ceil(), "ACK {k}: {a:?}");
    }
}

#[test]
fn prr_brings_the_pipe_to_ssthresh_and_recovery_ends_at_ssthresh() {
    let (_, acks) = recovery_of(linux_prr(), vec![60]);
    let (last_in, exit) = (acks[acks.len() - 2], acks[acks.len() - 1]);
    assert!(exit.exited && !last_in.exited);
    assert_eq!(acks.iter().filter(|a| a.exited).count(), 1);
    let ss = exit.ssthresh_pkts;
    assert!((last_in.pipe_pkts - ss).abs() <= 1.0, "{last_in:?}");
    assert_eq!(exit.cwnd_pkts, ss);
}

#[test]
fn prr_repairs_several_losses_in_one_window_without_bursts() {
    let (p, acks) = recovery_of(linux_prr(), vec![60, 64, 70, 71]);
    assert_eq!(p.client.sf.stats.retransmitted_segs, 4);
    assert_eq!(acks[0].sent_segs, 1);
    // Each ACK delivers one packet: PRR-SSRB sends at most one more than that.
    assert!(acks.iter().all(|a| a.sent_segs <= 2), "{acks:?}");
    let exit = acks.last().unwrap();
    assert!(exit.exited);
    assert_eq!(exit.cwnd_pkts, exit.ssthresh_pkts);
}

#[test]
fn prr_regrows_by_slow_start_after_losing_most_of_a_window() {
    let lost: Vec<u64> = (60..110).collect();
    let (_, prr) = recovery_of(linux_prr(), lost.clone());
    let ss = prr[0].ssthresh_pkts;
    assert!(prr[0].pipe_pkts < ss, "{:?}", prr[0]);
    // One packet per ACK while losses are still found, two per ACK (slow
    // start) once ACKs advance, until the pipe is back at ssthresh.
    assert!(prr.iter().all(|a| a.sent_segs <= 2), "{prr:?}");
    assert!(prr.iter().any(|a| a.sent_segs == 2), "{prr:?}");
    assert_eq!(prr[prr.len() - 2].pipe_pkts, ss);
    // RFC 6675 alone fills the window to ssthresh at once.
    let reference = TcpConfig { delayed_ack: false, ..Default::default() };
    let (_, rfc) = recovery_of(reference, lost);
    assert!(rfc[0].sent_segs > 10, "{:?}", rfc[0]);
}

#[test]
fn without_prr_the_window_is_ssthresh_for_the_whole_episode() {
    let reference = TcpConfig { delayed_ack: false, ..Default::default() };
    let (_, acks) = recovery_of(reference, vec![60, 64]);
    assert_eq!(acks[0].sent_segs, 1);
    assert!(acks.iter().all(|a| a.cwnd_pkts == a.ssthresh_pkts), "{acks:?}");
    let linux_no_prr = TcpConfig { prr: false, ..linux_prr() };
    let (_, acks) = recovery_of(linux_no_prr, vec![60, 64]);
    assert!(acks.iter().all(|a| a.cwnd_pkts == a.ssthresh_pkts), "{acks:?}");
}

#[test]
fn prr_delivers_exactly_the_bytes_sent_under_random_loss() {
    for seed in 1..=20u64 {
        for (delayed_ack, rack) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut p = upload(1_000_000, TcpConfig { delayed_ack, rack, ..linux_prr() });
            // A small LCG: 3 % of packets lost, both directions.
            let mut x = seed;
            p.drop = Box::new(move |_, _| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % 100 < 3
            });
            p.run_until(SimTime::from_secs_f64(300.0));
            assert_eq!(p.delivered_to_server, 1_000_000, "seed {seed} rack {rack}: {}", p.client.sf.debug_line());
            assert!(p.client_events.contains(&AppEvent::SendComplete), "seed {seed} rack {rack}");
        }
    }
}

/// A sender of a lossy upload (3 % of packets lost) that stops writing at
/// `at_s`, 15 ms later: the ACKs then arriving leave room in its window.
fn stopped_sender(seed: u64, at_s: f64) -> Pair {
    let mut p = upload(2_000_000, TcpConfig::default());
    let mut x = seed;
    p.drop = Box::new(move |_, _| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % 100 < 3
    });
    p.run_until(SimTime::from_secs_f64(at_s));
    p.client.pause();
    p.run_until(SimTime::from_secs_f64(at_s + 0.015));
    p
}

#[test]
fn full_segments_with_room_counts_what_has_send_room_accepts_one_by_one() {
    let mss = TcpConfig::default().mss_bytes as u64;
    let mut checked_nonzero = 0;
    for seed in 1..=10u64 {
        for at_s in [0.05, 0.3, 1.0, 2.5] {
            let mut p = stopped_sender(seed, at_s);
            p.client.sf.set_advertised_window(None);
            let cc = *p.client.cc();
            let n = p.client.sf.full_segments_with_room(&cc);
            checked_nonzero += (n > 0) as u32;
            for i in 0..=n {
                assert_eq!(p.client.sf.has_send_room(&cc, mss), i < n, "seed {seed} at {at_s} s: segment {i} of {n}");
                p.client.sf.send_segment(mss, i);
            }
        }
    }
    // Acknowledgements in flight leave room at some of these instants.
    assert!(checked_nonzero > 0);
}

#[test]
fn a_cheap_empty_poll_agrees_with_a_full_one() {
    let mut empty = 0;
    for seed in 1..=10u64 {
        for at_s in [0.05, 0.3, 1.0, 2.5, 9.0] {
            let mut p = stopped_sender(seed, at_s);
            let now = p.now;
            let cc = *p.client.cc();
            if p.client.sf.poll_nothing_due(&cc) {
                empty += 1;
                assert!(p.client.poll_transmit(now).is_none(), "seed {seed} at {at_s} s: {}", p.client.sf.debug_line());
            }
            // Written data not yet sent is always due.
            p.client.sf.send_segment(100, 0);
            assert!(!p.client.sf.poll_nothing_due(&cc) || !p.client.sf.has_send_room(&cc, 100));
        }
    }
    assert!(empty > 0);
}

/// Who closes first in a closing-sequence test.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Closer {
    Client,
    Server,
    Both,
}

/// Which closing packet the wire loses, once.
#[derive(Clone, Copy, Debug)]
enum CloseLoss {
    None,
    /// The first FIN sent by the client (true) or the server (false).
    Fin(bool),
    /// The first pure ACK that acknowledges the other side's FIN, sent by
    /// the client (true) or the server (false).
    FinAck(bool),
}

fn is_client_pkt(p: &Packet) -> bool {
    p.src == Addr(1)
}

fn close_loss_rule(loss: CloseLoss) -> DropRule {
    let mut done = false;
    // The sequence number right after each side's FIN: [server, client].
    let mut fin_end: [Option<u64>; 2] = [None, None];
    Box::new(move |_, p| {
        let from_client = is_client_pkt(p);
        let fin = p.flags.has(TcpFlags::FIN);
        if fin {
            fin_end[from_client as usize] = Some(p.seq + p.payload_bytes as u64 + 1);
        }
        if done {
            return false;
        }
        let hit = match loss {
            CloseLoss::None => false,
            CloseLoss::Fin(c) => fin && from_client == c,
            CloseLoss::FinAck(c) => {
                from_client == c && !fin && p.payload_bytes == 0 && fin_end[!c as usize].is_some_and(|e| p.ack >= e)
            }
        };
        done = hit;
        hit
    })
}

/// Runs a transfer both ways that ends with `closer` closing first while
/// the wire loses `loss`; the other side closes when it learns of the
/// peer's FIN, as an application does. Returns the pair and the time of
/// the last packet put on the wire.
fn closing_sequence(closer: Closer, loss: CloseLoss, cfg: TcpConfig) -> (Pair, SimTime) {
    let mut p = Pair::new(cfg, "reno");
    p.drop = close_loss_rule(loss);
    p.client.send(20_000);
    if closer != Closer::Server {
        p.client.close();
    }
    let (mut server_closed, mut client_closed) = (false, false);
    while p.now < SimTime::from_secs_f64(300.0) {
        if !p.step() {
            break;
        }
        if let (Some(s), false) = (p.server.as_mut(), server_closed) {
            if closer != Closer::Client || p.server_events.contains(&AppEvent::PeerClosed) {
                s.send(7_000);
                s.close();
                server_closed = true;
            }
        }
        if closer == Closer::Server && !client_closed && p.client_events.contains(&AppEvent::PeerClosed) {
            p.client.close();
            client_closed = true;
        }
        p.flush();
    }
    let last_put = p.wire_log.last().map_or(SimTime::ZERO, |w| w.0);
    (p, last_put)
}

fn assert_closed_cleanly(closer: Closer, loss: CloseLoss, time_wait: SimDuration) {
    let cfg = TcpConfig { time_wait, ..Default::default() };
    let (p, last_put) = closing_sequence(closer, loss, cfg);
    let s = p.server.as_ref().unwrap();
    let what = format!("{closer:?} {loss:?}: client {} / server {}", p.client.sf.debug_line(), s.sf.debug_line());
    assert_eq!(p.delivered_to_server, 20_000, "{what}");
    assert_eq!(p.delivered_to_client, 7_000, "{what}");
    assert_eq!(p.client.sf.state, TcpState::Closed, "{what}");
    assert_eq!(s.sf.state, TcpState::Closed, "{what}");
    assert!(p.client.poll_timeout().is_none() && s.poll_timeout().is_none(), "{what}");
    // Nothing is sent once the side that closed first has left TIME_WAIT,
    // which it does time_wait after its last packet at the latest.
    assert!(last_put < SimTime::from_secs_f64(5.0), "last packet at {last_put:?}; {what}");
    // Without loss nothing is sent twice; a lost ACK of a FIN may also have
    // been the only ACK of the data segment sent just before that FIN.
    let lost = !matches!(loss, CloseLoss::None) as u64;
    let rtx = p.client.sf.stats.retransmitted_segs + s.sf.stats.retransmitted_segs;
    assert!(rtx <= 2 * lost, "{rtx} retransmissions; {what}");
}

#[test]
fn every_closing_sequence_ends_with_both_sides_closed() {
    let losses =
        [CloseLoss::None, CloseLoss::Fin(true), CloseLoss::Fin(false), CloseLoss::FinAck(true), CloseLoss::FinAck(false)];
    for closer in [Closer::Client, Closer::Server, Closer::Both] {
        for loss in losses {
            assert_closed_cleanly(closer, loss, SimDuration::from_secs(60));
            assert_closed_cleanly(closer, loss, SimDuration::from_secs(3));
        }
    }
}

#[test]
fn the_first_closer_waits_in_time_wait_and_acknowledges_a_repeated_fin() {
    let cfg = TcpConfig { time_wait: SimDuration::from_secs(60), ..Default::default() };
    // The client's ACK of the server's FIN is lost: the server repeats its
    // FIN, and the client, in TIME_WAIT, acknowledges it again.
    let (p, _) = closing_sequence(Closer::Client, CloseLoss::FinAck(true), cfg);
    let server_fins: Vec<_> = p.wire_log.iter().filter(|(_, q)| !is_client_pkt(q) && q.flags.has(TcpFlags::FIN)).collect();
    assert_eq!(server_fins.len(), 2);
    let (repeated_at, fin) = *server_fins[1];
    let fin_end = fin.seq + fin.payload_bytes as u64 + 1;
    assert!(p.wire_log.iter().any(|(t, q)| *t >= repeated_at && is_client_pkt(q) && q.ack == fin_end));
    let mut q = Pair::new(cfg, "reno");
    q.client.send(1_000);
    q.client.close();
    let mut entered = None;
    while q.now < SimTime::from_secs_f64(100.0) && q.step() {
        if let Some(s) = q.server.as_mut() {
            if q.server_events.contains(&AppEvent::PeerClosed) && s.sf.state == TcpState::CloseWait {
                s.close();
            }
        }
        if entered.is_none() && q.client.sf.state == TcpState::TimeWait {
            entered = Some(q.now);
        }
    }
    let entered = entered.expect("the client passes through TIME_WAIT");
    assert_eq!(q.client.sf.state, TcpState::Closed);
    assert_eq!(q.server.as_ref().unwrap().sf.state, TcpState::Closed);
    assert!(q.client_events.iter().all(|e| *e != AppEvent::Failed));
    assert!(entered < SimTime::from_secs_f64(1.0), "{entered:?}");
}

#[test]
fn pure_acks_carry_snd_nxt() {
    let (p, _) = closing_sequence(Closer::Client, CloseLoss::None, TcpConfig::default());
    for from_client in [true, false] {
        // SND.NXT after the SYN, each data segment and the FIN, in order.
        let mut snd_nxt = 0;
        let mut acks = 0;
        for (_, q) in p.wire_log.iter().filter(|(_, q)| is_client_pkt(q) == from_client) {
            let f = q.flags;
            let seq_len = q.payload_bytes as u64 + f.has(TcpFlags::SYN) as u64 + f.has(TcpFlags::FIN) as u64;
            if seq_len == 0 {
                assert_eq!(q.seq, snd_nxt, "from client {from_client}: {q:?}");
                acks += 1;
            }
            snd_nxt = snd_nxt.max(q.seq + seq_len);
        }
        assert!(acks > 2, "{acks}");
    }
}

#[test]
fn a_fin_repeated_after_a_short_time_wait_is_answered_by_a_reset() {
    // TIME_WAIT shorter than the peer's RTO: the peer's repeated FIN finds
    // no connection and is reset, as in any stack (RFC 9293 3.10.7.1).
    let cfg = TcpConfig { time_wait: SimDuration::from_millis(100), ..Default::default() };
    let (p, _) = closing_sequence(Closer::Client, CloseLoss::FinAck(true), cfg);
    let s = p.server.as_ref().unwrap();
    assert_eq!(s.sf.state, TcpState::Closed);
    assert!(p.wire_log.iter().any(|(_, q)| is_client_pkt(q) && q.flags.has(TcpFlags::RST)));
    assert!(p.server_events.contains(&AppEvent::Failed));
    assert_eq!(p.delivered_to_client, 7_000);
}

/// A client that completed its handshake with a peer of ISN 0 and sends
/// without end, with its first window out; returns it and that window's
/// segments.
fn sending_client(cfg: TcpConfig, cc: &str) -> (TcpConnection, Vec<Packet>) {
    sending_client_at(cfg, cc, SimTime::from_secs_f64(0.02))
}

/// `sending_client` whose SYN/ACK arrives at `t`.
fn sending_client_at(cfg: TcpConfig, cc: &str, t: SimTime) -> (TcpConnection, Vec<Packet>) {
    let mut c = TcpConnection::connect(cfg, cc, (Addr(1), 40000), (Addr(2), 80)).unwrap();
    let syn = c.poll_transmit(SimTime::ZERO).unwrap();
    let mut syn_ack = rst_reply(&syn, 66);
    syn_ack.flags = TcpFlags(TcpFlags::SYN | TcpFlags::ACK);
    syn_ack.ts = syn.ts.map(|t| mpsim_core::Timestamps { val_ms: 5, ecr_ms: t.val_ms });
    syn_ack.wnd_bytes = 1 << 30;
    c.handle_segment(t, &syn_ack);
    c.send_unlimited();
    let mut out = vec![];
    c.drain_transmit(t, &mut out);
    (c, out)
}

/// An ACK from the peer of `sending_client`.
fn ack_of(ack: u64, sack: &[(u64, u64)]) -> Packet {
    let mut p = Packet {
        src: Addr(2),
        dst: Addr(1),
        sport: 80,
        dport: 40000,
        flags: TcpFlags(TcpFlags::ACK),
        seq: 1,
        ack,
        wnd_bytes: 1 << 30,
        wire_bytes: 66,
        ..Default::default()
    };
    for &b in sack.iter().take(3) {
        p.sack.push(b.0, b.1);
    }
    p
}

#[test]
fn newreno_restarts_the_timer_on_the_first_partial_ack_only() {
    // 100 holes in one window: one repair per RTT would take 100 RTTs (2 s);
    // RFC 6582's Impatient variant lets the timer fire instead.
    let cfg = TcpConfig {
        sack: false,
        delayed_ack: false,
        initial_cwnd_pkts: 300,
        min_rto: SimDuration::from_millis(200),
        ..Default::default()
    };
    let mut p = upload(300 * 1448, cfg);
    p.drop = lose_first_sends((0..100).map(|k| 2 * k + 1).collect());
    p.run_until(SimTime::from_secs_f64(1.0));
    assert_eq!(p.delivered_to_server, 300 * 1448, "{}", p.client.sf.debug_line());
    assert_eq!(p.client.sf.stats.timeouts, 1);
}

#[test]
fn a_fast_retransmission_restarts_the_timer() {
    for cfg in [TcpConfig { delayed_ack: false, ..Default::default() }, TcpConfig { delayed_ack: false, ..linux_prr() }] {
        let mut p = upload(200 * 1448, cfg);
        p.drop = lose_first_sends(vec![20]);
        let mut checked = false;
        loop {
            let before = p.client.cc().ca_state;
            if p.now >= SimTime::from_secs_f64(2.0) || !p.step() {
                break;
            }
            p.flush();
            if before != CaState::Recovery && p.client.cc().ca_state == CaState::Recovery && !checked {
                let rto = p.client.sf.rtt.rto();
                assert_eq!(p.client.poll_timeout(), Some(p.now + rto), "{:?}", cfg.cc_mode);
                checked = true;
            }
        }
        assert!(checked);
        assert_eq!(p.delivered_to_server, 200 * 1448);
        assert_eq!(p.client.sf.stats.timeouts, 0);
    }
}

#[test]
fn entering_recovery_never_raises_the_window() {
    // Segments sent beyond the window while SACKs free the pipe are not
    // part of the FlightSize a loss halves (RFC 3042).
    let (mut c, first) = sending_client(TcpConfig::default(), "reno");
    assert_eq!(first.len(), 10);
    let mss = first[0].payload_bytes as u64;
    // SACKs for segments 1.. arrive one by one; segment 0 is lost.
    let mut now = SimTime::from_secs_f64(0.04);
    for k in 1..4u64 {
        let cwnd_before = c.cc().cwnd_pkts;
        c.handle_segment(now, &ack_of(1, &[(1 + mss, 1 + (k + 1) * mss)]));
        let mut out = vec![];
        c.drain_transmit(now, &mut out);
        assert!(c.cc().cwnd_pkts <= cwnd_before, "{} > {cwnd_before}", c.cc().cwnd_pkts);
        now += SimDuration::from_micros(10);
    }
    assert_eq!(c.cc().ca_state, CaState::Recovery);
    assert_eq!(c.cc().ssthresh_pkts, 5.0);
}

#[test]
fn a_timeout_in_recovery_halves_the_outstanding_data_not_the_pipe() {
    for (cfg, expected) in [(TcpConfig::default(), 2.5), (linux_prr(), 5.0)] {
        let (mut c, _) = sending_client(cfg, "reno");
        let mss = c.sf.cfg().mss_bytes as u64;
        c.handle_segment(SimTime::from_secs_f64(0.04), &ack_of(1, &[(1 + mss, 1 + 4 * mss)]));
        assert_eq!(c.cc().ca_state, CaState::Recovery);
        assert_eq!(c.cc().ssthresh_pkts, 5.0);
        let rto_at = c.poll_timeout().unwrap();
        c.handle_timeout(rto_at);
        assert_eq!(c.sf.stats.timeouts, 1);
        // Reference (RFC 5681 (4)): half the FlightSize, capped by the
        // window (5 packets in recovery); linux keeps the episode's
        // threshold (tcp_enter_loss).
        assert_eq!(c.cc().ssthresh_pkts, expected, "{:?}", cfg.cc_mode);
    }
}

#[test]
fn controllers_get_the_rtt_of_the_newest_acknowledged_segment() {
    let (mut c, first) = sending_client_at(TcpConfig::default(), "vegas", SimTime::from_secs_f64(0.1));
    let mss = first[0].payload_bytes as u64;
    assert!(first.len() >= 2);
    // The first window was sent at 100 ms; what the first ACK (a 60 ms
    // sample) lets out goes at 160 ms.
    let t1 = SimTime::from_secs_f64(0.16);
    c.handle_segment(t1, &ack_of(1 + mss, &[]));
    let mut out = vec![];
    c.drain_transmit(t1, &mut out);
    assert!(!out.is_empty());
    let sent_at_160ms = out[0].seq;
    // One ACK covers the rest of the first window and a segment sent at 160 ms.
    let t2 = SimTime::from_secs_f64(0.21);
    c.handle_segment(t2, &ack_of(sent_at_160ms + mss, &[]));
    // The RTO estimator got 110 ms (the oldest newly acknowledged, sent at
    // 100 ms), the minimum RTT and the controller 50 ms (the newest, sent
    // at 160 ms: Linux `tcp_update_rtt_min` takes `ca_rtt_us`).
    assert_eq!(c.sf.rtt.latest, Some(SimDuration::from_millis(110)));
    assert_eq!(c.cc().min_rtt, Some(SimDuration::from_millis(50)));
}

/// One ACK of the window-growth property: the cumulative point and up to
/// three SACK blocks, all in segments above the sender's current state.
#[derive(Clone, Debug)]
struct RandomAck {
    cum_segs: u64,
    blocks: Vec<(u64, u64)>,
}

fn random_ack() -> impl proptest::strategy::Strategy<Value = RandomAck> {
    use proptest::prelude::*;
    (0u64..4, proptest::collection::vec((0u64..40, 1u64..6), 0..4)).prop_map(|(cum_segs, blocks)| RandomAck { cum_segs, blocks })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

    /// No ACK raises the window by more than the segments it newly
    /// delivers (cumulatively acknowledged and not SACKed before, or newly
    /// SACKed). Two rules of recovery set the window otherwise: the ACK
    /// that ends an episode may set it to ssthresh (RFC 6675, Linux
    /// `tcp_end_cwnd_reduction`), never above; and within a PRR episode
    /// the window is the pipe plus what RFC 6937 lets out, which catches up
    /// with the episode's deliveries as a whole rather than this ACK's
    /// (the PRR unit tests check that rule). NewReno's dupACK
    /// inflation (RFC 5681) is temporary by design and left out: every
    /// configuration here uses SACK.
    #[test]
    fn no_ack_raises_cwnd_by_more_than_it_newly_delivers(
        acks in proptest::collection::vec(random_ack(), 1..120),
        linux in proptest::bool::ANY,
        cc_idx in 0usize..3,
    ) {
        let cc = ["reno", "cubic", "vegas"][cc_idx];
        let cfg = if linux { TcpConfig { rack: cc_idx != 1, ..linux_prr() } } else { TcpConfig::default() };
        let (mut c, first) = sending_client(cfg, cc);
        let mss = first[0].payload_bytes as u64;
        let seg_of = |seq: u64| (seq - 1) / mss;
        let mut highest = first.iter().map(|p| seg_of(p.seq) + 1).max().unwrap_or(0);
        let mut cum = 0u64; // segments cumulatively acknowledged
        let mut sacked = std::collections::BTreeSet::new();
        let mut now = SimTime::from_secs_f64(0.05);
        for a in acks {
            let new_cum = (cum + a.cum_segs).min(highest);
            let blocks: Vec<(u64, u64)> = a
                .blocks
                .iter()
                .map(|&(off, len)| (new_cum + 1 + off, new_cum + 1 + off + len))
                .filter(|&(_, e)| e <= highest)
                .collect();
            let before: std::collections::BTreeSet<u64> = (0..cum).chain(sacked.iter().copied()).collect();
            for &(s, e) in &blocks {
                sacked.extend(s..e);
            }
            sacked.retain(|&k| k >= new_cum);
            let after: std::collections::BTreeSet<u64> = (0..new_cum).chain(sacked.iter().copied()).collect();
            let newly = after.difference(&before).count() as f64;
            let seq_blocks: Vec<(u64, u64)> = blocks.iter().map(|&(s, e)| (1 + s * mss, 1 + e * mss)).collect();
            let before = *c.cc();
            let episodes_before = c.sf.stats.fast_recoveries;
            c.handle_segment(now, &ack_of(1 + new_cum * mss, &seq_blocks));
            let s = *c.cc();
            let began = c.sf.stats.fast_recoveries > episodes_before;
            let ended = before.ca_state == CaState::Recovery && (s.ca_state != CaState::Recovery || began);
            let mut bound = before.cwnd_pkts + newly;
            if ended {
                bound = bound.max(before.ssthresh_pkts);
            }
            if linux && (began || s.ca_state == CaState::Recovery) {
                bound = f64::INFINITY;
            }
            proptest::prop_assert!(
                s.cwnd_pkts <= bound + 1e-9,
                "cwnd {} -> {} with {} newly delivered ({:?} from {:?}, {} linux {})",
                before.cwnd_pkts, s.cwnd_pkts, newly, s.ca_state, before.ca_state, cc, linux
            );
            cum = new_cum;
            let mut out = vec![];
            c.drain_transmit(now, &mut out);
            highest = out.iter().filter(|p| p.payload_bytes > 0).map(|p| seg_of(p.seq) + 1).fold(highest, u64::max);
            now += SimDuration::from_millis(1);
        }
    }
}

#[test]
fn an_echoed_timestamp_gives_an_rtt_sample_where_karn_forbids_one() {
    for (timestamps, expected) in [(true, Some(SimDuration::from_millis(30))), (false, None)] {
        let cfg = TcpConfig { timestamps, ..linux_prr() };
        let (mut c, first) = sending_client(cfg, "reno");
        assert_eq!(first[0].ts.is_some(), timestamps);
        // The whole window times out; the head goes again at the RTO.
        let rto_at = c.poll_timeout().unwrap();
        c.handle_timeout(rto_at);
        let mut out = vec![];
        c.drain_transmit(rto_at, &mut out);
        let rtx = out[0];
        assert_eq!(rtx.seq, 1);
        let latest = c.sf.rtt.latest;
        // Its ACK, 30 ms later, echoes the retransmission's TSval.
        let mut ack = ack_of(1 + 1448, &[]);
        ack.ts = rtx.ts.map(|t| mpsim_core::Timestamps { val_ms: 7, ecr_ms: t.val_ms });
        c.handle_segment(rto_at + SimDuration::from_millis(30), &ack);
        let sample = c.sf.rtt.latest.filter(|_| c.sf.rtt.latest != latest);
        assert_eq!(sample, expected, "timestamps {timestamps}");
    }
}

#[test]
fn the_initial_ssthresh_is_infinite_unless_set() {
    let (c, _) = sending_client(TcpConfig::default(), "reno");
    assert!(c.cc().ssthresh_pkts > 1e9);
    // htsim's 15 packets: slow start ends there.
    let (mut c, first) = sending_client(TcpConfig { initial_ssthresh_pkts: Some(15), ..Default::default() }, "reno");
    assert_eq!(c.cc().ssthresh_pkts, 15.0);
    let mut now = SimTime::from_secs_f64(0.05);
    for k in 0..first.len() as u64 {
        c.handle_segment(now, &ack_of(1 + (k + 1) * 1448, &[]));
        let mut out = vec![];
        c.drain_transmit(now, &mut out);
        now += SimDuration::from_millis(1);
    }
    // Ten ACKs in slow start would reach 20 packets; the threshold stops it
    // at 15, and congestion avoidance adds a fraction.
    assert!(c.cc().cwnd_pkts >= 15.0 && c.cc().cwnd_pkts < 16.0, "{}", c.cc().cwnd_pkts);
}

/// The client's data segments of an upload of `bytes` with `cfg`, and
/// every packet either end sent.
fn upload_segments(bytes: u64, cfg: TcpConfig) -> (Vec<Packet>, Vec<Packet>) {
    let mut p = upload(bytes, cfg);
    p.run_until(SimTime::from_secs_f64(30.0));
    assert_eq!(p.delivered_to_server, bytes);
    let all: Vec<Packet> = p.wire_log.iter().map(|w| w.1).collect();
    let data = all.iter().filter(|q| q.src == Addr(1) && q.payload_bytes > 0).copied().collect();
    (data, all)
}

/// Every packet fits in the MTU: its wire bytes less the Ethernet header.
fn assert_within_mtu(packets: &[Packet], mtu_bytes: u32) {
    for q in packets {
        assert!(q.wire_bytes - mtu::ETHERNET_HEADER_BYTES <= mtu_bytes, "{} wire bytes: {q:?}", q.wire_bytes);
    }
}

#[test]
fn segments_fill_a_1500_byte_mtu_with_or_without_timestamps() {
    // Linux: 1460 payload bytes and 54 header bytes without timestamps,
    // 1448 and 66 with them; 1514-byte frames either way.
    for (timestamps, payload, header) in [(false, 1460, 54), (true, 1448, 66)] {
        let cfg = TcpConfig { timestamps, ..TcpConfig::default() };
        let (data, all) = upload_segments(100 * 1460, cfg);
        assert_eq!(data.iter().map(|q| q.payload_bytes).max(), Some(payload), "timestamps {timestamps}");
        for q in &data {
            assert_eq!(q.wire_bytes, q.payload_bytes + header + q.sack.option_bytes(), "timestamps {timestamps}");
        }
        assert_within_mtu(&all, 1500);
    }
}

#[test]
fn a_small_mtu_makes_small_segments_and_mss_caps_them() {
    let cfg = TcpConfig { mtu_bytes: 576, timestamps: true, ..TcpConfig::default() };
    let (data, all) = upload_segments(50_000, cfg);
    assert_eq!(data.iter().map(|q| q.payload_bytes).max(), Some(576 - 40 - 12));
    assert_within_mtu(&all, 576);
    // The configured mss caps the payload below what the MTU leaves.
    let cfg = TcpConfig { max_payload_bytes: 1000, timestamps: true, ..TcpConfig::default() };
    let (data, _) = upload_segments(50_000, cfg);
    assert_eq!(data.iter().map(|q| q.payload_bytes).max(), Some(1000));
}

#[test]
fn sack_blocks_on_a_data_segment_come_off_its_payload() {
    // Both ends send; the server's data loses segments, so the client's
    // data segments carry SACK blocks (Linux `tcp_current_mss` shrinks the
    // segment by their length).
    let cfg = TcpConfig { timestamps: true, ..TcpConfig::default() };
    let mut p = Pair::new(cfg, "reno");
    p.client.send(2_000_000);
    p.drop = Box::new(|i, q| q.src == Addr(2) && q.payload_bytes > 0 && i % 37 == 0);
    p.run_until(SimTime::from_secs_f64(0.05));
    p.server.as_mut().unwrap().send(2_000_000);
    p.run_until(SimTime::from_secs_f64(60.0));
    assert_eq!((p.delivered_to_server, p.delivered_to_client), (2_000_000, 2_000_000));
    let all: Vec<Packet> = p.wire_log.iter().map(|w| w.1).collect();
    assert_within_mtu(&all, 1500);
    let shrunk = all.iter().filter(|q| q.src == Addr(1) && q.payload_bytes > 0 && q.sack.len > 0);
    let mut n = 0;
    for q in shrunk {
        assert!(q.payload_bytes + q.sack.option_bytes() <= 1448, "{q:?}");
        n += (q.payload_bytes + q.sack.option_bytes() == 1448) as u32;
    }
    assert!(n > 0, "no full data segment carried SACK blocks");
}

/// An upload of `bytes` over the Pair's 20 ms RTT, about 116 Mbit/s pipe:
/// the largest window the server offered, and when the last byte arrived.
fn upload_window_and_time(bytes: u64, cfg: TcpConfig) -> (u64, u64, SimTime) {
    let mut p = upload(bytes, cfg);
    let mut done = None;
    while p.now < SimTime::from_secs_f64(60.0) && p.step() {
        if done.is_none() && p.delivered_to_server == bytes {
            done = Some(p.now);
        }
    }
    let from_server = || p.wire_log.iter().filter(|(_, pk)| pk.src == Addr(2)).map(|(_, pk)| pk.wnd_bytes);
    let first = from_server().next().unwrap_or(0);
    (first, from_server().max().unwrap_or(0), done.expect("the upload completes"))
}

#[test]
fn an_autotuned_receive_buffer_starts_at_64_kib_and_grows_with_the_transfer() {
    let auto = TcpConfig { rcvbuf_auto: true, ..TcpConfig::for_mode(mpsim_cc::CcMode::Linux) };
    let (first, max, t_auto) = upload_window_and_time(5_000_000, auto);
    // tcp_rmem[1] = 131,072 bytes of buffer offer half as window.
    assert_eq!(first, 65_536);
    // A bandwidth-delay product of about 290 KB: DRS grows the window well past it.
    assert!(max > 1_000_000, "largest window {max}");
    // The same 64 KiB fixed (SO_RCVBUF): the window stays and limits the rate.
    let fixed = TcpConfig { rcvbuf_bytes: 65_536, ..TcpConfig::for_mode(mpsim_cc::CcMode::Linux) };
    let (_, max_fixed, t_fixed) = upload_window_and_time(5_000_000, fixed);
    assert_eq!(max_fixed, 65_536);
    eprintln!("autotuned: largest window {max} bytes, {t_auto:?}; fixed 64 KiB: {t_fixed:?}");
    assert!(t_fixed.as_secs_f64() > 2.0 * t_auto.as_secs_f64(), "fixed {t_fixed:?}, autotuned {t_auto:?}");
}

/// Linux mode with PRR and RACK-TLP, one ACK per segment; 1448-byte
/// segments (as with timestamps) so that sequence numbers below are round.
fn linux_rack() -> TcpConfig {
    TcpConfig { rack: true, mss_bytes: 1448, max_payload_bytes: 1448, ..linux_prr() }
}

/// Loses the first `n` sends of data segment `seg` (0 is the first).
fn lose_sends_of(seg: u64, n: u32) -> DropRule {
    let mut lost = 0;
    Box::new(move |_, pk| {
        let hit = pk.payload_bytes > 0 && pk.seq.saturating_sub(1) / 1448 == seg && lost < n;
        lost += hit as u32;
        hit
    })
}

#[test]
fn rack_recovers_a_lost_retransmission_without_a_timeout() {
    // Segment 60 and its first retransmission are lost. RACK sees that
    // segments sent after the retransmission arrive and sends it again;
    // RFC 6675 (reference mode, or linux mode with RACK off) waits for the RTO.
    for (cfg, timeouts) in [
        (linux_rack(), 0),
        (TcpConfig { rack: false, ..linux_rack() }, 1),
        (TcpConfig { delayed_ack: false, rack: true, ..Default::default() }, 1),
    ] {
        let mut p = upload(2_000_000, cfg);
        p.drop = lose_sends_of(60, 2);
        p.run_until(SimTime::from_secs_f64(20.0));
        let what = format!("{:?} rack {}: {}", cfg.cc_mode, cfg.rack, p.client.sf.debug_line());
        assert_eq!(p.delivered_to_server, 2_000_000, "{what}");
        assert_eq!(p.client.sf.stats.timeouts, timeouts, "{what}");
        if timeouts == 0 {
            assert_eq!(p.client.sf.stats.fast_recoveries, 1, "{what}");
            assert_eq!(p.client.sf.stats.retransmitted_segs, 2, "{what}");
        }
    }
}

#[test]
fn rack_finds_a_lost_retransmission_by_its_send_time() {
    // In recovery (reordering window 0) a retransmission is lost as soon as
    // a segment sent after it is SACKed, and is due again at once.
    let (mut c, first) = sending_client(linux_rack(), "reno");
    let mss = 1448;
    assert_eq!(first.len(), 10);
    let t0 = SimTime::from_secs_f64(0.04);
    // Segment 0 lost; 1..4 SACKed: RACK marks 0 lost (3 SACKed, no reordering seen).
    c.handle_segment(t0, &ack_of(1, &[(1 + mss, 1 + 4 * mss)]));
    assert_eq!(c.cc().ca_state, CaState::Recovery);
    let mut out = vec![];
    c.drain_transmit(t0, &mut out);
    assert_eq!(out[0].seq, 1, "the fast retransmission");
    let t1 = t0 + SimDuration::from_millis(1);
    // New data sent after it (PRR lets some out as SACKs arrive).
    let mut after = vec![];
    for k in 4..9u64 {
        c.handle_segment(t1, &ack_of(1, &[(1 + mss, 1 + (k + 1) * mss)]));
        c.drain_transmit(t1, &mut after);
    }
    let later = after.iter().find(|p| p.payload_bytes > 0 && p.seq > 1).expect("new data after the retransmission").seq;
    assert_eq!(c.sf.stats.retransmitted_segs, 1);
    // A SACK of that later segment, 20 ms on: the retransmission is lost.
    let t2 = t1 + SimDuration::from_millis(20);
    c.handle_segment(t2, &ack_of(1, &[(1 + mss, 1 + 9 * mss), (later, later + mss)]));
    let mut again = vec![];
    c.drain_transmit(t2, &mut again);
    assert_eq!(again.first().map(|p| p.seq), Some(1), "{}", c.sf.debug_line());
    assert_eq!(c.sf.stats.retransmitted_segs, 2);
    assert_eq!(c.sf.stats.timeouts, 0);
}

#[test]
fn a_tail_loss_is_recovered_by_a_probe_not_a_timeout() {
    // The last two segments of a transfer are lost: no later segment can
    // reveal them. The probe resends the last; its SACK lets RACK find
    // the other. Without RACK-TLP the RTO repairs them.
    let n_segs = 100u64;
    for (rack, timeouts, probes) in [(true, 0, 1), (false, 1, 0)] {
        let mut p = Pair::new(TcpConfig { rack, ..linux_prr() }, "reno");
        p.client.send(n_segs * 1448);
        p.drop = Box::new(move |_, pk| {
            let seg = pk.seq.saturating_sub(1) / 1448;
            pk.payload_bytes > 0 && seg >= n_segs - 2 && !pk.flags.has(TcpFlags::FIN)
        });
        let mut seen = std::collections::BTreeSet::new();
        let drop_first = std::mem::replace(&mut p.drop, Box::new(|_, _| false));
        let mut drop_first = drop_first;
        p.drop = Box::new(move |i, pk| {
            let first = pk.payload_bytes > 0 && seen.insert(pk.seq);
            first && drop_first(i, pk)
        });
        p.run_until(SimTime::from_secs_f64(5.0));
        let s = p.client.sf.stats;
        assert_eq!(p.delivered_to_server, n_segs * 1448, "rack {rack}: {}", p.client.sf.debug_line());
        assert_eq!((s.timeouts, s.loss_probes), (timeouts, probes), "rack {rack}: {s:?}");
        assert_eq!(s.retransmitted_segs, 2, "rack {rack}: {s:?}");
    }
}

#[test]
fn the_probe_timeout_is_two_srtt_and_no_later_than_the_rto() {
    let (c, first) = sending_client(linux_rack(), "reno");
    assert!(first.len() > 1);
    // The SYN/ACK gave a 20 ms sample: the probe 2 SRTT + 2 ms after the last send.
    let srtt = c.sf.rtt.srtt.unwrap();
    let t = SimTime::from_secs_f64(0.02);
    assert_eq!(c.poll_timeout(), Some(t + srtt + srtt + SimDuration::from_millis(2)));
    // With RACK off, the RTO.
    let (c, _) = sending_client(linux_prr(), "reno");
    assert_eq!(c.poll_timeout(), Some(t + c.sf.rtt.rto()));
}

#[test]
fn rack_recovery_resends_only_what_is_lost() {
    // A loss near the end of a transfer: RFC 6675's rescue retransmission
    // (NextSeg rule 4) resends the highest unSACKed segment too, which
    // was not lost; Linux, and RACK mode, resend what is marked lost only.
    for (cfg, rtx) in [(linux_rack(), 1), (TcpConfig { delayed_ack: false, ..Default::default() }, 2)] {
        let mut p = upload(30 * 1448, cfg);
        p.drop = lose_sends_of(24, 1);
        p.run_until(SimTime::from_secs_f64(5.0));
        let s = p.client.sf.stats;
        assert_eq!(p.delivered_to_server, 30 * 1448, "{:?}", cfg.cc_mode);
        assert_eq!((s.timeouts, s.fast_recoveries, s.retransmitted_segs), (0, 1, rtx), "{:?}: {s:?}", cfg.cc_mode);
    }
}

#[test]
fn the_reordering_timer_survives_an_ack_that_delivers_nothing_and_then_finds_the_loss() {
    let (mut c, first) = sending_client(linux_rack(), "reno");
    assert_eq!(first.len(), 10);
    let mss = 1448;
    // One segment SACKed above the first: within the reordering window
    // (min_rtt/4 = 5 ms after RACK.rtt, 20 ms), so not yet lost.
    let t0 = SimTime::from_secs_f64(0.04);
    c.handle_segment(t0, &ack_of(1, &[(1 + mss, 1 + 2 * mss)]));
    let reo_at = SimTime::from_secs_f64(0.02 + 0.02 + 0.005 + 0.002);
    assert_eq!(c.poll_timeout(), Some(reo_at));
    // The same ACK again delivers nothing: RACK does not run, the timer stays.
    c.handle_segment(t0 + SimDuration::from_millis(1), &ack_of(1, &[(1 + mss, 1 + 2 * mss)]));
    assert_eq!(c.poll_timeout(), Some(reo_at));
    assert_eq!(c.cc().ca_state, CaState::Disorder);
    c.handle_timeout(reo_at);
    assert_eq!(c.cc().ca_state, CaState::Recovery);
    let mut out = vec![];
    c.drain_transmit(reo_at, &mut out);
    assert_eq!(out.first().map(|p| p.seq), Some(1));
    assert_eq!(c.sf.stats.timeouts, 0);
}

/// What MPTCP reinjects from a subflow: each tagged write not yet
/// acknowledged, once and in order, whether in flight or not yet sent.
#[test]
fn tagged_writes_not_yet_acknowledged_are_listed_in_order() {
    let mut p = Pair::new(TcpConfig::default(), "reno");
    p.run_until(SimTime::from_secs_f64(0.05));
    let mss = p.cfg.mss_bytes as u64;
    let tag = |k: u64| 1_000_000 + k * mss;
    for k in 0..40 {
        p.client.sf.send_segment(mss, tag(k));
    }
    p.run_until(p.now + SimDuration::from_millis(25));
    let (una, nxt, written) = (p.client.sf.snd_una(), p.client.sf.snd_nxt, p.client.sf.write_seq());
    assert!(una > 1 + mss && nxt < written, "some writes acknowledged and some not yet sent: {una} {nxt} {written}");
    // Write k holds subflow bytes [1 + k * mss, 1 + (k + 1) * mss).
    let expected: Vec<(u64, u32)> = (0..40).filter(|k| 1 + (k + 1) * mss > una).map(|k| (tag(k), mss as u32)).collect();
    assert_eq!(p.client.sf.unacked_tagged().collect::<Vec<_>>(), expected);
}
