//! Building the world from a spec: nodes, links and their directions,
//! routes, flows with their applications, and the initial events.

use crate::flows::{make_app, Flow, MptcpFlow};
use crate::report::Sampler;
use crate::sim::{BuildError, Ev, Link, Node, Simulation};
use crate::spec::{
    AppSpec, CcModeSpec, FlowSpec, LinkDirSpec, LossSpec, NodeKindSpec, QdiscSpec, QueueSpec, Spec, TransportSpec,
};
use mpsim_cc::{CcMode, Controller};
use mpsim_core::{EventQueue, LinkId, NodeId, PacketPool, SimDuration, SimRng, SimTime};
use mpsim_net::qdisc::{CodelParams, FqCodelParams, RandomDropParams, RedParams};
use mpsim_net::{iface_addr, LinkDir, LinkDirParams, LossModel, NodeKind, QdiscConfig, QueueLimit, Topology};
use mpsim_proto::sctp::SctpConfig;
use mpsim_proto::tcp::mtu::{DEFAULT_MTU_BYTES, MAX_MTU_BYTES, MIN_MTU_BYTES, TIMESTAMP_OPTION_BYTES};
use mpsim_proto::TcpConfig;
use mpsim_proto::{PathManagerKind, SchedulerKind};
use rustc_hash::FxHashMap;

pub(crate) fn loss_model(l: &LossSpec) -> LossModel {
    match *l {
        LossSpec::None => LossModel::None,
        LossSpec::Bernoulli { p } => LossModel::Bernoulli { p_frac: p },
        LossSpec::Gilbert { p_good_bad, p_bad_good, loss_good, loss_bad } => {
            LossModel::Gilbert { p_good_bad, p_bad_good, loss_good, loss_bad, bad: false }
        }
    }
}

pub(crate) fn queue_limit(q: &QueueSpec) -> QueueLimit {
    match *q {
        QueueSpec::Packets(n) => QueueLimit::Packets(n),
        QueueSpec::Bytes(b) => QueueLimit::Bytes(b),
    }
}

fn invalid(msg: String) -> BuildError {
    BuildError::Invalid(msg)
}

/// RNG stream ids: link directions first, then flows, far apart.
const STREAM_LINK_DIR: u64 = 1 << 32;
/// Stream of a flow's random start offset (one draw per flow).
const STREAM_FLOW_START: u64 = 3 << 32;
/// A flow's application draws (request sizes, think times, arrivals).
const STREAM_FLOW_APP: u64 = 4 << 32;

/// The offset of flow `i`'s start, uniform in [0, jitter_ps], from its own
/// stream: htsim's habit of starting flows up to 50 ms apart, made seeded.
fn start_offset_ps(seed: u64, i: usize, jitter_ps: u64) -> u64 {
    if jitter_ps == 0 {
        return 0;
    }
    SimRng::new(seed, STREAM_FLOW_START + i as u64).below(jitter_ps.saturating_add(1))
}

fn dir_params(d: &LinkDirSpec) -> LinkDirParams {
    LinkDirParams {
        bandwidth_bps: d.bandwidth_bps.max(1),
        delay: SimDuration(d.delay_ps),
        queue: queue_limit(&d.queue),
        loss: loss_model(&d.loss),
        jitter: SimDuration(d.jitter_ps),
        up: true,
    }
}

