"""`mpsim reproduce PAPER`: rerun a published study and check its claims.

Each paper is a module of `mpsim.reproductions` with a `run(ctx) -> list[Claim]`
function and a `PAPER` description. `run` builds its scenarios from the
library under `mpsim/papers/<paper>/` (also reachable as `scenarios/papers/`
in a checkout), runs them with `ctx.sweep` (seeds, pool or cluster, resumable
under the output folder), draws its figures with `ctx.save_figure`, and
returns one Claim per claim of the paper, agreeing or not. This module writes
`claims.md` and `claims.json` (docs/scenario-reference.md) and the tidy data.

`--quick` is a short, few-seed form for the test suite: the same code path,
the same claims evaluated, on shorter runs; its verdicts are not the result.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import MpsimError, ResultsError
from .results import atomic_write

if TYPE_CHECKING:
    from .study import Study

#: Every paper the scenario contract names, with its module (None: not yet available).
PAPERS: dict[str, str | None] = {
    "hijawi2016": "mpsim.reproductions.hijawi2016",
    "zuhairi2022": "mpsim.reproductions.zuhairi2022",
    "khan2016": "mpsim.reproductions.khan2016",
    "abumohsen2021": "mpsim.reproductions.abumohsen2021",
    "raiciu2011": "mpsim.reproductions.raiciu2011",
}
CLAIMS_JSON = "claims.json"
CLAIMS_MD = "claims.md"
#: Seeds of a full reproduction unless --seeds says otherwise (claims need at least 10).
DEFAULT_SEEDS = 10
QUICK_SEEDS = 2


class ReproductionError(MpsimError, ValueError):
    """An unknown or unavailable paper, or a reproduction that cannot run."""


@dataclass
class Claim:
    """One claim of a paper and what the simulation says about it."""

    id: str
    claim: str
    paper: str
    ours: str
    agrees: bool | None
    explanation: str


@dataclass(frozen=True)
class Paper:
    """What `mpsim reproduce --list` says about a reproduction."""

    key: str
    citation: str
    summary: str


@dataclass
class Context:
    """What a reproduction gets: where to write, how hard to try, where to run."""

    out: Path
    quick: bool = False
    seeds: int = DEFAULT_SEEDS
    jobs: int | None = None
    cluster: Any = None
    progress: Callable[[str], Any] | None = None
    figures: list[Path] = field(default_factory=list)
    #: Paper options (`--k 16`): only the keys the paper module lists in its `OPTIONS`.
    options: dict[str, Any] = field(default_factory=dict)

    def scenario(self, paper: str, name: str) -> Path:
        """A file of the scenario library, e.g. `ctx.scenario("hijawi2016", "fig2-mptcp.toml")`."""
        return papers_dir() / paper / name

    def sweep(self, name: str, scenario: Any, grid: Mapping[str, Sequence[Any]] | None = None, **kwargs: Any) -> Study:
        """`mpsim.sweep` with this reproduction's seeds, pool and folder (`data/<name>`)."""
        from .sweeps import sweep

        if self.progress is not None:
            self.progress(name)
        kwargs.setdefault("seeds", self.seeds)
        return sweep(scenario, grid, jobs=self.jobs, cluster=self.cluster, out=self.out / "data" / name, **kwargs)

    def save_figure(self, fig: Any, name: str) -> Path:
        from .plot import save_png

        path = self.out / name
        save_png(fig, path)
        self.figures.append(path)
        return path


def papers_dir() -> Path:
    """The shipped scenario library of the reproductions."""
    return Path(__file__).resolve().parent / "papers"


def available() -> list[Paper]:
    """Every paper of the contract; `citation` says when one is not available yet."""
    listed = []
    for key, module in PAPERS.items():
        if module is None:
            listed.append(Paper(key, "not available in this version", ""))
            continue
        paper = _module(key).PAPER
        listed.append(paper)
    return listed


def _module(key: str) -> Any:
    if key not in PAPERS:
        raise ReproductionError(f"unknown paper {key!r}: expected one of {', '.join(PAPERS)}")
    module = PAPERS[key]
    if module is None:
        raise ReproductionError(f"{key}: this reproduction is not available in this version")
    return importlib.import_module(module)


def reproduce(
    paper: str,
    out: str | os.PathLike[str],
    *,
    quick: bool = False,
    seeds: int | None = None,
    jobs: int | None = None,
    cluster: Any = None,
    progress: Callable[[str], Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[Claim]:
    """Run a reproduction into `out`; returns its claims (also in claims.json and claims.md).
    `options` are the paper's own (raiciu2011: `k`, the FatTree size)."""
    module = _module(paper)
    if seeds is not None and seeds < 1:
        raise ReproductionError(f"--seeds: expected at least 1, got {seeds}")
    given = {key: value for key, value in (options or {}).items() if value is not None}
    for key in given:
        if key not in getattr(module, "OPTIONS", ()):
            raise ReproductionError(f"--{key}: {paper} takes no such option")
    folder = Path(out)
    _check_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ctx = Context(folder, quick, seeds or (QUICK_SEEDS if quick else DEFAULT_SEEDS), jobs, cluster, progress, options=given)
    claims = module.run(ctx)
    write_claims(folder, claims, module.PAPER, ctx)
    return claims


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise ResultsError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / CLAIMS_JSON).exists() and not (folder / "data").is_dir():
        raise ResultsError(f"{folder}: not empty and not a reproduction folder; refusing to write there")


def write_claims(folder: Path, claims: Iterable[Claim], paper: Paper, ctx: Context) -> None:
    rows = [asdict(c) for c in claims]
    atomic_write(folder / CLAIMS_JSON, lambda tmp: tmp.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8"))
    atomic_write(folder / CLAIMS_MD, lambda tmp: tmp.write_text(claims_markdown(rows, paper, ctx), encoding="utf-8"))


def claims_markdown(rows: Sequence[Mapping[str, Any]], paper: Paper, ctx: Context) -> str:
    verdict = {True: "yes", False: "no", None: "cannot check"}
    mode = f"--quick, {ctx.seeds} seeds: a smoke test, not the result" if ctx.quick else f"{ctx.seeds} seeds"
    lines = [f"# {paper.key}: claims checked ({mode})", "", paper.citation, ""]
    lines += ["| id | claim | paper | ours | agrees | explanation |", "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["id"], r["claim"], r["paper"], r["ours"], verdict[r["agrees"]], r["explanation"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    agree = sum(1 for r in rows if r["agrees"] is True)
    disagree = sum(1 for r in rows if r["agrees"] is False)
    lines += ["", f"{agree} of {len(rows)} claims agree, {disagree} disagree, {len(rows) - agree - disagree} cannot be checked."]
    return "\n".join(lines) + "\n"


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its t interval (NaN half-width with one value)."""
    import numpy as np

    from .study import interval

    data = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if len(data) == 0:
        return float("nan"), float("nan")
    low, high = interval(data, level, "t")
    return float(data.mean()), float((high - low) / 2)


def fmt_ci(values: Sequence[float], scale: float = 1.0, unit: str = "", digits: int = 2) -> str:
    """`3.10 +- 0.20 Mbps` over seeds (`scale` divides the values)."""
    mean, half = mean_ci([v / scale for v in values])
    half_text = "?" if math.isnan(half) else f"{half:.{digits}f}"
    return f"{mean:.{digits}f} +- {half_text}{(' ' + unit) if unit else ''}"
