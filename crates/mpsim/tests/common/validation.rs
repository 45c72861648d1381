//! Validation against theory (docs/validation.md): link utilisation, the
//! Mathis et al. throughput formula, fairness among equal-RTT flows and RTT
//! unfairness. Each experiment returns its measured rows; the tests assert
//! on them and `cargo run --release --example validation` prints the tables.

use super::testbed::{bdp_pkts, bernoulli, jain, payload_capacity_bps, run, Dumbbell};
use mpsim::report_column::Column;
use serde_json::Value;

fn goodput(summary: &Value, flow: &str) -> f64 {
    summary["flows"][flow]["goodput_bps"].as_f64().unwrap_or(0.0)
}

fn column<'a>(traces: &'a mpsim::Traces, table: &str, name: &str) -> Option<&'a Column> {
    let t = &traces.iter().find(|(n, _)| n == table)?.1;
    t.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
}

/// Mean of the sampled smoothed RTT of `flow`'s sending side, after `skip_s`.
pub fn mean_srtt_s(sim: &mpsim::Simulation, flow: &str, skip_s: f64) -> Option<f64> {
    let tr = sim.traces();
    let (Some(Column::F64(t)), Some(Column::Str(f)), Some(Column::F64(rtt))) =
        (column(&tr, "subflows", "time_s"), column(&tr, "subflows", "flow"), column(&tr, "subflows", "srtt_s"))
    else {
        return None;
    };
    let xs: Vec<f64> = (0..t.len()).filter(|&i| f[i] == flow && t[i] > skip_s && rtt[i].is_finite()).map(|i| rtt[i]).collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Goodput of `flow` between `from_s` and the end of the run, from the flow samples.
pub fn goodput_after_bps(sim: &mpsim::Simulation, flow: &str, from_s: f64) -> Option<f64> {
    let tr = sim.traces();
    let (Some(Column::F64(t)), Some(Column::Str(f)), Some(Column::I64(b))) =
        (column(&tr, "flows", "time_s"), column(&tr, "flows", "flow"), column(&tr, "flows", "bytes_delivered"))
    else {
        return None;
    };
    let rows: Vec<usize> = (0..t.len()).filter(|&i| f[i] == flow && t[i] >= from_s).collect();
    let (first, last) = (*rows.first()?, *rows.last()?);
    let dt = t[last] - t[first];
    (dt > 0.0).then(|| (b[last] - b[first]) as f64 * 8.0 / dt)
}

/// Utilisation of a 10 Mbps, 20 ms one-way bottleneck with one BDP of buffer.
#[derive(Debug, Clone)]
pub struct Utilization {
    pub ccs: Vec<String>,
    pub goodput_bps: Vec<f64>,
    pub capacity_bps: f64,
}

impl Utilization {
    pub fn fraction(&self) -> f64 {
        self.goodput_bps.iter().sum::<f64>() / self.capacity_bps
    }
}

pub fn utilization(ccs: &[&str], duration_s: f64, seed: u64) -> Utilization {
    let bw = 10_000_000;
    let mut d = Dumbbell::new(ccs.len(), bw, 20.0, bdp_pkts(bw, 40.0));
    d.ccs = ccs.iter().map(|s| s.to_string()).collect();
    d.duration_s = duration_s;
    d.seed = seed;
    d.record = false;
    let (_, s) = run(&d.spec()).expect("testbed spec builds");
    Utilization {
        ccs: d.ccs.clone(),
        goodput_bps: (0..ccs.len()).map(|i| goodput(&s, &format!("f{i}"))).collect(),
        capacity_bps: payload_capacity_bps(bw),
    }
}

/// One row of the Mathis check.
#[derive(Debug, Clone)]
pub struct MathisRow {
    pub p: f64,
    pub seeds: usize,
    pub mean_goodput_bps: f64,
    pub std_goodput_bps: f64,
    pub mean_rtt_s: f64,
    /// MSS*sqrt(3/2)/(RTT*sqrt(p)) with the propagation RTT (40 ms).
    pub predicted_base_rtt_bps: f64,
    /// The same with the mean RTT the flow measured (queueing included).
    pub predicted_measured_rtt_bps: f64,
}

impl MathisRow {
    pub fn ratio_measured(&self) -> f64 {
        self.mean_goodput_bps / self.predicted_measured_rtt_bps
    }
    pub fn ratio_base(&self) -> f64 {
        self.mean_goodput_bps / self.predicted_base_rtt_bps
    }
}

pub fn mathis_prediction_bps(mss_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    mss_bytes * 8.0 * (1.5f64).sqrt() / (rtt_s * p.sqrt())
}

/// Seconds excluded from the Mathis measurement: slow start into a large
/// buffer overshoots and its recovery is not the steady state the formula
/// describes.
pub const MATHIS_WARMUP_S: f64 = 20.0;

/// Reno, SACK on, delayed ACK off, 10 Mbps, 40 ms RTT, a large buffer and
/// Bernoulli loss `p` on the data direction. Goodput and RTT are measured
/// after [`MATHIS_WARMUP_S`].
pub fn mathis(p: f64, seeds: usize, duration_s: f64) -> MathisRow {
    let bw = 10_000_000;
    let mut goodputs = vec![];
    let mut rtts = vec![];
    for seed in 1..=seeds as u64 {
        let mut d = Dumbbell::new(1, bw, 20.0, 1000);
        d.loss = bernoulli(p);
        d.delayed_ack = false;
        d.duration_s = duration_s;
        d.seed = seed;
        let (sim, _) = run(&d.spec()).expect("testbed spec builds");
        goodputs.push(goodput_after_bps(&sim, "f0", MATHIS_WARMUP_S).unwrap_or(0.0));
        rtts.push(mean_srtt_s(&sim, "f0", MATHIS_WARMUP_S).unwrap_or(0.04));
    }
    let n = goodputs.len() as f64;
    let mean = goodputs.iter().sum::<f64>() / n;
    let std = (goodputs.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let rtt = rtts.iter().sum::<f64>() / n;
    MathisRow {
        p,
        seeds,
        mean_goodput_bps: mean,
        std_goodput_bps: std,
        mean_rtt_s: rtt,
        predicted_base_rtt_bps: mathis_prediction_bps(1448.0, 0.040, p),
        predicted_measured_rtt_bps: mathis_prediction_bps(1448.0, rtt, p),
    }
}

/// Jain's index of `n` reno flows of equal RTT through one bottleneck.
#[derive(Debug, Clone)]
pub struct Fairness {
    pub n: usize,
    pub goodput_bps: Vec<f64>,
    pub jain: f64,
}

pub fn fairness(n: usize, duration_s: f64, seed: u64) -> Fairness {
    let bw = 10_000_000;
    let mut d = Dumbbell::new(n, bw, 20.0, bdp_pkts(bw, 40.0));
    d.duration_s = duration_s;
    d.seed = seed;
    d.record = false;
    let (_, s) = run(&d.spec()).expect("testbed spec builds");
    let g: Vec<f64> = (0..n).map(|i| goodput(&s, &format!("f{i}"))).collect();
    Fairness { n, jain: jain(&g), goodput_bps: g }
}

/// Two reno flows with 20 ms and 80 ms one-way delay sharing a bottleneck.
#[derive(Debug, Clone)]
pub struct RttUnfairness {
    pub rtt_s: [f64; 2],
    pub goodput_bps: [f64; 2],
    pub mean_rtt_s: [f64; 2],
}

impl RttUnfairness {
    /// Throughput ratio short/long.
    pub fn ratio(&self) -> f64 {
        self.goodput_bps[0] / self.goodput_bps[1]
    }
}

pub fn rtt_unfairness(duration_s: f64, seed: u64) -> RttUnfairness {
    let bw = 10_000_000;
    let mut d = Dumbbell::new(2, bw, 1.0, bdp_pkts(bw, 100.0));
    d.access_delay_ms = vec![19.0, 79.0];
    d.duration_s = duration_s;
    d.seed = seed;
    let (sim, s) = run(&d.spec()).expect("testbed spec builds");
    RttUnfairness {
        rtt_s: [0.040, 0.160],
        goodput_bps: [goodput(&s, "f0"), goodput(&s, "f1")],
        mean_rtt_s: [mean_srtt_s(&sim, "f0", 5.0).unwrap_or(0.0), mean_srtt_s(&sim, "f1", 5.0).unwrap_or(0.0)],
    }
}
