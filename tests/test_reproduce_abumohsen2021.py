"""`mpsim reproduce abumohsen2021`: the scenario library, MPSSHetN's admission
rule and the topology behind it, and the reproduction's output (the --quick
form here; the full form is marked slow)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from mpsim import reproduce as rp
from mpsim.errors import ScenarioError
from mpsim.reproductions import abumohsen2021 as a
from mpsim.scenario import load_scenario
from reproduction_checks import assert_rerun_resumes, read_claims

LIBRARY = rp.papers_dir() / a.KEY
#: The issue's minimum set of claims.
MINIMUM_CLAIMS = {
    "t4.1-mptcp-beats-above-100kb",
    "t4.2-gap0.99-sptcp-wins",
    "t4.3-path-bandwidth-is-min-link",
    "t5.2-never-slower-controller",
    "t5.2-never-slower-emulated",
    "t5.2-10kb-equals-sptcp-controller",
    "t5.2-10kb-equals-sptcp-emulated",
}
FIGURES = (
    "fig4.3-long-homogeneous.png",
    "fig4.4-long-heterogeneous.png",
    "fig4.9-short-homogeneous.png",
    "fig4.10-4.11-short-heterogeneous.png",
    "fig4.13-middle-link.png",
    "fig5.4-5.5-sptcp-disjoint-mpsshetn.png",
    "beyond-mixed-workload.png",
)


def _ctx(tmp_path: Path, quick: bool = True) -> rp.Context:
    return rp.Context(tmp_path, quick=quick, seeds=1, jobs=1)


@pytest.mark.parametrize("name", sorted(p.name for p in LIBRARY.glob("*.toml")))
def test_every_library_scenario_validates(name):
    scenario = load_scenario(LIBRARY / name)
    assert scenario.flows, name


def test_the_registry_points_at_this_module():
    assert rp.PAPERS["abumohsen2021"] == "mpsim.reproductions.abumohsen2021"
    assert any(p.key == "abumohsen2021" for p in rp.available())


def test_sptcp_is_one_tcp_connection_on_path_1_and_mptcp_uses_both(tmp_path):
    ctx = _ctx(tmp_path, quick=False)
    sptcp = {f.name: f for f in a.two_path_variant(ctx, tcp=True).flows}["web"]
    mptcp = {f.name: f for f in a.two_path_variant(ctx).flows}["web"]
    assert sptcp.transport == "tcp" and sptcp.client_interfaces == ["p1-1"]
    assert sptcp.paths == [["p1-1", "p1-2", "p1-3", "srv"]]
    assert mptcp.transport == "mptcp" and len(mptcp.paths) == 2
    assert mptcp.repeat == a.REPEAT


def test_the_gap_sets_every_link_of_path_2_and_the_long_form_is_a_download(tmp_path):
    ctx = _ctx(tmp_path, quick=False)
    scenario = a.two_path_variant(ctx, path2=dict.fromkeys(a.PATH2_LINKS, a.gap_rate(0.99)), long=True)
    links = {link.name: link for link in scenario.links}
    spec = {link["name"]: link for link in scenario.to_engine_spec()["links"]}
    for name in a.PATH2_LINKS:
        assert spec[name]["a_to_b"]["bandwidth_bps"] == 100_000, name
    assert spec["p1-2"]["a_to_b"]["bandwidth_bps"] == 10_000_000
    assert "p2-1" in links
    flow = {f.name: f for f in scenario.flows}["web"]
    assert flow.app == "download" and flow.size_bytes == 100_000_000


@pytest.mark.parametrize("gap, rate", [(0.99, "0.1Mbps"), (0.9, "1Mbps"), (0.6, "4Mbps"), (0.4, "6Mbps")])
def test_gap_rates_follow_equation_4_1(gap, rate):
    assert a.gap_rate(gap) == rate
    assert a.bandwidth_gap(10e6, float(rate[:-4]) * 1e6) == pytest.approx(gap)


def test_the_topology_module_finds_table_5_3s_paths(tmp_path):
    ctx = _ctx(tmp_path)
    paths = a.three_paths(ctx)
    assert [p.name for p in paths] == ["P1", "P2", "P3"]
    assert [p.bandwidth_bps for p in paths] == [10e6, 0.1e6, 6e6]
    assert [p.switches for p in paths] == [("s1", "s3", "s4", "s2"), ("s1", "s5", "s6", "s2"), ("s1", "s7", "s8", "s2")]
    found = a.disjoint_switch_paths(ctx)
    assert sorted(p for p, _ in found) == sorted(p.switches for p in paths)
    assert sorted(bw for _, bw in found) == [0.1e6, 6e6, 10e6]


def test_the_thresholds_come_from_the_mpsshetn_scenario(tmp_path):
    table = a.thresholds(_ctx(tmp_path))
    assert table == [(50e3, 0.0), (100e3, 0.4), (200e3, 0.6), (500e3, 0.7), (math.inf, 0.9)]
    # Upper bounds are exclusive (Table 5.1: F < 50 KB; 50 KB <= F < 100 KB ...).
    assert a.threshold_for(49_999, table) == 0.0
    assert a.threshold_for(50_000, table) == 0.4
    assert a.threshold_for(499_999, table) == 0.7
    assert a.threshold_for(5_000_000, table) == 0.9


def test_mpsshetn_admits_a_join_only_within_the_threshold():
    paths = [a.PathInfo(f"P{i}", (), (), bw) for i, bw in enumerate((10e6, 0.1e6, 6e6, 4e6), 1)]
    table = [(50e3, 0.0), (100e3, 0.4), (200e3, 0.6), (math.inf, 0.9)]
    assert a.admitted(10_000, paths, table) == (0,)
    # A gap equal to the threshold is admitted (Algorithm 2: gap <= threshold).
    assert a.admitted(60_000, paths, table) == (0, 2)
    assert a.admitted(150_000, paths, table) == (0, 2, 3)
    assert a.admitted(1_000_000, paths, table) == (0, 2, 3)
    # The reference path's own bandwidth decides: a faster join has a gap too.
    faster = [a.PathInfo("P1", (), (), 5e6), a.PathInfo("P2", (), (), 10e6)]
    assert a.admitted(1_000_000, faster, table) == (0,)


def test_the_emulation_pins_each_size_class_on_its_admitted_paths(tmp_path):
    ctx = _ctx(tmp_path)
    paths, table = a.three_paths(ctx), a.thresholds(ctx)
    scenario = a.mixed_emulation(ctx, paths, table)
    flows = {f.name: f for f in scenario.flows}
    assert flows["short"].client_interfaces == ["c1"]
    assert flows["long"].client_interfaces == ["c1", "c3"]
    assert flows["long"].paths == [list(paths[0].links), list(paths[2].links)]
    assert scenario.simulation.forwarding == "shortest"


def test_only_the_engines_refusal_of_the_controller_is_caught(tmp_path):
    ctx = _ctx(tmp_path)
    scenario = a.controller_variant(ctx, a.CONTROLLER_FILES["mpsshetn"])
    try:
        scenario.check_runnable()
    except ScenarioError:
        reason = a.controller_refusal(scenario)
        assert reason is not None and "controller" in reason and "/" not in reason.split(":")[0]
    else:
        assert a.controller_refusal(scenario) is None
    # Any other refusal is not taken for a missing controller.

    class OtherRefusal:
        def check_runnable(self):
            message = "transport 'cmt' is not available in this version"
            raise ScenarioError(message, file="x.toml", key="flow[0].transport")

    with pytest.raises(ScenarioError, match="cmt"):
        a.controller_refusal(OtherRefusal())


def _requests(rows):
    return pd.DataFrame(rows, columns=["flow", "seed", "size_bytes", "start_s", "end_s"])


def test_download_times_average_each_seeds_downloads_per_size():
    class FakeStudy:
        requests = _requests([
            ("web", 1, 10_000, 0.0, 0.010), ("web", 1, 10_000, 1.0, 1.030),
            ("web", 2, 10_000, 0.0, 0.040), ("web", 1, 50_000, 2.0, 2.1), ("other", 1, 10_000, 0.0, 9.0),
        ])  # fmt: skip

    times = a.download_times(FakeStudy())
    assert times.by_size[10_000] == pytest.approx([0.020, 0.040])
    assert times.by_size[50_000] == pytest.approx([0.1])
    assert times.mean(10_000) == pytest.approx(0.030)


def test_the_crossover_is_the_largest_gap_below_which_mptcp_always_wins():
    assert a._crossover([0.6, 0.4]) == 0.6
    assert a._crossover([0.9, 0.6, 0.4]) == 0.6
    assert a._crossover([0.99, 0.9]) == 0.0
    assert a._crossover([]) == 0.0


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("abumohsen2021")
    claims = rp.reproduce("abumohsen2021", out, quick=True, jobs=1)
    return out, claims


def test_quick_writes_every_claim_figure_table_and_dataset(quick):
    out, claims = quick
    read_claims(out, claims, MINIMUM_CLAIMS)
    for name in FIGURES:
        assert (out / name).stat().st_size > 1000, name
    assert "Table 5.2" in (out / "tables.md").read_text()
    data = sorted(p.name for p in (out / "data").iterdir())
    assert "t4.1-sptcp" in data and "t5.2-disjoint-pinned" in data and "beyond-mixed-ecmp" in data
    assert (out / "data" / "t4.1-sptcp" / "sweep_requests.parquet").is_file()


def test_quick_controller_rows_are_honest_about_the_build(quick):
    out, claims = quick
    by_id = {c.id: c for c in claims}
    for cid in ("t5.2-never-slower-controller", "t5.2-10kb-equals-sptcp-controller"):
        claim = by_id[cid]
        if claim.ours == "not run":
            assert claim.agrees is None and a.UNAVAILABLE in claim.explanation
        else:
            assert claim.agrees in (True, False)
    # The emulated rows always run.
    assert by_id["t5.2-never-slower-emulated"].agrees in (True, False)


def test_quick_sptcp_at_10kb_is_the_same_on_both_networks(quick):
    """Both testbeds' P1 is three 10 Mbit/s links without delay (chapter 5
    adds an unshaped host link): SPTCP's 10 KB download is nearly the same."""
    out, _ = quick
    ch4 = pd.read_parquet(out / "data" / "t4.1-sptcp" / "sweep_requests.parquet")
    ch5 = pd.read_parquet(out / "data" / "t5.2-sptcp" / "sweep_requests.parquet")
    t4 = (ch4.end_s - ch4.start_s)[ch4.size_bytes == 10_000].mean()
    t5 = (ch5.end_s - ch5.start_s)[ch5.size_bytes == 10_000].mean()
    assert t5 == pytest.approx(t4, rel=0.05)


