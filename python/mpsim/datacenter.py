"""Datacenter topologies and traffic matrices, as scenario tables.

`fat_tree_tables` and `leaf_spine_tables` lay out the nodes and links of a
k-ary FatTree (Al-Fares et al., SIGCOMM 2008) or a two-tier leaf-spine
fabric as the `[[node]]` and `[[link]]` tables of a scenario, with one set
of link keys per tier. The traffic matrices (`permutation`, `random`,
`incast`, `all_to_all`, `stride`) turn a host list into (client, server)
pairs, drawn from a seeded `random.Random`, so the same seed gives the same
matrix. `mpsim.topo.fat_tree` and friends build `Network`s from them; the
`[topology]` and `[traffic]` scenario tables (`Topology`, `Traffic`) are
expanded by `expand` into plain nodes, links and flows before validation.

Every function here is linear in the size of what it produces.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, ValidationError

from . import units
from .locate import Loc
from .scenario import Flow, Link, Name, _Model, pydantic_problems

Pair = tuple[str, str]
Table = dict[str, Any]

#: A generated scenario above this many flows is refused: all-to-all on
#: thousands of hosts is more likely a slip than a wish.
MAX_GENERATED_FLOWS = 1_000_000
MATRICES = ("permutation", "random", "incast", "all_to_all", "stride")
#: The link keys a `[topology]` table or one of its tier tables may set.
TIER_KEYS = ("bandwidth", "delay", "queue", "qdisc", "loss", "jitter", "mtu")
FAT_TREE_TIERS = ("host", "aggregation", "core")
LEAF_SPINE_TIERS = ("host", "spine")


class DatacenterError(ValueError):
    """A topology or matrix that cannot be built; `key` names the culprit."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


# ------------------------------------------------------------ topologies


@dataclass
class Fabric:
    """Generated tables: nodes, links (each tagged with its tier) and the hosts in order."""

    nodes: list[Table] = field(default_factory=list)
    links: list[Table] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)

    def node(self, name: str, kind: str) -> str:
        self.nodes.append({"name": name, "kind": kind})
        if kind == "host":
            self.hosts.append(name)
        return name

    def link(self, a: str, b: str, tier: str, keys: Table) -> None:
        self.links.append({"name": f"{a}-{b}", "between": [a, b], **keys})
        self.tiers.append(tier)


def tier_keys(
    defaults: Table, tiers: dict[str, Table], names: Sequence[str], oversubscription: float
) -> dict[str, Table]:
    """The link keys of each tier: the defaults, then the tier's own keys; the
    tiers above the hosts' divide the default bandwidth by `oversubscription`
    unless they set their own."""
    unknown = sorted(set(tiers) - set(names))
    if unknown:
        raise DatacenterError(f"unknown tier '{unknown[0]}': expected {', '.join(names)}", unknown[0])
    if oversubscription < 1:
        raise DatacenterError(f"must be at least 1, got {oversubscription}", "oversubscription")
    out = {}
    for name in names:
        keys = {k: v for k, v in defaults.items() if v is not None}
        own = {k: v for k, v in (tiers.get(name) or {}).items() if v is not None}
        if name != "host" and oversubscription != 1 and "bandwidth" in keys and "bandwidth" not in own:
            keys["bandwidth"] = f"{round(units.parse_rate(keys['bandwidth']) / oversubscription)}bps"
        keys.update(own)
        out[name] = keys
    return out


