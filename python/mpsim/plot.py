"""Figures of a run: throughput per interface and per flow, cwnd and RTT per subflow,
and for MPTCP flows throughput per subflow and the connection receive buffer.

Figures are made with matplotlib's object API and the Agg canvas, never
pyplot, so importing mpsim does not change the backend of a notebook or GUI.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .results import Results, atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FIGURES = ("interfaces", "flows", "cwnd", "rtt", "subflow-throughput", "rcvbuf")
_FILE_NAMES = {
    "interfaces": "throughput-interfaces.png",
    "flows": "throughput-flows.png",
    "cwnd": "cwnd.png",
    "rtt": "rtt.png",
    "subflow-throughput": "throughput-subflows.png",
    "rcvbuf": "rcvbuf.png",
}


def figure(results: Results, what: str = "flows", ax: Axes | None = None) -> Figure:
    """One figure (one of FIGURES); draws into `ax` when given."""
    if what not in FIGURES:
        raise ValueError(f"unknown figure {what!r}: expected {', '.join(FIGURES)}")
    fig, ax = new_figure(ax)
    draw = {
        "interfaces": _interfaces, "flows": _flows, "cwnd": _cwnd, "rtt": _rtt,
        "subflow-throughput": _subflow_throughput, "rcvbuf": _rcvbuf,
    }[what]  # fmt: skip
    draw(results, ax)
    ax.set_xlabel("time (s)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig


def new_figure(ax: Axes | None = None) -> tuple[Figure, Axes]:
    """A new Agg figure with one axes, or `ax` and its figure."""
    if ax is not None:
        return ax.get_figure(), ax
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


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


def _subflows_frame(results: Results) -> pd.DataFrame:
    """The subflows table, with `side` as "" when the trace did not say (an older engine)."""
    df = results.subflows
    if df["side"].isna().all():
        df = df.assign(side="")
    return df


def mptcp_flows(results: Results) -> list[str]:
    """Names of the flows the summary says are MPTCP."""
    flows = results.summary.get("flows", {}) or {}
    return [name for name, f in flows.items() if isinstance(f, dict) and f.get("transport") == "mptcp"]


def subflow_interfaces(results: Results) -> dict[tuple[str, int, int, str], str]:
    """The client interface of each traced subflow, (flow, connection, subflow, side) -> link name.

    Taken from a `client_interface` column when the trace has one. Otherwise
    matched by position with the summary's subflow list, which follows the
    client's subflow order: only for a flow traced on one connection whose
    subflow indices all have an entry there, and for a server-side sender
    only when its order cannot differ from the client's (at most two
    subflows, or all on one interface). Subflows left out are drawn without
    an interface name.
    """
    df = _subflows_frame(results)
    if not len(df):
        return {}
    keys = ["flow", "connection", "subflow", "side"]
    if "client_interface" in df.columns and df["client_interface"].notna().any():
        rows = df.dropna(subset=["client_interface"]).drop_duplicates(keys)
        return {
            (str(r.flow), int(r.connection), int(r.subflow), str(r.side)): str(r.client_interface)
            for r in rows.itertuples(index=False)
        }
    out: dict[tuple[str, int, int, str], str] = {}
    summary_flows = results.summary.get("flows", {}) or {}
    for name in mptcp_flows(results):
        entries = summary_flows[name].get("subflows") or []
        ifaces = [e.get("client_interface") for e in entries]
        rows = df[df["flow"] == name]
        if rows["connection"].nunique() != 1 or None in ifaces:
            continue
        if int(rows["subflow"].max()) >= len(ifaces):
            continue
        for (connection, subflow, side), _ in rows.groupby(["connection", "subflow", "side"], sort=True):
            if side != "client" and len(ifaces) > 2 and len(set(ifaces)) > 1:
                continue
            out[(name, int(connection), int(subflow), str(side))] = str(ifaces[int(subflow)])
    return out


def closed_at_s(rows: pd.DataFrame) -> float | None:
    """When the subflow of these rows (sorted by time) closed: the time of its
    last row if that says "closed" (the engine samples a closed subflow once)."""
    if "state" not in rows.columns or not len(rows):
        return None
    return float(rows["time_s"].iloc[-1]) if rows["state"].iloc[-1] == "closed" else None


def _subflow_groups(results: Results, flows: list[str] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """One series per (flow, connection, subflow, side), labelled as briefly as is unambiguous.

    Every subflow shows its index and, when known, its client interface:
    "mp sf0 (wifi)", "reno sf0 (eth0)"; a subflow that closed says when:
    "mp sf0 (wifi, closed at 31 s)". Connections and sides are named only
    when a flow has several.
    """
    df = _subflows_frame(results)
    if flows is not None:
        df = df[df["flow"].isin(flows)]
    if not len(df):
        return []
    ifaces = subflow_interfaces(results)
    groups = []
    for flow, per_flow in df.groupby("flow", sort=True):
        several_conns = per_flow["connection"].nunique() > 1
        several_sides = per_flow["side"].nunique() > 1
        keys = ["connection", "subflow", "side"]
        for (connection, subflow, side), rows in per_flow.groupby(keys, sort=True):
            label = str(flow)
            if several_conns:
                label += f" c{connection}"
            label += f" sf{subflow}"
            notes = []
            iface = ifaces.get((str(flow), int(connection), int(subflow), str(side)))
            if iface is not None:
                notes.append(iface)
            if several_sides and side:
                notes.append(str(side))
            rows = rows.sort_values("time_s")
            closed = closed_at_s(rows)
            if closed is not None:
                notes.append(f"closed at {closed:g} s")
            if notes:
                label += f" ({', '.join(notes)})"
            groups.append((label, rows))
    return groups


def _plot_subflow(ax: Axes, label: str, rows: pd.DataFrame, y: pd.Series) -> None:
    """One subflow's line; a closed subflow's ends in a cross at its last value."""
    (line,) = ax.plot(rows["time_s"], y, label=label)
    if closed_at_s(rows) is None:
        return
    shown = y.notna().to_numpy()
    if shown.any():
        last = shown.nonzero()[0][-1]
        ax.plot([rows["time_s"].iloc[last]], [y.iloc[last]], marker="x", markersize=8,
                color=line.get_color(), label="_closed")  # fmt: skip


def _cwnd(results: Results, ax: Axes) -> None:
    for label, rows in _subflow_groups(results):
        _plot_subflow(ax, label, rows, rows["cwnd_bytes"] / 1e3)
    ax.set_ylabel("cwnd (kB)")
    ax.set_title("Congestion window per subflow")


def _rtt(results: Results, ax: Axes) -> None:
    for label, rows in _subflow_groups(results):
        _plot_subflow(ax, label, rows, rows["srtt_s"] * 1e3)
    ax.set_ylabel("smoothed RTT (ms)")
    ax.set_title("RTT per subflow")


def sample_interval_s(results: Results) -> float | None:
    """The sampling period, from the times of the flows (or subflows) table."""
    for table in ("flows", "subflows", "interfaces"):
        times = sorted(set(results.table(table)["time_s"].dropna()))
        if len(times) >= 2:
            return min(b - a for a, b in itertools.pairwise(times) if b > a)
        if times:
            return times[0]  # one sample, taken one period after the start
    return None


def subflow_throughput(results: Results, flows: list[str] | None = None) -> pd.DataFrame:
    """Throughput per subflow and sample: differences of `bytes_delivered` (acknowledged bytes).

    Columns: flow, connection, subflow, side, time_s, throughput_bps. A
    subflow's first row counts from zero over one sample period: a subflow
    is traced from the first sample after it sent data.
    """
    df = _subflows_frame(results)
    if flows is not None:
        df = df[df["flow"].isin(flows)]
    keys = ["flow", "connection", "subflow", "side"]
    interval = sample_interval_s(results)
    if not len(df) or interval is None:
        return pd.DataFrame({c: [] for c in keys + ["time_s", "throughput_bps"]})
    parts = [
        _with_throughput(rows.sort_values("time_s"), interval)[keys + ["time_s", "throughput_bps"]]
        for _, rows in df.groupby(keys, sort=True)
    ]
    return pd.concat(parts, ignore_index=True)


def _with_throughput(rows: pd.DataFrame, interval_s: float) -> pd.DataFrame:
    """One subflow's rows (sorted by time) with a `throughput_bps` column."""
    delivered = rows["bytes_delivered"].diff().fillna(rows["bytes_delivered"])
    dt = rows["time_s"].diff().fillna(interval_s)
    rate = (delivered * 8.0 / dt.where(dt > 0)).fillna(0.0)
    return rows.assign(throughput_bps=rate.to_numpy())


