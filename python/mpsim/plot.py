"""Figures of a run: throughput per interface and per flow, cwnd and RTT per subflow.

Figures are made with matplotlib's object API and the Agg canvas, never
pyplot, so importing mpsim does not change the backend of a notebook or GUI.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .results import Results, atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FIGURES = ("interfaces", "flows", "cwnd", "rtt")
_FILE_NAMES = {
    "interfaces": "throughput-interfaces.png",
    "flows": "throughput-flows.png",
    "cwnd": "cwnd.png",
    "rtt": "rtt.png",
}


def figure(results: Results, what: str = "flows", ax: Axes | None = None) -> Figure:
    """One figure ("interfaces", "flows", "cwnd" or "rtt"); draws into `ax` when given."""
    if what not in FIGURES:
        raise ValueError(f"unknown figure {what!r}: expected {', '.join(FIGURES)}")
    if ax is None:
        fig = Figure(figsize=(8, 4.5), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    else:
        fig = ax.get_figure()
    draw = {"interfaces": _interfaces, "flows": _flows, "cwnd": _cwnd, "rtt": _rtt}[what]
    draw(results, ax)
    ax.set_xlabel("time (s)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def _interfaces(results: Results, ax: Axes) -> None:
    df = results.interfaces
    for (node, iface), rows in df.groupby(["node", "interface"], sort=True):
        rows = rows.sort_values("time_s")
        # An interface carries traffic mostly one way; show the busier direction.
        column = "tx_bps" if rows["tx_bps"].sum() >= rows["rx_bps"].sum() else "rx_bps"
        ax.plot(rows["time_s"], rows[column] / 1e6, label=f"{node}:{iface} {column[:2]}")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title("Throughput per interface")


def _flows(results: Results, ax: Axes) -> None:
    for flow, rows in results.flows.groupby("flow", sort=True):
        rows = rows.sort_values("time_s")
        ax.plot(rows["time_s"], rows["goodput_bps"] / 1e6, label=str(flow))
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title("Goodput per flow")


def _subflow_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One series per (flow, connection, subflow, side), labelled as briefly as is unambiguous."""
    keys = ["flow", "connection", "subflow"]
    if "side" in df.columns and df["side"].notna().any():
        keys.append("side")  # both ends send data in some apps (http requests, uploads)
    several = {k: bool(len(df)) and df[k].nunique() > 1 for k in keys}
    groups = []
    for values, rows in df.groupby(keys, sort=True):
        parts = dict(zip(keys, values, strict=True))
        label = str(parts["flow"])
        if several["connection"]:
            label += f" c{parts['connection']}"
        if several["subflow"]:
            label += f" sf{parts['subflow']}"
        if several.get("side"):
            label += f" ({parts['side']})"
        groups.append((label, rows.sort_values("time_s")))
    return groups


def _cwnd(results: Results, ax: Axes) -> None:
    for label, rows in _subflow_groups(results.subflows):
        ax.plot(rows["time_s"], rows["cwnd_bytes"] / 1e3, label=label)
    ax.set_ylabel("cwnd (kB)")
    ax.set_title("Congestion window per subflow")


def _rtt(results: Results, ax: Axes) -> None:
    for label, rows in _subflow_groups(results.subflows):
        ax.plot(rows["time_s"], rows["srtt_s"] * 1e3, label=label)
    ax.set_ylabel("smoothed RTT (ms)")
    ax.set_title("RTT per subflow")


def _has_data(results: Results, what: str) -> bool:
    table = {"interfaces": "interfaces", "flows": "flows", "cwnd": "subflows", "rtt": "subflows"}[what]
    return len(results.table(table)) > 0


def plot_results(results: Results, directory: str | Path) -> list[Path]:
    """Write one PNG per figure that has data into `directory`; returns their paths."""
    directory = Path(directory)
    written = []
    for what in FIGURES:
        if not _has_data(results, what):
            continue
        fig = figure(results, what)
        path = directory / _FILE_NAMES[what]
        # No "Software" stamp: the same data gives the same bytes across matplotlib versions' metadata.
        atomic_write(path, lambda tmp, f=fig: _save_png(f, tmp))
        written.append(path)
    return written


def _save_png(fig: Any, path: Path) -> None:
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})


def plot_dir(directory: str | Path) -> list[Path]:
    """Write PNGs from a run folder (as written by `Results.save`) into it."""
    return plot_results(Results.from_dir(directory), directory)
