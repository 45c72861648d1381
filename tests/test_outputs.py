"""Where results go: targets checked before the run, run folders replaced
wholly and recording how they were made (issue 12, item 4)."""

from __future__ import annotations

import json

import mpsim
from conftest import MINIMAL, write
from mpsim.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def one_line_exit_2(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert needle in lines[0], lines[0]


def test_an_out_folder_under_a_file_is_refused_before_the_run(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    blocker = write(tmp_path, "blocker", "a file")
    result = runner.invoke(app, ["run", str(path), "--out", str(blocker / "run")])
    one_line_exit_2(result, "--out")


def test_a_summary_under_a_file_is_refused_before_the_run(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    blocker = write(tmp_path, "blocker", "a file")
    result = runner.invoke(app, ["run", str(path), "--summary", str(blocker / "s.json"), "--out", str(tmp_path / "o")])
    one_line_exit_2(result, "--summary")
    assert not (tmp_path / "o").exists()


def test_a_non_empty_folder_that_is_not_a_run_folder_is_refused(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    mine = tmp_path / "mine"
    write(mine, "thesis.tex", "precious")
    result = runner.invoke(app, ["run", str(path), "--out", str(mine)])
    one_line_exit_2(result, "not an mpsim run folder")
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_an_empty_folder_is_fine(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "empty"), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "empty" / "summary.json").exists()


def test_a_previous_run_is_replaced_wholly(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    out = tmp_path / "run"
    first = runner.invoke(app, ["run", str(path), "--out", str(out), "--plot", "-q"])
    assert first.exit_code == 0, first.output
    assert list(out.glob("*.png"))
    write(out, "stale.pcap", "from an older run")
    second = runner.invoke(app, ["run", str(path), "--out", str(out), "-q", "--seed", "7"])
    assert second.exit_code == 0, second.output
    assert not list(out.glob("*.png"))
    assert not (out / "stale.pcap").exists()
    assert json.loads((out / "summary.json").read_text())["seed"] == 7


def test_the_run_folder_records_how_it_was_made(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["run", str(path), "--out", str(out), "-q", "--seed", "3", "--set", "link.ab.bandwidth=20Mbps"]
    )
    assert result.exit_code == 0, result.output
    made = json.loads((out / "run.json").read_text())
    assert made["mpsim_version"] == mpsim.__version__
    assert made["seed"] == 3
    assert made["scenario_file"] == str(path)
    assert "link.ab.bandwidth=20Mbps" in made["overrides"]
    assert "simulation.seed=3" in made["overrides"]
    assert made["scenario"]["link"][0]["bandwidth"] == "20Mbps"
    assert made["scenario"]["simulation"]["seed"] == 3
    assert made["engine_spec"]["links"][0]["a_to_b"]["bandwidth_bps"] == 20_000_000


def test_the_python_api_refuses_a_foreign_folder_too(fake_core, tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    mine = tmp_path / "mine"
    write(mine, "notes.txt", "precious")
    try:
        mpsim.run(path, out=mine)
    except mpsim.MpsimError as exc:
        assert "not an mpsim run folder" in str(exc)
    else:
        raise AssertionError("expected an error")
    assert (mine / "notes.txt").read_text() == "precious"


def test_version_option():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"mpsim {mpsim.__version__}"
