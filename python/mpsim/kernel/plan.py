"""The kernel test bed as data: namespaces, devices, addresses, routes,
shapers and MPTCP endpoints computed from a scenario, with no system call.

Addresses and routes are the simulator's (crates/mpsim-net/src/routing.rs):
the interface on side s of link L is 10.(L>>8).(L&255).(s+1)/24; routers
and switches forward to every host address by the shortest path in hops,
ties broken by the lowest link index; hosts never forward. A multihomed
host gets one routing table per interface and a rule `from ADDR`, so a
socket bound to an address leaves through that address's link (Linux's
source policy routing, as MPTCP subflows need).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..scenario import (DEFAULT_MAX_ADD_ADDR_ACCEPTED, DEFAULT_MAX_SUBFLOWS, DEFAULT_NDIFFPORTS_SUBFLOWS,
                        DEFAULT_RCVBUF_BYTES, Scenario)

_IFNAME = re.compile(r"^[A-Za-z0-9_-]{1,15}$")
HTB_BURST_BYTES = 1514  # one full frame: htb sends frames one at a time, serialised
TABLE_BASE = 100  # per-interface routing tables of multihomed hosts: 100, 101, ...
NDIFFPORTS_BASE_PORT = 20001  # the server's extra ports of ndiffports: 20001, 20002, ...


def iface_mac(link: int, side: int) -> str:
    """A fixed, locally administered MAC per interface, so neighbours can be set up front."""
    return f"02:00:0a:{(link >> 8) & 0xFF:02x}:{link & 0xFF:02x}:{side + 1:02x}"


def iface_addr(link: int, side: int) -> str:
    """The address of side `side` (0 = a) of link `link`, as the simulator numbers it."""
    return f"10.{(link >> 8) & 0xFF}.{link & 0xFF}.{side + 1}"


@dataclass
class End:
    """One end of a link: its node, namespace, device and address."""

    node: str
    netns: str
    dev: str
    addr: str


@dataclass
class Direction:
    rate_bps: int | None
    queue: dict[str, int]
    delay_ns: int
    jitter_ns: int
    loss: str  # the element's loss argument: none | P | g:...


@dataclass
class LinkPlan:
    index: int
    name: str
    ends: tuple[End, End]
    dirs: tuple[Direction, Direction]  # a->b (shaped at a), b->a (shaped at b)
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Plan:
    run_id: str
    netns: dict[str, str]  # node -> namespace
    kinds: dict[str, str]
    links: list[LinkPlan]
    ip: dict[str, list[str]]  # namespace -> `ip -batch` lines (addresses, routes, rules, mptcp)
    sysctls: dict[str, dict[str, str]]  # namespace -> {sysctl path: value}

    def host_ifaces(self, node: str) -> list[tuple[str, End]]:
        """(link name, end) of every interface of `node`, in link order."""
        return [(lp.name, end) for lp in self.links for end in lp.ends if end.node == node]

    def addr_names(self) -> dict[str, tuple[str, str]]:
        """address -> (node, link name): to name the interfaces of a subflow."""
        return {end.addr: (end.node, lp.name) for lp in self.links for end in lp.ends}


def loss_arg(loss: Any) -> str:
    spec = loss.to_spec()
    if spec["model"] == "none":
        return "none"
    if spec["model"] == "bernoulli":
        return repr(float(spec["p"]))
    return "g:" + ":".join(repr(float(spec[k])) for k in ("p_good_bad", "p_bad_good", "loss_good", "loss_bad"))


def make_plan(scenario: Scenario, run_id: str) -> Plan:
    kinds = {n.name: n.kind for n in scenario.nodes}
    netns = {n.name: f"{run_id}-{n.name}" for n in scenario.nodes}
    links = [_link_plan(i, link, netns) for i, link in enumerate(scenario.links)]
    plan = Plan(run_id, netns, kinds, links, {ns: [] for ns in netns.values()}, {})
    for node, kind in kinds.items():
        ns = netns[node]
        plan.sysctls[ns] = _sysctls(kind)
        if kind == "host":
            plan.ip[ns] += _host_routes(plan, node)
        else:
            plan.ip[ns] += _forwarding_routes(plan, node)
    for lp in links:
        for side, end in enumerate(lp.ends):
            far = lp.ends[1 - side]
            # Permanent neighbours: the simulator has no ARP, and a first packet
            # must not wait a round trip over the link for its resolution.
            plan.ip[end.netns][:0] = [
                f"addr add {end.addr}/24 dev {end.dev}",
                f"neigh replace {far.addr} lladdr {iface_mac(lp.index, 1 - side)} dev {end.dev} nud permanent",
            ]
    _mptcp_endpoints(plan, scenario)
    _scenario_sysctls(plan, scenario)
    return plan


def _scenario_sysctls(plan: Plan, scenario: Scenario) -> None:
    """Per-namespace sysctls from the scenario's keys, on both ends of the
    flows that set them: the receive buffer's autotuning ceiling
    (tcp_rmem's maximum, as `simulation.rcvbuf`), ECN, SACK and timestamps,
    and the MPTCP checksum and ADD_ADDR retransmission timeout."""
    sim = scenario.simulation
    if sim.rcvbuf_bytes != DEFAULT_RCVBUF_BYTES:
        for node, kind in plan.kinds.items():
            if kind == "host":
                plan.sysctls[plan.netns[node]]["net/ipv4/tcp_rmem"] = f"4096 131072 {sim.rcvbuf_bytes}"
    for flow in scenario.flows:
        settings = {}
        if flow.ecn:
            settings["net/ipv4/tcp_ecn"] = "1"
        if not flow.sack:
            settings["net/ipv4/tcp_sack"] = "0"
        if flow.timestamps is False:
            settings["net/ipv4/tcp_timestamps"] = "0"
        if flow.transport == "mptcp" and flow.dss_checksum is not None:
            settings["net/mptcp/checksum_enabled"] = "1" if flow.dss_checksum else "0"
        if flow.transport == "mptcp" and flow.add_addr_timeout_ps is not None:
            settings["net/mptcp/add_addr_timeout"] = str(max(1, round(flow.add_addr_timeout_ps / 1e12)))
        for node in (flow.client, flow.server):
            plan.sysctls[plan.netns[node]].update(settings)


def _link_plan(i: int, link: Any, netns: dict[str, str]) -> LinkPlan:
    name = link.name or f"link{i}"
    dev = name if _IFNAME.match(name) and name != "lo" else f"l{i}"
    ends = tuple(End(node, netns[node], dev, iface_addr(i, side)) for side, node in enumerate(link.between))
    dirs = []
    for which in ("a_to_b", "b_to_a"):
        d = link.direction(which)
        dirs.append(Direction(d["bandwidth_bps"], d["queue"], d["delay_ps"] // 1000, d["jitter_ps"] // 1000,
                              loss_arg(d["loss"])))
    events = [e.to_spec() for e in sorted(link.events, key=lambda e: e.at_ps)]
    return LinkPlan(i, name, (ends[0], ends[1]), (dirs[0], dirs[1]), events)


def _sysctls(kind: str) -> dict[str, str]:
    common = {
        "net/ipv4/conf/all/rp_filter": "0",
        "net/ipv4/conf/default/rp_filter": "0",
        "net/ipv6/conf/all/disable_ipv6": "1",
        "net/ipv6/conf/default/disable_ipv6": "1",
    }
    if kind != "host":
        return {**common, "net/ipv4/ip_forward": "1"}
    # A fresh namespace has no cached metrics; say so anyway so repeated runs stay independent.
    return {**common, "net/ipv4/tcp_no_metrics_save": "1"}


def _far_end(lp: LinkPlan, node_side: int) -> End:
    return lp.ends[1 - node_side]


def _host_routes(plan: Plan, node: str) -> list[str]:
    """Main table: a default route over the first interface; with more than
    one interface, a table and a `from` rule per interface as well."""
    lines: list[str] = []
    ifaces = [(lp, side) for lp in plan.links for side, end in enumerate(lp.ends) if end.node == node]
    for k, (lp, side) in enumerate(ifaces):
        end, far = lp.ends[side], _far_end(lp, side)
        forwards = plan.kinds[far.node] != "host"
        if k == 0 and forwards:
            lines.append(f"route add default via {far.addr} dev {end.dev}")
        if len(ifaces) > 1:
            table = TABLE_BASE + k
            subnet = end.addr.rsplit(".", 1)[0] + ".0/24"
            lines.append(f"route add {subnet} dev {end.dev} src {end.addr} table {table}")
            if forwards:
                lines.append(f"route add default via {far.addr} dev {end.dev} table {table}")
            lines.append(f"rule add from {end.addr} table {table} priority {TABLE_BASE + k}")
    return lines


def _forwarding_routes(plan: Plan, node: str) -> list[str]:
    """A /32 route to every host address not on a directly attached link,
    by breadth-first search from that address's link (routing.rs's
    bfs_towards): the first discovery of a node fixes its next hop."""
    lines = []
    for dest_lp in plan.links:
        for side, owner in enumerate(dest_lp.ends):
            if plan.kinds[owner.node] != "host":
                continue
            hop = _next_hop(plan, dest_lp, side, node)
            if hop is not None:
                lines.append(f"route add {owner.addr}/32 via {hop[0]} dev {hop[1]}")
    return lines


def _next_hop(plan: Plan, dest_lp: LinkPlan, side: int, node: str) -> tuple[str, str] | None:
    """(gateway address, device) at `node` towards the host address on
    `side` of `dest_lp`; None when directly attached or unreachable."""
    far = dest_lp.ends[1 - side].node
    if plan.kinds[far] == "host" or far == node:
        return None
    seen = {dest_lp.ends[side].node, far}
    queue = deque([far])
    while queue:
        x = queue.popleft()
        for lp in plan.links:
            for s, end in enumerate(lp.ends):
                if end.node != x:
                    continue
                m_end = lp.ends[1 - s]
                if m_end.node in seen or plan.kinds[m_end.node] == "host":
                    continue
                seen.add(m_end.node)
                if m_end.node == node:
                    return end.addr, m_end.dev
                queue.append(m_end.node)
    return None


def _mptcp_endpoints(plan: Plan, scenario: Scenario) -> None:
    """`ip mptcp` limits and endpoints from the path-manager keys: the
    client's other addresses open subflows (`subflow`, plus `fullmesh` for
    the fullmesh manager), backups get `backup`, a multihomed server
    announces its other addresses (`signal`)."""
    done: set[str] = set()
    for flow in scenario.flows:
        if flow.transport != "mptcp":
            continue
        pm = flow.path_manager or "fullmesh"
        if pm == "ndiffports":
            _ndiffports(plan, flow, done)
            continue
        backups = set(flow.backup_interfaces or ())
        client_ifaces = plan.host_ifaces(flow.client)
        if flow.client_interfaces:
            allowed = set(flow.client_interfaces)
            client_ifaces = [(n, e) for n, e in client_ifaces if n in allowed]
        subflows = flow.max_subflows if flow.max_subflows is not None else DEFAULT_MAX_SUBFLOWS
        accepted = flow.max_add_addr_accepted
        if accepted is None:
            accepted = DEFAULT_MAX_ADD_ADDR_ACCEPTED
        if pm == "fullmesh":
            # The simulator's fullmesh opens a subflow per pair of addresses: give the kernel room for them.
            subflows = max(subflows, len(client_ifaces) * max(1, len(plan.host_ifaces(flow.server))) - 1)
            accepted = max(accepted, len(plan.host_ifaces(flow.server)) - 1)
        for host, flags, ifaces, limits in (
            (flow.client, "subflow" + (" fullmesh" if pm == "fullmesh" else ""), client_ifaces[1:],
             (subflows, accepted)),
            (flow.server, "signal", plan.host_ifaces(flow.server)[1:], (subflows, accepted)),
        ):
            ns = plan.netns[host]
            if ns in done:
                continue
            done.add(ns)
            lines = [f"mptcp limits set subflows {min(limits[0], 8)} add_addr_accepted {min(limits[1], 8)}"]
            for name, end in ifaces:
                backup = " backup" if name in backups else ""
                lines.append(f"mptcp endpoint add {end.addr} dev {end.dev} {flags}{backup}")
            plan.ip[ns] += lines


def _ndiffports(plan: Plan, flow: Any, done: set[str]) -> None:
    """ndiffports (n subflows over one address pair) as upstream Linux can
    say it: n - 1 `signal` endpoints on the server's first address, each
    with a port of its own, which the client joins (Linux 6.18 refuses a
    second `subflow` endpoint on one address, and `port` needs `signal`).
    The subflows thus differ by the server's port where the simulator's
    differ by the client's: the same number of distinct 5-tuples."""
    extra = (flow.subflows or DEFAULT_NDIFFPORTS_SUBFLOWS) - 1
    server_addr = plan.host_ifaces(flow.server)[0][1].addr
    for host, endpoints in ((flow.client, []), (flow.server, [
            f"mptcp endpoint add {server_addr} port {NDIFFPORTS_BASE_PORT + k} signal" for k in range(extra)])):
        ns = plan.netns[host]
        if ns in done:
            continue
        done.add(ns)
        plan.ip[ns] += [f"mptcp limits set subflows {min(extra, 8)} add_addr_accepted {min(extra, 8)}", *endpoints]
