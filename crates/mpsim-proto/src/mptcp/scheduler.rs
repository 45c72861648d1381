//! Packet schedulers (spec section 11): which subflow takes the next
//! segment. `default` is the out-of-tree Linux lowest-RTT-first scheduler,
//! `roundrobin` and `redundant` its two alternatives.

use super::connection::MptcpConnection;
use super::send::NextSeg;
use super::SchedulerKind;
use mpsim_cc::CaState;

impl MptcpConnection {
    /// Subflow `r` may be scheduled at all (its window aside).
    fn usable(&self, r: usize) -> bool {
        let s = &self.subs[r];
        s.ready && !s.gone && !s.pf && s.sf.state.can_send() && self.cc[r].ca_state != CaState::Loss
    }

    pub(super) fn has_room(&self, r: usize, len: u32) -> bool {
        self.subs[r].sf.has_send_room(&self.cc[r], len as u64)
    }

    fn carried(seg: &NextSeg, mask: u64, r: usize) -> bool {
        seg.reinject.is_some() && mask & (1u64 << (r % 64)) != 0
    }

    pub(super) fn pick_ignoring_window(&mut self, seg: &NextSeg) -> Option<usize> {
        match self.cfg.scheduler {
            SchedulerKind::RoundRobin => self.pick_round_robin(seg),
            _ => self.pick_lowest_rtt(seg),
        }
    }

    fn mask_of(&self, seg: &NextSeg) -> u64 {
        seg.reinject.map_or(0, |i| self.unacked[i].path_mask)
    }

    /// Out-of-tree Linux `default` (spec 11.1): non-backup subflows first,
    /// backup ones only if no non-backup subflow is usable. Within the class,
    /// the lowest SRTT among the usable subflows with window space that have
    /// not carried the segment; if one of those only waits for window space,
    /// wait for it. A segment every usable subflow of the class carried goes
    /// to the lowest-SRTT one with space.
    pub(super) fn pick_lowest_rtt(&self, seg: &NextSeg) -> Option<usize> {
        let mask = self.mask_of(seg);
        // Per class (regular, backup), per carried (no, yes): a usable
        // subflow exists; the best one with room.
        let mut usable = [[false; 2]; 2];
        let mut best: [[Option<(u64, usize)>; 2]; 2] = [[None; 2]; 2];
        for r in 0..self.subs.len() {
            if !self.usable(r) {
                continue;
            }
            let (class, carried) = (self.subs[r].backup as usize, Self::carried(seg, mask, r) as usize);
            usable[class][carried] = true;
            let srtt_ps = self.cc[r].srtt.map_or(0, |s| s.as_ps());
            // Ties go to the lower index, as the list order of Linux.
            if best[class][carried].is_none_or(|(b, _)| srtt_ps < b) && self.has_room(r, seg.len) {
                best[class][carried] = Some((srtt_ps, r));
            }
        }
        let class = if usable[0][0] || usable[0][1] { 0 } else { 1 };
        let carried = if usable[class][0] { 0 } else { 1 };
        best[class][carried].map(|(_, r)| r)
    }

    /// The subflows `pick_lowest_rtt` would choose among for new data of
    /// `len` bytes, into `out` as (SRTT, index), best first: those with room
    /// in the class it would take.
    pub(super) fn rank_lowest_rtt(&self, len: u32, out: &mut Vec<(u64, usize)>) {
        out.clear();
        let mut regular_usable = false;
        for r in 0..self.subs.len() {
            if !self.usable(r) {
                continue;
            }
            let backup = self.subs[r].backup;
            if !backup && !regular_usable {
                regular_usable = true;
                out.clear(); // backup subflows only when no regular one is usable
            }
            if (backup && regular_usable) || !self.has_room(r, len) {
                continue;
            }
            out.push((self.cc[r].srtt.map_or(0, |s| s.as_ps()), r));
        }
        out.sort_unstable();
    }

    /// Out-of-tree Linux `roundrobin` (spec 11.2; one segment per turn,
    /// cwnd-limited): the next usable subflow with space after the last one
    /// used. Backup flags are ignored. A reinjection goes to a subflow that
    /// has not carried it, else to any.
    fn pick_round_robin(&mut self, seg: &NextSeg) -> Option<usize> {
        let n = self.subs.len();
        let mask = self.mask_of(seg);
        let start = self.rr_last.wrapping_add(1);
        let order = || (0..n).map(move |k| (start + k) % n);
        let ready = |r: usize| self.usable(r) && self.has_room(r, seg.len);
        let r = order().find(|&r| ready(r) && !Self::carried(seg, mask, r)).or_else(|| order().find(|&r| ready(r)))?;
        self.rr_last = r;
        Some(r)
    }

    /// Out-of-tree Linux `redundant`: every segment on every usable
    /// non-backup subflow. Each subflow walks the unacknowledged data from
    /// its own pointer, then takes new data.
    pub(super) fn schedule_redundant(&mut self) {
        let n = self.subs.len();
        let non_backup_usable = (0..n).any(|r| !self.subs[r].backup && self.usable(r));
        loop {
            let mut sent = false;
            for k in 0..n {
                let r = (self.rr_last.wrapping_add(1 + k)) % n;
                let backup_ok = !non_backup_usable;
                if !self.usable(r) || !self.has_room(r, self.cfg.tcp.mss_bytes) || (self.subs[r].backup && !backup_ok) {
                    continue;
                }
                if let Some(seg) = self.redundant_next_for(r, backup_ok) {
                    self.rr_last = r;
                    self.subs[r].redundant_next = seg.dsn + seg.len as u64;
                    self.transmit_on(r, seg);
                    sent = true;
                }
            }
            if !sent {
                break;
            }
        }
    }

    /// The next segment subflow `r` has not carried: an unacknowledged one
    /// after its pointer, else new data. A backup subflow takes only data
    /// never sent before.
    fn redundant_next_for(&mut self, r: usize, backup_only_new: bool) -> Option<NextSeg> {
        let from = self.subs[r].redundant_next.max(self.data_una);
        let bit = 1u64 << (r % 64);
        if !backup_only_new {
            let i = self.unacked.partition_point(|s| s.dsn < from);
            if let Some(s) = self.unacked.get(i).copied() {
                if s.path_mask & bit == 0 {
                    self.unacked[i].in_reinject_queue = true;
                    return Some(NextSeg { dsn: s.dsn, len: s.len, reinject: Some(i) });
                }
            }
        }
        if self.data_nxt >= self.app_end {
            return None;
        }
        let len = (self.app_end - self.data_nxt).min(self.cfg.tcp.mss_bytes as u64) as u32;
        let seg = NextSeg { dsn: self.data_nxt, len, reinject: None };
        (seg.dsn + len as u64 <= self.send_limit()).then_some(seg)
    }
}
