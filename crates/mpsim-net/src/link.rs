//! One direction of a full-duplex link: a drop-tail FIFO in front of a
//! transmitter of fixed rate, then a propagation delay.
//!
//! The FIFO is computed, not simulated: when a packet is accepted its
//! transmission start and end follow from the previous packet's end
//! (`busy_until`), so one event per packet (its arrival at the far end)
//! suffices. Packets in the queue and on the wire sit in `pipe` in arrival
//! order; the entries still waiting to start transmission are its suffix
//! (`waiting`), which is what the queue limit counts and what a rate or
//! delay change re-times.
//!
//! With jitter each packet travels on its own (it may overtake others) and
//! keeps the times computed when it was accepted, as netem computes a
//! packet's send time on enqueue: a rate or delay change applies to the
//! packets accepted after it.
//!
//! The queue discipline (crate::qdisc) decides the fate of arriving
//! packets. Drop-tail, RED and random drop decide on arrival and keep the
//! FIFO computed. CoDel and FQ-CoDel decide at dequeue, so with them the
//! discipline holds the waiting packets and the transmitter takes the next
//! one when it frees; it does so lazily, whenever the direction is touched
//! (an arrival at the far end, an offer, a change), which is exact: a
//! dequeue at time t only depends on packets offered before t, and the
//! packet in service stays in `pipe` until after the transmitter frees.
//! Packets these disciplines drop or mark on the way are listed in `aqm`
//! for the engine to free or mark.

use crate::loss::LossModel;
use crate::qdisc::{AqmAction, Backlog, QPkt, Qdisc, QdiscConfig, Verdict};
use crate::routing::FlowKey;
use mpsim_core::pool::StoredPacket;
use mpsim_core::spare::release_spare_keeping;
use mpsim_core::{Addr, PacketId, SimDuration, SimRng, SimTime};
use std::collections::VecDeque;

/// Pipe entries a direction always keeps. With 8, the pipes of the
/// 100-flow dumbbell gave back and regrew their room some 18,000 times per
/// simulated second (2 % of the run's instructions); 16 entries (512
/// bytes) cost a k=32 FatTree at most 12 MiB more.
const PIPE_KEPT_RECORDS: usize = 16;

/// Picoseconds of one bit at 1 bit/s.
const BIT_PS: u64 = 8 * 1_000_000_000_000;

/// Capacity of the drop-tail queue (packets waiting, not counting the one
/// being serialised).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// Parameters of one link direction. Fields in declaration order
/// (`repr(C)`): an offer reads the first five, which share a cache line
/// with the direction's other hot fields (`LinkDir`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct LinkDirParams {
    pub queue: QueueLimit,
    pub delay: SimDuration,
    pub bandwidth_bps: u64,
    /// Extra delay drawn uniformly in [0, jitter) per packet, as netem's
    /// jitter: packets may overtake each other (reordering).
    pub jitter: SimDuration,
    pub up: bool,
    pub loss: LossModel,
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DirStats {
    /// Wire bytes serialised (including packets later lost on the wire).
    pub tx_bytes: u64,
    pub tx_packets: u64,
    /// Wire bytes delivered to the far end.
    pub rx_bytes: u64,
    /// Dropped by the queue: full, or by its discipline (RED, CoDel, ...).
    pub queue_drops: u64,
    /// ECN-capable packets the discipline marked CE instead of dropping.
    pub ecn_marks: u64,
    /// Lost on the wire by the loss model.
    pub loss_drops: u64,
    /// Dropped because the link was down (or went down with them on board).
    pub down_drops: u64,
    /// Time the transmitter was busy, picoseconds.
    pub busy_ps: u64,
}

/// A packet in the pipe, its 5-tuple flattened beside the other fields
/// (32 bytes; as a nested `FlowKey` its padding would make 40).
#[derive(Clone, Copy, Debug)]
struct InFlight {
    arrival: SimTime,
    pid: PacketId,
    wire_bytes: u32,
    src: Addr,
    dst: Addr,
    sport: u16,
    dport: u16,
    proto: u8,
    lost: bool,
    ect: bool,
}

impl InFlight {
    fn new(arrival: SimTime, p: &QPkt, lost: bool) -> Self {
        let k = &p.key;
        InFlight {
            arrival,
            pid: p.pid,
            wire_bytes: p.wire_bytes,
            src: k.src,
            dst: k.dst,
            sport: k.sport,
            dport: k.dport,
            proto: k.proto,
            lost,
            ect: p.ect,
        }
    }

    fn key(&self) -> FlowKey {
        FlowKey { src: self.src, dst: self.dst, sport: self.sport, dport: self.dport, proto: self.proto }
    }
}

/// What a link and the next switch need of a packet: its 5-tuple (for
/// forwarding and flow-aware queues), size and ECN capability. It travels
/// with the packet through the pipe, so forwarding need not read the
/// packet itself (on a large fabric that read is a cache miss at nearly
/// every hop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub key: FlowKey,
    pub wire_bytes: u32,
    pub ect: bool,
}

