//! Pieces every controller shares: slow start (spec 1.5), the Linux Reno
//! counter (spec 2, `tcp_reno_cong_avoid`), the Reno fallback used when a
//! coupled controller has nothing to couple with (spec 1.7), and the
//! bookkeeping for per-subflow controller state.

use crate::{CcMode, SubflowCc};

/// RFC 3465 limit on the slow-start increase per ACK, packets.
const ABC_LIMIT_PKTS: f64 = 2.0;

/// Slow start on `s` for `acked_pkts` newly acknowledged packets. Returns
/// the packets left over for congestion avoidance when the window reached
/// ssthresh (what Linux `tcp_slow_start` returns).
///
/// Reference: `cwnd += min(N, 2)`, capped at ssthresh. Linux: the whole
/// integer `acked` count, capped at ssthresh.
pub fn slow_start(s: &mut SubflowCc, acked_pkts: f64, mode: CcMode) -> f64 {
    let inc = match mode {
        CcMode::Reference => acked_pkts.min(ABC_LIMIT_PKTS),
        CcMode::Linux => acked_pkts.round().max(1.0),
    };
    let new_cwnd = (s.cwnd_pkts + inc).min(s.ssthresh_pkts).min(s.cwnd_clamp_pkts);
    let used = (new_cwnd - s.cwnd_pkts).max(0.0);
    s.cwnd_pkts = new_cwnd;
    match mode {
        CcMode::Reference => (acked_pkts - used).max(0.0) * (new_cwnd >= s.ssthresh_pkts) as u8 as f64,
        CcMode::Linux => (acked_pkts.round().max(1.0) - used).max(0.0),
    }
}

/// Linux `tcp_cong_avoid_ai(w, acked)`: one packet per `w` packets acknowledged.
pub fn linux_reno_ca(s: &mut SubflowCc, w: f64, acked: i64) {
    let w = w.max(1.0) as i64;
    if s.cwnd_cnt >= w {
        s.cwnd_cnt = 0;
        s.cwnd_pkts += 1.0;
    }
    s.cwnd_cnt += acked;
    if s.cwnd_cnt >= w {
        let delta = s.cwnd_cnt / w;
        s.cwnd_cnt -= delta * w;
        s.cwnd_pkts += delta as f64;
    }
    s.cwnd_pkts = s.cwnd_pkts.min(s.cwnd_clamp_pkts);
}

/// Runs slow start on `s` if it is in slow start and returns the packets
/// left for congestion avoidance, `None` when nothing is left. Coupled sums
/// must be taken after this, so they see the window slow start produced.
pub(crate) fn after_slow_start(s: &mut SubflowCc, acked_pkts: f64, mode: CcMode) -> Option<f64> {
    if !s.in_slow_start() {
        return Some(acked_pkts);
    }
    let left = slow_start(s, acked_pkts, mode);
    (left > 0.0).then_some(left)
}

/// Old-kernel slow start (Linux 3.14-3.19 `tcp_slow_start`), used by the
/// controllers that test `cwnd <= ssthresh` in linux mode (spec 1.5). That
/// kernel capped the window at `ssthresh + 1`, so an ACK arriving with
/// `cwnd == ssthresh` still adds one packet instead of stalling forever.
pub(crate) fn linux_slow_start_le(s: &mut SubflowCc, acked_pkts: f64) {
    let cap = s.ssthresh_pkts.floor() + 1.0;
    s.cwnd_pkts = (s.cwnd_pkts + linux_acked(acked_pkts) as f64).min(cap).min(s.cwnd_clamp_pkts);
}

/// The counter of Linux's MPTCP "coupled" and "balia" modules: one packet
/// after `thresh + 1` ACK events, whatever each ACK covers (spec 8.2, 10.2).
/// Returns whether the window grew.
pub(crate) fn linux_ack_event_counter(s: &mut SubflowCc, thresh: u64) -> bool {
    if s.cwnd_cnt >= i64::try_from(thresh).unwrap_or(i64::MAX) {
        let grew = s.cwnd_pkts < s.cwnd_clamp_pkts;
        if grew {
            s.cwnd_pkts += 1.0;
        }
        s.cwnd_cnt = 0;
        grew
    } else {
        s.cwnd_cnt += 1;
        false
    }
}

/// Linux's integer `acked` for an ACK covering `acked_pkts` packets.
pub(crate) fn linux_acked(acked_pkts: f64) -> i64 {
    acked_pkts.round().max(1.0) as i64
}

/// Reno congestion avoidance for `acked_pkts` packets (spec 2), no slow start.
pub(crate) fn reno_ca(s: &mut SubflowCc, acked_pkts: f64, mode: CcMode) {
    match mode {
        CcMode::Reference => {
            s.cwnd_pkts = (s.cwnd_pkts + acked_pkts / s.cwnd_pkts.max(1.0)).min(s.cwnd_clamp_pkts);
        }
        CcMode::Linux => {
            let w = s.cwnd_pkts;
            linux_reno_ca(s, w, linux_acked(acked_pkts));
        }
    }
}