def _subflow_throughput(results: Results, ax: Axes) -> None:
    interval = sample_interval_s(results)
    for label, rows in _subflow_groups(results, mptcp_flows(results)):
        rows = _with_throughput(rows, interval or 1.0)
        _plot_subflow(ax, label, rows, rows["throughput_bps"] / 1e6)
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title("Throughput per MPTCP subflow (acknowledged bytes)")


def _rcvbuf(results: Results, ax: Axes) -> None:
    df = results.connections
    several = {flow: rows[["connection", "side"]].drop_duplicates() for flow, rows in df.groupby("flow", sort=True)}
    for (flow, connection, side), rows in df.groupby(["flow", "connection", "side"], sort=True):
        pairs = several[flow]
        label = str(flow)
        if pairs["connection"].nunique() > 1:
            label += f" c{connection}"
        if pairs["side"].nunique() > 1:
            label += f" ({side})"
        rows = rows.sort_values("time_s")
        ax.plot(rows["time_s"], rows["ooo_bytes"] / 1e3, label=label)
    ax.set_ylabel("out-of-order bytes held (kB)")
    ax.set_title("MPTCP connection receive buffer")


def _has_data(results: Results, what: str) -> bool:
    if what == "subflow-throughput":
        flows = mptcp_flows(results)
        return bool(flows) and bool(results.subflows["flow"].isin(flows).any())
    table = {"interfaces": "interfaces", "flows": "flows", "cwnd": "subflows", "rtt": "subflows",
             "rcvbuf": "connections"}[what]  # fmt: skip
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
        save_png(fig, path)
        written.append(path)
    return written


def save_png(fig: Any, path: Path) -> None:
    """Write `fig` to `path` atomically."""
    # No "Software" stamp: the same data gives the same bytes across matplotlib versions' metadata.
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None}))


def plot_dir(directory: str | Path) -> list[Path]:
    """Write PNGs from a run folder (as written by `Results.save`), or from a
    sweep folder (as written by `mpsim sweep`), into it."""
    from .sweeps import SWEEP_FILE

    if (Path(directory) / SWEEP_FILE).is_file():
        from .study import Study

        return Study.from_dir(directory).plot_dir()
    return plot_results(Results.from_dir(directory), directory)