impl Hop {
    /// Read from a packet in the pool (where a packet enters a link).
    #[inline(always)]
    pub fn of(p: &StoredPacket) -> Hop {
        let key = FlowKey { src: p.src, dst: p.dst, sport: p.sport, dport: p.dport, proto: p.proto.ip_number() };
        Hop { key, wire_bytes: p.wire_bytes, ect: p.ecn.is_ect() }
    }
}

/// The packet arriving at the far end of a direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrived {
    pub pid: PacketId,
    /// False when the loss model took it on the wire.
    pub survived: bool,
    /// When the next packet in the pipe arrives.
    pub next: Option<SimTime>,
    pub hop: Hop,
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    tx_start: SimTime,
    wire_bytes: u32,
    /// In `pipe` (else it was accepted with jitter and travels on its own).
    in_pipe: bool,
}

/// What happened to a packet offered to a link direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// Accepted; if `schedule` is set the caller must schedule an arrival
    /// event at `arrival` (the pipe was empty before).
    Accepted { schedule: Option<SimTime> },
    /// Accepted on a link with jitter: the packet travels on its own and
    /// the caller schedules its delivery at the given time (for the
    /// current `jitter_generation`).
    Jittered { arrival: SimTime },
    /// Serialised, then lost on the wire: the caller frees the packet.
    LostOnWire,
    /// Dropped (queue full or link down): the caller frees the packet.
    Dropped,
}

/// Fields in declaration order (`repr(C)`), aligned to a cache line: on
/// a large fabric a direction is evicted from the caches between two of
/// its packets, so each line its hot fields span is a miss. An arrival
/// reads the first two lines, an offer the first three (drop-tail,
/// lossless); the rest serve the disciplines, the loss model and reports.
#[repr(C, align(64))]
pub struct LinkDir {
    busy_until: SimTime,
    pipe: VecDeque<InFlight>,
    waiting_bytes: u64,
    /// Picoseconds per byte at the current rate when that divides
    /// 8 bit x 10^12 ps exactly, else 0: two 64-bit divisions per packet
    /// saved, which cost tens of cycles each. Set with the parameters.
    ps_per_byte: u64,
    /// Bumped whenever pending arrival events become invalid.
    pub generation: u32,
    /// Bumped when the link goes down: jittered packets still travelling
    /// are lost (a re-timing leaves them alone).
    pub jitter_generation: u32,
    // Second line.
    waiting: VecDeque<Waiting>,
    rx_bytes: u64,
    tx_bytes: u64,
    tx_packets: u64,
    /// The discipline is drop-tail: nothing to consult, hold or list in `aqm`.
    drop_tail: bool,
    /// The loss model never loses a packet (no draw per packet).
    lossless: bool,
    // Third line.
    busy_ps: u64,
    params: LinkDirParams,
    qdisc: Qdisc,
    /// Packets the discipline dropped or marked since the engine last
    /// looked (it drains this after every call that `aqm_pending` flags).
    pub aqm: Vec<(PacketId, AqmAction)>,
    queue_drops: u64,
    ecn_marks: u64,
    loss_drops: u64,
    down_drops: u64,
    rng: SimRng,
}

impl LinkDir {
    pub fn new(params: LinkDirParams, rng: SimRng) -> Self {
        let mut d = LinkDir {
            busy_until: SimTime::ZERO,
            pipe: VecDeque::new(),
            waiting_bytes: 0,
            ps_per_byte: 0,
            generation: 0,
            jitter_generation: 0,
            waiting: VecDeque::new(),
            rx_bytes: 0,
            tx_bytes: 0,
            tx_packets: 0,
            drop_tail: true,
            lossless: true,
            busy_ps: 0,
            params,
            qdisc: Qdisc::DropTail,
            aqm: Vec::new(),
            queue_drops: 0,
            ecn_marks: 0,
            loss_drops: 0,
            down_drops: 0,
            rng,
        };
        d.set_params(params);
        d
    }

    /// A direction running queue discipline `cfg` (drop-tail by default).
    pub fn with_qdisc(params: LinkDirParams, mut rng: SimRng, cfg: QdiscConfig) -> Self {
        let qdisc = Qdisc::new(cfg, &mut rng);
        let drop_tail = matches!(qdisc, Qdisc::DropTail);
        LinkDir { qdisc, drop_tail, ..LinkDir::new(params, rng) }
    }

    pub fn params(&self) -> &LinkDirParams {
        &self.params
    }

    /// New parameters, from now on (`sync` first for a scheduling
    /// discipline, `retime` after for the packets already waiting).
    pub fn set_params(&mut self, params: LinkDirParams) {
        self.params = params;
        let rate = params.bandwidth_bps;
        self.ps_per_byte = if Self::exact_at(rate) { BIT_PS / rate } else { 0 };
        self.lossless = matches!(params.loss, LossModel::None);
    }

    /// The counters so far.
    pub fn stats(&self) -> DirStats {
        DirStats {
            tx_bytes: self.tx_bytes,
            tx_packets: self.tx_packets,
            rx_bytes: self.rx_bytes,
            queue_drops: self.queue_drops,
            ecn_marks: self.ecn_marks,
            loss_drops: self.loss_drops,
            down_drops: self.down_drops,
            busy_ps: self.busy_ps,
        }
    }

