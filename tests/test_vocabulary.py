"""The scenario layer takes its names and defaults from the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

import mpsim
from mpsim.errors import ScenarioError
from mpsim.scenario import load_scenario
from mpsim.vocabulary import VOCABULARY, names

ROOT = Path(__file__).resolve().parents[1]
TWO_PATH = ROOT / "scenarios" / "mptcp-two-path.toml"


def test_every_scheduler_and_path_manager_the_engine_lists_validates_and_runs() -> None:
    for key, values in (("scheduler", names("schedulers")), ("path_manager", names("path_managers"))):
        for value in values:
            overrides = [f"flow.bulk.{key}={value}", "simulation.duration=1500ms", "simulation.sample_interval=100ms"]
            summary = mpsim.run(load_scenario(TWO_PATH, overrides)).summary
            assert summary["flows"]["bulk"]["bytes_delivered"] > 0, (key, value)


def test_an_unknown_scheduler_is_refused_with_the_engines_list() -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(TWO_PATH, ["flow.bulk.scheduler=blest"])
    for name in VOCABULARY["schedulers"]:
        assert name in str(err.value)


def test_the_front_ends_file_is_what_the_engine_reports() -> None:
    core = pytest.importorskip("mpsim._core")
    assert VOCABULARY == __import__("json").loads(core.vocabulary_json())


def test_cc_names_defaults_and_parameter_bounds_come_from_the_engine() -> None:
    fresh = VOCABULARY
    from mpsim import scenario

    assert scenario.CC_BY_TRANSPORT["mptcp"] == tuple(fresh["cc_by_transport"]["mptcp"])
    assert scenario.DEFAULT_CC["mptcp"] == "lia"
    assert scenario.CC_PARAMS["wvegas"]["initial_alpha"] == 1.0
    assert scenario.DEFAULT_PATH_MANAGER == fresh["defaults"]["path_manager"]
    with pytest.raises(ScenarioError, match="initial_alpha must be a number of at least 1"):
        load_scenario(TWO_PATH, ["flow.bulk.cc=wvegas", "flow.bulk.cc_params={initial_alpha = 0.5}"])
