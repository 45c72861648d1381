"""`mpsim reproduce zuhairi2022`: the scenario library, its generator, and the
reproduction's output (the --quick form here; the full form is marked slow)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mpsim import reproduce as rp
from mpsim.reproductions import zuhairi2022 as z
from mpsim.scenario import load_scenario
from reproduction_checks import assert_rerun_resumes, read_claims

LIBRARY = rp.papers_dir() / "zuhairi2022"
MINIMUM_CLAIMS = {"s1-cubic-best", "s2-cubic-best", "s3-cubic-best", "s4-cubic-worst-mptcp"}


def _mobility():
    spec = importlib.util.spec_from_file_location("zuhairi_mobility", LIBRARY / "mobility.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_files_are_what_the_generator_writes_from_its_seed(tmp_path):
    written = _mobility().generate(tmp_path)
    assert written, "the generator wrote nothing"
    for path in written:
        shipped = LIBRARY / path.relative_to(tmp_path)
        assert shipped.read_bytes() == path.read_bytes(), f"{shipped.name} differs: run mobility.py again"


def test_the_walk_reaches_the_coverage_edge_and_the_static_laptop_does_not():
    m = _mobility()
    distance, walk = m.moving_wifi(np.random.RandomState([m.SEED, 1]))
    rates = np.array([r for r, _ in walk])
    losses = np.array([loss for _, loss in walk])
    assert distance.max() <= np.hypot(*m.AREA_M)
    assert (rates < 4_000_000).any() and (losses > 0.01).any(), "the walk never limits WiFi"
    assert np.median(rates) > 4_000_000, "the walk limits WiFi most of the time"
    static_rate, static_loss = m.static_wifi()
    assert static_rate > 4_000_000 and static_loss == 0.0
    # Received power falls with distance: a farther point never gets a faster link.
    near, far = m.wifi_link(-60.0), m.wifi_link(-80.0)
    assert near[0] > far[0] and near[1] <= far[1]


@pytest.mark.parametrize("sc", z.SCENARIOS, ids=lambda sc: sc.file)
def test_every_scenario_and_its_regular_tcp_form_validate(sc):
    path = LIBRARY / sc.file
    scenario = load_scenario(path)
    flows = {f.name: f for f in scenario.flows}
    assert flows["dl"].transport == "mptcp" and flows["dl"].cc == "cubic"
    assert sum(f.app == "video" for f in scenario.flows) == {1: 0, 2: 1, 3: 0, 4: 2}[sc.number]
    regular = {f.name: f for f in z.realization(path, 1, regular=True).flows}["dl"]
    assert regular.transport == "tcp" and regular.client_interfaces == ["wifi"]


def test_run_seed_k_gets_environment_realization_k_and_seeds_past_the_last_cycle():
    path = LIBRARY / "s3-moving.toml"
    shipped = z.realizations(LIBRARY)
    assert shipped == _mobility().REALIZATIONS
    spec = [z.realization(path, seed, regular=False).to_engine_spec() for seed in (1, 2, shipped + 1)]
    # The file itself is realization 1: building it again changes nothing.
    assert spec[0] == load_scenario(path).to_engine_spec()
    assert spec[1] != spec[0]
    assert spec[2] == spec[0]
    links = {link["name"]: link for link in spec[1]["links"]}
    assert links["wifi"]["events"], "the walk's losses are link events"


def test_average_throughput_counts_an_unfinished_download_to_the_end_of_the_run():
    done = pd.Series({"bytes_delivered": 1_000_000, "completion_time_s": 4.0, "sim_time_s": 10.0, "start_s": 0.0})
    unfinished = pd.Series(
        {"bytes_delivered": 1_000_000, "completion_time_s": None, "sim_time_s": 10.0, "start_s": 2.0}
    )
    assert z.average_throughput_bps(done) == 2_000_000
    assert z.average_throughput_bps(unfinished) == 1_000_000


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("zuhairi") / "out"
    claims = rp.reproduce("zuhairi2022", out, quick=True, jobs=2)
    return out, claims


def test_quick_writes_every_claim_with_the_contract_fields(quick):
    out, claims = quick
    read_claims(out, claims, MINIMUM_CLAIMS)
    assert "--quick" in (out / rp.CLAIMS_MD).read_text()


def test_quick_writes_the_thesis_figures_and_the_tidy_data(quick):
    out, _ = quick
    for sc in z.SCENARIOS:
        assert (out / f"fig{sc.series_figure}-scenario{sc.number}-subflows.png").stat().st_size > 0
        assert (out / f"fig{sc.bars_figure}-scenario{sc.number}-average.png").stat().st_size > 0
        mptcp = pd.read_parquet(out / "data" / f"s{sc.number}-mptcp" / "sweep.parquet")
        assert set(mptcp["flow.dl.cc"]) == set(z.MPTCP_CCS)
        assert set(mptcp["seed"]) == {1, 2}
        regular = pd.read_parquet(out / "data" / f"s{sc.number}-regular" / "sweep.parquet")
        assert set(regular[regular["flow"] == "dl"]["transport"]) == {"tcp"}


def test_a_rerun_reads_the_runs_back_instead_of_running_them(quick, monkeypatch):
    assert_rerun_resumes("zuhairi2022", *quick, monkeypatch)


@pytest.mark.slow
def test_full_reproduction(tmp_path):
    claims = rp.reproduce("zuhairi2022", tmp_path / "out", jobs=2)
    data = json.loads((tmp_path / "out" / rp.CLAIMS_JSON).read_text())
    assert MINIMUM_CLAIMS <= {row["id"] for row in data}
    assert "10 seeds" in (tmp_path / "out" / rp.CLAIMS_MD).read_text()
    assert all(c.ours for c in claims)
    assert len(list(Path(tmp_path / "out").glob("fig4.*.png"))) == 8
