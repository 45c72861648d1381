"""Semantic checks of a scenario: what field types alone cannot say.

Names unique, references resolved (nodes, links, interfaces), keys that fit
the flow's app and transport, congestion controllers that exist for the
transport, bandwidth trace files that exist and parse, a path between each
flow's hosts, flows that start before the end. Each problem is a (key path,
message) pair; scenario.py turns the first into a ScenarioError. Warnings
(`scenario_warnings`: valid values that are probably not meant) are pairs
too, turned into ScenarioWarnings; `random_sources` says what in a
scenario draws from the seed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import datafile, units
from .locate import Loc
from .scenario import (
    CC_BY_TRANSPORT,
    CC_PARAMS,
    CONTROLLER_APPS,
    DEFAULT_MTU_BYTES,
    DEFAULT_PATH_MANAGER,
    LINUX_COUPLED_CC,
    Flow,
    Link,
    Rule,
    Scenario,
)

from .vocabulary import VOCABULARY
from .workloads import CdfError, load_bandwidth_bps, load_cdf

Problem = tuple[Loc, str]
ETHERNET_HEADER_BYTES = 14
VEGAS_DEFAULTS: dict[str, float] = VOCABULARY["cc_param_defaults"]["vegas"]  # Linux tcp_vegas.c
Trace = list[list[int]]

APP_KEYS: dict[str, set[str]] = {
    "download": {"size"},
    "upload": {"size"},
    "http": {"sizes", "repeat", "gap", "new_connection", "request_size", "size_distribution", "think", "arrivals",
             "arrival_rate", "load", "load_link"},
    "cbr": {"rate", "packet"},
    "onoff": {"on", "off", "on_app"},
    "video": {"bitrate", "chunk"},
}
ALL_APP_KEYS = set().union(*APP_KEYS.values())
TRANSPORT_KEYS = {
    "scheduler": ("mptcp",),
    "path_manager": ("mptcp",),
    "subflows": ("mptcp",),
    "backup_interfaces": ("mptcp",),
    "max_subflows": ("mptcp",),
    "max_add_addr_accepted": ("mptcp",),
    "add_addr_timeout": ("mptcp",),
    "dss_checksum": ("mptcp",),
    "opportunistic_retransmission": ("mptcp",),
    "penalisation": ("mptcp",),
    "variant": ("cmt",),
    "rbuf": ("cmt",),
    "handover": ("tcp",),
}
# Keys that apply to one MPTCP path manager only.
PATH_MANAGER_KEYS = {
    "subflows": "ndiffports",
    "max_subflows": "endpoints",
    "max_add_addr_accepted": "endpoints",
}
NOT_FOR_UDP = {
    "cc", "cc_mode", "cc_params", "sack", "delayed_ack", "delayed_ack_timeout",
    "min_rto", "initial_cwnd", "rcvbuf", "sndbuf",
}  # fmt: skip


# Plain numbers that are valid (base units) but almost always a forgotten
# unit, as the scenario contract says: a rate under 1 kbps, a delay of 10 s or more.
IMPLAUSIBLE_RATE_BPS = 1000
IMPLAUSIBLE_DELAY_S = 10
RATE_KEYS = ("bandwidth", "rate", "bitrate")
DELAY_KEYS = ("delay", "jitter")
_PLAIN_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")


class TraceError(ValueError):
    """A bandwidth trace file that cannot be read."""


def check_scenario(scenario: Scenario, base_dir: Path) -> tuple[list[Problem], dict[str, Trace]]:
    """All problems found (in file order, roughly) and the loaded bandwidth traces."""
    checker = _Checker(scenario, base_dir)
    checker.run()
    return checker.problems, checker.traces


def notes(scenario: Scenario) -> list[Problem]:
    """What `mpsim validate` points out without refusing: MPTCP flows whose
    linux mode makes them much less aggressive than the Reno they compete with."""
    found: list[Problem] = []
    for i, flow in enumerate(scenario.flows):
        cc = flow.effective_cc
        if flow.transport == "mptcp" and flow.cc_mode == "linux" and cc in LINUX_COUPLED_CC:
            quirk = " and, at RTTs of 30 ms and more, a 4x too small alpha (srtt_us precision)" if cc == "lia" else ""
            found.append((
                ("flow", i, "cc_mode"),
                f"note: linux mode follows the out-of-tree MPTCP kernel's {cc}, which counts ACK events "
                f"where Reno counts packets{quirk}: under delayed ACKs it gets about 0.6-0.7 of a Reno "
                f"flow's throughput on a lossy path (docs/validation.md); cc_mode = \"reference\" is the published rule",
            ))  # fmt: skip
    return found


def scenario_warnings(scenario: Scenario, data: dict[str, Any]) -> list[Problem]:
    """Valid values that are probably not meant: implausible plain numbers in
    `data` (the scenario as read, overrides applied), and link events and a
    sample interval beyond the end of the run (meant, perhaps, when a run is
    shortened with `--set simulation.duration=...`)."""
    found = _bare_numbers(data)
    end_ps = scenario.simulation.duration_ps
    if scenario.simulation.sample_interval_ps > end_ps:
        found.append((
            ("simulation", "sample_interval"),
            f"sample_interval {units.format_time(scenario.simulation.sample_interval_ps)} is longer than the run "
            f"({units.format_time(end_ps)}): no time series will be sampled",
        ))  # fmt: skip
    for i, link in enumerate(scenario.links):
        for j, event in enumerate(link.events):
            if event.at_ps >= end_ps:
                found.append((
                    ("link", i, "events", j, "at"),
                    f"the event at {units.format_time(event.at_ps)} is at or after the end of the run "
                    f"({units.format_time(end_ps)}): it never happens",
                ))  # fmt: skip
    return found


def _plain_number(value: Any) -> float | None:
    """The value if it is a number written without a unit, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _PLAIN_NUMBER.match(value):
        return float(value)
    return None


