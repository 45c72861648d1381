//! Queue disciplines of a link transmitter, behind one interface.
//!
//! Two kinds. Admission disciplines (drop-tail, RED, htsim's random drop)
//! decide a packet's fate when it arrives, from the backlog, and keep the
//! queue FIFO, so the link goes on computing transmission times on arrival.
//! Scheduling disciplines (CoDel, FQ-CoDel) hold the packets and decide when
//! the transmitter frees (sojourn time, per-flow round robin), so the link
//! dequeues from them at those times.

mod codel;
mod fq_codel;
mod red;

pub use codel::{Codel, CodelParams};
pub use fq_codel::{FqCodel, FqCodelParams};
pub use red::{RandomDropParams, Red, RedParams};

use crate::link::QueueLimit;
use crate::routing::FlowKey;
use mpsim_core::{PacketId, SimDuration, SimRng, SimTime};

/// A packet as a queue discipline sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QPkt {
    pub pid: PacketId,
    pub wire_bytes: u32,
    /// Hash of the 5-tuple ([`flow_hash`]); FQ-CoDel's flow classifier.
    pub flow_hash: u64,
    /// ECN-capable transport: may be marked instead of dropped.
    pub ect: bool,
    /// When it entered the queue (CoDel's sojourn time starts here).
    pub enqueued: SimTime,
    /// Its 5-tuple, carried through the link to the next hop (see
    /// [`crate::link::Arrived`]).
    pub key: FlowKey,
}

/// What an admission discipline does with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Accept and set CE (RFC 3168 section 5).
    Mark,
    Drop,
}

/// What a discipline did to a packet it holds or has just accepted; the
/// engine frees dropped packets and sets CE on marked ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AqmAction {
    Drop,
    Mark,
}

/// The queue as an admission discipline sees it when a packet arrives.
#[derive(Clone, Copy, Debug)]
pub struct Backlog {
    /// Packets waiting (not the one being serialised).
    pub pkts: u64,
    pub bytes: u64,
    /// The transmitter has been idle this long (None: busy).
    pub idle_for: Option<SimDuration>,
    pub bandwidth_bps: u64,
    pub limit: QueueLimit,
}

/// Which discipline a link direction runs, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum QdiscConfig {
    #[default]
    DropTail,
    Red(RedParams),
    RandomDrop(RandomDropParams),
    Codel(CodelParams),
    FqCodel(FqCodelParams),
}

/// A discipline's state. The larger ones are boxed: every link direction
/// holds one, and most are drop-tail, whose packet path reads only the tag.
#[derive(Clone, Debug)]
pub enum Qdisc {
    DropTail,
    Red(Box<Red>),
    RandomDrop(RandomDropParams),
    Codel(Box<Codel>),
    FqCodel(Box<FqCodel>),
}

impl Qdisc {
    /// A discipline from its configuration; FQ-CoDel takes its hash
    /// perturbation from `rng` (as Linux draws one per qdisc), the others
    /// draw nothing here.
    pub fn new(cfg: QdiscConfig, rng: &mut SimRng) -> Self {
        match cfg {
            QdiscConfig::DropTail => Qdisc::DropTail,
            QdiscConfig::Red(p) => Qdisc::Red(Box::new(Red::new(p))),
            QdiscConfig::RandomDrop(p) => Qdisc::RandomDrop(p),
            QdiscConfig::Codel(p) => Qdisc::Codel(Box::new(Codel::new(p))),
            QdiscConfig::FqCodel(p) => Qdisc::FqCodel(Box::new(FqCodel::new(p, rng.next_u64()))),
        }
    }

    /// Only FQ-CoDel sorts packets by flow; the others need no hash.
    pub fn uses_flow_hash(&self) -> bool {
        matches!(self, Qdisc::FqCodel(_))
    }

    /// Scheduling disciplines hold their packets; admission ones do not.
    pub fn holds_packets(&self) -> bool {
        matches!(self, Qdisc::Codel(_) | Qdisc::FqCodel(_))
    }

    /// Admission disciplines: the fate of an arriving packet. The queue
    /// limit itself is the link's drop-tail check.
    pub fn admit(&mut self, pkt: &QPkt, backlog: &Backlog, rng: &mut SimRng) -> Verdict {
        match self {
            Qdisc::Red(r) => r.on_arrival(pkt, backlog, rng),
            Qdisc::RandomDrop(p) => p.on_arrival(pkt, backlog, rng),
            Qdisc::DropTail | Qdisc::Codel(_) | Qdisc::FqCodel(_) => Verdict::Pass,
        }
    }

    /// Scheduling disciplines: takes `pkt`; false if it is refused (the
    /// queue is full). Packets dropped to make room go to `out`, the
    /// arriving one among them possibly.
    pub fn push(&mut self, pkt: QPkt, limit: QueueLimit, out: &mut Vec<(PacketId, AqmAction)>) -> bool {
        match self {
            Qdisc::Codel(c) => c.push(pkt, limit),
            Qdisc::FqCodel(f) => {
                f.push(pkt, limit, out);
                true
            }
            _ => false,
        }
    }

    /// Scheduling disciplines: the packet to transmit at `now`, if any;
    /// what it drops or marks on the way goes to `out`.
    pub fn pop(&mut self, now: SimTime, out: &mut Vec<(PacketId, AqmAction)>) -> Option<QPkt> {
        match self {
            Qdisc::Codel(c) => c.pop(now, out),
            Qdisc::FqCodel(f) => f.pop(now, out),
            _ => None,
        }
    }

    /// Packets held (scheduling disciplines; 0 for the others).
    pub fn len_pkts(&self) -> usize {
        match self {
            Qdisc::Codel(c) => c.len_pkts(),
            Qdisc::FqCodel(f) => f.len_pkts(),
            _ => 0,
        }
    }

    /// Empties the queue (the link went down); returns what it held.
    pub fn drain(&mut self) -> Vec<PacketId> {
        match self {
            Qdisc::Codel(c) => c.drain(),
            Qdisc::FqCodel(f) => f.drain(),
            _ => Vec::new(),
        }
    }
}

/// A 5-tuple hash for flow classification (Linux `skb_get_hash` plays this
/// role); deterministic, so the same scenario classifies the same way.
pub fn flow_hash(src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> u64 {
    let mut x = ((src as u64) << 32 | dst as u64) ^ ((sport as u64) << 24 | (dport as u64) << 8 | proto as u64).rotate_left(17);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// True if `limit` leaves no room for `wire_bytes` more on top of the
/// given backlog.
pub(crate) fn over_limit(limit: QueueLimit, pkts: usize, bytes: u64, wire_bytes: u32) -> bool {
    match limit {
        QueueLimit::Packets(n) => pkts >= n as usize,
        QueueLimit::Bytes(b) => bytes + wire_bytes as u64 > b,
    }
}
