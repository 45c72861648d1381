"""Sweeps: one scenario run over the cross product of override grids and seeds.

    study = mpsim.sweep("scenarios/wifi-3g.toml",
                        grid={"flow.ftp.cc": ["lia", "olia"]}, seeds=5, jobs=2)
    study.ci("goodput_bps")

Every point of the grid is validated before anything runs, so a bad value
fails at once with the grid key that gave it. Runs go to a local process pool
(`jobs`) or to a Dask distributed cluster (`cluster`: a scheduler address or a
Cluster object); workers return the summary (and, with `traces`, the trace
tables), and this process writes every run folder, so a cluster needs no
shared file system. With `out`, each run is written to `out/runs/<run id>/`
as soon as it ends, and a sweep run again skips the runs it already has: the
run id is a hash of the engine spec (the resolved scenario with every default
filled, seed included) and the mpsim version. The tidy tables are written
last: `sweep.parquet` (one row per run and flow), `sweep_subflows.parquet`
(per run and subflow), `sweep_requests.parquet` (per run and request, for
short-flow workloads) and `sweep.json` (what was swept).

Results do not depend on the pool: the tables are ordered by grid point and
seed, not by completion, and leave out the wall-clock time.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import overrides as ov
from ._version import __version__
from .errors import MpsimError, ResultsError, ScenarioError
from .results import SUMMARY_FILE, Results, atomic_write, check_out_dir, summary_text

if TYPE_CHECKING:
    from .net import Network
    from .scenario import Scenario
    from .study import Study

#: The manifest of a sweep folder.
SWEEP_FILE = "sweep.json"
RUNS_DIR = "runs"
#: A summary-only sweep records no time series (the engine then skips sampling).
NO_TRACES = (("record.interfaces", False), ("record.subflows", False))

Grid = Mapping[str, Sequence[Any]]
Progress = Callable[[int, int], Any]


@dataclass(frozen=True)
class Point:
    """One run of a sweep: grid values (in grid order) and a seed."""

    values: tuple[tuple[str, Any], ...]
    seed: int
    run_id: str = ""

    def labels(self) -> dict[str, Any]:
        return {**dict(self.values), "seed": self.seed}


@dataclass
class _Task:
    """What a worker needs: picklable, no open files."""

    scenario: Any  # a validated Scenario
    traces: bool


@dataclass
class _Plan:
    base: Scenario
    grid: dict[str, list[Any]]
    seeds: list[int]
    overrides: list[tuple[str, Any]]
    traces: bool
    points: list[Point] = field(default_factory=list)
    scenarios: list[Any] = field(default_factory=list)


def sweep(
    scenario: Scenario | Network | str | os.PathLike[str],
    grid: Grid | None = None,
    *,
    seeds: int | Iterable[int] = 1,
    seed_base: int = 1,
    set: Mapping[str, Any] | Iterable[str] | None = None,
    jobs: int | None = None,
    cluster: Any = None,
    out: str | os.PathLike[str] | None = None,
    traces: bool = False,
    progress: Progress | None = None,
) -> Study:
    """Run `scenario` at every point of `grid` x `seeds`; return the Study.

    `grid` maps dotted keys (as `--set` takes them) to value lists; `seeds`
    is a count (seeds `seed_base`, `seed_base + 1`, ...) or explicit seeds;
    `set` overrides apply to every run, before the grid. `jobs` is the local
    pool's size (default: all cores; 1 runs in this process); `cluster` a
    Dask scheduler address or Cluster object instead. `traces` keeps each
    run's time series (in its folder under `out`); by default runs record
    none. `progress(done, total)` is called as runs end.
    """
    plan = plan_sweep(scenario, grid or {}, seeds=seeds, seed_base=seed_base, overrides=set, traces=traces)
    return run_plan(plan, out, jobs=jobs, cluster=cluster, progress=progress)


def run_plan(
    plan: _Plan,
    out: str | os.PathLike[str] | None = None,
    *,
    jobs: int | None = None,
    cluster: Any = None,
    progress: Progress | None = None,
) -> Study:
    """Run a planned sweep (from `plan_sweep` or `join_plans`) and return its
    Study, saved under `out` when given. Runs already in `out` are reused."""
    from .study import Study

    folder = Path(out) if out is not None else None
    if folder is not None:
        check_sweep_dir(folder)
    summaries = execute(plan, folder, jobs=jobs, cluster=cluster, progress=progress)
    study = Study.from_summaries(plan.points, summaries, manifest(plan))
    if folder is not None:
        study.save(folder)
    return study


def join_plans(plans: Sequence[_Plan]) -> _Plan:
    """One plan running every point of `plans` (each planned with the same
    grid keys), so that differently built scenarios share one pool and one
    sweep folder."""
    if not plans:
        raise ValueError("join_plans needs at least one plan")
    joined = plans[0]
    seeds = list(joined.seeds)
    for other in plans[1:]:
        joined.points += other.points
        joined.scenarios += other.scenarios
        seeds += [s for s in other.seeds if s not in seeds]
    joined.seeds = seeds
    return joined


# ------------------------------------------------------------ planning


def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """`KEY=V1,V2` strings (or `KEY=[V1, V2]`, a TOML array) as a grid."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = str(item).partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key or not text:
            raise ScenarioError("expected KEY=V1,V2,...", key=f"--grid {item}")
        if key in grid:
            raise ScenarioError("key given twice", key=f"--grid {key}")
        value = ov.parse_value(text) if text.startswith("[") else None
        grid[key] = value if isinstance(value, list) else [ov.parse_value(v.strip()) for v in text.split(",")]
    return grid


