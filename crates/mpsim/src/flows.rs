//! Flows: each runs one application and owns the connections it opens.
//! Application commands are carried out here; endpoint events become
//! application inputs.

use crate::endpoint::{EpKind, RecoveryCounters};
use crate::report::PathRows;
use crate::sim::{demux_key, Ev, Simulation};
use crate::spec::{AppSpec, FlowSpec, SizeDistSpec, ThinkSpec, TransportSpec};
use mpsim_core::{Addr, LinkId, NodeId, Packet, Proto, SimDuration, SimRng, SimTime};
use mpsim_proto::apps::{App, AppCmd, AppInput, Bulk, Cbr, Http, OnOff, Side, Video, UNLIMITED_BYTES};
use mpsim_proto::sctp::{Association, PathAddrs, SctpConfig};
use mpsim_proto::workload::{PoissonRequests, SizeDist, Think};
use mpsim_proto::{AppEvent, LocalAddr, MptcpConfig, MptcpConnection, PathManagerKind, SchedulerKind, TcpConfig, TcpConnection};

/// Ports reserved per MPTCP connection: the first for the initial
/// subflow, the rest for the subflows it adds.
const MPTCP_PORTS_PER_CONNECTION: u16 = 16;

/// Linux's `MPTCP_TOKEN_MAX_RETRIES`: keys drawn for a free token.
const MPTCP_TOKEN_MAX_RETRIES: u32 = 4;

/// Linux's default `net.ipv4.ip_local_port_range`.
pub(crate) const EPHEMERAL_PORTS: (u16, u16) = (32768, 60999);

/// Wire bytes of a UDP datagram beyond its payload (Ethernet 14 + IPv4 20 + UDP 8).
pub const UDP_HEADER_BYTES: u32 = 42;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Demux {
    Ep(u32),
    /// A connection the client opened; the server endpoint is made on its SYN.
    Pending {
        flow: u32,
        conn: u32,
    },
    Udp {
        flow: u32,
    },
}

pub(crate) struct Endpoint {
    pub kind: EpKind,
    pub host: NodeId,
    pub flow: u32,
    pub conn: u32,
    pub side: Side,
    /// Counts the wakeups armed in this slot; a wakeup of an earlier
    /// generation (or of the slot's previous endpoint) is stale.
    pub generation: u32,
    pub scheduled: Option<SimTime>,
    /// Client interface link the connection uses.
    pub client_link: LinkId,
    /// Final counters, kept when the connection is aborted.
    pub counters: RecoveryCounters,
    pub delivered_bytes: u64,
    /// Endpoints made before this one in the run: orders the summary's rows
    /// as if no slot were ever reused.
    pub created: u64,
    /// The slot holds no endpoint: the one it held was released, its
    /// figures added to its flow's `released_paths`, and the slot waits
    /// in `free_endpoints` for the next endpoint.
    pub released: bool,
}

/// MPTCP settings of a flow.
#[derive(Clone, Debug)]
pub(crate) struct MptcpFlow {
    pub scheduler: SchedulerKind,
    pub path_manager: PathManagerKind,
    /// Links whose client interface is a backup path.
    pub backup_links: Vec<LinkId>,
    pub add_addr_timeout: SimDuration,
    pub dss_checksum: bool,
    pub opportunistic_retransmission: bool,
    pub penalisation: bool,
    /// Linux's MPTCP socket send buffer (`MptcpConfig::msk_sndbuf_auto`).
    pub msk_sndbuf_auto: bool,
}

/// One connection of a flow: the slots of its two endpoints while they
/// exist (the server's from its SYN on, neither after release).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnSlot {
    pub client_ep: Option<u32>,
    pub server_ep: Option<u32>,
}

pub(crate) struct Flow {
    pub spec: FlowSpec,
    pub app: Box<dyn App>,
    pub client: NodeId,
    /// MPTCP settings when the transport is mptcp.
    pub mptcp: Option<MptcpFlow>,
    /// Association settings when the transport is cmt.
    pub sctp: Option<SctpConfig>,
    pub server_addr: Addr,
    pub server_port: u16,
    pub server_link: LinkId,
    /// Client interfaces the flow may use, in preference order.
    pub client_links: Vec<(LinkId, u32)>,
    pub active: usize,
    /// The connections that still hold an endpoint, by number (ordered:
    /// a handover goes through them in order).
    pub conns: std::collections::BTreeMap<u32, ConnSlot>,
    pub tcp: TcpConfig,
    /// The side whose application receives the flow's payload.
    pub receiver: Side,
    pub delivered_bytes: u64,
    pub udp_sent_bytes: u64,
    pub completion: Option<SimTime>,
    /// An MPTCP connection of this flow fell back to TCP.
    pub fallback: bool,
    pub requests: Vec<(u32, u64, SimTime, SimTime)>,
    pub udp_port: u16,
    /// The summary rows of the flow's released endpoints, added up.
    pub released_paths: PathRows,
}

impl Flow {
    pub fn on_datagram(&mut self, bytes: u64, _now: SimTime) {
        self.delivered_bytes += bytes;
    }

    pub fn start(&self) -> SimTime {
        SimTime(self.spec.start_ps)
    }
}

/// Builds the application of a flow and the side that receives its data;
/// `rng` is the flow's own stream for the application's draws.
pub(crate) fn make_app(app: &AppSpec, rng: &SimRng) -> (Box<dyn App>, Side) {
    match app {
        AppSpec::Download { size_bytes } => (Box::new(Bulk::download(*size_bytes)), Side::Client),
        AppSpec::Upload { size_bytes } => (Box::new(Bulk::upload(*size_bytes)), Side::Server),
        AppSpec::Http { .. } => (make_http(app, rng), Side::Client),
        AppSpec::Cbr { rate_bps, packet_bytes } => (Box::new(Cbr::new(*rate_bps, *packet_bytes)), Side::Server),
        AppSpec::Video { bitrate_bps, chunk_ps } => (Box::new(Video::new(*bitrate_bps, SimDuration(*chunk_ps))), Side::Client),
        AppSpec::Onoff { on_ps, off_ps, inner } => {
            let (inner_app, receiver) = make_app(inner, rng);
            let bulk = matches!(**inner, AppSpec::Download { .. } | AppSpec::Upload { .. });
            let sender = if receiver == Side::Client { Side::Server } else { Side::Client };
            (Box::new(OnOff::new(inner_app, SimDuration(*on_ps), SimDuration(*off_ps), bulk, sender)), receiver)
        }
    }
}

