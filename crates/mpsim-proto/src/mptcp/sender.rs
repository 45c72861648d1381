//! The data-level send side (spec sections 7, 8 and 11.1): the
//! connection's sequence space from the application's writes to the
//! peer's DATA_ACKs, the segments not yet DATA_ACKed and which subflows
//! carried them, the reinjection queue, the DATA_FIN, and the state of
//! the connection-level retransmission timer.
//!
//! Sans-IO: a [`DataSender`] says which segment goes next and learns
//! where it went; which subflow takes it is the scheduler's business.

use mpsim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Sequence values beyond any real transfer ("unlimited" application data).
pub(super) const UNLIMITED: u64 = u64::MAX / 4;

/// Upstream MPTCP's data fragment (`struct mptcp_data_frag`): what one
/// 32 KiB page fragment holds after the fragment's 40-byte header
/// (`mptcp_carve_data_frag`, net/mptcp/protocol.c). Bulk writes fill
/// pages back to back, so fragments start every this many bytes of DSN.
pub(super) const UPSTREAM_DATA_FRAG_BYTES: u64 = 32_768 - 40;

/// A connection-level segment not yet DATA_ACKed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MetaSeg {
    pub dsn: u64,
    pub len: u32,
    /// Subflows that carried it (bit r % 64).
    pub path_mask: u64,
    pub in_reinject_queue: bool,
    /// Its path mask was cleared once after every subflow had carried it.
    pub mask_cleared: bool,
}

/// Where the next segment comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NextSeg {
    pub dsn: u64,
    pub len: u32,
    /// Index into the unacknowledged segments for a reinjection.
    pub reinject: Option<usize>,
}

/// What a DATA_ACK did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DataAck {
    /// Below what was acknowledged or beyond what was sent: ignored.
    Ignored,
    /// No new data acknowledged; the window may have moved.
    Duplicate,
    /// New data acknowledged (the timer stopped); and the DATA_FIN with it.
    Advanced { data_fin_acked: bool },
}

/// Relative DSNs throughout: the first data byte is 1.
#[derive(Clone, Debug)]
pub(super) struct DataSender {
    una: u64,
    nxt: u64,
    /// End of what the application wrote.
    app_end: u64,
    /// Right edge of the peer's connection-level window.
    wnd_right: u64,
    /// Connection-level send buffer (None: unlimited): a fixed `sndbuf`,
    /// or Linux's autotuned MPTCP socket buffer (`Conn::sync_msk_sndbuf`).
    sndbuf_bytes: Option<u64>,
    unacked: VecDeque<MetaSeg>,
    /// DSNs of segments to send again on another subflow, in order.
    reinject: VecDeque<u64>,
    close_requested: bool,
    fin_sent: bool,
    fin_acked: bool,
    /// The connection-level retransmission timer and its backoff exponent.
    rto_at: Option<SimTime>,
    backoff: u32,
}

impl DataSender {
    pub fn new(initial_window_bytes: u64, sndbuf_bytes: Option<u64>) -> Self {
        DataSender {
            una: 1,
            nxt: 1,
            app_end: 1,
            wnd_right: 1 + initial_window_bytes,
            sndbuf_bytes,
            unacked: VecDeque::new(),
            reinject: VecDeque::new(),
            close_requested: false,
            fin_sent: false,
            fin_acked: false,
            rto_at: None,
            backoff: 0,
        }
    }

    pub fn una(&self) -> u64 {
        self.una
    }
    pub fn nxt(&self) -> u64 {
        self.nxt
    }
    pub fn app_end(&self) -> u64 {
        self.app_end
    }
    pub fn fin_sent(&self) -> bool {
        self.fin_sent
    }
    pub fn fin_acked(&self) -> bool {
        self.fin_acked
    }
    pub fn reinject_queue(&self) -> &VecDeque<u64> {
        &self.reinject
    }

    // ----- the application -----