/// A whole Reno ACK (`tcp_reno_cong_avoid`): slow start, then congestion
/// avoidance with the packets slow start did not use.
/// Spec 1.7: a subflow outside the coupled set (no RTT yet, not
/// established) grows as uncoupled Reno. Returns true when it did, so the
/// coupled rule must not run; also true for an index out of range.
pub(crate) fn reno_unless_coupled(subflows: &mut [SubflowCc], r: usize, acked_pkts: f64, mode: CcMode) -> bool {
    match subflows.get_mut(r) {
        None => true,
        Some(s) if !s.is_coupled() => {
            reno_on_ack(s, acked_pkts, mode);
            true
        }
        Some(_) => false,
    }
}

pub(crate) fn reno_on_ack(s: &mut SubflowCc, acked_pkts: f64, mode: CcMode) {
    let mut acked = acked_pkts;
    if s.in_slow_start() {
        acked = slow_start(s, acked, mode);
        if acked <= 0.0 {
            return;
        }
    }
    reno_ca(s, acked, mode);
}

/// Reno ssthresh (spec 2): `max(flight/2, 2)`; Linux halves `snd_cwnd`.
pub(crate) fn reno_ssthresh(s: &SubflowCc, mode: CcMode) -> f64 {
    match mode {
        CcMode::Reference => (s.flight_pkts / 2.0).max(2.0),
        CcMode::Linux => (s.cwnd_pkts / 2.0).floor().max(2.0),
    }
}

/// Indices of the subflows that take part in coupling (spec 1.7), in list order.
pub(crate) fn coupled(subflows: &[SubflowCc]) -> impl Iterator<Item = usize> + '_ {
    subflows.iter().enumerate().filter(|(_, s)| s.is_coupled()).map(|(k, _)| k)
}

/// `w_total = Σ w̃_k` over the coupled set (spec 1.1, 1.7), packets.
pub(crate) fn w_total_pkts(subflows: &[SubflowCc]) -> f64 {
    coupled(subflows).map(|k| subflows[k].w_tilde()).sum()
}

/// Linux `cnt_established`: subflows past their handshake that may send.
/// Unlike the coupled set it does not require an RTT sample.
pub(crate) fn established_count(subflows: &[SubflowCc]) -> usize {
    subflows.iter().filter(|s| s.established && s.can_send).count()
}

/// The controller's state for subflow `r`, created on first use so that a
/// caller that never announced subflow `r` still works.
pub(crate) fn slot<T: Default>(states: &mut Vec<T>, r: usize) -> &mut T {
    if states.len() <= r {
        states.resize_with(r + 1, T::default);
    }
    &mut states[r]
}

/// Fresh state for a subflow appended at `r` (a reused index starts over).
pub(crate) fn reset_slot<T: Default>(states: &mut Vec<T>, r: usize) {
    *slot(states, r) = T::default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_slow_start_is_limited_to_two_packets_per_ack() {
        let mut s = SubflowCc::new(10.0, 1448);
        let left = slow_start(&mut s, 4.0, CcMode::Reference);
        assert_eq!(s.cwnd_pkts, 12.0);
        assert_eq!(left, 0.0);
    }

    #[test]
    fn slow_start_returns_the_rest_when_it_crosses_ssthresh() {
        let mut s = SubflowCc::new(10.0, 1448);
        s.ssthresh_pkts = 11.0;
        let left = slow_start(&mut s, 2.0, CcMode::Reference);
        assert_eq!(s.cwnd_pkts, 11.0);
        assert_eq!(left, 1.0);
    }

    #[test]
    fn linux_reno_adds_one_packet_per_window_acknowledged() {
        let mut s = SubflowCc::new(10.0, 1448);
        for _ in 0..9 {
            linux_reno_ca(&mut s, 10.0, 1);
        }
        assert_eq!(s.cwnd_pkts, 10.0);
        linux_reno_ca(&mut s, 10.0, 1);
        assert_eq!(s.cwnd_pkts, 11.0);
        assert_eq!(s.cwnd_cnt, 0);
    }

    #[test]
    fn old_kernel_slow_start_adds_one_packet_at_ssthresh() {
        let mut s = SubflowCc::new(10.0, 1448);
        s.ssthresh_pkts = 10.0;
        linux_slow_start_le(&mut s, 3.0);
        assert_eq!(s.cwnd_pkts, 11.0);
    }

    #[test]
    fn state_slots_grow_on_demand() {
        let mut v: Vec<u8> = Vec::new();
        *slot(&mut v, 3) = 7;
        assert_eq!(v, vec![0, 0, 0, 7]);
        reset_slot(&mut v, 3);
        assert_eq!(v[3], 0);
    }
}