fn make_http(app: &AppSpec, rng: &SimRng) -> Box<dyn App> {
    let AppSpec::Http {
        sizes_bytes,
        repeat,
        gap_ps,
        new_connection,
        request_bytes,
        size_distribution,
        max_size_bytes,
        requests,
        think,
        arrival_rate_per_s,
    } = app
    else {
        unreachable!("an http app")
    };
    let sizes = match size_distribution {
        None => SizeDist::List(if sizes_bytes.is_empty() { vec![1] } else { sizes_bytes.clone() }),
        Some(SizeDistSpec::Uniform { min_bytes, max_bytes }) => {
            SizeDist::Uniform { min_bytes: *min_bytes, max_bytes: *max_bytes }
        }
        Some(SizeDistSpec::Exponential { mean_bytes }) => SizeDist::Exponential { mean_bytes: *mean_bytes },
        Some(SizeDistSpec::Pareto { scale_bytes, shape }) => SizeDist::Pareto { scale_bytes: *scale_bytes, shape: *shape },
        Some(SizeDistSpec::Empirical { points }) => SizeDist::Empirical { points: points.clone() },
    };
    // A list runs `repeat` times through; a distribution `requests` times, or without end.
    let total = match (size_distribution, requests) {
        (_, Some(n)) => Some(*n),
        (None, None) if arrival_rate_per_s.is_none() => Some(sizes_bytes.len().max(1) as u32 * (*repeat).max(1)),
        _ => None,
    };
    if let Some(rate) = arrival_rate_per_s {
        return Box::new(PoissonRequests::new(sizes, *max_size_bytes, *rate, total, *request_bytes, rng.clone()));
    }
    let gap = SimDuration(*gap_ps);
    let think = match think {
        ThinkSpec::Fixed => Think::Fixed(gap),
        ThinkSpec::Exponential => Think::Exponential { mean: gap },
    };
    let total = total.unwrap_or(u32::MAX);
    Box::new(Http::closed_loop(sizes, *max_size_bytes, total, think, *new_connection, *request_bytes, rng.clone()))
}

impl Simulation {
    pub(crate) fn on_flow_start(&mut self, flow: u32) {
        self.app_input(flow, AppInput::Start);
    }

    pub(crate) fn on_flow_stop(&mut self, flow: u32) {
        self.app_input(flow, AppInput::Stop);
    }

    pub(crate) fn on_app_timer(&mut self, flow: u32, tag: u32) {
        self.app_input(flow, AppInput::Timer { tag });
    }

    fn app_input(&mut self, flow: u32, input: AppInput) {
        let mut cmds = Vec::new();
        self.flows[flow as usize].app.on_input(self.now, input, &mut cmds);
        for c in cmds {
            self.apply(flow, c);
        }
        self.drain_work();
    }

    pub(crate) fn endpoint_event(&mut self, ep: u32, ev: AppEvent) {
        let e = &self.endpoints[ep as usize];
        let (flow, conn, side) = (e.flow, e.conn, e.side);
        let input = match ev {
            AppEvent::Connected => AppInput::Connected { conn, side },
            AppEvent::Delivered { bytes } => {
                self.endpoints[ep as usize].delivered_bytes += bytes;
                let f = &mut self.flows[flow as usize];
                if side == f.receiver {
                    f.delivered_bytes += bytes;
                }
                AppInput::Delivered { conn, side, bytes }
            }
            AppEvent::PeerClosed => AppInput::PeerClosed { conn, side },
            AppEvent::Failed => AppInput::Failed { conn },
            AppEvent::SendComplete => return,
        };
        let mut cmds = Vec::new();
        self.flows[flow as usize].app.on_input(self.now, input, &mut cmds);
        for c in cmds {
            self.apply(flow, c);
        }
    }

    fn endpoint_of(&self, flow: u32, conn: u32, side: Side) -> Option<u32> {
        let slot = self.flows[flow as usize].conns.get(&conn)?;
        match side {
            Side::Client => slot.client_ep,
            Side::Server => slot.server_ep,
        }
    }

    fn with_conn(&mut self, flow: u32, conn: u32, side: Side, f: impl FnOnce(&mut EpKind)) {
        if let Some(ep) = self.endpoint_of(flow, conn, side) {
            f(&mut self.endpoints[ep as usize].kind);
            self.work.push(ep);
        }
    }

    fn apply(&mut self, flow: u32, cmd: AppCmd) {
        match cmd {
            AppCmd::Connect { conn } => self.connect(flow, conn),
            AppCmd::Write { conn, side, bytes } => {
                self.with_conn(flow, conn, side, |c| c.write((bytes != UNLIMITED_BYTES).then_some(bytes)))
            }
            AppCmd::Pause { conn, side } => self.with_conn(flow, conn, side, |c| c.pause()),
            AppCmd::Close { conn, side } => self.with_conn(flow, conn, side, |c| c.close()),
            AppCmd::Datagram { bytes } => self.send_datagram(flow, bytes),
            AppCmd::Timer { at, tag } => self.queue.push(at.max(self.now), Ev::AppTimer { flow, tag }),
            AppCmd::RequestDone { index, size_bytes, start, end } => {
                self.flows[flow as usize].requests.push((index, size_bytes, start, end));
            }
            AppCmd::Finished => {
                let f = &mut self.flows[flow as usize];
                f.completion.get_or_insert(self.now);
            }
        }
    }

