"""The engine spec: a validated Scenario as the JSON document of docs/engine-spec.md.

Everything here is already validated; this module only fills defaults and
lays the data out as the Rust side (`crates/mpsim/src/spec.rs`) reads it.
Key order follows the document so the JSON is easy to compare by eye.

An mptcp flow carries six more keys (scheduler, path_manager, subflows,
backup_interfaces, max_subflows, max_add_addr_accepted), with the defaults
filled in; tcp and udp flows never carry them, so their documents stay as
they were. A cmt flow carries `variant` and `rbuf_bytes` (null when not set).
"""

from __future__ import annotations

from typing import Any

from .scenario import (
    DEFAULT_ADD_ADDR_TIMEOUT_PS,
    DEFAULT_MAX_ADD_ADDR_ACCEPTED,
    DEFAULT_MAX_SUBFLOWS,
    DEFAULT_NDIFFPORTS_SUBFLOWS,
    DEFAULT_PATH_MANAGER,
    DEFAULT_SCHEDULER,
    Flow,
    Link,
    Node,
    Rule,
    Scenario,
    SizeDistribution,
    qdisc_spec,
    tcp_flags_mask_value,
)
from .workloads import arrival_rate_per_s

HTTP_DEFAULT_REQUEST_BYTES = 100
CBR_DEFAULT_PACKET_BYTES = 1500
VIDEO_DEFAULT_BITRATE_BPS = 2_000_000
VIDEO_DEFAULT_CHUNK_PS = 4 * 10**12


def engine_spec(scenario: Scenario, traces: dict[str, list[list[int]]]) -> dict[str, Any]:
    """The whole spec document."""
    sim = scenario.simulation
    spec: dict[str, Any] = {
        "name": scenario.name,
        "seed": sim.seed,
        "duration_ps": sim.duration_ps,
        "sample_interval_ps": sim.sample_interval_ps,
        "mss_bytes": sim.mss_bytes,
        "header_bytes": sim.header_bytes,
        "nodes": [_node_spec(n) for n in scenario.nodes],
        "links": [_link_spec(link, traces) for link in scenario.links],
        "flows": [_flow_spec(flow, scenario, traces) for flow in scenario.flows],
        "record": {
            "interfaces": scenario.record.interfaces,
            "subflows": scenario.record.subflows,
            "pcap": list(scenario.record.pcap),
        },
    }
    if scenario.record.paths:
        spec["record"]["paths"] = True
    if scenario.record.controller:
        spec["record"]["controller"] = True
    # Only what differs from the engine's defaults, so documents of scenarios without these keys stay as they were.
    if sim.forwarding != "shortest":
        spec["forwarding"] = sim.forwarding
    if sim.reroute:
        spec["reroute"] = True
        spec["reroute_delay_ps"] = sim.reroute_delay_ps
    if scenario.rules:
        spec["rules"] = [_rule_spec(r) for r in scenario.rules]
    if scenario.controller is not None:
        ctl = scenario.controller
        spec["controller"] = {
            "app": ctl.app,
            "latency_ps": ctl.latency_ps,
            "thresholds": None
            if ctl.thresholds is None
            else [{"below_bytes": t.below_bytes, "gap": t.gap} for t in ctl.thresholds],
        }
        if ctl.buffer_pkts is not None:
            spec["controller"]["buffer_pkts"] = ctl.buffer_pkts
        if ctl.idle_timeout_ps is not None:
            spec["controller"]["idle_timeout_ps"] = ctl.idle_timeout_ps
    return spec


def _rule_spec(rule: Rule) -> dict[str, Any]:
    m = rule.match
    return {
        "switch": rule.switch,
        "priority": rule.priority,
        "in_link": m.in_link,
        "src": m.src,
        "dst": m.dst,
        "sport": m.sport,
        "dport": m.dport,
        "proto": None if m.proto is None else {"tcp": 6, "udp": 17, "sctp": 132}[m.proto],
        "tcp_flags": None if m.tcp_flags is None else list(tcp_flags_mask_value(m.tcp_flags)),
        "mptcp": m.mptcp,
        "token": m.token,
        "action": rule.action,
        "links": list(rule.links),
        "idle_timeout_ps": rule.idle_timeout_ps,
        "hard_timeout_ps": rule.hard_timeout_ps,
    }


def _node_spec(node: Node) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": node.name, "kind": node.kind}
    if node.forwarding is not None:
        spec["forwarding"] = node.forwarding
    return spec


def _link_spec(link: Link, traces: dict[str, list[list[int]]]) -> dict[str, Any]:
    return {
        "name": link.name,
        "a": link.between[0],
        "b": link.between[1],
        "strip_mptcp": link.strip_mptcp,
        "a_to_b": _direction_spec(link, "a_to_b", traces),
        "b_to_a": _direction_spec(link, "b_to_a", traces),
        # Stable sort: events at the same time keep file order.
        "events": [e.to_spec() for e in sorted(link.events, key=lambda e: e.at_ps)],
        **({"mtu_bytes": link.mtu_bytes} if link.mtu_bytes is not None else {}),
    }


