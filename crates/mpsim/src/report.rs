//! What a run leaves behind: time series sampled every `sample_interval`
//! into column buffers (interfaces like ifstat, flows, subflows), request
//! records, and the run summary (docs/scenario-reference.md).

use crate::endpoint::{EpKind, RecoveryCounters};
use crate::sim::{Ev, Simulation};
use crate::spec::{AppSpec, Spec, TransportSpec};
use mpsim_core::{Packet, SimDuration, SimTime};
use mpsim_net::NodeKind;
use mpsim_proto::apps::Side;
use mpsim_proto::transport::{FastRtxCounters, PathView};
use mpsim_proto::AppEvent;
use serde_json::{json, Value};

/// One column of a trace table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Str(Vec<String>),
}

/// A table: named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

/// Every trace table of a run, by name.
pub type Traces = Vec<(String, Table)>;

#[derive(Default)]
struct IfaceCols {
    time_s: Vec<f64>,
    node: Vec<u32>,
    link: Vec<u32>,
    tx_bytes: Vec<i64>,
    rx_bytes: Vec<i64>,
    tx_bps: Vec<f64>,
    rx_bps: Vec<f64>,
}

#[derive(Default)]
struct FlowCols {
    time_s: Vec<f64>,
    flow: Vec<u32>,
    bytes_delivered: Vec<i64>,
    goodput_bps: Vec<f64>,
}

/// What identifies a row of a flow's summary `subflows`: client
/// interface, server interface and client port (0 for TCP, whose
/// connections are merged per interface pair).
type PathKey = (String, String, u16);

/// One row of a flow's summary `subflows`, or one endpoint's share of it.
#[derive(Clone, Debug)]
pub(crate) struct PathRow {
    key: PathKey,
    /// Where the row first appears: (the endpoint's `created`, subflow
    /// index). Rows are listed in this order.
    first_seen: (u64, u32),
    /// Payload delivered to the receiving application (0 from the sender).
    delivered_bytes: u64,
    reinjected_bytes: u64,
    counters: RecoveryCounters,
    backup: bool,
    /// Fast retransmissions by class, where the transport counts them (cmt).
    fast_rtx: Option<FastRtxCounters>,
}

/// A flow's summary rows, merged by key. Only sums and ors: the order in
/// which endpoints are added changes nothing but `first_seen`, the least.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathRows {
    rows: Vec<PathRow>,
    index: rustc_hash::FxHashMap<PathKey, usize>,
}