    /// `n` consecutive ports of `host`'s ephemeral range whose 4-tuples
    /// from `locals` to `remotes` (port `remote_port`) no live endpoint
    /// holds; None if there are none, when Linux's connect() fails with
    /// EADDRNOTAVAIL. Linux searches from a hashed offset in steps of two
    /// (`__inet_hash_connect`, net/ipv4/inet_hashtables.c); each host here
    /// goes through its range in order, which is as good at skipping tuples
    /// in use and keeps the ports readable.
    fn alloc_ports(&mut self, host: NodeId, n: u16, locals: &[Addr], remotes: &[Addr], remote_port: u16) -> Option<u16> {
        let (lo, hi) = EPHEMERAL_PORTS;
        for _ in 0..(hi - lo + 1) / n {
            let next = &mut self.nodes[host.index()].next_port;
            let p = if *next > hi - (n - 1) { lo } else { *next };
            *next = p + n;
            let free =
                (p..p + n).all(|port| locals.iter().all(|&l| remotes.iter().all(|&r| self.tuple_free(l, port, r, remote_port))));
            if free {
                return Some(p);
            }
        }
        None
    }

    /// No live endpoint holds the 4-tuple.
    fn tuple_free(&self, local: Addr, local_port: u16, remote: Addr, remote_port: u16) -> bool {
        match self.demux.get(&demux_key(local, local_port, remote, remote_port)) {
            Some(Demux::Ep(ep)) => !self.endpoints[*ep as usize].kind.is_live(),
            _ => true,
        }
    }

    fn client_addr(&self, flow: u32) -> (Addr, LinkId) {
        let f = &self.flows[flow as usize];
        let (link, side) = f.client_links[f.active];
        (mpsim_net::iface_addr(link, side), link)
    }

    pub(crate) fn connect(&mut self, flow: u32, conn: u32) {
        if self.flows[flow as usize].sctp.is_some() {
            return self.connect_sctp(flow, conn);
        }
        let (addr, link) = self.client_addr(flow);
        let f = &self.flows[flow as usize];
        let (server_addr, server_port, client) = (f.server_addr, f.server_port, f.client);
        let port = if f.mptcp.is_some() {
            // Its subflows may leave from any of the client's addresses to
            // any of the server's.
            let locals: Vec<Addr> = self.client_local_addrs(flow).iter().map(|&(l, s)| mpsim_net::iface_addr(l, s)).collect();
            let server = mpsim_net::iface_of_addr(server_addr).map(|(l, s)| self.topo.end(l, s));
            let remotes: Vec<Addr> = server.map_or(vec![server_addr], |h| {
                self.nodes[h.index()].ifaces.iter().map(|&(l, s)| mpsim_net::iface_addr(l, s)).collect()
            });
            self.alloc_ports(client, MPTCP_PORTS_PER_CONNECTION, &locals, &remotes, server_port)
        } else {
            self.alloc_ports(client, 1, &[addr], &[server_addr], server_port)
        };
        let Some(port) = port else {
            // No free port: the application's connect fails.
            let mut cmds = Vec::new();
            self.flows[flow as usize].app.on_input(self.now, AppInput::Failed { conn }, &mut cmds);
            cmds.into_iter().for_each(|c| self.apply(flow, c));
            return;
        };
        let f = &self.flows[flow as usize];
        let kind = match &f.mptcp {
            None => match TcpConnection::connect(f.tcp, &f.spec.cc_spec(), (addr, port), (server_addr, server_port)) {
                Ok(mut c) => {
                    c.set_sndbuf(f.spec.sndbuf_bytes);
                    EpKind::Tcp(Box::new(c))
                }
                Err(_) => return, // the controller name was checked when the world was built
            },
            Some(m) => {
                let cfg = self.mptcp_config(flow, conn, Side::Client, m, self.client_local_addrs(flow), port);
                match MptcpConnection::connect(cfg, (server_addr, server_port)) {
                    Ok(c) => EpKind::Mptcp(Box::new(c)),
                    Err(_) => return,
                }
            }
        };
        let ep = self.push_endpoint(kind, client, flow, conn, Side::Client, link);
        self.demux.insert(demux_key(addr, port, server_addr, server_port), Demux::Ep(ep));
        self.demux.insert(demux_key(server_addr, server_port, addr, port), Demux::Pending { flow, conn });
        self.flows[flow as usize].conns.insert(conn, ConnSlot { client_ep: Some(ep), server_ep: None });
        self.work.push(ep);
    }

    /// The paths of a cmt flow's association, client side. SCTP names a
    /// path by its destination address and routing picks the way (RFC 4960
    /// §6.4), so each usable client interface, in order, is paired with
    /// the server address whose packets from it arrive on that address's
    /// own link (the path that ends there), the nearest such first, each
    /// server address once; path 0, the primary, is the first pair.
    fn sctp_paths(&self, flow: u32) -> Vec<PathAddrs> {
        let f = &self.flows[flow as usize];
        let Some((sl, ss)) = mpsim_net::iface_of_addr(f.server_addr) else { return Vec::new() };
        let server = self.topo.end(sl, ss);
        let remotes = &self.nodes[server.index()].ifaces;
        let mut used = vec![false; remotes.len()];
        let mut paths = Vec::new();
        for (l, s) in self.client_local_addrs(flow) {
            let candidates = remotes.iter().enumerate().filter(|&(j, _)| !used[j]);
            let best = candidates
                .filter_map(|(j, &(rl, rs))| {
                    let remote = mpsim_net::iface_addr(rl, rs);
                    let (hops, last) = self.route_from_iface(l, s, remote, server)?;
                    Some((last != rl, hops, j, remote))
                })
                .min();
            if let Some((_, _, j, remote)) = best {
                used[j] = true;
                paths.push(PathAddrs { local: mpsim_net::iface_addr(l, s), remote });
            }
        }
        paths
    }