def _direction_spec(link: Link, which: str, traces: dict[str, list[list[int]]]) -> dict[str, Any]:
    params = link.direction(which)
    trace = traces[params["bandwidth_trace"]] if params["bandwidth_trace"] else None
    bandwidth = params["bandwidth_bps"]
    if bandwidth is None and trace:
        bandwidth = trace[0][1]  # a trace without a fixed rate starts at its first rate
    spec = {
        "bandwidth_bps": bandwidth,
        "delay_ps": params["delay_ps"],
        "queue": params["queue"],
        "loss": params["loss"].to_spec(),
        "jitter_ps": params["jitter_ps"],
        "bandwidth_trace": [list(row) for row in trace] if trace else None,
    }
    if params["qdisc"] != "droptail":  # the engine's default
        spec["qdisc"] = qdisc_spec(params["qdisc"], params["qdisc_tables"])
    return spec


def _rcvbuf_autotuned(flow: Flow, sim: Any) -> bool:
    """Linux autotunes a receive buffer that no `rcvbuf` fixes (no SO_RCVBUF,
    so no SOCK_RCVBUF_LOCK): in linux mode, for TCP and MPTCP, when neither
    the flow nor `[simulation]` sets one."""
    fixed = flow.rcvbuf_bytes is not None or "rcvbuf_bytes" in sim.model_fields_set
    return flow.cc_mode == "linux" and flow.transport in ("tcp", "mptcp") and not fixed


def _flow_spec(flow: Flow, scenario: Scenario, files: dict[str, Any]) -> dict[str, Any]:
    sim = scenario.simulation
    spec: dict[str, Any] = {
        "name": flow.name,
        "transport": flow.transport,
        "client": flow.client,
        "server": flow.server,
        "app": app_spec(flow, scenario, files),
        "start_ps": flow.start_ps,
        "stop_ps": flow.stop_ps,
        "cc": flow.effective_cc,
        "cc_mode": flow.cc_mode,
        "mss_bytes": flow.mss_bytes if flow.mss_bytes is not None else sim.mss_bytes,
        "rcvbuf_bytes": flow.rcvbuf_bytes if flow.rcvbuf_bytes is not None else sim.rcvbuf_bytes,
        "sndbuf_bytes": flow.sndbuf_bytes,
        "sack": flow.sack,
        "delayed_ack": flow.delayed_ack,
        "delayed_ack_ps": flow.delayed_ack_timeout_ps,
        "min_rto_ps": flow.min_rto_ps,
        "initial_cwnd_pkts": flow.initial_cwnd_pkts,
        "initial_ssthresh_pkts": flow.initial_ssthresh_pkts,
        "time_wait_ps": flow.time_wait_ps,
        "timestamps": flow.timestamps,
        "rack": flow.rack,
        "client_interfaces": list(flow.client_interfaces) if flow.client_interfaces is not None else None,
        "handover_after_down_ps": flow.handover.after_down_ps if flow.handover is not None else None,
    }
    if flow.ecn:  # off is the engine's default
        spec["ecn"] = True
    if _rcvbuf_autotuned(flow, sim):  # only when on, so other documents stay as they were
        spec["rcvbuf_auto"] = True
    if flow.paths is not None:  # only when set, so documents without it stay as they were
        spec["paths"] = [list(path) for path in flow.paths]
    if flow.cc_params:
        spec["cc_params"] = {key: float(value) for key, value in flow.cc_params.items()}
    start_jitter_ps = flow.start_jitter_ps if flow.start_jitter_ps is not None else sim.start_jitter_ps
    if start_jitter_ps:  # only when set, so documents without it stay as they were
        spec["start_jitter_ps"] = start_jitter_ps
    if flow.transport == "udp":
        # No congestion control on UDP; the engine's `cc` is a string, so leave the key out.
        del spec["cc"]
    if flow.transport == "mptcp":
        spec.update(mptcp_spec(flow))
    if flow.transport == "cmt":  # only cmt flows carry them, so other documents stay as they were
        spec["variant"] = flow.variant
        spec["rbuf_bytes"] = flow.rbuf_bytes
        if flow.rtx_policy is not None:  # absent when not set, so existing documents stay byte-identical
            spec["rtx_policy"] = flow.rtx_policy
        if flow.smos_schedule is not None:  # the same
            spec["smos_schedule"] = flow.smos_schedule
    return spec