impl PathRows {
    pub fn add(&mut self, row: PathRow) {
        match self.index.get(&row.key) {
            Some(&i) => {
                let x = &mut self.rows[i];
                x.first_seen = x.first_seen.min(row.first_seen);
                x.delivered_bytes += row.delivered_bytes;
                x.reinjected_bytes += row.reinjected_bytes;
                x.counters = x.counters + row.counters;
                x.backup |= row.backup;
                x.fast_rtx = match (x.fast_rtx, row.fast_rtx) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            None => {
                self.index.insert(row.key.clone(), self.rows.len());
                self.rows.push(row);
            }
        }
    }

    /// The rows in the order they first appeared.
    fn into_sorted(self) -> Vec<PathRow> {
        let mut rows = self.rows;
        rows.sort_unstable_by_key(|r| r.first_seen);
        rows
    }
}

/// The link of an interface address, or `NO_LINK`.
fn link_index(a: mpsim_core::Addr) -> u32 {
    mpsim_net::iface_of_addr(a).map_or(NO_LINK, |(l, _)| l.0)
}

const NO_LINK: u32 = u32::MAX;

#[derive(Default)]
struct ConnectionCols {
    time_s: Vec<f64>,
    flow: Vec<u32>,
    connection: Vec<i64>,
    side: Vec<&'static str>,
    rcv_buffer_bytes: Vec<i64>,
    ooo_bytes: Vec<i64>,
}

#[derive(Default)]
struct SubflowCols {
    time_s: Vec<f64>,
    flow: Vec<u32>,
    connection: Vec<i64>,
    subflow: Vec<i64>,
    side: Vec<&'static str>,
    cwnd_bytes: Vec<f64>,
    ssthresh_bytes: Vec<f64>,
    srtt_s: Vec<f64>,
    bytes_in_flight: Vec<i64>,
    bytes_delivered: Vec<i64>,
    retransmissions: Vec<i64>,
    reinjected_bytes: Vec<i64>,
    timeouts: Vec<i64>,
    fast_recoveries: Vec<i64>,
    state: Vec<&'static str>,
    backup: Vec<i64>,
    client_link: Vec<u32>,
    server_link: Vec<u32>,
    peer_rwnd_bytes: Vec<f64>,
    fast_retransmissions: Vec<f64>,
    fast_retransmissions_inter: Vec<f64>,
    fast_retransmissions_intra: Vec<f64>,
}

impl SubflowCols {
    /// A row for a path that has sent data. A closed path's row has
    /// nothing in flight and no window: its values are not frozen on.
    #[allow(clippy::too_many_arguments)]
    fn push_row(&mut self, t_s: f64, flow: u32, conn: u32, subflow: usize, side: &'static str, p: &PathView, links: (u32, u32)) {
        if p.bytes_sent == 0 {
            return;
        }
        self.time_s.push(t_s);
        self.flow.push(flow);
        self.connection.push(conn as i64);
        self.subflow.push(subflow as i64);
        self.side.push(side);
        let (cwnd, ssthresh) = if p.closed { (f64::NAN, f64::NAN) } else { (p.cwnd_bytes, p.ssthresh_bytes) };
        self.cwnd_bytes.push(cwnd);
        self.ssthresh_bytes.push(ssthresh);
        let srtt = if p.closed { None } else { p.srtt };
        self.srtt_s.push(srtt.map_or(f64::NAN, |s| s.as_secs_f64()));
        self.bytes_in_flight.push(if p.closed { 0 } else { p.bytes_in_flight as i64 });
        self.bytes_delivered.push(p.bytes_acked as i64);
        self.retransmissions.push(p.retransmitted_segs as i64);
        self.reinjected_bytes.push(p.reinjected_bytes as i64);
        self.timeouts.push(p.timeouts as i64);
        self.fast_recoveries.push(p.fast_recoveries as i64);
        self.state.push(p.state);
        self.backup.push(p.backup as i64);
        self.client_link.push(links.0);
        self.server_link.push(links.1);
        self.peer_rwnd_bytes.push(p.peer_rwnd_bytes.map_or(f64::NAN, |w| w as f64));
        // NaN where the transport does not count them (tcp, mptcp), as peer_rwnd_bytes.
        let fast = |f: fn(&FastRtxCounters) -> u64| p.fast_rtx.as_ref().map_or(f64::NAN, |c| f(c) as f64);
        self.fast_retransmissions.push(fast(|c| c.total));
        self.fast_retransmissions_inter.push(fast(|c| c.inter_path));
        self.fast_retransmissions_intra.push(fast(|c| c.intra_path));
    }
}

pub(crate) struct Sampler {
    pub interval: SimDuration,
    record_interfaces: bool,
    record_subflows: bool,
    pub scratch_packets: Vec<Packet>,
    pub scratch_events: Vec<AppEvent>,
    ifaces: IfaceCols,
    last_iface: Vec<(u64, u64)>,
    flows: FlowCols,
    last_flow: Vec<u64>,
    subflows: SubflowCols,
    /// Per endpoint slot and subflow: its closing has been sampled (one last row).
    closed_sampled: Vec<Vec<bool>>,
    connections: ConnectionCols,
    last_time: SimTime,
}

impl Sampler {
    /// Slot `ep` holds a new endpoint: none of its subflows has been sampled closed.
    pub fn forget_endpoint(&mut self, ep: usize) {
        if let Some(seen) = self.closed_sampled.get_mut(ep) {
            seen.clear();
        }
    }

