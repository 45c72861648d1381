//! Congestion controllers. Loss detection and recovery live in the
//! transport (mpsim-proto); a controller only decides how the window grows
//! on ACKs, what `ssthresh` becomes on a congestion event, and how it reacts
//! to state changes. Coupled controllers see their sibling subflows through
//! the slice of [`SubflowCc`] the connection owns.
//!
//! Reference: `specs/congestion-control.md` (sections cited per file).

use mpsim_core::{SimDuration, SimTime};

mod balia;
mod common;
mod coupled;
mod cubic;
mod ewtcp;
mod kellyvoice;
mod lia;
mod olia;
mod params;
mod reno;
mod semicoupled;
#[cfg(test)]
mod test_support;
mod vegas;
mod wvegas;

pub use balia::Balia;
pub use common::{linux_reno_ca, slow_start};
pub use coupled::Coupled;
pub use cubic::Cubic;
pub use ewtcp::Ewtcp;
pub use kellyvoice::KellyVoice;
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;
pub use semicoupled::{Aggressiveness, SemiCoupled};
pub use vegas::{Vegas, VegasParams};
pub use wvegas::{WVegas, WVegasParams};

/// TCP congestion-avoidance state (Linux `ca_state`), spec 1.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaState {
    #[default]
    Open,
    Disorder,
    Recovery,
    Loss,
    Cwr,
}

/// Fidelity mode, spec 1.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CcMode {
    /// Real-valued arithmetic, formulas as the spec writes them.
    #[default]
    Reference,
    /// Integer arithmetic and quirks of the Linux implementation.
    Linux,
}

/// Per-subflow state that controllers read (all subflows) and write (their
/// own subflow). Windows are in packets of `mss_bytes`.
///
/// Laid out by hand (`repr(C)`, 32-byte aligned): what is read of every
/// subflow (coupling: `is_coupled`, `w_tilde`, SRTT; the MPTCP scheduler:
/// the window, SRTT and recovery state) fills the first 32 bytes, which
/// then lie within one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub struct SubflowCc {
    /// Smoothed RTT; `None` until the first sample.
    pub srtt: Option<SimDuration>,
    /// Congestion window, packets (integer-valued in linux mode).
    pub cwnd_pkts: f64,
    pub mss_bytes: u32,
    pub ca_state: CaState,
    /// Handshake complete (MPTCP: fully established).
    pub established: bool,
    /// In a state that may send (ESTABLISHED / CLOSE_WAIT).
    pub can_send: bool,
    /// Slow-start threshold, packets.
    pub ssthresh_pkts: f64,
    /// Linux fractional-increase counter (`snd_cwnd_cnt`); ACK events.
    pub cwnd_cnt: i64,
    /// Minimum RTT ever sampled.
    pub min_rtt: Option<SimDuration>,
    /// Subflow-level cumulative ACK point, bytes.
    pub snd_una: u64,
    /// Next new byte to send, bytes.
    pub snd_nxt: u64,
    /// Packets in flight (RFC 6675 pipe with SACK).
    pub flight_pkts: f64,
    /// Upper clamp of the window, packets.
    pub cwnd_clamp_pkts: f64,
}

impl SubflowCc {
    pub fn new(initial_cwnd_pkts: f64, mss_bytes: u32) -> Self {
        SubflowCc {
            cwnd_pkts: initial_cwnd_pkts,
            ssthresh_pkts: INFINITE_SSTHRESH_PKTS,
            cwnd_cnt: 0,
            ca_state: CaState::Open,
            srtt: None,
            min_rtt: None,
            mss_bytes,
            established: false,
            can_send: false,
            snd_una: 0,
            snd_nxt: 0,
            flight_pkts: 0.0,
            cwnd_clamp_pkts: 1.0e9,
        }
    }

    /// Takes part in coupled sums (spec 1.7).
    pub fn is_coupled(&self) -> bool {
        self.established && self.can_send && self.srtt.is_some_and(|s| s.as_ps() > 0)
    }