def mptcp_spec(flow: Flow) -> dict[str, Any]:
    """The MPTCP keys of one flow, defaults filled; a key that does not apply to the path manager is null."""
    manager = flow.path_manager or DEFAULT_PATH_MANAGER
    ndiffports = manager == "ndiffports"
    endpoints = manager == "endpoints"
    scheduler = flow.scheduler or DEFAULT_SCHEDULER
    # The out-of-tree kernel's receive-buffer mechanisms; upstream Linux has neither.
    out_of_tree = scheduler != "upstream"
    keys = {
        "scheduler": scheduler,
        "path_manager": manager,
        "subflows": (flow.subflows or DEFAULT_NDIFFPORTS_SUBFLOWS) if ndiffports else None,
        "backup_interfaces": list(flow.backup_interfaces or []),
        "max_subflows": _or(flow.max_subflows, DEFAULT_MAX_SUBFLOWS) if endpoints else None,
        "max_add_addr_accepted": _or(flow.max_add_addr_accepted, DEFAULT_MAX_ADD_ADDR_ACCEPTED) if endpoints else None,
        "add_addr_timeout_ps": _or(flow.add_addr_timeout_ps, DEFAULT_ADD_ADDR_TIMEOUT_PS),
        "dss_checksum": bool(flow.dss_checksum),
        "opportunistic_retransmission": _or(flow.opportunistic_retransmission, out_of_tree),
        "penalisation": _or(flow.penalisation, out_of_tree),
    }
    if _msk_sndbuf_autotuned(flow, scheduler):  # only when on, so other documents stay as they were
        keys["msk_sndbuf_auto"] = True
    return keys


def _msk_sndbuf_autotuned(flow: Flow, scheduler: str) -> bool:
    """Upstream Linux bounds the data not yet DATA_ACKed by the MPTCP socket's
    send buffer, `tcp_wmem[0]` plus the subflows' (`__mptcp_sync_sndbuf`),
    unless SO_SNDBUF fixes it: with the upstream scheduler in linux mode, when
    the flow sets no `sndbuf`."""
    return scheduler == "upstream" and flow.cc_mode == "linux" and flow.sndbuf_bytes is None


def _or(value: int | None, default: int) -> int:
    return default if value is None else value  # 0 is a value, not a missing one


def app_spec(flow: Flow, scenario: Scenario, files: dict[str, Any]) -> dict[str, Any]:
    """The `app` object of one flow, defaults filled; `files` holds what the
    scenario's files gave (an empirical size CDF by its path)."""
    if flow.app in ("download", "upload"):
        return {"kind": flow.app, "size_bytes": flow.size_bytes}
    if flow.app == "http":
        return _http_spec(flow, scenario, files)
    if flow.app == "cbr":
        return _cbr_spec(flow)
    if flow.app == "onoff":
        inner = flow.effective_on_app
        inner_spec = _cbr_spec(flow) if inner == "cbr" else {"kind": inner, "size_bytes": flow.size_bytes}
        return {"kind": "onoff", "on_ps": flow.on_ps, "off_ps": flow.off_ps, "inner": inner_spec}
    return {
        "kind": "video",
        "bitrate_bps": flow.bitrate_bps if flow.bitrate_bps is not None else VIDEO_DEFAULT_BITRATE_BPS,
        "chunk_ps": flow.chunk_ps if flow.chunk_ps is not None else VIDEO_DEFAULT_CHUNK_PS,
    }


def _http_spec(flow: Flow, scenario: Scenario, files: dict[str, Any]) -> dict[str, Any]:
    dist = flow.size_distribution
    cdf = files.get(dist.file) if dist is not None and dist.file is not None else None
    spec: dict[str, Any] = {
        "kind": "http",
        "sizes_bytes": list(flow.sizes_bytes or []),
        "repeat": flow.repeat if flow.repeat is not None else 1,
        "gap_ps": flow.gap_ps if flow.gap_ps is not None else 0,
        "new_connection": flow.new_connection if flow.new_connection is not None else True,
        "request_bytes": flow.request_size_bytes or HTTP_DEFAULT_REQUEST_BYTES,
    }
    if dist is not None:
        spec["size_distribution"] = _size_dist_spec(dist, cdf)
        spec["max_size_bytes"] = dist.cap_bytes
        spec["requests"] = flow.repeat  # None: until the flow stops
    if flow.think is not None:
        spec["think"] = flow.think
    if flow.arrivals == "poisson":
        spec["arrival_rate_per_s"] = arrival_rate_per_s(flow, scenario, cdf)
        spec["requests"] = flow.repeat if dist is not None or flow.repeat is not None else None
        if dist is None and flow.repeat is not None:
            spec["requests"] = len(flow.sizes_bytes or [1]) * flow.repeat
    return spec


def _size_dist_spec(dist: SizeDistribution, cdf: Any) -> dict[str, Any]:
    if dist.kind == "uniform":
        return {"kind": "uniform", "min_bytes": dist.min_bytes, "max_bytes": dist.max_bytes}
    if dist.kind == "exponential":
        return {"kind": "exponential", "mean_bytes": float(dist.mean_bytes or 0)}
    if dist.kind == "pareto":
        return {"kind": "pareto", "scale_bytes": dist.pareto_scale_bytes, "shape": float(dist.shape or 0)}
    return {"kind": "empirical", "points": [[size, prob] for size, prob in cdf or []]}


def _cbr_spec(flow: Flow) -> dict[str, Any]:
    return {
        "kind": "cbr",
        "rate_bps": flow.rate_bps,
        "packet_bytes": flow.packet_bytes or CBR_DEFAULT_PACKET_BYTES,
    }