/// The queue discipline of a direction, or why its parameters make no sense.
fn qdisc_config(q: &QdiscSpec) -> Result<QdiscConfig, String> {
    let bad_p = |p: f64| !(0.0..=1.0).contains(&p);
    Ok(match *q {
        QdiscSpec::Droptail => QdiscConfig::DropTail,
        QdiscSpec::Red { min_th, max_th, max_p, ecn, weight, gentle, avpkt_bytes } => {
            let (min_th, max_th, in_bytes) = match (min_th, max_th) {
                (QueueSpec::Packets(a), QueueSpec::Packets(b)) => (a as f64, b as f64, false),
                (QueueSpec::Bytes(a), QueueSpec::Bytes(b)) => (a as f64, b as f64, true),
                _ => return Err("red: min_th and max_th must be in the same unit".into()),
            };
            if min_th >= max_th {
                return Err("red: min_th must be below max_th".into());
            }
            if bad_p(max_p) || max_p == 0.0 || weight <= 0.0 || weight > 1.0 || avpkt_bytes == 0 {
                return Err("red: max_p and weight must be in (0, 1], avpkt positive".into());
            }
            QdiscConfig::Red(RedParams {
                min_th,
                max_th,
                in_bytes,
                max_p_frac: max_p,
                weight_frac: weight,
                ecn,
                gentle,
                avpkt_bytes,
            })
        }
        QdiscSpec::RandomDrop { region, p } => {
            if bad_p(p) {
                return Err("random_drop: p must be in [0, 1]".into());
            }
            QdiscConfig::RandomDrop(RandomDropParams { region: queue_limit(&region), p_frac: p })
        }
        QdiscSpec::Codel { target_ps, interval_ps, ecn } => QdiscConfig::Codel(codel_params(target_ps, interval_ps, ecn)?),
        QdiscSpec::FqCodel { target_ps, interval_ps, ecn, flows, quantum_bytes } => {
            if flows == 0 || flows > 65536 || quantum_bytes == 0 {
                return Err("fq_codel: flows must be in 1..=65536 and quantum positive".into());
            }
            let codel = codel_params(target_ps, interval_ps, ecn)?;
            QdiscConfig::FqCodel(FqCodelParams { flows, quantum_bytes, codel, ..Default::default() })
        }
    })
}

fn codel_params(target_ps: u64, interval_ps: u64, ecn: bool) -> Result<CodelParams, String> {
    if target_ps == 0 || interval_ps == 0 {
        return Err("codel: target and interval must be positive".into());
    }
    Ok(CodelParams { target: SimDuration(target_ps), interval: SimDuration(interval_ps), ecn, ..Default::default() })
}

fn validate_dir(link: &str, which: &str, d: &LinkDirSpec) -> Result<(), BuildError> {
    qdisc_config(&d.qdisc).map_err(|e| invalid(format!("link '{link}' {which}: {e}")))?;
    if let QdiscSpec::RandomDrop { region, .. } = d.qdisc {
        if std::mem::discriminant(&region) != std::mem::discriminant(&d.queue) {
            return Err(invalid(format!("link '{link}' {which}: random_drop region must be in the queue's unit")));
        }
    }
    if matches!(d.qdisc, QdiscSpec::Codel { .. } | QdiscSpec::FqCodel { .. }) && d.jitter_ps > 0 {
        return Err(invalid(format!(
            "link '{link}' {which}: jitter cannot be combined with codel or fq_codel (netem is a qdisc of its own)"
        )));
    }
    if d.bandwidth_bps == 0 {
        return Err(invalid(format!("link '{link}' {which}: bandwidth must be positive")));
    }
    let bad_p = |p: f64| !(0.0..=1.0).contains(&p);
    let lossy = match d.loss {
        LossSpec::None => false,
        LossSpec::Bernoulli { p } => bad_p(p),
        LossSpec::Gilbert { p_good_bad, p_bad_good, loss_good, loss_bad } => {
            [p_good_bad, p_bad_good, loss_good, loss_bad].into_iter().any(bad_p)
        }
    };
    if lossy {
        return Err(invalid(format!("link '{link}' {which}: probabilities must be in [0, 1]")));
    }
    Ok(())
}

struct NodeIndex(FxHashMap<String, NodeId>);

impl NodeIndex {
    fn get(&self, name: &str, what: &str) -> Result<NodeId, BuildError> {
        self.0.get(name).copied().ok_or_else(|| invalid(format!("{what}: unknown node '{name}'")))
    }
}