    /// `w̃`: ssthresh while in fast recovery, else cwnd (spec 1.7).
    pub fn w_tilde(&self) -> f64 {
        if self.ca_state == CaState::Recovery {
            self.ssthresh_pkts
        } else {
            self.cwnd_pkts
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd_pkts < self.ssthresh_pkts
    }

    pub fn srtt_s(&self) -> f64 {
        self.srtt.map_or(0.0, |s| s.as_secs_f64())
    }

    /// Linux `srtt_us`: 8 × SRTT in microseconds.
    pub fn linux_srtt_us(&self) -> u64 {
        self.srtt.map_or(0, |s| (s.as_ps() * 8) / 1_000_000)
    }
}

/// "Infinite" initial ssthresh (spec 1.3).
pub const INFINITE_SSTHRESH_PKTS: f64 = 2147483648.0;

/// One ACK that newly acknowledged data, as the controller sees it.
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    pub now: SimTime,
    /// Packets newly acknowledged (bytes / MSS, may be fractional).
    pub acked_pkts: f64,
    pub acked_bytes: u64,
    /// RTT measured by this ACK, if Karn's rule allows one.
    pub rtt: Option<SimDuration>,
}

/// The hooks of spec 1.8. The transport calls `on_ack` once per ACK that
/// newly acknowledges data, only in `Open`/`Disorder` and when the subflow
/// is cwnd-limited (spec 1.5); the controller runs slow start itself (with
/// [`slow_start`]) so that delay-based controllers can leave it early.
pub trait CongestionController {
    /// Lowercase algorithm name as scenario files spell it.
    fn name(&self) -> &'static str;
    fn on_ack(&mut self, subflows: &mut [SubflowCc], r: usize, ack: &AckSample);
    /// New ssthresh (packets) for a congestion event on `r` (fast recovery or RTO).
    fn ssthresh_on_loss(&mut self, subflows: &[SubflowCc], r: usize) -> f64;
    /// After the transport set `cwnd = 1` on a retransmission timeout.
    fn on_rto(&mut self, _subflows: &mut [SubflowCc], _r: usize) {}
    /// `ca_state` of `r` changed to `new` (already written in `subflows`).
    fn on_state_change(&mut self, _subflows: &mut [SubflowCc], _r: usize, _new: CaState) {}
    /// Every valid RTT sample (Karn's rule applied), before `on_ack`. The
    /// slice is mutable because a controller may end slow start here, as
    /// Linux CUBIC's HyStart does from `pkts_acked`.
    fn on_rtt_sample(&mut self, _subflows: &mut [SubflowCc], _r: usize, _rtt: SimDuration, _now: SimTime) {}
    /// The subflow restarts after an idle period longer than its RTO.
    fn on_idle_restart(&mut self, _subflows: &mut [SubflowCc], _r: usize, _now: SimTime) {}
    /// A subflow was appended at index `r`.
    fn on_subflow_added(&mut self, _r: usize) {}
    /// Subflow `r` no longer takes part (it stays in the slice, not coupled).
    fn on_subflow_removed(&mut self, _subflows: &[SubflowCc], _r: usize) {}
}

/// Error for an algorithm name or mode no controller answers to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CcError {
    #[error("unknown congestion control '{0}'")]
    Unknown(String),
    #[error("congestion control '{0}' is not available for transport '{1}'")]
    NotForTransport(String, String),
    /// A `cc_params` key the controller does not have, or a bad value.
    #[error("congestion control '{cc}': parameter '{key}': {message}")]
    BadParam { cc: String, key: String, message: String },
}

/// Applies `$body` to the controller inside any variant of [`Controller`].
macro_rules! each_controller {
    ($value:expr, $c:ident => $body:expr) => {
        match $value {
            Controller::Reno($c) => $body,
            Controller::Cubic($c) => $body,
            Controller::Vegas($c) => $body,
            Controller::Ewtcp($c) => $body,
            Controller::Coupled($c) => $body,
            Controller::SemiCoupled($c) => $body,
            Controller::Lia($c) => $body,
            Controller::Olia($c) => $body,
            Controller::Balia($c) => $body,
            Controller::WVegas($c) => $body,
            Controller::KellyVoice($c) => $body,
        }
    };
}