    /// True the first time subflow `i` of endpoint `ep` is seen closed, false after.
    fn first_closed_sample(&mut self, ep: usize, i: usize) -> bool {
        if self.closed_sampled.len() <= ep {
            self.closed_sampled.resize(ep + 1, Vec::new());
        }
        let seen = &mut self.closed_sampled[ep];
        if seen.len() <= i {
            seen.resize(i + 1, false);
        }
        !std::mem::replace(&mut seen[i], true)
    }
}

impl Sampler {
    pub fn new(spec: &Spec) -> Self {
        Sampler {
            interval: SimDuration(spec.sample_interval_ps),
            record_interfaces: spec.record.interfaces,
            record_subflows: spec.record.subflows,
            scratch_packets: Vec::new(),
            scratch_events: Vec::new(),
            ifaces: IfaceCols::default(),
            last_iface: vec![(0, 0); spec.links.len() * 2],
            flows: FlowCols::default(),
            last_flow: vec![0; spec.flows.len()],
            subflows: SubflowCols::default(),
            closed_sampled: Vec::new(),
            connections: ConnectionCols::default(),
            last_time: SimTime::ZERO,
        }
    }
}

fn rate_bps(bytes: u64, dt_s: f64) -> f64 {
    if dt_s > 0.0 {
        bytes as f64 * 8.0 / dt_s
    } else {
        0.0
    }
}

impl Simulation {
    pub(crate) fn on_sample(&mut self) {
        let dt_s = (self.now - self.sampler.last_time).as_secs_f64();
        let t_s = self.now.as_secs_f64();
        if self.sampler.record_interfaces {
            self.sample_interfaces(t_s, dt_s);
        }
        self.sample_flows(t_s, dt_s);
        if self.sampler.record_subflows {
            self.sample_subflows(t_s);
        }
        self.sampler.last_time = self.now;
        let next = self.now + self.sampler.interval;
        if next <= self.end {
            self.queue.push(next, Ev::Sample);
        }
    }

    fn sample_interfaces(&mut self, t_s: f64, dt_s: f64) {
        for (n, node) in self.nodes.iter().enumerate() {
            if node.kind != NodeKind::Host {
                continue;
            }
            for &(link, side) in &node.ifaces {
                let out = (2 * link.0 + side) as usize;
                let tx = self.dirs[out].stats().tx_bytes;
                let rx = self.dirs[out ^ 1].stats().rx_bytes;
                let (ltx, lrx) = self.sampler.last_iface[out];
                self.sampler.last_iface[out] = (tx, rx);
                let c = &mut self.sampler.ifaces;
                c.time_s.push(t_s);
                c.node.push(n as u32);
                c.link.push(link.0);
                c.tx_bytes.push((tx - ltx) as i64);
                c.rx_bytes.push((rx - lrx) as i64);
                c.tx_bps.push(rate_bps(tx - ltx, dt_s));
                c.rx_bps.push(rate_bps(rx - lrx, dt_s));
            }
        }
    }

    fn sample_flows(&mut self, t_s: f64, dt_s: f64) {
        for (i, f) in self.flows.iter().enumerate() {
            let d = f.delivered_bytes;
            let last = std::mem::replace(&mut self.sampler.last_flow[i], d);
            let c = &mut self.sampler.flows;
            c.time_s.push(t_s);
            c.flow.push(i as u32);
            c.bytes_delivered.push(d as i64);
            c.goodput_bps.push(rate_bps(d - last, dt_s));
        }
    }

    /// One row per open subflow that has sent data, and one last row (state
    /// "closed", or "time_wait" for the side that waits out TIME_WAIT, with
    /// nothing left to send) for a subflow that ended since the last sample.
    /// A finished MPTCP connection's buffers are empty: no more rows.
    /// Endpoints come in the order they were made, whichever slots they hold.
    fn sample_subflows(&mut self, t_s: f64) {
        let mut live: Vec<(u64, usize)> = (self.endpoints.iter().enumerate())
            .filter(|(_, e)| !matches!(e.kind, EpKind::Closed))
            .map(|(n, e)| (e.created, n))
            .collect();
        live.sort_unstable();
        for (_, n) in live {
            let e = &self.endpoints[n];
            let Some(t) = e.kind.transport() else { continue };
            let side = if e.side == Side::Client { "client" } else { "server" };
            for (i, p) in t.paths().iter().enumerate() {
                if p.closed && !self.sampler.first_closed_sample(n, i) {
                    continue;
                }
                let (client, server) = if e.side == Side::Client { (p.local, p.remote) } else { (p.remote, p.local) };
                let links = (link_index(client), link_index(server));
                self.sampler.subflows.push_row(t_s, e.flow, e.conn, i, side, p, links);
            }
            if let Some((held_bytes, ooo_bytes)) = t.buffer_sample() {
                let c = &mut self.sampler.connections;
                c.time_s.push(t_s);
                c.flow.push(e.flow);
                c.connection.push(e.conn as i64);
                c.side.push(side);
                c.rcv_buffer_bytes.push(held_bytes as i64);
                c.ooo_bytes.push(ooo_bytes as i64);
            }
        }
    }

