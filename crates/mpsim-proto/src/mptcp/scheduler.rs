//! Packet schedulers (spec section 11): which subflow takes the next
//! segment. `default` is the out-of-tree Linux lowest-RTT-first scheduler,
//! `roundrobin` and `redundant` its two alternatives, `upstream` the
//! scheduler of Linux's in-tree MPTCP.
//!
//! Sans-IO: a [`Scheduler`] owns only its own memory (the round-robin
//! turn, the upstream burst and average pacing rates) and decides from
//! what the connection tells it about each subflow through [`PathStates`].

use super::SchedulerKind;

/// Upstream `MPTCP_SEND_BURST_SIZE`.
const UPSTREAM_BURST_BYTES: u64 = 65_428;
/// Upstream `net.mptcp.stale_loss_cnt`: retransmission intervals without
/// progress after which a subflow is stale.
const UPSTREAM_STALE_LOSS_CNT: u8 = 4;

/// What a scheduler needs to know about subflow `r` of a connection
/// (`0..count()`, in the connection's list order).
pub(super) trait PathStates {
    fn count(&self) -> usize;
    /// May be scheduled at all, its window aside: fully established, not
    /// closed, not potentially failed, allowed to send, not in loss recovery.
    fn usable(&self, r: usize) -> bool;
    /// Upstream `mptcp_subflow_active`: fully established, may send, not
    /// stale (loss recovery does not matter).
    fn active(&self, r: usize) -> bool;
    fn backup(&self, r: usize) -> bool;
    /// Smoothed RTT, picoseconds (0 before the first sample).
    fn srtt_ps(&self, r: usize) -> u64;
    /// The congestion and receive windows take a segment of `len_bytes` now.
    fn has_room(&self, r: usize, len_bytes: u32) -> bool;
    /// Full-size segments the windows take now, one after the other.
    fn full_segments_with_room(&self, r: usize) -> u64;
    /// Socket memory held (`sk_wmem_queued`), bytes.
    fn wmem_queued_bytes(&self, r: usize) -> u64;
    /// Current pacing rate (`tcp_update_pacing_rate`), bytes per second.
    fn pacing_rate_bps(&self, r: usize) -> u64;
    /// `sk_stream_memory_free`: its send buffer has room.
    fn send_buffer_free(&self, r: usize) -> bool;
    /// Data queued on it and not acknowledged at subflow level, bytes.
    fn unacked_bytes(&self, r: usize) -> u64;
}

/// The segment to place.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub len_bytes: u32,
    /// Sent before: a reinjection.
    pub reinjection: bool,
    /// Subflows that carried it already (bit r % 64), for a reinjection.
    pub carried_mask: u64,
}

impl Candidate {
    fn carried_by(&self, r: usize) -> bool {
        self.reinjection && self.carried_mask & (1u64 << (r % 64)) != 0
    }
}

/// A scheduler's memory between decisions.
#[derive(Clone, Debug)]
pub(super) struct Scheduler {
    kind: SchedulerKind,
    /// Round-robin and redundant: the subflow of the last turn.
    rr_last: usize,
    /// Upstream: the subflow of the current burst and the bytes left in it
    /// (`msk->last_snd`, `msk->snd_burst`).
    last_snd: Option<usize>,
    snd_burst_bytes: u64,
    /// Upstream: each subflow's `avg_pacing_rate`, bytes per second (0
    /// until first scheduled).
    avg_pacing_rate_bps: Vec<u64>,
}

impl Scheduler {
    pub fn new(kind: SchedulerKind) -> Self {
        Scheduler { kind, rr_last: usize::MAX, last_snd: None, snd_burst_bytes: 0, avg_pacing_rate_bps: Vec::new() }
    }