def _shown(value: Any) -> str:
    return value.strip() if isinstance(value, str) else str(value)


def _bare_numbers(data: dict[str, Any]) -> list[Problem]:
    found: list[Problem] = []

    def check(table: Any, loc: Loc) -> None:
        if not isinstance(table, dict):
            return
        for key in RATE_KEYS:
            n = _plain_number(table.get(key))
            if n is not None and 0 < n < IMPLAUSIBLE_RATE_BPS:
                v = _shown(table[key])
                message = f'{v} is {v} bit/s: a plain number is in bit/s; write a unit, e.g. "{v}Mbps"'
                found.append(((*loc, key), message))
        for key in DELAY_KEYS:
            n = _plain_number(table.get(key))
            if n is not None and n >= IMPLAUSIBLE_DELAY_S:
                v = _shown(table[key])
                message = f'{v} is {v} s: a plain number is in seconds; write a unit, e.g. "{v}ms"'
                found.append(((*loc, key), message))

    links = data.get("link") if isinstance(data.get("link"), list) else []
    for i, link in enumerate(links):
        check(link, ("link", i))
        if not isinstance(link, dict):
            continue
        for which in ("a_to_b", "b_to_a"):
            check(link.get(which), ("link", i, which))
        events = link.get("events") if isinstance(link.get("events"), list) else []
        for j, event in enumerate(events):
            check(event, ("link", i, "events", j))
    flows = data.get("flow") if isinstance(data.get("flow"), list) else []
    for i, flow in enumerate(flows):
        check(flow, ("flow", i))
    return found


def random_sources(scenario: Scenario) -> list[str]:
    """What in the scenario draws from the seed, in words; empty when every
    seed gives the same results (the seed then changes only MPTCP keys)."""
    found: list[str] = []
    for link in scenario.links:
        for which in ("a_to_b", "b_to_a"):
            d = link.direction(which)
            if d["loss"].to_spec()["model"] != "none":
                found.append(f"link {link.name}: loss")
            if d["jitter_ps"] > 0:
                found.append(f"link {link.name}: jitter")
        for event in link.events:
            if event.loss is not None and event.loss.to_spec()["model"] != "none":
                found.append(f"link {link.name}: loss")
            if event.jitter_ps:
                found.append(f"link {link.name}: jitter")
        # Keys of other parts of the contract that draw from the seed.
        if getattr(link, "qdisc", None) in ("red",):
            found.append(f"link {link.name}: qdisc red")
    for flow in scenario.flows:
        jitter = flow.start_jitter_ps if flow.start_jitter_ps is not None else scenario.simulation.start_jitter_ps
        if jitter:
            found.append(f"flow {flow.name}: start_jitter")
    if getattr(scenario.simulation, "forwarding", None) == "ecmp" or any(
        getattr(node, "forwarding", None) == "ecmp" for node in scenario.nodes
    ):
        found.append("forwarding: ecmp")
    if getattr(scenario, "traffic", None) is not None and scenario.traffic.seed is None:
        found.append(f"traffic: the {scenario.traffic.matrix} matrix")
    return list(dict.fromkeys(found))


