//! A single-path TCP connection: one [`Subflow`] and its congestion
//! controller, behind the sans-IO endpoint interface.

use super::subflow::{CcCtx, Subflow};
use super::{AppEvent, TcpConfig};
use crate::buffers::{self, RcvRtt, RcvSpace};
use mpsim_cc::{CcError, CongestionController, Controller, SubflowCc};
use mpsim_core::{Addr, Packet, SimTime};

pub struct TcpConnection {
    pub sf: Subflow,
    cc: [SubflowCc; 1],
    ctrl: Controller,
    /// Send buffer: written bytes stay in it until acknowledged. None: unlimited.
    sndbuf_bytes: Option<u64>,
    /// Bytes written by the application that wait for room in the send buffer.
    waiting_bytes: u64,
    /// `close` came while bytes were waiting: FIN follows the last of them.
    close_when_written: bool,
    /// Receive-buffer autotuning (`TcpConfig::rcvbuf_auto`), and the bytes
    /// delivered when it last looked.
    rcv_space: Option<RcvSpace>,
    delivered_seen: u64,
    rcv_rtt: RcvRtt,
}

/// "Without end" for `waiting_bytes`.
const UNLIMITED: u64 = u64::MAX;

impl TcpConnection {
    fn with(sf: Subflow, cfg: &TcpConfig, cc_name: &str) -> Result<Self, CcError> {
        let mut ctrl = Controller::new(cc_name, cfg.cc_mode)?;
        ctrl.on_subflow_added(0);
        let cc = [SubflowCc::new(cfg.initial_cwnd_pkts as f64, cfg.mss_bytes)];
        let rcv_space = cfg.rcvbuf_auto.then(|| RcvSpace::new(SimTime::ZERO, cfg.mss_bytes as u64));
        Ok(TcpConnection {
            sf,
            cc,
            ctrl,
            sndbuf_bytes: None,
            waiting_bytes: 0,
            close_when_written: false,
            rcv_space,
            delivered_seen: 0,
            rcv_rtt: RcvRtt::default(),
        })
    }

    /// Active open from `local` to `remote` with controller `cc_name`.
    pub fn connect(cfg: TcpConfig, cc_name: &str, local: (Addr, u16), remote: (Addr, u16)) -> Result<Self, CcError> {
        let cfg = cfg.starting();
        Self::with(Subflow::connect(cfg, local, remote), &cfg, cc_name)
    }

    /// Passive open from a received SYN.
    pub fn accept(cfg: TcpConfig, cc_name: &str, syn: &Packet) -> Result<Self, CcError> {
        let cfg = cfg.starting();
        Self::with(Subflow::accept(cfg, syn), &cfg, cc_name)
    }

    fn ctx(&mut self) -> (&mut Subflow, CcCtx<'_>) {
        (&mut self.sf, CcCtx { subs: &mut self.cc, r: 0, ctrl: &mut self.ctrl })
    }

    /// A finite send buffer (Linux `SO_SNDBUF`, counted in payload bytes).
    pub fn set_sndbuf(&mut self, bytes: Option<u64>) {
        self.sndbuf_bytes = bytes;
    }

    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet) {
        let (sf, mut cx) = self.ctx();
        sf.handle_segment(now, pkt, &mut cx);
        self.fill_send_buffer();
        if self.rcv_space.is_some() {
            self.rcv_rtt.on_segment(now, pkt.ts, pkt.payload_bytes, self.sf.cfg().mss_bytes);
            self.autotune_rcvbuf(now);
        }
    }

    /// `tcp_rcv_space_adjust` on what the application read (all that was
    /// delivered: it reads at once), over the receiver's RTT estimate from
    /// timestamps (without them, the subflow's smoothed RTT). The window
    /// follows the buffer (`tcp_select_window` offers its free space).
    fn autotune_rcvbuf(&mut self, now: SimTime) {
        let Some(space) = self.rcv_space.as_mut() else { return };
        let delivered = self.sf.rcv.delivered_bytes;
        let copied = delivered - std::mem::replace(&mut self.delivered_seen, delivered);
        if copied > 0 && space.on_copied(now, copied, self.rcv_rtt.rtt().or(self.sf.rtt.srtt), self.sf.rcv.ooo_span_bytes()) {
            self.sf.rcv.grow_buf_bytes(buffers::win_from_space(space.rcvbuf_bytes));
        }
    }

    pub fn handle_timeout(&mut self, now: SimTime) {
        let (sf, mut cx) = self.ctx();
        sf.handle_timeout(now, &mut cx);
    }

    /// Moves waiting bytes into the room acknowledgements freed.
    fn fill_send_buffer(&mut self) {
        let Some(buf) = self.sndbuf_bytes else { return };
        let buffer_end = self.sf.snd_una.max(1).saturating_add(buf);
        let n = buffer_end.saturating_sub(self.sf.write_seq()).min(self.waiting_bytes);
        if n > 0 {
            self.sf.send(n);
            if self.waiting_bytes != UNLIMITED {
                self.waiting_bytes -= n;
            }
        }
        if self.waiting_bytes == 0 && std::mem::take(&mut self.close_when_written) {
            self.sf.close();
        }
    }

    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Packet> {
        let (sf, mut cx) = self.ctx();
        sf.poll_transmit(now, &mut cx)
    }

    /// Everything there is to send, appended to `out` in order.
    pub fn drain_transmit(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let (sf, mut cx) = self.ctx();
        while sf.poll_transmit_into(now, &mut cx, out) {}
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.sf.poll_timeout()
    }

    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.sf.poll_event()
    }

    pub fn send(&mut self, bytes: u64) {
        if self.sndbuf_bytes.is_none() {
            self.sf.send(bytes);
            return;
        }
        self.waiting_bytes = self.waiting_bytes.saturating_add(bytes);
        self.fill_send_buffer();
    }

    pub fn send_unlimited(&mut self) {
        if self.sndbuf_bytes.is_none() {
            self.sf.send_unlimited();
            return;
        }
        self.waiting_bytes = UNLIMITED;
        self.fill_send_buffer();
    }

    pub fn pause(&mut self) {
        self.waiting_bytes = 0;
        self.sf.pause();
    }

    pub fn close(&mut self) {
        if self.waiting_bytes > 0 {
            self.close_when_written = true;
        } else {
            self.sf.close();
        }
    }

    /// Congestion state of the (only) subflow.
    pub fn cc(&self) -> &SubflowCc {
        &self.cc[0]
    }

    pub fn cc_name(&self) -> &'static str {
        self.ctrl.name()
    }
}