    /// The subflow for `seg` by this scheduler's rule, if one may take it
    /// now. `new_data_room_bytes`: new data the connection may still send
    /// (an upstream burst is no longer than it).
    pub fn pick(&mut self, paths: &impl PathStates, seg: &Candidate, new_data_room_bytes: u64) -> Option<usize> {
        match self.kind {
            SchedulerKind::RoundRobin => self.pick_round_robin(paths, seg),
            SchedulerKind::Upstream => self.pick_upstream(paths, seg, new_data_room_bytes),
            _ => Self::pick_lowest_rtt(paths, seg),
        }
    }

    /// New data of `len_bytes` went out on the subflow of the current burst.
    pub fn on_new_data_sent(&mut self, len_bytes: u32) {
        if self.kind == SchedulerKind::Upstream {
            self.snd_burst_bytes = self.snd_burst_bytes.saturating_sub(len_bytes as u64);
        }
    }

    /// Out-of-tree Linux `default` (spec 11.1): non-backup subflows first,
    /// backup ones only if no non-backup subflow is usable. Within the class,
    /// the lowest SRTT among the usable subflows with window space that have
    /// not carried the segment; if one of those only waits for window space,
    /// wait for it. A segment every usable subflow of the class carried goes
    /// to the lowest-SRTT one with space.
    pub fn pick_lowest_rtt(paths: &impl PathStates, seg: &Candidate) -> Option<usize> {
        // Per class (regular, backup), per carried (no, yes): a usable
        // subflow exists; the best one with room.
        let mut usable = [[false; 2]; 2];
        let mut best: [[Option<(u64, usize)>; 2]; 2] = [[None; 2]; 2];
        for r in 0..paths.count() {
            if !paths.usable(r) {
                continue;
            }
            let (class, carried) = (paths.backup(r) as usize, seg.carried_by(r) as usize);
            usable[class][carried] = true;
            let srtt_ps = paths.srtt_ps(r);
            // Ties go to the lower index, as the list order of Linux.
            if best[class][carried].is_none_or(|(b, _)| srtt_ps < b) && paths.has_room(r, seg.len_bytes) {
                best[class][carried] = Some((srtt_ps, r));
            }
        }
        let class = if usable[0][0] || usable[0][1] { 0 } else { 1 };
        let carried = if usable[class][0] { 0 } else { 1 };
        best[class][carried].map(|(_, r)| r)
    }

    /// The subflows `pick_lowest_rtt` would choose among for full-size new
    /// data, best first, into `out` as (SRTT, index, room): those of the
    /// class it would take that have room, and how many full segments each
    /// takes one after the other.
    #[inline(always)]
    pub fn rank_lowest_rtt(paths: &impl PathStates, out: &mut Vec<(u64, usize, u64)>) {
        out.clear();
        let mut regular_usable = false;
        for r in 0..paths.count() {
            if !paths.usable(r) {
                continue;
            }
            let backup = paths.backup(r);
            if !backup && !regular_usable {
                regular_usable = true;
                out.clear(); // backup subflows only when no regular one is usable
            }
            if backup && regular_usable {
                continue;
            }
            let room = paths.full_segments_with_room(r);
            if room > 0 {
                // Sorted as it grows, by SRTT then index (indices come in
                // ascending order): rarely more than two have room.
                let srtt_ps = paths.srtt_ps(r);
                let at = out.partition_point(|&(s, _, _)| s <= srtt_ps);
                out.insert(at, (srtt_ps, r, room));
            }
        }
    }

    /// Out-of-tree Linux `roundrobin` (spec 11.2; one segment per turn,
    /// cwnd-limited): the next usable subflow with space after the last one
    /// used. Backup flags are ignored. A reinjection goes to a subflow that
    /// has not carried it, else to any.
    fn pick_round_robin(&mut self, paths: &impl PathStates, seg: &Candidate) -> Option<usize> {
        let n = paths.count();
        let start = self.rr_last.wrapping_add(1);
        let order = || (0..n).map(move |k| (start + k) % n);
        let ready = |r: usize| paths.usable(r) && paths.has_room(r, seg.len_bytes);
        let r = order().find(|&r| ready(r) && !seg.carried_by(r)).or_else(|| order().find(|&r| ready(r)))?;
        self.rr_last = r;
        Some(r)
    }