    fn link_name(&self, l: u32) -> String {
        self.links.get(l as usize).map_or_else(String::new, |l| l.name.clone())
    }

    fn names<T: Copy>(&self, idx: &[T], f: impl Fn(T) -> String) -> Column {
        Column::Str(idx.iter().map(|&i| f(i)).collect())
    }

    fn link_name_of(&self, a: mpsim_core::Addr) -> String {
        mpsim_net::iface_of_addr(a).and_then(|(l, _)| self.links.get(l.index())).map_or_else(|| a.to_string(), |l| l.name.clone())
    }

    /// What endpoint `e` adds to its flow's summary rows: one row per
    /// MPTCP subflow; for TCP (and an aborted MPTCP endpoint) one row of its
    /// interface pair.
    pub(crate) fn path_rows(&self, e: &crate::flows::Endpoint) -> Vec<PathRow> {
        let f = &self.flows[e.flow as usize];
        let receiving = e.side == f.receiver;
        if e.kind.transport().is_some_and(|t| t.summary_row_per_path()) {
            return (e.kind.paths().iter().enumerate())
                .map(|(i, p)| {
                    let (client, server, port) = if e.side == Side::Client {
                        (p.local, p.remote, p.local_port)
                    } else {
                        (p.remote, p.local, p.remote_port)
                    };
                    PathRow {
                        key: (self.link_name_of(client), self.link_name_of(server), port),
                        first_seen: (e.created, i as u32),
                        delivered_bytes: if receiving { p.rx_bytes.unwrap_or(e.delivered_bytes) } else { 0 },
                        reinjected_bytes: p.reinjected_bytes,
                        counters: p.counters,
                        backup: p.backup,
                        fast_rtx: p.fast_rtx,
                    }
                })
                .collect();
        }
        let counters = match &e.kind {
            EpKind::Closed => e.counters,
            k => k.counters(),
        };
        let server_iface = self.links[f.server_link.index()].name.clone();
        vec![PathRow {
            key: (self.links[e.client_link.index()].name.clone(), server_iface, 0),
            first_seen: (e.created, 0),
            delivered_bytes: if receiving { e.delivered_bytes } else { 0 },
            reinjected_bytes: 0,
            counters,
            backup: false,
            fast_rtx: None,
        }]
    }

    /// The rows of flow `i`'s summary `subflows`: those of its released
    /// endpoints and of those still held, in the order they first appeared.
    /// TCP connections are merged per (client, server) interface pair;
    /// MPTCP subflows are listed one by one.
    fn flow_path_rows(&self, i: usize) -> Vec<PathRow> {
        let mut rows = self.flows[i].released_paths.clone();
        for e in self.endpoints.iter().filter(|e| e.flow == i as u32 && !e.released) {
            for row in self.path_rows(e) {
                rows.add(row);
            }
        }
        rows.into_sorted()
    }

