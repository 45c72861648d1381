"""Scenario files: pydantic models of SCENARIO-FORMAT.md, loading, checks, engine spec.

The path of a scenario: TOML/YAML text -> raw dict (+ key path -> line map)
-> `--set` overrides -> pydantic validation (units converted to integers in
base units) -> semantic checks (names, references, traces) -> `Scenario`
-> `to_engine_spec()`, the JSON document of docs/engine-spec.md. Every error
on the way is a ScenarioError naming file, line and key path.

Fields hold integers in base units and carry the unit in their name
(`duration_ps`); their alias is the key written in the file (`duration`).
"""

from __future__ import annotations

import copy
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from . import overrides as ov
from . import units
from ._toml import tomllib
from .errors import ScenarioError, ScenarioWarning
from .locate import (
    DuplicateKey,
    LineMap,
    Loc,
    YamlLoader,
    format_loc,
    lookup_line,
    toml_lines,
    yaml_lines,
)
from .vocabulary import VOCABULARY, literal, names

if TYPE_CHECKING:
    from .datacenter import Topology, Traffic

FORMAT_VERSION = 1
DEFAULT_RCVBUF_BYTES = 6291456  # Linux tcp_rmem max
CC_BY_TRANSPORT: dict[str, tuple[str, ...]] = {t: tuple(c) for t, c in VOCABULARY["cc_by_transport"].items()}
DEFAULT_CC: dict[str, str | None] = VOCABULARY["default_cc"]
# `cc_params` keys by controller, with the smallest value each accepts (packets).
CC_PARAMS: dict[str, dict[str, float]] = VOCABULARY["cc_params"]
# Controllers whose linux mode follows the out-of-tree MPTCP kernel's coupled modules.
LINUX_COUPLED_CC = ("lia", "olia", "balia")
MPTCP_SCHEDULERS = names("schedulers")
MPTCP_PATH_MANAGERS = names("path_managers")
# What the engine gets when a key is left out (filled in by spec.py).
_DEFAULTS = VOCABULARY["defaults"]
DEFAULT_SCHEDULER: str = _DEFAULTS["scheduler"]
DEFAULT_PATH_MANAGER: str = _DEFAULTS["path_manager"]
DEFAULT_NDIFFPORTS_SUBFLOWS: int = _DEFAULTS["ndiffports_subflows"]
DEFAULT_MAX_SUBFLOWS: int = _DEFAULTS["max_subflows"]
DEFAULT_MAX_ADD_ADDR_ACCEPTED: int = _DEFAULTS["max_add_addr_accepted"]
DEFAULT_ADD_ADDR_TIMEOUT_PS: int = _DEFAULTS["add_addr_timeout_ps"]
# ndiffports subflows in all, and the endpoints limits (Linux's MPTCP_PM_ADDR_MAX).
MAX_MPTCP_SUBFLOWS: int = VOCABULARY["max_subflows"]
CONTROLLER_APPS = names("controller_apps")
# Interface MTU (IP packet) bounds: the datagram every IPv4 host accepts
# (RFC 791) and the IPv4 total-length field; Ethernet's default.
MIN_MTU_BYTES, MAX_MTU_BYTES = VOCABULARY["mtu_bytes_range"]
DEFAULT_MTU_BYTES: int = _DEFAULTS["mtu_bytes"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


# ------------------------------------------------------------ field types


def _positive(value: int) -> int:
    if value <= 0:
        raise ValueError(f"must be positive, got {value}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _known_format(value: int) -> int:
    if value != FORMAT_VERSION:
        raise ValueError(f"format {value} is not supported: this mpsim reads format {FORMAT_VERSION}")
    return value


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"bad name {value!r}: use letters, digits, '_' and '-'")
    return value


TimePs = Annotated[int, BeforeValidator(units.parse_time)]
PositiveTimePs = Annotated[int, BeforeValidator(units.parse_time), AfterValidator(_positive)]
RateBps = Annotated[int, BeforeValidator(units.parse_rate)]
SizeBytes = Annotated[int, BeforeValidator(units.parse_size)]
PositiveSizeBytes = Annotated[int, BeforeValidator(units.parse_size), AfterValidator(_positive)]
QueueLimit = Annotated[dict[str, int], BeforeValidator(units.parse_queue)]
Probability = Annotated[float, BeforeValidator(units.parse_probability)]
Count = Annotated[StrictInt, AfterValidator(_positive)]
# A packet count the engine keeps in 32 bits (windows and thresholds).
PacketCount = Annotated[StrictInt, AfterValidator(_positive), Field(le=units.MAX_QUEUE_PACKETS)]
CcParam = Annotated[float, BeforeValidator(_number)]
SubflowCount = Annotated[StrictInt, Field(ge=1, le=MAX_MPTCP_SUBFLOWS)]
SubflowLimit = Annotated[StrictInt, Field(ge=0, le=MAX_MPTCP_SUBFLOWS)]
Name = Annotated[str, AfterValidator(_name)]


def _mtu(value: int) -> int:
    if not MIN_MTU_BYTES <= value <= MAX_MTU_BYTES:
        raise ValueError(f"mtu must be {MIN_MTU_BYTES} to {MAX_MTU_BYTES} bytes, got {value}")
    return value


MtuBytes = Annotated[int, BeforeValidator(units.parse_size), AfterValidator(_mtu)]


# Convergence delay of rerouting: an OSPF or IS-IS network with fast timers (tens of ms).
DEFAULT_REROUTE_DELAY_PS = 50 * 10**9


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------ models


class Simulation(_Model):
    """`[simulation]`: run length, seed, sampling and segment defaults."""

    duration_ps: PositiveTimePs = Field(alias="duration")
    seed: Annotated[StrictInt, Field(ge=0, lt=2**64)] = 1
    sample_interval_ps: PositiveTimePs = Field(10**12, alias="sample_interval")
    # None: what the MTU leaves after the headers and options (1448 bytes with timestamps).
    mss_bytes: PositiveSizeBytes | None = Field(None, alias="mss")
    header_bytes: SizeBytes = Field(66, alias="header_bytes")
    rcvbuf_bytes: PositiveSizeBytes = Field(DEFAULT_RCVBUF_BYTES, alias="rcvbuf")
    # Every flow starts up to this much after its `start` (a seeded draw per flow), unless it sets its own.
    start_jitter_ps: TimePs = Field(0, alias="start_jitter")
    # Switches and routers: one shortest path per destination, or every equal-cost one with a
    # seeded 5-tuple hash per flow (ecmp); with reroute, routes follow links going down or up.
    forwarding: literal("forwarding") = "shortest"
    reroute: StrictBool = False
    reroute_delay_ps: TimePs = Field(DEFAULT_REROUTE_DELAY_PS, alias="reroute_delay")


class Node(_Model):
    """`[[node]]`: a host, switch or router."""

    name: Name
    kind: Literal["host", "switch", "router"] = "host"
    # Overrides [simulation] forwarding at this switch or router.
    forwarding: literal("forwarding") | None = None

    @field_validator("forwarding")
    @classmethod
    def _forwarding_needs_a_forwarding_node(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("kind") == "host":
            raise ValueError("applies to switches and routers; hosts do not forward")
        return value


def _loss_input(value: Any) -> Any:
    """`loss = 0.01` is short for `{model = "bernoulli", p = 0.01}`."""
    if isinstance(value, dict):
        return value
    return {"model": "bernoulli", "p": units.parse_probability(value)}


class Loss(_Model):
    """A loss model: independent (bernoulli) or bursty (gilbert)."""

    model: Literal["none", "bernoulli", "gilbert"]
    p: Probability | None = None
    p_good_bad: Probability | None = None
    p_bad_good: Probability | None = None
    loss_good: Probability = 0.0
    loss_bad: Probability = 1.0

    @model_validator(mode="after")
    def _keys_match_model(self) -> Loss:
        needed = {"none": (), "bernoulli": ("p",), "gilbert": ("p_good_bad", "p_bad_good")}[self.model]
        allowed = {"none": set(), "bernoulli": {"p"}, "gilbert": {"p_good_bad", "p_bad_good", "loss_good", "loss_bad"}}
        for key in needed:
            if getattr(self, key) is None:
                raise ValueError(f"loss model '{self.model}' needs key '{key}'")
        extra = sorted((self.model_fields_set - {"model"}) - allowed[self.model])
        if extra:
            raise ValueError(f"key '{extra[0]}' does not apply to loss model '{self.model}'")
        return self

    def to_spec(self) -> dict[str, Any]:
        if self.model == "none" or (self.model == "bernoulli" and self.p == 0.0):
            return {"model": "none"}
        if self.model == "bernoulli":
            return {"model": "bernoulli", "p": self.p}
        return {
            "model": "gilbert",
            "p_good_bad": self.p_good_bad,
            "p_bad_good": self.p_bad_good,
            "loss_good": self.loss_good,
            "loss_bad": self.loss_bad,
        }


LossField = Annotated[Loss, BeforeValidator(_loss_input)]
NO_LOSS = Loss(model="none")

QdiscName = literal("qdiscs")
# Linux's default limits of its codel and fq_codel qdiscs, used when the link gives no queue.
DEFAULT_QDISC_QUEUE = {"codel": {"packets": 1000}, "fq_codel": {"packets": 10240}}


class Red(_Model):
    """`red = { min_th, max_th, max_p, ecn }`: RED's thresholds on the average queue."""

    min_th: QueueLimit
    max_th: QueueLimit
    max_p: Probability
    ecn: StrictBool = False
    weight: Probability = 0.002
    gentle: StrictBool = False
    avpkt_bytes: PositiveSizeBytes = Field(1000, alias="avpkt")

    @model_validator(mode="after")
    def _thresholds(self) -> Red:
        if set(self.min_th) != set(self.max_th):
            raise ValueError("min_th and max_th must be in the same unit (both pkt or both bytes)")
        unit = next(iter(self.min_th))
        if self.min_th[unit] >= self.max_th[unit]:
            raise ValueError("min_th must be below max_th")
        if self.max_p == 0.0 or self.weight == 0.0:
            raise ValueError("max_p and weight must be above 0")
        return self

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "red", "min_th": dict(self.min_th), "max_th": dict(self.max_th), "max_p": self.max_p,
                "ecn": self.ecn, "weight": self.weight, "gentle": self.gentle, "avpkt_bytes": self.avpkt_bytes}


class RandomDrop(_Model):
    """`random_drop = { region, p }`: htsim's RandomQueue, random drops in the top of the queue."""

    region: QueueLimit = Field(default_factory=lambda: {"packets": 3})
    p: Probability = 0.1

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "random_drop", "region": dict(self.region), "p": self.p}


