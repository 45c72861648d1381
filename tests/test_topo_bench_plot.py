"""Topology helpers, benchmark case definitions and plots."""

from __future__ import annotations

import pytest
from mpsim import Results
from mpsim.bench import CASES, bdp_packets, case_named, dumbbell_bench
from mpsim.errors import MpsimError
from mpsim.plot import plot_dir, plot_results
from mpsim.topo import dumbbell, edge_disjoint_paths, graph, path_bandwidth, two_path
from test_results import SUMMARY, traces


def test_dumbbell_topology():
    net = dumbbell(3, "10Mbps", "20ms", "100Mbps", "1ms", "100pkt")
    for i in range(1, 4):
        net.add_flow(f"rcv{i}", f"snd{i}")
    sc = net.to_scenario()
    assert (len(sc.nodes), len(sc.links), len(sc.flows)) == (8, 7, 3)
    g = graph(sc)
    path = ["snd1", "s1", "s2", "rcv1"]
    assert path_bandwidth(g, path) == 10_000_000
    assert edge_disjoint_paths(g, "snd1", "rcv2") == [path[:3] + ["rcv2"]]


def test_two_path_has_two_disjoint_client_links():
    net = two_path()
    g = graph(net)
    assert sorted(k for _, _, k in g.edges(keys=True)) == ["3g", "wan", "wifi"]
    assert len(edge_disjoint_paths(g, "client", "router")) == 2  # parallel links count twice
    assert len(edge_disjoint_paths(g, "client", "server")) == 1  # both share the wan link
    assert path_bandwidth(g, ["client", "router"]) == 4_000_000


def test_bench_cases_build_valid_scenarios():
    assert [c.name for c in CASES] == [
        "dumbbell-1flow-1g", "dumbbell-100flow-1g", "mptcp-2path-1g", "mptcp-shared-bottleneck-1g",
    ]  # fmt: skip
    for case in CASES[:2]:
        sc = case.build("5s").to_scenario()
        spec = sc.to_engine_spec()
        assert spec["duration_ps"] == 5 * 10**12
        bottleneck = next(lk for lk in spec["links"] if lk["name"] == "bottleneck")
        assert bottleneck["a_to_b"]["bandwidth_bps"] == 10**9
        assert bottleneck["a_to_b"]["delay_ps"] == 5 * 10**9
        assert bottleneck["a_to_b"]["queue"] == {"packets": bdp_packets(10**9, 14)}
        assert all(f["cc"] == "reno" and f["delayed_ack"] for f in spec["flows"])
        access = next(lk for lk in spec["links"] if lk["name"] != "bottleneck")
        assert (access["a_to_b"]["bandwidth_bps"], access["a_to_b"]["delay_ps"]) == (10**10, 10**9)
    assert len(dumbbell_bench(100, "60s").to_scenario().flows) == 100


def test_bdp_is_rounded_up_to_whole_packets():
    assert bdp_packets(10**9, 14) == 1156  # 1.75 MB / 1514 B
    with pytest.raises(MpsimError, match="unknown bench case"):
        case_named("nope")


def test_plots_are_written_for_recorded_series(tmp_path):
    paths = plot_results(Results(SUMMARY, traces()), tmp_path)
    assert sorted(p.name for p in paths) == ["cwnd.png", "rtt.png", "throughput-interfaces.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_plot_dir_reads_a_run_folder(tmp_path):
    Results(SUMMARY, traces()).save(tmp_path / "run")
    assert len(plot_dir(tmp_path / "run")) == 3
    assert Results(SUMMARY, {}).plot("flows") is not None  # an empty figure, not an error
