//! The data-level receive side (spec sections 6 and 7): each subflow's
//! received mappings ([`SubflowRx`]) translate its in-order bytes into
//! connection ranges, which the connection reassembles in its shared
//! buffer ([`DataReceiver`]) with its window, autotuning and the peer's
//! DATA_FIN.
//!
//! Sans-IO: both take bytes and mappings in and say what became in order;
//! the connection tells the application and acknowledges.

use crate::buffers::{self, RcvSpace};
use crate::tcp::Receiver;
use mpsim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// One subflow's receive mappings and what it delivered in order.
#[derive(Clone, Debug)]
pub(super) struct SubflowRx {
    /// Mappings (ssn, dsn, len), ordered by ssn.
    map: VecDeque<(u64, u64, u32)>,
    /// Subflow bytes below this were moved to the connection.
    seen: u64,
    /// Data bytes delivered in order at subflow level.
    bytes: u64,
}

impl Default for SubflowRx {
    fn default() -> Self {
        // The subflow's first data byte is 1.
        SubflowRx { map: VecDeque::new(), seen: 1, bytes: 0 }
    }
}

impl SubflowRx {
    /// Data bytes this subflow delivered in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.bytes
    }

    /// Records a received mapping; mappings mostly arrive in order.
    #[inline(always)]
    pub fn insert_map(&mut self, ssn: u64, dsn: u64, len: u32) {
        if self.map.back().is_none_or(|&(s, _, _)| s < ssn) {
            self.map.push_back((ssn, dsn, len));
            return;
        }
        match self.map.binary_search_by_key(&ssn, |&(s, _, _)| s) {
            Ok(i) => self.map[i] = (ssn, dsn, len),
            Err(i) => self.map.insert(i, (ssn, dsn, len)),
        }
    }

    /// The subflow delivered `bytes` more in order: the connection ranges
    /// they hold, into `out`. After a fallback the mapping is infinite
    /// (DSN = SSN, RFC 8684 3.7).
    #[inline(always)]
    pub fn take_in_order(&mut self, bytes: u64, fallback: bool, out: &mut Vec<(u64, u64)>) {
        let (start, end) = (self.seen, self.seen + bytes);
        self.seen = end;
        self.bytes += bytes;
        out.clear();
        if fallback {
            out.push((start, end));
            return;
        }
        // The common case: the bytes are exactly the oldest mapping.
        if let Some(&(ssn, dsn, len)) = self.map.front() {
            if ssn == start && ssn + len as u64 == end {
                self.map.pop_front();
                mpsim_core::spare::release_spare(&mut self.map);
                out.push((dsn, dsn + len as u64));
                return;
            }
        }
        for &(ssn, dsn, len) in self.map.iter().take_while(|m| m.0 < end) {
            let s = ssn.max(start);
            let e = (ssn + len as u64).min(end);
            if s < e {
                out.push((dsn + (s - ssn), dsn + (e - ssn)));
            }
        }
        while self.map.front().is_some_and(|&(ssn, _, len)| ssn + len as u64 <= end) {
            self.map.pop_front();
        }
        mpsim_core::spare::release_spare(&mut self.map);
    }
}

/// The connection's shared receive buffer, relative DSNs (first byte 1).
pub(super) struct DataReceiver {
    rcv: Receiver,
    /// Receive-buffer autotuning of the connection (`rcvbuf_auto`).
    space: Option<RcvSpace>,
    /// The DSN the peer's DATA_FIN takes.
    peer_fin: Option<u64>,
    /// Subflow the peer's DATA_FIN came on first: ours goes back on it (spec 11.1).
    peer_fin_sub: Option<usize>,
    peer_closed: bool,
    /// The peer's DATA_FIN arrived in order and is not yet acknowledged.
    fin_ack_due: bool,
}

impl DataReceiver {
    pub fn new(buf_bytes: u64, space: Option<RcvSpace>) -> Self {
        DataReceiver {
            rcv: Receiver::new(1, buf_bytes),
            space,
            peer_fin: None,
            peer_fin_sub: None,
            peer_closed: false,
            fin_ack_due: false,
        }
    }