    /// The discipline listed drops or marks in `aqm` for the engine.
    #[inline(always)]
    pub fn aqm_pending(&self) -> bool {
        !self.drop_tail && !self.aqm.is_empty()
    }

    /// A discipline holds the waiting packets (CoDel, FQ-CoDel).
    #[inline(always)]
    fn holds_packets(&self) -> bool {
        !self.drop_tail && self.qdisc.holds_packets()
    }

    pub fn qdisc(&self) -> &Qdisc {
        &self.qdisc
    }

    fn purge_started(&mut self, now: SimTime) {
        while let Some(w) = self.waiting.front() {
            if w.tx_start > now {
                break;
            }
            self.waiting_bytes -= w.wire_bytes as u64;
            self.waiting.pop_front();
        }
    }

    /// Packets waiting for the transmitter at `now`.
    pub fn queue_len_pkts(&mut self, now: SimTime) -> usize {
        if self.holds_packets() {
            self.advance(now);
            return self.qdisc.len_pkts();
        }
        self.purge_started(now);
        self.waiting.len()
    }

    fn queue_full(&self, wire_bytes: u32) -> bool {
        match self.params.queue {
            QueueLimit::Packets(n) => self.waiting.len() >= n as usize,
            QueueLimit::Bytes(b) => self.waiting_bytes + wire_bytes as u64 > b,
        }
    }

    fn last_arrival(&self) -> SimTime {
        self.pipe.back().map_or(SimTime::ZERO, |f| f.arrival)
    }

    /// Serialisation time of `wire_bytes` at the current rate. Most rates
    /// divide 8 bit x 10^12 ps exactly, and then a multiplication gives the
    /// same integer as the general (128-bit) division, at a fraction of its cost.
    #[inline]
    fn transmission(&self, wire_bytes: u32) -> SimDuration {
        if self.ps_per_byte != 0 {
            SimDuration(wire_bytes as u64 * self.ps_per_byte)
        } else {
            Self::transmission_at(wire_bytes, self.params.bandwidth_bps)
        }
    }

    /// A byte takes a whole number of picoseconds at `bandwidth_bps`.
    fn exact_at(bandwidth_bps: u64) -> bool {
        bandwidth_bps > 0 && BIT_PS.is_multiple_of(bandwidth_bps)
    }

    fn transmission_at(wire_bytes: u32, bandwidth_bps: u64) -> SimDuration {
        if Self::exact_at(bandwidth_bps) {
            SimDuration(wire_bytes as u64 * (BIT_PS / bandwidth_bps))
        } else {
            SimDuration::transmission(wire_bytes as u64, bandwidth_bps)
        }
    }

    /// Offers packet `pid` of `wire_bytes` at `now` (not ECN-capable, flow 0).
    pub fn enqueue(&mut self, now: SimTime, pid: PacketId, wire_bytes: u32) -> EnqueueOutcome {
        self.offer(now, QPkt { pid, wire_bytes, flow_hash: 0, ect: false, enqueued: now, key: FlowKey::default() })
    }

    /// Offers a packet at `now`. A mark the discipline sets on it is listed
    /// in `aqm`, and so are the packets it drops in its place.
    /// The discipline sorts packets by flow (`QPkt::flow_hash` is read).
    #[inline]
    pub fn uses_flow_hash(&self) -> bool {
        !self.drop_tail && self.qdisc.uses_flow_hash()
    }

    /// Inlined into the engine's single caller: the call, and the offer and
    /// outcome passed through memory, cost some 25 instructions per hop.
    #[inline(always)]
    pub fn offer(&mut self, now: SimTime, pkt: QPkt) -> EnqueueOutcome {
        if !self.params.up {
            self.down_drops += 1;
            return EnqueueOutcome::Dropped;
        }
        if self.holds_packets() {
            return self.offer_held(now, pkt);
        }
        let (pid, wire_bytes) = (pkt.pid, pkt.wire_bytes);
        self.purge_started(now);
        let idle = self.busy_until <= now;
        let verdict = if self.drop_tail { Verdict::Pass } else { self.admit(now, idle, &pkt) };
        if verdict == Verdict::Drop || !idle && self.queue_full(wire_bytes) {
            self.queue_drops += 1;
            return EnqueueOutcome::Dropped;
        }
        if verdict == Verdict::Mark {
            self.ecn_marks += 1;
            self.aqm.push((pid, AqmAction::Mark));
        }
        let tx_start = if idle { now } else { self.busy_until };
        let tx = self.transmission(wire_bytes);
        let tx_end = tx_start + tx;
        self.busy_until = tx_end;
        let jittered = self.params.jitter.as_ps() > 0;
        if tx_start > now {
            self.waiting.push_back(Waiting { tx_start, wire_bytes, in_pipe: !jittered });
            self.waiting_bytes += wire_bytes as u64;
        }
        self.tx_bytes += wire_bytes as u64;
        self.tx_packets += 1;
        self.busy_ps += tx.as_ps();
        let lost = self.lose();
        if jittered {
            if lost {
                self.loss_drops += 1;
                return EnqueueOutcome::LostOnWire;
            }
            let extra = SimDuration(self.rng.below(self.params.jitter.as_ps()));
            return EnqueueOutcome::Jittered { arrival: tx_end + self.params.delay + extra };
        }
        let arrival = (tx_end + self.params.delay).max(self.last_arrival());
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back(InFlight::new(arrival, &pkt, lost));
        EnqueueOutcome::Accepted { schedule: was_empty.then_some(arrival) }
    }

