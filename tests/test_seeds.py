"""Seeds that change something: per-flow random start offsets, link jitter,
and a run that says so when nothing in it is random (issue 12, items 1-2)."""

from __future__ import annotations

import json

import mpsim
import pytest
from conftest import MINIMAL, SCENARIOS, write
from mpsim.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SHIPPED = sorted(SCENARIOS.glob("*.toml"))


def outcome(summary: dict) -> tuple:
    # Flows whose segments all fill the MTU can deliver the same bytes under two
    # seeds; what the links carried tells the runs apart.
    flows = tuple((name, f["bytes_delivered"], f["retransmitted_bytes"]) for name, f in summary["flows"].items())
    links = tuple((name, d["a_to_b"]["bytes"], d["b_to_a"]["bytes"]) for name, d in summary["links"].items())
    return flows + links


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_five_seeds_of_every_shipped_example_give_five_results(path):
    pytest.importorskip("mpsim._core")
    summaries = [mpsim.run(path, seed=seed).summary for seed in range(1, 6)]
    assert all(s["randomness"] is True for s in summaries), path
    assert len({outcome(s) for s in summaries}) == 5, [outcome(s) for s in summaries]


def test_a_scenario_without_randomness_says_so(tmp_path):
    pytest.importorskip("mpsim._core")
    path = write(tmp_path, "mini.toml", MINIMAL)
    summary_path = tmp_path / "s.json"
    result = runner.invoke(app, ["run", str(path), "--summary", str(summary_path)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "random" in line]
    assert len(notes) == 1, result.stderr
    assert "every seed gives the same results" in notes[0]
    assert json.loads(summary_path.read_text())["randomness"] is False


def test_a_random_scenario_prints_no_note(tmp_path):
    pytest.importorskip("mpsim._core")
    text = MINIMAL.replace('delay = "5ms"', 'delay = "5ms"\njitter = "1ms"')
    path = write(tmp_path, "mini.toml", text)
    result = runner.invoke(app, ["run", str(path), "--summary", "-", "-q"])
    assert result.exit_code == 0, result.output
    assert "random" not in result.stderr
    assert json.loads(result.stdout)["randomness"] is True


def test_start_jitter_draws_a_start_per_flow_and_seed(tmp_path):
    pytest.importorskip("mpsim._core")
    text = MINIMAL.replace('server = "b"', 'server = "b"\nstart = "1s"\nstart_jitter = "50ms"')
    path = write(tmp_path, "mini.toml", text)
    starts = [mpsim.run(path, seed=seed).summary["flows"]["f"]["start_s"] for seed in range(1, 9)]
    assert all(1.0 <= s <= 1.05 for s in starts), starts
    assert len(set(starts)) == len(starts), starts
    again = mpsim.run(path, seed=3).summary["flows"]["f"]["start_s"]
    assert again == starts[2]
    summary = mpsim.run(path, seed=3).summary
    assert summary["randomness"] is True


def test_simulation_start_jitter_applies_to_every_flow(tmp_path):
    pytest.importorskip("mpsim._core")
    text = MINIMAL.replace('duration = "10s"', 'duration = "10s"\nstart_jitter = "50ms"')
    text += '\n[[flow]]\nname = "g"\nclient = "a"\nserver = "b"\nstart_jitter = "0s"\n'
    path = write(tmp_path, "mini.toml", text)
    flows = mpsim.run(path).summary["flows"]
    assert 0.0 < flows["f"]["start_s"] <= 0.05
    assert flows["g"]["start_s"] == 0.0


def test_stop_must_come_after_the_latest_jittered_start(tmp_path):
    text = MINIMAL.replace('server = "b"', 'server = "b"\nstart = "1s"\nstart_jitter = "50ms"\nstop = "1.02s"')
    path = write(tmp_path, "mini.toml", text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "flow[0].stop" in result.stderr


def test_shared_bottleneck_lia_takes_about_one_reno_share():
    """The example's comment: the two LIA subflows together take about what the one Reno flow takes."""
    pytest.importorskip("mpsim._core")
    shares = []
    for seed in range(1, 6):
        flows = mpsim.run(SCENARIOS / "shared-bottleneck.toml", seed=seed).summary["flows"]
        mp, tcp = flows["mptcp"]["bytes_delivered"], flows["tcp"]["bytes_delivered"]
        shares.append(mp / (mp + tcp))
    mean = sum(shares) / len(shares)
    assert 0.4 <= mean <= 0.6, shares


def test_without_randomness_seeds_change_nothing_but_the_seed():
    """What `"randomness": false` promises, checked on MPTCP (whose keys do depend on the seed)."""
    pytest.importorskip("mpsim._core")
    still = {"simulation.start_jitter": "0s", "link.wifi.jitter": "0s", "link.3g.jitter": "0s",
             "simulation.duration": "20s"}  # fmt: skip
    runs = [mpsim.run(SCENARIOS / "wifi-3g.toml", seed=seed, set=still).summary for seed in (1, 2)]
    assert [r["randomness"] for r in runs] == [False, False]
    for r in runs:
        del r["seed"], r["wall_time_s"]
    assert runs[0] == runs[1]
