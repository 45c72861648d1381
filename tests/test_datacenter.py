"""Datacenter fabrics and traffic matrices: the generators, the `[topology]`
and `[traffic]` scenario tables, and a scenario check that stays linear."""

from __future__ import annotations

import itertools

import mpsim.checks
import networkx as nx
import pytest
from conftest import write
from mpsim import Network, ScenarioError, load_scenario
from mpsim.datacenter import all_to_all, incast, matrix_pairs, permutation, random_pairs, stride
from mpsim.topo import edge_disjoint_paths, fat_tree, graph, leaf_spine


def test_path_check_visits_each_link_a_bounded_number_of_times(monkeypatch):
    """Checking that every flow has a path was a search per flow: quadratic in the hosts."""
    net = fat_tree(8)
    net.add_traffic("permutation")
    calls = 0
    real = mpsim.checks._other_end

    def counting(link, node):
        nonlocal calls
        calls += 1
        return real(link, node)

    monkeypatch.setattr(mpsim.checks, "_other_end", counting)
    sc = net.to_scenario()
    assert len(sc.links) == 384 and len(sc.flows) == 128
    assert calls <= 4 * (len(sc.links) + len(sc.flows))


# ------------------------------------------------------------ topologies


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_has_the_counts_of_al_fares(k):
    sc = fat_tree(k).to_scenario()
    kinds = [n.kind for n in sc.nodes]
    assert kinds.count("host") == k**3 // 4
    assert kinds.count("switch") == 5 * k * k // 4
    assert len(sc.links) == 3 * k**3 // 4
    g = graph(sc)
    assert all(g.degree(n.name) == (1 if n.kind == "host" else k) for n in sc.nodes)
    assert sc.simulation.forwarding == "ecmp"


def test_fat_tree_names_say_where_a_node_sits():
    sc = fat_tree(4).to_scenario()
    names = {n.name for n in sc.nodes}
    assert {"h0_0_0", "h3_1_1", "edge0_0", "edge3_1", "agg0_1", "core0", "core3"} <= names
    assert "h0_0_0-edge0_0" in {lk.name for lk in sc.links}
    # Aggregation switch a of every pod reaches cores a*k/2 .. a*k/2 + k/2 - 1.
    g = graph(sc)
    assert sorted(n for n in g.neighbors("agg2_1") if n.startswith("core")) == ["core2", "core3"]