impl Simulation {
    pub fn new(spec: &Spec) -> Result<Simulation, BuildError> {
        let mut index = NodeIndex(FxHashMap::default());
        let mut nodes = Vec::new();
        for (i, n) in spec.nodes.iter().enumerate() {
            if index.0.insert(n.name.clone(), NodeId(i as u32)).is_some() {
                return Err(invalid(format!("node '{}' is defined twice", n.name)));
            }
            let kind = match n.kind {
                NodeKindSpec::Host => NodeKind::Host,
                NodeKindSpec::Switch => NodeKind::Switch,
                NodeKindSpec::Router => NodeKind::Router,
            };
            nodes.push(Node { name: n.name.clone(), kind, ifaces: Vec::new(), next_port: crate::flows::EPHEMERAL_PORTS.0 });
        }
        if spec.links.len() > mpsim_net::MAX_LINKS {
            return Err(invalid(format!("at most {} links are supported", mpsim_net::MAX_LINKS)));
        }
        let mut links = Vec::new();
        let mut dirs = Vec::new();
        let mut dir_ends = Vec::new();
        let mut traces_bw = Vec::new();
        for (i, l) in spec.links.iter().enumerate() {
            let a = index.get(&l.a, &format!("link '{}'", l.name))?;
            let b = index.get(&l.b, &format!("link '{}'", l.name))?;
            if a == b {
                return Err(invalid(format!("link '{}' connects '{}' to itself", l.name, l.a)));
            }
            if l.mtu_bytes.is_some_and(|m| !(MIN_MTU_BYTES..=MAX_MTU_BYTES).contains(&m)) {
                return Err(invalid(format!("link '{}': mtu must be {MIN_MTU_BYTES} to {MAX_MTU_BYTES} bytes", l.name)));
            }
            for (side, n) in [(0u32, a), (1u32, b)] {
                if nodes[n.index()].kind == NodeKind::Host {
                    nodes[n.index()].ifaces.push((LinkId(i as u32), side));
                }
            }
            for (k, d) in [("a_to_b", &l.a_to_b), ("b_to_a", &l.b_to_a)] {
                validate_dir(&l.name, k, d)?;
                let stream = STREAM_LINK_DIR + 2 * i as u64 + (k == "b_to_a") as u64;
                // Validated above.
                let qdisc = qdisc_config(&d.qdisc).map_err(invalid)?;
                dirs.push(LinkDir::with_qdisc(dir_params(d), SimRng::new(spec.seed, stream), qdisc));
                traces_bw.push(d.bandwidth_trace.clone().filter(|t| !t.is_empty()));
            }
            let held = |d: &LinkDirSpec| matches!(d.qdisc, QdiscSpec::Codel { .. } | QdiscSpec::FqCodel { .. });
            if l.events.iter().any(|e| e.jitter_ps.is_some_and(|j| j > 0)) && (held(&l.a_to_b) || held(&l.b_to_a)) {
                return Err(invalid(format!("link '{}': an event cannot add jitter to a codel or fq_codel queue", l.name)));
            }
            dir_ends.extend(crate::sim::DirEnd::of_link(a, b, l.strip_mptcp, &nodes));
            links.push(Link { name: l.name.clone(), a, b, events: l.events.clone() });
        }
        let topo = Topology { kinds: nodes.iter().map(|n| n.kind).collect(), links: links.iter().map(|l| (l.a, l.b)).collect() };
        let forwarding = crate::forwarding::Forwarding::from_spec(spec);
        let routes = forwarding.routes(&topo, &vec![true; dirs.len()]);
        let names: Vec<&str> = spec.nodes.iter().map(|n| n.name.as_str()).collect();
        let sdn = crate::sdn::Sdn::from_spec(spec, &names, &topo.kinds)?;
        let end = SimTime(spec.duration_ps);
        let mut sim = Simulation {
            now: SimTime::ZERO,
            end,
            queue: EventQueue::new(),
            pool: PacketPool::with_capacity(4096),
            nodes,
            links,
            dirs,
            dir_ends,
            traces_bw,
            topo,
            routes,
            forwarding,
            sdn,
            pause: false,
            endpoints: Vec::new(),
            free_endpoints: Vec::new(),
            endpoints_created: 0,
            demux: FxHashMap::default(),
            tokens: FxHashMap::default(),
            flows: Vec::new(),
            work: Vec::new(),
            sampler: Sampler::new(spec),
            name: spec.name.clone(),
            seed: spec.seed,
            events: 0,
            packet_hops: 0,
            no_route_drops: 0,
            wall_s: 0.0,
            captures: Vec::new(),
            capture_egress: Vec::new(),
            capture_ingress: Vec::new(),
        };
        sim.build_captures(&spec.record.pcap, &index)?;
        for (i, f) in spec.flows.iter().enumerate() {
            let flow = sim.build_flow(i, f, spec, &index)?;
            sim.flows.push(flow);
        }
        sim.build_pins(spec)?;
        sim.build_rules(spec)?;
        sim.schedule_initial_events(spec);
        Ok(sim)
    }