/// The built-in controllers, selected by lowercase name. Enum dispatch keeps
/// the per-ACK call free of indirection.
pub enum Controller {
    Reno(Reno),
    Cubic(Cubic),
    Vegas(Vegas),
    Ewtcp(Ewtcp),
    Coupled(Coupled),
    SemiCoupled(SemiCoupled),
    Lia(Lia),
    Olia(Olia),
    Balia(Balia),
    WVegas(WVegas),
    KellyVoice(KellyVoice),
}

/// Names accepted for single-path TCP.
pub const TCP_ALGORITHMS: &[&str] = &["reno", "cubic", "vegas"];

/// Names accepted for MPTCP: the uncoupled Reno and CUBIC (one instance
/// per subflow) and the multipath controllers.
pub const MPTCP_ALGORITHMS: &[&str] =
    &["reno", "cubic", "ewtcp", "coupled", "semicoupled", "lia", "olia", "balia", "wvegas", "kellyvoice"];

/// One `cc_params` key of a controller and the smallest value it accepts
/// (packets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamDef {
    pub key: &'static str,
    pub min: f64,
}

const fn param(key: &'static str, min: f64) -> ParamDef {
    ParamDef { key, min }
}

/// The `cc_params` each controller has (spec: `name:key=value,...`).
/// Vegas's thresholds may be zero; wVegas's alphas are at least one packet
/// (a smaller share rounds to nothing); Balia's ssthresh floor at least one.
pub const CC_PARAMS: &[(&str, &[ParamDef])] = &[
    ("vegas", &[param("alpha", 0.0), param("beta", 0.0), param("gamma", 0.0)]),
    ("wvegas", &[param("total_alpha", 1.0), param("initial_alpha", 1.0), param("gamma", 0.0)]),
    ("balia", &[param("ssthresh_floor", 1.0)]),
];

/// The `cc_params` of controller `name` (none for most).
pub fn param_defs(name: &str) -> &'static [ParamDef] {
    CC_PARAMS.iter().find(|(n, _)| *n == name).map_or(&[], |(_, defs)| defs)
}

/// The `cc_params` keys of controller `name` (none for most).
pub fn param_keys(name: &str) -> Vec<&'static str> {
    param_defs(name).iter().map(|d| d.key).collect()
}

impl Controller {
    /// Builds the controller `spec` names in `mode`. `spec` is a name, or a
    /// name followed by `:key=value,...` parameters (see [`CC_PARAMS`]).
    pub fn new(spec: &str, mode: CcMode) -> Result<Controller, CcError> {
        let (name, mut params) = params::split_spec(spec)?;
        let c = match name {
            "vegas" => Controller::Vegas(Vegas::with_params(mode, VegasParams::take(&mut params)?)),
            "wvegas" => Controller::WVegas(WVegas::with_params(mode, WVegasParams::take(&mut params)?)),
            "balia" => Controller::Balia(Balia::with_floor(mode, params.take("ssthresh_floor")?)),
            _ => Self::without_params(name, mode)?,
        };
        params.finish(&param_keys(name))?;
        Ok(c)
    }

    /// The controllers that have no parameters.
    fn without_params(name: &str, mode: CcMode) -> Result<Controller, CcError> {
        Ok(match name {
            "reno" => Controller::Reno(Reno::new(mode)),
            "cubic" => Controller::Cubic(Cubic::new(mode)),
            "ewtcp" => Controller::Ewtcp(Ewtcp::new(mode)),
            "coupled" => Controller::Coupled(Coupled::new(mode)),
            "semicoupled" => Controller::SemiCoupled(SemiCoupled::new(mode)),
            "lia" => Controller::Lia(Lia::new(mode)),
            "olia" => Controller::Olia(Olia::new(mode)),
            "kellyvoice" => Controller::KellyVoice(KellyVoice::new(mode)),
            other => return Err(CcError::Unknown(other.to_string())),
        })
    }

    fn inner(&mut self) -> &mut dyn CongestionController {
        each_controller!(self, c => c)
    }

    fn inner_ref(&self) -> &dyn CongestionController {
        each_controller!(self, c => c)
    }
}

