"""Forwarding keys: validation with file, line and key, the engine spec, ECMP
and rerouting end to end, and the topology helpers the SDN side uses."""

from __future__ import annotations

import networkx as nx
import pytest
from conftest import write
from mpsim import Network, ScenarioError, load_scenario
from mpsim.topo import edge_disjoint_paths, graph, path_bandwidth

LEAF_SPINE = """\
name = "leaf-spine"

[simulation]
duration = "1s"
{simulation}

[[node]]
name = "client"

[[node]]
name = "leaf1"
kind = "switch"
{leaf1}

[[node]]
name = "spine1"
kind = "switch"

[[node]]
name = "spine2"
kind = "switch"

[[node]]
name = "leaf2"
kind = "switch"

[[node]]
name = "server"

[[link]]
between = ["client", "leaf1"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "up1"
between = ["leaf1", "spine1"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "up2"
between = ["leaf1", "spine2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "down1"
between = ["spine1", "leaf2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "down2"
between = ["spine2", "leaf2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
between = ["leaf2", "server"]
bandwidth = "100Mbps"
delay = "1ms"

[[flow]]
name = "mp"
transport = "mptcp"
client = "client"
server = "server"
app = "download"
path_manager = "ndiffports"
subflows = 4
"""


def leaf_spine(tmp_path, simulation: str = "", leaf1: str = ""):
    return write(tmp_path, "ls.toml", LEAF_SPINE.format(simulation=simulation, leaf1=leaf1))


def error_of(path) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return info.value


def test_defaults_leave_the_engine_spec_as_it_was(tmp_path):
    spec = load_scenario(leaf_spine(tmp_path)).to_engine_spec()
    assert "forwarding" not in spec and "reroute" not in spec
    assert all("forwarding" not in n for n in spec["nodes"])


def test_forwarding_keys_reach_the_engine_spec(tmp_path):
    simulation = 'forwarding = "ecmp"\nreroute = true\nreroute_delay = "20ms"'
    path = leaf_spine(tmp_path, simulation, 'forwarding = "shortest"')
    spec = load_scenario(path).to_engine_spec()
    assert (spec["forwarding"], spec["reroute"], spec["reroute_delay_ps"]) == ("ecmp", True, 20 * 10**9)
    assert spec["nodes"][1] == {"name": "leaf1", "kind": "switch", "forwarding": "shortest"}


def test_an_unknown_forwarding_mode_is_refused_with_its_line(tmp_path):
    err = error_of(leaf_spine(tmp_path, 'forwarding = "random"'))
    assert (err.line, err.key) == (5, "simulation.forwarding")


def test_a_host_cannot_forward(tmp_path):
    text = LEAF_SPINE.format(simulation="", leaf1="")
    text = text.replace('name = "client"\n', 'name = "client"\nforwarding = "ecmp"\n', 1)
    err = error_of(write(tmp_path, "host.toml", text))
    assert (err.line, err.key) == (9, "node[0].forwarding")
    assert "hosts do not forward" in str(err)


def test_a_bad_reroute_delay_names_its_key(tmp_path):
    err = error_of(leaf_spine(tmp_path, 'reroute = true\nreroute_delay = "soon"'))
    assert err.key == "simulation.reroute_delay"


def spine_bytes(results) -> tuple[int, int]:
    links = results.summary["links"]
    return links["down1"]["b_to_a"]["bytes"], links["down2"]["b_to_a"]["bytes"]


def test_ecmp_puts_ndiffports_subflows_on_both_spines(tmp_path):
    import mpsim

    one, two = spine_bytes(mpsim.run(load_scenario(leaf_spine(tmp_path))))
    assert one > 0 and two == 0
    one, two = spine_bytes(mpsim.run(load_scenario(leaf_spine(tmp_path, 'forwarding = "ecmp"'))))
    assert min(one, two) > 0.2 * (one + two)


def test_the_builder_takes_forwarding_per_network_and_node():
    net = Network("ecmp", forwarding="ecmp", reroute=True, duration="1s")
    net.add_switch("s1", forwarding="shortest")
    spec = net.to_scenario().to_engine_spec()
    assert spec["forwarding"] == "ecmp" and spec["reroute"] is True
    assert spec["nodes"][0]["forwarding"] == "shortest"


# ------------------------------------------------------------ topology helpers


def test_edge_disjoint_paths_and_bandwidth_on_a_diamond():
    g = nx.Graph()
    g.add_edge("a", "x", bandwidth_bps=10)
    g.add_edge("x", "b", bandwidth_bps=4)
    g.add_edge("a", "y", bandwidth_bps=6)
    g.add_edge("y", "b", bandwidth_bps=8)
    g.add_edge("x", "y", bandwidth_bps=100)
    paths = sorted(edge_disjoint_paths(g, "a", "b"))
    assert paths == [["a", "x", "b"], ["a", "y", "b"]]
    assert [path_bandwidth(g, p) for p in paths] == [4, 6]


