"""What the kernel backend cannot honour, found before anything is set up.

Each problem is a (key path, message) pair, turned into one
`FILE:LINE: KEY: message` line by the scenario's own error machinery, as
`check_runnable` does for the simulator. Values equal to what Linux does
anyway are accepted; everything else the kernel cannot express is refused.
"""

from __future__ import annotations

import shutil
from typing import Any

from ..scenario import Flow, Link, Scenario
from ..spec import CBR_DEFAULT_PACKET_BYTES

Loc = tuple[Any, ...]
Problem = tuple[Loc, str]

KERNEL_CC = {"reno", "cubic", "bbr"}  # TCP_CONGESTION names built into this kernel
# Upstream MPTCP runs one uncoupled controller per subflow; the coupled ones do not exist in Linux.
KERNEL_MPTCP_CC = {"reno", "cubic", "bbr"}
KERNEL_PATH_MANAGERS = {"default", "fullmesh", "endpoints", "ndiffports"}
KERNEL_APPS = {"download", "upload", "http", "video", "onoff"}
# A 1500-byte MTU less the IPv4 and UDP headers: a larger datagram leaves as IP fragments.
MAX_DATAGRAM_PAYLOAD_BYTES = 1472
LINUX_MSS_BYTES = 1448  # MTU 1500 less IPv4, TCP and timestamp headers
LINUX_HEADER_BYTES = 66  # Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12
# Flow keys whose only honoured value is Linux's own (key -> accepted values).
_LINUX_VALUES: dict[str, tuple[Any, ...]] = {
    "delayed_ack": (True,),
    "delayed_ack_timeout_ps": (40 * 10**9,),
    "initial_cwnd_pkts": (10,),
    "initial_ssthresh_pkts": (None,),
    "min_rto_ps": (None,),
    "time_wait_ps": (None,),
    "opportunistic_retransmission": (None,),
    "penalisation": (None,),
    "handover": (None,),
    "size_distribution": (None,),
    "think": (None, "fixed"),
    "arrivals": (None, "closed"),
}


def problems(scenario: Scenario) -> list[Problem]:
    """Every key of `scenario` the kernel backend cannot run, in file order."""
    found: list[Problem] = []
    found += _simulation(scenario)
    for i, link in enumerate(scenario.links):
        found += _link(("link", i), link)
    for i, flow in enumerate(scenario.flows):
        found += _flow(("flow", i), flow)
    found += _shared_path_managers(scenario)
    if scenario.controller is not None:
        found.append((("controller", "app"), "SDN controllers have no kernel counterpart; run it in the simulator"))
    for i, _rule in enumerate(getattr(scenario, "rules", [])):
        found.append((("rule", i), "flow-table rules have no kernel counterpart; run it in the simulator"))
    if scenario.record.pcap and shutil.which("tcpdump") is None:
        found.append((("record", "pcap"), "capture on the kernel needs tcpdump (package tcpdump)"))
    return found


def _simulation(scenario: Scenario) -> list[Problem]:
    sim = scenario.simulation
    found: list[Problem] = []
    # Without `mss` the simulator, like the kernel, sizes segments from the MTU.
    if sim.mss_bytes is not None and sim.mss_bytes != LINUX_MSS_BYTES:
        found.append((("simulation", "mss"), f"the kernel's segment size is {LINUX_MSS_BYTES} B on a 1500 B MTU"))
    for i, link in enumerate(scenario.links):
        if getattr(link, "mtu_bytes", None) not in (None, 1500):
            found.append((("link", i, "mtu"), "the kernel backend keeps the interfaces' 1500 B MTU"))
    if sim.header_bytes != LINUX_HEADER_BYTES:
        found.append((("simulation", "header_bytes"), f"real frames carry {LINUX_HEADER_BYTES} B of headers"))
    for key in ("forwarding", "reroute"):
        if getattr(sim, key, None) not in (None, "shortest", False):
            found.append((("simulation", key), "the kernel backend installs static shortest-path routes only"))
    return found


def _link(loc: Loc, link: Link) -> list[Problem]:
    found: list[Problem] = []
    for which in ("a_to_b", "b_to_a"):
        d = link.direction(which)
        where = (*loc, which) if getattr(link, which) is not None else loc
        if d["qdisc"] != "droptail":
            found.append(((*where, "qdisc"), f"qdisc '{d['qdisc']}' is not available here (no loadable modules)"))
        if d["bandwidth_trace"] is not None:
            found.append(((*where, "bandwidth_trace"), "capacity traces are not replayed by the kernel backend"))
    if link.strip_mptcp:
        found.append(((*loc, "strip_mptcp"), "the kernel backend has no middlebox that strips options"))
    for j, event in enumerate(link.events):
        if event.backup is not None:
            found.append(((*loc, "events", j, "backup"), "backup changes by event are not applied on the kernel"))
        if event.up is not None and event.direction != "both":
            found.append(((*loc, "events", j, "direction"), "a link goes down or up in both directions on the kernel"))
    return found