def fat_tree_tables(k: int, tiers: dict[str, Table]) -> Fabric:
    """A k-ary FatTree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2
    core switches, k/2 hosts per edge switch (k^3/4 hosts, 3k^3/4 links).

    Hosts `h{pod}_{edge}_{i}`, switches `edge{pod}_{e}`, `agg{pod}_{a}` and
    `core{c}`; aggregation switch a of every pod links to cores a*k/2 .. a*k/2+k/2-1.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise DatacenterError(f"k must be an even number of at least 2, got {k!r}", "k")
    half = k // 2
    fab = Fabric()
    cores = [fab.node(f"core{c}", "switch") for c in range(half * half)]
    for pod in range(k):
        aggs = [fab.node(f"agg{pod}_{a}", "switch") for a in range(half)]
        for e in range(half):
            edge = fab.node(f"edge{pod}_{e}", "switch")
            for i in range(half):
                fab.link(fab.node(f"h{pod}_{e}_{i}", "host"), edge, "host", tiers["host"])
            for agg in aggs:
                fab.link(edge, agg, "aggregation", tiers["aggregation"])
        for a, agg in enumerate(aggs):
            for core in cores[a * half : (a + 1) * half]:
                fab.link(agg, core, "core", tiers["core"])
    return fab


def leaf_spine_tables(leaves: int, spines: int, hosts_per_leaf: int, tiers: dict[str, Table]) -> Fabric:
    """Leaves `leaf{l}` with hosts `h{l}_{i}`, each leaf linked to every spine `spine{s}`."""
    for key, value in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DatacenterError(f"must be a whole number of at least 1, got {value!r}", key)
    fab = Fabric()
    spine_names = [fab.node(f"spine{s}", "switch") for s in range(spines)]
    for leaf_index in range(leaves):
        leaf = fab.node(f"leaf{leaf_index}", "switch")
        for i in range(hosts_per_leaf):
            fab.link(fab.node(f"h{leaf_index}_{i}", "host"), leaf, "host", tiers["host"])
        for spine in spine_names:
            fab.link(leaf, spine, "spine", tiers["spine"])
    return fab


# ------------------------------------------------------------ traffic matrices


def _need_hosts(hosts: Sequence[str], least: int) -> None:
    if len(hosts) < least:
        raise DatacenterError(f"needs at least {least} hosts, got {len(hosts)}", "matrix")


def permutation(hosts: Sequence[str], seed: int) -> list[Pair]:
    """Every host sends to one other host and receives from one (a random
    derangement, drawn by rejection so that every derangement is as likely)."""
    _need_hosts(hosts, 2)
    rng = random.Random(seed)
    order = list(range(len(hosts)))
    while True:
        rng.shuffle(order)
        if all(i != j for i, j in enumerate(order)):
            return [(hosts[i], hosts[j]) for i, j in enumerate(order)]


def random_pairs(hosts: Sequence[str], seed: int) -> list[Pair]:
    """Every host sends to a host drawn uniformly from the others (several may pick the same one)."""
    _need_hosts(hosts, 2)
    rng = random.Random(seed)
    n = len(hosts)
    pairs = []
    for i, host in enumerate(hosts):
        j = rng.randrange(n - 1)
        pairs.append((host, hosts[j + 1 if j >= i else j]))
    return pairs


def incast(hosts: Sequence[str], fan_in: int, seed: int) -> list[Pair]:
    """`fan_in` senders, drawn from the hosts, all to one receiver drawn from the others."""
    _need_hosts(hosts, 2)
    if isinstance(fan_in, bool) or not isinstance(fan_in, int) or not 1 <= fan_in < len(hosts):
        most = len(hosts) - 1
        raise DatacenterError(f"fan_in must be 1 to {most} (the hosts but the receiver), got {fan_in!r}", "fan_in")
    rng = random.Random(seed)
    receiver = rng.randrange(len(hosts))
    others = [h for i, h in enumerate(hosts) if i != receiver]
    return [(sender, hosts[receiver]) for sender in rng.sample(others, fan_in)]


def all_to_all(hosts: Sequence[str]) -> list[Pair]:
    """Every ordered pair of distinct hosts."""
    _need_hosts(hosts, 2)
    return [(a, b) for a in hosts for b in hosts if a != b]


def stride(hosts: Sequence[str], step: int) -> list[Pair]:
    """Host i sends to host (i + step) mod n (Al-Fares et al.'s stride(i) pattern)."""
    _need_hosts(hosts, 2)
    n = len(hosts)
    if isinstance(step, bool) or not isinstance(step, int) or step % n == 0:
        message = f"stride must be a whole number that is not a multiple of the {n} hosts, got {step!r}"
        raise DatacenterError(message, "stride")
    return [(hosts[i], hosts[(i + step) % n]) for i in range(n)]


def matrix_pairs(
    matrix: str, hosts: Sequence[str], seed: int, stride_hosts: int | None = None, fan_in: int | None = None
) -> list[Pair]:
    """The pairs of a named matrix; `stride_hosts` and `fan_in` are the keys of stride and incast."""
    if matrix not in MATRICES:
        raise DatacenterError(f"bad value {matrix!r}: expected {', '.join(MATRICES)}", "matrix")
    if stride_hosts is not None and matrix != "stride":
        raise DatacenterError("key 'stride' applies only to matrix = 'stride'", "stride")
    if fan_in is not None and matrix != "incast":
        raise DatacenterError("key 'fan_in' applies only to matrix = 'incast'", "fan_in")
    if matrix == "all_to_all" and len(hosts) * (len(hosts) - 1) > MAX_GENERATED_FLOWS:
        message = f"all_to_all on {len(hosts)} hosts makes more than {MAX_GENERATED_FLOWS:,} flows"
        raise DatacenterError(message, "matrix")
    if matrix == "stride" and stride_hosts is None:
        raise DatacenterError("matrix 'stride' needs key 'stride'", "stride")
    if matrix == "incast" and fan_in is None:
        raise DatacenterError("matrix 'incast' needs key 'fan_in'", "fan_in")
    makers: dict[str, Callable[[], list[Pair]]] = {
        "permutation": lambda: permutation(hosts, seed),
        "random": lambda: random_pairs(hosts, seed),
        "incast": lambda: incast(hosts, fan_in or 0, seed),
        "all_to_all": lambda: all_to_all(hosts),
        "stride": lambda: stride(hosts, stride_hosts or 0),
    }
    return makers[matrix]()


def flow_tables(pairs: Sequence[Pair], keys: Table, prefix: str | None = None) -> list[Table]:
    """One `[[flow]]` table per pair with the given flow keys, named `client-server` (or prefix + number)."""
    out = []
    for n, (client, server) in enumerate(pairs):
        name = f"{prefix}{n + 1}" if prefix else f"{client}-{server}"
        out.append({"name": name, "client": client, "server": server, **keys})
    return out


# ------------------------------------------------------------ scenario tables


class TierLinks(_Model):
    """The link keys of one tier (`[topology.host]`, `[topology.core]`, ...), as in `[[link]]`."""

    bandwidth: Any = None
    delay: Any = None
    queue: Any = None
    qdisc: Any = None
    loss: Any = None
    jitter: Any = None
    mtu: Any = None


class Topology(TierLinks):
    """`[topology]`: a generated FatTree or leaf-spine fabric, added to the scenario's nodes and links."""

    kind: Literal["fat_tree", "leaf_spine"]
    k: StrictInt | None = None
    leaves: StrictInt | None = None
    spines: StrictInt | None = None
    hosts_per_leaf: StrictInt | None = None
    oversubscription: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] = 1.0
    host: TierLinks | None = None
    aggregation: TierLinks | None = None
    core: TierLinks | None = None
    spine: TierLinks | None = None