    /// `record.pcap` entries are `node:link`.
    fn build_captures(&mut self, entries: &[String], index: &NodeIndex) -> Result<(), BuildError> {
        let n_dirs = self.dirs.len();
        self.capture_egress = vec![None; n_dirs];
        self.capture_ingress = vec![None; n_dirs];
        for entry in entries {
            let what = format!("record.pcap '{entry}'");
            let (node, link) = entry.split_once(':').ok_or_else(|| invalid(format!("{what}: expected NODE:LINK")))?;
            let node = index.get(node, &what)?;
            let &(l, side) = self.nodes[node.index()]
                .ifaces
                .iter()
                .find(|(l, _)| self.links[l.index()].name == link)
                .ok_or_else(|| invalid(format!("{what}: no host interface on link '{link}'")))?;
            let c = self.captures.len() as u32;
            let writer = crate::pcap::PcapWriter::new(Vec::new()).map_err(|e| invalid(format!("{what}: {e}")))?;
            self.captures.push(crate::sim::Capture { name: entry.clone(), writer });
            let out = (2 * l.0 + side) as usize;
            self.capture_egress[out] = Some(c);
            self.capture_ingress[out ^ 1] = Some(c);
        }
        Ok(())
    }

    fn host_ifaces(&self, node: NodeId, what: &str) -> Result<&[(LinkId, u32)], BuildError> {
        let n = &self.nodes[node.index()];
        if n.kind != NodeKind::Host {
            return Err(invalid(format!("{what}: '{}' is a {:?}, not a host", n.name, n.kind).to_lowercase()));
        }
        if n.ifaces.is_empty() {
            return Err(invalid(format!("{what}: host '{}' has no link", n.name)));
        }
        Ok(&n.ifaces)
    }

