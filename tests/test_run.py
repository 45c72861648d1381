"""The run loop and `mpsim run` plumbing, against a fake engine (see conftest.py)."""

from __future__ import annotations

import importlib.util
import itertools
import json

import mpsim
import pytest
from conftest import MINIMAL, SCENARIOS, write
from mpsim.cli import app
from mpsim.runner import SUMMARY_KEYS
from typer.testing import CliRunner

runner = CliRunner()


def test_run_slices_reports_progress_and_orders_the_summary(fake_core):
    seen = []
    results = mpsim.run(
        SCENARIOS / "dumbbell.toml", set={"simulation.duration": "2s"}, progress=lambda now, end: seen.append((now, end))
    )
    assert list(results.summary)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)
    assert results.summary["mpsim_version"] == mpsim.__version__
    assert len(seen) == 200 and seen[-1] == (2.0, 2.0)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    assert len(results.interfaces) == 2 * 5  # 2 samples x 5 links
    assert set(results.flows["flow"]) == {"reno", "cubic"}


def test_run_accepts_a_network_a_scenario_and_a_seed(fake_core):
    net = mpsim.Network("n", duration="1s")
    net.add_host("a")
    net.add_host("b")
    net.add_link("a", "b", bw="1Mbps")
    net.add_flow("a", "b")
    assert net.run(seed=7).summary["seed"] == 7
    scenario = mpsim.load_scenario(SCENARIOS / "dumbbell.toml", ["simulation.duration=1s"])
    assert mpsim.run(scenario, seed=3).summary["seed"] == 3
    assert mpsim.run(scenario).summary["seed"] == 1


def test_engine_value_errors_become_scenario_errors(fake_core, tmp_path):
    text = MINIMAL.replace('name = "f"', 'name = "refused"')
    path = write(tmp_path, "s.toml", text)
    with pytest.raises(mpsim.ScenarioError) as info:
        mpsim.run(path)
    assert str(info.value).startswith(f"{path}: engine: flow refused: the engine cannot build it")
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_run_writes_out_when_asked(fake_core, tmp_path):
    mpsim.run(SCENARIOS / "dumbbell.toml", set=["simulation.duration=2s"], out=tmp_path / "run")
    assert (tmp_path / "run" / "summary.json").exists()
    assert (tmp_path / "run" / "interfaces.parquet").exists()


def test_cli_summary_to_stdout_is_pure_json(fake_core):
    args = ["run", str(SCENARIOS / "dumbbell.toml"), "--set", "simulation.duration=2s", "--summary", "-"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert list(summary)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)
    assert summary["sim_time_s"] == 2.0
    assert "Flows" in result.stderr  # the table went to stderr


def test_cli_table_summary_file_and_plots(fake_core, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["run", str(SCENARIOS / "dumbbell.toml"), "--seed", "5", "--set", "simulation.duration=3s",
              "--plot", "--summary", "s/summary.json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Flows" in result.stdout and "cubic" in result.stdout and "bottleneck" in result.stdout
    assert json.loads((tmp_path / "s" / "summary.json").read_text())["seed"] == 5
    out = tmp_path / "out" / "dumbbell"
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["cwnd.png", "rtt.png", "throughput-flows.png", "throughput-interfaces.png"]
    plotted = runner.invoke(app, ["plot", str(out)])
    assert plotted.exit_code == 0 and plotted.stdout.count(".png") == 4


def test_cli_quiet_prints_nothing(fake_core, tmp_path):
    args = ["run", str(SCENARIOS / "two-path-tcp.toml"), "--set", "simulation.duration=1s", "--quiet"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and result.output == ""
    assert (tmp_path / "o" / "subflows.parquet").exists()


def test_cli_validate():
    result = runner.invoke(app, ["validate", str(SCENARIOS / "two-path-tcp.toml")])
    assert result.exit_code == 0
    assert result.stdout == f"{SCENARIOS / 'two-path-tcp.toml'}: ok (3 nodes, 3 links, 2 flows)\n"


@pytest.mark.skipif(importlib.util.find_spec("mpsim._core") is not None, reason="the engine is built")
def test_without_the_engine_run_says_how_to_build_it():
    with pytest.raises(mpsim.EngineMissingError, match="not built"):
        mpsim.run(SCENARIOS / "dumbbell.toml")
    result = runner.invoke(app, ["run", str(SCENARIOS / "dumbbell.toml")])
    assert result.exit_code == 1 and "not built" in result.stderr and "Traceback" not in result.output
