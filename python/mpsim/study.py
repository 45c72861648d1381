"""A Study: the tidy tables of a sweep, with confidence intervals and figures.

`Study.flows` has one row per run and flow, `Study.subflows` one per run and
subflow, `Study.requests` one per run and request; each row carries the grid
values (a column per dotted key), the seed and the run id. `ci()` gives the
mean of a metric per configuration with its confidence interval over seeds
(Student's t, or a percentile bootstrap with a fixed generator seed, both
from scipy), and `plot()` draws them as bars with error bars.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .errors import ResultsError
from .results import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .sweeps import Point

FLOWS_FILE = "sweep.parquet"
SUBFLOWS_FILE = "sweep_subflows.parquet"
REQUESTS_FILE = "sweep_requests.parquet"
#: Run-level summary fields copied into every row (wall time is left out:
#: it differs between two runs of the same point).
RUN_FIELDS = ("events", "packet_hops", "sim_time_s")
CI_METHODS = ("t", "bootstrap")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


class Study:
    """The tables of a sweep and what it varied (`grid`, `seeds`, `manifest`)."""

    def __init__(
        self,
        flows: pd.DataFrame,
        subflows: pd.DataFrame,
        requests: pd.DataFrame,
        manifest: Mapping[str, Any],
        directory: Path | None = None,
    ) -> None:
        self.flows = flows
        self.subflows = subflows
        self.requests = requests
        self.manifest = dict(manifest)
        self.directory = directory

    def __repr__(self) -> str:
        grid = ", ".join(f"{k}={v}" for k, v in self.grid.items()) or "no grid"
        return f"<Study {self.manifest.get('scenario')}: {grid}; {len(self.seeds)} seeds, {len(self.runs)} runs>"

    @property
    def grid(self) -> dict[str, list[Any]]:
        return dict(self.manifest.get("grid", {}))

    @property
    def seeds(self) -> list[int]:
        return list(self.manifest.get("seeds", []))

    @property
    def runs(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("runs", []))

    # ------------------------------------------------------------ building

    @classmethod
    def from_summaries(
        cls, points: Sequence[Point], summaries: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]
    ) -> Study:
        grid_keys = list(manifest.get("grid", {}))
        flows, subflows, requests = [], [], []
        for point, summary in zip(points, summaries, strict=True):
            labels = {"run": point.run_id, **point.labels()}
            run_fields = {k: summary.get(k) for k in RUN_FIELDS}
            for name, flow in summary.get("flows", {}).items():
                scalars = {k: v for k, v in flow.items() if not isinstance(v, list | dict)}
                flows.append({**labels, "flow": name, **scalars, "requests": len(flow.get("requests", [])), **run_fields})
                for index, sub in enumerate(flow.get("subflows", [])):
                    subflows.append({**labels, "flow": name, "subflow": index, **sub})
                for index, req in enumerate(flow.get("requests", [])):
                    requests.append({**labels, "flow": name, "index": index, **req})
        frames = [_frame(rows, grid_keys) for rows in (flows, subflows, requests)]
        return cls(*frames, manifest=manifest)

    # ------------------------------------------------------------ analysis

    def ci(
        self,
        metric: str = "goodput_bps",
        by: Sequence[str] | None = None,
        *,
        table: str = "flows",
        level: float = 0.95,
        method: str = "t",
    ) -> pd.DataFrame:
        """Mean of `metric` per group with its `level` confidence interval
        over the seeds: columns `by...`, n, mean, std, ci_low, ci_high.
        `by` defaults to the grid keys and the flow (and subflow)."""
        frame = self._table(table)
        if metric not in frame.columns:
            raise KeyError(f"no column {metric!r} in {table}; columns: {', '.join(frame.columns)}")
        if method not in CI_METHODS:
            raise ValueError(f"unknown method {method!r}: expected {', '.join(CI_METHODS)}")
        if not 0 < level < 1:
            raise ValueError(f"level must be between 0 and 1, got {level}")
        keys = list(by) if by is not None else self._default_by(table)
        rows = []
        groups = frame.groupby(keys, sort=False, dropna=False) if keys else [((), frame)]
        for group, rows_of in groups:
            values = pd.to_numeric(rows_of[metric], errors="coerce").dropna().to_numpy(dtype=float)
            low, high = interval(values, level, method)
            labels = dict(zip(keys, group if isinstance(group, tuple) else (group,), strict=True))
            std = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
            mean = float(np.mean(values)) if len(values) else float("nan")
            rows.append({**labels, "n": len(values), "mean": mean, "std": std, "ci_low": low, "ci_high": high})
        return pd.DataFrame(rows)

    def _table(self, table: str) -> pd.DataFrame:
        tables = {"flows": self.flows, "subflows": self.subflows, "requests": self.requests}
        if table not in tables:
            raise KeyError(f"no table {table!r}: expected {', '.join(tables)}")
        return tables[table]

    def _default_by(self, table: str) -> list[str]:
        extra = {"flows": ["flow"], "subflows": ["flow", "subflow"], "requests": ["flow"]}[table]
        return [*self.grid, *extra]

    # ------------------------------------------------------------ figures

    def title(self, metric: str, shown: str = "mean and 95 % CI") -> str:
        varied = ", ".join(self.grid) or "no grid"
        n = len(self.seeds)
        return f"{self.manifest.get('scenario')}: {metric} by {varied} ({n} seed{'s' if n != 1 else ''}, {shown})"

    def plot(self, metric: str = "goodput_bps", by: Sequence[str] | None = None, ax: Axes | None = None) -> Figure:
        """Bars of the mean of a flow metric per configuration, with 95 % intervals."""
        from .plot import new_figure

        fig, ax = new_figure(ax)
        table = self.ci(metric, by)
        keys = [c for c in table.columns if c not in ("n", "mean", "std", "ci_low", "ci_high")]
        labels = [" ".join(str(row[k]) for k in keys) for _, row in table.iterrows()]
        mean = table["mean"].to_numpy(dtype=float)
        err = np.vstack([mean - table["ci_low"].to_numpy(dtype=float), table["ci_high"].to_numpy(dtype=float) - mean])
        ax.bar(range(len(table)), mean, yerr=np.nan_to_num(err), capsize=4, color="tab:blue")
        ax.set_xticks(range(len(table)), labels, rotation=30, ha="right")
        ax.set_ylabel(metric)
        ax.set_title(self.title(metric), fontsize=9)
        return fig

    def plot_subflows(self, metric: str = "goodput_bps", ax: Axes | None = None) -> Figure:
        """Stacked bars: each configuration's mean `metric` per subflow (by client interface)."""
        from .plot import new_figure

        fig, ax = new_figure(ax)
        if self.subflows.empty:
            ax.set_title(f"{self.manifest.get('scenario')}: no subflows")
            return fig
        keys = [*self.grid, "flow"]
        part = "client_interface" if "client_interface" in self.subflows.columns else "subflow"
        means = self.ci(metric, [*keys, part], table="subflows")
        pivot = means.pivot_table(index=keys, columns=part, values="mean", sort=False) if keys else None
        bottom = np.zeros(len(pivot))
        for name in pivot.columns:
            values = np.nan_to_num(pivot[name].to_numpy(dtype=float))
            ax.bar(range(len(pivot)), values, bottom=bottom, label=str(name))
            bottom += values
        labels = [" ".join(map(str, idx if isinstance(idx, tuple) else (idx,))) for idx in pivot.index]
        ax.set_xticks(range(len(pivot)), labels, rotation=30, ha="right")
        ax.set_ylabel(f"{metric} per subflow")
        ax.legend(title=part, fontsize=8)
        ax.set_title(self.title(metric, "means per subflow"), fontsize=9)
        return fig

    def plot_timeseries(self, flow: str, ax: Axes | None = None) -> Figure:
        """A flow's goodput over time per configuration: the mean over seeds
        with a 95 % band (needs a sweep run with traces), link events marked."""
        from .plot import new_figure

        fig, ax = new_figure(ax)
        series = self.timeseries(flow)
        if series.empty:
            raise ResultsError("no time series in this sweep: run it with traces (--traces)")
        keys = list(self.grid)
        groups = series.groupby(keys, sort=False) if keys else [((), series)]
        for group, rows in groups:
            stats = rows.groupby("time_s")["goodput_bps"].agg(["mean", "std", "count"]).reset_index()
            half = _t_half_width(stats["std"].to_numpy(float), stats["count"].to_numpy(float), 0.95)
            label = " ".join(map(str, group if isinstance(group, tuple) else (group,))) or flow
            ax.plot(stats["time_s"], stats["mean"], label=label)
            ax.fill_between(stats["time_s"], stats["mean"] - half, stats["mean"] + half, alpha=0.25)
        for at_s in self.link_event_times_s():
            ax.axvline(at_s, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("goodput (bit/s)")
        ax.legend(fontsize=8)
        ax.set_title(self.title(f"{flow} goodput"), fontsize=9)
        return fig

    def timeseries(self, flow: str | None = None) -> pd.DataFrame:
        """The `flows` trace of every run (with traces), labelled by grid values and seed."""
        if self.directory is None:
            return pd.DataFrame()
        frames = []
        for run in self.runs:
            path = self.directory / "runs" / run["run"] / "flows.parquet"
            if not path.is_file():
                continue
            rows = pd.read_parquet(path)
            if flow is not None:
                rows = rows[rows["flow"] == flow]
            frames.append(rows.assign(**{k: v for k, v in run.items() if k != "run"}, run=run["run"]))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def link_event_times_s(self) -> list[float]:
        """When the scenario's links change (from the first run's resolved scenario)."""
        if self.directory is None or not self.runs:
            return []
        path = self.directory / "runs" / self.runs[0]["run"] / "run.json"
        try:
            spec = json.loads(path.read_text(encoding="utf-8")).get("engine_spec", {})
        except (OSError, ValueError):
            return []
        times = {event.get("at_ps", 0) / 1e12 for link in spec.get("links", []) for event in link.get("events", [])}
        return sorted(times)

    # ------------------------------------------------------------ files

    def save(self, directory: str | Path) -> Path:
        """Write the tidy tables and sweep.json into `directory` (each file atomically)."""
        from .sweeps import SWEEP_FILE, write_json

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for frame, name in ((self.flows, FLOWS_FILE), (self.subflows, SUBFLOWS_FILE), (self.requests, REQUESTS_FILE)):
            atomic_write(directory / name, lambda tmp, f=frame: f.to_parquet(tmp, index=False))
        write_json(directory / SWEEP_FILE, self.manifest)
        self.directory = directory
        return directory

    @classmethod
    def from_dir(cls, directory: str | Path) -> Study:
        from .sweeps import SWEEP_FILE

        directory = Path(directory)
        try:
            manifest = json.loads((directory / SWEEP_FILE).read_text(encoding="utf-8"))
            frames = [pd.read_parquet(directory / name) for name in (FLOWS_FILE, SUBFLOWS_FILE, REQUESTS_FILE)]
        except FileNotFoundError as exc:
            raise ResultsError(f"{directory}: not a complete sweep folder ({Path(exc.filename).name} missing)") from None
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{directory}: cannot read the sweep: {exc}") from None
        return cls(*frames, manifest=manifest, directory=directory)

    def plot_dir(self) -> list[Path]:
        """Write the sweep's figures as PNG into its folder."""
        from .plot import save_png

        if self.directory is None:
            raise ResultsError("this study has no folder: save it first")
        paths = []
        figures = [("sweep-goodput.png", self.plot())]
        if not self.subflows.empty:
            figures.append(("sweep-subflows.png", self.plot_subflows()))
        for flow in sorted(self.flows["flow"].unique()) if not self.timeseries().empty else []:
            figures.append((f"sweep-timeseries-{flow}.png", self.plot_timeseries(flow)))
        for name, fig in figures:
            save_png(fig, self.directory / name)
            paths.append(self.directory / name)
        return paths


def interval(values: np.ndarray, level: float, method: str) -> tuple[float, float]:
    """The two-sided `level` interval of the mean; NaN with fewer than two values."""
    from scipy import stats

    if len(values) < 2:
        return float("nan"), float("nan")
    mean = float(np.mean(values))
    if np.all(values == values[0]):
        return mean, mean  # no spread: scipy would give NaN
    if method == "bootstrap":
        res = stats.bootstrap(
            (values,), np.mean, confidence_level=level, n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile", rng=np.random.default_rng(BOOTSTRAP_SEED),
        )  # fmt: skip
        return float(res.confidence_interval.low), float(res.confidence_interval.high)
    low, high = stats.t.interval(level, len(values) - 1, loc=mean, scale=stats.sem(values))
    return float(low), float(high)


def _t_half_width(std: np.ndarray, count: np.ndarray, level: float) -> np.ndarray:
    from scipy import stats

    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + level / 2, np.maximum(count - 1, 1)) * std / np.sqrt(count)
    return np.nan_to_num(np.where(count > 1, half, 0.0))


def _frame(rows: list[dict[str, Any]], grid_keys: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for key in grid_keys:
        if key in frame.columns:
            frame[key] = _uniform(frame[key])
    return frame


def _uniform(column: pd.Series) -> pd.Series:
    """A grid column Parquet can store: numbers stay numbers, a mix becomes text."""
    kinds = {type(v) for v in column}
    if kinds <= {int, float} or len(kinds) == 1 and not kinds & {list, dict}:
        return column
    return column.map(lambda v: v if isinstance(v, str) else json.dumps(v))