    pub fn write(&mut self, bytes: u64) {
        self.app_end = (self.app_end + bytes).min(UNLIMITED);
    }
    pub fn write_unlimited(&mut self) {
        self.app_end = UNLIMITED;
    }
    /// Nothing more than what was sent already.
    pub fn pause(&mut self) {
        self.app_end = self.nxt;
    }
    pub fn close(&mut self) {
        self.close_requested = true;
    }

    // ----- what goes next -----

    /// End of the new data that may be sent now: the peer's connection-level
    /// window, and the room in the send buffer (spec 7, 11.1).
    #[inline(always)]
    pub fn send_limit(&self) -> u64 {
        let buffer_end = self.sndbuf_bytes.map_or(u64::MAX, |b| self.una.saturating_add(b));
        self.wnd_right.min(buffer_end)
    }

    /// The MPTCP socket's send buffer moved (`__mptcp_sync_sndbuf`).
    pub fn set_sndbuf(&mut self, bytes: u64) {
        self.sndbuf_bytes = Some(bytes);
    }

    /// Nothing to reinject and no new data written.
    #[inline(always)]
    pub fn idle(&self) -> bool {
        self.reinject.is_empty() && self.nxt >= self.app_end
    }

    /// `seg` is new data beyond the send limit.
    pub fn blocked(&self, seg: &NextSeg) -> bool {
        seg.dsn + seg.len as u64 > self.send_limit()
    }

    /// How many full segments of `mss_bytes` of new data the
    /// application's data and the send limit hold.
    pub fn full_segments_of_data(&self, mss_bytes: u32) -> u64 {
        self.send_limit().min(self.app_end).saturating_sub(self.nxt) / mss_bytes as u64
    }

    /// The reinjection at the head of the queue, else new data (of at most
    /// `mss_bytes`). `reinjectable(mask)`: some subflow that may send is
    /// not in `mask`, the subflows that carried a segment.
    #[inline(always)]
    pub fn next_segment(&mut self, mss_bytes: u32, reinjectable: impl Fn(u64) -> bool) -> Option<NextSeg> {
        while let Some(&dsn) = self.reinject.front() {
            match self.queued_for_reinjection(dsn) {
                Some(i) if reinjectable(self.unacked[i].path_mask) => {
                    let s = self.unacked[i];
                    return Some(NextSeg { dsn: s.dsn, len: s.len, reinject: Some(i) });
                }
                Some(i) if !self.unacked[i].mask_cleared => {
                    // Tried everywhere: clear its path mask and retry once (spec 11.1).
                    self.unacked[i].mask_cleared = true;
                    self.unacked[i].path_mask = 0;
                }
                Some(i) => {
                    // Retried already: the subflows' own retransmissions repair it.
                    self.unacked[i].in_reinject_queue = false;
                    self.reinject.pop_front();
                }
                None => {
                    self.reinject.pop_front();
                }
            }
        }
        mpsim_core::spare::release_spare(&mut self.reinject);
        self.new_data(mss_bytes)
    }

    /// The index of the unacknowledged segment at `dsn` if it waits in
    /// the reinjection queue. Segments are in DSN order and disjoint (a
    /// partial DATA_ACK only trims the head), so a binary search finds
    /// the one a walk would: with a thousand segments in flight a walk
    /// per reinjection made a burst of them quadratic.
    #[inline(always)]
    fn queued_for_reinjection(&self, dsn: u64) -> Option<usize> {
        let i = self.unacked.partition_point(|s| s.dsn < dsn);
        self.unacked.get(i).is_some_and(|s| s.dsn == dsn && s.in_reinject_queue).then_some(i)
    }

    fn new_data(&self, mss_bytes: u32) -> Option<NextSeg> {
        if self.nxt >= self.app_end {
            return None;
        }
        let len = (self.app_end - self.nxt).min(mss_bytes as u64) as u32;
        Some(NextSeg { dsn: self.nxt, len, reinject: None })
    }

