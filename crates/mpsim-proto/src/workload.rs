//! Short-flow workloads: request sizes drawn from a distribution, and
//! arrivals either closed loop (the next request a think time after the
//! last response) or open loop (a Poisson process, each request on its own
//! connection, whatever is still running). Draws come from the flow's own
//! seeded stream, so seeds give independent replications.

use crate::apps::{App, AppCmd, AppInput, Side};
use mpsim_core::rng::SimRng;
use mpsim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// The size of each request's response.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// The listed sizes in turn (the `sizes` key): no randomness.
    List(Vec<u64>),
    /// Uniform over [min, max] bytes.
    Uniform { min_bytes: u64, max_bytes: u64 },
    /// Exponential with the given mean.
    Exponential { mean_bytes: f64 },
    /// Pareto (type I) with scale x_m and shape alpha: P(X > x) = (x_m / x)^alpha.
    Pareto { scale_bytes: f64, shape: f64 },
    /// A piecewise-linear CDF through (size, cumulative probability) points,
    /// sizes and probabilities non-decreasing, the last probability 1; as
    /// the empirical distributions of the datacenter literature are used
    /// (ns-2's `EmpiricalRandomVariable` interpolates the same way).
    Empirical { points: Vec<(u64, f64)> },
}

impl SizeDist {
    /// The size of request `index` (at least 1 byte), capped at `max_bytes`.
    pub fn draw(&self, index: u32, max_bytes: Option<u64>, rng: &mut SimRng) -> u64 {
        let raw = match self {
            SizeDist::List(sizes) => sizes[index as usize % sizes.len()] as f64,
            SizeDist::Uniform { min_bytes, max_bytes } => {
                *min_bytes as f64 + rng.below(max_bytes.saturating_sub(*min_bytes) + 1) as f64
            }
            SizeDist::Exponential { mean_bytes } => -mean_bytes * open_unit(rng).ln(),
            SizeDist::Pareto { scale_bytes, shape } => scale_bytes / open_unit(rng).powf(1.0 / shape),
            SizeDist::Empirical { points } => empirical_quantile(points, rng.next_f64()),
        };
        let bytes = raw.round().clamp(1.0, u64::MAX as f64 / 2.0) as u64;
        max_bytes.map_or(bytes, |m| bytes.min(m.max(1)))
    }
}

/// Uniform in (0, 1]: a logarithm or power of it is finite.
fn open_unit(rng: &mut SimRng) -> f64 {
    1.0 - rng.next_f64()
}

/// The size at cumulative probability `u`, linear between the points.
fn empirical_quantile(points: &[(u64, f64)], u: f64) -> f64 {
    let i = points.partition_point(|&(_, p)| p <= u);
    if i == 0 {
        return points.first().map_or(1.0, |&(s, _)| s as f64);
    }
    if i >= points.len() {
        return points.last().map_or(1.0, |&(s, _)| s as f64);
    }
    let ((s0, p0), (s1, p1)) = (points[i - 1], points[i]);
    s0 as f64 + (s1 as f64 - s0 as f64) * (u - p0) / (p1 - p0)
}

/// The wait between a response and the next request (closed loop).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Think {
    Fixed(SimDuration),
    Exponential { mean: SimDuration },
}

impl Think {
    pub fn draw(&self, rng: &mut SimRng) -> SimDuration {
        match *self {
            Think::Fixed(d) => d,
            Think::Exponential { mean } => SimDuration((-(mean.0 as f64) * open_unit(rng).ln()).round() as u64),
        }
    }
}

/// One request of the open loop: on connection `conn`, its own.
#[derive(Clone, Copy, Debug)]
struct Open {
    index: u32,
    size_bytes: u64,
    start: SimTime,
    request_received: u64,
    response_delivered: u64,
}

const TAG_ARRIVAL: u32 = 1;

/// Open-loop requests: Poisson arrivals at `rate_per_s`, each on a new
/// connection that carries one request and its response and is closed.
/// Requests keep arriving while earlier ones are under way, so the offered
/// load does not depend on how fast the network serves it.
pub struct PoissonRequests {
    sizes: SizeDist,
    max_bytes: Option<u64>,
    mean_gap_s: f64,
    total: Option<u32>,
    request_bytes: u64,
    rng: SimRng,
    issued: u32,
    done: u32,
    open: BTreeMap<u32, Open>,
    stopped: bool,
}

impl PoissonRequests {
    pub fn new(
        sizes: SizeDist,
        max_bytes: Option<u64>,
        rate_per_s: f64,
        total: Option<u32>,
        request_bytes: u64,
        rng: SimRng,
    ) -> Self {
        PoissonRequests {
            sizes,
            max_bytes,
            mean_gap_s: 1.0 / rate_per_s.max(1e-12),
            total,
            request_bytes: request_bytes.max(1),
            rng,
            issued: 0,
            done: 0,
            open: BTreeMap::new(),
            stopped: false,
        }
    }

    fn all_issued(&self) -> bool {
        self.total.is_some_and(|t| self.issued >= t)
    }