def test_edge_disjoint_paths_share_no_link_on_a_fat_tree_pod():
    # Two edge switches, two aggregation switches, fully meshed: two disjoint paths.
    g = nx.Graph()
    for e in ("e1", "e2"):
        for a in ("a1", "a2"):
            g.add_edge(e, a, bandwidth_bps=10)
    g.add_edge("h1", "e1", bandwidth_bps=10)
    g.add_edge("h2", "e2", bandwidth_bps=10)
    assert len(edge_disjoint_paths(g, "h1", "h2")) == 1  # the host links are shared
    paths = edge_disjoint_paths(g, "e1", "e2")
    used = [frozenset(edge) for p in paths for edge in zip(p, p[1:])]
    assert len(paths) == 2 and len(used) == len(set(used))


def test_path_bandwidth_is_the_minimum_link_of_a_scenario_path(tmp_path):
    g = graph(load_scenario(leaf_spine(tmp_path)))
    assert path_bandwidth(g, ["client", "leaf1", "spine2", "leaf2", "server"]) == 100_000_000
    assert len(edge_disjoint_paths(g, "leaf1", "leaf2")) == 2
    assert edge_disjoint_paths(nx.Graph([("a", "b"), ("c", "d")]), "a", "d") == []


def test_record_paths_shows_where_subflows_went(tmp_path):
    import mpsim

    text = LEAF_SPINE.format(simulation='forwarding = "ecmp"', leaf1="") + "\n[record]\npaths = true\n"
    summary = mpsim.run(load_scenario(write(tmp_path, "paths.toml", text))).summary
    data = [p["links"] for p in summary["paths"] if p["src"] == "server:server-leaf2" or p["src"].startswith("server:")]
    assert len(data) == 4
    assert {p[1] for p in data} <= {"down1", "down2"} and len({p[1] for p in data}) == 2


DIAMOND = """\
name = "diamond"

[simulation]
duration = "1s"

[[node]]
name = "client"

[[node]]
name = "r1"
kind = "router"

[[node]]
name = "m1"
kind = "router"

[[node]]
name = "m2"
kind = "router"

[[node]]
name = "r2"
kind = "router"

[[node]]
name = "server"

[[link]]
name = "c"
between = ["client", "r1"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "r1m1"
between = ["r1", "m1"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "m1r2"
between = ["m1", "r2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "r1m2"
between = ["r1", "m2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "m2r2"
between = ["m2", "r2"]
bandwidth = "100Mbps"
delay = "1ms"

[[link]]
name = "s"
between = ["r2", "server"]
bandwidth = "100Mbps"
delay = "1ms"

[[flow]]
name = "mp"
transport = "mptcp"
client = "client"
server = "server"
app = "download"
path_manager = "ndiffports"
subflows = 2
paths = {paths}
"""


def diamond(tmp_path, paths: str):
    return write(tmp_path, "diamond.toml", DIAMOND.format(paths=paths))


def test_pinned_paths_reach_the_engine_spec_and_steer_subflows(tmp_path):
    import mpsim

    sc = load_scenario(diamond(tmp_path, '[["c", "r1m1", "m1r2", "s"], ["c", "r1m2", "m2r2", "s"]]'))
    assert sc.to_engine_spec()["flows"][0]["paths"][1] == ["c", "r1m2", "m2r2", "s"]
    links = mpsim.run(sc).summary["links"]
    assert links["m1r2"]["b_to_a"]["bytes"] > 100_000 and links["m2r2"]["b_to_a"]["bytes"] > 100_000


@pytest.mark.parametrize(
    ("paths", "key", "message"),
    [
        ('[["c", "m1r2", "s"]]', "flow[0].paths[0][1]", "does not continue the path from 'r1'"),
        ('[["c", "nope"]]', "flow[0].paths[0][1]", "unknown link 'nope'"),
        ('[["c", "r1m1", "m1r2"]]', "flow[0].paths[0]", "ends at 'r2', not at the server"),
        ('[["c", "r1m1", "r1m1"]]', "flow[0].paths[0][2]", "visits 'r1' twice"),
        ("[[]]", "flow[0].paths[0]", "at least one link"),
    ],
)
def test_a_bad_pinned_path_is_refused_with_file_line_and_key(tmp_path, paths, key, message):
    err = error_of(diamond(tmp_path, paths))
    assert err.key == key and message in err.message
    paths_line = DIAMOND.splitlines().index("paths = {paths}") + 1
    assert err.line == paths_line and err.file.endswith("diamond.toml")