    /// Opens a cmt flow's association: the INIT goes on path 0; the
    /// server's endpoint is made when it arrives.
    fn connect_sctp(&mut self, flow: u32, conn: u32) {
        let paths = self.sctp_paths(flow);
        let f = &self.flows[flow as usize];
        let (server_port, client, cfg) = (f.server_port, f.client, f.sctp.unwrap_or_default());
        let Some(&primary) = paths.first() else { return };
        let locals: Vec<Addr> = paths.iter().map(|p| p.local).collect();
        let remotes: Vec<Addr> = paths.iter().map(|p| p.remote).collect();
        let Some(port) = self.alloc_ports(client, 1, &locals, &remotes, server_port) else {
            let mut cmds = Vec::new();
            self.flows[flow as usize].app.on_input(self.now, AppInput::Failed { conn }, &mut cmds);
            cmds.into_iter().for_each(|c| self.apply(flow, c));
            return;
        };
        let link = mpsim_net::iface_of_addr(primary.local).map_or(self.client_addr(flow).1, |(l, _)| l);
        let server_keys: Vec<u128> = paths.iter().map(|p| demux_key(p.remote, server_port, p.local, port)).collect();
        let kind = EpKind::Cmt(Box::new(Association::connect(cfg, paths, port, server_port)));
        let ep = self.push_endpoint(kind, client, flow, conn, Side::Client, link);
        // The INIT goes on the primary path, and its retransmissions on the
        // others in turn: the server's endpoint is made on whichever path
        // one arrives.
        for key in server_keys {
            self.demux.insert(key, Demux::Pending { flow, conn });
        }
        self.flows[flow as usize].conns.insert(conn, ConnSlot { client_ep: Some(ep), server_ep: None });
        self.work.push(ep);
    }

    /// The server's association, made by the client's INIT: the client's
    /// paths, mirrored.
    fn accept_sctp(&self, flow: u32, conn: u32, init: &Packet) -> Option<EpKind> {
        let f = &self.flows[flow as usize];
        let client_ep = f.conns.get(&conn)?.client_ep?;
        let paths: Vec<PathAddrs> = self.endpoints[client_ep as usize]
            .kind
            .tuples()
            .iter()
            .map(|&(local, _, remote, _)| PathAddrs { local: remote, remote: local })
            .collect();
        let assoc = Association::accept(f.sctp.unwrap_or_default(), paths, init)?;
        Some(EpKind::Cmt(Box::new(assoc)))
    }

    /// Puts a new endpoint in the slot released last, or in a new slot.
    /// (Linux frees a socket and allocates the next from its slab alike;
    /// here the order of slots only has to be deterministic.)
    fn push_endpoint(&mut self, kind: EpKind, host: NodeId, flow: u32, conn: u32, side: Side, client_link: LinkId) -> u32 {
        let created = self.endpoints_created;
        self.endpoints_created += 1;
        let mut e = Endpoint {
            kind,
            host,
            flow,
            conn,
            side,
            generation: 0,
            scheduled: None,
            client_link,
            counters: RecoveryCounters::default(),
            delivered_bytes: 0,
            created,
            released: false,
        };
        match self.free_endpoints.pop() {
            Some(ep) => {
                // The slot's generation goes on: wakeups still queued for
                // the endpoint it held stay stale.
                e.generation = self.endpoints[ep as usize].generation;
                self.endpoints[ep as usize] = e;
                self.sampler.forget_endpoint(ep as usize);
                ep
            }
            None => {
                self.endpoints.push(e);
                (self.endpoints.len() - 1) as u32
            }
        }
    }

    /// The client's usable interfaces; the first one up is the initial address (id 0).
    fn client_local_addrs(&self, flow: u32) -> Vec<(LinkId, u32)> {
        let f = &self.flows[flow as usize];
        let mut links = f.client_links.clone();
        links.rotate_left(f.active);
        links
    }

    fn mptcp_config(
        &self,
        flow: u32,
        conn: u32,
        side: Side,
        m: &MptcpFlow,
        ifaces: Vec<(LinkId, u32)>,
        port_base: u16,
    ) -> MptcpConfig {
        let f = &self.flows[flow as usize];
        let local_addrs = ifaces
            .iter()
            .enumerate()
            .map(|(i, &(l, s))| LocalAddr {
                addr: mpsim_net::iface_addr(l, s),
                id: i as u8,
                backup: m.backup_links.contains(&l),
                up: self.dirs[(2 * l.0 + s) as usize].params().up,
            })
            .collect();
        let side_bit = (side == Side::Server) as u64;
        let peer = match side {
            Side::Client => mpsim_net::iface_of_addr(f.server_addr).map(|(l, s)| self.topo.end(l, s)),
            Side::Server => Some(f.client),
        };
        let route_sources = peer.map_or(vec![], |p| self.route_sources(&ifaces, p));
        MptcpConfig {
            tcp: f.tcp,
            cc: f.spec.cc_spec(),
            scheduler: m.scheduler,
            path_manager: m.path_manager,
            local_addrs,
            route_sources,
            port_base,
            seed: self.seed ^ ((flow as u64) << 40) ^ ((conn as u64) << 1) ^ side_bit,
            add_addr_timeout: m.add_addr_timeout,
            dss_checksum: m.dss_checksum,
            opportunistic_retransmission: m.opportunistic_retransmission,
            penalisation: m.penalisation,
            sndbuf_bytes: f.spec.sndbuf_bytes,
            msk_sndbuf_auto: m.msk_sndbuf_auto,
        }
    }