    /// The trace tables, as columns.
    pub fn traces(&self) -> Traces {
        let s = &self.sampler;
        let i = &s.ifaces;
        let interfaces = Table {
            columns: vec![
                ("time_s".into(), Column::F64(i.time_s.clone())),
                ("node".into(), self.names(&i.node, |n| self.nodes[n as usize].name.clone())),
                ("interface".into(), self.names(&i.link, |l| self.links[l as usize].name.clone())),
                ("tx_bytes".into(), Column::I64(i.tx_bytes.clone())),
                ("rx_bytes".into(), Column::I64(i.rx_bytes.clone())),
                ("tx_bps".into(), Column::F64(i.tx_bps.clone())),
                ("rx_bps".into(), Column::F64(i.rx_bps.clone())),
            ],
        };
        let f = &s.flows;
        let flows = Table {
            columns: vec![
                ("time_s".into(), Column::F64(f.time_s.clone())),
                ("flow".into(), self.names(&f.flow, |k| self.flows[k as usize].spec.name.clone())),
                ("bytes_delivered".into(), Column::I64(f.bytes_delivered.clone())),
                ("goodput_bps".into(), Column::F64(f.goodput_bps.clone())),
            ],
        };
        let u = &s.subflows;
        let subflows = Table {
            columns: vec![
                ("time_s".into(), Column::F64(u.time_s.clone())),
                ("flow".into(), self.names(&u.flow, |k| self.flows[k as usize].spec.name.clone())),
                ("connection".into(), Column::I64(u.connection.clone())),
                ("subflow".into(), Column::I64(u.subflow.clone())),
                ("side".into(), Column::Str(u.side.iter().map(|s| s.to_string()).collect())),
                ("cwnd_bytes".into(), Column::F64(u.cwnd_bytes.clone())),
                ("ssthresh_bytes".into(), Column::F64(u.ssthresh_bytes.clone())),
                ("srtt_s".into(), Column::F64(u.srtt_s.clone())),
                ("bytes_in_flight".into(), Column::I64(u.bytes_in_flight.clone())),
                ("bytes_delivered".into(), Column::I64(u.bytes_delivered.clone())),
                ("retransmissions".into(), Column::I64(u.retransmissions.clone())),
                ("reinjected_bytes".into(), Column::I64(u.reinjected_bytes.clone())),
                ("timeouts".into(), Column::I64(u.timeouts.clone())),
                ("fast_recoveries".into(), Column::I64(u.fast_recoveries.clone())),
                ("state".into(), Column::Str(u.state.iter().map(|s| s.to_string()).collect())),
                ("backup".into(), Column::I64(u.backup.clone())),
                ("client_interface".into(), self.names(&u.client_link, |l| self.link_name(l))),
                ("server_interface".into(), self.names(&u.server_link, |l| self.link_name(l))),
                ("peer_rwnd_bytes".into(), Column::F64(u.peer_rwnd_bytes.clone())),
                ("fast_retransmissions".into(), Column::F64(u.fast_retransmissions.clone())),
                ("fast_retransmissions_inter".into(), Column::F64(u.fast_retransmissions_inter.clone())),
                ("fast_retransmissions_intra".into(), Column::F64(u.fast_retransmissions_intra.clone())),
            ],
        };
        let c = &s.connections;
        let connections = Table {
            columns: vec![
                ("time_s".into(), Column::F64(c.time_s.clone())),
                ("flow".into(), self.names(&c.flow, |k| self.flows[k as usize].spec.name.clone())),
                ("connection".into(), Column::I64(c.connection.clone())),
                ("side".into(), Column::Str(c.side.iter().map(|s| s.to_string()).collect())),
                ("rcv_buffer_bytes".into(), Column::I64(c.rcv_buffer_bytes.clone())),
                ("ooo_bytes".into(), Column::I64(c.ooo_bytes.clone())),
            ],
        };
        vec![
            ("interfaces".into(), interfaces),
            ("flows".into(), flows),
            ("subflows".into(), subflows),
            ("connections".into(), connections),
            ("requests".into(), self.requests_table()),
        ]
    }

    fn requests_table(&self) -> Table {
        let (mut flow, mut index, mut size, mut start, mut end) = (vec![], vec![], vec![], vec![], vec![]);
        for f in &self.flows {
            for &(i, sz, s, e) in &f.requests {
                flow.push(f.spec.name.clone());
                index.push(i as i64);
                size.push(sz as i64);
                start.push(s.as_secs_f64());
                end.push(e.as_secs_f64());
            }
        }
        Table {
            columns: vec![
                ("flow".into(), Column::Str(flow)),
                ("index".into(), Column::I64(index)),
                ("size_bytes".into(), Column::I64(size)),
                ("start_s".into(), Column::F64(start)),
                ("end_s".into(), Column::F64(end)),
            ],
        }
    }

    /// The run summary (docs/scenario-reference.md), without `mpsim_version`.
    pub fn summary(&self) -> Value {
        // Numbers, strings and maps always convert to a Value.
        serde_json::to_value(SummaryOut { sim: self, with_requests: true }).unwrap_or_default()
    }

    /// The run summary as JSON text, the same as `summary().to_string()`,
    /// or with every flow's `requests` empty (`with_requests` false: the
    /// caller takes them from the requests table). Written straight from
    /// the records, one flow and one link at a time: as a tree of JSON
    /// values the summary of a datacenter run (8,192 flows of 8 subflows,
    /// 24,576 links) took some 140 MB, and a run of short flows has one
    /// request per connection and up to one row per port block.
    pub fn summary_json(&self, with_requests: bool) -> String {
        // Serializing numbers, strings and maps into a String cannot fail.
        serde_json::to_string(&SummaryOut { sim: self, with_requests }).unwrap_or_default()
    }

