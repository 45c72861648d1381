"""A Mininet-like builder that produces the same validated Scenario as a file.

    net = Network("demo", seed=1, duration="30s")
    net.add_host("h1"); net.add_host("h2"); net.add_switch("s1")
    net.add_link("h1", "s1", bw="10Mbps", delay="5ms")
    net.add_link("s1", "h2", bw_mbps=10, delay_ms=5)
    net.add_flow("h1", "h2", cc="cubic")
    results = net.run()

An MPTCP flow takes the multipath keys the same way:
`net.add_flow("client", "server", transport="mptcp", cc="lia", path_manager="ndiffports", subflows=4)`.

Keyword arguments are the scenario keys. Quantities take unit strings
("10Mbps") or a raw number with the unit in the keyword name (`bw_mbps=10`,
`delay_ms=5`, `size_bytes=10**6`); a raw number without a unit is an error,
since `bw=10` could mean bit/s or Mbit/s. Each call is checked at once and
errors name the call.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from . import overrides as ov
from .errors import ScenarioError
from .locate import Loc, format_loc
from .scenario import (
    Controller,
    Direction,
    Flow,
    Link,
    LinkEvent,
    Node,
    Record,
    Scenario,
    Simulation,
    pydantic_problems,
    scenario_from_dict,
)

if TYPE_CHECKING:
    from .results import Results

# Keyword suffix -> unit string appended to the raw number.
_SUFFIXES = {
    "_ps": "ps", "_ns": "ns", "_us": "us", "_ms": "ms", "_s": "s",
    "_bps": "bps", "_kbps": "kbps", "_mbps": "Mbps", "_gbps": "Gbps",
    "_bytes": "B", "_kb": "KB", "_mb": "MB", "_gb": "GB",
    "_kib": "KiB", "_mib": "MiB", "_gib": "GiB",
    "_pkts": "pkt", "_frac": "",
}  # fmt: skip
# Scenario keys whose value is a quantity with a unit (a bare number is ambiguous here).
_QUANTITIES = {
    "duration", "sample_interval", "mss", "rcvbuf", "sndbuf", "rbuf", "bandwidth", "delay",
    "queue", "size", "sizes", "start", "stop", "delayed_ack_timeout", "min_rto", "time_wait", "request_size",
    "rate", "packet", "on", "off", "bitrate", "chunk", "at", "latency", "gap", "after_down", "start_jitter",
    "mtu",
}  # fmt: skip
_ALIASES = {"bw": "bandwidth"}


def _call(name: str, *args: Any) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


def _with_unit(value: Any, unit: str, keyword: str, call: str) -> Any:
    if isinstance(value, (list, tuple)):
        return [_with_unit(v, unit, keyword, call) for v in value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"expected a number, got {value!r}", file=call, key=keyword)
    return value if unit == "" else f"{value}{unit}"


def _is_raw_number(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_is_raw_number(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def to_scenario_keys(kwargs: dict[str, Any], model: type[BaseModel], call: str) -> tuple[dict, dict]:
    """Keyword arguments as scenario keys; also returns scenario key -> keyword used."""
    known = ov.fields_by_alias(model)
    out: dict[str, Any] = {}
    used: dict[str, str] = {}
    for keyword, value in kwargs.items():
        if value is None:
            continue
        key, value = _translate(keyword, value, known, call)
        if key in out:
            raise ScenarioError(f"given twice (as {used[key]} and {keyword})", file=call, key=key)
        out[key], used[key] = value, keyword
    return out, used


def _translate(keyword: str, value: Any, known: dict, call: str) -> tuple[str, Any]:
    key = _ALIASES.get(keyword, keyword)
    if key in known:
        if key in _QUANTITIES and _is_raw_number(value):
            raise ScenarioError(
                f"{value!r} has no unit: write a string such as {_example(key)} or {keyword}_<unit>=...",
                file=call,
                key=keyword,
            )
        if key in ("a_to_b", "b_to_a") and isinstance(value, dict):
            value, _ = to_scenario_keys(value, Direction, call)
        return key, value
    for suffix, unit in sorted(_SUFFIXES.items(), key=lambda item: -len(item[0])):
        if keyword.endswith(suffix):
            stem = _ALIASES.get(keyword[: -len(suffix)], keyword[: -len(suffix)])
            if stem in known:
                return stem, _with_unit(value, unit, keyword, call)
    raise ScenarioError(ov.unknown_key_message(key, None), file=call, key=keyword)


def _example(key: str) -> str:
    examples = {"bandwidth": "'10Mbps'", "rate": "'1Mbps'", "bitrate": "'2Mbps'", "queue": "'100pkt'"}
    if key in examples:
        return examples[key]
    if key == "mtu":
        return "'1500B'"
    if key in ("mss", "rcvbuf", "sndbuf", "rbuf", "size", "sizes", "request_size", "packet"):
        return "'64KB'"
    return "'20ms'"


def _check_entry(model: type[BaseModel], entry: dict, call: str, used: dict[str, str]) -> None:
    """Validate one table now, so the error points at the call that made it."""
    try:
        model.model_validate(entry)
    except ValidationError as exc:
        loc, message = pydantic_problems(exc)[0]
        shown = (used.get(loc[0], loc[0]),) + tuple(loc[1:]) if loc else ()
        raise ScenarioError(message, file=call, key=format_loc(shown) or None) from None


class Network:
    """A scenario under construction: nodes, links, flows, events, recording."""

    def __init__(self, name: str = "network", seed: int = 1, duration: str | None = None, **simulation: Any) -> None:
        call = _call("Network", name)
        if duration is None and not any(k.startswith("duration_") for k in simulation):
            duration = "60s"
        keys, used = to_scenario_keys({"duration": duration, **simulation}, Simulation, call)
        keys["seed"] = seed
        _check_entry(Simulation, keys, call, used)
        self.name = name
        self._description = ""
        self._simulation = keys
        self._nodes: list[dict] = []
        self._links: list[dict] = []
        self._flows: list[dict] = []
        # Name -> index of the tables above, so each call is O(1) and building is linear.
        self._node_index: dict[str, int] = {}
        self._link_index: dict[str, int] = {}
        self._flow_index: dict[str, int] = {}
        self._record: dict = {}
        self._controller: dict | None = None
        self._labels: dict[Loc, str] = {("simulation",): call}

    def __repr__(self) -> str:
        return f"Network({self.name!r}: {len(self._nodes)} nodes, {len(self._links)} links, {len(self._flows)} flows)"

    # ---------------------------------------------------------- nodes

    def add_node(self, name: str, kind: str = "host", forwarding: str | None = None) -> str:
        """Add a node of the given kind (a switch or router may set its own `forwarding`); returns its name."""
        call = _call(f"add_{kind}" if kind in ("host", "switch", "router") else "add_node", name)
        if name in self._node_index:
            raise ScenarioError(f"node name '{name}' is already used", file=call, key="name")
        entry = {"name": name, "kind": kind}
        if forwarding is not None:
            entry["forwarding"] = forwarding
        _check_entry(Node, entry, call, {})
        self._labels[("node", len(self._nodes))] = call
        self._node_index[name] = len(self._nodes)
        self._nodes.append(entry)
        return name

    def add_host(self, name: str) -> str:
        return self.add_node(name, "host")

    def add_switch(self, name: str, forwarding: str | None = None) -> str:
        return self.add_node(name, "switch", forwarding)

    def add_router(self, name: str, forwarding: str | None = None) -> str:
        return self.add_node(name, "router", forwarding)

    # ---------------------------------------------------------- links

    def add_link(
        self,
        a: str,
        b: str,
        bw: str | None = None,
        delay: str | None = None,
        queue: str | None = None,
        loss: Any = None,
        name: str | None = None,
        **overrides: Any,
    ) -> str:
        """Add a full-duplex link; returns its name (default `a-b`, made unique)."""
        call = _call("add_link", a, b)
        for end in (a, b):
            if end not in self._node_index:
                raise ScenarioError(f"unknown node '{end}'", file=call, key="between")
        kwargs = {"bw": bw, "delay": delay, "queue": queue, "loss": loss, **overrides}
        keys, used = to_scenario_keys(kwargs, Link, call)
        name = name or self._free_link_name(f"{a}-{b}")
        if name in self._link_index:
            raise ScenarioError(f"link name '{name}' is already used", file=call, key="name")
        entry = {"name": name, "between": [a, b], **keys}
        if "bandwidth" not in entry and "bandwidth_trace" not in entry:
            raise ScenarioError("missing bandwidth: give bw='10Mbps' or bw_mbps=10", file=call, key="bw")
        _check_entry(Link, entry, call, used)
        self._labels[("link", len(self._links))] = call
        self._link_index[name] = len(self._links)
        self._links.append(entry)
        return name

    def _free_link_name(self, base: str) -> str:
        if base not in self._link_index:
            return base
        n = 2
        while f"{base}-{n}" in self._link_index:
            n += 1
        return f"{base}-{n}"

    def link_event(self, link: str, at: str | None = None, up: bool | None = None, **changes: Any) -> None:
        """Schedule a change of a link (`up`, `bandwidth`, `delay`, `loss`, `queue`, `jitter`, `backup`, `direction`)."""
        call = _call("link_event", link)
        index = self._link_index.get(link)
        if index is None:
            raise ScenarioError(f"unknown link '{link}'", file=call, key="link")
        keys, used = to_scenario_keys({"at": at, "up": up, **changes}, LinkEvent, call)
        _check_entry(LinkEvent, keys, call, used)
        events = self._links[index].setdefault("events", [])
        self._labels[("link", index, "events", len(events))] = call
        events.append(keys)

    # ---------------------------------------------------------- flows

    def add_flow(
        self,
        client: str,
        server: str,
        transport: str = "tcp",
        app: str = "download",
        cc: str | None = None,
        name: str | None = None,
        size: str | None = None,
        **kw: Any,
    ) -> str:
        """Add a flow (default: a TCP Reno download until the end); returns its name.

        Other keyword arguments are the flow keys of the scenario format, e.g.
        `add_flow("client", "server", transport="mptcp", cc="lia", path_manager="fullmesh",
        scheduler="default", backup_interfaces=["3g"], rcvbuf="8MB")`.
        """
        call = _call("add_flow", client, server)
        for role, node in (("client", client), ("server", server)):
            if node not in self._node_index:
                raise ScenarioError(f"unknown node '{node}'", file=call, key=role)
        keys, used = to_scenario_keys({"cc": cc, "size": size, **kw}, Flow, call)
        name = name or f"flow{len(self._flows) + 1}"
        if name in self._flow_index:
            raise ScenarioError(f"flow name '{name}' is already used", file=call, key="name")
        entry = {"name": name, "transport": transport, "client": client, "server": server, "app": app, **keys}
        _check_entry(Flow, entry, call, used)
        self._labels[("flow", len(self._flows))] = call
        self._flow_index[name] = len(self._flows)
        self._flows.append(entry)
        return name

    # ---------------------------------------------------------- generated tables

    def hosts(self) -> list[str]:
        """The host names, in the order they were added."""
        return [n["name"] for n in self._nodes if n["kind"] == "host"]

    def add_tables(self, nodes: list[dict], links: list[dict], call: str) -> None:
        """Append generated node and link tables (scenario keys, already named)
        in one step; they are validated with the rest by `to_scenario`, and
        their errors name `call`. Linear in what is added."""
        for entry in nodes:
            if entry["name"] in self._node_index:
                raise ScenarioError(f"node name '{entry['name']}' is already used", file=call, key="name")
            self._labels[("node", len(self._nodes))] = call
            self._node_index[entry["name"]] = len(self._nodes)
            self._nodes.append(entry)
        for entry in links:
            for end in entry["between"]:
                if end not in self._node_index:
                    raise ScenarioError(f"unknown node '{end}'", file=call, key="between")
            if entry["name"] in self._link_index:
                raise ScenarioError(f"link name '{entry['name']}' is already used", file=call, key="name")
            self._labels[("link", len(self._links))] = call
            self._link_index[entry["name"]] = len(self._links)
            self._links.append(entry)

    def add_traffic(
        self,
        matrix: str = "permutation",
        *,
        seed: int | None = None,
        stride: int | None = None,
        fan_in: int | None = None,
        hosts: list[str] | None = None,
        prefix: str | None = None,
        transport: str = "tcp",
        app: str = "download",
        **kw: Any,
    ) -> list[str]:
        """One flow per pair of a traffic matrix (`permutation`, `random`, `incast`
        with `fan_in`, `all_to_all`, `stride` with `stride`) over `hosts` (default:
        every host), placed by `seed` (default: the scenario's). Other keyword
        arguments are flow keys, as for `add_flow`; returns the flow names
        (`client-server`, or `prefix` and a number)."""
        from .datacenter import DatacenterError, flow_tables, matrix_pairs

        call = _call("add_traffic", matrix)
        keys, used = to_scenario_keys(kw, Flow, call)
        chosen = self.hosts() if hosts is None else list(hosts)
        for host in chosen:
            if host not in self._node_index:
                raise ScenarioError(f"unknown node '{host}'", file=call, key="hosts")
        try:
            pairs = matrix_pairs(matrix, chosen, self._simulation["seed"] if seed is None else seed, stride, fan_in)
        except DatacenterError as exc:
            raise ScenarioError(str(exc), file=call, key=exc.key) from None
        entries = flow_tables(pairs, {"transport": transport, "app": app, **keys}, prefix)
        _check_entry(Flow, entries[0], call, used)
        for entry in entries:
            if entry["name"] in self._flow_index:
                raise ScenarioError(f"flow name '{entry['name']}' is already used", file=call, key="name")
            self._labels[("flow", len(self._flows))] = call
            self._flow_index[entry["name"]] = len(self._flows)
            self._flows.append(entry)
        return [e["name"] for e in entries]

    # ---------------------------------------------------------- the rest

    def record(self, interfaces: bool = True, subflows: bool = True, pcap: list[str] | None = None) -> None:
        """Choose the time series to record (default: interfaces and subflows)."""
        call = "record()"
        entry = {"interfaces": interfaces, "subflows": subflows, "pcap": list(pcap or [])}
        _check_entry(Record, entry, call, {})
        self._labels[("record",)] = call
        self._record = entry

    def set_controller(self, app: str, latency: str | None = None, **kw: Any) -> None:
        """Use an SDN controller application (`shortest`, `ecmp`, `disjoint`, `mpsshetn`)."""
        call = _call("set_controller", app)
        keys, used = to_scenario_keys({"latency": latency, **kw}, Controller, call)
        entry = {"app": app, **keys}
        _check_entry(Controller, entry, call, used)
        self._labels[("controller",)] = call
        self._controller = entry

    def describe(self, text: str) -> None:
        """Set the scenario's free-text description."""
        self._description = text

    def to_dict(self) -> dict[str, Any]:
        """The scenario as plain data, shaped like a scenario file."""
        return copy.deepcopy(self._data())

    def _data(self) -> dict[str, Any]:
        """`to_dict` without the copy (shares this builder's tables)."""
        data: dict[str, Any] = {"format": 1, "name": self.name}
        if self._description:
            data["description"] = self._description
        data["simulation"] = dict(self._simulation)
        data["node"] = self._nodes
        data["link"] = self._links
        data["flow"] = self._flows
        if self._controller is not None:
            data["controller"] = self._controller
        if self._record:
            data["record"] = self._record
        return data

    def to_scenario(self, overrides: dict[str, Any] | list[str] | None = None) -> Scenario:
        """The validated Scenario, exactly as if read from an equivalent file."""
        # scenario_from_dict copies what it keeps, so the tables need no copy here.
        return scenario_from_dict(
            self._data(), file=_call("Network", self.name), overrides=overrides, labels=dict(self._labels)
        )

    def run(self, **kwargs: Any) -> Results:
        """Validate and run; keyword arguments as for `mpsim.run`."""
        from . import run

        return run(self.to_scenario(), **kwargs)