    /// For every interface address of host `peer`, the one of `ifaces`
    /// (in preference order) with the shortest route to it: the source a
    /// route lookup picks. Addresses no interface reaches are left out.
    fn route_sources(&self, ifaces: &[(LinkId, u32)], peer: NodeId) -> Vec<(Addr, Addr)> {
        let mut out = Vec::new();
        for &(pl, ps) in &self.nodes[peer.index()].ifaces {
            let dst = mpsim_net::iface_addr(pl, ps);
            let best = ifaces
                .iter()
                .filter_map(|&(l, s)| self.hops_from_iface(l, s, dst, peer).map(|h| (h, mpsim_net::iface_addr(l, s))))
                .min_by_key(|&(h, _)| h);
            if let Some((_, src)) = best {
                out.push((dst, src));
            }
        }
        out
    }

    /// Links a packet sent on interface (`link`, `side`) crosses to reach
    /// `dst` on host `owner`, following the forwarding tables; None if it
    /// never arrives.
    fn hops_from_iface(&self, link: LinkId, side: u32, dst: Addr, owner: NodeId) -> Option<usize> {
        self.route_from_iface(link, side, dst, owner).map(|(hops, _)| hops)
    }

    /// The links a packet from interface (`link`, `side`) to `dst` crosses
    /// before it reaches `owner`, and the last of them; None if it does not.
    fn route_from_iface(&self, link: LinkId, side: u32, dst: Addr, owner: NodeId) -> Option<(usize, LinkId)> {
        let (mut node, mut last) = (self.topo.end(link, 1 - side), link);
        for hops in 1..=self.links.len() {
            if node == owner {
                return Some((hops, last));
            }
            if self.nodes[node.index()].kind == mpsim_net::NodeKind::Host {
                return None; // hosts do not forward
            }
            let dir = self.routes.next_dir(node, dst)?;
            last = LinkId(dir / 2);
            node = self.topo.end(last, 1 - dir % 2);
        }
        None
    }

    /// The server side of `conn` is created by the client's SYN.
    pub(crate) fn accept(&mut self, flow: u32, conn: u32, host: NodeId, syn: &Packet, key: u128) {
        let f = &self.flows[flow as usize];
        if f.sctp.is_some() {
            let Some(kind) = self.accept_sctp(flow, conn, syn) else { return };
            return self.add_server_endpoint(flow, conn, host, kind, key);
        }
        if !syn.flags.has(mpsim_core::TcpFlags::SYN) || syn.flags.has(mpsim_core::TcpFlags::ACK) {
            return;
        }
        let kind = match &f.mptcp {
            None => match TcpConnection::accept(f.tcp, &f.spec.cc_spec(), syn) {
                Ok(mut c) => {
                    c.set_sndbuf(f.spec.sndbuf_bytes);
                    EpKind::Tcp(Box::new(c))
                }
                Err(_) => return,
            },
            Some(m) => {
                // The address the SYN came to is the initial one (id 0).
                let mut ifaces = self.nodes[host.index()].ifaces.clone();
                if let Some(i) = ifaces.iter().position(|&(l, s)| mpsim_net::iface_addr(l, s) == syn.dst) {
                    ifaces[..=i].rotate_right(1);
                }
                let cfg = self.mptcp_config(flow, conn, Side::Server, m, ifaces, syn.dport);
                match MptcpConnection::accept(cfg, syn) {
                    Ok(mut c) => {
                        self.unique_token(host, &mut c);
                        EpKind::Mptcp(Box::new(c))
                    }
                    Err(_) => return,
                }
            }
        };
        self.add_server_endpoint(flow, conn, host, kind, key);
    }

    /// Registers the server endpoint `kind` of `conn`, made by the packet
    /// that arrived under demultiplexing `key`.
    fn add_server_endpoint(&mut self, flow: u32, conn: u32, host: NodeId, kind: EpKind, key: u128) {
        // A SYN of a connection whose client is gone opens nothing.
        let f = &self.flows[flow as usize];
        let Some(client_ep) = f.conns.get(&conn).and_then(|s| s.client_ep) else { return };
        let client_link = self.endpoints[client_ep as usize].client_link;
        let ep = self.push_endpoint(kind, host, flow, conn, Side::Server, client_link);
        self.demux.insert(key, Demux::Ep(ep));
        if let Some(slot) = self.flows[flow as usize].conns.get_mut(&conn) {
            slot.server_ep = Some(ep);
        }
        self.work.push(ep);
        self.drain_work();
    }

    /// Gives `c` a token no other connection of `host` holds: a new key
    /// while it is taken, at most `MPTCP_TOKEN_MAX_RETRIES` times, then
    /// plain TCP (Linux `mptcp_token_new_request`, net/mptcp/token.c, and
    /// its callers).
    fn unique_token(&self, host: NodeId, c: &mut MptcpConnection) {
        for _ in 1..MPTCP_TOKEN_MAX_RETRIES {
            if !self.tokens.contains_key(&(host, c.local_token())) {
                return;
            }
            c.regenerate_key();
        }
        if self.tokens.contains_key(&(host, c.local_token())) {
            c.refuse_mptcp();
        }
    }

    fn send_datagram(&mut self, flow: u32, bytes: u32) {
        let (addr, _) = self.client_addr(flow);
        let f = &mut self.flows[flow as usize];
        let (dst, dport, sport, client) = (f.server_addr, f.server_port, f.udp_port, f.client);
        f.udp_sent_bytes += bytes as u64;
        let key = demux_key(dst, dport, addr, sport);
        self.demux.entry(key).or_insert(Demux::Udp { flow });
        let pkt = Packet {
            src: addr,
            dst,
            sport,
            dport,
            proto: Proto::Udp,
            payload_bytes: bytes,
            wire_bytes: bytes + UDP_HEADER_BYTES,
            ..Default::default()
        };
        self.host_send(client, &pkt);
    }

    // ----- link events and handover -----