    fn schedule_arrival(&mut self, now: SimTime, out: &mut Vec<AppCmd>) {
        if self.stopped || self.all_issued() {
            return;
        }
        let gap_s = -self.mean_gap_s * open_unit(&mut self.rng).ln();
        out.push(AppCmd::Timer { at: now + SimDuration::from_secs_f64(gap_s), tag: TAG_ARRIVAL });
    }

    fn arrive(&mut self, now: SimTime, out: &mut Vec<AppCmd>) {
        let conn = self.issued;
        let size_bytes = self.sizes.draw(conn, self.max_bytes, &mut self.rng);
        self.open.insert(conn, Open { index: conn, size_bytes, start: now, request_received: 0, response_delivered: 0 });
        self.issued += 1;
        out.push(AppCmd::Connect { conn });
        self.schedule_arrival(now, out);
    }

    fn on_server_delivered(&mut self, conn: u32, bytes: u64, out: &mut Vec<AppCmd>) {
        let Some(req) = self.open.get_mut(&conn) else { return };
        let before = req.request_received;
        req.request_received += bytes;
        if before < self.request_bytes && req.request_received >= self.request_bytes {
            out.push(AppCmd::Write { conn, side: Side::Server, bytes: req.size_bytes });
            out.push(AppCmd::Close { conn, side: Side::Server });
        }
    }

    fn on_client_delivered(&mut self, now: SimTime, conn: u32, bytes: u64, out: &mut Vec<AppCmd>) {
        let Some(req) = self.open.get_mut(&conn) else { return };
        req.response_delivered += bytes;
        if req.response_delivered < req.size_bytes {
            return;
        }
        let req = self.open.remove(&conn).expect("present");
        out.push(AppCmd::RequestDone { index: req.index, size_bytes: req.size_bytes, start: req.start, end: now });
        out.push(AppCmd::Close { conn, side: Side::Client });
        self.done += 1;
        if self.all_issued() && self.open.is_empty() {
            out.push(AppCmd::Finished);
        }
    }
}