class Codel(_Model):
    """`codel = { target, interval, ecn }` (RFC 8289 defaults)."""

    target_ps: PositiveTimePs = Field(5 * 10**9, alias="target")
    interval_ps: PositiveTimePs = Field(100 * 10**9, alias="interval")
    ecn: StrictBool = False

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "codel", "target_ps": self.target_ps, "interval_ps": self.interval_ps, "ecn": self.ecn}


class FqCodel(Codel):
    """`fq_codel = { flows, quantum, target, interval, ecn }` (Linux defaults)."""

    flows: Annotated[StrictInt, Field(ge=1, le=65536)] = 1024
    quantum_bytes: PositiveSizeBytes = Field(1514, alias="quantum")

    def to_spec(self) -> dict[str, Any]:
        return {**super().to_spec(), "kind": "fq_codel", "flows": self.flows, "quantum_bytes": self.quantum_bytes}


class _QdiscKeys(_Model):
    """The queue discipline keys shared by a link and its direction overrides."""

    qdisc: QdiscName | None = None
    red: Red | None = None
    random_drop: RandomDrop | None = None
    codel: Codel | None = None
    fq_codel: FqCodel | None = None


def qdisc_spec(name: str, tables: dict[str, Any]) -> dict[str, Any]:
    """The engine's `qdisc` object for discipline `name` with its table (or defaults)."""
    if name == "droptail":
        return {"kind": "droptail"}
    table = tables.get(name)
    if table is None:
        table = {"random_drop": RandomDrop, "codel": Codel, "fq_codel": FqCodel}[name]()
    return table.to_spec()