    /// The loss model's verdict on a packet put on the wire; the call is
    /// skipped on a lossless link (most of them).
    #[inline]
    fn lose(&mut self) -> bool {
        !self.lossless && self.params.loss.lose(&mut self.rng)
    }

    /// An admission discipline's verdict on a packet arriving at `now`.
    fn admit(&mut self, now: SimTime, idle: bool, pkt: &QPkt) -> Verdict {
        let backlog = Backlog {
            pkts: self.waiting.len() as u64,
            bytes: self.waiting_bytes,
            idle_for: idle.then(|| now - self.busy_until),
            bandwidth_bps: self.params.bandwidth_bps,
            limit: self.params.queue,
        };
        self.qdisc.admit(pkt, &backlog, &mut self.rng)
    }

    /// A scheduling discipline takes the packet; the transmitter starts on
    /// it at once if it is idle.
    fn offer_held(&mut self, now: SimTime, pkt: QPkt) -> EnqueueOutcome {
        let was_empty = self.pipe.is_empty();
        self.advance(now);
        // The limit counts waiting packets: one the idle transmitter takes
        // at once does not wait (as in the computed FIFO).
        let idle = self.busy_until <= now;
        let limit = if idle { QueueLimit::Packets(u32::MAX) } else { self.params.queue };
        self.busy_until = self.busy_until.max(now);
        let seen = self.aqm.len();
        let mut accepted = self.qdisc.push(pkt, limit, &mut self.aqm);
        // FQ-CoDel may drop the arriving packet itself to make room: the
        // caller frees it on `Dropped`, so it must not be listed as well.
        if let Some(i) = self.aqm[seen..].iter().position(|a| a.0 == pkt.pid) {
            self.aqm.remove(seen + i);
            accepted = false;
        }
        self.count_aqm(seen);
        if !accepted {
            self.queue_drops += 1;
            return EnqueueOutcome::Dropped;
        }
        self.advance(now);
        let schedule = if was_empty { self.pipe.front().map(|f| f.arrival) } else { None };
        EnqueueOutcome::Accepted { schedule }
    }

    fn count_aqm(&mut self, from: usize) {
        for a in &self.aqm[from..] {
            match a.1 {
                AqmAction::Drop => self.queue_drops += 1,
                AqmAction::Mark => self.ecn_marks += 1,
            }
        }
    }

    /// Scheduling disciplines: every dequeue due by `now` (each at the time
    /// the transmitter freed), its packet put on the wire.
    fn advance(&mut self, now: SimTime) {
        while self.busy_until <= now && self.qdisc.len_pkts() > 0 {
            let t = self.busy_until;
            let seen = self.aqm.len();
            let next = self.qdisc.pop(t, &mut self.aqm);
            self.count_aqm(seen);
            let Some(p) = next else { break };
            let tx = self.transmission(p.wire_bytes);
            self.busy_until = t + tx;
            self.tx_bytes += p.wire_bytes as u64;
            self.tx_packets += 1;
            self.busy_ps += tx.as_ps();
            let lost = self.lose();
            let arrival = (self.busy_until + self.params.delay).max(self.last_arrival());
            self.pipe.push_back(InFlight::new(arrival, &p, lost));
        }
    }

    /// Brings a scheduling discipline up to `now` before the caller changes
    /// the parameters (the dequeues before now used the old ones). Nothing
    /// for the others. The engine drains `aqm` afterwards.
    pub fn sync(&mut self, now: SimTime) {
        if self.holds_packets() {
            self.advance(now);
        }
    }

    /// Removes the packet arriving now (the head of the pipe). Returns it,
    /// whether it survived the wire, and the time of the next arrival.
    #[inline(always)]
    pub fn pop_arrival(&mut self) -> Arrived {
        // The engine only calls this at the head's arrival time for the
        // current generation, so the pipe is non-empty.
        if self.holds_packets() {
            // The transmitter freed no later than this arrival; the head
            // stays in the pipe meanwhile, so what it dequeues arrives
            // after the head even if the delay has just been lowered.
            let t = self.pipe.front().expect("arrival event with an empty pipe").arrival;
            self.advance(t);
        }
        let head = self.pipe.pop_front().expect("arrival event with an empty pipe");
        // A direction drained after a burst gives its room back (a k=32
        // FatTree has 49,152 of them).
        release_spare_keeping(&mut self.pipe, PIPE_KEPT_RECORDS);
        if head.lost {
            self.loss_drops += 1;
        } else {
            self.rx_bytes += head.wire_bytes as u64;
        }
        Arrived {
            pid: head.pid,
            survived: !head.lost,
            next: self.pipe.front().map(|f| f.arrival),
            hop: Hop { key: head.key(), wire_bytes: head.wire_bytes, ect: head.ect },
        }
    }