    /// The summary written to `out` (pretty-printed when `pretty`), as
    /// `summary_json(true)` without holding the text.
    pub fn write_summary<W: std::io::Write>(&self, out: W, pretty: bool) -> serde_json::Result<()> {
        let s = SummaryOut { sim: self, with_requests: true };
        if pretty {
            serde_json::to_writer_pretty(out, &s)
        } else {
            serde_json::to_writer(out, &s)
        }
    }

    /// Indices of the items named by `names` that the summary lists: a name
    /// given twice keeps its first place and its last item, as a JSON
    /// object built by insertion does.
    fn listed<'a>(names: impl Iterator<Item = &'a str>) -> Vec<usize> {
        let mut slot: rustc_hash::FxHashMap<&str, usize> = Default::default();
        let mut order: Vec<usize> = Vec::new();
        for (i, name) in names.enumerate() {
            match slot.entry(name) {
                std::collections::hash_map::Entry::Occupied(e) => order[*e.get()] = i,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(order.len());
                    order.push(i);
                }
            }
        }
        order
    }

    /// Link `l`'s summary: its two directions.
    fn link_summary(&self, l: usize) -> Value {
        let dur_ps = self.now.as_ps().max(1) as f64;
        let dir = |d: usize| {
            let s = self.dirs[d].stats();
            json!({
                "bytes": s.tx_bytes,
                "packets": s.tx_packets,
                "drops": s.queue_drops + s.loss_drops + s.down_drops,
                "queue_drops": s.queue_drops,
                "loss_drops": s.loss_drops,
                "ecn_marks": s.ecn_marks,
                "utilization": (s.busy_ps as f64 / dur_ps).min(1.0),
            })
        };
        json!({"a_to_b": dir(2 * l), "b_to_a": dir(2 * l + 1)})
    }

    /// Flow `i`'s summary; with `with_lists` false its `subflows` and
    /// `requests` are left empty.
    /// Flow `i`'s time from its start to its completion, or to now.
    fn flow_duration_s(&self, i: usize) -> f64 {
        let f = &self.flows[i];
        (f.completion.unwrap_or(self.now) - f.start()).as_secs_f64()
    }

    fn flow_summary(&self, i: usize, with_lists: bool) -> Value {
        let f = &self.flows[i];
        let start = f.start();
        let dur_s = self.flow_duration_s(i);
        let goodput = rate_bps(f.delivered_bytes, dur_s);
        let rows = self.flow_path_rows(i);
        let retx_total: u64 = rows.iter().map(|r| r.counters.retransmitted_bytes).sum();
        let is_mptcp = f.mptcp.is_some();
        let subflows: Vec<Value> = if with_lists {
            rows.iter().map(|row| serde_json::to_value(PathRowOut { row, dur_s, is_mptcp }).unwrap_or_default()).collect()
        } else {
            Vec::new()
        };
        let requests: Vec<Value> = if with_lists {
            f.requests.iter().map(|&r| serde_json::to_value(RequestOut(r)).unwrap_or_default()).collect()
        } else {
            Vec::new()
        };
        let transport = match f.spec.transport {
            TransportSpec::Tcp => "tcp",
            TransportSpec::Udp => "udp",
            TransportSpec::Mptcp => "mptcp",
            TransportSpec::Cmt => "cmt",
        };
        let mut v = json!({
            "transport": transport,
            "cc": if f.spec.transport == TransportSpec::Udp { Value::Null } else { Value::from(f.spec.cc.clone()) },
            "bytes_delivered": f.delivered_bytes,
            "goodput_bps": goodput,
            "completion_time_s": f.completion.map(|c| (c - start).as_secs_f64()),
            "retransmitted_bytes": retx_total,
            "subflows": subflows,
            "fallback": f.fallback,
            "requests": requests,
            "start_s": start.as_secs_f64(),
        });
        if matches!(f.spec.app, AppSpec::Cbr { .. }) || f.spec.transport == TransportSpec::Udp {
            v["sent_bytes"] = json!(f.udp_sent_bytes);
        }
        // cmt: the destinations' fast retransmissions by class, added up.
        if let Some(c) = rows.iter().filter_map(|r| r.fast_rtx).reduce(|a, b| a + b) {
            v["fast_retransmissions"] = json!(c.total);
            v["fast_retransmissions_inter"] = json!(c.inter_path);
            v["fast_retransmissions_intra"] = json!(c.intra_path);
        }
        v
    }
}