    /// The redundant scheduler's next segment for subflow `r`, whose
    /// pointer is at `from`: an unacknowledged one it has not carried,
    /// else new data within the send limit. With `only_new`, new data only.
    pub fn redundant_next(&mut self, r: usize, from: u64, only_new: bool, mss_bytes: u32) -> Option<NextSeg> {
        let from = from.max(self.una);
        if !only_new {
            let i = self.unacked.partition_point(|s| s.dsn < from);
            if let Some(s) = self.unacked.get(i).copied() {
                if s.path_mask & bit(r) == 0 {
                    self.unacked[i].in_reinject_queue = true;
                    return Some(NextSeg { dsn: s.dsn, len: s.len, reinject: Some(i) });
                }
            }
        }
        let seg = self.new_data(mss_bytes)?;
        (seg.dsn + seg.len as u64 <= self.send_limit()).then_some(seg)
    }

    /// The oldest segment not DATA_ACKed.
    pub fn head(&self) -> Option<MetaSeg> {
        self.unacked.front().copied()
    }

    /// The oldest segment not DATA_ACKed, to be sent again.
    pub fn head_as_reinjection(&mut self) -> Option<NextSeg> {
        let head = self.unacked.front_mut()?;
        head.in_reinject_queue = true;
        Some(NextSeg { dsn: head.dsn, len: head.len, reinject: Some(0) })
    }

    /// What was sent of the data fragment at the head, not yet DATA_ACKed,
    /// to be sent again: `__mptcp_retrans` resends `mptcp_rtx_head` up to
    /// its `already_sent` (net/mptcp/protocol.c). Fragments are
    /// `frag_bytes` of DSN each from the first data byte.
    pub fn head_fragment_as_reinjections(&mut self, frag_bytes: u64) -> Vec<NextSeg> {
        let Some(head) = self.unacked.front() else { return Vec::new() };
        let frag_end = 1 + ((head.dsn - 1) / frag_bytes + 1) * frag_bytes;
        let n = self.unacked.partition_point(|s| s.dsn < frag_end);
        self.unacked
            .range_mut(..n)
            .enumerate()
            .map(|(i, s)| {
                s.in_reinject_queue = true;
                NextSeg { dsn: s.dsn, len: s.len, reinject: Some(i) }
            })
            .collect()
    }

    /// Subflows that carried the unacknowledged segment `i`.
    #[inline(always)]
    pub fn path_mask(&self, i: usize) -> u64 {
        self.unacked[i].path_mask
    }

    /// `seg` went out on subflow `r`. Returns true if it was a reinjection.
    #[inline(always)]
    pub fn on_sent(&mut self, r: usize, seg: &NextSeg) -> bool {
        match seg.reinject {
            Some(i) => {
                let s = &mut self.unacked[i];
                s.path_mask |= bit(r);
                s.in_reinject_queue = false;
                self.leave_reinjection_queue(seg.dsn);
                true
            }
            None => {
                let path_mask = bit(r);
                self.unacked.push_back(MetaSeg {
                    dsn: seg.dsn,
                    len: seg.len,
                    path_mask,
                    in_reinject_queue: false,
                    mask_cleared: false,
                });
                self.nxt += seg.len as u64;
                false
            }
        }
    }

    /// `dsn` went out: out of the reinjection queue. A DSN is queued only
    /// while its segment is not (`in_reinject_queue`), and every path
    /// that clears the flag takes the DSN out, so it is there at most
    /// once; usually it is the head, which `next_segment` just returned.
    #[inline(always)]
    fn leave_reinjection_queue(&mut self, dsn: u64) {
        if self.reinject.front() == Some(&dsn) {
            self.reinject.pop_front();
            mpsim_core::spare::release_spare(&mut self.reinject);
            debug_assert!(!self.reinject.contains(&dsn), "DSN {dsn} queued twice for reinjection");
        } else {
            self.reinject.retain(|&d| d != dsn);
        }
    }