    /// Takes the link down at `now`: everything queued or on the wire is
    /// lost. Returns the packets to free.
    pub fn go_down(&mut self, now: SimTime) -> Vec<PacketId> {
        self.params.up = false;
        self.generation = self.generation.wrapping_add(1);
        self.jitter_generation = self.jitter_generation.wrapping_add(1);
        self.busy_until = now;
        self.waiting.clear();
        self.waiting_bytes = 0;
        let held = self.qdisc.drain();
        self.down_drops += (self.pipe.len() + held.len()) as u64;
        self.pipe.drain(..).map(|f| f.pid).chain(held).collect()
    }

    pub fn go_up(&mut self) {
        self.params.up = true;
    }

    /// Applies new rate/delay at `now` to the packets that have not started
    /// transmission (the one being serialised finishes at the old rate).
    /// Returns the time of the next arrival to schedule under the new
    /// generation, if any packet is in flight and was re-timed.
    ///
    /// Packets accepted with jitter keep their times; while one of them is
    /// waiting, the transmitter's schedule stays as it is for every packet
    /// (re-timing the others would overlap their transmissions with its).
    pub fn retime(&mut self, now: SimTime) -> Option<SimTime> {
        if self.holds_packets() {
            // Only started packets are in the pipe; the held ones take the
            // new rate and delay when they are dequeued.
            return None;
        }
        self.purge_started(now);
        if self.waiting.iter().any(|w| !w.in_pipe) {
            return None;
        }
        self.generation = self.generation.wrapping_add(1);
        let n_wait = self.waiting.len();
        let first = self.pipe.len() - n_wait;
        let mut busy = self.waiting.front().map_or(self.busy_until, |w| w.tx_start);
        let mut floor = if first > 0 { self.pipe[first - 1].arrival } else { SimTime::ZERO };
        for i in 0..n_wait {
            let w = &mut self.waiting[i];
            w.tx_start = busy;
            let tx = Self::transmission_at(w.wire_bytes, self.params.bandwidth_bps);
            busy += tx;
            let arrival = (busy + self.params.delay).max(floor);
            self.pipe[first + i].arrival = arrival;
            floor = arrival;
        }
        if n_wait > 0 {
            self.busy_until = busy;
        }
        self.pipe.front().map(|f| f.arrival)
    }

    /// A jittered packet reached the far end.
    pub fn on_jittered_arrival(&mut self, wire_bytes: u32) {
        self.rx_bytes += wire_bytes as u64;
    }