class Direction(_QdiscKeys):
    """`[link.a_to_b]` / `[link.b_to_a]`: overrides for one direction."""

    bandwidth_bps: RateBps | None = Field(None, alias="bandwidth")
    delay_ps: TimePs | None = Field(None, alias="delay")
    queue: QueueLimit | None = None
    loss: LossField | None = None
    jitter_ps: TimePs | None = Field(None, alias="jitter")
    bandwidth_trace: str | None = None


class LinkEvent(_Model):
    """`[[link.events]]`: a change at a given time, in one or both directions."""

    at_ps: TimePs = Field(alias="at")
    direction: Literal["both", "a_to_b", "b_to_a"] = "both"
    up: StrictBool | None = None
    bandwidth_bps: RateBps | None = Field(None, alias="bandwidth")
    delay_ps: TimePs | None = Field(None, alias="delay")
    loss: LossField | None = None
    queue: QueueLimit | None = None
    jitter_ps: TimePs | None = Field(None, alias="jitter")
    # MPTCP hosts on the link make it a backup (or regular) interface and send MP_PRIO.
    backup: StrictBool | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> LinkEvent:
        if self.model_fields_set <= {"at_ps", "direction"}:
            raise ValueError("event changes nothing: give up, bandwidth, delay, loss, queue, jitter or backup")
        return self

    def to_spec(self) -> dict[str, Any]:
        return {
            "at_ps": self.at_ps,
            "direction": self.direction,
            "up": self.up,
            "bandwidth_bps": self.bandwidth_bps,
            "delay_ps": self.delay_ps,
            "loss": self.loss.to_spec() if self.loss is not None else None,
            "queue": dict(self.queue) if self.queue is not None else None,
            "jitter_ps": self.jitter_ps,
            "backup": self.backup,
        }