def test_every_host_pair_of_a_fat_tree_is_connected_and_pods_meet_at_k_half_disjoint_paths():
    k = 4
    g = graph(fat_tree(k))
    hosts = [n for n, kind in g.nodes(data="kind") if kind == "host"]
    assert nx.is_connected(g)
    for a, b in itertools.combinations(hosts, 2):
        assert nx.has_path(g, a, b)
    # Edge switches of two pods: k/2 link-disjoint paths, (k/2)^2 shortest ones, one per core.
    assert len(edge_disjoint_paths(g, "edge0_0", "edge1_0")) == k // 2
    shortest = list(nx.all_shortest_paths(g, "h0_0_0", "h1_0_0"))
    assert len(shortest) == (k // 2) ** 2
    assert sorted(p[3] for p in shortest) == [f"core{c}" for c in range((k // 2) ** 2)]


def test_leaf_spine_counts_and_tiers():
    net = leaf_spine(4, 2, 3, bandwidth="10Gbps", tiers={"spine": {"bw": "40Gbps", "delay": "2us"}})
    sc = net.to_scenario()
    assert [n.kind for n in sc.nodes].count("host") == 12
    assert [n.kind for n in sc.nodes].count("switch") == 6
    assert len(sc.links) == 12 + 8
    rates = {lk.name: (lk.bandwidth_bps, lk.delay_ps) for lk in sc.links}
    assert rates["h0_0-leaf0"] == (10 * 10**9, 10**6)
    assert rates["leaf3-spine1"] == (40 * 10**9, 2 * 10**6)
    g = graph(sc)
    assert len(list(nx.all_shortest_paths(g, "h0_0", "h3_2"))) == 2


def test_oversubscription_divides_the_upper_tiers():
    sc = fat_tree(4, bandwidth="12Gbps", oversubscription=3, tiers={"core": {"bw": "40Gbps"}}).to_scenario()
    rates = {lk.name: lk.bandwidth_bps for lk in sc.links}
    assert rates["h0_0_0-edge0_0"] == 12 * 10**9
    assert rates["edge0_0-agg0_0"] == 4 * 10**9
    assert rates["agg0_0-core0"] == 40 * 10**9  # a tier's own bandwidth wins


def test_generator_errors_name_the_call_and_key():
    with pytest.raises(ScenarioError, match=r"fat_tree\(5\).*k: k must be an even number"):
        fat_tree(5)
    with pytest.raises(ScenarioError, match=r"unknown tier 'spine'"):
        fat_tree(4, tiers={"spine": {"bw": "1Gbps"}})
    with pytest.raises(ScenarioError, match=r"oversubscription: must be at least 1"):
        leaf_spine(2, 2, 2, oversubscription=0.5)
    with pytest.raises(ScenarioError, match=r"tier 'core'.*bandwidth"):
        fat_tree(4, tiers={"core": {"bw": "fast"}})


def test_a_fabric_can_be_added_to_a_network_with_other_nodes():
    net = Network("mixed", duration="1s", forwarding="ecmp")
    net.add_host("outside")
    fat_tree(4, net=net)
    net.add_link("outside", "core0", bw="1Gbps")
    net.add_flow("outside", "h3_1_1")
    assert len(net.to_scenario().nodes) == 37
    with pytest.raises(ScenarioError, match="node name 'core0' is already used"):
        fat_tree(4, net=net)


# ------------------------------------------------------------ traffic matrices

HOSTS = [f"h{i}" for i in range(16)]


def test_permutation_is_a_derangement_and_the_seed_places_it():
    for seed in range(20):
        pairs = permutation(HOSTS, seed)
        assert sorted(a for a, _ in pairs) == sorted(HOSTS)
        assert sorted(b for _, b in pairs) == sorted(HOSTS)
        assert all(a != b for a, b in pairs)
    assert permutation(HOSTS, 3) == permutation(HOSTS, 3)
    assert permutation(HOSTS, 3) != permutation(HOSTS, 4)
    assert permutation(["a", "b"], 9) == [("a", "b"), ("b", "a")]


def test_random_matrix_never_sends_to_itself_and_repeats_with_its_seed():
    pairs = random_pairs(HOSTS, 5)
    assert [a for a, _ in pairs] == HOSTS
    assert all(a != b for a, b in pairs)
    assert pairs == random_pairs(HOSTS, 5) and pairs != random_pairs(HOSTS, 6)
    # Over many seeds every other host is drawn.
    assert {b for s in range(200) for a, b in random_pairs(HOSTS, s) if a == "h0"} == set(HOSTS) - {"h0"}


def test_stride_follows_its_formula():
    assert stride(HOSTS, 4) == [(HOSTS[i], HOSTS[(i + 4) % 16]) for i in range(16)]
    with pytest.raises(ValueError, match="not a multiple"):
        stride(HOSTS, 16)


def test_incast_has_its_fan_in_onto_one_receiver():
    pairs = incast(HOSTS, 5, seed=2)
    receivers = {b for _, b in pairs}
    senders = [a for a, _ in pairs]
    assert len(pairs) == 5 and len(receivers) == 1 and len(set(senders)) == 5
    assert receivers.isdisjoint(senders)
    assert pairs == incast(HOSTS, 5, seed=2) and pairs != incast(HOSTS, 5, seed=3)
    with pytest.raises(ValueError, match="fan_in must be 1 to 15"):
        incast(HOSTS, 16, seed=1)


def test_all_to_all_has_every_ordered_pair():
    pairs = all_to_all(HOSTS[:5])
    assert len(pairs) == 20 and len(set(pairs)) == 20 and all(a != b for a, b in pairs)


def test_matrix_keys_belong_to_their_matrix():
    with pytest.raises(ValueError, match="key 'stride' applies only to matrix = 'stride'"):
        matrix_pairs("permutation", HOSTS, 1, stride_hosts=2)
    with pytest.raises(ValueError, match="matrix 'incast' needs key 'fan_in'"):
        matrix_pairs("incast", HOSTS, 1)
    with pytest.raises(ValueError, match="bad value 'ring'"):
        matrix_pairs("ring", HOSTS, 1)


def test_add_traffic_makes_flows_with_the_given_keys_and_the_scenario_seed():
    net = fat_tree(4, seed=7)
    keys = {"transport": "mptcp", "cc": "lia", "path_manager": "ndiffports", "subflows": 8, "size": "1MB"}
    names = net.add_traffic("permutation", **keys)
    sc = net.to_scenario()
    assert len(names) == 16 == len(sc.flows)
    assert [(f.client, f.server) for f in sc.flows] == permutation(net.hosts(), 7)
    assert all(f.subflows == 8 and f.size_bytes == 10**6 and f.path_manager == "ndiffports" for f in sc.flows)
    assert names[0] == f"{sc.flows[0].client}-{sc.flows[0].server}"
    with pytest.raises(ScenarioError, match=r"add_traffic\('stride'\).*stride: matrix 'stride' needs key 'stride'"):
        net.add_traffic("stride")
    with pytest.raises(ScenarioError, match=r"add_traffic\('random'\).*subflows"):
        net.add_traffic("random", transport="mptcp", path_manager="ndiffports", subflows=9)


def test_workloads_run_on_generated_hosts():
    net = leaf_spine(2, 2, 2, duration="50ms")
    net.add_traffic(
        "stride", stride=1, app="http", size_distribution={"kind": "exponential", "mean": "20KB"},
        arrivals="poisson", load=0.2,
    )  # fmt: skip
    spec = net.to_scenario().to_engine_spec()
    rate = spec["flows"][0]["app"]["arrival_rate_per_s"]
    assert rate == pytest.approx(0.2 * 10e9 / (8 * 20_000))


# ------------------------------------------------------------ scenario keys

FILE = """\
name = "ft"

[simulation]
duration = "10ms"
forwarding = "ecmp"
seed = {seed}

[topology]
kind = "fat_tree"
k = 4
bandwidth = "10Gbps"
delay = "1us"
queue = "100pkt"
{topology}
[traffic]
matrix = "permutation"
transport = "mptcp"
path_manager = "ndiffports"
subflows = 8
{traffic}"""


def scenario_file(tmp_path, seed=1, topology="", traffic=""):
    return write(tmp_path, "ft.toml", FILE.format(seed=seed, topology=topology, traffic=traffic))


def test_topology_and_traffic_tables_expand_like_the_builder(tmp_path):
    sc = load_scenario(scenario_file(tmp_path, seed=3))
    built = fat_tree(4, seed=3, duration="10ms")
    built.add_traffic("permutation", transport="mptcp", path_manager="ndiffports", subflows=8)
    a, b = sc.to_engine_spec(), built.to_scenario().to_engine_spec()
    assert a["nodes"] == b["nodes"] and a["links"] == b["links"] and a["flows"] == b["flows"]
    assert len(a["flows"]) == 16 and all(f["subflows"] == 8 for f in a["flows"])


def test_the_traffic_seed_is_the_scenario_seed_unless_given(tmp_path):
    pairs = lambda sc: [(f.client, f.server) for f in sc.flows]  # noqa: E731
    one, two = load_scenario(scenario_file(tmp_path, seed=1)), load_scenario(scenario_file(tmp_path, seed=2))
    assert pairs(one) != pairs(two)
    assert pairs(one) == pairs(load_scenario(scenario_file(tmp_path, seed=1)))
    fixed = [load_scenario(scenario_file(tmp_path, seed=s, traffic="seed = 9\n")) for s in (1, 2)]
    assert pairs(fixed[0]) == pairs(fixed[1])


def test_overrides_reach_the_generators(tmp_path):
    sc = load_scenario(scenario_file(tmp_path), overrides={"topology.k": 6, "traffic.subflows": 2})
    assert len(sc.flows) == 54 and {f.subflows for f in sc.flows} == {2}


def test_tier_tables_set_their_links(tmp_path):
    path = scenario_file(tmp_path, topology='oversubscription = 2\n[topology.core]\nbandwidth = "40Gbps"\n')
    rates = {lk.name: lk.bandwidth_bps for lk in load_scenario(path).links}
    assert rates["h0_0_0-edge0_0"] == 10 * 10**9
    assert rates["edge0_0-agg0_0"] == 5 * 10**9
    assert rates["agg0_0-core0"] == 40 * 10**9


@pytest.mark.parametrize(
    ("topology", "traffic", "where"),
    [
        ("", "stride = 2\n", r"ft.toml:20: traffic.stride: key 'stride' applies only to matrix = 'stride'$"),
        ("", "fan_out = 2\n", r"ft.toml:20: traffic.fan_out: unknown key 'fan_out'$"),
        ("", "initial_cwnd = 0\n", r"ft.toml:20: traffic.initial_cwnd: must be positive"),
        ("", 'client = "h0_0_0"\n', r"ft.toml:20: traffic.client: key 'client' comes from the matrix"),
        ("leaves = 2\n", "", r"ft.toml:14: topology.leaves: key 'leaves' does not apply to kind 'fat_tree'$"),
        ('[topology.host]\nqueue = "10B"\n', "", r"ft.toml:15: topology.host.queue: a queue of 10 bytes .*packet$"),
        ('[topology.host]\ndelay = "soon"\n', "", r"ft.toml:15: topology.host.delay: cannot read 'soon'"),
        ('[topology.edge]\ndelay = "1us"\n', "", r"ft.toml:14: topology.edge: unknown key 'edge'"),
        # One problem, not one per generated flow.
        ("", 'start = "20ms"\n', r"ft.toml:20: traffic.start: the flow starts at 20ms, .* run \(10ms\)$"),
    ],
)
def test_errors_in_generator_tables_name_file_line_and_key(tmp_path, topology, traffic, where):
    with pytest.raises(ScenarioError, match=where):
        load_scenario(scenario_file(tmp_path, topology=topology, traffic=traffic))


def test_a_bad_k_is_reported_at_its_line(tmp_path):
    path = write(tmp_path, "k.toml", FILE.format(seed=1, topology="", traffic="").replace("k = 4", "k = 3"))
    with pytest.raises(ScenarioError, match=r"k.toml:10: topology.k: k must be an even number"):
        load_scenario(path)


def test_a_generated_fat_tree_runs_with_ecmp_and_mptcp_spreading(tmp_path):
    pytest.importorskip("mpsim._core")
    import mpsim

    # A 2 ms minimum RTO: reference mode's 1 s (RFC 6298) would outlast the run after a lost retransmission.
    overrides = {"traffic.size": "2MB", "traffic.min_rto": "2ms", "record.paths": True, "simulation.duration": "50ms"}
    sc = load_scenario(scenario_file(tmp_path), overrides=overrides)
    summary = mpsim.run(sc).summary
    assert all(f["bytes_delivered"] == 2 * 10**6 for f in summary["flows"].values())
    # ndiffports subflows of one connection leave the pod over more than one core switch.
    cores = {}
    for entry in summary["paths"]:
        cores.setdefault(entry["flow"], set()).update(lk for lk in entry["links"] if "core" in lk)
    assert sum(len(c) > 2 for c in cores.values()) >= len(cores) // 2


def test_a_lost_retransmission_holds_a_reference_flow_for_the_rfc6298_minimum_rto():
    """Why the datacenter scenarios set min_rto: on a fabric with microsecond
    round trips, slow start overflows a queue by far more than the path holds;
    RFC 6675 recovery cannot see a retransmission lost again, so the flow waits
    for its RTO, at least 1 s in reference mode (RFC 6298 (2.4))."""
    pytest.importorskip("mpsim._core")
    import mpsim

    done = {}
    for min_rto in (None, "2ms"):
        net = leaf_spine(2, 2, 1, bandwidth="1Gbps", delay="1us", duration="2s")
        net.add_traffic("permutation", size="2MB", **({"min_rto": min_rto} if min_rto else {}))
        done[min_rto] = list(mpsim.run(net.to_scenario()).summary["flows"].values())
    assert all(f["completion_time_s"] > 1.0 and f["subflows"][0]["timeouts"] >= 1 for f in done[None])
    assert all(f["completion_time_s"] < 0.05 for f in done["2ms"])


def test_the_same_seed_gives_the_same_fabric_run_and_another_seed_another(tmp_path):
    pytest.importorskip("mpsim._core")
    import mpsim

    overrides = {"traffic.size": "1MB", "traffic.min_rto": "2ms", "record.paths": True}
    runs = []
    for seed in (1, 1, 2):
        sc = load_scenario(scenario_file(tmp_path, seed=seed), overrides=overrides)
        summary = mpsim.run(sc).summary
        runs.append({k: v for k, v in summary.items() if k not in ("wall_time_s", "mpsim_version")})
    assert runs[0] == runs[1]
    assert runs[0]["paths"] != runs[2]["paths"]