    pub fn in_flight(&self) -> usize {
        self.pipe.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(bw: u64, delay_ms: u64, q: QueueLimit) -> LinkDir {
        LinkDir::new(
            LinkDirParams {
                bandwidth_bps: bw,
                delay: SimDuration::from_millis(delay_ms),
                queue: q,
                loss: LossModel::None,
                jitter: SimDuration::ZERO,
                up: true,
            },
            SimRng::new(1, 1),
        )
    }

    #[test]
    fn arrival_is_serialisation_plus_propagation() {
        let mut d = dir(10_000_000, 20, QueueLimit::Packets(10));
        let out = d.enqueue(SimTime::ZERO, PacketId(0), 1514);
        let t = SimTime(1_211_200_000) + SimDuration::from_millis(20);
        assert_eq!(out, EnqueueOutcome::Accepted { schedule: Some(t) });
        // A second packet queues behind the first.
        let out2 = d.enqueue(SimTime::ZERO, PacketId(1), 1514);
        assert_eq!(out2, EnqueueOutcome::Accepted { schedule: None });
        let a = d.pop_arrival();
        assert_eq!((a.pid, a.survived, a.next), (PacketId(0), true, Some(t + SimDuration(1_211_200_000))));
    }

    #[test]
    fn a_pipe_entry_takes_32_bytes() {
        assert_eq!(std::mem::size_of::<InFlight>(), 32);
    }

    /// What an arrival reads lies in the first two cache lines of a
    /// direction, what a drop-tail, lossless offer reads in the first three.
    #[test]
    fn the_hot_fields_of_a_direction_share_three_cache_lines() {
        use std::mem::{align_of, offset_of};
        assert_eq!(align_of::<LinkDir>(), 64);
        let end = |offset: usize, size: usize| offset + size;
        assert!(end(offset_of!(LinkDir, jitter_generation), 4) <= 64);
        assert!(end(offset_of!(LinkDir, lossless), 1) <= 128);
        let params = offset_of!(LinkDir, params);
        assert!(offset_of!(LinkDir, busy_ps) >= 128);
        assert!(end(params + offset_of!(LinkDirParams, up), 1) <= 192);
    }

    /// Each packet's 5-tuple, size and ECN capability come out of the pipe
    /// with it, in order, whether the FIFO is computed (drop-tail) or held
    /// by a scheduling discipline (CoDel): the engine forwards by them
    /// without reading the packet.
    #[test]
    fn a_packets_header_fields_travel_with_it_through_the_link() {
        let base = dir(10_000_000, 1, QueueLimit::Packets(10));
        let codel = crate::qdisc::CodelParams { target: SimDuration::from_secs(1_000), ..Default::default() };
        for mut d in [
            base,
            LinkDir::with_qdisc(dir(10_000_000, 1, QueueLimit::Packets(10)).params, SimRng::new(1, 1), QdiscConfig::Codel(codel)),
        ] {
            let key = |i: u32| FlowKey {
                src: Addr(i),
                dst: Addr(100 + i),
                sport: 1000 + i as u16,
                dport: 80,
                proto: if i.is_multiple_of(2) { 6 } else { 132 },
            };
            for i in 0..4u32 {
                let q = QPkt {
                    pid: PacketId(i),
                    wire_bytes: 100 + i,
                    flow_hash: 0,
                    ect: i == 2,
                    enqueued: SimTime::ZERO,
                    key: key(i),
                };
                assert!(matches!(d.offer(SimTime::ZERO, q), EnqueueOutcome::Accepted { .. }));
            }
            for i in 0..4u32 {
                let a = d.pop_arrival();
                assert_eq!(
                    (a.pid, a.hop.key, a.hop.wire_bytes, a.hop.ect, a.survived),
                    (PacketId(i), key(i), 100 + i, i == 2, true)
                );
            }
        }
    }

    #[test]
    fn drop_tail_counts_waiting_packets_only() {
        let mut d = dir(1_000_000, 1, QueueLimit::Packets(2));
        let outs: Vec<_> = (0..5).map(|i| d.enqueue(SimTime::ZERO, PacketId(i), 1000)).collect();
        // One in transmission plus two waiting; the rest dropped.
        assert_eq!(outs.iter().filter(|o| **o == EnqueueOutcome::Dropped).count(), 2);
        assert_eq!(d.stats().queue_drops, 2);
        // After the first finishes (8 ms) one slot frees.
        assert_eq!(d.queue_len_pkts(SimTime(8_000_000_000)), 1);
    }

    #[test]
    fn byte_queue_limit() {
        let mut d = dir(1_000_000, 1, QueueLimit::Bytes(2500));
        let outs: Vec<_> = (0..5).map(|i| d.enqueue(SimTime::ZERO, PacketId(i), 1000)).collect();
        assert_eq!(outs.iter().filter(|o| **o == EnqueueOutcome::Dropped).count(), 2);
    }

    #[test]
    fn going_down_loses_everything_on_board() {
        let mut d = dir(1_000_000, 1, QueueLimit::Packets(10));
        for i in 0..3 {
            d.enqueue(SimTime::ZERO, PacketId(i), 1000);
        }
        let lost = d.go_down(SimTime(1));
        assert_eq!(lost.len(), 3);
        assert_eq!(d.enqueue(SimTime(2), PacketId(9), 1000), EnqueueOutcome::Dropped);
        d.go_up();
        assert!(matches!(d.enqueue(SimTime(3), PacketId(9), 1000), EnqueueOutcome::Accepted { .. }));
    }

    #[test]
    fn the_exact_fast_path_agrees_with_the_general_division() {
        for bw in [1u64, 3, 1_000, 10_000_000, 1_000_000_000, 7_777_777, 100_000_000_000, 2_500_000] {
            for bytes in [1u32, 66, 1514, 9000, 65535] {
                assert_eq!(LinkDir::transmission_at(bytes, bw), SimDuration::transmission(bytes as u64, bw), "{bw} {bytes}");
            }
        }
    }

    /// The cached per-byte time follows a rate set through `set_params`,
    /// as link events and traces do.
    #[test]
    fn the_cached_rate_follows_changes_of_the_parameters() {
        let mut d = dir(1_000_000_000, 1, QueueLimit::Packets(10));
        for bw in [1_000_000_000u64, 7_777_777, 2_500_000, 1_000_000_000, 3] {
            d.set_params(LinkDirParams { bandwidth_bps: bw, ..*d.params() });
            assert_eq!(d.transmission(1514), SimDuration::transmission(1514, bw), "{bw}");
        }
    }

    #[test]
    fn jitter_lets_packets_overtake_each_other() {
        let mut d = dir(1_000_000_000, 1, QueueLimit::Packets(1000));
        d.set_params(LinkDirParams { jitter: SimDuration::from_millis(5), ..*d.params() });
        let arrivals: Vec<SimTime> = (0..50)
            .map(|i| match d.enqueue(SimTime::ZERO, PacketId(i), 1000) {
                EnqueueOutcome::Jittered { arrival } => arrival,
                o => panic!("{o:?}"),
            })
            .collect();
        assert!(arrivals.windows(2).any(|w| w[1] < w[0]));
        assert!(arrivals.iter().all(|&a| a >= SimTime::ZERO + SimDuration::from_millis(1)));
    }

    #[test]
    fn with_jitter_a_rate_change_applies_to_later_packets_only() {
        let mut d = dir(1_000_000, 1, QueueLimit::Packets(10));
        d.set_params(LinkDirParams { jitter: SimDuration::from_millis(2), ..*d.params() });
        let offer = |d: &mut LinkDir, t: SimTime, i: u32| match d.enqueue(t, PacketId(i), 1000) {
            EnqueueOutcome::Jittered { arrival } => arrival,
            o => panic!("{o:?}"),
        };
        let before: Vec<SimTime> = (0..4).map(|i| offer(&mut d, SimTime::ZERO, i)).collect();
        let (gen, jgen) = (d.generation, d.jitter_generation);
        // 8 ms each at 1 Mbps: three wait when the rate doubles at 1 ms.
        d.set_params(LinkDirParams { bandwidth_bps: 2_000_000, ..*d.params() });
        assert_eq!(d.retime(SimTime(1_000_000_000)), None);
        assert_eq!((d.generation, d.jitter_generation), (gen, jgen), "pending arrivals stay valid");
        // The transmitter is busy until 32 ms; the next packet takes 4 ms.
        let next = offer(&mut d, SimTime(1_000_000_000), 9);
        let lo = SimTime(36_000_000_000) + SimDuration::from_millis(1);
        assert!(next >= lo && next < lo + SimDuration::from_millis(2), "{next:?}");
        assert!(before.iter().all(|&a| a < SimTime(32_000_000_000) + SimDuration::from_millis(3)));
        // Going down loses the jittered packets still travelling.
        d.go_down(SimTime(2_000_000_000));
        assert_ne!(d.jitter_generation, jgen);
    }

    #[test]
    fn a_rate_change_retimes_waiting_packets() {
        let mut d = dir(1_000_000, 0, QueueLimit::Packets(10));
        for i in 0..3 {
            d.enqueue(SimTime::ZERO, PacketId(i), 1000);
        }
        // 8 ms each at 1 Mbps. Double the rate at 1 ms: the first packet
        // keeps its 8 ms, the others take 4 ms each.
        d.set_params(LinkDirParams { bandwidth_bps: 2_000_000, ..*d.params() });
        let head = d.retime(SimTime(1_000_000_000));
        assert_eq!(head, Some(SimTime(8_000_000_000)));
        d.pop_arrival();
        assert_eq!(d.pop_arrival().next, Some(SimTime(16_000_000_000)));
    }

    /// One step offered to a link direction, `dt_us` after the previous one.
    #[derive(Clone, Debug)]
    enum Step {
        Offer { dt_us: u64, wire_bytes: u32 },
        Change { dt_us: u64, rate_bps: u64, delay_us: u64 },
        Down { dt_us: u64 },
        Up { dt_us: u64 },
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            12 => (0u64..3_000, 40u32..1_600).prop_map(|(dt_us, wire_bytes)| Step::Offer { dt_us, wire_bytes }),
            2 => (0u64..20_000, prop_oneof![Just(1_000_000u64), Just(3_000_000), 500_000u64..20_000_000], 0u64..30_000)
                .prop_map(|(dt_us, rate_bps, delay_us)| Step::Change { dt_us, rate_bps, delay_us }),
            1 => (0u64..20_000).prop_map(|dt_us| Step::Down { dt_us }),
            1 => (0u64..20_000).prop_map(|dt_us| Step::Up { dt_us }),
        ]
    }