impl App for PoissonRequests {
    fn on_input(&mut self, now: SimTime, input: AppInput, out: &mut Vec<AppCmd>) {
        match input {
            AppInput::Start => self.schedule_arrival(now, out),
            AppInput::Timer { tag: TAG_ARRIVAL } if !self.stopped => self.arrive(now, out),
            AppInput::Connected { conn, side: Side::Client } if self.open.contains_key(&conn) => {
                out.push(AppCmd::Write { conn, side: Side::Client, bytes: self.request_bytes });
                out.push(AppCmd::Close { conn, side: Side::Client });
            }
            AppInput::Delivered { conn, side: Side::Server, bytes } => self.on_server_delivered(conn, bytes, out),
            AppInput::Delivered { conn, side: Side::Client, bytes } => self.on_client_delivered(now, conn, bytes, out),
            AppInput::PeerClosed { conn, side } => out.push(AppCmd::Close { conn, side }),
            AppInput::Stop => self.stopped = true,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> SimRng {
        SimRng::new(7, 99)
    }

    fn sample_mean(d: &SizeDist, n: u32) -> f64 {
        let mut r = rng();
        (0..n).map(|i| d.draw(i, None, &mut r) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn a_list_is_taken_in_turn_without_randomness() {
        let d = SizeDist::List(vec![10, 20, 30]);
        let mut r = rng();
        let drawn: Vec<u64> = (0..5).map(|i| d.draw(i, None, &mut r)).collect();
        assert_eq!(drawn, [10, 20, 30, 10, 20]);
    }

    #[test]
    fn sample_means_approach_the_distribution_means() {
        // 20,000 draws: the standard error of an exponential's mean is 0.7 %.
        let exp = SizeDist::Exponential { mean_bytes: 50_000.0 };
        assert!((sample_mean(&exp, 20_000) / 50_000.0 - 1.0).abs() < 0.03);
        let uni = SizeDist::Uniform { min_bytes: 1000, max_bytes: 3000 };
        assert!((sample_mean(&uni, 20_000) / 2000.0 - 1.0).abs() < 0.01);
        // Shape 3 has a finite variance: mean 3/2 x_m.
        let par = SizeDist::Pareto { scale_bytes: 10_000.0, shape: 3.0 };
        assert!((sample_mean(&par, 20_000) / 15_000.0 - 1.0).abs() < 0.03);
    }

    #[test]
    fn pareto_draws_are_never_below_the_scale_and_a_cap_holds() {
        let par = SizeDist::Pareto { scale_bytes: 1000.0, shape: 1.1 };
        let mut r = rng();
        let drawn: Vec<u64> = (0..5000).map(|i| par.draw(i, Some(1_000_000), &mut r)).collect();
        assert!(drawn.iter().all(|&b| (1000..=1_000_000).contains(&b)));
        assert!(drawn.contains(&1_000_000), "a heavy tail reaches the cap");
    }

    /// Worked example: points (100, 0.5), (300, 1.0). Half the mass sits at
    /// 100 bytes; the rest is uniform on [100, 300]: the median is 100, the
    /// 75th percentile 200, the mean 0.5 x 100 + 0.5 x 200 = 150.
    #[test]
    fn an_empirical_cdf_is_interpolated_linearly() {
        let points = vec![(100, 0.5), (300, 1.0)];
        assert_eq!(empirical_quantile(&points, 0.25), 100.0);
        assert_eq!(empirical_quantile(&points, 0.75), 200.0);
        assert_eq!(empirical_quantile(&points, 0.999_999_9).round(), 300.0);
        let d = SizeDist::Empirical { points };
        assert!((sample_mean(&d, 20_000) / 150.0 - 1.0).abs() < 0.02);
    }

    #[test]
    fn exponential_think_times_have_their_mean() {
        let t = Think::Exponential { mean: SimDuration::from_millis(100) };
        let mut r = rng();
        let mean_ps = (0..20_000).map(|_| t.draw(&mut r).0 as f64).sum::<f64>() / 20_000.0;
        assert!((mean_ps / 1e11 - 1.0).abs() < 0.03, "{mean_ps}");
        assert_eq!(Think::Fixed(SimDuration::from_millis(5)).draw(&mut r), SimDuration::from_millis(5));
    }

    fn feed(app: &mut PoissonRequests, t_s: f64, input: AppInput) -> Vec<AppCmd> {
        let mut out = Vec::new();
        app.on_input(SimTime::ZERO + SimDuration::from_secs_f64(t_s), input, &mut out);
        out
    }

    fn timer_at(cmds: &[AppCmd]) -> Option<SimTime> {
        cmds.iter().find_map(|c| match c {
            AppCmd::Timer { at, .. } => Some(*at),
            _ => None,
        })
    }

    /// Requests overlap: the second arrives while the first is under way
    /// and gets its own connection; each finishes on its own response.
    #[test]
    fn open_loop_requests_overlap_on_their_own_connections() {
        let mut a = PoissonRequests::new(SizeDist::List(vec![5000, 7000]), None, 10.0, Some(2), 100, rng());
        let first = timer_at(&feed(&mut a, 0.0, AppInput::Start)).expect("an arrival");
        let t1 = first.0 as f64 / 1e12;
        let cmds = feed(&mut a, t1, AppInput::Timer { tag: TAG_ARRIVAL });
        assert_eq!(cmds[0], AppCmd::Connect { conn: 0 });
        let second = timer_at(&cmds).expect("the next arrival");
        let t2 = second.0 as f64 / 1e12;
        let cmds = feed(&mut a, t2, AppInput::Timer { tag: TAG_ARRIVAL });
        assert_eq!(cmds, vec![AppCmd::Connect { conn: 1 }], "two issued: no more arrivals");
        let w = feed(&mut a, t2, AppInput::Connected { conn: 1, side: Side::Client });
        assert_eq!(w[0], AppCmd::Write { conn: 1, side: Side::Client, bytes: 100 });
        let resp = feed(&mut a, t2, AppInput::Delivered { conn: 1, side: Side::Server, bytes: 100 });
        assert_eq!(resp[0], AppCmd::Write { conn: 1, side: Side::Server, bytes: 7000 });
        let done = feed(&mut a, t2 + 0.1, AppInput::Delivered { conn: 1, side: Side::Client, bytes: 7000 });
        assert!(matches!(done[0], AppCmd::RequestDone { index: 1, size_bytes: 7000, .. }));
        assert!(!done.contains(&AppCmd::Finished), "request 0 is still open");
        feed(&mut a, t2, AppInput::Delivered { conn: 0, side: Side::Server, bytes: 100 });
        let done = feed(&mut a, t2 + 0.2, AppInput::Delivered { conn: 0, side: Side::Client, bytes: 5000 });
        assert!(matches!(done[0], AppCmd::RequestDone { index: 0, size_bytes: 5000, .. }));
        assert!(done.contains(&AppCmd::Finished));
    }

    #[test]
    fn poisson_gaps_have_the_mean_of_the_rate() {
        let mut a = PoissonRequests::new(SizeDist::List(vec![1]), None, 50.0, None, 1, rng());
        let mut now = timer_at(&feed(&mut a, 0.0, AppInput::Start)).expect("arrival");
        let n = 10_000;
        for _ in 0..n {
            let t = now.0 as f64 / 1e12;
            now = timer_at(&feed(&mut a, t, AppInput::Timer { tag: TAG_ARRIVAL })).expect("arrival");
        }
        let mean_gap_s = now.0 as f64 / 1e12 / (n + 1) as f64;
        assert!((mean_gap_s / 0.02 - 1.0).abs() < 0.04, "{mean_gap_s}");
        let stopped = feed(&mut a, 1e3, AppInput::Stop);
        assert!(stopped.is_empty());
        assert!(feed(&mut a, 1e3, AppInput::Timer { tag: TAG_ARRIVAL }).is_empty(), "no arrival after stop");
    }
}
