"""`mpsim reproduce hijawi2016` (issue 13, items 5, 6 and 8): the scenario
library, the --quick reproduction (claims, figures, Parquet, resuming), and
the full one (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mpsim import reproduce as rp
from mpsim.reproductions import hijawi2016 as hj
from mpsim.scenario import load_scenario
from reproduction_checks import assert_rerun_resumes, read_claims

LIBRARY = rp.papers_dir() / "hijawi2016"
CLAIM_IDS = [
    "fig2-mptcp-sum", "fig2-mptcp-beats-tcp", "fig2-3g-less-stable", "fig2-mptcp-dips",
    "fig3-mptcp-higher", "fig3-tcp-60", "fig3-mptcp-170", "fig3-3g-all-ftp", "fig3-wifi-shared",
    "fig3-tcp-unharmed", "fig3-unsteady-early",
    "fig4-two-subflows-better", "fig4-gain-70",
    "fig5-mptcp-never-zero", "fig5-tcp-zero",
    "fig6-lia-best", "fig6-balia-good-early", "fig6-olia-wvegas-low", "fig6-olia-wvegas-unstable",
    "fig7-balia-best", "fig7-wvegas-above-lia-olia",
]  # fmt: skip
FIGURES = [
    "fig2-throughput-normal.png", "fig3-throughput-heavy.png", "fig4-subflows.png",
    "fig5-handover.png", "fig6-cc-normal.png", "fig7-cc-heavy.png",
]  # fmt: skip


# ------------------------------------------------------------ the scenario library (no engine)


def test_the_shipped_3g_trace_is_the_documented_generator_output():
    assert (LIBRARY / hj.THREE_G_TRACE_FILE).read_text(encoding="utf-8") == hj.three_g_trace_text()


def test_the_3g_trace_drops_where_the_paper_says_and_stays_below_the_interface_speed():
    rates = dict(hj.three_g_trace())
    assert len(rates) == 600
    for drop_s in hj.THREE_G_DROPS_S:
        assert rates[drop_s] == rates[drop_s + 9] == 1000  # 25 % of 4 Mbps, in kbps
        assert rates[drop_s - 1] > 1000 and rates[drop_s + 10] > 1000
    assert max(rates.values()) <= 4000 and min(rates.values()) >= 1000


@pytest.mark.parametrize("name", ["normal.toml", "heavy.toml", "handover-tcp.toml", "handover-mptcp.toml"])
def test_every_experiment_of_a_scenario_validates_with_its_overrides(name):
    for quick in (False, True):
        timeline = hj.Timeline(hj.QUICK_DIVISOR if quick else 1.0)
        for exp in (e for e in hj.EXPERIMENTS if e.scenario == name):
            sc = load_scenario(LIBRARY / name, {**timeline.overrides(name), **exp.settings})
            assert sc.duration_s == pytest.approx(timeline.end_s)
            assert all(f.cc_mode == "linux" for f in sc.flows)  # the paper ran Linux's MPTCP kernel


def test_quick_runs_divide_every_time_of_the_paper():
    timeline = hj.Timeline(15.0)
    tcp = load_scenario(LIBRARY / "handover-tcp.toml", timeline.overrides("handover-tcp.toml"))
    assert tcp.simulation.duration_ps == 40 * 10**12
    assert tcp.links[0].events[0].at_ps == pytest.approx(100 / 15 * 10**12, rel=1e-6)
    assert tcp.flows[0].handover.after_down_ps == 2 * 10**12
    heavy = load_scenario(LIBRARY / "heavy.toml", timeline.overrides("heavy.toml"))
    assert heavy.flows[1].name == "video" and heavy.flows[1].start_ps == 20 * 10**12


def test_windows_and_ten_reading_averages_follow_the_sample_times():
    frame = pd.DataFrame({1: [float(i) for i in range(1, 21)], 2: [2.0] * 20}, index=[float(i) for i in range(1, 21)])
    assert hj.window(frame, 0, 10).tolist() == [5.5, 2.0]  # samples 1..10, (0, 10]
    assert hj.window(frame, 10, 20).tolist() == [15.5, 2.0]
    b = hj.blocks(frame)
    assert b.index.tolist() == [10.0, 20.0] and b[1].tolist() == [5.5, 15.5]
    assert hj.clearly_above(pd.Series([1.0, 1.1, 0.9])) and not hj.clearly_above(pd.Series([1.0, -1.0, 0.5]))


# ------------------------------------------------------------ the quick reproduction


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("mpsim._core")
    out = tmp_path_factory.mktemp("hijawi") / "out"
    claims = rp.reproduce("hijawi2016", out, quick=True, jobs=1)
    return out, claims


def test_quick_writes_every_claim_with_the_contract_fields(quick):
    out, claims = quick
    data = read_claims(out, claims)
    assert [row["id"] for row in data] == CLAIM_IDS
    assert [r["id"] for r in data if r["agrees"] is None] == ["fig3-unsteady-early"]
    md = (out / rp.CLAIMS_MD).read_text()
    assert "--quick" in md and all(f"| {cid} |" in md for cid in CLAIM_IDS)


def test_quick_writes_the_six_figures_and_the_tidy_data(quick):
    out, _ = quick
    for name in FIGURES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for exp in hj.EXPERIMENTS:
        flows = pd.read_parquet(out / "data" / exp.name / "sweep.parquet")
        configs = len(next(iter(exp.grid.values()))) if exp.grid else 1
        assert len(flows[flows["flow"] == "ftp"]) == configs * rp.QUICK_SEEDS
        assert sorted(flows["seed"].unique()) == [1, 2]


def test_quick_numbers_are_of_the_runs_not_made_up(quick):
    """The Fig. 5 TCP download delivers nothing between the WiFi going down
    and the reconnection, and both Fig. 2 TCP runs carry data."""
    out, _ = quick
    data = {row["id"]: row for row in json.loads((out / rp.CLAIMS_JSON).read_text())}
    assert data["fig5-tcp-zero"]["agrees"] is True
    assert "zero in 2 of 2 seeds" in data["fig5-tcp-zero"]["ours"]
    flows = pd.read_parquet(out / "data" / "fig2-tcp-3g" / "sweep.parquet")
    assert (flows["bytes_delivered"] > 0).all()


def test_a_rerun_resumes_without_running_again(quick, monkeypatch):
    assert_rerun_resumes("hijawi2016", *quick, monkeypatch)


# ------------------------------------------------------------ the full reproduction


@pytest.mark.slow
def test_full_reproduction_writes_every_claim_and_figure(tmp_path):
    pytest.importorskip("mpsim._core")
    claims = rp.reproduce("hijawi2016", tmp_path / "out", jobs=2)
    assert [c.id for c in claims] == CLAIM_IDS
    assert all(Path(tmp_path / "out" / name).is_file() for name in FIGURES)
    flows = pd.read_parquet(tmp_path / "out" / "data" / "fig6-cc" / "sweep.parquet")
    assert sorted(flows["seed"].unique()) == list(range(1, rp.DEFAULT_SEEDS + 1))