    pub(crate) fn on_link_event(&mut self, link: u32, index: u32) {
        let ev = self.links[link as usize].events[index as usize].clone();
        let dirs: &[u32] = match ev.direction {
            crate::spec::Direction::Both => &[0, 1],
            crate::spec::Direction::AToB => &[0],
            crate::spec::Direction::BToA => &[1],
        };
        for &k in dirs {
            let dir = 2 * link + k;
            self.apply_dir_change(dir, &ev);
        }
        if let Some(up) = ev.up {
            self.notify_mptcp_interfaces(LinkId(link), up);
        }
        if let Some(backup) = ev.backup {
            self.notify_mptcp_priority(LinkId(link), backup);
        }
        if ev.up == Some(false) {
            self.on_link_down(LinkId(link));
        }
        if ev.up.is_some() {
            self.on_link_state_change();
        }
    }

    fn apply_dir_change(&mut self, dir: u32, ev: &crate::spec::LinkEventSpec) {
        // Dequeues due before the change happen under the old parameters.
        self.dirs[dir as usize].sync(self.now);
        self.settle_aqm(dir);
        let d = &mut self.dirs[dir as usize];
        let mut p = *d.params();
        if let Some(bw) = ev.bandwidth_bps {
            p.bandwidth_bps = bw.max(1);
        }
        if let Some(delay) = ev.delay_ps {
            p.delay = SimDuration(delay);
        }
        if let Some(loss) = ev.loss {
            p.loss = crate::build::loss_model(&loss);
        }
        if let Some(j) = ev.jitter_ps {
            p.jitter = SimDuration(j);
        }
        if let Some(q) = ev.queue {
            p.queue = crate::build::queue_limit(&q);
        }
        d.set_params(p);
        match ev.up {
            Some(false) => {
                for pid in d.go_down(self.now) {
                    self.pool.free(pid);
                }
            }
            Some(true) => d.go_up(),
            None => {}
        }
        if ev.bandwidth_bps.is_some() || ev.delay_ps.is_some() {
            self.retime(dir);
        }
    }

    fn retime(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        if let Some(t) = d.retime(self.now) {
            let generation = d.generation;
            self.queue.push(t, Ev::Arrival { dir, generation });
        }
    }

    pub(crate) fn on_trace_step(&mut self, dir: u32, index: u32) {
        let Some(trace) = &self.traces_bw[dir as usize] else { return };
        let (_, bw) = trace[index as usize];
        let next = trace.get(index as usize + 1).map(|&(t, _)| t);
        self.dirs[dir as usize].sync(self.now);
        self.settle_aqm(dir);
        let d = &mut self.dirs[dir as usize];
        d.set_params(mpsim_net::LinkDirParams { bandwidth_bps: bw.max(1), ..*d.params() });
        self.retime(dir);
        if let Some(t) = next {
            self.queue.push(SimTime(t), Ev::TraceStep { dir, index: index + 1 });
        }
    }

    /// MPTCP endpoints on either end of `link` learn that the interface
    /// went down or came up (their path managers react).
    fn notify_mptcp_interfaces(&mut self, link: LinkId, up: bool) {
        let now = self.now;
        self.on_mptcp_ends(link, |c, addr| c.set_local_addr_up(now, addr, up));
    }

    /// MPTCP endpoints on either end of `link` make it a backup (or
    /// regular) interface and tell their peers with MP_PRIO.
    fn notify_mptcp_priority(&mut self, link: LinkId, backup: bool) {
        self.on_mptcp_ends(link, |c, addr| c.set_local_addr_backup(addr, backup));
    }

    /// Calls `f` with every MPTCP endpoint on a host at either end of
    /// `link` and its address there, then services them.
    fn on_mptcp_ends(&mut self, link: LinkId, mut f: impl FnMut(&mut MptcpConnection, mpsim_core::Addr)) {
        for ep in 0..self.endpoints.len() {
            let e = &mut self.endpoints[ep];
            let EpKind::Mptcp(c) = &mut e.kind else { continue };
            for side in 0..2 {
                if self.topo.end(link, side) == e.host {
                    f(c, mpsim_net::iface_addr(link, side));
                    self.work.push(ep as u32);
                }
            }
        }
        self.drain_work();
    }

    fn on_link_down(&mut self, link: LinkId) {
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            let Some(after) = f.spec.handover_after_down_ps else { continue };
            if f.spec.transport != TransportSpec::Tcp || f.client_links[f.active].0 != link {
                continue;
            }
            self.queue.push(self.now + SimDuration(after), Ev::Handover { flow: i as u32 });
        }
    }

    /// Application-level handover: abort the connections on the dead
    /// interface and reconnect through the next interface that is up.
    pub(crate) fn on_handover(&mut self, flow: u32) {
        let f = &self.flows[flow as usize];
        let n = f.client_links.len();
        let next = (1..=n).map(|k| (f.active + k) % n).find(|&i| {
            let (link, side) = f.client_links[i];
            self.dirs[(2 * link.0 + side) as usize].params().up
        });
        let Some(next) = next else { return };
        let eps: Vec<u32> = f.conns.values().flat_map(|s| [s.client_ep, s.server_ep]).flatten().collect();
        for ep in eps {
            self.abort(ep);
        }
        self.flows[flow as usize].active = next;
        self.app_input(flow, AppInput::Reconnect);
    }

    /// Frees a finished endpoint's state (RFC 9293: the TCB is deleted
    /// when TIME_WAIT ends; Linux frees the MPTCP socket when its subflows
    /// are gone): its tuples and token go, later segments for them are
    /// reset, what the summary reports is added to its flow's totals, and
    /// the slot is reused.
    pub(crate) fn release(&mut self, ep: u32) {
        let e = &self.endpoints[ep as usize];
        let host = e.host;
        for (l, lp, r, rp) in e.kind.tuples() {
            let key = demux_key(l, lp, r, rp);
            if self.demux.get(&key) == Some(&Demux::Ep(ep)) {
                self.demux.remove(&key);
            }
        }
        if let EpKind::Mptcp(c) = &e.kind {
            let token = c.local_token();
            if self.tokens.get(&(host, token)) == Some(&ep) {
                self.tokens.remove(&(host, token));
            }
        }
        let e = &self.endpoints[ep as usize];
        let (flow, conn, side) = (e.flow as usize, e.conn, e.side);
        for row in self.path_rows(e) {
            self.flows[flow].released_paths.add(row);
        }
        let conns = &mut self.flows[flow].conns;
        if let Some(slot) = conns.get_mut(&conn) {
            let held = if side == Side::Client { &mut slot.client_ep } else { &mut slot.server_ep };
            if *held == Some(ep) {
                *held = None;
            }
            if slot.client_ep.is_none() && slot.server_ep.is_none() {
                conns.remove(&conn);
            }
        }
        self.abort(ep);
        let e = &mut self.endpoints[ep as usize];
        e.released = true;
        e.counters = RecoveryCounters::default();
        e.delivered_bytes = 0;
        self.free_endpoints.push(ep);
    }

    pub(crate) fn abort(&mut self, ep: u32) {
        let e = &mut self.endpoints[ep as usize];
        e.counters = e.kind.counters();
        e.kind = EpKind::Closed;
        e.generation = e.generation.wrapping_add(1);
        e.scheduled = None;
    }
}