class Link(_QdiscKeys):
    """`[[link]]`: a full-duplex link between two nodes."""

    name: Name | None = None
    between: Annotated[list[Name], Field(min_length=2, max_length=2)]
    bandwidth_bps: RateBps | None = Field(None, alias="bandwidth")
    delay_ps: TimePs = Field(0, alias="delay")
    queue: QueueLimit = Field(default_factory=lambda: {"packets": 100})
    loss: LossField = NO_LOSS
    # Uniform extra delay per packet, as netem's jitter: packets may be reordered.
    jitter_ps: TimePs = Field(0, alias="jitter")
    bandwidth_trace: str | None = None
    strip_mptcp: StrictBool = False
    # MTU of the interfaces at the link's host ends (both directions).
    mtu_bytes: MtuBytes | None = Field(None, alias="mtu")
    a_to_b: Direction | None = None
    b_to_a: Direction | None = None
    events: list[LinkEvent] = Field(default_factory=list)

    def direction(self, which: str) -> dict[str, Any]:
        """Parameters of one direction with its overrides merged (trace as a path)."""
        over = getattr(self, which) or Direction()
        qdisc = over.qdisc or self.qdisc or "droptail"
        queue = over.queue if over.queue is not None else self.queue
        if over.queue is None and "queue" not in self.model_fields_set and qdisc in DEFAULT_QDISC_QUEUE:
            queue = DEFAULT_QDISC_QUEUE[qdisc]
        tables = {k: getattr(over, k) or getattr(self, k) for k in ("red", "random_drop", "codel", "fq_codel")}
        return {
            "bandwidth_bps": over.bandwidth_bps if over.bandwidth_bps is not None else self.bandwidth_bps,
            "delay_ps": over.delay_ps if over.delay_ps is not None else self.delay_ps,
            "queue": dict(queue),
            "qdisc": qdisc,
            "qdisc_tables": tables,
            "loss": over.loss if over.loss is not None else self.loss,
            "jitter_ps": over.jitter_ps if over.jitter_ps is not None else self.jitter_ps,
            "bandwidth_trace": over.bandwidth_trace or self.bandwidth_trace,
        }


class SizeDistribution(_Model):
    """`size_distribution = {...}` of an http flow: response sizes drawn per request."""

    kind: Literal["uniform", "exponential", "pareto", "empirical"]
    min_bytes: PositiveSizeBytes | None = Field(None, alias="min")
    max_bytes: PositiveSizeBytes | None = Field(None, alias="max")
    mean_bytes: PositiveSizeBytes | None = Field(None, alias="mean")
    scale_bytes: PositiveSizeBytes | None = Field(None, alias="scale")
    shape: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | None = None
    file: str | None = None
    # Drawn sizes above this are cut to it (a heavy tail's longest responses).
    cap_bytes: PositiveSizeBytes | None = Field(None, alias="cap")

    @model_validator(mode="after")
    def _keys_of_kind(self) -> SizeDistribution:
        needs = {"uniform": {"min", "max"}, "exponential": {"mean"}, "pareto": {"shape"}, "empirical": {"file"}}[self.kind]
        allowed = needs | {"kind", "cap"} | ({"mean", "scale"} if self.kind == "pareto" else set())
        given = {type(self).model_fields[n].alias or n for n in self.model_fields_set}
        for key in sorted(needs - given):
            raise ValueError(f"kind '{self.kind}' needs key '{key}'")
        for key in sorted(given - allowed):
            raise ValueError(f"key '{key}' does not apply to kind '{self.kind}'")
        if self.kind == "pareto":
            if (self.mean_bytes is None) == (self.scale_bytes is None):
                raise ValueError("kind 'pareto' needs exactly one of 'mean' and 'scale'")
            if self.mean_bytes is not None and (self.shape or 0) <= 1:
                raise ValueError(f"a pareto with shape {self.shape} <= 1 has no mean: give 'scale'")
        if self.kind == "uniform" and self.min_bytes is not None and self.max_bytes is not None and self.min_bytes > self.max_bytes:
            raise ValueError(f"min ({self.min_bytes}) is above max ({self.max_bytes})")
        return self

    @property
    def pareto_scale_bytes(self) -> float:
        if self.scale_bytes is not None:
            return float(self.scale_bytes)
        shape = float(self.shape or 0)
        return float(self.mean_bytes or 0) * (shape - 1) / shape


class Handover(_Model):
    """`handover = { after_down = "30s" }`: reconnect through another interface."""

    after_down_ps: TimePs = Field(alias="after_down")