def test_a_rerun_resumes_without_running_again(quick, monkeypatch):
    assert_rerun_resumes("abumohsen2021", *quick, monkeypatch)


@pytest.mark.slow
def test_full_reproduction(tmp_path):
    claims = rp.reproduce("abumohsen2021", tmp_path, jobs=2)
    by_id = {c.id: c for c in claims}
    assert MINIMUM_CLAIMS <= set(by_id)
    assert by_id["t4.1-mptcp-beats-above-100kb"].agrees is True
    assert by_id["t5.3-disjoint-paths"].agrees is True
    requests = pd.read_parquet(tmp_path / "data" / "t4.1-mptcp" / "sweep_requests.parquet")
    # 100 downloads of each size per seed, as the thesis' 100 samples.
    assert (requests.groupby(["seed", "size_bytes"]).size() == a.REPEAT).all()


def test_a_controller_scenario_runs_one_size_per_run(tmp_path):
    """The controller takes an http flow's application size from its
    definition (the largest listed size): each run lists one size."""
    ctx = _ctx(tmp_path, quick=False)
    for name in a.CONTROLLER_FILES.values():
        whole = {f.name: f for f in a.controller_variant(ctx, name).flows}["web"]
        assert whole.sizes_bytes == list(a.SIZES)
        one = {f.name: f for f in a.controller_variant(ctx, name, 200_000).flows}["web"]
        assert one.sizes_bytes == [200_000] and one.repeat == a.REPEAT
        assert one.paths is None, "the controller, not pinned paths, routes its subflows"


