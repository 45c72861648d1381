"""End-to-end runs on the real engine; skipped until `mpsim._core` is built."""

from __future__ import annotations

import pytest

pytest.importorskip("mpsim._core")

import mpsim
from conftest import SCENARIOS
from mpsim.bench import run_case_subprocess

SHORT = {"simulation.duration": "5s"}


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("**/*.toml")), ids=lambda p: p.name)
def test_every_scenario_runs(path):
    results = mpsim.run(path, set=SHORT)
    summary = results.summary
    assert summary["sim_time_s"] == pytest.approx(5.0)
    assert set(summary["flows"]) == {f.name for f in mpsim.load_scenario(path).flows}
    for flow in summary["flows"].values():
        assert flow["bytes_delivered"] > 0
    for link in summary["links"].values():
        for direction in link.values():
            assert 0.0 <= direction["utilization"] <= 1.0 + 1e-9


def test_same_seed_same_bytes(tmp_path):
    for name in ("a", "b"):
        mpsim.run(SCENARIOS / "dumbbell.toml", set=SHORT, out=tmp_path / name)
    for path in (tmp_path / "a").glob("*.parquet"):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name
    summaries = [mpsim.Results.from_dir(tmp_path / n).summary for n in ("a", "b")]
    for s in summaries:
        s.pop("wall_time_s")
    assert summaries[0] == summaries[1]


def test_recorded_series_have_rows():
    results = mpsim.run(SCENARIOS / "two-path-tcp.toml", set=SHORT)
    assert len(results.interfaces) > 0
    assert len(results.subflows) > 0


def test_download_goodput_is_below_the_bottleneck():
    results = mpsim.run(SCENARIOS / "dumbbell.toml", set={"simulation.duration": "20s"})
    total = sum(f["goodput_bps"] for f in results.summary["flows"].values())
    assert 5e6 < total <= 10e6


@pytest.mark.slow
def test_bench_quick_case_runs_in_a_subprocess():
    row = run_case_subprocess("dumbbell-1flow-1g", quick=True)
    assert row["events"] > 0 and row["packet_hops"] > 0 and row["peak_memory_mib"] > 0


def test_a_send_buffer_bounds_the_rate_at_sndbuf_per_rtt():
    """At most one send buffer per round trip, for TCP and MPTCP alike."""
    tcp = mpsim.run(SCENARIOS / "dumbbell.toml", set={"simulation.duration": "20s", "flow.reno.sndbuf": "8KB"})
    reno = tcp.summary["flows"]["reno"]["goodput_bps"]
    # The round trip is 44 ms plus up to 120 ms in the bottleneck queue the cubic flow fills.
    assert 8_000 * 8 / 0.164 < reno <= 8_000 * 8 / 0.044
    mptcp = mpsim.run(SCENARIOS / "wifi-3g.toml", set={"simulation.duration": "20s", "flow.ftp.sndbuf": "8KB"})
    free = mpsim.run(SCENARIOS / "wifi-3g.toml", set={"simulation.duration": "20s"})
    assert mptcp.summary["flows"]["ftp"]["goodput_bps"] < 0.5 * free.summary["flows"]["ftp"]["goodput_bps"]