class Flow(_Model):
    """`[[flow]]`: a transport connection plus the application on it."""

    name: Name | None = None
    transport: literal("transports") = "tcp"
    client: Name
    server: Name
    app: literal("apps") = "download"
    size_bytes: SizeBytes | None = Field(None, alias="size")
    start_ps: TimePs = Field(0, alias="start")
    stop_ps: TimePs | None = Field(None, alias="stop")
    cc: str | None = None
    cc_mode: literal("cc_modes") = "reference"
    cc_params: dict[str, CcParam] | None = None
    scheduler: literal("schedulers") | None = None
    path_manager: literal("path_managers") | None = None
    subflows: SubflowCount | None = None
    backup_interfaces: list[Name] | None = None
    max_subflows: SubflowLimit | None = None
    max_add_addr_accepted: SubflowLimit | None = None
    add_addr_timeout_ps: PositiveTimePs | None = Field(None, alias="add_addr_timeout")
    dss_checksum: StrictBool | None = None
    ecn: StrictBool = False
    opportunistic_retransmission: StrictBool | None = None
    penalisation: StrictBool | None = None
    client_interfaces: list[Name] | None = None
    # Pinned paths: link names from client to server, one per subflow in the order the client opens them.
    paths: list[list[Name]] | None = None
    mss_bytes: PositiveSizeBytes | None = Field(None, alias="mss")
    rcvbuf_bytes: PositiveSizeBytes | None = Field(None, alias="rcvbuf")
    sndbuf_bytes: PositiveSizeBytes | None = Field(None, alias="sndbuf")
    delayed_ack: StrictBool = True
    delayed_ack_timeout_ps: TimePs = Field(40 * 10**9, alias="delayed_ack_timeout")
    sack: StrictBool = True
    min_rto_ps: TimePs | None = Field(None, alias="min_rto")
    initial_cwnd_pkts: PacketCount = Field(10, alias="initial_cwnd")
    initial_ssthresh_pkts: PacketCount | None = Field(None, alias="initial_ssthresh")
    time_wait_ps: TimePs | None = Field(None, alias="time_wait")
    timestamps: StrictBool | None = None
    rack: StrictBool | None = None
    variant: literal("cmt_variants") | None = None
    rtx_policy: literal("rtx_policies") | None = None
    rbuf_bytes: PositiveSizeBytes | None = Field(None, alias="rbuf")
    # SMOS: the online choice per chunk, or TSNs numbered a trunk at a time by predicted arrival.
    smos_schedule: literal("smos_schedules") | None = None
    sizes_bytes: list[SizeBytes] | None = Field(None, alias="sizes")
    repeat: Count | None = None
    gap_ps: TimePs | None = Field(None, alias="gap")
    new_connection: StrictBool | None = None
    request_size_bytes: PositiveSizeBytes | None = Field(None, alias="request_size")
    size_distribution: SizeDistribution | None = None
    think: Literal["fixed", "exponential"] | None = None
    arrivals: Literal["closed", "poisson"] | None = None
    arrival_rate: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | None = None
    load: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] | None = None
    load_link: Name | None = None
    rate_bps: RateBps | None = Field(None, alias="rate")
    packet_bytes: PositiveSizeBytes | None = Field(None, alias="packet")
    on_ps: PositiveTimePs | None = Field(None, alias="on")
    off_ps: TimePs | None = Field(None, alias="off")
    on_app: Literal["download", "upload", "cbr"] | None = None
    bitrate_bps: RateBps | None = Field(None, alias="bitrate")
    chunk_ps: PositiveTimePs | None = Field(None, alias="chunk")
    handover: Handover | None = None
    # Up to this much after `start`, drawn per flow from the seed (default: simulation.start_jitter).
    start_jitter_ps: TimePs | None = Field(None, alias="start_jitter")

    def keys_set(self) -> set[str]:
        """The keys written for this flow (file names, not field names)."""
        fields = type(self).model_fields
        return {fields[name].alias or name for name in self.model_fields_set}

    @property
    def effective_cc(self) -> str | None:
        return self.cc if self.cc is not None else DEFAULT_CC[self.transport]

    @property
    def effective_on_app(self) -> str:
        if self.on_app is not None:
            return self.on_app
        return "cbr" if self.transport == "udp" else "download"


class Threshold(_Model):
    """One row of the mpsshetn controller's size thresholds."""

    below_bytes: PositiveSizeBytes | None = Field(None, alias="below")
    gap: Annotated[float, Field(ge=0.0)]


class Controller(_Model):
    """`[controller]`: the SDN controller application."""

    app: str
    latency_ps: TimePs = Field(0, alias="latency")
    thresholds: list[Threshold] | None = None
    # Packets a switch holds while their packet-ins are answered (None: the engine's 256).
    buffer_pkts: Annotated[StrictInt, Field(ge=0, le=units.MAX_QUEUE_PACKETS)] | None = Field(None, alias="buffer")
    # Idle timeout of the rules the apps install (None: 10 s; "0s": they never expire).
    idle_timeout_ps: TimePs | None = Field(None, alias="idle_timeout")


_TCP_FLAG_BITS = {"fin": 0x01, "syn": 0x02, "rst": 0x04, "psh": 0x08, "ack": 0x10, "ece": 0x40, "cwr": 0x80}


