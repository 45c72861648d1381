//! FQ-CoDel (RFC 8290), as Linux `sch_fq_codel`, the default qdisc of
//! most distributions: packets are hashed by 5-tuple into per-flow queues,
//! served by deficit round robin with a list of new flows ahead of the old
//! ones, each queue under its own CoDel; on overflow the fattest queue
//! loses packets from its head.

use super::codel::{codel_dequeue, CodelParams, CodelSource, CodelVars};
use super::{AqmAction, QPkt};
use crate::link::QueueLimit;
use mpsim_core::{PacketId, SimTime};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FqCodelParams {
    /// Number of flow queues (Linux: 1024).
    pub flows: u32,
    /// DRR quantum (Linux: the device MTU with its header, 1514 bytes).
    pub quantum_bytes: u32,
    pub codel: CodelParams,
    /// Most packets dropped from the fattest queue at once (Linux `drop_batch`).
    pub drop_batch_pkts: u32,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams { flows: 1024, quantum_bytes: 1514, codel: CodelParams::default(), drop_batch_pkts: 64 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct Flow {
    q: VecDeque<QPkt>,
    bytes: u64,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

#[derive(Clone, Debug)]
pub struct FqCodel {
    pub p: FqCodelParams,
    perturb: u64,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    backlog_bytes: u64,
    len: usize,
}

/// One flow's queue, with the qdisc-wide backlog CoDel guards on.
struct FlowSrc<'a> {
    flow: &'a mut Flow,
    backlog_bytes: &'a mut u64,
    len: &'a mut usize,
}

impl CodelSource for FlowSrc<'_> {
    fn dequeue_head(&mut self) -> Option<QPkt> {
        let p = self.flow.q.pop_front()?;
        self.flow.bytes -= p.wire_bytes as u64;
        *self.backlog_bytes -= p.wire_bytes as u64;
        *self.len -= 1;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.backlog_bytes
    }
}

impl FqCodel {
    pub fn new(p: FqCodelParams, perturb: u64) -> Self {
        let n = p.flows.max(1) as usize;
        let flow = Flow { q: VecDeque::new(), bytes: 0, deficit: 0, vars: CodelVars::default(), list: List::None };
        FqCodel {
            p,
            perturb,
            flows: vec![flow; n],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog_bytes: 0,
            len: 0,
        }
    }

    /// The flow queue of a packet (Linux `fq_codel_classify`: a perturbed
    /// hash scaled to the number of queues).
    pub fn classify(&self, flow_hash: u64) -> u32 {
        let h = super::flow_hash((flow_hash ^ self.perturb) as u32, ((flow_hash ^ self.perturb) >> 32) as u32, 0, 0, 0);
        (((h >> 32) * self.flows.len() as u64) >> 32) as u32
    }

    /// Linux `fq_codel_enqueue`: a flow that was idle joins the new flows
    /// with a full quantum; past the limit, `fq_codel_drop` empties half of
    /// the fattest queue (at most a batch) from its head.
    pub fn push(&mut self, pkt: QPkt, limit: QueueLimit, out: &mut Vec<(PacketId, AqmAction)>) {
        let idx = self.classify(pkt.flow_hash);
        let f = &mut self.flows[idx as usize];
        f.bytes += pkt.wire_bytes as u64;
        f.q.push_back(pkt);
        self.backlog_bytes += pkt.wire_bytes as u64;
        self.len += 1;
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.p.quantum_bytes as i64;
            self.new_flows.push_back(idx);
        }
        let over = match limit {
            QueueLimit::Packets(n) => self.len > n as usize,
            QueueLimit::Bytes(b) => self.backlog_bytes > b,
        };
        if over {
            self.drop_from_fattest(out);
        }
    }

    fn drop_from_fattest(&mut self, out: &mut Vec<(PacketId, AqmAction)>) {
        // The first of the largest, for determinism (Linux scans in order too).
        let (idx, max_bytes) =
            self.flows.iter().enumerate().fold((0, 0), |best, (i, f)| if f.bytes > best.1 { (i, f.bytes) } else { best });
        let threshold = max_bytes / 2;
        let f = &mut self.flows[idx];
        let (mut dropped_bytes, mut n) = (0u64, 0u32);
        while let Some(p) = f.q.pop_front() {
            f.bytes -= p.wire_bytes as u64;
            self.backlog_bytes -= p.wire_bytes as u64;
            self.len -= 1;
            dropped_bytes += p.wire_bytes as u64;
            n += 1;
            out.push((p.pid, AqmAction::Drop));
            if n >= self.p.drop_batch_pkts || dropped_bytes >= threshold {
                break;
            }
        }
    }

    /// Linux `fq_codel_dequeue` (RFC 8290 section 4.2).
    pub fn pop(&mut self, now: SimTime, out: &mut Vec<(PacketId, AqmAction)>) -> Option<QPkt> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let quantum = self.p.quantum_bytes as i64;
            let f = &mut self.flows[idx as usize];
            if f.deficit <= 0 {
                f.deficit += quantum;
                self.move_to_old(idx, from_new);
                continue;
            }
            let mut vars = f.vars;
            let codel = self.p.codel;
            let mut src = FlowSrc { flow: f, backlog_bytes: &mut self.backlog_bytes, len: &mut self.len };
            let pkt = codel_dequeue(&codel, &mut vars, now, &mut src, out);
            let f = &mut self.flows[idx as usize];
            f.vars = vars;
            match pkt {
                Some(p) => {
                    f.deficit -= p.wire_bytes as i64;
                    return Some(p);
                }
                // An empty new flow goes through the old list once, so it
                // cannot starve the old flows by coming back as new at once.
                None if from_new && !self.old_flows.is_empty() => self.move_to_old(idx, true),
                None => {
                    f.list = List::None;
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                }
            }
        }
    }

    fn move_to_old(&mut self, idx: u32, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
        self.flows[idx as usize].list = List::Old;
        self.old_flows.push_back(idx);
    }

    pub fn len_pkts(&self) -> usize {
        self.len
    }

    pub fn drain(&mut self) -> Vec<PacketId> {
        let mut all = Vec::with_capacity(self.len);
        for f in &mut self.flows {
            all.extend(f.q.drain(..).map(|p| p.pid));
            f.bytes = 0;
            f.list = List::None;
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.backlog_bytes = 0;
        self.len = 0;
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsim_core::SimDuration;

    fn pkt(i: u32, flow: u64, bytes: u32, at: SimTime) -> QPkt {
        QPkt { pid: PacketId(i), wire_bytes: bytes, flow_hash: flow, ect: false, enqueued: at, key: Default::default() }
    }

    /// Two flows that keep their queues full, one with 1514-byte packets
    /// and one with 300-byte packets (and so five times the packet rate):
    /// DRR gives each the same bytes.
    #[test]
    fn two_backlogged_flows_get_equal_byte_shares() {
        let mut q = FqCodel::new(FqCodelParams::default(), 7);
        assert_ne!(q.classify(1), q.classify(2), "the two flows share a queue");
        let mut out = Vec::new();
        let mut sent = [0u64; 2];
        let mut id = 0;
        let mut now = SimTime::ZERO;
        for _ in 0..20_000 {
            for (flow, bytes) in [(1u64, 1514u32), (2, 300)] {
                while q.flows[q.classify(flow) as usize].q.len() < 10 {
                    q.push(pkt(id, flow, bytes, now), QueueLimit::Packets(10_240), &mut out);
                    id += 1;
                }
            }
            let p = q.pop(now, &mut out).expect("backlogged");
            sent[(p.flow_hash - 1) as usize] += p.wire_bytes as u64;
            now += SimDuration::from_micros(1);
        }
        let share = sent[0] as f64 / (sent[0] + sent[1]) as f64;
        assert!((share - 0.5).abs() < 0.01, "{share} {sent:?}");
    }

    /// A sparse flow (one packet now and then) is served from the new
    /// list ahead of a backlogged one.
    #[test]
    fn a_sparse_flow_goes_ahead_of_a_backlogged_one() {
        let mut q = FqCodel::new(FqCodelParams::default(), 7);
        let mut out = Vec::new();
        for i in 0..50 {
            q.push(pkt(i, 1, 1514, SimTime::ZERO), QueueLimit::Packets(10_240), &mut out);
        }
        for _ in 0..5 {
            q.pop(SimTime::ZERO, &mut out);
        }
        q.push(pkt(99, 2, 100, SimTime::ZERO), QueueLimit::Packets(10_240), &mut out);
        assert_eq!(q.pop(SimTime::ZERO, &mut out).map(|p| p.pid), Some(PacketId(99)));
    }

    #[test]
    fn overflow_drops_from_the_head_of_the_fattest_queue() {
        let mut q = FqCodel::new(FqCodelParams::default(), 7);
        let mut out = Vec::new();
        for i in 0..8 {
            q.push(pkt(i, 1, 1000, SimTime::ZERO), QueueLimit::Packets(10), &mut out);
        }
        q.push(pkt(8, 2, 1000, SimTime::ZERO), QueueLimit::Packets(10), &mut out);
        q.push(pkt(9, 2, 1000, SimTime::ZERO), QueueLimit::Packets(10), &mut out);
        assert!(out.is_empty());
        q.push(pkt(10, 2, 1000, SimTime::ZERO), QueueLimit::Packets(10), &mut out);
        // Half of flow 1's 8000 bytes, from its head.
        let dropped: Vec<u32> = out.iter().map(|o| o.0 .0).collect();
        assert_eq!(dropped, vec![0, 1, 2, 3]);
        assert_eq!(q.len_pkts(), 7);
        assert_eq!(q.drain().len(), 7);
    }
}
