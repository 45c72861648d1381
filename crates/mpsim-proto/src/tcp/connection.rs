//! A single-path TCP connection: one [`Subflow`] and its congestion
//! controller, behind the sans-IO endpoint interface.

use super::subflow::{CcCtx, Subflow};
use super::{AppEvent, TcpConfig};
use mpsim_cc::{CcError, CongestionController, Controller, SubflowCc};
use mpsim_core::{Addr, Packet, SimTime};

pub struct TcpConnection {
    pub sf: Subflow,
    cc: [SubflowCc; 1],
    ctrl: Controller,
}

impl TcpConnection {
    fn with(sf: Subflow, cfg: &TcpConfig, cc_name: &str) -> Result<Self, CcError> {
        let mut ctrl = Controller::new(cc_name, cfg.cc_mode)?;
        ctrl.on_subflow_added(0);
        let cc = [SubflowCc::new(cfg.initial_cwnd_pkts as f64, cfg.mss_bytes)];
        Ok(TcpConnection { sf, cc, ctrl })
    }

    /// Active open from `local` to `remote` with controller `cc_name`.
    pub fn connect(cfg: TcpConfig, cc_name: &str, local: (Addr, u16), remote: (Addr, u16)) -> Result<Self, CcError> {
        Self::with(Subflow::connect(cfg, local, remote), &cfg, cc_name)
    }

    /// Passive open from a received SYN.
    pub fn accept(cfg: TcpConfig, cc_name: &str, syn: &Packet) -> Result<Self, CcError> {
        Self::with(Subflow::accept(cfg, syn), &cfg, cc_name)
    }

    fn ctx(&mut self) -> (&mut Subflow, CcCtx<'_>) {
        (&mut self.sf, CcCtx { subs: &mut self.cc, r: 0, ctrl: &mut self.ctrl })
    }

    pub fn handle_segment(&mut self, now: SimTime, pkt: &Packet) {
        let (sf, mut cx) = self.ctx();
        sf.handle_segment(now, pkt, &mut cx);
    }

    pub fn handle_timeout(&mut self, now: SimTime) {
        let (sf, mut cx) = self.ctx();
        sf.handle_timeout(now, &mut cx);
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
        self.sf.send(bytes);
    }

    pub fn send_unlimited(&mut self) {
        self.sf.send_unlimited();
    }

    pub fn pause(&mut self) {
        self.sf.pause();
    }

    pub fn close(&mut self) {
        self.sf.close();
    }

    /// Congestion state of the (only) subflow.
    pub fn cc(&self) -> &SubflowCc {
        &self.cc[0]
    }

    pub fn cc_name(&self) -> &'static str {
        self.ctrl.name()
    }
}