def seed_list(seeds: int | Iterable[int], seed_base: int = 1) -> list[int]:
    if isinstance(seeds, bool):
        raise ScenarioError("expected a number of seeds or a list of seeds", key="seeds")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ScenarioError(f"expected at least 1 seed, got {seeds}", key="seeds")
        return list(range(seed_base, seed_base + seeds))
    listed = [int(s) for s in seeds]
    if not listed or len(set(listed)) != len(listed):
        raise ScenarioError(f"expected distinct seeds, got {listed}", key="seeds")
    return listed


def plan_sweep(
    scenario: Scenario | Network | str | os.PathLike[str],
    grid: Grid,
    *,
    seeds: int | Iterable[int] = 1,
    seed_base: int = 1,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    traces: bool = False,
) -> _Plan:
    """Every point resolved and validated, with its run id; nothing run."""
    from .runner import resolve_scenario

    base = resolve_scenario(scenario)
    clean_grid = _check_grid(grid)
    plan = _Plan(base, clean_grid, seed_list(seeds, seed_base), ov.normalize(overrides), traces)
    fixed = ([] if traces else list(NO_TRACES)) + plan.overrides
    for values in itertools.product(*clean_grid.values()):
        pairs = tuple(zip(clean_grid, values, strict=True))
        for seed in plan.seeds:
            point_overrides = [*fixed, *pairs, ("simulation.seed", seed)]
            resolved = _resolve_point(base, point_overrides, clean_grid)
            resolved.check_runnable()
            plan.points.append(Point(pairs, seed, run_id(resolved)))
            plan.scenarios.append(resolved)
    return plan


def _check_grid(grid: Grid) -> dict[str, list[Any]]:
    clean: dict[str, list[Any]] = {}
    for key, values in grid.items():
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise ScenarioError("expected a list of values", key=f"--grid {key}")
        listed = list(values)
        if not listed:
            raise ScenarioError("expected at least one value", key=f"--grid {key}")
        if key == "simulation.seed":
            raise ScenarioError("seeds are swept with `seeds`, not the grid", key=f"--grid {key}")
        clean[str(key)] = listed
    return clean


def _resolve_point(base: Scenario, overrides: list[tuple[str, Any]], grid: Mapping[str, Any]) -> Scenario:
    try:
        return base.with_overrides(overrides)
    except ScenarioError as exc:
        # The grid, not --set, gave the value: say so.
        key = exc.key or ""
        for grid_key in grid:
            if key == f"--set {grid_key}" or key.startswith(f"--set {grid_key}"):
                raise ScenarioError(exc.message, file=exc.file, line=exc.line, key=f"--grid {grid_key}") from None
        raise