    fn build_flow(&self, i: usize, f: &FlowSpec, spec: &Spec, index: &NodeIndex) -> Result<Flow, BuildError> {
        let what = format!("flow '{}'", f.name);
        let client = index.get(&f.client, &what)?;
        let server = index.get(&f.server, &what)?;
        let client_ifaces = self.host_ifaces(client, &what)?.to_vec();
        let (server_link, server_side) = self.host_ifaces(server, &what)?[0];
        let client_links = match &f.client_interfaces {
            None => client_ifaces.clone(),
            Some(names) => names
                .iter()
                .map(|n| {
                    client_ifaces
                        .iter()
                        .copied()
                        .find(|(l, _)| self.links[l.index()].name == *n)
                        .ok_or_else(|| invalid(format!("{what}: client '{}' has no interface '{n}'", f.client)))
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        if client_links.is_empty() {
            return Err(invalid(format!("{what}: no client interface to use")));
        }
        let server_addr = iface_addr(server_link, server_side);
        if !client_links.iter().any(|&(l, side)| self.reaches(l, side, server, server_addr)) {
            return Err(BuildError::NoRoute(format!(
                "{what}: no path from client '{}' to server '{}' through switches and routers",
                f.client, f.server
            )));
        }
        let cc_mode = match f.cc_mode {
            CcModeSpec::Reference => CcMode::Reference,
            CcModeSpec::Linux => CcMode::Linux,
        };
        if matches!(f.transport, TransportSpec::Tcp | TransportSpec::Mptcp) {
            let transport = crate::vocabulary::transport_name(f.transport);
            let ccs = crate::vocabulary::transport(transport).map_or(&[][..], |t| t.ccs);
            if !ccs.contains(&f.cc.as_str()) {
                return Err(invalid(format!(
                    "{what}: congestion control '{}' is not available for {transport} (use one of {ccs:?})",
                    f.cc
                )));
            }
            Controller::new(&f.cc_spec(), cc_mode).map_err(|e| invalid(format!("{what}: {e}")))?;
        }
        let mptcp = if f.transport == TransportSpec::Mptcp { Some(self.mptcp_flow(f, &client_links, &what)?) } else { None };
        if f.mss_bytes == Some(0) {
            return Err(invalid(format!("{what}: mss must be positive")));
        }
        let defaults = TcpConfig::for_mode(cc_mode);
        let tcp = TcpConfig {
            max_payload_bytes: f.mss_bytes.unwrap_or(u32::MAX),
            mtu_bytes: flow_mtu_bytes(spec, &client_links, self.host_ifaces(server, &what)?),
            // The contract's header bytes include the timestamps option;
            // subflows add it where it is negotiated.
            header_bytes: spec.header_bytes.saturating_sub(TIMESTAMP_OPTION_BYTES),
            sack: f.sack,
            delayed_ack: f.delayed_ack,
            delayed_ack_timeout: SimDuration(f.delayed_ack_ps),
            min_rto: f.min_rto_ps.map_or(defaults.min_rto, SimDuration),
            time_wait: f.time_wait_ps.map_or(defaults.time_wait, SimDuration),
            timestamps: f.timestamps.unwrap_or(defaults.timestamps),
            rack: f.rack.unwrap_or(defaults.rack),
            initial_cwnd_pkts: f.initial_cwnd_pkts.max(1),
            initial_ssthresh_pkts: f.initial_ssthresh_pkts.map(|p| p.max(1)),
            rcvbuf_bytes: f.rcvbuf_bytes,
            rcvbuf_auto: f.rcvbuf_auto,
            ecn: f.ecn,
            ..defaults
        }
        .fitted();
        if f.rcvbuf_bytes < tcp.mss_bytes as u64 {
            return Err(invalid(format!("{what}: rcvbuf must hold at least one segment")));
        }
        let sctp = if f.transport == TransportSpec::Cmt { Some(sctp_config(f, tcp.mtu_bytes, &what)?) } else { None };
        let (app, receiver) = make_app(&f.app, &SimRng::new(spec.seed, STREAM_FLOW_APP + i as u64));
        // The dynamic range: no Wireshark dissector claims these ports.
        let port = (49152 + i % 16384) as u16;
        let start_ps = f.start_ps.saturating_add(start_offset_ps(spec.seed, i, f.start_jitter_ps));
        Ok(Flow {
            spec: FlowSpec { start_ps, ..f.clone() },
            app,
            client,
            mptcp,
            sctp,
            fallback: false,
            server_addr,
            server_port: port,
            server_link,
            client_links,
            active: 0,
            conns: Default::default(),
            tcp,
            receiver,
            delivered_bytes: 0,
            udp_sent_bytes: 0,
            completion: None,
            requests: Vec::new(),
            udp_port: port,
            released_paths: Default::default(),
        })
    }

    /// Whether a packet sent from the host end of client link `l` arrives
    /// at `server`: directly, or through forwarding nodes that route it.
    fn reaches(&self, l: LinkId, side: u32, server: NodeId, server_addr: mpsim_core::Addr) -> bool {
        let far = self.topo.end(l, 1 - side);
        far == server || (self.nodes[far.index()].kind != NodeKind::Host && self.routes.next_dir(far, server_addr).is_some())
    }

    fn mptcp_flow(&self, f: &FlowSpec, client_links: &[(LinkId, u32)], what: &str) -> Result<MptcpFlow, BuildError> {
        let scheduler = SchedulerKind::parse(f.scheduler.as_deref())
            .ok_or_else(|| invalid(format!("{what}: unknown scheduler '{}'", f.scheduler.as_deref().unwrap_or_default())))?;
        let path_manager = PathManagerKind::parse(f.path_manager.as_deref(), f.subflows, f.max_subflows, f.max_add_addr_accepted)
            .ok_or_else(|| {
                invalid(format!("{what}: unknown path manager '{}'", f.path_manager.as_deref().unwrap_or_default()))
            })?;
        let mut backup_links = Vec::new();
        for name in f.backup_interfaces.iter().flatten() {
            let l = client_links
                .iter()
                .find(|(l, _)| self.links[l.index()].name == *name)
                .ok_or_else(|| invalid(format!("{what}: backup interface '{name}' is not one of the client's interfaces")))?;
            backup_links.push(l.0);
        }
        let add_addr_timeout = f.add_addr_timeout_ps.map_or(mpsim_proto::DEFAULT_ADD_ADDR_TIMEOUT, SimDuration);
        if add_addr_timeout == SimDuration::ZERO {
            return Err(invalid(format!("{what}: add_addr_timeout must be positive")));
        }
        let dss_checksum = f.dss_checksum.unwrap_or(false);
        let by_default = mpsim_proto::MptcpConfig::receive_buffer_mechanisms_by_default(scheduler);
        let opportunistic_retransmission = f.opportunistic_retransmission.unwrap_or(by_default);
        let penalisation = f.penalisation.unwrap_or(by_default);
        Ok(MptcpFlow {
            scheduler,
            path_manager,
            backup_links,
            add_addr_timeout,
            dss_checksum,
            opportunistic_retransmission,
            penalisation,
            msk_sndbuf_auto: f.msk_sndbuf_auto,
        })
    }

    fn schedule_initial_events(&mut self, spec: &Spec) {
        for (i, f) in spec.flows.iter().enumerate() {
            self.queue.push(self.flows[i].start(), Ev::FlowStart { flow: i as u32 });
            if let Some(stop) = f.stop_ps {
                self.queue.push(SimTime(stop), Ev::FlowStop { flow: i as u32 });
            }
        }
        for (l, link) in self.links.iter().enumerate() {
            for (k, ev) in link.events.iter().enumerate() {
                self.queue.push(SimTime(ev.at_ps), Ev::LinkEvent { link: l as u32, index: k as u32 });
            }
        }
        for (d, trace) in self.traces_bw.iter().enumerate() {
            if let Some(t) = trace {
                self.queue.push(SimTime(t[0].0), Ev::TraceStep { dir: d as u32, index: 0 });
            }
        }
        let interval = self.sampler.interval;
        if interval.as_ps() > 0 {
            self.queue.push(SimTime::ZERO + interval, Ev::Sample);
        }
    }
}

/// The association settings of a cmt flow: chunks sized for the MTU (and
/// `mss`, if smaller), the receive buffer `rbuf` (else `rcvbuf`).
fn sctp_config(f: &FlowSpec, mtu_bytes: u32, what: &str) -> Result<SctpConfig, BuildError> {
    if sends_datagrams(&f.app) {
        return Err(BuildError::Unsupported(format!(
            "{what}: app 'cbr' sends datagrams; cmt carries the byte-stream apps only \
             (download, upload, http, video, and onoff of download or upload)"
        )));
    }
    let variant = mpsim_proto::sctp::Variant::parse(f.variant.as_deref())
        .ok_or_else(|| invalid(format!("{what}: unknown cmt variant '{}'", f.variant.as_deref().unwrap_or_default())))?;
    let rtx_policy = mpsim_proto::sctp::variants::rtx_policy::RtxPolicy::parse(f.rtx_policy.as_deref())
        .ok_or_else(|| invalid(format!("{what}: unknown cmt rtx_policy '{}'", f.rtx_policy.as_deref().unwrap_or_default())))?;
    let smos_trunk = match f.smos_schedule.as_deref() {
        None => false,
        Some(name) => crate::vocabulary::SMOS_SCHEDULES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, trunk)| trunk)
            .ok_or_else(|| invalid(format!("{what}: unknown smos_schedule '{name}'")))?,
    };
    // IPv4 20, SCTP common header 12, DATA chunk header 16 (RFC 9260 section 3).
    let fit_bytes = mtu_bytes.saturating_sub(20 + 12 + 16);
    let max_payload_bytes = f.mss_bytes.map_or(fit_bytes, |m| m.min(fit_bytes)).max(1);
    let rbuf_bytes = f.rbuf_bytes.unwrap_or(f.rcvbuf_bytes);
    if rbuf_bytes < max_payload_bytes as u64 {
        return Err(invalid(format!("{what}: rbuf must hold at least one chunk")));
    }
    Ok(SctpConfig {
        max_payload_bytes,
        // Ethernet 14 and IPv4 20, as the other transports count them.
        lower_header_bytes: 14 + 20,
        rbuf_bytes,
        cmt: true,
        variant,
        rtx_policy,
        smos_trunk,
        ..SctpConfig::default()
    })
}

/// The application sends UDP datagrams (cbr, alone or switched on and
/// off), which no association carries.
fn sends_datagrams(app: &AppSpec) -> bool {
    match app {
        AppSpec::Cbr { .. } => true,
        AppSpec::Onoff { inner, .. } => sends_datagrams(inner),
        _ => false,
    }
}

/// The MTU a flow's segments are sized for: the smallest of the interfaces
/// it may use at the client and those of the server. As in Linux, each end
/// sizes its segments for its own interface and the MSS the other end
/// announced (`tcp_sync_mss`, `tcp_mss_clamp`); one size serves every
/// subflow of an MPTCP connection, whose mappings are cut before the
/// subflow is chosen.
fn flow_mtu_bytes(spec: &Spec, client_links: &[(LinkId, u32)], server_links: &[(LinkId, u32)]) -> u32 {
    client_links
        .iter()
        .chain(server_links)
        .map(|(l, _)| spec.links[l.index()].mtu_bytes.unwrap_or(DEFAULT_MTU_BYTES))
        .min()
        .unwrap_or(DEFAULT_MTU_BYTES)
}