def _flow(loc: Loc, flow: Flow) -> list[Problem]:
    found: list[Problem] = []
    if flow.transport == "udp":
        return _datagrams(loc, flow)
    if flow.transport not in ("tcp", "mptcp"):
        found.append(((*loc, "transport"), f"transport '{flow.transport}' has no kernel implementation here"))
        return found
    if flow.app not in KERNEL_APPS:
        found.append(((*loc, "app"), f"app '{flow.app}' is not run by the kernel backend "
                      "(download, upload, http, video; cbr and onoff over udp)"))
    elif flow.app == "onoff":
        # The simulator's off switch stops a connection at once (`pause`); a
        # kernel socket keeps sending what its buffer holds.
        found.append(((*loc, "on_app"), f"on/off of a '{flow.effective_on_app}' connection is not run by the "
                      "kernel backend (its send buffer drains after the switch); on/off cbr over udp is"))
    cc = flow.effective_cc
    allowed = KERNEL_CC if flow.transport == "tcp" else KERNEL_MPTCP_CC
    if cc not in allowed:
        what = "coupled controller" if flow.transport == "mptcp" else "controller"
        found.append(((*loc, "cc"), f"{what} '{cc}' is not in Linux (available: {', '.join(sorted(allowed))})"))
    if flow.cc_params:
        found.append(((*loc, "cc_params"), "controller parameters are not settable per socket in Linux"))
    if flow.transport == "mptcp":
        found += _mptcp(loc, flow)
    for field_name, accepted in _LINUX_VALUES.items():
        if getattr(flow, field_name) not in accepted:
            key = type(flow).model_fields[field_name].alias or field_name
            found.append(((*loc, key), "not expressible on the kernel backend (Linux does its own)"))
    return found


def _datagrams(loc: Loc, flow: Flow) -> list[Problem]:
    """A udp flow: cbr, or cbr in on/off periods, in datagrams that fit one frame."""
    found: list[Problem] = []
    if flow.app not in ("cbr", "onoff") or flow.effective_on_app != "cbr":
        found.append(((*loc, "app"), f"app '{flow.app}' over udp is not run by the kernel backend (cbr, onoff)"))
    packet = flow.packet_bytes or CBR_DEFAULT_PACKET_BYTES
    if packet > MAX_DATAGRAM_PAYLOAD_BYTES:
        found.append(((*loc, "packet"), f"a {packet} B datagram is fragmented on the kernel's 1500 B MTU "
                      f"(at most {MAX_DATAGRAM_PAYLOAD_BYTES} B; the default is {CBR_DEFAULT_PACKET_BYTES} B)"))
    return found


def _mptcp(loc: Loc, flow: Flow) -> list[Problem]:
    found: list[Problem] = []
    if flow.scheduler not in (None, "default", "upstream"):
        found.append(((*loc, "scheduler"), f"scheduler '{flow.scheduler}' is not in upstream Linux (only 'default')"))
    pm = flow.path_manager or "fullmesh"
    if pm not in KERNEL_PATH_MANAGERS:
        found.append(((*loc, "path_manager"), f"path manager '{pm}' cannot be expressed by `ip mptcp endpoint`"))
    return found


def _shared_path_managers(scenario: Scenario) -> list[Problem]:
    """`ip mptcp` endpoints and limits belong to a namespace, not a flow: two
    MPTCP flows from one host must agree on them."""
    seen: dict[str, tuple[Any, ...]] = {}
    found: list[Problem] = []
    for i, flow in enumerate(scenario.flows):
        if flow.transport != "mptcp":
            continue
        settings = (flow.path_manager or "fullmesh", flow.max_subflows, flow.max_add_addr_accepted,
                    tuple(flow.backup_interfaces or ()), flow.dss_checksum, flow.add_addr_timeout_ps)
        if seen.setdefault(flow.client, settings) != settings:
            found.append((("flow", i, "path_manager"), f"host '{flow.client}' already has other MPTCP path-manager "
                          "settings: the kernel keeps one set per host"))
        # ndiffports lives in the server's endpoints: every MPTCP flow to that server shares them.
        ndiff = (flow.path_manager == "ndiffports", flow.subflows if flow.path_manager == "ndiffports" else None)
        if seen.setdefault(f"server {flow.server}", ndiff) != ndiff:
            found.append((("flow", i, "path_manager"), f"server '{flow.server}' already serves MPTCP flows with "
                          "other ndiffports settings: its signal endpoints are shared by them all"))
    return found
