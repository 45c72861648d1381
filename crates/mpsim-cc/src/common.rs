//! Pieces every controller shares: slow start (spec 1.5) and the Linux
//! Reno counter (spec 2, `tcp_reno_cong_avoid`).

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
}