def _tcp_flags(value: str) -> str:
    """Open vSwitch's `+syn-ack` form: each flag set (+) or clear (-)."""
    if not isinstance(value, str) or not re.fullmatch(r"([+-][a-zA-Z]+)+", value):
        raise ValueError(f"bad tcp_flags {value!r}: expected e.g. '+syn-ack'")
    for flag in re.findall(r"[+-]([a-zA-Z]+)", value):
        if flag.lower() not in _TCP_FLAG_BITS:
            raise ValueError(f"unknown TCP flag {flag!r}: expected one of {', '.join(_TCP_FLAG_BITS)}")
    return value


def tcp_flags_mask_value(value: str) -> tuple[int, int]:
    """`+syn-ack` as (mask, value) over the flag bits."""
    mask = bits = 0
    for sign, flag in re.findall(r"([+-])([a-zA-Z]+)", value):
        bit = _TCP_FLAG_BITS[flag.lower()]
        mask |= bit
        bits = bits | bit if sign == "+" else bits & ~bit
    return mask, bits


class RuleMatch(_Model):
    """`match = {...}` of a `[[rule]]`: every key left out is a wildcard."""

    in_link: str | None = Field(None, alias="in")
    src: str | None = None
    dst: str | None = None
    sport: Annotated[StrictInt, Field(ge=0, le=65535)] | None = None
    dport: Annotated[StrictInt, Field(ge=0, le=65535)] | None = None
    proto: Literal["tcp", "udp", "sctp"] | None = None
    tcp_flags: Annotated[str, AfterValidator(_tcp_flags)] | None = None
    mptcp: Literal["mp_capable", "mp_join"] | None = None
    token: Annotated[StrictInt, Field(ge=0, lt=2**32)] | None = None


class Rule(_Model):
    """`[[rule]]`: a static flow-table rule at a switch."""

    switch: str
    priority: Annotated[StrictInt, Field(ge=0, le=65535)] = 0x8000
    match: RuleMatch = Field(default_factory=RuleMatch)
    action: Literal["output", "group", "drop", "controller"]
    links: list[str] = Field(default_factory=list)
    idle_timeout_ps: PositiveTimePs | None = Field(None, alias="idle_timeout")
    hard_timeout_ps: PositiveTimePs | None = Field(None, alias="hard_timeout")


class Record(_Model):
    """`[record]`: which time series to record."""

    interfaces: StrictBool = True
    subflows: StrictBool = True
    pcap: list[str] = Field(default_factory=list)
    # The links each 5-tuple's packets crossed, in the summary's `paths` (off: costs nothing).
    paths: StrictBool = False
    # The SDN controller's decisions, in the summary's controller.decisions.
    controller: StrictBool = False


@dataclass
class _Source:
    """Where a scenario came from, to turn a key path into `FILE:LINE: KEY`."""

    file: str | None
    lines: LineMap = field(default_factory=dict)
    base_dir: Path = field(default_factory=Path)
    default_name: str = "scenario"
    labels: dict[Loc, str] = field(default_factory=dict)  # builder: table path -> call
    # Tables [topology] and [traffic] generated: ("link", 7) -> ("topology",), where their problems belong.
    rewrites: dict[Loc, Loc] = field(default_factory=dict)

    def rewritten(self, loc: Loc) -> Loc:
        """Where a problem of a generated table belongs: in the generator's table."""
        target = self.rewrites.get(tuple(loc[:2]))
        return loc if target is None else (*target, *loc[2:])

    def error(self, loc: Loc, message: str, applied: dict[Loc, str] | None = None) -> ScenarioError:
        loc = self.rewritten(loc)
        for oloc, label in (applied or {}).items():
            if loc[: len(oloc)] == oloc:
                return ScenarioError(message, file=self.file, key=label)
        # The most specific builder call wins: an event's call over its link's.
        for lloc, label in sorted(self.labels.items(), key=lambda item: -len(item[0])):
            if loc[: len(lloc)] == lloc:
                return ScenarioError(message, file=label, key=format_loc(loc[len(lloc) :]) or None)
        line = lookup_line(self.lines, loc) if loc else None
        return ScenarioError(message, file=self.file, line=line, key=format_loc(loc) or None)


