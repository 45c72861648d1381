//! Two endpoints wired back to back by a tiny deterministic pipe (the
//! quinn-proto `Pair` idea): fixed delay, optional loss by packet index.

use super::*;
use mpsim_cc::CaState;
use mpsim_core::{Addr, Packet, SimDuration, SimTime};
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
                    pipe_pkts: self.client.sf.bytes_in_flight() as f64 / self.cfg.mss_bytes as f64,
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
    let mut lost = vec![];
    Box::new(move |_, pk| {
        // Pure ACKs carry sequence 0: only data segments are numbered.
        let n = pk.seq.saturating_sub(1) / 1448;
        let hit = pk.payload_bytes > 0 && segs.contains(&n) && !lost.contains(&n);
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
        for delayed_ack in [false, true] {
            let mut p = upload(1_000_000, TcpConfig { delayed_ack, ..linux_prr() });
            // A small LCG: 3 % of packets lost, both directions.
            let mut x = seed;
            p.drop = Box::new(move |_, _| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % 100 < 3
            });
            p.run_until(SimTime::from_secs_f64(300.0));
            assert_eq!(p.delivered_to_server, 1_000_000, "seed {seed}: {}", p.client.sf.debug_line());
            assert!(p.client_events.contains(&AppEvent::SendComplete), "seed {seed}");
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
