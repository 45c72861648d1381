//! The engine spec: the plain, unit-converted scenario that the Python
//! front end validates and hands over (docs/engine-spec.md). Only shapes
//! are checked here; cross-references are resolved when the world is built.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    pub seed: u64,
    pub duration_ps: u64,
    pub sample_interval_ps: u64,
    /// The default largest segment payload; flows carry their own. None:
    /// what the MTU leaves.
    #[serde(default)]
    pub mss_bytes: Option<u32>,
    /// Wire bytes of a segment beyond its payload: Ethernet, IPv4 and TCP
    /// headers and the timestamps option (66); the option's 12 bytes only
    /// where it is negotiated.
    pub header_bytes: u32,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub record: RecordSpec,
    /// SDN controller: switches forward by flow tables it fills.
    #[serde(default)]
    pub controller: Option<ControllerSpec>,
    /// Forwarding of switches and routers that do not set their own.
    #[serde(default)]
    pub forwarding: ForwardingSpec,
    /// Recompute routes `reroute_delay_ps` after a link goes down or up.
    #[serde(default)]
    pub reroute: bool,
    #[serde(default = "default_reroute_delay")]
    pub reroute_delay_ps: u64,
    /// Static flow-table rules at switches (`[[rule]]`, docs/sdn.md).
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
}

/// One `[[rule]]`: a match, an action and a priority at one switch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub switch: String,
    pub priority: u16,
    /// The link the packet arrived over.
    #[serde(default)]
    pub in_link: Option<String>,
    /// Interfaces as `host:link`.
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    #[serde(default)]
    pub sport: Option<u16>,
    #[serde(default)]
    pub dport: Option<u16>,
    /// IP protocol number (6 TCP, 17 UDP, 132 SCTP).
    #[serde(default)]
    pub proto: Option<u8>,
    /// (mask, value) over the TCP flag bits.
    #[serde(default)]
    pub tcp_flags: Option<(u8, u8)>,
    /// `mp_capable` or `mp_join`.
    #[serde(default)]
    pub mptcp: Option<String>,
    /// The MP_JOIN token (with `mptcp = "mp_join"`).
    #[serde(default)]
    pub token: Option<u32>,
    /// `output`, `group`, `drop` or `controller`.
    pub action: String,
    /// Links the packet leaves over (output: one; group: several).
    #[serde(default)]
    pub links: Vec<String>,
    #[serde(default)]
    pub idle_timeout_ps: Option<u64>,
    #[serde(default)]
    pub hard_timeout_ps: Option<u64>,
}

/// The SdnController (docs/sdn.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerSpec {
    /// shortest | ecmp | disjoint | mpsshetn (python:module:Class is refused).
    pub app: String,
    /// Switch-to-controller delay of a packet-in and of a flow-mod.
    #[serde(default)]
    pub latency_ps: u64,
    /// mpsshetn: gap thresholds by application size; None: the thesis's.
    #[serde(default)]
    pub thresholds: Option<Vec<ThresholdSpec>>,
    /// Packets a switch buffers awaiting packet-in answers; None: 256.
    #[serde(default)]
    pub buffer_pkts: Option<u32>,
    /// Idle timeout of the rules the apps install; None: 10 s; 0: none.
    #[serde(default)]
    pub idle_timeout_ps: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdSpec {
    /// Applications smaller than this (None: any size).
    #[serde(default)]
    pub below_bytes: Option<u64>,
    /// The largest gap |BW_p1 - BW_pj| / BW_p1 admitted.
    pub gap: f64,
}

/// How a switch or router picks among equal-cost next hops.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ForwardingSpec {
    #[default]
    Shortest,
    Ecmp,
}