class Scenario(_Model):
    """A validated scenario. Quantities are integers in base units (see field names)."""

    format: Annotated[StrictInt, AfterValidator(_known_format)] = FORMAT_VERSION
    name: str | None = None
    description: str = ""
    simulation: Simulation
    nodes: list[Node] = Field(default_factory=list, alias="node")
    links: list[Link] = Field(default_factory=list, alias="link")
    flows: list[Flow] = Field(default_factory=list, alias="flow")
    controller: Controller | None = None
    rules: list[Rule] = Field(default_factory=list, alias="rule")
    record: Record = Field(default_factory=Record)
    # Generators (mpsim.datacenter), expanded into node, link and flow tables before validation.
    topology: Topology | None = None
    traffic: Traffic | None = None

    _source: _Source = PrivateAttr(default_factory=lambda: _Source(file=None))
    _raw: dict = PrivateAttr(default_factory=dict)
    _overrides: list = PrivateAttr(default_factory=list)
    _traces: dict = PrivateAttr(default_factory=dict)
    _applied: dict = PrivateAttr(default_factory=dict)

    @property
    def path(self) -> Path | None:
        """The file this scenario was read from (None for a builder)."""
        f = self._source.file
        return Path(f) if f is not None and not self._source.labels else None

    @property
    def seed(self) -> int:
        return self.simulation.seed

    @property
    def duration_s(self) -> float:
        return self.simulation.duration_ps / units.PS_PER_S

    def with_overrides(self, overrides: dict[str, Any] | list[str] | None) -> Scenario:
        """A new scenario: this one's data with more `--set`-style overrides applied."""
        return _build(self._raw, self._source, self._overrides + _normalize(overrides, self._source))

    def check_runnable(self) -> None:
        """Raises a ScenarioError (file, line, key) for what the scenario
        contract allows but this version cannot run yet."""
        from .checks import not_runnable

        problems = not_runnable(self)
        if problems:
            raise _first_error(self._source, problems, self._applied)

    def error_at(self, loc: Loc, message: str) -> ScenarioError:
        """A ScenarioError naming the file, line and key of `loc`."""
        return self._source.error(loc, message, self._applied)

    def notes(self) -> list[str]:
        """Remarks on a valid scenario, one line each as `FILE:LINE: KEY: note: ...`."""
        from .checks import notes

        return [str(self._source.error(loc, message, self._applied)) for loc, message in notes(self)]

    def to_engine_spec(self) -> dict[str, Any]:
        """The plain JSON document of docs/engine-spec.md."""
        from .spec import engine_spec

        return engine_spec(self, self._traces)


# ------------------------------------------------------------ loading


def load_scenario(path: str | Path, overrides: dict[str, Any] | list[str] | None = None) -> Scenario:
    """Read, override and validate a TOML or YAML scenario file."""
    path = Path(path)
    data, lines = _read(path)
    source = _Source(file=str(path), lines=lines, base_dir=path.parent, default_name=path.stem)
    return _build(data, source, _normalize(overrides, source))


def scenario_from_dict(
    data: dict,
    *,
    file: str | None = None,
    base_dir: str | Path = ".",
    overrides: dict[str, Any] | list[str] | None = None,
    lines: LineMap | None = None,
    labels: dict[Loc, str] | None = None,
) -> Scenario:
    """Validate scenario data already in memory (the builder's path)."""
    source = _Source(
        file=file,
        lines=lines or {},
        base_dir=Path(base_dir),
        default_name=Path(file).stem if file and not labels else "scenario",
        labels=labels or {},
    )
    return _build(data, source, _normalize(overrides, source))


def _normalize(overrides: Any, source: _Source) -> list[ov.Override]:
    try:
        return ov.normalize(overrides)
    except ScenarioError as exc:
        raise ScenarioError(exc.message, file=source.file, key=exc.key) from None


def _read(path: Path) -> tuple[dict, LineMap]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("no such file", file=path) from None
    except UnicodeDecodeError:
        raise ScenarioError("not UTF-8 text", file=path) from None
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", file=path) from None
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return _read_toml(text, path)
    if suffix in (".yaml", ".yml"):
        return _read_yaml(text, path)
    raise ScenarioError(f"unknown file type {suffix or '(none)'!r}: expected .toml, .yaml or .yml", file=path)


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")


def _read_toml(text: str, path: Path) -> tuple[dict, LineMap]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "malformed TOML"
        match = _TOML_POSITION.search(message)
        line = int(match.group(1)) if match else getattr(exc, "lineno", None)
        if message.endswith("(at end of document)"):
            line = text.count("\n") + 1
            message = message[: -len("(at end of document)")].rstrip()
        message = _TOML_POSITION.sub("", message)
        raise ScenarioError(f"invalid TOML: {message}", file=path, line=line) from None
    return data, toml_lines(text)


def _read_yaml(text: str, path: Path) -> tuple[dict, LineMap]:
    try:
        node = yaml.compose(text, Loader=YamlLoader)
        data = yaml.load(text, Loader=YamlLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        message = exc.problem or exc.context or "malformed YAML"
        raise ScenarioError(f"invalid YAML: {message}", file=path, line=line) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"invalid YAML: {exc}", file=path) from None
    try:
        lines = yaml_lines(node)
    except DuplicateKey as exc:
        key = format_loc(exc.loc)
        raise ScenarioError(f"duplicate key '{exc.loc[-1]}'", file=path, line=exc.line, key=key) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError("expected a mapping of keys at the top level", file=path, line=1)
    null = _first_null(data, ())
    if null is not None:
        # TOML, the canonical form, has no null: a key is given or left out.
        raise ScenarioError(
            "null is not a value: leave the key out for its default",
            file=path, line=lookup_line(lines, null), key=format_loc(null),
        )  # fmt: skip
    return data, lines


