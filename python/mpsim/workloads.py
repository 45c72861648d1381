"""Short-flow workloads of `app = "http"`: empirical size CDFs read from
files, the mean of a size distribution (with its cap), and the Poisson rate
that offers a given load. The engine draws the sizes, think times and
arrivals from the flow's seeded stream (crates/mpsim-proto/src/workload.rs).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from . import datafile, units

if TYPE_CHECKING:
    from .scenario import Flow, Scenario, SizeDistribution

#: (size in bytes, cumulative probability) rows of an empirical CDF.
Cdf = list[tuple[int, float]]


class CdfError(ValueError):
    """A size CDF file that cannot be used; the text names file and line."""


def load_cdf(path: Path, shown: str) -> Cdf:
    """Read a CSV of `size, cumulative probability` rows (a header row and
    `#` comments allowed; sizes with units or in bytes). Sizes and
    probabilities must not decrease, and the last probability must be 1."""
    text = datafile.read_text(path, shown, "size distribution file", CdfError)
    rows: Cdf = []
    for lineno, fields in datafile.rows(text):
        try:
            row = _cdf_row(fields)
        except (units.UnitError, ValueError) as exc:
            if not rows and datafile.looks_like_header(fields):
                continue
            raise CdfError(f"{shown}:{lineno}: {exc}") from None
        if rows and (row[0] < rows[-1][0] or row[1] < rows[-1][1]):
            raise CdfError(f"{shown}:{lineno}: sizes and probabilities must not decrease")
        rows.append(row)
    if not rows:
        raise CdfError(f"size distribution file '{shown}' has no rows")
    if abs(rows[-1][1] - 1.0) > 1e-9:
        raise CdfError(f"{shown}: the last cumulative probability must be 1, got {rows[-1][1]}")
    return rows


def _cdf_row(fields: list[str]) -> tuple[int, float]:
    if len(fields) != 2:
        raise ValueError(f"expected two columns (size, cumulative probability), got {len(fields)}")
    size = units.parse_size(fields[0])
    prob = float(fields[1])
    if size <= 0 or not 0.0 <= prob <= 1.0:
        raise ValueError(f"expected a positive size and a probability in [0, 1], got {fields[0]}, {fields[1]}")
    return size, prob


def mean_bytes(dist: SizeDistribution | None, sizes: list[int] | None, cdf: Cdf | None) -> float:
    """The mean response size, with sizes above the distribution's cap cut to it."""
    if dist is None:
        return sum(sizes or [1]) / max(len(sizes or [1]), 1)
    cap = float(dist.cap_bytes) if dist.cap_bytes is not None else math.inf
    if dist.kind == "uniform":
        lo, hi = float(dist.min_bytes or 0), float(dist.max_bytes or 0)
        return _uniform_capped_mean(lo, hi, cap)
    if dist.kind == "exponential":
        m = float(dist.mean_bytes or 0)
        return m if math.isinf(cap) else m * (1 - math.exp(-cap / m))
    if dist.kind == "pareto":
        return _pareto_capped_mean(dist.pareto_scale_bytes, float(dist.shape or 0), cap)
    return _empirical_capped_mean(cdf or [], cap)


def _uniform_capped_mean(lo: float, hi: float, cap: float) -> float:
    if cap >= hi:
        return (lo + hi) / 2
    if cap <= lo or hi == lo:
        return min(cap, lo)
    below = (cap - lo) / (hi - lo)
    return below * (lo + cap) / 2 + (1 - below) * cap


def _pareto_capped_mean(xm: float, alpha: float, cap: float) -> float:
    """E[min(X, cap)] for a Pareto(x_m, alpha): x_m + integral of (x_m/x)^alpha from x_m to cap."""
    if cap <= xm:
        return cap
    if math.isinf(cap):
        return alpha * xm / (alpha - 1) if alpha > 1 else math.inf
    if alpha == 1:
        return xm + xm * math.log(cap / xm)
    return xm + xm**alpha * (cap ** (1 - alpha) - xm ** (1 - alpha)) / (1 - alpha)


def _empirical_capped_mean(cdf: Cdf, cap: float) -> float:
    """Mass at the first size, then uniform within each segment (as the engine draws)."""
    if not cdf:
        return 0.0
    mean = min(cdf[0][0], cap) * cdf[0][1]
    for (s0, p0), (s1, p1) in zip(cdf, cdf[1:], strict=False):
        mean += (p1 - p0) * _uniform_capped_mean(float(s0), float(s1), cap)
    return mean


def load_bandwidth_bps(flow: Flow, scenario: Scenario) -> tuple[str, int | None]:
    """The link whose capacity `load` is a fraction of, and its bandwidth
    (None for a link with a capacity trace): `load_link`, else the link of the
    client's first interface."""
    name = flow.load_link
    if name is None:
        name = next((link.name for link in scenario.links if flow.client in link.between), None)
    link = next((link for link in scenario.links if link.name == name), None)
    return name or "", None if link is None else link.bandwidth_bps


def arrival_rate_per_s(flow: Flow, scenario: Scenario, cdf: Cdf | None) -> float:
    """Requests per second: `arrival_rate`, or `load` x capacity / mean size."""
    if flow.arrival_rate is not None:
        return float(flow.arrival_rate)
    _, bandwidth_bps = load_bandwidth_bps(flow, scenario)
    mean = mean_bytes(flow.size_distribution, flow.sizes_bytes, cdf)
    return float(flow.load or 0) * float(bandwidth_bps or 0) / (8.0 * mean)
