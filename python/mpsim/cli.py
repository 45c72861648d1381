"""The `mpsim` command: run, sweep, reproduce, validate, plot, bench.

Bad input on any command is one line on stderr, `FILE:LINE: KEY: message`,
exit status 2, no traceback and no output folder; so is an output path that
cannot be written, checked before the run. Warnings about valid but doubtful
values are one line each on stderr, `FILE:LINE: KEY: warning: message`. Human output (progress,
tables) goes to stdout, or to stderr when `--summary -` claims stdout for
the JSON summary.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ._version import __version__
from .errors import EngineMissingError, MpsimError, ResultsError, ScenarioError, ScenarioWarning
from .results import Results, atomic_write, check_creatable, check_out_dir, dump_summary, write_summary

if TYPE_CHECKING:  # rich is imported where it draws, so a quiet run never loads it
    from rich.console import Console
    from rich.progress import Progress

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="mpsim: packet-level simulation of TCP, MPTCP and CMT.",
)

BAD_INPUT = 2
FAILED = 1
INTERRUPTED = 130  # as a shell reports a command ended by SIGINT
PROGRESS_DELAY_S = 1.0

SetOption = Annotated[
    list[str] | None, typer.Option("--set", help="Override a key: --set simulation.duration=30s (repeatable).")
]


def _fail(message: str, code: int = BAD_INPUT) -> NoReturn:
    # Plain write, not rich: rich would wrap a long message over several lines.
    sys.stderr.write(" ".join(str(message).split()) + "\n")
    raise typer.Exit(code)


def _load(file: Path, overrides: list[str] | None, seed: int | None = None, quiet: bool = False) -> Any:
    """The validated scenario; its warnings go to stderr, one line each (unless `quiet`)."""
    from .runner import resolve_scenario

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScenarioWarning)
        try:
            scenario = resolve_scenario(file, seed=seed, overrides=overrides or None)
        except ScenarioError as exc:
            _fail(str(exc))
    for w in caught:
        if issubclass(w.category, ScenarioWarning):
            if not quiet:
                sys.stderr.write(" ".join(str(w.message).split()) + "\n")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return scenario


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"mpsim {__version__}\n")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """mpsim: packet-level simulation of TCP, MPTCP and CMT."""


# ------------------------------------------------------------ run


class _ProgressReporter:
    """A progress callback that shows a rich bar only once the run has lasted a while."""

    def __init__(self, console: Console | None, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self.started = time.perf_counter()
        self.progress: Progress | None = None
        self.task: Any = None

    def __call__(self, now_s: float, end_s: float) -> None:
        if not self.enabled:
            return
        if self.progress is None:
            if time.perf_counter() - self.started < PROGRESS_DELAY_S:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.completed:.1f} / {task.total:.1f} s"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("run", total=end_s, completed=now_s)
        self.progress.update(self.task, completed=now_s, total=end_s)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console.width = 160  # rich assumes 80 columns when piped, which would cut names short
    return console


def _out_folder_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "scenario"


@app.command("run")
def run_command(
    file: Annotated[Path, typer.Argument(help="Scenario file (.toml, .yaml).")],
    seed: Annotated[int | None, typer.Option("--seed", help="Short for --set simulation.seed=N.")] = None,
    set_: SetOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write summary, Parquet tables (and plots) here.")] = None,
    summary: Annotated[
        str | None, typer.Option("--summary", help="Write the JSON summary to PATH, or - for stdout.")
    ] = None,
    plot: Annotated[bool, typer.Option("--plot", help="Write PNG plots (into --out, else out/<scenario>).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
    backend: Annotated[
        str, typer.Option("--backend", help="simulator, or kernel: the real Linux kernel in network namespaces.")
    ] = "simulator",
) -> None:
    """Run a scenario and print a summary table."""
    from .checks import random_sources
    from .runner import run

    scenario = _load(file, set_, seed, quiet=quiet)
    folder = out if out is not None else Path("out") / _out_folder_name(scenario.name) if plot else None
    _check_targets(folder, summary)
    human = None if quiet else _console(stderr=summary == "-")
    reporter = _ProgressReporter(human, enabled=human is not None and human.is_terminal)
    try:
        results = run(scenario, progress=reporter, backend=backend)
    except (EngineMissingError, RuntimeError) as exc:  # RuntimeError: the kernel backend could not run
        _fail(str(exc), FAILED)
    except ValueError as exc:  # ScenarioError/EngineError, or the engine's own ValueError
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted: nothing written", INTERRUPTED)
    finally:
        reporter.close()
    if folder is not None:
        try:
            results.save(folder, plot=plot)
        except (ResultsError, OSError) as exc:
            _fail(f"--out: {exc}", FAILED)
    _write_summary(results, summary)
    if human is not None:
        print_summary(results, human)
        if not random_sources(scenario):
            sys.stderr.write(
                "note: nothing in this scenario is random (no loss, jitter or start_jitter): "
                "every seed gives the same results\n"
            )


@app.command("compare")
def compare_command(
    file: Annotated[Path, typer.Argument(help="Scenario file (.toml, .yaml).")],
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Run seeds 1..N on each backend.")] = 1,
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write both backends' run folders and one figure per metric here.")
    ] = None,
) -> None:
    """Run a scenario in the simulator and on the Linux kernel; print both side by side."""
    from .kernel.compare import compare

    scenario = _load(file, set_)
    if out is not None:
        try:
            check_creatable(out)
        except ResultsError as exc:
            _fail(f"--out: {exc}")
    try:
        result = compare(scenario, seeds=seeds, out=out)
    except (EngineMissingError, RuntimeError) as exc:
        _fail(str(exc), FAILED)
    except ValueError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", INTERRUPTED)
    _compare_table(result, _console())


def _compare_table(result: Any, console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"{result.scenario.name}: simulator and kernel ({len(result.runs['kernel'])} seeds)")
    for col in ("flow", "metric", "simulator", "kernel", "kernel sd", "sim - kernel", "kernel / capacity"):
        table.add_column(col, justify="left" if col in ("flow", "metric") else "right")
    for row in result.rows():
        is_rate = row["metric"] == "goodput_bps"
        scale, spec, unit = (1e-6, ",.3f", " Mbps") if is_rate else (1.0, ",.3f", " s")
        diff = row["difference_frac"]
        table.add_row(row["flow"], row["metric"], _fmt(row["simulator"], spec, scale, unit),
                      _fmt(row["kernel"], spec, scale, unit), _fmt(row["kernel_sd"], spec, scale, unit),
                      "-" if diff is None else f"{diff:+.1%}",
                      f"{row['kernel'] / row['capacity']:.1%}" if row.get("capacity") else "-")
    console.print(table)
    _compare_captures(result, console)
    from .kernel.compare import notes

    for note in notes(result.scenario):
        console.print(f"note: {note}", style="dim")


def _compare_captures(result: Any, console: Console) -> None:
    """With `record.pcap`: the payload each capture shows per address pair, both backends."""
    from rich.table import Table

    from .kernel.compare import capture_rows

    rows = capture_rows(result)
    if not rows:
        return
    table = Table(title="payload bytes per captured interface and address pair (record.pcap)")
    for col in ("interface", "from", "to", "simulator", "kernel", "sim - kernel"):
        table.add_column(col, justify="left" if col in ("interface", "from", "to") else "right")
    for r in rows:
        diff = r["difference_frac"]
        table.add_row(r["interface"], r["source"], r["destination"], f"{r['simulator_bytes']:,.0f}",
                      f"{r['kernel_bytes']:,.0f}", "-" if diff is None else f"{diff:+.1%}")
    console.print(table)


def _check_targets(out: Path | None, summary: str | None) -> None:
    """Refuse unusable output paths before the run, not after it: one line, exit 2."""
    if out is not None:
        try:
            check_out_dir(out)
        except ResultsError as exc:
            _fail(f"--out: {exc}")
    if summary in (None, "-"):
        return
    path = Path(summary)
    if path.is_dir():
        _fail(f"--summary: {summary}: is a folder, expected a file path")
    if path.exists() and not os.access(path, os.W_OK):
        _fail(f"--summary: {summary}: is not writable")
    try:
        check_creatable(path)
    except ResultsError as exc:
        _fail(f"--summary: {exc}")


def _write_summary(results: Results, target: str | None) -> None:
    if target is None:
        return
    if target == "-":
        dump_summary(results.summary, sys.stdout)
        sys.stdout.flush()
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: write_summary(results.summary, tmp))


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _fmt(value: Any, spec: str, scale: float = 1.0, suffix: str = "") -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    if scale != 1.0:  # keep integers integral: 77,098 and not 77,098.0
        value = value * scale
    return f"{value:{spec}}{suffix}"


def print_summary(results: Results, console: Console) -> None:
    """The run summary as rich tables: one row per flow, one per link direction."""
    from rich.table import Table

    s = results.summary
    console.print(
        f"[bold]{s.get('scenario')}[/bold]: {_fmt(s.get('sim_time_s'), '.1f', suffix=' s')} simulated in "
        f"{_fmt(s.get('wall_time_s'), '.2f', suffix=' s')}, {_fmt(s.get('events'), ',')} events, "
        f"{_fmt(s.get('packet_hops'), ',')} packet-hops"
    )
    flow_summaries = s.get("flows", {}) or {}
    multipath = any(_is_mptcp(f) for f in flow_summaries.values())
    flows = Table(title="Flows", title_justify="left")
    columns = ["flow", "transport", "cc", "delivered", "goodput Mbit/s", "done s", "retx"]
    if multipath:
        columns.append("reinjected")
    for column in columns:
        flows.add_column(column, justify="left" if column in ("flow", "transport", "cc") else "right", no_wrap=True)
    for name, f in flow_summaries.items():
        row = [
            name,
            _transport_label(f),
            str(f.get("cc") or "-"),
            _fmt_bytes(f.get("bytes_delivered")),
            _fmt(f.get("goodput_bps"), ".3f", 1e-6),
            _fmt(f.get("completion_time_s"), ".2f"),
            _fmt_bytes(f.get("retransmitted_bytes")),
        ]
        if multipath:
            reinjected = sum(sf.get("reinjected_bytes") or 0 for sf in f.get("subflows") or [])
            row.append(_fmt_bytes(reinjected) if _is_mptcp(f) else "")
        flows.add_row(*row)
        if _is_mptcp(f):
            for sub in _subflow_rows(f):
                flows.add_row(*sub)
    console.print(flows)
    links = Table(title="Links", title_justify="left")
    for column in ("link", "direction", "utilization %", "drops", "bytes"):
        links.add_column(column, justify="left" if column in ("link", "direction") else "right", no_wrap=True)
    for name, directions in s.get("links", {}).items():
        for direction, d in directions.items():
            links.add_row(
                name, direction, _fmt(d.get("utilization"), ".1f", 100),
                _fmt(d.get("drops"), ","), _fmt_bytes(d.get("bytes")),
            )  # fmt: skip
    console.print(links)


def _is_mptcp(flow: Any) -> bool:
    return isinstance(flow, dict) and flow.get("transport") == "mptcp"


def _transport_label(flow: dict[str, Any]) -> str:
    """The transport, marked when an MPTCP flow fell back to plain TCP."""
    transport = str(flow.get("transport", "-"))
    return f"{transport} (fallback)" if flow.get("fallback") else transport


def _subflow_rows(flow: dict[str, Any]) -> list[list[str]]:
    """One row per MPTCP subflow, shown under its flow: interface, bytes, goodput, retx, reinjected, backup."""
    rows = []
    for n, sf in enumerate(flow.get("subflows") or []):
        iface = str(sf.get("client_interface") or "?")
        server = sf.get("server_interface")
        path = f"{iface} -> {server}" if server else iface
        rows.append([
            f"  sf{n} {path}",
            "backup" if sf.get("backup") else "",
            "",
            _fmt_bytes(sf.get("bytes_delivered")),
            _fmt(sf.get("goodput_bps"), ".3f", 1e-6),
            "",
            _fmt_bytes(sf.get("retransmitted_bytes")),
            _fmt_bytes(sf.get("reinjected_bytes")),
        ])  # fmt: skip
    return rows


# ------------------------------------------------------------ validate, plot


@app.command("validate")
def validate_command(
    file: Annotated[Path, typer.Argument(help="Scenario file (.toml, .yaml).")],
    set_: SetOption = None,
) -> None:
    """Check a scenario file without running it."""
    scenario = _load(file, set_)
    sys.stdout.write(
        f"{file}: ok ({len(scenario.nodes)} nodes, {len(scenario.links)} links, {len(scenario.flows)} flows)\n"
    )
    for note in scenario.notes():
        sys.stderr.write(f"{note}\n")


@app.command("plot")
def plot_command(
    directory: Annotated[Path, typer.Argument(help="A run folder (`mpsim run --out`) or sweep folder (`mpsim sweep --out`).")],
) -> None:
    """Write PNG plots from a run or sweep folder into it."""
    from .plot import plot_dir

    try:
        paths = plot_dir(directory)
    except ValueError as exc:
        _fail(str(exc))
    for path in paths:
        sys.stdout.write(f"{path}\n")
    if not paths:
        sys.stderr.write(f"{directory}: nothing to plot (no time series recorded)\n")


# ------------------------------------------------------------ sweep


@app.command("sweep")
def sweep_command(
    file: Annotated[Path, typer.Argument(help="Scenario file (.toml, .yaml).")],
    grid: Annotated[
        list[str] | None,
        typer.Option("--grid", help="Vary a key: --grid flow.ftp.cc=lia,olia (repeatable; the cross product runs)."),
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="Seeds per grid point.", min=1)] = 1,
    seed_base: Annotated[int, typer.Option("--seed-base", help="The first seed.")] = 1,
    jobs: Annotated[int | None, typer.Option("--jobs", help="Local worker processes (default: all cores).", min=1)] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help="Run on a Dask scheduler at ADDRESS.")] = None,
    set_: SetOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the sweep tables and run folders here.")] = None,
    traces: Annotated[bool, typer.Option("--traces", help="Record and keep each run's time series.")] = False,
    metric: Annotated[str, typer.Option("--metric", help="The flow metric of the table printed.")] = "goodput_bps",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no table.")] = False,
) -> None:
    """Run a scenario over a grid of overrides and seeds; print means with 95 % intervals."""
    from .sweeps import parse_grid, plan_sweep

    _load(file, set_, quiet=quiet)  # the base scenario's errors and warnings, once
    try:
        plan = plan_sweep(file, parse_grid(grid or []), seeds=seeds, seed_base=seed_base, overrides=set_, traces=traces)
    except ScenarioError as exc:
        _fail(str(exc))
    human = None if quiet else _console()
    study = _run_sweep(plan, out, jobs, cluster, human)
    if human is not None:
        _sweep_table(study, metric, human)
        if out is not None:
            human.print(f"wrote {out}/sweep.parquet ({len(study.flows)} rows), sweep_subflows.parquet, runs/")


def _run_sweep(plan: Any, out: Path | None, jobs: int | None, cluster: str | None, human: Console | None) -> Any:
    from .sweeps import check_sweep_dir, run_plan

    if out is not None:
        try:
            check_sweep_dir(out)
        except ResultsError as exc:
            _fail(f"--out: {exc}")
    bar = _SweepBar(human)
    try:
        return run_plan(plan, out, jobs=jobs, cluster=cluster, progress=bar)
    except KeyboardInterrupt:
        kept = f"; finished runs are kept in {out}/runs: run the same command again to resume" if out else ""
        _fail(f"interrupted{kept}", INTERRUPTED)
    except ResultsError as exc:
        _fail(f"--out: {exc}", FAILED)
    except (MpsimError, OSError) as exc:
        _fail(str(exc), FAILED)
    finally:
        bar.close()


class _SweepBar:
    """Runs done out of all, as a rich bar on a terminal."""

    def __init__(self, console: Console | None) -> None:
        self.progress: Progress | None = None
        self.task: Any = None
        if console is not None and console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

            self.progress = Progress(
                "runs", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=console, transient=True,
            )  # fmt: skip
            self.progress.start()

    def __call__(self, done: int, total: int) -> None:
        if self.progress is None:
            return
        if self.task is None:
            self.task = self.progress.add_task("sweep", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _sweep_table(study: Any, metric: str, console: Console) -> None:
    from rich.table import Table

    try:
        rows = study.ci(metric)
    except KeyError as exc:
        _fail(f"--metric: {exc.args[0]}")
    table = Table(title=study.title(metric), title_justify="left")
    keys = [c for c in rows.columns if c not in ("n", "mean", "std", "ci_low", "ci_high")]
    for column in [*keys, "runs", "mean", "95 % interval"]:
        table.add_column(column, justify="left" if column in keys else "right")
    for _, r in rows.iterrows():
        interval = "-" if r["n"] < 2 else f"{r['ci_low']:.4g} - {r['ci_high']:.4g}"
        table.add_row(*[str(r[k]) for k in keys], str(r["n"]), f"{r['mean']:.4g}", interval)
    console.print(table)


# ------------------------------------------------------------ reproduce


@app.command("reproduce")
def reproduce_command(
    paper: Annotated[str | None, typer.Argument(help="The paper, e.g. hijawi2016 (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="Name the papers and stop.")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="Short runs, 2 seeds: a smoke test, not the result.")] = False,
    seeds: Annotated[int | None, typer.Option("--seeds", help="Seeds per configuration (default 10).", min=1)] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", help="Local worker processes (default: all cores).", min=1)] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help="Run on a Dask scheduler at ADDRESS.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default out/PAPER).")] = None,
    k: Annotated[int | None, typer.Option("--k", help="FatTree size (raiciu2011; default 8).", min=4)] = None,
) -> None:
    """Rerun a paper's experiments: figures, data, and its claims checked (claims.md, claims.json)."""
    from .reproduce import ReproductionError, available, reproduce

    if list_ or paper is None:
        for p in available():
            sys.stdout.write(f"{p.key:14} {p.citation}\n")
        return
    folder = out if out is not None else Path("out") / paper
    human = _console()
    try:
        claims = reproduce(
            paper, folder, quick=quick, seeds=seeds, jobs=jobs, cluster=cluster,
            progress=lambda step: human.print(f"[dim]{paper}: {step}[/dim]"), options={"k": k},
        )  # fmt: skip
    except ReproductionError as exc:
        _fail(str(exc))
    except ScenarioError as exc:
        _fail(str(exc), FAILED)
    except KeyboardInterrupt:
        _fail(f"interrupted; finished runs are kept in {folder}/data: run the same command again to resume", INTERRUPTED)
    except (MpsimError, OSError) as exc:
        _fail(str(exc), FAILED)
    agree = sum(1 for c in claims if c.agrees is True)
    human.print(f"{paper}: {agree} of {len(claims)} claims agree; see {folder}/claims.md")


