//! Simulated time in integer picoseconds. A `u64` of picoseconds covers
//! about 213 days, far beyond any run, and keeps a 100 Gbps byte time
//! (80 ps) exact.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, in picoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn from_secs_f64(s: f64) -> Self {
        SimTime((s * PS_PER_S as f64).round() as u64)
    }
    pub fn as_ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_ps(ps: u64) -> Self {
        SimDuration(ps)
    }
    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns * PS_PER_NS)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * PS_PER_US)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * PS_PER_MS)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * PS_PER_S)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        SimDuration((s * PS_PER_S as f64).round().max(0.0) as u64)
    }
    pub fn as_ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    pub fn as_micros(self) -> u64 {
        self.0 / PS_PER_US
    }
    pub fn mul_f64(self, k: f64) -> Self {
        SimDuration((self.0 as f64 * k).round().max(0.0) as u64)
    }
    pub fn saturating_mul(self, k: u64) -> Self {
        SimDuration(self.0.saturating_mul(k))
    }
    /// Time to serialise `bytes` at `rate_bps`, rounded up to a whole picosecond.
    pub fn transmission(bytes: u64, rate_bps: u64) -> Self {
        let bits = bytes as u128 * 8 * PS_PER_S as u128;
        let rate = rate_bps.max(1) as u128;
        SimDuration(bits.div_ceil(rate).min(u64::MAX as u128) as u64)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, o: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(o.0))
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_of_a_full_frame_at_10mbps() {
        // 1514 bytes * 8 / 10e6 = 1.2112 ms
        assert_eq!(SimDuration::transmission(1514, 10_000_000), SimDuration(1_211_200_000));
    }

    #[test]
    fn transmission_rounds_up() {
        assert_eq!(SimDuration::transmission(1, 3), SimDuration(2_666_666_666_667));
    }

    #[test]
    fn saturating_arithmetic_does_not_wrap() {
        assert_eq!(SimTime::MAX + SimDuration(5), SimTime::MAX);
        assert_eq!(SimTime(3) - SimTime(5), SimDuration::ZERO);
    }
}
