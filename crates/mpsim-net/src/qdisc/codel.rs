//! CoDel (RFC 8289), as Linux `sch_codel` (include/net/codel_impl.h): a
//! FIFO that drops (or ECN-marks) at dequeue once the sojourn time has
//! stayed above `target` for an `interval`, at a rate that grows with the
//! square root of the drop count.

use super::{over_limit, AqmAction, QPkt};
use crate::link::QueueLimit;
use mpsim_core::{PacketId, SimDuration, SimTime};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (RFC 8289 section 4.4: 5 ms).
    pub target: SimDuration,
    /// Sliding window of the minimum delay (section 4.5: 100 ms).
    pub interval: SimDuration,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// A backlog of at most this is never dropped from (Linux: the device
    /// MTU with its link header, 1514 bytes; RFC 8289's maxpacket).
    pub mtu_bytes: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: SimDuration::from_millis(5), interval: SimDuration::from_millis(100), ecn: false, mtu_bytes: 1514 }
    }
}

/// The control loop's state (Linux `struct codel_vars`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelVars {
    /// Drops (and marks) since entering the dropping state.
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// When the sojourn time will have been above target for an interval.
    pub first_above_time: Option<SimTime>,
    /// Next drop while dropping.
    pub drop_next: SimTime,
}

/// Where CoDel dequeues from: a whole FIFO or one FQ-CoDel flow.
pub(crate) trait CodelSource {
    fn dequeue_head(&mut self) -> Option<QPkt>;
    /// Bytes left in the queue whose backlog guards against dropping
    /// (FQ-CoDel: the whole qdisc's, as Linux passes `sch->qstats.backlog`).
    fn backlog_bytes(&self) -> u64;
}

/// RFC 8289 section 5.5, `control_law`: t + interval / sqrt(count).
pub fn control_law(t: SimTime, interval: SimDuration, count: u32) -> SimTime {
    t + SimDuration((interval.as_ps() as f64 / (count.max(1) as f64).sqrt()) as u64)
}

/// RFC 8289 `dodequeue`'s test (Linux `codel_should_drop`): true once the
/// sojourn time has stayed at or above target for an interval.
fn should_drop(p: &CodelParams, v: &mut CodelVars, pkt: Option<&QPkt>, now: SimTime, backlog_bytes: u64) -> bool {
    let Some(pkt) = pkt else {
        v.first_above_time = None;
        return false;
    };
    let sojourn = now - pkt.enqueued;
    if sojourn < p.target || backlog_bytes <= p.mtu_bytes as u64 {
        v.first_above_time = None;
        return false;
    }
    match v.first_above_time {
        None => {
            v.first_above_time = Some(now + p.interval);
            false
        }
        Some(t) => now >= t,
    }
}

/// Drops (or marks) the head: true if it was marked and may be sent.
fn drop_or_mark(p: &CodelParams, pkt: &QPkt, out: &mut Vec<(PacketId, AqmAction)>) -> bool {
    if p.ecn && pkt.ect {
        out.push((pkt.pid, AqmAction::Mark));
        true
    } else {
        out.push((pkt.pid, AqmAction::Drop));
        false
    }
}

/// RFC 8289 section 5.5 `dequeue` (Linux `codel_dequeue`).
pub(crate) fn codel_dequeue<S: CodelSource>(
    p: &CodelParams,
    v: &mut CodelVars,
    now: SimTime,
    src: &mut S,
    out: &mut Vec<(PacketId, AqmAction)>,
) -> Option<QPkt> {
    let mut pkt = src.dequeue_head();
    let Some(head) = pkt else {
        v.first_above_time = None;
        v.dropping = false;
        return None;
    };
    let drop = should_drop(p, v, Some(&head), now, src.backlog_bytes());
    if v.dropping {
        if !drop {
            v.dropping = false;
        } else {
            while v.dropping && now >= v.drop_next {
                // Dropping is true only while should_drop held on a packet.
                let Some(head) = pkt else { break };
                v.count += 1;
                if drop_or_mark(p, &head, out) {
                    v.drop_next = control_law(v.drop_next, p.interval, v.count);
                    return Some(head);
                }
                pkt = src.dequeue_head();
                if !should_drop(p, v, pkt.as_ref(), now, src.backlog_bytes()) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, p.interval, v.count);
                }
            }
        }
    } else if drop {
        if !drop_or_mark(p, &head, out) {
            pkt = src.dequeue_head();
            should_drop(p, v, pkt.as_ref(), now, src.backlog_bytes());
        }
        v.dropping = true;
        // Section 5.5: if the queue went above target soon after it last
        // went below, resume near the drop rate that controlled it then.
        let delta = v.count.wrapping_sub(v.lastcount);
        let recent = (now.as_ps() as i128 - v.drop_next.as_ps() as i128) < 16 * p.interval.as_ps() as i128;
        v.count = if delta > 1 && delta < u32::MAX / 2 && recent { delta } else { 1 };
        v.lastcount = v.count;
        v.drop_next = control_law(now, p.interval, v.count);
    }
    pkt
}