    /// Redundant: the subflow whose turn comes `k` places after the last
    /// one that took a segment, of `n`.
    pub fn turn_after_last(&self, k: usize, n: usize) -> usize {
        self.rr_last.wrapping_add(1 + k) % n
    }

    /// Redundant: subflow `r` took a segment on its turn.
    pub fn took_turn(&mut self, r: usize) {
        self.rr_last = r;
    }

    /// Upstream Linux `mptcp_subflow_get_send` (spec 11.4). New data stays
    /// on the subflow of the current burst while the burst lasts and that
    /// subflow's send buffer has room. Otherwise each active subflow's
    /// linger time, its queued bytes over its average pacing rate, is
    /// estimated; the lowest among the non-backup subflows (the backup ones
    /// if none is active) starts a burst of up to 64 KiB, if its send buffer
    /// has room; if not, nothing is sent until an ACK frees some.
    /// Reinjections take the same choice without the burst, preferring a
    /// subflow that has not carried them.
    fn pick_upstream(&mut self, paths: &impl PathStates, seg: &Candidate, new_data_room_bytes: u64) -> Option<usize> {
        if !seg.reinjection {
            if let Some(r) = self.last_snd.filter(|&r| self.snd_burst_bytes > 0 && paths.active(r)) {
                if paths.send_buffer_free(r) {
                    return Some(r);
                }
            }
        }
        if self.avg_pacing_rate_bps.len() < paths.count() {
            self.avg_pacing_rate_bps.resize(paths.count(), 0);
        }
        // Per class (regular, backup), per carried (no, yes): the lowest linger.
        let mut best: [[Option<(u128, usize)>; 2]; 2] = [[None; 2]; 2];
        let mut regular_active = false;
        for r in 0..paths.count() {
            if !paths.active(r) {
                continue;
            }
            let backup = paths.backup(r);
            regular_active |= !backup;
            if self.avg_pacing_rate_bps[r] == 0 {
                self.avg_pacing_rate_bps[r] = paths.pacing_rate_bps(r);
            }
            let pace = self.avg_pacing_rate_bps[r].max(1) as u128;
            let linger = ((paths.wmem_queued_bytes(r) as u128) << 32) / pace;
            let slot = &mut best[backup as usize][seg.carried_by(r) as usize];
            if slot.is_none_or(|(b, _)| linger < b) {
                *slot = Some((linger, r));
            }
        }
        let class = if regular_active { 0 } else { 1 };
        let (_, r) = best[class][0].or(best[class][1])?;
        if !paths.send_buffer_free(r) {
            return None;
        }
        if !seg.reinjection {
            self.start_burst(paths, r, new_data_room_bytes);
        }
        Some(r)
    }

    /// A new burst on `r`: its average pacing rate moves toward the
    /// current one in proportion to the burst and what is queued.
    fn start_burst(&mut self, paths: &impl PathStates, r: usize, new_data_room_bytes: u64) {
        let burst = UPSTREAM_BURST_BYTES.min(new_data_room_bytes);
        self.last_snd = Some(r);
        self.snd_burst_bytes = burst;
        if burst == 0 {
            return;
        }
        let wmem = paths.wmem_queued_bytes(r) as u128;
        let (avg, now) = (self.avg_pacing_rate_bps[r] as u128, paths.pacing_rate_bps(r) as u128);
        let b = burst as u128;
        self.avg_pacing_rate_bps[r] = ((avg * wmem + now * b) / (b + wmem)).min(u64::MAX as u128) as u64;
    }

    /// Upstream `mptcp_subflow_get_retrans`: the first active subflow with
    /// nothing outstanding, a non-backup one if any; a backup one only if
    /// every subflow with data outstanding went `min_stale_count` (more
    /// than one) retransmission intervals without progress.
    pub fn pick_retrans(paths: &impl PathStates, min_stale_count: u8) -> Option<usize> {
        let (mut pick, mut backup) = (None, None);
        for r in (0..paths.count()).filter(|&r| paths.active(r) && paths.unacked_bytes(r) == 0) {
            let slot = if paths.backup(r) { &mut backup } else { &mut pick };
            slot.get_or_insert(r);
        }
        pick.or(backup.filter(|_| min_stale_count > 1))
    }
}

