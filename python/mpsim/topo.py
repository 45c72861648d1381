"""Topology helpers: ready-made networks and networkx views of a scenario.

`dumbbell` and `two_path` return a `Network` without flows, for the caller
to add traffic. `graph` turns a scenario into a networkx MultiGraph (parallel
links stay distinct, keyed by link name) for path questions such as
`edge_disjoint_paths` and `path_bandwidth`.

`fat_tree` and `leaf_spine` return (or add to) a `Network` with a datacenter
fabric; the traffic matrices (`permutation`, `random_pairs`, `incast`,
`all_to_all`, `stride`) give (client, server) pairs of hosts, and
`Network.add_traffic` turns a matrix into flows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import networkx as nx

from .datacenter import (
    FAT_TREE_TIERS,
    LEAF_SPINE_TIERS,
    all_to_all,
    incast,
    matrix_pairs,
    permutation,
    random_pairs,
    stride,
)
from .errors import ScenarioError
from .net import Network
from .scenario import Scenario

__all__ = [
    "all_to_all", "dumbbell", "edge_disjoint_paths", "fat_tree", "graph", "incast", "leaf_spine",
    "matrix_pairs", "path_bandwidth", "permutation", "random_pairs", "stride", "two_path",
]  # fmt: skip


def dumbbell(
    n_pairs: int = 2,
    bottleneck_bw: str = "10Mbps",
    bottleneck_delay: str = "20ms",
    access_bw: str = "100Mbps",
    access_delay: str = "1ms",
    queue: str = "100pkt",
    *,
    access_queue: str | None = None,
    name: str = "dumbbell",
    seed: int = 1,
    duration: str = "60s",
) -> Network:
    """Senders snd1..N on switch s1, receivers rcv1..N on s2, one `bottleneck` link between."""
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be at least 1, got {n_pairs}")
    net = Network(name, seed=seed, duration=duration)
    net.add_switch("s1")
    net.add_switch("s2")
    net.add_link("s1", "s2", bw=bottleneck_bw, delay=bottleneck_delay, queue=queue, name="bottleneck")
    for i in range(1, n_pairs + 1):
        net.add_host(f"snd{i}")
        net.add_host(f"rcv{i}")
        net.add_link(f"snd{i}", "s1", bw=access_bw, delay=access_delay, queue=access_queue or queue)
        net.add_link("s2", f"rcv{i}", bw=access_bw, delay=access_delay, queue=access_queue or queue)
    return net


def two_path(
    bw: Sequence[str] = ("4Mbps", "2Mbps"),
    delay: Sequence[str] = ("10ms", "40ms"),
    queue: str = "100pkt",
    *,
    names: Sequence[str] = ("wifi", "3g"),
    wan_bw: str = "100Mbps",
    wan_delay: str = "5ms",
    name: str = "two-path",
    seed: int = 1,
    duration: str = "60s",
) -> Network:
    """A client with two links (default wifi and 3g) to a router, and a `wan` link to a server."""
    if not len(bw) == len(delay) == len(names) == 2:
        raise ValueError("bw, delay and names need two entries each, one per path")
    net = Network(name, seed=seed, duration=duration)
    net.add_host("client")
    net.add_router("router")
    net.add_host("server")
    for link_name, link_bw, link_delay in zip(names, bw, delay, strict=True):
        net.add_link("client", "router", bw=link_bw, delay=link_delay, queue=queue, name=link_name)
    net.add_link("router", "server", bw=wan_bw, delay=wan_delay, queue=queue, name="wan")
    return net


def graph(scenario: Scenario | Network) -> nx.MultiGraph:
    """Nodes with `kind`; one edge per link keyed by its name, with bandwidth and delay.

    `bandwidth_bps` is the smaller of the two directions (the first trace rate
    for a traced link), `delay_ps` the larger.
    """
    if isinstance(scenario, Network):
        scenario = scenario.to_scenario()
    spec = scenario.to_engine_spec()
    g = nx.MultiGraph(name=spec["name"])
    for node in spec["nodes"]:
        g.add_node(node["name"], kind=node["kind"])
    for link in spec["links"]:
        ab, ba = link["a_to_b"], link["b_to_a"]
        g.add_edge(
            link["a"],
            link["b"],
            key=link["name"],
            name=link["name"],
            bandwidth_bps=min(ab["bandwidth_bps"], ba["bandwidth_bps"]),
            delay_ps=max(ab["delay_ps"], ba["delay_ps"]),
        )
    return g


def edge_disjoint_paths(g: nx.Graph, a: str, b: str) -> list[list[str]]:
    """A maximum set of paths from `a` to `b` that share no link, as node lists.

    Parallel links count as different links: each is split by a virtual node
    before the max-flow search, which plain networkx does not do for multigraphs.
    """
    if a not in g or b not in g:
        missing = a if a not in g else b
        raise KeyError(f"unknown node {missing!r}")
    if not g.is_multigraph():
        try:
            return [list(p) for p in nx.edge_disjoint_paths(g, a, b)]
        except nx.NetworkXNoPath:
            return []
    split = nx.Graph()
    split.add_nodes_from(g.nodes)
    for u, v, key in g.edges(keys=True):
        mid = ("link", key, u, v)
        split.add_edge(u, mid)
        split.add_edge(mid, v)
    try:
        paths = nx.edge_disjoint_paths(split, a, b)
        return [[n for n in path if not isinstance(n, tuple)] for path in paths]
    except nx.NetworkXNoPath:
        return []


def path_bandwidth(g: nx.Graph, path: Sequence[str]) -> int:
    """The bottleneck bandwidth of a node path, in bit/s (the fastest of parallel links per hop)."""
    if len(path) < 2:
        raise ValueError("a path needs at least two nodes")
    return min(_hop_bandwidth(g, u, v) for u, v in itertools.pairwise(path))


def _hop_bandwidth(g: nx.Graph, u: str, v: str) -> int:
    if not g.has_edge(u, v):
        raise KeyError(f"no link between {u!r} and {v!r}")
    data: Any = g.get_edge_data(u, v)
    if g.is_multigraph():
        return max(edge["bandwidth_bps"] for edge in data.values())
    return data["bandwidth_bps"]


# ------------------------------------------------------------ datacenter fabrics


def _tiers(
    defaults: dict[str, Any],
    tiers: dict[str, dict[str, Any]] | None,
    names: tuple[str, ...],
    oversubscription: float,
    call: str,
) -> dict[str, dict[str, Any]]:
    """Each tier's link keys (scenario keys), keyword arguments translated and checked once."""
    from .datacenter import DatacenterError, tier_keys
    from .net import _check_entry, to_scenario_keys
    from .scenario import Link

    base, _ = to_scenario_keys(defaults, Link, call)
    own = {}
    for tier, kw in (tiers or {}).items():
        own[tier], _ = to_scenario_keys(kw, Link, f"{call} tier {tier!r}")
    try:
        keys = tier_keys(base, own, names, oversubscription)
    except DatacenterError as exc:
        raise ScenarioError(str(exc), file=call, key=exc.key) from None
    for tier, entry in keys.items():
        _check_entry(Link, {"between": ["a", "b"], **entry}, f"{call} tier {tier!r}", {})
    return keys


