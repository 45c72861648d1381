"""`mpsim reproduce raiciu2011` (issue 16, step 5): the scenario, the --quick
reproduction (claims, figures, Parquet, resuming, --k), and the full one (slow)."""

from __future__ import annotations


import pandas as pd
import pytest
from typer.testing import CliRunner

from mpsim import reproduce as rp
from mpsim.cli import app
from mpsim.reproductions import raiciu2011 as rc
from mpsim.scenario import load_scenario
from reproduction_checks import assert_rerun_resumes, read_claims

LIBRARY = rp.papers_dir() / "raiciu2011"
CLAIM_IDS = [
    "fig2-tcp-half", "fig2-8-subflows-near-optimal", "fig2-lia-rises-with-subflows",
    "fig2-uncoupled-rises-with-subflows", "fig3-worst-hosts-gain", "htsim-tcp", "htsim-lia-8",
]  # fmt: skip
FIGURES = ["fig2-throughput-vs-subflows.png", "fig3-ranked-host-throughput.png"]


def test_the_scenario_is_a_k8_fat_tree_permutation_and_the_variants_make_mptcp_of_it():
    sc = load_scenario(LIBRARY / rc.SCENARIO_FILE)
    assert len([n for n in sc.nodes if n.kind == "host"]) == 128 and len(sc.flows) == 128
    assert sc.simulation.forwarding == "ecmp"
    assert {(f.transport, f.cc) for f in sc.flows} == {("tcp", "reno")}
    lia = next(v for v in rc.VARIANTS if v.name == "lia")
    mp = load_scenario(LIBRARY / rc.SCENARIO_FILE, {**lia.settings, "traffic.subflows": 8})
    assert {(f.transport, f.cc, f.path_manager, f.subflows) for f in mp.flows} == {("mptcp", "lia", "ndiffports", 8)}
    # The same seed, the same permutation, whatever the transport.
    assert [(f.client, f.server) for f in mp.flows] == [(f.client, f.server) for f in sc.flows]


def test_claims_follow_the_numbers_they_are_given():
    per_run = pd.DataFrame(
        [{"variant": "tcp", "subflows": 1, "seed": s, "pct": 50.0 + s} for s in (1, 2, 3)]
        + [{"variant": v, "subflows": n, "seed": s, "pct": 40.0 + 6 * n + s}
           for v in ("lia", "uncoupled") for n in rc.SUBFLOWS for s in (1, 2, 3)]
    )  # fmt: skip
    flows = per_run.copy()
    got = {c.id: c for c in rc.claims(per_run, flows)}
    assert got["fig2-tcp-half"].agrees is True
    assert got["fig2-8-subflows-near-optimal"].agrees is True  # 40 + 48 + 2 = 90 %
    assert got["fig2-lia-rises-with-subflows"].agrees is True
    assert got["htsim-tcp"].agrees is True  # 5.2 Gb/s against 4.8
    falling = per_run.assign(pct=lambda f: f["pct"].where(f["subflows"] != 8, 20.0))
    again = {c.id: c for c in rc.claims(falling, falling)}
    assert again["fig2-lia-rises-with-subflows"].agrees is False
    assert again["fig2-8-subflows-near-optimal"].agrees is False
    assert {c.id: c for c in rc.claims(per_run, flows, k=16)}["htsim-tcp"].agrees is None


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("mpsim._core")
    out = tmp_path_factory.mktemp("raiciu") / "out"
    claims = rp.reproduce("raiciu2011", out, quick=True, jobs=1)
    return out, claims


def test_quick_writes_every_claim_with_the_contract_fields(quick):
    out, claims = quick
    data = read_claims(out, claims)
    assert [row["id"] for row in data] == CLAIM_IDS
    assert "--quick" in (out / rp.CLAIMS_MD).read_text()


def test_quick_writes_the_figures_and_the_tidy_data(quick):
    out, _ = quick
    for name in FIGURES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for variant in rc.VARIANTS:
        flows = pd.read_parquet(out / "data" / variant.name / "sweep.parquet")
        hosts = rc.QUICK_K**3 // 4
        assert len(flows) == hosts * len(variant.subflows) * rp.QUICK_SEEDS
        assert (flows["bytes_delivered"] > 0).all()
        assert sorted(flows["seed"].unique()) == [1, 2]


def test_a_rerun_resumes_without_running_again(quick, monkeypatch):
    assert_rerun_resumes("raiciu2011", *quick, monkeypatch)


def test_the_k_option_sizes_the_fat_tree_and_other_papers_refuse_it(tmp_path):
    ctx = rp.Context(tmp_path, options={"k": 16})
    assert rc.settings(ctx)["topology.k"] == 16
    assert rc.settings(rp.Context(tmp_path))["topology.k"] == rc.DEFAULT_K
    with pytest.raises(rp.ReproductionError, match="--k: hijawi2016 takes no such option"):
        rp.reproduce("hijawi2016", tmp_path / "x", quick=True, options={"k": 16})
    result = CliRunner().invoke(app, ["reproduce", "zuhairi2022", "--k", "16", "--out", str(tmp_path / "y")])
    assert result.exit_code != 0 and "takes no such option" in result.output


@pytest.mark.slow
def test_full_reproduction_writes_every_claim_and_figure(tmp_path):
    pytest.importorskip("mpsim._core")
    claims = rp.reproduce("raiciu2011", tmp_path / "out", jobs=2)
    assert [c.id for c in claims] == CLAIM_IDS
    assert all((tmp_path / "out" / name).is_file() for name in FIGURES)
    flows = pd.read_parquet(tmp_path / "out" / "data" / "lia" / "sweep.parquet")
    assert sorted(flows["seed"].unique()) == list(range(1, rp.DEFAULT_SEEDS + 1))
