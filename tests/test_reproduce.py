"""The `mpsim reproduce` framework: paper registry, claim tables, errors.
Each paper's own reproduction has its test file (test_reproduce_<paper>.py)."""

from __future__ import annotations

import json
import sys
import types

import pytest
from typer.testing import CliRunner

from mpsim import reproduce as rp
from mpsim.cli import app


def test_every_paper_of_the_contract_is_listed():
    result = CliRunner().invoke(app, ["reproduce", "--list"])
    assert result.exit_code == 0
    for key in ("hijawi2016", "zuhairi2022", "khan2016", "abumohsen2021", "raiciu2011"):
        assert key in result.output


def test_an_unknown_paper_is_refused_with_the_list():
    result = CliRunner().invoke(app, ["reproduce", "nosuch"])
    assert result.exit_code == 2
    assert "unknown paper 'nosuch'" in result.output and "hijawi2016" in result.output


def test_an_unavailable_paper_says_so(tmp_path, monkeypatch):
    # Every paper of the contract is available now: register one that is not.
    monkeypatch.setitem(rp.PAPERS, "future2030", None)
    missing = next(k for k, m in rp.PAPERS.items() if m is None)
    result = CliRunner().invoke(app, ["reproduce", missing, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "not available" in result.output
    assert not (tmp_path / "o").exists()


def test_mean_and_t_interval_text():
    assert rp.fmt_ci([1.0, 2.0, 3.0]) == "2.00 +- 2.48"
    assert rp.fmt_ci([2e6, 4e6], scale=1e6, unit="Mbps", digits=1) == "3.0 +- 12.7 Mbps"
    assert rp.fmt_ci([5.0]) == "5.00 +- ?"


@pytest.fixture
def toy_paper(monkeypatch):
    module = types.ModuleType("toy_paper")
    module.PAPER = rp.Paper("toy", "A. Author, A toy paper, 2024", "two claims")

    def run(ctx):
        return [
            rp.Claim("c1", "x beats y", "x 2, y 1", "x 2.0, y 1.1", True, "as the paper"),
            rp.Claim("c2", "z | w", "fig 3", "n/a", None, "not checkable in simulation"),
        ]

    module.run = run
    monkeypatch.setitem(sys.modules, "toy_paper", module)
    monkeypatch.setitem(rp.PAPERS, "toy", "toy_paper")
    return module


def test_claims_are_written_as_json_and_markdown(tmp_path, toy_paper):
    claims = rp.reproduce("toy", tmp_path / "out", quick=True)
    assert [c.id for c in claims] == ["c1", "c2"]
    data = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert data[0] == {"id": "c1", "claim": "x beats y", "paper": "x 2, y 1", "ours": "x 2.0, y 1.1",
                       "agrees": True, "explanation": "as the paper"}  # fmt: skip
    assert data[1]["agrees"] is None
    md = (tmp_path / "out" / "claims.md").read_text()
    assert "| c2 | z \\| w |" in md and "cannot check" in md
    assert "--quick" in md and "1 of 2 claims agree" in md


def test_a_foreign_folder_is_refused(tmp_path, toy_paper):
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(rp.ResultsError, match="refusing"):
        rp.reproduce("toy", tmp_path)