def _first_null(node: Any, loc: Loc) -> Loc | None:
    """The key path of the first null in `node`, in file order, if any."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found = (*loc, key) if value is None else _first_null(value, (*loc, key))
        if found is not None:
            return found
    return None


def _fill_default_names(data: dict) -> None:
    """Unnamed links become `a-b`, unnamed flows `flowN`, so overrides can name them."""
    for link in data.get("link", []) if isinstance(data.get("link"), list) else []:
        between = link.get("between") if isinstance(link, dict) else None
        if isinstance(link, dict) and "name" not in link and isinstance(between, list) and len(between) == 2:
            link["name"] = f"{between[0]}-{between[1]}"
    for n, flow in enumerate(data.get("flow", []) if isinstance(data.get("flow"), list) else []):
        if isinstance(flow, dict) and "name" not in flow:
            flow["name"] = f"flow{n + 1}"


def _build(raw: dict, source: _Source, overrides: list[ov.Override]) -> Scenario:
    data = copy.deepcopy(raw)
    _fill_default_names(data)
    base = copy.deepcopy(data)
    try:
        applied = ov.apply(data, overrides, Scenario)
    except ScenarioError as exc:
        raise ScenarioError(exc.message, file=source.file, key=exc.key) from None
    source = _expand_generators(data, source, applied)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _first_error(source, pydantic_problems(exc), applied) from None
    if scenario.name is None:
        scenario.name = source.default_name
    from .checks import check_scenario

    problems, traces = check_scenario(scenario, source.base_dir)
    if problems:
        raise _first_error(source, problems, applied)
    from .checks import scenario_warnings

    for loc, message in scenario_warnings(scenario, data):
        warnings.warn(ScenarioWarning(str(source.error(loc, f"warning: {message}", applied))), stacklevel=3)
    scenario._source = source
    scenario._raw = base
    scenario._overrides = list(overrides)
    scenario._traces = traces
    scenario._applied = applied
    return scenario


def _expand_generators(data: dict, source: _Source, applied: dict[Loc, str]) -> _Source:
    """Nodes, links and flows of `[topology]` and `[traffic]` added to `data`;
    the source that reports their problems at those tables."""
    if "topology" not in data and "traffic" not in data:
        return source
    from dataclasses import replace

    from .datacenter import expand

    sim = data.get("simulation")
    seed = sim.get("seed", 1) if isinstance(sim, dict) else 1
    expansion, problems = expand(data, seed if isinstance(seed, int) and not isinstance(seed, bool) else 1)
    if problems:
        raise _first_error(source, problems, applied)
    return replace(source, rewrites=expansion.rewrites)


def _first_error(source: _Source, problems: list[tuple[Loc, str]], applied: dict[Loc, str]) -> ScenarioError:
    if source.rewrites:
        # The tables a generator made share its lines: one problem each, not one per table.
        problems = list(dict.fromkeys((source.rewritten(loc), message) for loc, message in problems))
    loc, message = problems[0]
    if len(problems) > 1:
        more = len(problems) - 1
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return source.error(loc, message, applied)


def pydantic_problems(exc: ValidationError) -> list[tuple[Loc, str]]:
    """(key path, message) for each pydantic error, in plain words; unknown keys first.

    A misspelt key is also a missing one: naming the misspelling is the useful error.
    """
    errors = sorted(exc.errors(include_url=False), key=lambda err: err["type"] != "extra_forbidden")
    return [(tuple(err["loc"]), _pydantic_message(err)) for err in errors]


_TYPE_WORDS = {
    "bool_type": "expected true or false",
    "int_type": "expected a whole number",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "list_type": "expected an array",
    "tuple_type": "expected an array",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
}


_BOUND_WORDS = {
    "less_than_equal": ("at most", "le"),
    "greater_than_equal": ("at least", "ge"),
    "less_than": ("less than", "lt"),
    "greater_than": ("greater than", "gt"),
}


def _pydantic_message(err: dict) -> str:
    kind, loc = err["type"], tuple(err["loc"])
    if kind == "extra_forbidden":
        return ov.unknown_key_message(str(loc[-1]), ov.model_at(Scenario, loc[:-1]))
    if kind == "missing":
        return f"missing required key '{loc[-1]}'"
    if kind == "literal_error":
        return f"bad value {err['input']!r}: expected {err['ctx']['expected']}"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    if kind in _BOUND_WORDS:
        word, key = _BOUND_WORDS[kind]
        return f"must be {word} {err['ctx'][key]}, got {err['input']!r}"
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]}, got {err['input']!r}"
    if kind in ("too_long", "too_short") and loc and loc[-1] == "between":
        return f"expected two node names, got {err['input']!r}"
    return str(err["msg"])


# The generator tables subclass the models above (a Traffic is a Flow's keys plus a matrix).
from .datacenter import Topology, Traffic  # noqa: E402

Scenario.model_rebuild()