# The apps the cmt association runs: every byte-stream app (cbr sends
# datagrams and needs transport = "udp", which validation checks).
CMT_APPS = ("download", "upload", "http", "onoff", "video")


def not_runnable(scenario: Scenario) -> list[Problem]:
    """Parts of a valid scenario this version cannot simulate yet: cmt
    flows with an app the association does not run."""
    problems: list[Problem] = [
        (
            ("flow", i, "app"),
            f"app '{flow.app}' over transport 'cmt' is not available in this version (cmt runs {' and '.join(CMT_APPS)})",
        )
        for i, flow in enumerate(scenario.flows)
        if flow.transport == "cmt" and flow.app not in CMT_APPS
    ]
    return problems


def load_bandwidth_trace(path: Path, shown: str) -> Trace:
    """Read a two-column CSV (time, rate) into [[t_ps, bps], ...]; `shown` names it in errors."""
    text = datafile.read_text(path, shown, "trace file", TraceError)
    rows: Trace = []
    for lineno, fields in datafile.rows(text):
        try:
            if len(fields) != 2:
                raise units.UnitError(f"expected two columns (time, rate), got {len(fields)}")
            row = [units.parse_time(fields[0]), units.parse_rate(fields[1])]
        except units.UnitError as exc:
            if not rows and datafile.looks_like_header(fields):
                continue
            raise TraceError(f"{shown}:{lineno}: {exc}") from None
        if rows and row[0] < rows[-1][0]:
            raise TraceError(f"{shown}:{lineno}: times must not decrease")
        rows.append(row)
    if not rows:
        raise TraceError(f"trace file '{shown}' has no rows")
    return rows


