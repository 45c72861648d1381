//! Two associations over a simulated pair of paths: a deterministic
//! driver (quinn-proto's `Pair`) with loss, reordering, duplication and a
//! path that fails and returns, and the integrity property over it.

use super::variants::rtx_policy::RtxPolicy;
use super::{AssocState, Association, PathAddrs, SctpConfig, Variant};
use crate::tcp::AppEvent;
use crate::transport::Transport;
use mpsim_core::sctp::Chunk;
use mpsim_core::{Addr, Packet, SimDuration, SimRng, SimTime};
use std::collections::BTreeMap;

/// One direction-independent path of the test network.
#[derive(Clone, Copy, Debug)]
struct PathModel {
    delay: SimDuration,
    /// Extra delay drawn uniformly in [0, jitter]: reorders packets.
    jitter: SimDuration,
    loss: f64,
    dup: f64,
    /// The path drops everything in [from, to).
    down: Option<(SimTime, SimTime)>,
}

const CLIENT: [Addr; 2] = [Addr(0x0a00_0001), Addr(0x0a00_0101)];
const SERVER: [Addr; 2] = [Addr(0x0a01_0001), Addr(0x0a01_0101)];

fn paths(n: usize, client_side: bool) -> Vec<PathAddrs> {
    (0..n)
        .map(|i| {
            if client_side {
                PathAddrs { local: CLIENT[i], remote: SERVER[i] }
            } else {
                PathAddrs { local: SERVER[i], remote: CLIENT[i] }
            }
        })
        .collect()
}

/// A client downloading `bytes` from a server over `net`.
struct Pair {
    client: Association,
    server: Option<Association>,
    net: Vec<PathModel>,
    rng: SimRng,
    now: SimTime,
    seq: u64,
    /// In flight: (arrival, seq) -> (to the server, packet).
    wire: BTreeMap<(SimTime, u64), (bool, Packet)>,
    cfg: SctpConfig,
    bytes: u64,
    delivered_bytes: u64,
    client_failed: bool,
}

impl Pair {
    fn new(cfg: SctpConfig, net: Vec<PathModel>, bytes: u64, seed: u64) -> Self {
        let client = Association::connect(cfg, paths(net.len(), true), 5000, 80);
        Pair {
            client,
            server: None,
            net,
            rng: SimRng::new(seed, 7),
            now: SimTime::ZERO,
            seq: 0,
            wire: BTreeMap::new(),
            cfg,
            bytes,
            delivered_bytes: 0,
            client_failed: false,
        }
    }

    fn path_of(p: &Packet) -> usize {
        (0..2).find(|&i| p.src == CLIENT[i] || p.src == SERVER[i]).expect("a test address")
    }

    fn put_on_wire(&mut self, p: Packet) {
        let m = self.net[Self::path_of(&p)];
        if m.down.is_some_and(|(a, b)| self.now >= a && self.now < b) || self.rng.bernoulli(m.loss) {
            return;
        }
        let copies = 1 + self.rng.bernoulli(m.dup) as u32;
        for _ in 0..copies {
            let jitter = SimDuration(self.rng.below(m.jitter.0.max(1)));
            self.seq += 1;
            let to_server = SERVER.contains(&p.dst);
            self.wire.insert((self.now + m.delay + jitter, self.seq), (to_server, p));
        }
    }

    fn service(&mut self) {
        let mut out = Vec::new();
        self.client.drain_transmit(self.now, &mut out);
        while let Some(ev) = self.client.poll_event() {
            match ev {
                AppEvent::Delivered { bytes } => self.delivered_bytes += bytes,
                AppEvent::PeerClosed => self.client.close(),
                AppEvent::Failed => self.client_failed = true,
                _ => {}
            }
        }
        if let Some(s) = &mut self.server {
            s.drain_transmit(self.now, &mut out);
            while let Some(ev) = s.poll_event() {
                if ev == AppEvent::Connected {
                    s.write(Some(self.bytes));
                    s.close();
                    s.drain_transmit(self.now, &mut out);
                }
            }
        }
        for p in out {
            self.put_on_wire(p);
        }
    }