    /// Queues for another subflow the data still outstanding on subflow
    /// `r`, as (DSN, length), that is not yet DATA_ACKed. What `r`
    /// delivered already is the receiver's: moving it would only send it
    /// twice (RFC 8684 3.3.6; the out-of-tree kernel's
    /// `mptcp_reinject_data` walks the subflow's write queue, which holds
    /// only unacknowledged segments).
    pub fn reinject_outstanding(&mut self, r: usize, outstanding: impl IntoIterator<Item = (u64, u32)>) {
        for (dsn, len) in outstanding {
            let end = dsn + len as u64;
            // In DSN order; the head may have been trimmed by a partial DATA_ACK.
            let first = self.unacked.partition_point(|s| s.dsn + s.len as u64 <= dsn);
            for seg in self.unacked.range_mut(first..).take_while(|s| s.dsn < end) {
                if seg.path_mask & bit(r) != 0 && !seg.in_reinject_queue {
                    seg.in_reinject_queue = true;
                    self.reinject.push_back(seg.dsn);
                }
            }
        }
    }

    /// Bytes waiting in the reinjection queue.
    #[cfg(test)]
    pub fn queued_for_reinjection_bytes(&self) -> u64 {
        self.unacked.iter().filter(|s| s.in_reinject_queue).map(|s| s.len as u64).sum()
    }

    // ----- DATA_FIN -----

    /// The application closed and everything it wrote went out: the
    /// DATA_FIN is due (once).
    pub fn fin_due(&self) -> bool {
        self.close_requested && self.nxt >= self.app_end && !self.fin_sent
    }

    pub fn on_fin_sent(&mut self) {
        self.fin_sent = true;
    }

    /// After a fallback the subflow's FIN is the DATA_FIN; it was acknowledged.
    pub fn on_fallback_fin_acked(&mut self) {
        self.fin_acked = true;
    }

    // ----- DATA_ACK -----

    /// A DATA_ACK of `rel` (relative) with the peer's window of `wnd_bytes`.
    #[inline(always)]
    pub fn on_data_ack(&mut self, rel: u64, wnd_bytes: u64) -> DataAck {
        if rel < self.una || rel > self.nxt + self.fin_sent as u64 {
            return DataAck::Ignored;
        }
        self.wnd_right = self.wnd_right.max(rel + wnd_bytes);
        if rel == self.una {
            return DataAck::Duplicate;
        }
        self.una = rel;
        while self.unacked.front().is_some_and(|s| s.dsn + s.len as u64 <= rel) {
            self.unacked.pop_front();
        }
        mpsim_core::spare::release_spare(&mut self.unacked);
        if let Some(head) = self.unacked.front_mut() {
            if head.dsn < rel {
                // Partly acknowledged: keep the rest.
                head.len -= (rel - head.dsn) as u32;
                head.dsn = rel;
            }
        }
        self.backoff = 0;
        self.rto_at = None;
        let data_fin_acked = self.fin_sent && rel > self.nxt && !self.fin_acked;
        self.fin_acked |= data_fin_acked;
        DataAck::Advanced { data_fin_acked }
    }

    // ----- the connection-level retransmission timer (spec section 8) -----

    /// When the timer fires.
    #[inline(always)]
    pub fn timer(&self) -> Option<SimTime> {
        self.rto_at
    }

    /// Data or the DATA_FIN wait for a DATA_ACK: the timer must run.
    #[inline(always)]
    pub fn retransmission_pending(&self) -> bool {
        !self.unacked.is_empty() || (self.fin_sent && !self.fin_acked)
    }

    pub fn stop_timer(&mut self) {
        self.rto_at = None;
    }

    pub fn arm_timer(&mut self, at: SimTime) {
        self.rto_at = Some(at);
    }

    /// The default timeout: twice `rto`, doubled per timeout since the last
    /// DATA_ACK progress.
    pub fn backed_off(&self, rto: SimDuration) -> SimDuration {
        rto.saturating_mul(2u64 << self.backoff.min(10))
    }

