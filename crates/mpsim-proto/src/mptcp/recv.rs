//! Data-level receive side (spec sections 6 and 7): mappings received on
//! each subflow translate in-order subflow bytes into DSN ranges, which
//! the connection reassembles in its shared buffer; DATA_ACKs free the
//! sender's data and move the connection-level window.

use super::connection::{Conn, MpState};
use super::sender::DataAck;
use crate::tcp::AppEvent;
use mpsim_core::mptcp::DssMapping;
use mpsim_core::{Packet, SimTime};

/// Ranges the reused buffer of `on_subflow_data` keeps room for.
const SCRATCH_KEPT_RANGES: usize = 16;

/// Extends a 32-bit sequence value to the 64-bit one closest to `near`.
pub(super) fn expand32(low: u64, near: u64) -> u64 {
    let low = low & 0xffff_ffff;
    let base = (near & !0xffff_ffff) | low;
    [base.wrapping_sub(1 << 32), base, base.wrapping_add(1 << 32)].into_iter().min_by_key(|c| c.abs_diff(near)).unwrap_or(base)
}

impl Conn {
    /// A DSS mapping arrived on subflow `r` with segment `pkt`.
    #[inline(always)]
    pub(super) fn on_mapping(&mut self, r: usize, pkt: &Packet, map: DssMapping, data_fin: bool) {
        let near = self.remote_idsn.wrapping_add(self.rx.rcv_nxt());
        let abs =
            if pkt.ext.mptcp().and_then(|m| m.dss.as_ref()).is_some_and(|d| d.dsn64) { map.dsn } else { expand32(map.dsn, near) };
        let dsn = abs.wrapping_sub(self.remote_idsn);
        if pkt.payload_bytes > 0 {
            self.subs[r].rx.insert_map(pkt.seq, dsn, pkt.payload_bytes);
        }
        if data_fin {
            // The DATA_FIN takes the last DSN of its mapping.
            self.rx.on_data_fin(dsn + (map.len as u64).max(1) - 1, r);
            self.check_peer_data_fin();
        }
    }

    /// Subflow `r` delivered `bytes` more in order: hand them to the connection.
    #[inline(always)]
    pub(super) fn on_subflow_data(&mut self, now: SimTime, r: usize, bytes: u64) {
        let mut ranges = std::mem::take(&mut self.scratch_ranges);
        self.subs[r].rx.take_in_order(bytes, self.state == MpState::Fallback, &mut ranges);
        for &(s, e) in &ranges {
            self.deliver_range(now, s, e);
        }
        // A hole filled may move hundreds of mappings at once; a buffer of
        // that size kept by every connection would be most of what it holds.
        if ranges.capacity() > SCRATCH_KEPT_RANGES {
            ranges.clear();
            ranges.shrink_to(SCRATCH_KEPT_RANGES);
        }
        self.scratch_ranges = ranges;
        self.check_peer_data_fin();
    }

    /// Connection bytes `[start, end)` arrived: reassemble, and tell the
    /// application what became in order.
    #[inline(always)]
    fn deliver_range(&mut self, now: SimTime, start: u64, end: u64) {
        let delivered = self.rx.on_data(start, end);
        if delivered > 0 {
            self.events.push_back(AppEvent::Delivered { bytes: delivered });
            if self.rx.autotuned() {
                self.autotune_rcvbuf(now, delivered);
            }
        }
    }

    /// `mptcp_rcv_space_adjust` on what the application read (all that
    /// was delivered), once per the largest of the subflows' receiver RTT
    /// estimates (from timestamps; without any, the largest smoothed RTT).
    /// Subflows' buffers follow too in Linux; here they never bind.
    fn autotune_rcvbuf(&mut self, now: SimTime, copied: u64) {
        let live = || self.subs.iter().filter(|s| !s.gone);
        // A subflow without a sample counts 0, as Linux's `rcv_rtt_est`.
        let rtt = live().filter_map(|s| s.rcv_rtt.rtt()).max().or_else(|| live().filter_map(|s| s.sf.rtt.srtt).max());
        self.rx.autotune(now, copied, rtt);
    }

    fn check_peer_data_fin(&mut self) {
        if self.rx.data_fin_in_order() {
            self.events.push_back(AppEvent::PeerClosed);
        }
    }

    /// After a fallback, the subflow's FIN closes the connection.
    pub(super) fn on_peer_data_fin_reached(&mut self) {
        if self.rx.on_peer_closed() {
            self.events.push_back(AppEvent::PeerClosed);
        }
    }

    /// A DATA_ACK (absolute, 64-bit or low 32 bits) with the peer's window.
    #[inline(always)]
    pub(super) fn on_data_ack(&mut self, now: SimTime, ack: u64, ack64: bool, wnd_bytes: u64) {
        let near = self.local_idsn.wrapping_add(self.tx.una());
        let abs = if ack64 { ack } else { expand32(ack, near) };
        self.on_data_ack_rel(now, abs.wrapping_sub(self.local_idsn), wnd_bytes);
    }

    /// Fallback: the subflow's cumulative ACK is the data-level one.
    pub(super) fn on_fallback_ack(&mut self, now: SimTime, pkt: &Packet) {
        if pkt.flags.has(mpsim_core::TcpFlags::ACK) {
            self.on_data_ack_rel(now, pkt.ack.min(self.tx.nxt()), pkt.wnd_bytes);
        }
    }

    #[inline(always)]
    fn on_data_ack_rel(&mut self, now: SimTime, rel: u64, wnd_bytes: u64) {
        if let DataAck::Advanced { data_fin_acked } = self.tx.on_data_ack(rel, wnd_bytes) {
            if data_fin_acked {
                self.events.push_back(AppEvent::SendComplete);
            }
            self.arm_meta_timer(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::expand32;

    #[test]
    fn thirty_two_bit_values_extend_to_the_nearest() {
        assert_eq!(expand32(5, 0x1_0000_0000), 0x1_0000_0005);
        assert_eq!(expand32(0xffff_fff0, 0x1_0000_0010), 0xffff_fff0);
        assert_eq!(expand32(0x10, 0x1_ffff_fff0), 0x2_0000_0010);
    }
}