impl CongestionController for Controller {
    fn name(&self) -> &'static str {
        self.inner_ref().name()
    }
    fn on_ack(&mut self, s: &mut [SubflowCc], r: usize, ack: &AckSample) {
        self.inner().on_ack(s, r, ack)
    }
    fn ssthresh_on_loss(&mut self, s: &[SubflowCc], r: usize) -> f64 {
        self.inner().ssthresh_on_loss(s, r)
    }
    fn on_rto(&mut self, s: &mut [SubflowCc], r: usize) {
        self.inner().on_rto(s, r)
    }
    fn on_state_change(&mut self, s: &mut [SubflowCc], r: usize, new: CaState) {
        self.inner().on_state_change(s, r, new)
    }
    fn on_rtt_sample(&mut self, s: &mut [SubflowCc], r: usize, rtt: SimDuration, now: SimTime) {
        self.inner().on_rtt_sample(s, r, rtt, now)
    }
    fn on_idle_restart(&mut self, s: &mut [SubflowCc], r: usize, now: SimTime) {
        self.inner().on_idle_restart(s, r, now)
    }
    fn on_subflow_added(&mut self, r: usize) {
        self.inner().on_subflow_added(r)
    }
    fn on_subflow_removed(&mut self, s: &[SubflowCc], r: usize) {
        self.inner().on_subflow_removed(s, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, ca_subflow, cwnd_trace, example_pair};
    use crate::Reno;

    const ALL: &[&str] =
        &["reno", "cubic", "vegas", "ewtcp", "coupled", "semicoupled", "lia", "olia", "balia", "wvegas", "kellyvoice"];

    /// What is read of every subflow stays in the first 32 bytes, and the
    /// layout wastes nothing.
    #[test]
    fn subflow_cc_leads_with_what_is_read_of_every_subflow() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!((align_of::<SubflowCc>(), size_of::<SubflowCc>()), (32, 96));
        let ends = [
            offset_of!(SubflowCc, srtt) + 16,
            offset_of!(SubflowCc, cwnd_pkts) + 8,
            offset_of!(SubflowCc, ca_state) + 1,
            offset_of!(SubflowCc, established) + 1,
            offset_of!(SubflowCc, can_send) + 1,
        ];
        assert!(ends.iter().all(|&end| end <= 32), "{ends:?}");
    }

    #[test]
    fn every_name_builds_a_controller_that_reports_it() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            for name in ALL {
                let c = Controller::new(name, mode).map(|c| c.name());
                assert_eq!(c, Ok(*name));
            }
        }
    }

    /// The controllers the spec says decrease as Reno on one subflow (13.1).
    const RENO_ON_ONE_SUBFLOW: &[&str] = &["ewtcp", "coupled", "semicoupled", "lia", "olia", "balia", "kellyvoice"];

    #[test]
    fn one_subflow_loss_response_is_renos_whatever_the_flight_size() {
        // The transport hands FlightSize = min(outstanding, cwnd) (RFC 3042
        // segments excluded); reference Reno halves it, Linux halves cwnd.
        for mode in [CcMode::Reference, CcMode::Linux] {
            for (cwnd, flight) in [(10.0, 10.0), (10.0, 7.0), (31.0, 12.5), (3.0, 3.0), (3.0, 1.0)] {
                let mut s = vec![ca_subflow(cwnd, 60)];
                s[0].flight_pkts = flight;
                let reno = Reno::new(mode).ssthresh_on_loss(&s, 0);
                for name in RENO_ON_ONE_SUBFLOW {
                    let mut c = Controller::new(name, mode).unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(c.ssthresh_on_loss(&s, 0), reno, "{name} {mode:?} cwnd {cwnd} flight {flight}");
                }
            }
        }
    }

    #[test]
    fn parameters_follow_the_name_after_a_colon() {
        let c = Controller::new("vegas:alpha=1,beta=3,gamma=1", CcMode::Reference).map(|c| c.name());
        assert_eq!(c, Ok("vegas"));
        assert!(Controller::new("wvegas:total_alpha=20", CcMode::Linux).is_ok());
        assert!(Controller::new("balia:ssthresh_floor=1", CcMode::Reference).is_ok());
        assert!(Controller::new("lia:", CcMode::Reference).is_ok());
    }

    #[test]
    fn a_parameter_of_another_controller_or_a_bad_value_is_refused_by_key() {
        let key_of = |spec: &str| match Controller::new(spec, CcMode::Reference) {
            Err(CcError::BadParam { key, .. }) => key,
            other => panic!("{spec}: {:?}", other.map(|c| c.name())),
        };
        assert_eq!(key_of("lia:alpha=2"), "alpha");
        assert_eq!(key_of("vegas:total_alpha=2"), "total_alpha");
        assert_eq!(key_of("vegas:alpha=-1"), "alpha");
        assert_eq!(key_of("vegas:beta=1"), "beta");
        assert_eq!(key_of("vegas:alpha=5"), "alpha");
        assert_eq!(key_of("vegas:alpha=3,beta=2"), "beta");
        assert_eq!(key_of("wvegas:total_alpha=0"), "total_alpha");
        assert_eq!(key_of("balia:ssthresh_floor=0.5"), "ssthresh_floor");
        assert_eq!(key_of("balia:floor=1"), "floor");
        assert_eq!(Controller::new("bbr:alpha=1", CcMode::Reference).err(), Some(CcError::Unknown("bbr".into())));
    }

    #[test]
    fn every_parameter_key_is_accepted_by_its_controller() {
        for (name, defs) in CC_PARAMS {
            for d in *defs {
                let spec = format!("{name}:{}=3", d.key);
                assert!(Controller::new(&spec, CcMode::Reference).is_ok(), "{spec}");
            }
        }
    }

    #[test]
    fn unknown_name_is_an_error_not_a_panic() {
        assert_eq!(Controller::new("bbr", CcMode::Reference).err(), Some(CcError::Unknown("bbr".into())));
    }

    #[test]
    fn name_lists_are_buildable_and_disjoint_where_expected() {
        for name in TCP_ALGORITHMS.iter().chain(MPTCP_ALGORITHMS) {
            assert!(Controller::new(name, CcMode::Reference).is_ok(), "{name}");
        }
        assert!(!MPTCP_ALGORITHMS.contains(&"vegas"));
        assert!(MPTCP_ALGORITHMS.contains(&"wvegas"));
        assert_eq!(TCP_ALGORITHMS, &["reno", "cubic", "vegas"]);
    }

    #[test]
    fn every_controller_handles_an_unannounced_subflow_index() {
        for mode in [CcMode::Reference, CcMode::Linux] {
            for name in ALL {
                let mut c = Controller::new(name, mode).unwrap_or_else(|e| panic!("{e}"));
                let mut s = example_pair();
                c.on_rtt_sample(&mut s, 1, mpsim_core::SimDuration::from_millis(200), mpsim_core::SimTime::ZERO);
                c.on_ack(&mut s, 1, &ack(1.0));
                c.on_state_change(&mut s, 1, CaState::Recovery);
                let ss = c.ssthresh_on_loss(&s, 1);
                assert!(ss >= 1.0, "{name}: ssthresh {ss}");
                assert!(s[1].cwnd_pkts >= 1.0);
            }
        }
    }

    #[test]
    fn out_of_range_index_is_ignored() {
        for name in ALL {
            let mut c = Controller::new(name, CcMode::Reference).unwrap_or_else(|e| panic!("{e}"));
            let mut s = vec![ca_subflow(10.0, 50)];
            c.on_ack(&mut s, 5, &ack(1.0));
            c.on_state_change(&mut s, 5, CaState::Open);
            assert!(c.ssthresh_on_loss(&s, 5) >= 1.0);
            assert_eq!(s[0].cwnd_pkts, 10.0);
        }
    }

    #[test]
    fn every_controller_leaves_cwnd_at_one_after_rto() {
        // cwnd_trace asserts cwnd == 1 right after on_rto.
        for mode in [CcMode::Reference, CcMode::Linux] {
            for name in ALL {
                let mut c = Controller::new(name, mode).unwrap_or_else(|e| panic!("{e}"));
                let trace = cwnd_trace(&mut c);
                assert!(trace.iter().all(|w| *w >= 1.0 && w.is_finite()), "{name}");
            }
        }
    }
}