    /// Next DSN expected in order (the DATA_ACK).
    #[inline(always)]
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv.rcv_nxt
    }

    /// The connection-level window to advertise, bytes.
    #[inline(always)]
    pub fn window_bytes(&self) -> u64 {
        self.rcv.window_bytes()
    }

    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.rcv.ooo_bytes()
    }

    /// The buffer is autotuned.
    #[inline(always)]
    pub fn autotuned(&self) -> bool {
        self.space.is_some()
    }

    pub fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    pub fn peer_fin(&self) -> Option<u64> {
        self.peer_fin
    }

    pub fn peer_fin_sub(&self) -> Option<usize> {
        self.peer_fin_sub
    }

    /// Connection bytes `[start, end)` arrived: returns how many became
    /// in order (all read by the application at once).
    #[inline(always)]
    pub fn on_data(&mut self, start: u64, end: u64) -> u64 {
        self.rcv.on_data(start, end).delivered
    }

    /// `mptcp_rcv_space_adjust` on `copied` bytes read, with `rtt` the
    /// largest of the subflows' receiver RTT estimates: the window follows
    /// the buffer (`__mptcp_space`).
    pub fn autotune(&mut self, now: SimTime, copied: u64, rtt: Option<SimDuration>) {
        let Some(space) = self.space.as_mut() else { return };
        if space.on_copied(now, copied, rtt, 0) {
            self.rcv.grow_buf_bytes(buffers::win_from_space(space.rcvbuf_bytes));
        }
    }

    /// A DATA_FIN taking DSN `dsn` came on subflow `r`.
    pub fn on_data_fin(&mut self, dsn: u64, r: usize) {
        self.peer_fin = Some(dsn);
        self.peer_fin_sub.get_or_insert(r);
    }

    /// Returns true once, when everything before the peer's DATA_FIN has
    /// arrived: it takes its DSN and the peer has closed.
    pub fn data_fin_in_order(&mut self) -> bool {
        if !self.peer_closed && self.peer_fin == Some(self.rcv.rcv_nxt) {
            self.rcv.rcv_nxt += 1;
            return self.on_peer_closed();
        }
        false
    }

    /// The peer closed (its DATA_FIN, or its FIN after a fallback): a
    /// DATA_ACK for it is due. Returns true the first time.
    pub fn on_peer_closed(&mut self) -> bool {
        if self.peer_closed {
            return false;
        }
        self.peer_closed = true;
        self.fin_ack_due = true;
        true
    }

    /// The DATA_ACK of the peer's DATA_FIN is due; it is being sent.
    #[inline(always)]
    pub fn take_fin_ack_due(&mut self) -> bool {
        std::mem::take(&mut self.fin_ack_due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(rx: &mut SubflowRx, bytes: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        rx.take_in_order(bytes, false, &mut out);
        out
    }

    #[test]
    fn subflow_bytes_become_the_connection_ranges_their_mappings_say() {
        let mut rx = SubflowRx::default();
        rx.insert_map(1, 5_001, 1_000);
        rx.insert_map(1_001, 9_001, 1_000);
        assert_eq!(take(&mut rx, 1_000), vec![(5_001, 6_001)]);
        // Half a mapping, then the rest with nothing more.
        assert_eq!(take(&mut rx, 400), vec![(9_001, 9_401)]);
        assert_eq!(take(&mut rx, 600), vec![(9_401, 10_001)]);
        assert_eq!(rx.delivered_bytes(), 2_000);
    }

    #[test]
    fn bytes_spanning_mappings_split_and_late_mappings_take_their_place() {
        let mut rx = SubflowRx::default();
        // Mappings arrive out of order (retransmitted segments).
        rx.insert_map(1_001, 3_001, 1_000);
        rx.insert_map(1, 1, 1_000);
        assert_eq!(take(&mut rx, 2_000), vec![(1, 1_001), (3_001, 4_001)]);
        // A mapping sent again replaces the one with its subflow sequence.
        rx.insert_map(2_001, 7_001, 500);
        rx.insert_map(2_001, 8_001, 500);
        assert_eq!(take(&mut rx, 500), vec![(8_001, 8_501)]);
    }

    #[test]
    fn after_a_fallback_subflow_bytes_are_connection_bytes() {
        let mut rx = SubflowRx::default();
        let mut out = Vec::new();
        rx.take_in_order(1_000, true, &mut out);
        rx.take_in_order(500, true, &mut out);
        assert_eq!(out, vec![(1_001, 1_501)]);
    }

    #[test]
    fn ranges_from_several_subflows_are_reassembled_in_order() {
        let mut d = DataReceiver::new(100_000, None);
        // The second subflow's range comes first: held out of order.
        assert_eq!(d.on_data(1_001, 2_001), 0);
        assert_eq!(d.ooo_bytes(), 1_000);
        assert_eq!(d.rcv_nxt(), 1);
        assert_eq!(d.on_data(1, 1_001), 2_000);
        assert_eq!((d.rcv_nxt(), d.ooo_bytes()), (2_001, 0));
        // A duplicate (a reinjection) delivers nothing again.
        assert_eq!(d.on_data(1, 1_001), 0);
    }

    #[test]
    fn the_window_shrinks_with_what_is_held_out_of_order() {
        let mut d = DataReceiver::new(10_000, None);
        let open = d.window_bytes();
        d.on_data(2_001, 5_001);
        assert!(d.window_bytes() < open, "{} !< {open}", d.window_bytes());
        d.on_data(1, 2_001);
        assert_eq!(d.window_bytes(), open, "read at once: the buffer is empty again");
    }

    #[test]
    fn the_peer_data_fin_counts_once_everything_before_it_arrived() {
        let mut d = DataReceiver::new(10_000, None);
        d.on_data_fin(1_001, 1);
        d.on_data_fin(1_001, 0);
        assert_eq!(d.peer_fin_sub(), Some(1), "the first subflow it came on");
        assert!(!d.data_fin_in_order(), "data missing");
        d.on_data(1, 1_001);
        assert!(d.data_fin_in_order());
        assert_eq!(d.rcv_nxt(), 1_002, "the DATA_FIN takes a DSN");
        assert!(d.peer_closed() && !d.data_fin_in_order());
        assert!(d.take_fin_ack_due() && !d.take_fin_ack_due());
    }

    #[test]
    fn an_autotuned_window_grows_with_what_the_application_reads() {
        let space = RcvSpace::new(SimTime::ZERO, 1_000);
        let mut d = DataReceiver::new(space.window_bytes(), Some(space));
        let start = d.window_bytes();
        let rtt = Some(SimDuration::from_millis(10));
        let mut now = SimTime::ZERO;
        let mut next = 1;
        for _ in 0..20 {
            now += SimDuration::from_millis(10);
            let copied = d.on_data(next, next + start);
            assert_eq!(copied, start, "within the window");
            next += start;
            d.autotune(now, copied, rtt);
        }
        assert!(d.window_bytes() > start, "{} !> {start}", d.window_bytes());
    }
}