    /// A packet in the reference FIFO: all its times, kept for good.
    #[derive(Clone, Copy, Debug)]
    struct RefPkt {
        id: u32,
        wire_bytes: u32,
        tx_start: SimTime,
        arrival: SimTime,
    }

    /// The FIFO written the plain way: every accepted packet with its
    /// times, the waiting ones found by scanning.
    struct RefLink {
        rate_bps: u64,
        delay: SimDuration,
        queue: QueueLimit,
        up: bool,
        busy_until: SimTime,
        board: Vec<RefPkt>,
        delivered: Vec<(u32, SimTime)>,
    }

    impl RefLink {
        fn deliver_until(&mut self, t: SimTime) {
            let (due, rest): (Vec<RefPkt>, Vec<RefPkt>) = self.board.iter().partition(|p| p.arrival <= t);
            self.delivered.extend(due.iter().map(|p| (p.id, p.arrival)));
            self.board = rest;
        }

        fn offer(&mut self, now: SimTime, id: u32, wire_bytes: u32) -> bool {
            if !self.up {
                return false;
            }
            let waiting: Vec<&RefPkt> = self.board.iter().filter(|p| p.tx_start > now).collect();
            let full = match self.queue {
                QueueLimit::Packets(n) => waiting.len() >= n as usize,
                QueueLimit::Bytes(b) => waiting.iter().map(|p| p.wire_bytes as u64).sum::<u64>() + wire_bytes as u64 > b,
            };
            if self.busy_until > now && full {
                return false;
            }
            let tx_start = self.busy_until.max(now);
            self.busy_until = tx_start + SimDuration::transmission(wire_bytes as u64, self.rate_bps);
            let floor = self.board.last().map_or(SimTime::ZERO, |p| p.arrival);
            self.board.push(RefPkt { id, wire_bytes, tx_start, arrival: (self.busy_until + self.delay).max(floor) });
            true
        }