/// The summary being written, from the simulation's records.
struct SummaryOut<'a> {
    sim: &'a Simulation,
    with_requests: bool,
}

/// A flow's summary, its requests from `requests` and its subflows from `rows`.
struct FlowOut<'a> {
    summary: &'a Value,
    requests: &'a [(u32, u64, SimTime, SimTime)],
    rows: Vec<PathRow>,
    dur_s: f64,
    is_mptcp: bool,
}

/// One row of a flow's summary `subflows`.
struct PathRowOut<'a> {
    row: &'a PathRow,
    /// The flow's duration, for `goodput_bps`.
    dur_s: f64,
    /// MPTCP rows also report reinjections and the backup flag.
    is_mptcp: bool,
}

impl serde::Serialize for PathRowOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (r, c) = (self.row, &self.row.counters);
        let extra = if self.is_mptcp { 2 } else { 0 } + if r.fast_rtx.is_some() { 3 } else { 0 };
        let mut map = serializer.serialize_map(Some(8 + extra))?;
        map.serialize_entry("client_interface", &r.key.0)?;
        map.serialize_entry("server_interface", &r.key.1)?;
        map.serialize_entry("bytes_delivered", &r.delivered_bytes)?;
        map.serialize_entry("goodput_bps", &rate_bps(r.delivered_bytes, self.dur_s))?;
        map.serialize_entry("retransmitted_bytes", &c.retransmitted_bytes)?;
        map.serialize_entry("timeouts", &c.timeouts)?;
        map.serialize_entry("fast_recoveries", &c.fast_recoveries)?;
        map.serialize_entry("spurious_retransmissions", &c.spurious_retransmissions)?;
        if self.is_mptcp {
            map.serialize_entry("reinjected_bytes", &r.reinjected_bytes)?;
            map.serialize_entry("backup", &r.backup)?;
        }
        if let Some(f) = &r.fast_rtx {
            map.serialize_entry("fast_retransmissions", &f.total)?;
            map.serialize_entry("fast_retransmissions_inter", &f.inter_path)?;
            map.serialize_entry("fast_retransmissions_intra", &f.intra_path)?;
        }
        map.end()
    }
}

/// One row of a flow's `requests`.
struct RequestOut((u32, u64, SimTime, SimTime));

/// The entries of a JSON object, with `f` writing the value of each.
fn serialize_object<S: serde::Serializer>(
    serializer: S,
    object: &Value,
    mut f: impl FnMut(&mut S::SerializeMap, &String, &Value) -> Result<(), S::Error>,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let Value::Object(entries) = object else { return serde::Serialize::serialize(object, serializer) };
    let mut map = serializer.serialize_map(Some(entries.len()))?;
    for (k, v) in entries {
        f(&mut map, k, v)?;
    }
    map.end()
}

impl serde::Serialize for SummaryOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let sim = self.sim;
        let paths = sim.path_summary();
        let controller = sim.controller_summary();
        let mut map = serializer.serialize_map(Some(9 + paths.is_some() as usize + controller.is_some() as usize))?;
        map.serialize_entry("format", &1)?;
        map.serialize_entry("scenario", &sim.name)?;
        map.serialize_entry("seed", &sim.seed)?;
        map.serialize_entry("sim_time_s", &sim.now.as_secs_f64())?;
        map.serialize_entry("wall_time_s", &sim.wall_s)?;
        map.serialize_entry("events", &sim.events)?;
        map.serialize_entry("packet_hops", &sim.packet_hops)?;
        map.serialize_entry("flows", &FlowsOut { sim, with_requests: self.with_requests })?;
        map.serialize_entry("links", &LinksOut(sim))?;
        if let Some(p) = &paths {
            map.serialize_entry("paths", p)?;
        }
        if let Some(c) = &controller {
            map.serialize_entry("controller", c)?;
        }
        map.end()
    }
}

/// The summary's `flows` object, one flow's value built at a time.
struct FlowsOut<'a> {
    sim: &'a Simulation,
    with_requests: bool,
}