def test_with_an_engine_that_runs_controllers_their_rows_are_filled(tmp_path, monkeypatch):
    """What an engine with the SDN controller gives: the controller rows run
    and are judged. The controller scenarios are stood in for here by their
    pinned-path emulations, which this engine runs."""
    original = a.controller_variant

    def stand_in(ctx, name, size=None, *, tcp=False):
        if tcp:
            return a.three_path_variant(ctx, tcp=True, sizes=None if size is None else [size])
        if name == a.CONTROLLER_FILES["disjoint"]:
            return a.three_path_variant(ctx, sizes=None if size is None else [size])
        if name == a.CONTROLLER_FILES["mpsshetn"]:
            paths, table = a.three_paths(ctx), a.thresholds(ctx)
            chosen = a.admitted(size or max(a.SIZES), paths, table)
            return a.three_path_variant(ctx, paths=chosen, sizes=None if size is None else [size])
        if name == a.MIXED_MPSSHETN:
            return a.mixed_emulation(ctx, a.three_paths(ctx), a.thresholds(ctx))
        return original(ctx, name, size)

    monkeypatch.setattr(a, "controller_variant", stand_in)
    claims = rp.reproduce("abumohsen2021", tmp_path, quick=True, jobs=1)
    by_id = {c.id: c for c in claims}
    for cid in ("t5.2-never-slower-controller", "t5.2-10kb-equals-sptcp-controller"):
        assert by_id[cid].agrees in (True, False) and by_id[cid].ours != "not run"
    # The stand-in is the emulation: the two rows agree to the last digit.
    assert by_id["t5.2-never-slower-controller"].ours == by_id["t5.2-never-slower-emulated"].ours
    tables = (tmp_path / "tables.md").read_text()
    assert "not run" not in tables and "not available" not in tables
    assert (tmp_path / "data" / "t5.2-mpsshetn-controller").is_dir()
    assert (tmp_path / "data" / "beyond-mixed-mpsshetn").is_dir()