    /// The timer fired (the out-of-tree kernel's rule): the oldest segment
    /// goes again on any subflow, or the DATA_FIN if nothing else waits.
    pub fn on_timeout(&mut self) {
        self.rto_at = None;
        self.backoff = (self.backoff + 1).min(10);
        if let Some(head) = self.unacked.front_mut() {
            head.path_mask = 0;
            if !head.in_reinject_queue {
                head.in_reinject_queue = true;
                self.reinject.push_front(head.dsn);
            }
        } else {
            self.resend_lone_fin();
        }
    }

    /// Upstream's timer fired: the DATA_FIN goes again if nothing else waits
    /// (the data is retransmitted by `__mptcp_retrans`).
    pub fn on_upstream_timeout(&mut self) {
        self.rto_at = None;
        if self.unacked.is_empty() {
            self.resend_lone_fin();
        }
    }

    fn resend_lone_fin(&mut self) {
        if self.fin_sent && !self.fin_acked {
            self.fin_sent = false;
        }
    }
}

fn bit(r: usize) -> u64 {
    1u64 << (r % 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    const ANY: fn(u64) -> bool = |_| true;

    /// A sender with `bytes` written and a 64 KB window.
    fn sender(bytes: u64) -> DataSender {
        let mut s = DataSender::new(65_536, None);
        s.write(bytes);
        s
    }

    /// Sends every segment of new data on subflow `r` until there is none.
    fn send_all_on(s: &mut DataSender, r: usize) -> Vec<NextSeg> {
        std::iter::from_fn(|| {
            let seg = s.next_segment(MSS, ANY)?;
            s.on_sent(r, &seg);
            Some(seg)
        })
        .collect()
    }

    #[test]
    fn new_data_is_cut_into_segments_and_mapped_in_order() {
        let mut s = sender(2_500);
        let segs = send_all_on(&mut s, 1);
        let ranges: Vec<(u64, u32)> = segs.iter().map(|g| (g.dsn, g.len)).collect();
        assert_eq!(ranges, vec![(1, 1000), (1001, 1000), (2001, 500)]);
        assert_eq!(s.nxt(), 2_501);
        assert!(s.idle());
        assert_eq!(s.path_mask(2), 0b10);
    }

    #[test]
    fn the_head_fragment_is_resent_up_to_what_was_sent_of_it() {
        let mut s = sender(10_000);
        send_all_on(&mut s, 0);
        // Fragments of 4,000 bytes: [1, 4001), [4001, 8001), ...
        let again = s.head_fragment_as_reinjections(4_000);
        let ranges: Vec<(u64, Option<usize>)> = again.iter().map(|g| (g.dsn, g.reinject)).collect();
        assert_eq!(ranges, vec![(1, Some(0)), (1001, Some(1)), (2001, Some(2)), (3001, Some(3))]);
        // Half of the head fragment DATA_ACKed: its rest only.
        s.on_data_ack(2_501, 65_536);
        let again = s.head_fragment_as_reinjections(4_000);
        assert_eq!(again.iter().map(|g| g.dsn).collect::<Vec<_>>(), vec![2_501, 3_001]);
        // In the second fragment, only what was sent of it.
        let mut s = sender(5_500);
        send_all_on(&mut s, 0);
        s.on_data_ack(4_001, 65_536);
        let again = s.head_fragment_as_reinjections(4_000);
        assert_eq!(again.iter().map(|g| (g.dsn, g.len)).collect::<Vec<_>>(), vec![(4_001, 1_000), (5_001, 500)]);
    }

    #[test]
    fn the_send_limit_is_the_window_or_the_send_buffer_whichever_ends_first() {
        let mut s = DataSender::new(3_000, None);
        s.write(10_000);
        assert_eq!(s.send_limit(), 3_001);
        assert_eq!(s.full_segments_of_data(MSS), 3);
        let mut buffered = DataSender::new(65_536, Some(2_000));
        buffered.write(10_000);
        assert_eq!(buffered.send_limit(), 2_001);
        assert!(buffered.blocked(&NextSeg { dsn: 1_501, len: 1_000, reinject: None }));
    }

    #[test]
    fn a_data_ack_frees_what_it_covers_and_moves_the_window() {
        let mut s = DataSender::new(3_000, None);
        s.write(3_000);
        send_all_on(&mut s, 0);
        s.arm_timer(SimTime(5));
        assert_eq!(s.on_data_ack(1_501, 10_000), DataAck::Advanced { data_fin_acked: false });
        // The partly acknowledged segment keeps its rest.
        assert_eq!(s.head().map(|h| (h.dsn, h.len)), Some((1_501, 500)));
        assert_eq!(s.send_limit(), 11_501);
        assert_eq!(s.timer(), None);
        assert!(s.retransmission_pending());
        assert_eq!(s.on_data_ack(1_501, 20_000), DataAck::Duplicate);
        assert_eq!(s.send_limit(), 21_501);
        // The window's right edge never moves back.
        assert_eq!(s.on_data_ack(1_501, 0), DataAck::Duplicate);
        assert_eq!(s.send_limit(), 21_501);
        assert_eq!(s.on_data_ack(1_000, 20_000), DataAck::Ignored);
        assert_eq!(s.on_data_ack(3_002, 20_000), DataAck::Ignored, "beyond what was sent");
        assert_eq!(s.on_data_ack(3_001, 20_000), DataAck::Advanced { data_fin_acked: false });
        assert!(!s.retransmission_pending());
    }

    #[test]
    fn the_data_fin_is_due_after_the_data_and_acknowledged_past_it() {
        let mut s = sender(1_000);
        s.close();
        assert!(!s.fin_due(), "data first");
        send_all_on(&mut s, 0);
        assert!(s.fin_due());
        s.on_fin_sent();
        assert!(!s.fin_due());
        assert_eq!(s.on_data_ack(1_001, 0), DataAck::Advanced { data_fin_acked: false });
        assert!(s.retransmission_pending(), "the DATA_FIN waits");
        assert_eq!(s.on_data_ack(1_002, 0), DataAck::Advanced { data_fin_acked: true });
        assert!(s.fin_acked() && !s.retransmission_pending());
    }

    #[test]
    fn only_what_is_outstanding_on_a_subflow_is_reinjected() {
        let mut s = sender(5_000);
        send_all_on(&mut s, 0);
        // Subflow 0 delivered the first three segments; two are outstanding.
        s.reinject_outstanding(0, [(3_001, 1_000), (4_001, 1_000)]);
        assert_eq!(s.reinject_queue().iter().copied().collect::<Vec<_>>(), vec![3_001, 4_001]);
        assert_eq!(s.queued_for_reinjection_bytes(), 2_000);
        // Again: nothing is queued twice; another subflow carried none of them.
        s.reinject_outstanding(0, [(3_001, 1_000)]);
        s.reinject_outstanding(1, [(1, 1_000)]);
        assert_eq!(s.reinject_queue().len(), 2);
        // The reinjection goes first, and its mask records both subflows.
        let seg = s.next_segment(MSS, ANY).expect("a reinjection");
        assert_eq!((seg.dsn, seg.reinject.is_some()), (3_001, true));
        assert!(s.on_sent(1, &seg));
        assert_eq!(s.path_mask(3), 0b11);
        assert_eq!(s.reinject_queue().iter().copied().collect::<Vec<_>>(), vec![4_001]);
    }

    #[test]
    fn reinjections_leave_the_queue_wherever_they_stand_in_it() {
        let mut s = sender(10_000);
        send_all_on(&mut s, 0);
        s.reinject_outstanding(0, (0..10).map(|k| (1 + k * 1_000, 1_000)));
        // Two segments DATA_ACKed and the third trimmed to [2_501, 3_001):
        // their DSNs in the queue find no segment and are dropped.
        s.on_data_ack(2_501, 65_536);
        let seg = s.next_segment(MSS, ANY).expect("a reinjection");
        assert_eq!((seg.dsn, seg.reinject), (3_001, Some(1)));
        s.on_sent(1, &seg);
        let queue = |s: &DataSender| s.reinject_queue().iter().copied().collect::<Vec<_>>();
        assert_eq!(queue(&s), (4..10).map(|k| 1 + k * 1_000).collect::<Vec<_>>());
        // The trimmed head, sent again by another path, was not queued under its new DSN.
        let head = s.head_as_reinjection().expect("a head");
        assert_eq!(head.dsn, 2_501);
        s.on_sent(1, &head);
        assert_eq!(queue(&s).len(), 6);
        // A segment from the middle of the queue leaves it; the order stays.
        let mid = s.redundant_next(2, 6_001, false, MSS).expect("a segment subflow 2 lacks");
        assert_eq!(mid.dsn, 6_001);
        s.on_sent(2, &mid);
        assert_eq!(queue(&s), vec![4_001, 5_001, 7_001, 8_001, 9_001]);
        let order: Vec<u64> = std::iter::from_fn(|| {
            let seg = s.next_segment(MSS, ANY).filter(|g| g.reinject.is_some())?;
            s.on_sent(3, &seg);
            Some(seg.dsn)
        })
        .collect();
        assert_eq!(order, vec![4_001, 5_001, 7_001, 8_001, 9_001]);
        assert!(s.reinject_queue().is_empty());
        assert_eq!(s.path_mask(4), 0b101, "6_001 went on subflow 2 only");
        assert_eq!(s.path_mask(5), 0b1001, "7_001 on subflow 3");
    }

    #[test]
    fn a_reinjection_no_subflow_can_take_is_retried_once_with_a_clear_mask() {
        let mut s = sender(1_000);
        send_all_on(&mut s, 0);
        s.reinject_outstanding(0, [(1, 1_000)]);
        // Only subflow 0 may send, and it carried the segment.
        let only_0 = |mask: u64| mask & 1 == 0;
        let seg = s.next_segment(MSS, only_0).expect("retried after clearing the mask");
        assert_eq!(seg.reinject, Some(0));
        s.on_sent(0, &seg);
        s.reinject_outstanding(0, [(1, 1_000)]);
        assert_eq!(s.next_segment(MSS, only_0), None, "left to the subflow's own retransmissions");
        assert!(s.reinject_queue().is_empty());
    }

    #[test]
    fn the_timer_requeues_the_head_on_every_subflow_and_backs_off() {
        let mut s = sender(2_000);
        send_all_on(&mut s, 0);
        let rto = SimDuration::from_millis(200);
        assert_eq!(s.backed_off(rto), SimDuration::from_millis(400));
        s.on_timeout();
        assert_eq!(s.backed_off(rto), SimDuration::from_millis(800));
        assert_eq!(s.head().map(|h| (h.path_mask, h.in_reinject_queue)), Some((0, true)));
        assert_eq!(s.reinject_queue().front(), Some(&1));
        s.on_data_ack(2_001, 0);
        assert_eq!(s.backed_off(rto), SimDuration::from_millis(400), "progress resets the backoff");
    }

    #[test]
    fn a_lone_data_fin_goes_again_on_a_timeout() {
        for upstream in [false, true] {
            let mut s = sender(0);
            s.close();
            s.on_fin_sent();
            if upstream {
                s.on_upstream_timeout();
            } else {
                s.on_timeout();
            }
            assert!(s.fin_due(), "upstream {upstream}");
        }
    }

    #[test]
    fn the_redundant_scheduler_walks_what_a_subflow_has_not_carried() {
        let mut s = sender(3_000);
        send_all_on(&mut s, 0);
        let seg = s.redundant_next(1, 1, false, MSS).expect("the first segment");
        assert_eq!((seg.dsn, seg.reinject), (1, Some(0)));
        s.on_sent(1, &seg);
        assert_eq!(s.redundant_next(1, 1_001, false, MSS).map(|g| g.dsn), Some(1_001));
        // A backup subflow takes only new data: none is left.
        assert_eq!(s.redundant_next(2, 1, true, MSS), None);
    }
}