    fn deliver(&mut self, to_server: bool, p: Packet) {
        if !to_server {
            self.client.handle_segment(self.now, &p);
            return;
        }
        match &mut self.server {
            Some(s) => {
                s.handle_segment(self.now, &p);
            }
            None if matches!(p.ext.sctp(), Some(Chunk::Init { .. })) => {
                self.server = Association::accept(self.cfg, paths(self.net.len(), false), &p);
            }
            None => {}
        }
    }

    /// Runs until nothing is left to do or `limit`.
    fn run(&mut self, limit: SimTime) {
        loop {
            self.service();
            let timers = [self.client.poll_timeout(), self.server.as_ref().and_then(|s| s.poll_timeout())];
            let timer = timers.into_iter().flatten().min();
            let packet = self.wire.keys().next().map(|k| k.0);
            let Some(next) = [timer, packet].into_iter().flatten().min() else { return };
            if next > limit {
                return;
            }
            assert!(next >= self.now, "time went back");
            self.now = next;
            if packet == Some(next) {
                let (_, (to_server, p)) = self.wire.pop_first().expect("a packet is due");
                self.deliver(to_server, p);
            } else {
                if self.client.poll_timeout().is_some_and(|t| t <= next) {
                    self.client.handle_timeout(next);
                }
                if let Some(s) = &mut self.server {
                    if s.poll_timeout().is_some_and(|t| t <= next) {
                        s.handle_timeout(next);
                    }
                }
            }
        }
    }

    fn server(&self) -> &Association {
        self.server.as_ref().expect("the server exists")
    }
}

fn clean(delay_ms: u64) -> PathModel {
    PathModel { delay: SimDuration::from_millis(delay_ms), jitter: SimDuration::ZERO, loss: 0.0, dup: 0.0, down: None }
}