/// A CoDel FIFO (Linux `sch_codel`).
#[derive(Clone, Debug)]
pub struct Codel {
    pub p: CodelParams,
    pub vars: CodelVars,
    q: VecDeque<QPkt>,
    bytes: u64,
}

struct Fifo<'a> {
    q: &'a mut VecDeque<QPkt>,
    bytes: &'a mut u64,
}

impl CodelSource for Fifo<'_> {
    fn dequeue_head(&mut self) -> Option<QPkt> {
        let p = self.q.pop_front()?;
        *self.bytes -= p.wire_bytes as u64;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.bytes
    }
}

impl Codel {
    pub fn new(p: CodelParams) -> Self {
        Codel { p, vars: CodelVars::default(), q: VecDeque::new(), bytes: 0 }
    }

    /// Tail drop when full (Linux `codel_qdisc_enqueue`).
    pub fn push(&mut self, pkt: QPkt, limit: QueueLimit) -> bool {
        if over_limit(limit, self.q.len(), self.bytes, pkt.wire_bytes) {
            return false;
        }
        self.bytes += pkt.wire_bytes as u64;
        self.q.push_back(pkt);
        true
    }

    pub fn pop(&mut self, now: SimTime, out: &mut Vec<(PacketId, AqmAction)>) -> Option<QPkt> {
        let mut src = Fifo { q: &mut self.q, bytes: &mut self.bytes };
        codel_dequeue(&self.p, &mut self.vars, now, &mut src, out)
    }

    pub fn len_pkts(&self) -> usize {
        self.q.len()
    }

    pub fn drain(&mut self) -> Vec<PacketId> {
        self.bytes = 0;
        self.q.drain(..).map(|p| p.pid).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000_000)
    }

    fn pkt(i: u32, at: SimTime, ect: bool) -> QPkt {
        QPkt { pid: PacketId(i), wire_bytes: 1000, flow_hash: 0, ect, enqueued: at, key: Default::default() }
    }

    /// A standing queue: the head has always waited 50 ms or more; one dequeue per
    /// millisecond. Returns the dequeue times at which drops happened.
    fn drop_times(p: CodelParams, until_ms: u64) -> Vec<u64> {
        let mut c = Codel::new(p);
        let mut next = 0u32;
        let mut out = Vec::new();
        let mut drops = Vec::new();
        for t in 0..until_ms {
            // Keep 20 packets queued, all of them at least 50 ms old.
            while c.len_pkts() < 20 {
                c.push(pkt(next, SimTime::ZERO, false), QueueLimit::Packets(1000));
                next += 1;
            }
            out.clear();
            c.pop(ms(t + 50), &mut out);
            drops.extend(out.iter().filter(|o| o.1 == AqmAction::Drop).map(|_| t + 50));
        }
        drops
    }

    /// RFC 8289 section 5.5: the first drop comes an interval after the
    /// sojourn time first exceeds target, then drop k (from 0) follows drop k-1 by
    /// interval / sqrt(k) (here rounded up to the 1 ms dequeue grid, the
    /// next drop being scheduled from the exact previous deadline).
    #[test]
    fn drops_follow_the_control_law() {
        let p = CodelParams::default();
        let drops = drop_times(p, 1_000);
        assert_eq!(drops[0], 150, "an interval after the first sojourn above target");
        let mut deadline = ms(150);
        for (k, &t) in drops.iter().enumerate().skip(1) {
            deadline = control_law(deadline, p.interval, k as u32);
            let expect_ms = deadline.as_ps().div_ceil(1_000_000_000);
            assert_eq!(t, expect_ms, "drop {k}");
        }
        assert!(drops.len() > 10);
    }

    #[test]
    fn a_short_queue_is_never_dropped_from() {
        let mut c = Codel::new(CodelParams::default());
        let mut out = Vec::new();
        for t in 0..2_000u64 {
            // One packet (below the MTU guard) that waited 50 ms.
            c.push(pkt(t as u32, ms(t), false), QueueLimit::Packets(10));
            assert!(c.pop(ms(t + 50), &mut out).is_some());
        }
        assert!(out.is_empty());
    }

    #[test]
    fn with_ecn_capable_packets_codel_marks_instead_of_dropping() {
        let mut c = Codel::new(CodelParams { ecn: true, ..Default::default() });
        let mut out = Vec::new();
        let mut sent = 0;
        for t in 0..1_000u64 {
            while c.len_pkts() < 20 {
                c.push(pkt(t as u32, ms(t), true), QueueLimit::Packets(1000));
            }
            sent += c.pop(ms(t + 50), &mut out).is_some() as u32;
        }
        assert_eq!(sent, 1_000);
        assert!(out.len() > 10 && out.iter().all(|o| o.1 == AqmAction::Mark), "{out:?}");
    }

    #[test]
    fn the_queue_limit_tail_drops() {
        let mut c = Codel::new(CodelParams::default());
        assert!(c.push(pkt(0, ms(0), false), QueueLimit::Packets(1)));
        assert!(!c.push(pkt(1, ms(0), false), QueueLimit::Packets(1)));
        assert_eq!(c.drain(), vec![PacketId(0)]);
    }
}
