"""Topology helpers, benchmark case definitions and plots."""

from __future__ import annotations

import json

import mpsim.bench
import pytest
from mpsim import Results
from mpsim.bench import (
    CASES,
    BenchError,
    bdp_packets,
    case_named,
    dumbbell_bench,
    median_interval,
    summarise,
)
from mpsim.cli import app
from mpsim.errors import MpsimError
from mpsim.plot import plot_dir, plot_results
from mpsim.topo import dumbbell, edge_disjoint_paths, graph, path_bandwidth, two_path
from test_results import SUMMARY, traces
from typer.testing import CliRunner


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
        "dumbbell-1flow-1g", "dumbbell-100flow-1g", "mptcp-2path-1g", "mptcp-shared-bottleneck-1g", "cmt-2path",
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


def test_cmt_bench_case_is_an_smt_download_over_two_disjoint_paths():
    sc = case_named("cmt-2path").build("60s").to_scenario()
    assert sc.duration_s == 60.0
    spec = sc.to_engine_spec()
    (flow,) = spec["flows"]
    assert (flow["transport"], flow["variant"]) == ("cmt", "smt")
    paths = {lk["name"]: lk for lk in spec["links"]}
    assert sorted(paths) == ["p1", "p2"]  # direct links: disjoint, one client and one server interface each
    assert all({lk["a"], lk["b"]} == {"client", "server"} for lk in paths.values())
    assert [paths[p]["a_to_b"]["bandwidth_bps"] for p in ("p1", "p2")] == [20 * 10**6, 100 * 10**6]
    assert paths["p2"]["a_to_b"]["queue"] == {"packets": bdp_packets(100 * 10**6, 20)}


def test_cmt_bench_case_runs_and_counts_its_packets():
    pytest.importorskip("mpsim._core")
    row = mpsim.bench.run_case("cmt-2path", quick=True)
    assert row["case"] == "cmt-2path" and row["sim_time_s"] == 5.0
    assert row["events"] > 0 and row["packet_hops"] > 0


def test_bdp_is_rounded_up_to_whole_packets():
    assert bdp_packets(10**9, 14) == 1156  # 1.75 MB / 1514 B
    with pytest.raises(MpsimError, match="unknown bench case"):
        case_named("nope")


def test_median_interval_takes_the_binomial_order_statistics():
    # n = 30: P(Binomial(30, 1/2) <= 9) = 0.021 <= 0.025 < P(<= 10) = 0.049: ranks 10 and 21.
    assert median_interval([float(x) for x in range(30, 0, -1)]) == (10.0, 21.0)
    # n = 6: only the extremes (P(0) = 1/64); n = 5 is too few for 95 %.
    assert median_interval([3.0, 1.0, 2.0, 6.0, 5.0, 4.0]) == (1.0, 6.0)
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None


def bench_row(case, rate, events=100, hops=1000):
    return {
        "case": case, "sim_time_s": 5.0, "wall_s": hops / rate, "total_wall_s": 1.0, "events": events,
        "packet_hops": hops, "packet_hops_per_s": rate, "events_per_s": events * rate / hops,
        "peak_memory_mib": 140.0, "run_memory_mib": 5.0,
    }  # fmt: skip


def test_summary_pairs_each_round_with_the_reference():
    ref, mp = "dumbbell-100flow-1g", "mptcp-2path-1g"
    # A slow round slows both cases: the paired ratios stay at 0.8 and 0.6.
    rounds = [[bench_row(ref, 10.0), bench_row(mp, 8.0)], [bench_row(ref, 5.0), bench_row(mp, 3.0)],
              [bench_row(ref, 10.0), bench_row(mp, 8.0)]]  # fmt: skip
    rows = {r["case"]: r for r in summarise(rounds)}
    assert rows[ref]["relative_speed"] is None and rows[ref]["packet_hops_per_s"] == 10.0
    assert rows[mp]["rounds"] == 3
    assert rows[mp]["packet_hops_per_s"] == 8.0
    assert (rows[mp]["packet_hops_per_s_min"], rows[mp]["packet_hops_per_s_max"]) == (3.0, 8.0)
    assert rows[mp]["relative_speed"] == pytest.approx(0.8)
    assert rows[mp]["relative_speed_min"] == pytest.approx(0.6)
    assert rows[mp]["relative_speed_rounds"] == pytest.approx([0.8, 0.6, 0.8])
    assert rows[mp]["packet_hops_per_s_rounds"] == [8.0, 3.0, 8.0]
    assert rows[mp]["relative_speed_ci95"] is None  # three rounds are too few
    alone = summarise([[bench_row(mp, 8.0)]])
    assert alone[0]["relative_speed"] is None  # no reference was run


def test_summary_refuses_rounds_that_simulated_different_things():
    with pytest.raises(BenchError, match="differ between rounds"):
        summarise([[bench_row("dumbbell-1flow-1g", 10.0)], [bench_row("dumbbell-1flow-1g", 10.0, hops=999)]])


def test_bench_repeat_runs_every_case_once_per_round(monkeypatch):
    calls = []
    rates = iter([10.0, 7.0, 8.0, 6.0])

    def fake_run(name, quick=False):
        calls.append(name)
        return bench_row(name, next(rates))

    monkeypatch.setattr(mpsim.bench, "run_case_subprocess", fake_run)
    args = ["bench", "--quick", "--repeat", "2", "--case", "dumbbell-100flow-1g", "--case", "mptcp-2path-1g"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert calls == ["dumbbell-100flow-1g", "mptcp-2path-1g"] * 2  # interleaved
    rows = {r["case"]: r for r in json.loads(result.stdout)}
    assert rows["mptcp-2path-1g"]["relative_speed"] == pytest.approx((0.7 + 0.75) / 2)
    rates = iter([10.0, 7.0, 8.0, 6.0])
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "medians of 2 rounds" in table.stdout and "0.72" in table.stdout
    bad = CliRunner().invoke(app, ["bench", "--repeat", "0"])
    assert bad.exit_code != 0


@pytest.mark.slow
def test_bench_repeat_runs_real_cases():
    result = CliRunner().invoke(app, ["bench", "--quick", "--repeat", "2", "--case", "dumbbell-1flow-1g", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["rounds"] == 2 and row["packet_hops"] > 0
    assert row["packet_hops_per_s_min"] <= row["packet_hops_per_s"] <= row["packet_hops_per_s_max"]


def test_plots_are_written_for_recorded_series(tmp_path):
    paths = plot_results(Results(SUMMARY, traces()), tmp_path)
    assert sorted(p.name for p in paths) == ["cwnd.png", "rtt.png", "throughput-interfaces.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_plot_dir_reads_a_run_folder(tmp_path):
    Results(SUMMARY, traces()).save(tmp_path / "run")
    assert len(plot_dir(tmp_path / "run")) == 3
    assert Results(SUMMARY, {}).plot("flows") is not None  # an empty figure, not an error