        fn change(&mut self, now: SimTime, rate_bps: u64, delay: SimDuration) {
            (self.rate_bps, self.delay) = (rate_bps, delay);
            let Some(first) = self.board.iter().position(|p| p.tx_start > now) else { return };
            let mut busy = self.board[first].tx_start;
            let mut floor = if first > 0 { self.board[first - 1].arrival } else { SimTime::ZERO };
            for p in &mut self.board[first..] {
                p.tx_start = busy;
                busy += SimDuration::transmission(p.wire_bytes as u64, rate_bps);
                p.arrival = (busy + delay).max(floor);
                floor = p.arrival;
            }
            self.busy_until = busy;
        }
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, ..Default::default() })]

        /// Driven as the engine drives it (one pending arrival event, its
        /// generation, the times `enqueue`, `pop_arrival` and `retime`
        /// hand back), the computed FIFO delivers the same packets at the
        /// same times as the plain one, through drops, rate and delay
        /// changes and outages.
        #[test]
        fn the_computed_fifo_matches_a_plain_one(
            queue in proptest::prop_oneof![(1u32..20).prop_map(QueueLimit::Packets), (1_500u64..30_000).prop_map(QueueLimit::Bytes)],
            steps in proptest::collection::vec(step(), 1..150),
        ) {
            check_against_plain(dir(2_000_000, 5, queue), queue, &steps)?;
        }

        /// CoDel with a target no queue reaches holds the waiting packets
        /// and dequeues them when the transmitter frees: it must deliver
        /// exactly as the plain drop-tail FIFO does.
        #[test]
        fn a_held_queue_that_never_drops_matches_the_plain_fifo(
            queue in proptest::prop_oneof![(1u32..20).prop_map(QueueLimit::Packets), (1_500u64..30_000).prop_map(QueueLimit::Bytes)],
            steps in proptest::collection::vec(step(), 1..150),
        ) {
            let codel = crate::qdisc::CodelParams { target: SimDuration::from_secs(1_000), ..Default::default() };
            let d = LinkDir::with_qdisc(dir(2_000_000, 5, queue).params, SimRng::new(1, 1), QdiscConfig::Codel(codel));
            check_against_plain(d, queue, &steps)?;
        }
    }

    /// Drives `d` as the engine does (one pending arrival event, its
    /// generation, the times `enqueue`, `pop_arrival` and `retime` hand
    /// back) and the plain FIFO through `steps`; they must deliver the same
    /// packets at the same times.
    fn check_against_plain(
        mut d: LinkDir,
        queue: QueueLimit,
        steps: &[Step],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prelude::*;
        let d = &mut d;
        let mut r = RefLink {
            rate_bps: 2_000_000,
            delay: SimDuration::from_millis(5),
            queue,
            up: true,
            busy_until: SimTime::ZERO,
            board: Vec::new(),
            delivered: Vec::new(),
        };
        let mut next: Option<SimTime> = None; // the pending arrival event
        let mut delivered = Vec::new();
        let mut now = SimTime::ZERO;
        let run_until = |d: &mut LinkDir, next: &mut Option<SimTime>, t: SimTime, out: &mut Vec<(u32, SimTime)>| {
            while let Some(at) = next.filter(|&at| at <= t) {
                let Arrived { pid, survived: ok, next: following, .. } = d.pop_arrival();
                assert!(ok);
                out.push((pid.0, at));
                *next = following;
            }
        };
        for (id, s) in steps.iter().enumerate() {
            let id = id as u32;
            let dt_us = match *s {
                Step::Offer { dt_us, .. } | Step::Change { dt_us, .. } | Step::Down { dt_us } | Step::Up { dt_us } => dt_us,
            };
            now += SimDuration(dt_us * 1_000_000);
            run_until(d, &mut next, now, &mut delivered);
            r.deliver_until(now);
            match *s {
                Step::Offer { wire_bytes, .. } => {
                    let accepted = r.offer(now, id, wire_bytes);
                    match d.enqueue(now, PacketId(id), wire_bytes) {
                        EnqueueOutcome::Accepted { schedule } => {
                            prop_assert!(accepted, "packet {} accepted, the plain FIFO drops it", id);
                            prop_assert_eq!(schedule.is_some(), next.is_none());
                            if let Some(t) = schedule {
                                next = Some(t);
                            }
                        }
                        EnqueueOutcome::Dropped => prop_assert!(!accepted, "packet {} dropped, the plain FIFO takes it", id),
                        o => prop_assert!(false, "{:?}", o),
                    }
                }
                Step::Change { rate_bps, delay_us, .. } => {
                    let delay = SimDuration(delay_us * 1_000_000);
                    d.sync(now);
                    d.set_params(LinkDirParams { bandwidth_bps: rate_bps, delay, ..*d.params() });
                    if let Some(t) = d.retime(now) {
                        next = Some(t);
                    }
                    r.change(now, rate_bps, delay);
                }
                Step::Down { .. } => {
                    d.go_down(now);
                    next = None;
                    r.up = false;
                    r.busy_until = now;
                    r.board.clear();
                }
                Step::Up { .. } => {
                    d.go_up();
                    r.up = true;
                }
            }
        }
        run_until(d, &mut next, SimTime(u64::MAX), &mut delivered);
        r.deliver_until(SimTime(u64::MAX));
        prop_assert_eq!(delivered, r.delivered);
        Ok(())
    }
}