# ------------------------------------------------------------ bench


@app.command("bench")
def bench_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table.")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="Simulate 5 s per case instead of 60 s.")] = False,
    case: Annotated[list[str] | None, typer.Option("--case", help="Run only this case (repeatable).")] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Rounds: every case once per round; rates are medians.")
    ] = 1,
) -> None:
    """Time the engine on a fixed suite, each case in its own process."""
    from .bench import CASES, BenchError, case_named, run_case_subprocess, summarise

    try:
        names = [case_named(c).name for c in case] if case else [c.name for c in CASES]
    except BenchError as exc:
        _fail(str(exc))
    console = _console(stderr=True)
    rounds = []
    for k in range(1, repeat + 1):
        rows = []
        for name in names:
            label = f"bench {name}" + (f" (round {k} of {repeat})" if repeat > 1 else "")
            try:
                with console.status(label, spinner="dots") if console.is_terminal else nullcontext():
                    rows.append(run_case_subprocess(name, quick=quick))
            except MpsimError as exc:
                _fail(str(exc), FAILED)
        rounds.append(rows)
    try:
        rows = summarise(rounds)
    except BenchError as exc:
        _fail(str(exc), FAILED)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    _bench_table(rows, _console())


def _bench_table(rows: list[dict[str, Any]], console: Console) -> None:
    from rich.table import Table

    from .bench import REFERENCE_CASE

    rounds = max(r["rounds"] for r in rows)
    title = "mpsim bench" + (f": medians of {rounds} rounds" if rounds > 1 else "")
    table = Table(title=title, title_justify="left")
    columns = ["case", "sim s", "engine s", "events", "packet-hops", "hops/s"]
    columns += ["hops/s range"] if rounds > 1 else []
    columns += ["events/s", "peak MiB", "run MiB", f"vs {REFERENCE_CASE}"]
    for column in columns:
        table.add_column(column, justify="left" if column == "case" else "right")
    for r in rows:
        cells = [
            r["case"], _fmt(r["sim_time_s"], ".0f"), _fmt(r["wall_s"], ".2f"), _fmt(r["events"], ","),
            _fmt(r["packet_hops"], ","), _fmt(r["packet_hops_per_s"], ".3g"),
        ]  # fmt: skip
        if rounds > 1:
            cells.append(f"{_fmt(r['packet_hops_per_s_min'], '.3g')}-{_fmt(r['packet_hops_per_s_max'], '.3g')}")
        cells += [_fmt(r["events_per_s"], ".3g"), _fmt(r["peak_memory_mib"], ".0f"), _fmt(r["run_memory_mib"], ".1f")]
        cells.append(_relative(r))
        table.add_row(*cells)
    console.print(table)


def _relative(row: dict[str, Any]) -> str:
    """The median ratio to the reference case, with its 95 % interval when there is one."""
    if row["relative_speed"] is None:
        return "-"
    text = f"{row['relative_speed']:.2f}"
    if row["relative_speed_ci95"]:
        low, high = row["relative_speed_ci95"]
        text += f" ({low:.2f}-{high:.2f})"
    return text


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of scenario files (generated from the models)."""
    from .schema import scenario_schema

    sys.stdout.write(json.dumps(scenario_schema(), indent=2) + "\n")


def main() -> None:
    """Console script entry point."""
    app()


if __name__ == "__main__":
    main()