class Traffic(Flow):
    """`[traffic]`: one flow per pair of a traffic matrix over the scenario's hosts,
    each with the flow keys given here (`client` and `server` come from the matrix)."""

    client: Name | None = None  # type: ignore[assignment]
    server: Name | None = None  # type: ignore[assignment]
    matrix: Literal["permutation", "random", "incast", "all_to_all", "stride"]
    # Placement seed; None: the scenario's seed.
    seed: Annotated[StrictInt, Field(ge=0)] | None = None
    stride: StrictInt | None = None
    fan_in: StrictInt | None = None


TOPOLOGY_ONLY = ("kind", "k", "leaves", "spines", "hosts_per_leaf", "oversubscription")
TRAFFIC_ONLY = ("matrix", "seed", "stride", "fan_in", "name", "client", "server")
_NEEDS = {"fat_tree": ("k",), "leaf_spine": ("leaves", "spines", "hosts_per_leaf")}


@dataclass
class Expansion:
    """What `expand` added: where each generated table's errors are to be reported."""

    rewrites: dict[Loc, Loc] = field(default_factory=dict)


def _checked(model: type[_Model], raw: Any, where: Loc) -> list[tuple[Loc, str]]:
    try:
        model.model_validate(raw)
    except ValidationError as exc:
        return [((*where, *loc), message) for loc, message in pydantic_problems(exc)]
    return []