fn default_reroute_delay() -> u64 {
    50_000_000_000
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NodeKindSpec {
    Host,
    Switch,
    Router,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKindSpec,
    /// Overrides the simulation's `forwarding` at this node.
    #[serde(default)]
    pub forwarding: Option<ForwardingSpec>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum QueueSpec {
    Packets(u32),
    Bytes(u64),
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(tag = "model", rename_all = "lowercase", deny_unknown_fields)]
pub enum LossSpec {
    None,
    Bernoulli {
        p: f64,
    },
    Gilbert {
        p_good_bad: f64,
        p_bad_good: f64,
        #[serde(default)]
        loss_good: f64,
        loss_bad: f64,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkDirSpec {
    pub bandwidth_bps: u64,
    pub delay_ps: u64,
    pub queue: QueueSpec,
    pub loss: LossSpec,
    /// Uniform extra delay per packet (reordering), picoseconds.
    #[serde(default)]
    pub jitter_ps: u64,
    #[serde(default)]
    pub bandwidth_trace: Option<Vec<(u64, u64)>>,
    /// Queue discipline (drop-tail when absent).
    #[serde(default)]
    pub qdisc: QdiscSpec,
}

/// A queue discipline and its parameters (docs/scenario-extensions.md).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscSpec {
    #[default]
    Droptail,
    /// Thresholds in the unit of `min_th` and `max_th` (the same one).
    Red {
        min_th: QueueSpec,
        max_th: QueueSpec,
        max_p: f64,
        #[serde(default)]
        ecn: bool,
        #[serde(default = "default_red_weight")]
        weight: f64,
        #[serde(default)]
        gentle: bool,
        #[serde(default = "default_avpkt")]
        avpkt_bytes: u32,
    },
    /// htsim's RandomQueue: drop with probability `p` in the top `region`.
    RandomDrop { region: QueueSpec, p: f64 },
    Codel {
        #[serde(default = "default_codel_target")]
        target_ps: u64,
        #[serde(default = "default_codel_interval")]
        interval_ps: u64,
        #[serde(default)]
        ecn: bool,
    },
    FqCodel {
        #[serde(default = "default_codel_target")]
        target_ps: u64,
        #[serde(default = "default_codel_interval")]
        interval_ps: u64,
        #[serde(default)]
        ecn: bool,
        #[serde(default = "default_fq_flows")]
        flows: u32,
        #[serde(default = "default_fq_quantum")]
        quantum_bytes: u32,
    },
}

fn default_red_weight() -> f64 {
    0.002
}
fn default_avpkt() -> u32 {
    1000
}
fn default_codel_target() -> u64 {
    5_000_000_000
}
fn default_codel_interval() -> u64 {
    100_000_000_000
}
fn default_fq_flows() -> u32 {
    1024
}
fn default_fq_quantum() -> u32 {
    1514
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Both,
    AToB,
    BToA,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEventSpec {
    pub at_ps: u64,
    #[serde(default)]
    pub direction: Direction,
    #[serde(default)]
    pub up: Option<bool>,
    #[serde(default)]
    pub bandwidth_bps: Option<u64>,
    #[serde(default)]
    pub delay_ps: Option<u64>,
    #[serde(default)]
    pub loss: Option<LossSpec>,
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    #[serde(default)]
    pub jitter_ps: Option<u64>,
    /// MPTCP hosts on this link make it a backup interface (true) or a
    /// regular one (false) and send MP_PRIO.
    #[serde(default)]
    pub backup: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: String,
    pub a: String,
    pub b: String,
    #[serde(default)]
    pub strip_mptcp: bool,
    pub a_to_b: LinkDirSpec,
    pub b_to_a: LinkDirSpec,
    #[serde(default)]
    pub events: Vec<LinkEventSpec>,
    /// MTU of the interfaces at both ends, bytes (IP packet); None: 1500.
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AppSpec {
    Download {
        size_bytes: Option<u64>,
    },
    Upload {
        size_bytes: Option<u64>,
    },
    Http {
        sizes_bytes: Vec<u64>,
        repeat: u32,
        gap_ps: u64,
        new_connection: bool,
        request_bytes: u64,
        /// Response sizes drawn from a distribution instead of `sizes_bytes`.
        #[serde(default)]
        size_distribution: Option<SizeDistSpec>,
        /// A cap on drawn sizes (heavy tails).
        #[serde(default)]
        max_size_bytes: Option<u64>,
        /// With a distribution or open-loop arrivals: how many requests
        /// (None: until the flow stops or the run ends).
        #[serde(default)]
        requests: Option<u32>,
        /// `gap_ps` as a fixed wait or the mean of exponential ones.
        #[serde(default)]
        think: ThinkSpec,
        /// Open loop: Poisson arrivals at this rate, one connection each.
        #[serde(default)]
        arrival_rate_per_s: Option<f64>,
    },
    Cbr {
        rate_bps: u64,
        packet_bytes: u32,
    },
    Onoff {
        on_ps: u64,
        off_ps: u64,
        inner: Box<AppSpec>,
    },
    Video {
        bitrate_bps: u64,
        chunk_ps: u64,
    },
}

/// A request-size distribution (mpsim_proto::workload::SizeDist).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SizeDistSpec {
    Uniform {
        min_bytes: u64,
        max_bytes: u64,
    },
    Exponential {
        mean_bytes: f64,
    },
    Pareto {
        scale_bytes: f64,
        shape: f64,
    },
    /// (size, cumulative probability) points.
    Empirical {
        points: Vec<(u64, f64)>,
    },
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ThinkSpec {
    #[default]
    Fixed,
    Exponential,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TransportSpec {
    Tcp,
    Udp,
    Mptcp,
    Cmt,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CcModeSpec {
    #[default]
    Reference,
    Linux,
}

impl FlowSpec {
    /// The controller as transports build it: `cc`, then its parameters
    /// as `:key=value,...` in key order.
    pub fn cc_spec(&self) -> String {
        if self.cc_params.is_empty() {
            return self.cc.clone();
        }
        let pairs: Vec<String> = self.cc_params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}:{}", self.cc, pairs.join(","))
    }
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub transport: TransportSpec,
    pub client: String,
    pub server: String,
    pub app: AppSpec,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub stop_ps: Option<u64>,
    #[serde(default = "default_cc")]
    pub cc: String,
    #[serde(default)]
    pub cc_mode: CcModeSpec,
    /// Controller parameters (`cc_params`), by key; which keys exist
    /// depends on `cc` (mpsim_cc::CC_PARAMS).
    #[serde(default)]
    pub cc_params: BTreeMap<String, f64>,
    /// Largest segment payload; None: what the MTU leaves after the
    /// headers and options.
    #[serde(default)]
    pub mss_bytes: Option<u32>,
    pub rcvbuf_bytes: u64,
    #[serde(default)]
    pub sndbuf_bytes: Option<u64>,
    #[serde(default = "default_true")]
    pub sack: bool,
    #[serde(default = "default_true")]
    pub delayed_ack: bool,
    #[serde(default = "default_delack")]
    pub delayed_ack_ps: u64,
    /// None: the mode's default (`TcpConfig::for_mode`).
    #[serde(default)]
    pub min_rto_ps: Option<u64>,
    /// None: the mode's default (on in linux mode).
    #[serde(default)]
    pub timestamps: Option<bool>,
    /// None: the mode's default (RACK-TLP on in linux mode; reference
    /// mode has none).
    #[serde(default)]
    pub rack: Option<bool>,
    /// None: Linux's 60 s.
    #[serde(default)]
    pub time_wait_ps: Option<u64>,
    /// None: infinite (Linux); htsim starts at 15 packets.
    #[serde(default)]
    pub initial_ssthresh_pkts: Option<u32>,
    #[serde(default = "default_iw")]
    pub initial_cwnd_pkts: u32,
    #[serde(default)]
    pub client_interfaces: Option<Vec<String>>,
    /// Pinned paths: link names from client to server, one per subflow in
    /// the order the client opens them (docs/scenario-extensions.md).
    #[serde(default)]
    pub paths: Option<Vec<Vec<String>>>,
    #[serde(default)]
    pub handover_after_down_ps: Option<u64>,
    /// mptcp: default | roundrobin | redundant | upstream.
    #[serde(default)]
    pub scheduler: Option<String>,
    /// mptcp: default | fullmesh | ndiffports | endpoints.
    #[serde(default)]
    pub path_manager: Option<String>,
    /// mptcp ndiffports: subflows in all.
    #[serde(default)]
    pub subflows: Option<u8>,
    /// mptcp: client interfaces (link names) whose subflows are backup.
    #[serde(default)]
    pub backup_interfaces: Option<Vec<String>>,
    /// mptcp endpoints: extra subflows allowed (kernel default 2).
    #[serde(default)]
    pub max_subflows: Option<u8>,
    /// mptcp endpoints: ADD_ADDRs accepted (kernel default 0).
    #[serde(default)]
    pub max_add_addr_accepted: Option<u8>,
    /// mptcp: an unechoed ADD_ADDR is sent again after this (kernel default 120 s).
    #[serde(default)]
    pub add_addr_timeout_ps: Option<u64>,
    /// mptcp: ask for DSS checksums (MP_CAPABLE flag A); used if either end asks.
    #[serde(default)]
    pub dss_checksum: Option<bool>,
    /// Ask for ECN (RFC 3168) in the SYN; servers accept either way.
    #[serde(default)]
    pub ecn: bool,
    /// The flow starts at `start_ps` plus an offset drawn uniformly from
    /// [0, start_jitter_ps] from the flow's own seeded stream, picoseconds.
    #[serde(default)]
    pub start_jitter_ps: u64,
    /// mptcp: opportunistic retransmission when the receive window blocks
    /// (default: on, off with the upstream scheduler).
    #[serde(default)]
    pub opportunistic_retransmission: Option<bool>,
    /// mptcp: penalisation of the subflow holding the window back
    /// (default: on, off with the upstream scheduler).
    #[serde(default)]
    pub penalisation: Option<bool>,
    /// Linux's receive-buffer autotuning instead of the fixed
    /// `rcvbuf_bytes` (which is then ignored): the front end asks for it in
    /// linux mode when no `rcvbuf` is given.
    #[serde(default)]
    pub rcvbuf_auto: bool,
    /// mptcp, upstream scheduler, no `sndbuf_bytes`: Linux's autotuned
    /// MPTCP socket send buffer bounds the data not yet DATA_ACKed
    /// (`tcp_wmem[0]` plus the subflows' send buffers). The front end asks
    /// for it in linux mode when no `sndbuf` is given.
    #[serde(default)]
    pub msk_sndbuf_auto: bool,
    /// cmt: the multipath scheme (cmt | smt | smos); None: cmt.
    #[serde(default)]
    pub variant: Option<String>,
    /// cmt: the association's receive buffer, bytes; None: `rcvbuf_bytes`.
    #[serde(default)]
    pub rbuf_bytes: Option<u64>,
    /// cmt: the retransmission policy (ssthresh | same | asap | cwnd |
    /// lossrate); None: ssthresh.
    #[serde(default)]
    pub rtx_policy: Option<String>,
    /// cmt, variant smos: `online` (one chunk at a time) or `trunk`
    /// (TSNs numbered a trunk at a time); None: online.
    #[serde(default)]
    pub smos_schedule: Option<String>,
}

fn default_cc() -> String {
    "reno".into()
}
fn default_delack() -> u64 {
    40_000_000_000
}
fn default_iw() -> u32 {
    10
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    #[serde(default)]
    pub interfaces: bool,
    #[serde(default)]
    pub subflows: bool,
    #[serde(default)]
    pub pcap: Vec<String>,
    /// The links each 5-tuple crossed, in the summary's `paths`.
    #[serde(default)]
    pub paths: bool,
    /// The SdnController's decisions, in the summary's `controller.decisions`.
    #[serde(default)]
    pub controller: bool,
}

impl Spec {
    pub fn from_json(s: &str) -> Result<Spec, serde_json::Error> {
        serde_json::from_str(s)
    }
}
