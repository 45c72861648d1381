"""Sweeps and studies (issue 13, items 1 and 2): grids x seeds on a process
pool or a Dask cluster, resumable, with confidence intervals and figures."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import SCENARIOS
from typer.testing import CliRunner

from mpsim import ScenarioError
from mpsim import sweeps as sweep_mod
from mpsim.cli import app
from mpsim.study import Study, interval
from mpsim.sweeps import join_plans, parse_grid, plan_sweep, run_plan, seed_list, sweep

WIFI_3G = SCENARIOS / "wifi-3g.toml"
SHORT = {"simulation.duration": "4s"}
GRID = {"flow.ftp.cc": ["lia", "olia"]}


# ------------------------------------------------------------ planning (no engine)


def test_grid_values_split_on_commas_or_come_as_a_toml_array():
    grid = parse_grid(["flow.ftp.cc=lia, olia", "link.wifi.loss=0,0.01", "flow.ftp.backup_interfaces=[[], ['3g']]"])
    assert grid == {
        "flow.ftp.cc": ["lia", "olia"],
        "link.wifi.loss": [0, 0.01],
        "flow.ftp.backup_interfaces": [[], ["3g"]],
    }


@pytest.mark.parametrize("bad", ["flow.ftp.cc", "=lia", "flow.ftp.cc="])
def test_a_malformed_grid_names_the_option(bad):
    with pytest.raises(ScenarioError, match="--grid"):
        parse_grid([bad])


def test_seeds_are_a_count_from_the_base_or_a_list():
    assert seed_list(3) == [1, 2, 3]
    assert seed_list(2, seed_base=10) == [10, 11]
    assert seed_list([7, 3]) == [7, 3]
    for bad in (0, [], [1, 1]):
        with pytest.raises(ScenarioError):
            seed_list(bad)


def test_every_point_is_validated_before_anything_runs_and_the_grid_key_is_named():
    with pytest.raises(ScenarioError) as err:
        plan_sweep(WIFI_3G, {"flow.ftp.cc": ["lia", "nosuch"]}, seeds=2)
    assert err.value.key == "--grid flow.ftp.cc"
    assert "nosuch" in str(err.value) and str(WIFI_3G) in str(err.value)


def test_run_ids_depend_on_the_point_and_the_seed_only():
    a = plan_sweep(WIFI_3G, GRID, seeds=2, overrides=SHORT)
    b = plan_sweep(WIFI_3G, GRID, seeds=2, overrides=SHORT)
    ids = [p.run_id for p in a.points]
    assert ids == [p.run_id for p in b.points]
    assert len(set(ids)) == 4
    longer = plan_sweep(WIFI_3G, GRID, seeds=2, overrides={"simulation.duration": "5s"})
    assert not set(ids) & {p.run_id for p in longer.points}


# ------------------------------------------------------------ intervals


def test_the_t_interval_of_one_two_three_is_the_textbook_one():
    low, high = interval(np.array([1.0, 2.0, 3.0]), 0.95, "t")
    # mean 2, s = 1, t(0.975, 2 df) = 4.3027: 2 -+ 4.3027 / sqrt(3)
    assert low == pytest.approx(2 - 2.48414, abs=1e-4)
    assert high == pytest.approx(2 + 2.48414, abs=1e-4)


def test_bootstrap_intervals_are_reproducible_and_degenerate_cases_are_explicit():
    values = np.array([3.0, 5.0, 4.0, 8.0, 6.0])
    first = interval(values, 0.95, "bootstrap")
    assert first == interval(values, 0.95, "bootstrap")
    assert first[0] < values.mean() < first[1]
    assert all(np.isnan(interval(np.array([1.0]), 0.95, "t")))
    assert interval(np.array([2.0, 2.0]), 0.95, "t") == (2.0, 2.0)


# ------------------------------------------------------------ running


@pytest.fixture(scope="module")
def reference() -> Study:
    pytest.importorskip("mpsim._core")
    return sweep(WIFI_3G, GRID, seeds=3, set=SHORT, jobs=1)


def test_a_sweep_has_a_row_per_run_and_flow_with_the_grid_and_seed(reference):
    flows = reference.flows
    assert len(flows) == 2 * 3
    assert list(flows.columns[:4]) == ["run", "flow.ftp.cc", "seed", "flow"]
    assert list(flows["flow.ftp.cc"]) == ["lia"] * 3 + ["olia"] * 3
    assert list(flows["seed"]) == [1, 2, 3] * 2
    assert (flows["cc"] == flows["flow.ftp.cc"]).all()
    assert "wall_time_s" not in flows.columns
    assert len(reference.subflows) == 2 * len(flows)
    # The scenario's start jitter is drawn from the seed: the runs differ
    # (a link-limited transfer may still deliver the same bytes in 4 s).
    lia = flows[flows["flow.ftp.cc"] == "lia"]
    assert lia["start_s"].nunique() == 3 and lia["events"].nunique() == 3


def test_joined_plans_run_as_one_sweep_with_the_same_rows(reference):
    # Per-seed plans joined into one give the rows of the sweep planned at once.
    plans = [plan_sweep(WIFI_3G, GRID, seeds=[seed], overrides=SHORT) for seed in (1, 2, 3)]
    joined = run_plan(join_plans(plans), jobs=1)
    key = ["flow.ftp.cc", "seed"]
    ours = joined.flows.sort_values(key).reset_index(drop=True)
    theirs = reference.flows.sort_values(key).reset_index(drop=True)
    assert sorted(joined.manifest["seeds"]) == [1, 2, 3]
    pd.testing.assert_frame_equal(ours[key + ["bytes_delivered"]], theirs[key + ["bytes_delivered"]])


def test_ci_gives_one_row_per_configuration(reference):
    table = reference.ci("goodput_bps")
    assert list(table["flow.ftp.cc"]) == ["lia", "olia"]
    assert (table["n"] == 3).all()
    lia = reference.flows[reference.flows["flow.ftp.cc"] == "lia"]["goodput_bps"]
    assert table["mean"][0] == pytest.approx(lia.mean())
    assert table["ci_low"][0] < table["mean"][0] < table["ci_high"][0]
    per_subflow = reference.ci("goodput_bps", table="subflows")
    assert len(per_subflow) == 4
    with pytest.raises(KeyError, match="nosuch"):
        reference.ci("nosuch")


def test_a_process_pool_and_a_dask_cluster_give_the_same_tables(reference):
    distributed = pytest.importorskip("distributed")
    pooled = sweep(WIFI_3G, GRID, seeds=3, set=SHORT, jobs=2)
    pd.testing.assert_frame_equal(pooled.flows, reference.flows)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = sweep(WIFI_3G, GRID, seeds=3, set=SHORT, cluster=cluster)
    pd.testing.assert_frame_equal(on_dask.flows, reference.flows)
    pd.testing.assert_frame_equal(on_dask.subflows, reference.subflows)


def test_an_interrupted_sweep_resumes_with_the_runs_it_lacks(tmp_path, monkeypatch, reference):
    out = tmp_path / "study"
    calls = []
    real = sweep_mod.run_task

    def counting(task):
        calls.append(task.scenario.seed)
        return real(task)

    monkeypatch.setattr(sweep_mod, "run_task", counting)

    def stop_after_two(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(WIFI_3G, GRID, seeds=3, set=SHORT, jobs=1, out=out, progress=stop_after_two)
    assert len(list((out / "runs").iterdir())) == 2
    assert not (out / "sweep.parquet").exists()
    calls.clear()
    study = sweep(WIFI_3G, GRID, seeds=3, set=SHORT, jobs=1, out=out)
    assert len(calls) == 4
    pd.testing.assert_frame_equal(study.flows, reference.flows)
    calls.clear()
    again = Study.from_dir(out)
    assert sweep(WIFI_3G, GRID, seeds=3, set=SHORT, jobs=1, out=out).flows.equals(again.flows)
    assert calls == []
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["grid"] == GRID and manifest["seeds"] == [1, 2, 3]
    assert len(manifest["runs"]) == 6


def test_a_folder_that_is_not_a_sweep_is_refused_before_running(tmp_path):
    pytest.importorskip("mpsim._core")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(Exception, match="not a sweep folder"):
        sweep(WIFI_3G, GRID, seeds=1, set=SHORT, out=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_sweep_with_traces_draws_time_series_with_bands(tmp_path):
    pytest.importorskip("mpsim._core")
    study = sweep(WIFI_3G, GRID, seeds=2, set=SHORT, jobs=1, out=tmp_path / "s", traces=True)
    series = study.timeseries("ftp")
    assert set(series["flow.ftp.cc"]) == {"lia", "olia"} and set(series["seed"]) == {1, 2}
    fig = study.plot_timeseries("ftp")
    assert "2 seeds" in fig.axes[0].get_title()


# ------------------------------------------------------------ command line


def test_the_sweep_command_prints_intervals_and_plot_draws_the_folder(tmp_path):
    pytest.importorskip("mpsim._core")
    out = tmp_path / "cli"
    args = ["sweep", str(WIFI_3G), "--grid", "flow.ftp.cc=lia,olia", "--seeds", "2", "--jobs", "1"]
    result = CliRunner().invoke(app, [*args, "--set", "simulation.duration=4s", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "95 % interval" in result.output and "olia" in result.output
    assert len(pd.read_parquet(out / "sweep.parquet")) == 4
    drawn = CliRunner().invoke(app, ["plot", str(out)])
    assert drawn.exit_code == 0, drawn.output
    assert (out / "sweep-goodput.png").stat().st_size > 0
    assert (out / "sweep-subflows.png").stat().st_size > 0


def test_the_sweep_command_refuses_a_bad_grid_value_with_file_and_key(tmp_path):
    result = CliRunner().invoke(app, ["sweep", str(WIFI_3G), "--grid", "flow.ftp.cc=lia,nosuch", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert f"{WIFI_3G}: --grid flow.ftp.cc: congestion control 'nosuch'" in result.output
    assert not (tmp_path / "x").exists()