def _fabric_network(
    net: Network | None, name: str, seed: int, duration: str, forwarding: str, simulation: dict
) -> Network:
    if net is not None:
        return net
    return Network(name, seed=seed, duration=duration, forwarding=forwarding, **simulation)


def fat_tree(
    k: int,
    bandwidth: str = "10Gbps",
    delay: str = "1us",
    queue: str = "100pkt",
    oversubscription: float = 1.0,
    *,
    tiers: dict[str, dict[str, Any]] | None = None,
    net: Network | None = None,
    name: str = "fat-tree",
    seed: int = 1,
    duration: str = "1s",
    forwarding: str = "ecmp",
    **simulation: Any,
) -> Network:
    """A k-ary FatTree (Al-Fares et al., SIGCOMM 2008): k^3/4 hosts `h{pod}_{edge}_{i}`,
    switches `edge{pod}_{e}`, `agg{pod}_{a}`, `core{c}`, links named `a-b`.

    `bandwidth`, `delay` and `queue` apply to every link; `tiers` overrides
    them per tier (`host`: host to edge, `aggregation`: edge to aggregation,
    `core`: aggregation to core) with `add_link` keywords, e.g.
    `tiers={"core": {"bw": "40Gbps"}}`. `oversubscription` divides the
    bandwidth of the two upper tiers (unless a tier sets its own). Added to
    `net` if given, else to a new Network with ECMP forwarding (further
    keyword arguments are its `[simulation]` keys, as for `Network`).
    """
    from .datacenter import fat_tree_tables

    call = f"fat_tree({k!r})"
    keys = _tiers({"bw": bandwidth, "delay": delay, "queue": queue}, tiers, FAT_TREE_TIERS, oversubscription, call)
    out = _fabric_network(net, name, seed, duration, forwarding, simulation)
    return _add_fabric(out, lambda: fat_tree_tables(k, keys), call)


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    bandwidth: str = "10Gbps",
    delay: str = "1us",
    queue: str = "100pkt",
    oversubscription: float = 1.0,
    *,
    tiers: dict[str, dict[str, Any]] | None = None,
    net: Network | None = None,
    name: str = "leaf-spine",
    seed: int = 1,
    duration: str = "1s",
    forwarding: str = "ecmp",
    **simulation: Any,
) -> Network:
    """Leaves `leaf{l}` with hosts `h{l}_{i}`, every leaf linked to every spine `spine{s}`.

    Tiers `host` (host to leaf) and `spine` (leaf to spine); otherwise as `fat_tree`.
    """
    from .datacenter import leaf_spine_tables

    call = f"leaf_spine({leaves!r}, {spines!r}, {hosts_per_leaf!r})"
    keys = _tiers({"bw": bandwidth, "delay": delay, "queue": queue}, tiers, LEAF_SPINE_TIERS, oversubscription, call)
    out = _fabric_network(net, name, seed, duration, forwarding, simulation)
    return _add_fabric(out, lambda: leaf_spine_tables(leaves, spines, hosts_per_leaf, keys), call)


def _add_fabric(net: Network, make: Any, call: str) -> Network:
    """Adds the node and link tables `make()` generates to `net`; a bad
    argument is a ScenarioError naming the call and the argument."""
    from .datacenter import DatacenterError

    try:
        fab = make()
    except DatacenterError as exc:
        raise ScenarioError(str(exc), file=call, key=exc.key) from None
    net.add_tables(fab.nodes, fab.links, call)
    return net
