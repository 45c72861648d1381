//! Two endpoints wired back to back by a tiny deterministic pipe (the
//! quinn-proto `Pair` idea): fixed delay, optional loss by packet index.

use super::*;
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
