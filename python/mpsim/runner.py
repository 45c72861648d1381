"""`run`: scenario in, Results out, with the Rust engine in between.

Python builds the engine spec once, hands it to `mpsim._core.Simulation`,
advances the simulation in slices (so a progress callback can report), then
collects the summary and the trace tables.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from . import overrides as ov
from ._version import __version__
from .checks import random_sources
from .errors import EngineError, EngineMissingError
from .net import Network
from .results import Results, check_out_dir, column_list
from .scenario import Scenario, load_scenario

SLICES = 200  # progress resolution: the run advances 1/200 of its duration per call
SUMMARY_KEYS = (
    "format", "mpsim_version", "scenario", "seed", "randomness", "sim_time_s", "wall_time_s",
    "events", "packet_hops", "flows", "links",
)  # fmt: skip

Progress = Callable[[float, float], Any]
Overrides = dict[str, Any] | list[str] | None


def run(
    scenario_or_path: Scenario | Network | str | os.PathLike[str],
    *,
    seed: int | None = None,
    set: Overrides = None,
    out: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    backend: str = "simulator",
) -> Results:
    """Run a scenario (object, builder or file) and return its Results.

    `backend` is "simulator" (the engine) or "kernel" (the real Linux
    kernel in network namespaces, mpsim.kernel): two implementations of
    one contract, the same summary keys and tables.

    `seed` is short for `set={"simulation.seed": seed}`. `progress(now_s, end_s)`
    is called between slices of the run. With `out`, the results are also
    written there (summary.json, run.json and Parquet tables; a previous
    run folder there is replaced, any other non-empty folder refused before
    the run). Ctrl-C raises KeyboardInterrupt within a fraction of a second.
    """
    scenario = resolve_scenario(scenario_or_path, seed=seed, overrides=set)
    chosen = backend_named(backend)
    chosen.check(scenario)
    if out is not None:
        check_out_dir(Path(out))
    results = chosen.run(scenario, progress)
    if out is not None:
        results.save(Path(out))
    return results


class Backend(Protocol):
    """Scenario in, Results out. `check` refuses, before anything runs, what
    the backend cannot do (one ScenarioError naming file, line and key)."""

    name: str

    def check(self, scenario: Scenario) -> None: ...

    def run(self, scenario: Scenario, progress: Progress | None) -> Results: ...


class SimulatorBackend:
    """The Rust engine."""

    name = "simulator"

    def check(self, scenario: Scenario) -> None:
        scenario.check_runnable()

    def run(self, scenario: Scenario, progress: Progress | None) -> Results:
        return _simulate(scenario, progress)


BACKENDS = ("simulator", "kernel")


def backend_named(name: str) -> Backend:
    """The backend called `name` (one of BACKENDS)."""
    if name == "simulator":
        return SimulatorBackend()
    if name == "kernel":
        from .kernel import KernelBackend

        return KernelBackend()
    raise ValueError(f"unknown backend {name!r}: expected {', '.join(BACKENDS)}")


def _simulate(scenario: Scenario, progress: Progress | None) -> Results:
    core = load_core()
    spec = scenario.to_engine_spec()
    started = time.perf_counter()
    try:
        sim = core.Simulation(json.dumps(spec, separators=(",", ":")))
    except EngineError as exc:  # a subclass, raised by the binding: keep it, add the file
        raise type(exc)(f"engine: {exc.message}", file=_shown_file(scenario)) from None
    except ValueError as exc:
        raise EngineError(f"engine: {exc}", file=_shown_file(scenario)) from None
    app = _sdn_app(scenario)
    if app is not None:
        sim.set_sdn_app(app)
    _advance(sim, scenario, progress)
    wall_s = time.perf_counter() - started
    traces = sim.traces()
    engine = json.loads(sim.summary_json(requests=False))
    _fill_requests(engine, traces.get("requests"))
    summary = _summary(engine, sim, scenario, wall_s)
    pcaps = sim.pcaps() if hasattr(sim, "pcaps") else {}
    return Results(summary, traces, pcaps=pcaps, provenance=provenance(scenario, spec))


def provenance(scenario: Scenario, spec: dict[str, Any]) -> dict[str, Any]:
    """How a run was made (a run folder's run.json): the mpsim version, the
    scenario file, the overrides, the seed, the scenario with the overrides
    applied (as written in files) and the engine spec (defaults filled)."""
    resolved = copy.deepcopy(scenario._raw)
    ov.apply(resolved, scenario._overrides, Scenario)
    return {
        "mpsim_version": __version__,
        "scenario_file": _shown_file(scenario),
        "seed": scenario.seed,
        "overrides": [f"{key}={_override_text(value)}" for key, value in scenario._overrides],
        "randomness": random_sources(scenario),
        "scenario": resolved,
        "engine_spec": spec,
    }


def _override_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def resolve_scenario(
    scenario_or_path: Scenario | Network | str | os.PathLike[str],
    *,
    seed: int | None = None,
    overrides: Overrides = None,
) -> Scenario:
    """A validated Scenario with the overrides (and seed) applied."""
    overrides = _with_seed(overrides, seed)
    if isinstance(scenario_or_path, Scenario):
        return scenario_or_path.with_overrides(overrides) if overrides else scenario_or_path
    if isinstance(scenario_or_path, Network):
        return scenario_or_path.to_scenario(overrides)
    return load_scenario(scenario_or_path, overrides)


def _with_seed(overrides: Overrides, seed: int | None) -> Overrides:
    if seed is None:
        return overrides
    if overrides is None:
        return {"simulation.seed": seed}
    if isinstance(overrides, dict):
        return {**overrides, "simulation.seed": seed}
    return [*([overrides] if isinstance(overrides, str) else overrides), f"simulation.seed={seed}"]


def load_core() -> Any:
    """The compiled engine module; imported late so the rest works without it."""
    try:
        return importlib.import_module("mpsim._core")
    except ImportError as exc:
        raise EngineMissingError(
            f"the simulation engine (mpsim._core) is not built: {exc}; "
            "build it with `pip install -e .` (needs a Rust toolchain)"
        ) from None


def _shown_file(scenario: Scenario) -> str | None:
    return scenario._source.file  # a file path or the builder's Network(...) call


def _sdn_app(scenario: Scenario) -> Any | None:
    """The object of `[controller] app = "python:module:Class"`: the class
    made with the scenario; the module is looked up beside the scenario
    file first. The engine calls its `on_packet_in(event)` between slices."""
    ctl = scenario.controller
    if ctl is None or not ctl.app.startswith("python:"):
        return None
    _, module_name, class_name = ctl.app.split(":")
    base = str(scenario.path.parent.resolve()) if scenario.path is not None else os.getcwd()
    sys.path.insert(0, base)
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise scenario.error_at(("controller", "app"), f"cannot load {ctl.app!r}: {exc}") from None
    finally:
        sys.path.remove(base)
    if not callable(getattr(cls, "on_packet_in", None)):
        raise scenario.error_at(("controller", "app"), f"{class_name} has no on_packet_in method")
    return cls(scenario)


def _advance(sim: Any, scenario: Scenario, progress: Progress | None) -> None:
    end_ps = int(getattr(sim, "end_ps", scenario.simulation.duration_ps))
    if progress is None:
        sim.run_until(end_ps)
        return
    step = max(1, end_ps // SLICES)
    target = 0
    while True:
        target = min(target + step, end_ps)
        done = sim.run_until(target)
        progress(sim.now_ps / 1e12, end_ps / 1e12)
        # Stop at the end even if the engine did not say so, rather than loop forever.
        if done or target >= end_ps:
            return


def _fill_requests(engine: dict[str, Any], table: dict[str, list[Any]] | None) -> None:
    """Each flow's summary `requests` from the requests table, which holds
    the same rows: the summary shares the table's numbers instead of
    parsing a copy of them (a run of short flows has one row per connection)."""
    if not table:
        return
    flows = engine.get("flows", {})
    columns = [column_list(table[c]) for c in ("flow", "size_bytes", "start_s", "end_s")]
    for name, size, start, end in zip(*columns, strict=True):
        flows[name]["requests"].append({"size_bytes": size, "start_s": start, "end_s": end})


def _summary(engine: dict[str, Any], sim: Any, scenario: Scenario, wall_s: float) -> dict[str, Any]:
    """The engine's summary with mpsim_version added and keys in the documented order."""
    filled = dict(engine)
    filled["mpsim_version"] = __version__
    # False tells a seed study that every seed gives the same results.
    filled["randomness"] = bool(random_sources(scenario))
    filled.setdefault("format", 1)
    filled.setdefault("scenario", scenario.name)
    filled.setdefault("seed", scenario.seed)
    filled.setdefault("sim_time_s", getattr(sim, "now_ps", 0) / 1e12)
    filled.setdefault("wall_time_s", wall_s)
    filled.setdefault("events", getattr(sim, "events", None))
    filled.setdefault("packet_hops", getattr(sim, "packet_hops", None))
    filled.setdefault("flows", {})
    filled.setdefault("links", {})
    ordered = {key: filled[key] for key in SUMMARY_KEYS}
    ordered.update((k, v) for k, v in filled.items() if k not in ordered)
    return ordered