/// The test networks of the integration tests, for the tests below.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/common/testbed.rs"]
mod testbed;

#[cfg(test)]
mod tests {
    use super::testbed::{dir, link, no_loss, PS_PER_S};
    use crate::endpoint::EpKind;
    use crate::Simulation;
    use mpsim_proto::apps::Side;
    use serde_json::json;

    /// `n` sequential HTTP connections of `transport` from `client` to
    /// `server` (one link each to a router, 5 ms).
    fn http_flow(transport: &str, n: u32, duration_s: u64) -> Simulation {
        let d = || dir(100_000_000, 5.0, 1000, no_loss());
        let app = json!({"kind": "http", "sizes_bytes": [2000], "repeat": n, "gap_ps": 0,
                         "new_connection": true, "request_bytes": 100});
        let flow = json!({"name": "web", "transport": transport, "client": "client", "server": "server", "app": app,
                          "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 1u64 << 20});
        let spec = json!({"name": "ports", "seed": 1, "duration_ps": duration_s * PS_PER_S, "sample_interval_ps": 0,
            "mss_bytes": 1448, "header_bytes": 66,
            "nodes": [{"name": "client", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "server", "kind": "host"}],
            "links": [link("c", "client", "r", d(), d()), link("s", "r", "server", d(), d())],
            "flows": [flow], "record": {"interfaces": false, "subflows": false, "pcap": []}});
        Simulation::from_json(&spec.to_string()).expect("spec builds")
    }

    /// The 4-tuples of the live client endpoints, sorted.
    fn live_client_tuples(sim: &Simulation) -> Vec<(mpsim_core::Addr, u16, mpsim_core::Addr, u16)> {
        let mut live: Vec<_> = sim
            .endpoints
            .iter()
            .filter(|e| e.side == Side::Client && e.kind.is_live())
            .filter_map(|e| e.kind.first_tuple())
            .collect();
        live.sort_unstable();
        live
    }

    #[test]
    fn more_connections_than_ephemeral_ports_each_get_a_unique_live_tuple() {
        // Linux's range holds 28,232 ports; a TCP connection takes one, an
        // MPTCP connection a block of 16 for its subflows (1,764 blocks).
        for (transport, ports_per_connection) in [("tcp", 1u32), ("mptcp", 16)] {
            let mut sim = http_flow(transport, 1, 10);
            let room = (60999 - 32768 + 1) / ports_per_connection;
            // Every connection stays open (nothing runs): past the range, connect fails.
            for conn in 0..room + 10 {
                sim.connect(0, conn);
            }
            let live = live_client_tuples(&sim);
            assert!(live.iter().all(|t| (32768..=60999).contains(&t.1)), "{transport}: a port outside the range");
            let mut unique = live.clone();
            unique.dedup();
            assert_eq!(unique.len(), live.len(), "{transport}: two live connections share a 4-tuple");
            assert_eq!(live.len(), room as usize, "{transport}");
            // A connection that ends frees its tuple for the next one.
            let first = sim.flows[0].conns[&0].client_ep.expect("the client endpoint exists");
            let freed = sim.endpoints[first as usize].kind.first_tuple();
            sim.abort(first);
            sim.connect(0, room + 10);
            let again = sim.flows[0].conns[&(room + 10)].client_ep.expect("the client endpoint exists");
            assert_eq!(sim.endpoints[again as usize].kind.first_tuple(), freed, "{transport}");
            assert_eq!(live_client_tuples(&sim).len(), room as usize, "{transport}");
        }
    }

    /// The server's MPTCP endpoints, in creation order.
    fn server_tokens(sim: &Simulation) -> Vec<(u32, u32)> {
        (0..sim.endpoints.len() as u32)
            .filter_map(|ep| match &sim.endpoints[ep as usize].kind {
                EpKind::Mptcp(c) if sim.endpoints[ep as usize].side == Side::Server => Some((ep, c.local_token())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_token_taken_on_the_host_makes_the_connection_draw_another_key() {
        let mut sim = http_flow("mptcp", 1, 10);
        sim.connect(0, 0);
        let client_ep = sim.flows[0].conns[&0].client_ep.expect("the client endpoint exists");
        let mut syn = Vec::new();
        sim.endpoints[client_ep as usize].kind.drain_transmit(sim.now, &mut syn);
        let syn = syn[0];
        let server = sim.topo.end(sim.flows[0].server_link, 1);
        let key = crate::sim::demux_key(syn.dst, syn.dport, syn.src, syn.sport);
        // The same SYN accepted twice: the same seed draws the same key.
        sim.accept(0, 0, server, &syn, key);
        sim.accept(0, 0, server, &syn, key);
        let eps = server_tokens(&sim);
        assert_eq!(eps.len(), 2);
        assert_ne!(eps[0].1, eps[1].1, "the second connection kept a token in use");
        for &(ep, token) in &eps {
            assert_eq!(sim.tokens.get(&(server, token)), Some(&ep));
        }
    }
}

#[cfg(test)]
mod release_tests {
    use super::testbed::{dir, link, no_loss, PS_PER_S};
    use crate::endpoint::EpKind;
    use crate::Simulation;
    use serde_json::json;

    /// `n` sequential 10 KB requests, each on a new connection, 50 ms apart.
    fn sequential_http(transport: &str, n: u32) -> Simulation {
        sequential_http_recorded(transport, n, false)
    }

    /// `sequential_http`, sampling subflows every second if `subflows`.
    fn sequential_http_recorded(transport: &str, n: u32, subflows: bool) -> Simulation {
        let d = || dir(100_000_000, 5.0, 1000, no_loss());
        let app = json!({"kind": "http", "sizes_bytes": [10_000], "repeat": n, "gap_ps": 50 * PS_PER_S / 1000,
                         "new_connection": true, "request_bytes": 100});
        let flow = json!({"name": "web", "transport": transport, "client": "client", "server": "server", "app": app,
                          "start_ps": 0, "cc": "reno", "mss_bytes": 1448, "rcvbuf_bytes": 1u64 << 20});
        let spec = json!({"name": "release", "seed": 1, "duration_ps": 100_000 * PS_PER_S, "sample_interval_ps": PS_PER_S,
            "mss_bytes": 1448, "header_bytes": 66,
            "nodes": [{"name": "client", "kind": "host"}, {"name": "r", "kind": "router"}, {"name": "server", "kind": "host"}],
            "links": [link("c", "client", "r", d(), d()), link("s", "r", "server", d(), d())],
            "flows": [flow], "record": {"interfaces": false, "subflows": subflows, "pcap": []}});
        Simulation::from_json(&spec.to_string()).expect("spec builds")
    }

    #[test]
    fn every_connection_in_a_reused_slot_gets_its_own_last_trace_row() {
        use crate::report_column::Column;
        for transport in ["tcp", "mptcp"] {
            // About 90 ms per connection: over two minutes, twice TIME_WAIT.
            let n = 1500;
            let mut sim = sequential_http_recorded(transport, n, true);
            while !sim.run_until(sim.now() + mpsim_core::SimDuration::from_secs(10)) {}
            assert!(sim.endpoints.len() < n as usize, "{transport}: slots were not reused");
            let traces = sim.traces();
            let table = &traces.iter().find(|(name, _)| name == "subflows").expect("subflows table").1;
            let col = |name: &str| &table.columns.iter().find(|(c, _)| c == name).expect("column").1;
            let (Column::I64(conn), Column::Str(side), Column::Str(state)) = (col("connection"), col("side"), col("state"))
            else {
                panic!("column types")
            };
            // Per (connection, side): its last rows (closed or time_wait).
            let mut last_rows = std::collections::BTreeMap::new();
            for i in 0..conn.len() {
                if state[i] == "closed" || state[i] == "time_wait" {
                    *last_rows.entry((conn[i], side[i].clone(), state[i].clone())).or_insert(0) += 1;
                }
            }
            assert!(last_rows.values().all(|&k| k == 1), "{transport}: a subflow has two last rows");
            // One end of every connection waits out TIME_WAIT (60 s), so
            // is sampled in it, whichever slot it holds.
            let waited: std::collections::BTreeSet<i64> =
                last_rows.keys().filter(|(_, _, s)| s == "time_wait").map(|(c, _, _)| *c).collect();
            assert_eq!(waited.len(), n as usize, "{transport}: connections without a time_wait row");
        }
    }

    #[test]
    fn finished_connections_are_released_and_cost_the_same_at_any_count() {
        for transport in ["tcp", "mptcp"] {
            let mut per_connection = vec![];
            for n in [300u32, 3_000] {
                let mut sim = sequential_http(transport, n);
                let mut most_live = 0;
                while !sim.run_until(sim.now() + mpsim_core::SimDuration::from_secs(10)) {
                    let live = sim.endpoints.iter().filter(|e| !matches!(e.kind, EpKind::Closed)).count();
                    most_live = most_live.max(live);
                }
                let s = sim.summary();
                let f = &s["flows"]["web"];
                assert_eq!(f["requests"].as_array().map(Vec::len), Some(n as usize), "{transport}");
                assert_eq!(f["bytes_delivered"].as_u64(), Some(10_000 * n as u64), "{transport}");
                // Everything is released once TIME_WAIT (60 s) ends.
                let left = sim.endpoints.iter().filter(|e| !matches!(e.kind, EpKind::Closed)).count();
                assert_eq!(left, 0, "{transport}: {:#?}", &sim.endpoint_lines()[..sim.endpoint_lines().len().min(6)]);
                // At most the connections of the last 60 s (about one per
                // 70 ms) are held at once, whatever the count.
                assert!(most_live <= 2 * 60_000 / 60, "{transport}: {most_live} live endpoints");
                // Released slots are reused: the engine holds no more slots
                // than connections were open at once.
                let slots = sim.endpoints.len();
                assert!(slots <= 2 * 60_000 / 60, "{transport}: {slots} endpoint slots for {n} connections");
                assert_eq!(sim.summary_json(true), s.to_string(), "{transport}: the streamed summary differs");
                per_connection.push(sim.packet_hops() as f64 / n as f64);
                // The summary keeps one row per path (MPTCP: per subflow).
                assert!(!f["subflows"].as_array().expect("subflows").is_empty());
            }
            let (a, b) = (per_connection[0], per_connection[1]);
            assert!((a - b).abs() / a < 0.01, "{transport}: {a} and {b} packet-hops per connection");
        }
    }
}