/// Upstream's count of MPTCP retransmission intervals a subflow spent with
/// data outstanding and no progress (`stale_count`, `stale_rcv_tstamp` of
/// Linux). Progress is the subflow's cumulative ACK, where Linux looks at
/// the time of the last segment received; either is looked at only when an
/// interval ends (`mptcp_pm_subflow_chk_stale`, net/mptcp/pm.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Staleness {
    count: u8,
    /// The cumulative ACK when counting began.
    mark: u64,
}

impl Staleness {
    /// Intervals counted so far (0: not counting).
    pub fn count(&self) -> u8 {
        self.count
    }

    /// One more retransmission interval with data outstanding, the
    /// cumulative ACK at `una`. Returns true when the subflow is stale
    /// (`mptcp_pm_subflow_chk_stale`: more than `stale_loss_cnt` intervals).
    pub fn on_interval(&mut self, una: u64) -> bool {
        if self.count == 0 {
            self.mark = una;
            self.count = 1;
            return false;
        }
        if self.mark != una {
            // Progress since counting began: `stale_count = 0`.
            self.count = 0;
            return false;
        }
        self.count = self.count.saturating_add(1);
        // `mptcp_pm_subflows_chk_stale` (net/mptcp/pm.c) returns while
        // `stale_count <= stale_loss_cnt`.
        self.count > UPSTREAM_STALE_LOSS_CNT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One subflow's state as a scheduler sees it.
    #[derive(Clone, Copy)]
    struct Path {
        usable: bool,
        active: bool,
        backup: bool,
        srtt_ms: u64,
        room_segs: u64,
        wmem_bytes: u64,
        pace_bps: u64,
        buffer_free: bool,
        unacked_bytes: u64,
    }

    /// A usable subflow with `room_segs` segments of window and an SRTT of `srtt_ms`.
    fn path(srtt_ms: u64, room_segs: u64) -> Path {
        Path {
            usable: true,
            active: true,
            backup: false,
            srtt_ms,
            room_segs,
            wmem_bytes: 0,
            pace_bps: 1_000_000,
            buffer_free: true,
            unacked_bytes: 0,
        }
    }

    fn backup(p: Path) -> Path {
        Path { backup: true, ..p }
    }

    impl PathStates for Vec<Path> {
        fn count(&self) -> usize {
            self.len()
        }
        fn usable(&self, r: usize) -> bool {
            self[r].usable
        }
        fn active(&self, r: usize) -> bool {
            self[r].active
        }
        fn backup(&self, r: usize) -> bool {
            self[r].backup
        }
        fn srtt_ps(&self, r: usize) -> u64 {
            self[r].srtt_ms * 1_000_000_000
        }
        fn has_room(&self, r: usize, _len_bytes: u32) -> bool {
            self[r].room_segs > 0
        }
        fn full_segments_with_room(&self, r: usize) -> u64 {
            self[r].room_segs
        }
        fn wmem_queued_bytes(&self, r: usize) -> u64 {
            self[r].wmem_bytes
        }
        fn pacing_rate_bps(&self, r: usize) -> u64 {
            self[r].pace_bps
        }
        fn send_buffer_free(&self, r: usize) -> bool {
            self[r].buffer_free
        }
        fn unacked_bytes(&self, r: usize) -> u64 {
            self[r].unacked_bytes
        }
    }

    const MSS: u32 = 1400;
    const NEW: Candidate = Candidate { len_bytes: MSS, reinjection: false, carried_mask: 0 };

    fn reinjection(carried_by: &[usize]) -> Candidate {
        let carried_mask = carried_by.iter().fold(0, |m, &r| m | 1u64 << r);
        Candidate { len_bytes: MSS, reinjection: true, carried_mask }
    }

    fn pick(kind: SchedulerKind, paths: &Vec<Path>, seg: Candidate) -> Option<usize> {
        Scheduler::new(kind).pick(paths, &seg, u64::MAX)
    }

    #[test]
    fn default_takes_the_lowest_rtt_subflow_with_room() {
        let paths = vec![path(40, 5), path(10, 5), path(20, 5)];
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), Some(1));
    }

    #[test]
    fn default_waits_for_the_lowest_rtt_subflow_among_those_with_room_only() {
        // The fastest is full: the next fastest with room takes the segment.
        let paths = vec![path(40, 5), path(10, 0), path(20, 5)];
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), Some(2));
        // No subflow has room: nothing is sent.
        let full = vec![path(40, 0), path(10, 0)];
        assert_eq!(pick(SchedulerKind::Default, &full, NEW), None);
    }

    #[test]
    fn default_ties_go_to_the_first_subflow() {
        let paths = vec![path(10, 5), path(10, 5)];
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), Some(0));
    }

    #[test]
    fn default_uses_a_backup_subflow_only_when_no_regular_one_is_usable() {
        let mut paths = vec![path(40, 5), backup(path(10, 5))];
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), Some(0));
        // A regular subflow without room still keeps the backup one idle.
        paths[0].room_segs = 0;
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), None);
        paths[0].usable = false;
        assert_eq!(pick(SchedulerKind::Default, &paths, NEW), Some(1));
    }

    #[test]
    fn default_reinjects_on_a_subflow_that_has_not_carried_the_segment() {
        let paths = vec![path(10, 5), path(40, 5)];
        assert_eq!(pick(SchedulerKind::Default, &paths, reinjection(&[0])), Some(1));
        // Carried everywhere: the lowest RTT with room.
        assert_eq!(pick(SchedulerKind::Default, &paths, reinjection(&[0, 1])), Some(0));
    }

    #[test]
    fn default_ranks_subflows_by_rtt_with_their_room_in_the_class_it_would_use() {
        let paths = vec![path(40, 3), backup(path(5, 9)), path(10, 2), path(20, 0)];
        let mut ranked = Vec::new();
        Scheduler::rank_lowest_rtt(&paths, &mut ranked);
        let order: Vec<(usize, u64)> = ranked.iter().map(|&(_, r, room)| (r, room)).collect();
        assert_eq!(order, vec![(2, 2), (0, 3)]);
    }

    #[test]
    fn default_ranks_equal_rtts_in_list_order() {
        let paths = vec![path(30, 1), path(10, 4), path(30, 2), path(10, 3), path(20, 5)];
        let mut ranked = vec![(0, 9, 9)]; // a previous round's ranking is dropped
        Scheduler::rank_lowest_rtt(&paths, &mut ranked);
        let order: Vec<usize> = ranked.iter().map(|&(_, r, _)| r).collect();
        assert_eq!(order, vec![1, 3, 4, 0, 2]);
    }

    #[test]
    fn round_robin_turns_through_the_usable_subflows_with_room() {
        let mut paths = vec![path(10, 5), path(20, 5), path(30, 5)];
        paths[1].usable = false;
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        let turns: Vec<Option<usize>> = (0..4).map(|_| s.pick(&paths, &NEW, u64::MAX)).collect();
        assert_eq!(turns, vec![Some(0), Some(2), Some(0), Some(2)]);
    }

    #[test]
    fn round_robin_prefers_a_subflow_that_has_not_carried_a_reinjection() {
        let paths = vec![path(10, 5), path(20, 5), path(30, 5)];
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        assert_eq!(s.pick(&paths, &reinjection(&[0, 1]), u64::MAX), Some(2));
        assert_eq!(s.pick(&paths, &reinjection(&[0, 1, 2]), u64::MAX), Some(0));
    }

    #[test]
    fn redundant_turns_start_after_the_last_subflow_used() {
        let mut s = Scheduler::new(SchedulerKind::Redundant);
        assert_eq!(s.turn_after_last(0, 3), 0);
        s.took_turn(1);
        assert_eq!((0..3).map(|k| s.turn_after_last(k, 3)).collect::<Vec<_>>(), vec![2, 0, 1]);
    }

    #[test]
    fn upstream_takes_the_shortest_linger_time() {
        // Linger = queued bytes / pacing rate: 100 KB at 10 MB/s beats 20 KB at 1 MB/s.
        let mut paths = vec![path(10, 5), path(10, 5)];
        paths[0].wmem_bytes = 20_000;
        paths[1].wmem_bytes = 100_000;
        paths[1].pace_bps = 10_000_000;
        assert_eq!(pick(SchedulerKind::Upstream, &paths, NEW), Some(1));
    }

    #[test]
    fn upstream_ignores_the_window_but_not_the_send_buffer() {
        let mut paths = vec![path(10, 0)];
        assert_eq!(pick(SchedulerKind::Upstream, &paths, NEW), Some(0));
        paths[0].buffer_free = false;
        assert_eq!(pick(SchedulerKind::Upstream, &paths, NEW), None);
    }

    #[test]
    fn upstream_keeps_a_burst_on_its_subflow_until_it_is_spent() {
        let mut paths = vec![path(10, 5), path(10, 5)];
        let mut s = Scheduler::new(SchedulerKind::Upstream);
        assert_eq!(s.pick(&paths, &NEW, 3 * MSS as u64), Some(0));
        // Subflow 0 now lingers longer, but the burst (3 segments, all the
        // connection may send) stays on it.
        paths[0].wmem_bytes = 1_000_000;
        s.on_new_data_sent(MSS);
        assert_eq!(s.pick(&paths, &NEW, u64::MAX), Some(0));
        s.on_new_data_sent(MSS);
        s.on_new_data_sent(MSS);
        assert_eq!(s.pick(&paths, &NEW, u64::MAX), Some(1));
    }

    #[test]
    fn upstream_uses_backup_subflows_only_when_no_regular_one_is_active() {
        let mut paths = vec![path(10, 5), backup(path(10, 5))];
        paths[0].wmem_bytes = 1_000_000;
        assert_eq!(pick(SchedulerKind::Upstream, &paths, NEW), Some(0));
        paths[0].active = false;
        assert_eq!(pick(SchedulerKind::Upstream, &paths, NEW), Some(1));
    }

    #[test]
    fn upstream_retransmits_on_an_idle_active_subflow() {
        let mut paths = vec![path(10, 5), path(10, 5), backup(path(10, 5))];
        paths[0].unacked_bytes = 1400;
        assert_eq!(Scheduler::pick_retrans(&paths, 1), Some(1));
        // The only idle regular subflow is busy too: the backup one only
        // once the others went more than one interval without progress.
        paths[1].unacked_bytes = 1400;
        assert_eq!(Scheduler::pick_retrans(&paths, 1), None);
        assert_eq!(Scheduler::pick_retrans(&paths, 2), Some(2));
    }

    #[test]
    fn a_subflow_is_stale_after_more_than_four_intervals_without_progress() {
        // `mptcp_pm_subflows_chk_stale` returns while `stale_count <=
        // stale_loss_cnt`: the fifth interval makes the subflow stale.
        let mut s = Staleness::default();
        let stale: Vec<bool> = (0..5).map(|_| s.on_interval(100)).collect();
        assert_eq!(stale, vec![false, false, false, false, true]);
        assert_eq!(s.count(), 5);
        // Progress is seen at the next interval (`mptcp_pm_subflow_chk_stale`
        // compares `rcv_tstamp` then): the count drops to 0 there and
        // starts again at the one after. Until then it stays, and keeps
        // the subflow's timer out of the MPTCP timer's interval.
        let mut s = Staleness::default();
        assert!(!s.on_interval(100) && !s.on_interval(100));
        assert_eq!(s.count(), 2);
        assert!(!s.on_interval(200));
        assert_eq!(s.count(), 0);
        assert!(!s.on_interval(200));
        assert_eq!(s.count(), 1);
    }
}