fn secs(s: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

#[test]
fn a_clean_single_path_transfer_completes_and_shuts_down() {
    let cfg = SctpConfig { cmt: false, ..Default::default() };
    let mut pair = Pair::new(cfg, vec![clean(20)], 1_000_000, 1);
    pair.run(secs(60));
    assert_eq!(pair.delivered_bytes, 1_000_000);
    assert_eq!(pair.client.state, AssocState::Closed);
    assert!(pair.client.is_done() && pair.server().is_done());
    let s = pair.server().paths();
    assert_eq!(s[0].counters.retransmitted_bytes, 0);
}

#[test]
fn an_init_lost_on_a_dead_primary_is_retransmitted_on_the_next_path() {
    let mut down = clean(20);
    down.down = Some((SimTime::ZERO, secs(1000)));
    let mut pair = Pair::new(SctpConfig::default(), vec![down, clean(20)], 500_000, 1);
    // Linux (sctp_sf_t1_init_timer_expire, sctp_assoc_choose_alter_transport):
    // the first T1 expiry (RTO.Initial, 3 s) sends the INIT on path 1.
    // Path 0 is then found dead only by its T3 timeouts (Path.Max.Retrans).
    pair.run(secs(600));
    assert_eq!(pair.delivered_bytes, 500_000);
    assert!(pair.client.is_done() && pair.server().is_done());
    assert!(pair.server().paths()[1].bytes_sent >= 500_000, "the data went on path 1");
}

#[test]
fn cmt_carries_data_on_both_paths() {
    let mut pair = Pair::new(SctpConfig::default(), vec![clean(10), clean(40)], 2_000_000, 1);
    pair.run(secs(60));
    assert_eq!(pair.delivered_bytes, 2_000_000);
    let paths = pair.server().paths();
    assert!(paths.iter().all(|p| p.bytes_sent > 100_000), "{paths:?}");
    let rx: u64 = pair.client.paths().iter().map(|p| p.rx_bytes.unwrap_or(0)).sum();
    assert_eq!(rx, 2_000_000);
}

#[test]
fn a_small_receive_buffer_blocks_the_fast_path_behind_the_slow_one() {
    // The slow path's holes keep the fast path's chunks in the buffer: the
    // advertised window reaches zero during the transfer.
    let cfg = SctpConfig { rbuf_bytes: 16 * 1024, ..Default::default() };
    let mut pair = Pair::new(cfg, vec![clean(5), clean(200)], 500_000, 1);
    let mut min_rwnd = u64::MAX;
    while pair.delivered_bytes < 500_000 && pair.now < secs(120) {
        let until = pair.now + SimDuration::from_millis(10);
        pair.run(until);
        pair.now = until;
        if let Some(s) = &pair.server {
            if s.state == AssocState::Established || s.state == AssocState::ShutdownPending {
                min_rwnd = min_rwnd.min(s.peer_rwnd_bytes());
            }
        }
    }
    assert_eq!(pair.delivered_bytes, 500_000);
    assert!(min_rwnd < 1452, "the window never closed: {min_rwnd}");
}

#[test]
fn a_failed_path_is_detected_and_data_moves_to_the_other() {
    let cfg = SctpConfig { hb_interval: SimDuration::from_secs(1), path_max_retrans: 2, ..Default::default() };
    let mut down = clean(20);
    down.down = Some((secs(1), secs(1000)));
    let mut pair = Pair::new(cfg, vec![clean(20), down], 5_000_000, 3);
    pair.run(secs(300));
    assert_eq!(pair.delivered_bytes, 5_000_000, "{:#?}", pair.server().debug_lines());
    assert!(!pair.server().sender.dests[1].active, "path 1 still active");
}

#[test]
fn a_returning_path_is_used_again_after_a_heartbeat_ack() {
    let cfg = SctpConfig { hb_interval: SimDuration::from_secs(1), path_max_retrans: 2, ..Default::default() };
    let mut flaky = clean(20);
    flaky.down = Some((secs(1), secs(20)));
    let mut pair = Pair::new(cfg, vec![clean(20), flaky], u64::MAX / 4, 3);
    pair.run(secs(15));
    assert!(!pair.server().sender.dests[1].active);
    let sent_before = pair.server().sender.dests[1].stats.sent_bytes;
    pair.run(secs(60));
    let d = &pair.server().sender.dests[1];
    assert!(d.active, "the returned path is not active again");
    assert!(d.stats.sent_bytes > sent_before + 100_000, "no new data on the returned path");
}

/// Every byte delivered in TSN order exactly once, and the transfer
/// completes, under the given network.
fn check_integrity(cfg: SctpConfig, net: Vec<PathModel>, bytes: u64, seed: u64) {
    let mut pair = Pair::new(cfg, net, bytes, seed);
    pair.run(secs(3_000));
    if pair.client_failed || pair.server.is_none() {
        // Only a handshake that never got through may fail.
        assert_eq!(pair.delivered_bytes, 0);
        return;
    }
    let log = &pair.client.receiver.delivered_log;
    let sent = &pair.server().sender.sent_log;
    assert_eq!(log, sent, "delivered chunks differ from those sent");
    assert!(log.iter().enumerate().all(|(i, &(tsn, _))| tsn == i as u32 + 1), "TSNs out of order");
    assert_eq!(pair.delivered_bytes, bytes);
    assert_eq!(log.iter().map(|&(_, l)| l as u64).sum::<u64>(), bytes);
    assert!(pair.server().is_done(), "{:#?}", pair.server().debug_lines());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    #[test]
    fn every_byte_arrives_in_order_exactly_once(
        loss in 0.0f64..0.08,
        dup in 0.0f64..0.1,
        jitter_ms in 0u64..60,
        delay_b_ms in 5u64..150,
        fail in proptest::option::of((1u64..10, 1u64..40)),
        scheme in 0usize..4,
        policy in 0usize..5,
        rbuf_kb in 8u64..128,
        seed in 0u64..1_000_000,
        bytes in 1u64..400_000,
    ) {
        let a = PathModel { delay: SimDuration::from_millis(10), jitter: SimDuration::from_millis(jitter_ms), loss, dup, down: None };
        let mut b = PathModel { delay: SimDuration::from_millis(delay_b_ms), ..a };
        b.down = fail.map(|(from, len)| (secs(from), secs(from + len)));
        // Plain SCTP over two destinations (primary only), then each variant.
        let (cmt, variant) = [(false, Variant::Cmt), (true, Variant::Cmt), (true, Variant::Smt), (true, Variant::Smos)][scheme];
        let rtx_policy = [RtxPolicy::Ssthresh, RtxPolicy::Same, RtxPolicy::Asap, RtxPolicy::Cwnd, RtxPolicy::LossRate][policy];
        let cfg = SctpConfig { cmt, variant, rtx_policy, rbuf_bytes: rbuf_kb * 1024, hb_interval: SimDuration::from_secs(2), ..Default::default() };
        check_integrity(cfg, vec![a, b], bytes, seed);
    }
}