def expand(data: Table, seed: int) -> tuple[Expansion, list[tuple[Loc, str]]]:
    """Append the tables `[topology]` and `[traffic]` generate to `data`'s
    nodes, links and flows (in place); returns where their problems belong,
    and the problems of the two tables themselves (key path, message)."""
    out = Expansion()
    topology, traffic = data.get("topology"), data.get("traffic")
    if topology is not None:
        problems = _expand_topology(data, topology, out)
        if problems:
            return out, problems
    if traffic is not None:
        return out, _expand_traffic(data, traffic, seed, out)
    return out, []


def _expand_topology(data: Table, raw: Any, out: Expansion) -> list[tuple[Loc, str]]:
    problems = _checked(Topology, raw, ("topology",))
    if problems:
        return problems
    kind = raw["kind"]
    for key in _NEEDS[kind]:
        if key not in raw:
            return [(("topology", "kind"), f"kind '{kind}' needs key '{key}'")]
    for key in set(_NEEDS["fat_tree"] + _NEEDS["leaf_spine"]) - set(_NEEDS[kind]):
        if key in raw:
            return [(("topology", key), f"key '{key}' does not apply to kind '{kind}'")]
    names = FAT_TREE_TIERS if kind == "fat_tree" else LEAF_SPINE_TIERS
    defaults = {k: raw[k] for k in TIER_KEYS if k in raw}
    tiers = {k: raw[k] for k in FAT_TREE_TIERS + LEAF_SPINE_TIERS if k in raw}
    try:
        keys = tier_keys(defaults, tiers, names, float(raw.get("oversubscription", 1.0)))
        if kind == "fat_tree":
            fab = fat_tree_tables(raw["k"], keys)
        else:
            fab = leaf_spine_tables(raw["leaves"], raw["spines"], raw["hosts_per_leaf"], keys)
    except (DatacenterError, units.UnitError) as exc:
        return [(("topology", getattr(exc, "key", "bandwidth")), str(exc))]
    for tier, tier_table in keys.items():
        problems = _checked(Link, {"between": ["a", "b"], **tier_table}, ("topology", tier))
        if problems:
            loc, message = problems[0]
            own = tier in tiers and isinstance(tiers[tier], dict) and loc[2] in tiers[tier]
            where = loc if own else ("topology", *loc[2:])
            return [(where, message)]
    nodes, links = data.setdefault("node", []), data.setdefault("link", [])
    if not isinstance(nodes, list) or not isinstance(links, list):
        return []  # not arrays: validation reports them
    for i in range(len(fab.nodes)):
        out.rewrites[("node", len(nodes) + i)] = ("topology",)
    for i, tier in enumerate(fab.tiers):
        out.rewrites[("link", len(links) + i)] = ("topology", tier) if tier in tiers else ("topology",)
    nodes.extend(fab.nodes)
    links.extend(fab.links)
    return []


def _expand_traffic(data: Table, raw: Any, seed: int, out: Expansion) -> list[tuple[Loc, str]]:
    problems = _checked(Traffic, raw, ("traffic",))
    if problems:
        return problems
    for key in ("client", "server"):
        if key in raw:
            return [(("traffic", key), f"key '{key}' comes from the matrix: leave it out of [traffic]")]
    nodes = data.get("node") if isinstance(data.get("node"), list) else []
    hosts = [n["name"] for n in nodes if isinstance(n, dict) and n.get("kind", "host") == "host" and "name" in n]
    try:
        pairs = matrix_pairs(raw["matrix"], hosts, raw.get("seed", seed), raw.get("stride"), raw.get("fan_in"))
    except DatacenterError as exc:
        return [(("traffic", exc.key), str(exc))]
    keys = {k: v for k, v in raw.items() if k not in TRAFFIC_ONLY}
    flows = data.setdefault("flow", [])
    if not isinstance(flows, list):
        return []  # not an array: validation reports it
    for i in range(len(pairs)):
        out.rewrites[("flow", len(flows) + i)] = ("traffic",)
    flows.extend(flow_tables(pairs, keys, raw.get("name")))
    return []