impl serde::Serialize for FlowsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let sim = self.sim;
        let listed = Simulation::listed(sim.flows.iter().map(|f| f.spec.name.as_str()));
        let mut map = serializer.serialize_map(Some(listed.len()))?;
        for i in listed {
            let f = &sim.flows[i];
            let summary = sim.flow_summary(i, false);
            let requests = if self.with_requests { &f.requests[..] } else { &[][..] };
            let out = FlowOut {
                summary: &summary,
                requests,
                rows: sim.flow_path_rows(i),
                dur_s: sim.flow_duration_s(i),
                is_mptcp: f.mptcp.is_some(),
            };
            map.serialize_entry(&f.spec.name, &out)?;
        }
        map.end()
    }
}

/// The summary's `links` object, one link's value built at a time.
struct LinksOut<'a>(&'a Simulation);

impl serde::Serialize for LinksOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let sim = self.0;
        let listed = Simulation::listed(sim.links.iter().map(|l| l.name.as_str()));
        let mut map = serializer.serialize_map(Some(listed.len()))?;
        for l in listed {
            map.serialize_entry(&sim.links[l].name, &sim.link_summary(l))?;
        }
        map.end()
    }
}

impl serde::Serialize for FlowOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Requests<'a>(&'a [(u32, u64, SimTime, SimTime)]);
        impl serde::Serialize for Requests<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
                for &r in self.0 {
                    seq.serialize_element(&RequestOut(r))?;
                }
                seq.end()
            }
        }
        struct Rows<'a>(&'a FlowOut<'a>);
        impl serde::Serialize for Rows<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let f = self.0;
                let mut seq = serializer.serialize_seq(Some(f.rows.len()))?;
                for row in &f.rows {
                    seq.serialize_element(&PathRowOut { row, dur_s: f.dur_s, is_mptcp: f.is_mptcp })?;
                }
                seq.end()
            }
        }
        serialize_object(serializer, self.summary, |map, k, v| match k.as_str() {
            "requests" => map.serialize_entry(k, &Requests(self.requests)),
            "subflows" => map.serialize_entry(k, &Rows(self)),
            _ => map.serialize_entry(k, v),
        })
    }
}

impl serde::Serialize for RequestOut {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (_, size_bytes, start, end) = self.0;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("size_bytes", &size_bytes)?;
        map.serialize_entry("start_s", &start.as_secs_f64())?;
        map.serialize_entry("end_s", &end.as_secs_f64())?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_given_twice_keeps_its_first_place_and_its_last_item() {
        assert_eq!(Simulation::listed(["b", "a", "b", "c", "a"].into_iter()), vec![2, 4, 3]);
    }

    #[test]
    fn the_written_summary_is_the_summary_value() {
        let dir = json!({"bandwidth_bps": 10_000_000u64, "delay_ps": 5_000_000_000u64, "queue": {"packets": 100},
                         "loss": {"model": "none"}, "bandwidth_trace": null});
        let link =
            |name: &str, a: &str, b: &str| json!({"name": name, "a": a, "b": b, "a_to_b": dir, "b_to_a": dir, "events": []});
        let flow = |name: &str, start_ps: u64| {
            json!({"name": name, "transport": "tcp", "client": "client", "server": "server", "cc": "reno",
                   "app": {"kind": "download", "size_bytes": 20_000}, "start_ps": start_ps, "mss_bytes": 1448, "rcvbuf_bytes": 1u64 << 20})
        };
        let spec = json!({"name": "written", "seed": 1, "duration_ps": 2_000_000_000_000u64, "sample_interval_ps": 0,
            "mss_bytes": 1448, "header_bytes": 66,
            "nodes": [{"name": "client", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "server", "kind": "host"}],
            "links": [link("c", "client", "r"), link("s", "r", "server")],
            "flows": [flow("x", 0), flow("y", 0), flow("x", 1_000_000_000)],
            "record": {"interfaces": false, "subflows": false, "pcap": []}});
        let mut sim = Simulation::from_json(&spec.to_string()).expect("spec builds");
        sim.run_until(SimTime(u64::MAX));
        let value = sim.summary();
        let flows = value["flows"].as_object().expect("flows");
        assert_eq!(flows.keys().collect::<Vec<_>>(), ["x", "y"], "{value}");
        assert_eq!(flows["x"]["start_s"], json!(0.001), "the last flow named x");
        assert_eq!(sim.summary_json(true), value.to_string());
        let mut pretty = Vec::new();
        sim.write_summary(&mut pretty, true).expect("writes to memory");
        assert_eq!(String::from_utf8(pretty).expect("utf-8"), serde_json::to_string_pretty(&value).expect("prints"));
    }
}