class _Checker:
    def __init__(self, scenario: Scenario, base_dir: Path) -> None:
        self.sc = scenario
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self.traces: dict[str, Trace] = {}
        self.nodes = {node.name: node for node in scenario.nodes}
        self.links = {link.name: link for link in scenario.links}
        self.links_of: dict[str, list[str]] = defaultdict(list)
        self.first_link: dict[str, Link] = {}
        for link in scenario.links:
            for end in set(link.between):
                self.links_of[end].append(link.name or "")
                self.first_link.setdefault(end, link)
        self._fabric: dict[str, str] | None = None

    def add(self, loc: Loc, message: str) -> None:
        self.problems.append((loc, message))

    def run(self) -> None:
        self._check_nodes()
        for i, link in enumerate(self.sc.links):
            self._check_link(i, link)
        self._unique("flow", [f.name for f in self.sc.flows])
        for i, flow in enumerate(self.sc.flows):
            self._check_flow(i, flow)
        self._check_record()
        self._check_controller()
        for i, rule in enumerate(self.sc.rules):
            self._check_rule(i, rule)

    def _unique(self, table: str, names: list[str | None]) -> None:
        first: dict[str, int] = {}
        for i, name in enumerate(names):
            if name is None:
                continue
            if name in first:
                self.add((table, i, "name"), f"{table} name '{name}' is already used by {table}[{first[name]}]")
            else:
                first[name] = i

    def _check_nodes(self) -> None:
        self._unique("node", [n.name for n in self.sc.nodes])

    # ---------------------------------------------------------- links

    def _check_link(self, i: int, link: Link) -> None:
        if i == 0:
            self._unique("link", [lk.name for lk in self.sc.links])
        for j, end in enumerate(link.between):
            if end not in self.nodes:
                self.add(("link", i, "between", j), f"unknown node '{end}'")
        if link.between[0] == link.between[1]:
            self.add(("link", i, "between"), "a link needs two different nodes")
        for which in ("a_to_b", "b_to_a"):
            params = link.direction(which)
            if params["bandwidth_bps"] is None and not params["bandwidth_trace"]:
                self.add(("link", i, "bandwidth"), "missing required key 'bandwidth' (or 'bandwidth_trace')")
                break
        self._load_trace(("link", i, "bandwidth_trace"), link.bandwidth_trace)
        for which in ("a_to_b", "b_to_a"):
            over = getattr(link, which)
            if over is not None:
                self._load_trace(("link", i, which, "bandwidth_trace"), over.bandwidth_trace)
                self._check_queue(("link", i, which, "queue"), over.queue, link)
        self._check_queue(("link", i, "queue"), link.queue, link)
        for j, event in enumerate(link.events):
            self._check_queue(("link", i, "events", j, "queue"), event.queue, link)
        self._check_qdisc(i, link)
        self._check_mtu(i, link)

    def _check_mtu(self, i: int, link: Link) -> None:
        """An MTU sizes the segments of the hosts at the link's ends; between switches and
        routers there is neither fragmentation nor path MTU discovery to model."""
        kinds = [self.nodes[end].kind for end in link.between if end in self.nodes]
        if link.mtu_bytes is not None and len(kinds) == 2 and "host" not in kinds:
            self.add(("link", i, "mtu"), "mtu applies to links with a host at one end (set it on the hosts' links)")

    def _check_qdisc(self, i: int, link: Link) -> None:
        """A discipline's table goes with that discipline; RED needs its thresholds; CoDel holds
        packets, so it cannot be combined with netem-style jitter."""
        used = set()
        for which in ("a_to_b", "b_to_a"):
            params = link.direction(which)
            qdisc = params["qdisc"]
            used.add(qdisc)
            over = getattr(link, which)
            where = ("link", i, which) if over is not None and over.qdisc is not None else ("link", i)
            if qdisc == "red" and params["qdisc_tables"]["red"] is None:
                self.add((*where, "qdisc"), "qdisc 'red' needs a red table: red = { min_th, max_th, max_p }")
            region = params["qdisc_tables"]["random_drop"]
            if qdisc == "random_drop" and region is not None and set(region.region) != set(params["queue"]):
                self.add((*where, "random_drop", "region"), "the random_drop region must be in the queue's unit (pkt or bytes)")
            if qdisc in ("codel", "fq_codel") and params["jitter_ps"]:
                self.add((*where, "qdisc"), f"qdisc '{qdisc}' cannot be combined with jitter (netem is a qdisc of its own)")
            if qdisc in ("codel", "fq_codel") and any(e.jitter_ps for e in link.events):
                self.add((*where, "qdisc"), f"qdisc '{qdisc}' cannot be combined with jitter in a link event")
            if over is not None:
                for key in ("red", "random_drop", "codel", "fq_codel"):
                    if getattr(over, key) is not None and key != qdisc:
                        self.add(("link", i, which, key), f"key '{key}' applies when qdisc = '{key}' (here '{qdisc}')")
        for key in ("red", "random_drop", "codel", "fq_codel"):
            if getattr(link, key) is not None and key not in used:
                self.add(("link", i, key), f"key '{key}' applies when qdisc = '{key}' (here '{link.qdisc or 'droptail'}')")

    def _load_trace(self, loc: Loc, shown: str | None) -> None:
        if shown is None or shown in self.traces:
            return
        try:
            self.traces[shown] = load_bandwidth_trace(self.base_dir / shown, shown)
        except TraceError as exc:
            self.add(loc, str(exc))

    def _check_queue(self, loc: Loc, queue: dict[str, int] | None, link: Link) -> None:
        # The largest frame: the MTU and its Ethernet header, or less under a set mss.
        packet = (link.mtu_bytes or DEFAULT_MTU_BYTES) + ETHERNET_HEADER_BYTES
        if self.sc.simulation.mss_bytes is not None:
            packet = min(packet, self.sc.simulation.mss_bytes + self.sc.simulation.header_bytes)
        if queue is not None and "bytes" in queue and queue["bytes"] < packet:
            self.add(loc, f"a queue of {queue['bytes']} bytes cannot hold one {packet}-byte packet")

    # ---------------------------------------------------------- flows

    def _check_flow(self, i: int, flow: Flow) -> None:
        self._check_endpoints(i, flow)
        self._check_flow_keys(i, flow)
        self._check_app(i, flow)
        self._check_cc(i, flow)
        self._check_interfaces(i, flow)
        self._check_backup_interfaces(i, flow)
        self._check_paths(i, flow)
        jitter = flow.start_jitter_ps if flow.start_jitter_ps is not None else self.sc.simulation.start_jitter_ps
        if flow.stop_ps is not None and flow.stop_ps <= flow.start_ps + jitter:
            self.add(("flow", i, "stop"), "stop must be after start" + (" plus start_jitter" if jitter else ""))
        end_ps = self.sc.simulation.duration_ps
        if flow.start_ps >= end_ps:
            self.add(
                ("flow", i, "start"),
                f"the flow starts at {units.format_time(flow.start_ps)}, at or after the end of the run "
                f"({units.format_time(end_ps)})",
            )

    def _check_endpoints(self, i: int, flow: Flow) -> None:
        for role in ("client", "server"):
            name = getattr(flow, role)
            node = self.nodes.get(name)
            if node is None:
                self.add(("flow", i, role), f"unknown node '{name}'")
            elif node.kind != "host":
                self.add(("flow", i, role), f"node '{name}' is a {node.kind}: flows run between hosts")
            elif not self.links_of.get(name):
                self.add(("flow", i, role), f"host '{name}' has no links")
        if flow.client == flow.server:
            self.add(("flow", i, "server"), "client and server are the same node")
        elif all(self.nodes.get(n) is not None and self.links_of.get(n) for n in (flow.client, flow.server)):
            if not self._has_path(flow):
                self.add(
                    ("flow", i, "server"),
                    f"no path from client '{flow.client}' to server '{flow.server}' through switches and routers "
                    "(hosts do not forward)",
                )

    def _has_path(self, flow: Flow) -> bool:
        """Whether packets from the client reach the server's address (on its
        first link, as the engine addresses it) through forwarding nodes only."""
        entry = _other_end(self.first_link[flow.server], flow.server)
        usable = flow.client_interfaces if flow.client_interfaces is not None else self.links_of[flow.client]
        if not all(name in self.links_of[flow.client] for name in usable):
            return True  # a bad interface name is the error to report
        starts = [_other_end(self.links[name], flow.client) for name in usable]
        if flow.server in starts:
            return True
        fabric = self._fabric_components()
        if entry not in fabric:
            return False
        return any(fabric.get(start) == fabric[entry] for start in starts)

    def _fabric_components(self) -> dict[str, str]:
        """Forwarding node -> a representative of its connected component among
        forwarding nodes; computed once, so the path check is linear in the flows."""
        if self._fabric is not None:
            return self._fabric
        parent = {name: name for name, node in self.nodes.items() if node.kind != "host"}

        def root(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]  # path halving
                name = parent[name]
            return name

        for link in self.sc.links:
            a, b = link.between
            if a in parent and b in parent:
                parent[root(a)] = root(b)
        self._fabric = {name: root(name) for name in parent}
        return self._fabric

    def _check_flow_keys(self, i: int, flow: Flow) -> None:
        keys = flow.keys_set()
        allowed = APP_KEYS[flow.app]
        if flow.app == "onoff":
            allowed = allowed | APP_KEYS[flow.effective_on_app]
        for key in sorted(keys & (ALL_APP_KEYS - allowed)):
            apps = " or ".join(f"'{a}'" for a, ks in APP_KEYS.items() if key in ks)
            self.add(("flow", i, key), f"key '{key}' applies only to app = {apps}, not '{flow.app}'")
        for key in sorted(keys & set(TRANSPORT_KEYS)):
            if flow.transport not in TRANSPORT_KEYS[key]:
                self.add(
                    ("flow", i, key),
                    f"key '{key}' applies only to transport = '{TRANSPORT_KEYS[key][0]}', not '{flow.transport}'",
                )
        if flow.rack and flow.cc_mode != "linux":
            self.add(
                ("flow", i, "rack"),
                "key 'rack' applies only to cc_mode = 'linux': reference mode finds losses by RFC 6675 alone",
            )
        if flow.transport == "udp":
            for key in sorted(keys & NOT_FOR_UDP):
                self.add(("flow", i, key), f"key '{key}' does not apply to transport = 'udp'")
        if flow.transport == "mptcp":
            for key, manager in PATH_MANAGER_KEYS.items():
                if key in keys and flow.path_manager != manager:
                    self.add(
                        ("flow", i, key),
                        f"key '{key}' applies only to path_manager = '{manager}', "
                        f"not '{flow.path_manager or DEFAULT_PATH_MANAGER}'",
                    )

    def _check_app(self, i: int, flow: Flow) -> None:
        cbr = flow.app == "cbr" or (flow.app == "onoff" and flow.effective_on_app == "cbr")
        if cbr and flow.transport != "udp":
            self.add(("flow", i, "transport"), f"app 'cbr' needs transport = 'udp', not '{flow.transport}'")
        if flow.transport == "udp" and not cbr:
            self.add(("flow", i, "app"), "transport 'udp' carries only app = 'cbr' (or 'onoff' with on_app = 'cbr')")
        needs = {"cbr": ["rate"], "onoff": ["on", "off"]}.get(flow.app, [])
        if flow.app == "http":
            self._check_workload(i, flow)
        if flow.app == "onoff" and cbr:
            needs = needs + ["rate"]
        keys = flow.keys_set()
        for key in needs:
            if key not in keys:
                self.add(("flow", i, key), f"app '{flow.app}' needs key '{key}'")
        if flow.sizes_bytes is not None:
            if not flow.sizes_bytes:
                self.add(("flow", i, "sizes"), "sizes must list at least one size")
            for j, size in enumerate(flow.sizes_bytes):
                if size <= 0:
                    self.add(("flow", i, "sizes", j), "request size must be positive")
        if flow.size_bytes == 0:
            self.add(("flow", i, "size"), "size must be positive (omit it to run until the end)")

    def _check_workload(self, i: int, flow: Flow) -> None:
        """Sizes from a list or a distribution; keys of the closed or the open loop."""
        keys = flow.keys_set()
        if ("sizes" in keys) == ("size_distribution" in keys):
            which = "both" if "sizes" in keys else "neither"
            self.add(("flow", i, "sizes"), f"app 'http' needs one of 'sizes' and 'size_distribution' (here {which})")
        dist = flow.size_distribution
        if dist is not None and dist.kind == "empirical" and dist.file is not None:
            self._load_cdf(("flow", i, "size_distribution", "file"), dist.file)
        open_loop = flow.arrivals == "poisson"
        for key in ("gap", "think", "new_connection"):
            if open_loop and key in keys:
                self.add(("flow", i, key), f"key '{key}' applies to arrivals = 'closed' (each open-loop request has its own connection)")
        for key in ("arrival_rate", "load", "load_link"):
            if not open_loop and key in keys:
                self.add(("flow", i, key), f"key '{key}' applies only to arrivals = 'poisson'")
        if open_loop:
            self._check_load(i, flow, keys)

    def _check_load(self, i: int, flow: Flow, keys: set[str]) -> None:
        if ("arrival_rate" in keys) == ("load" in keys):
            self.add(("flow", i, "arrivals"), "arrivals = 'poisson' needs one of 'arrival_rate' (per second) and 'load'")
        if "load_link" in keys and "load" not in keys:
            self.add(("flow", i, "load_link"), "key 'load_link' applies with 'load'")
        if flow.load is None:
            return
        if flow.load_link is not None and flow.load_link not in self.links:
            self.add(("flow", i, "load_link"), f"unknown link '{flow.load_link}'")
            return
        name, bandwidth = load_bandwidth_bps(flow, self.sc)
        if bandwidth is None:
            self.add(("flow", i, "load"), f"link '{name}' has no fixed bandwidth: give 'arrival_rate' instead of 'load'")

    def _load_cdf(self, loc: Loc, shown: str) -> None:
        if shown in self.traces:
            return
        try:
            self.traces[shown] = load_cdf(self.base_dir / shown, shown)  # type: ignore[assignment]
        except CdfError as exc:
            self.add(loc, str(exc))

    def _check_cc(self, i: int, flow: Flow) -> None:
        if flow.transport == "udp":
            return
        cc = flow.effective_cc
        choices = CC_BY_TRANSPORT[flow.transport]
        if cc not in choices:
            self.add(
                ("flow", i, "cc"),
                f"congestion control {cc!r} is not available for {flow.transport}: expected {', '.join(choices)}",
            )
        elif flow.cc_params:
            self._check_cc_params(i, cc, flow.cc_params)

    def _check_cc_params(self, i: int, cc: str, params: dict[str, float]) -> None:
        allowed = CC_PARAMS.get(cc, {})
        for key, value in params.items():
            loc = ("flow", i, "cc_params", key)
            if key not in allowed:
                keys = f"its keys are {', '.join(allowed)}" if allowed else "it takes none"
                self.add(loc, f"{key!r} is not a parameter of congestion control {cc!r} ({keys})")
            elif not math.isfinite(value) or value < allowed[key]:
                self.add(loc, f"{key} must be a number of at least {allowed[key]:g}, got {value}")
        if cc == "vegas":
            # Vegas grows below alpha and shrinks above beta queued packets.
            alpha = params.get("alpha", VEGAS_DEFAULTS["alpha"])
            beta = params.get("beta", VEGAS_DEFAULTS["beta"])
            if beta < alpha:
                key = "beta" if "beta" in params else "alpha"
                self.add(("flow", i, "cc_params", key), f"beta ({beta:g}) must be at least alpha ({alpha:g})")

    def _check_interfaces(self, i: int, flow: Flow) -> None:
        if flow.client_interfaces is None:
            return
        if not flow.client_interfaces:
            self.add(("flow", i, "client_interfaces"), "client_interfaces must name at least one link")
        self._check_client_links(i, flow, "client_interfaces", flow.client_interfaces, usable=None)

    def _check_paths(self, i: int, flow: Flow) -> None:
        """Each pinned path is a chain of links from the client to the server
        through switches and routers, visiting no node twice."""
        for j, path in enumerate(flow.paths or []):
            if not path:
                self.add(("flow", i, "paths", j), "a path needs at least one link")
                continue
            problem = self._path_problem(flow, path)
            if problem is not None:
                k, message = problem
                self.add(("flow", i, "paths", j, k) if k is not None else ("flow", i, "paths", j), message)

    def _path_problem(self, flow: Flow, path: list[str]) -> tuple[int | None, str] | None:
        """(index of the offending link, message) for a path that is not one, else None."""
        at, seen = flow.client, {flow.client}
        for k, name in enumerate(path):
            link = self.links.get(name)
            if link is None:
                return k, f"unknown link '{name}'"
            if at not in link.between:
                return k, f"link '{name}' does not continue the path from '{at}'"
            node = self.nodes.get(at)
            if k > 0 and node is not None and node.kind == "host":
                return k, f"the path runs through host '{at}'; hosts do not forward"
            at = _other_end(link, at)
            if at in seen:
                return k, f"the path visits '{at}' twice"
            seen.add(at)
        if at != flow.server:
            return None, f"the path ends at '{at}', not at the server '{flow.server}'"
        return None

    def _check_backup_interfaces(self, i: int, flow: Flow) -> None:
        """Backup interfaces are client links the flow may use (MPTCP's MP_JOIN B flag)."""
        if flow.backup_interfaces is None or flow.transport != "mptcp":
            return  # on another transport the key itself is the error
        self._check_client_links(i, flow, "backup_interfaces", flow.backup_interfaces, usable=flow.client_interfaces)

    def _check_client_links(self, i: int, flow: Flow, key: str, names: list[str], usable: list[str] | None) -> None:
        """Each of `names` is a link attached to the client, listed once (and in `usable` if given)."""
        attached = self.links_of.get(flow.client, [])
        seen: set[str] = set()
        for j, name in enumerate(names):
            loc = ("flow", i, key, j)
            if name not in self.links:
                self.add(loc, f"unknown link '{name}'")
            elif name not in attached:
                self.add(loc, f"link '{name}' is not attached to client '{flow.client}'")
            elif usable is not None and name not in usable:
                self.add(loc, f"link '{name}' is not in client_interfaces")
            elif name in seen:
                self.add(loc, f"link '{name}' is listed twice")
            seen.add(name)

    # ---------------------------------------------------------- record, controller

    def _check_record(self) -> None:
        for j, iface in enumerate(self.sc.record.pcap):
            node, sep, link = iface.partition(":")
            loc = ("record", "pcap", j)
            if not sep:
                self.add(loc, f"expected NODE:LINK, got {iface!r}")
            elif node not in self.nodes:
                self.add(loc, f"unknown node '{node}'")
            elif link not in self.links_of.get(node, []):
                self.add(loc, f"node '{node}' has no link '{link}'")

    def _check_rule(self, i: int, rule: Rule) -> None:
        node = self.nodes.get(rule.switch)
        if node is None:
            self.add(("rule", i, "switch"), f"unknown node '{rule.switch}'")
            return
        if node.kind != "switch":
            self.add(("rule", i, "switch"), f"'{rule.switch}' is a {node.kind}: rules go to switches")
            return
        _check_rule_links(self, i, rule)
        m = rule.match
        if m.in_link is not None and m.in_link not in self.links_of.get(rule.switch, []):
            self.add(("rule", i, "match", "in"), f"link '{m.in_link}' does not touch switch '{rule.switch}'")
        for key, iface in (("src", m.src), ("dst", m.dst)):
            if iface is None:
                continue
            host, sep, link = iface.partition(":")
            if not sep:
                self.add(("rule", i, "match", key), f"expected HOST:LINK, got {iface!r}")
            elif host not in self.nodes or self.nodes[host].kind != "host":
                self.add(("rule", i, "match", key), f"unknown host '{host}'")
            elif link not in self.links_of.get(host, []):
                self.add(("rule", i, "match", key), f"host '{host}' has no link '{link}'")
        if m.token is not None and m.mptcp != "mp_join":
            self.add(("rule", i, "match", "token"), "a token needs mptcp = 'mp_join'")
        if rule.action == "controller" and self.sc.controller is None:
            self.add(("rule", i, "action"), "action 'controller' needs a [controller]")

    def _check_controller(self) -> None:
        ctl = self.sc.controller
        if ctl is None:
            return
        python_app = ctl.app.startswith("python:") and len(ctl.app.split(":")) == 3
        if ctl.app not in CONTROLLER_APPS and not python_app:
            expected = ", ".join(CONTROLLER_APPS)
            self.add(("controller", "app"), f"bad value {ctl.app!r}: expected {expected} or python:module:Class")
        if ctl.thresholds is None:
            return
        if ctl.app != "mpsshetn":
            self.add(("controller", "thresholds"), "key 'thresholds' applies only to app = 'mpsshetn'")
        previous = 0
        for j, row in enumerate(ctl.thresholds):
            last = j == len(ctl.thresholds) - 1
            if row.below_bytes is None and not last:
                self.add(("controller", "thresholds", j), "only the last threshold may omit 'below'")
            elif row.below_bytes is not None and row.below_bytes <= previous:
                self.add(("controller", "thresholds", j, "below"), "thresholds must increase")
            previous = row.below_bytes or previous


def _check_rule_links(checker: _Checker, i: int, rule: Rule) -> None:
    wanted = {"output": "exactly one link", "group": "one link or more", "drop": "no links", "controller": "no links"}
    count = len(rule.links)
    ok = {"output": count == 1, "group": count >= 1}.get(rule.action, count == 0)
    if not ok:
        checker.add(("rule", i, "links"), f"action '{rule.action}' takes {wanted[rule.action]}, got {count}")
    for j, name in enumerate(rule.links):
        if name not in checker.links_of.get(rule.switch, []):
            checker.add(("rule", i, "links", j), f"link '{name}' does not touch switch '{rule.switch}'")


def _other_end(link: Link, node: str) -> str:
    a, b = link.between
    return b if a == node else a
