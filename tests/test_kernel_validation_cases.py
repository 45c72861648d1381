"""The cases of the simulator-versus-kernel table (mpsim.kernel.validation)
build valid scenarios, and the simulator's side of one runs to its metrics."""

from __future__ import annotations

import warnings

from mpsim.kernel import validation
from mpsim.runner import backend_named, resolve_scenario


def test_every_case_builds_a_valid_scenario_with_the_paths_it_names() -> None:
    for name, kind, params in validation.CASES:
        spec = validation.two_paths(name.split()[0], **params).to_scenario().to_engine_spec()
        links = [link["name"] for link in spec["links"]]
        assert links == (["acc", "sa", "sb"] if kind == "failure_server" else ["a", "b", "wan"]), name
        events = [link.get("events") for link in spec["links"] if link["name"] in ("a", "sa")]
        assert bool(events[0]) == kind.startswith("failure"), name


def test_the_simulator_side_of_a_bulk_case_gives_its_goodput() -> None:
    name, kind, params = validation.CASES[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = resolve_scenario(validation.two_paths("bulk", **{**params, "duration": "2s"}), seed=1)
    goodput = validation.metrics(kind, backend_named("simulator").run(scenario, None))["goodput (Mbit/s)"]
    assert 10.0 < goodput < 15.0  # two paths of 10 and 5 Mbit/s