def run_id(scenario: Scenario) -> str:
    """The same scenario and seed on the same mpsim give the same id."""
    text = json.dumps([__version__, scenario.to_engine_spec()], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def manifest(plan: _Plan) -> dict[str, Any]:
    return {
        "format": 1,
        "mpsim_version": __version__,
        "scenario": plan.base.name,
        "scenario_file": plan.base._source.file,
        "grid": plan.grid,
        "seeds": plan.seeds,
        "overrides": [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in plan.overrides],
        "traces": plan.traces,
        "runs": [{"run": p.run_id, **p.labels()} for p in plan.points],
    }


# ------------------------------------------------------------ running


def run_task(task: _Task) -> dict[str, Any]:
    """One run in a worker: its summary, provenance and (with traces) tables."""
    from .runner import run

    results = run(task.scenario)
    tables = results._tables if task.traces else {}
    return {"summary": results.summary, "provenance": results.provenance, "tables": tables, "pcaps": results.pcaps}


def execute(
    plan: _Plan, folder: Path | None, *, jobs: int | None, cluster: Any, progress: Progress | None
) -> list[dict[str, Any]]:
    """Every point's summary, in point order; runs a folder already has are read back."""
    summaries: list[dict[str, Any] | None] = [None] * len(plan.points)
    todo: list[int] = []
    for i, point in enumerate(plan.points):
        done = _read_run(folder, point) if folder is not None else None
        if done is None:
            todo.append(i)
        summaries[i] = done
    finished = len(plan.points) - len(todo)
    if progress is not None:
        progress(finished, len(plan.points))
    tasks = [_Task(plan.scenarios[i], plan.traces) for i in todo]
    for i, output in _run_all(todo, tasks, jobs=jobs, cluster=cluster):
        summaries[i] = output["summary"]
        if folder is not None:
            _write_run(folder, plan.points[i], output)
        finished += 1
        if progress is not None:
            progress(finished, len(plan.points))
    return [s for s in summaries if s is not None]


def _run_all(
    indices: list[int], tasks: list[_Task], *, jobs: int | None, cluster: Any
) -> Iterable[tuple[int, dict[str, Any]]]:
    if not tasks:
        return
    if cluster is not None:
        yield from _run_on_dask(indices, tasks, cluster)
        return
    workers = min(jobs or os.cpu_count() or 1, len(tasks))
    if workers <= 1:
        for i, task in zip(indices, tasks, strict=True):
            yield i, run_task(task)
        return
    yield from _run_on_pool(indices, tasks, workers)


def _run_on_pool(indices: list[int], tasks: list[_Task], workers: int) -> Iterable[tuple[int, dict[str, Any]]]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # spawn: a fresh interpreter per worker, safe whatever threads this one runs.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending = {pool.submit(run_task, task): i for i, task in zip(indices, tasks, strict=True)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: pending[f]):
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_on_dask(indices: list[int], tasks: list[_Task], cluster: Any) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise MpsimError(
            "--cluster needs Dask distributed: pip install 'mpsim[cluster]' (or distributed>=2024.1)"
        ) from None
    client = Client(cluster, set_as_default=False)
    try:
        futures = client.map(run_task, tasks, pure=False)
        where = {f.key: i for f, i in zip(futures, indices, strict=True)}
        for future in as_completed(futures, loop=client.loop):
            yield where[future.key], future.result()
    finally:
        client.close()


# ------------------------------------------------------------ run folders


def check_sweep_dir(folder: Path) -> None:
    """A new folder, an empty one, or a sweep folder (to resume)."""
    if folder.exists() and not folder.is_dir():
        raise ResultsError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / SWEEP_FILE).is_file():
        if not (folder / RUNS_DIR).is_dir():
            raise ResultsError(f"{folder}: not empty and not a sweep folder (no {SWEEP_FILE}); refusing to write there")


def run_dir(folder: Path, point: Point) -> Path:
    return folder / RUNS_DIR / point.run_id


def _read_run(folder: Path, point: Point) -> dict[str, Any] | None:
    path = run_dir(folder, point) / SUMMARY_FILE
    if not path.is_file():
        return None
    try:
        summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a damaged run is run again
    return summary


def _write_run(folder: Path, point: Point, output: dict[str, Any]) -> None:
    target = run_dir(folder, point)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_out_dir(target)
    results = Results(output["summary"], output["tables"], pcaps=output["pcaps"], provenance=output["provenance"])
    results.save(target)


def write_json(path: Path, data: Any) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(summary_text(data), encoding="utf-8"))
