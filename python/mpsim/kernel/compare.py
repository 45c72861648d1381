"""`mpsim compare`: one scenario on both backends, side by side.

For each seed the scenario runs in the simulator and on the kernel; the
table gives, per flow, the mean goodput (and completion time where the
flow ends) of each backend, the kernel's spread over the seeds and the
simulator's difference from the kernel, and the links' payload capacity
as a reference. With an output folder, each run is written as a run
folder (simulator/seed-N, kernel/seed-N) and one figure per metric puts
the two backends' first seeds next to each other.
"""

from __future__ import annotations

import statistics
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import Results
from ..scenario import Scenario

FIGURE_METRICS = ("flows", "interfaces", "cwnd", "rtt")


@dataclass
class Comparison:
    scenario: Scenario
    runs: dict[str, list[Results]] = field(default_factory=lambda: {"simulator": [], "kernel": []})

    def rows(self) -> list[dict[str, Any]]:
        """One row per flow and metric: the mean of each backend, the kernel's
        standard deviation and the simulator's relative difference."""
        out = []
        for flow in self.runs["simulator"][0].summary["flows"]:
            for metric in ("goodput_bps", "completion_time_s"):
                values = {b: [r.summary["flows"][flow][metric] for r in runs] for b, runs in self.runs.items()}
                if any(v is None for vs in values.values() for v in vs):
                    continue
                sim, ker = statistics.fmean(values["simulator"]), statistics.fmean(values["kernel"])
                capacity = self.capacity_bps(flow) if metric == "goodput_bps" else None
                out.append({"flow": flow, "metric": metric, "simulator": sim, "kernel": ker, "capacity": capacity,
                            "kernel_sd": statistics.stdev(values["kernel"]) if len(values["kernel"]) > 1 else 0.0,
                            "difference_frac": (sim - ker) / ker if ker else None})
        return out


    def capacity_bps(self, flow: str) -> float | None:
        """The payload capacity of the links a flow's subflows leave the
        client by, in the direction the data flows (full segments, the
        scenario's header bytes): what a bulk flow alone can reach."""
        spec = next((f for f in self.scenario.flows if f.name == flow), None)
        if spec is None:
            return None
        subflows = self.runs["kernel"][0].summary["flows"][flow]["subflows"]
        used = {s["client_interface"] for s in subflows}
        sim = self.scenario.simulation
        total = 0.0
        for link in self.scenario.links:
            if link.name not in used or spec.client not in link.between:
                continue
            towards_client = "b_to_a" if link.between[0] == spec.client else "a_to_b"
            which = towards_client if spec.app != "upload" else ("a_to_b" if towards_client == "b_to_a" else "b_to_a")
            rate = link.direction(which)["bandwidth_bps"]
            if rate is None:
                return None
            total += payload_capacity_bps(rate, sim.mss_bytes or 1448, sim.header_bytes)
        return total or None


def notes(scenario: Scenario) -> list[str]:
    """What makes the two backends run different things although the
    scenario is the same: an MPTCP flow left on the simulator's default
    scheduler (the out-of-tree kernel's lowest-RTT one) meets upstream
    Linux's on the kernel."""
    return [f"flow '{f.name}': the simulator runs the out-of-tree default scheduler, the kernel upstream Linux's; "
            'set scheduler = "upstream" to compare the same scheduler'
            for f in scenario.flows if f.transport == "mptcp" and f.scheduler in (None, "default")]


def compare(scenario: Scenario, seeds: int = 1, out: Path | None = None, progress: Any = None) -> Comparison:
    from ..runner import backend_named

    result = Comparison(scenario)
    for backend in ("simulator", "kernel"):
        backend_named(backend).check(scenario)  # refuse before either backend runs
    for seed in range(1, seeds + 1):
        with warnings.catch_warnings():  # the file's warnings were shown when it was loaded
            warnings.simplefilter("ignore")
            seeded = scenario.with_overrides({"simulation.seed": seed})
        for backend in ("simulator", "kernel"):
            results = backend_named(backend).run(seeded, progress)
            result.runs[backend].append(results)
            if out is not None:
                results.save(out / backend / f"seed-{seed}")
    if out is not None:
        write_figures(result, out)
    return result


def payload_capacity_bps(rate_bps: float, mss_bytes: int = 1448, header_bytes: int = 66) -> float:
    """The application bytes a link of `rate_bps` carries with full segments."""
    return rate_bps * mss_bytes / (mss_bytes + header_bytes)


def write_figures(result: Comparison, out: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plot import figure, save_png

    written = []
    sim, ker = result.runs["simulator"][0], result.runs["kernel"][0]
    for metric in FIGURE_METRICS:
        fig = Figure(figsize=(12, 4.5), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (label, results) in zip(axes, (("simulator", sim), ("kernel", ker))):
            figure(results, metric, ax=ax)
            ax.set_title(f"{result.scenario.name}: {label}")
        path = out / f"compare-{metric}.png"
        save_png(fig, path)
        written.append(path)
    return written


def capture_rows(result: Comparison) -> list[dict[str, Any]]:
    """Per captured interface and address pair, the payload bytes each
    backend's capture shows (mean over seeds): per-subflow bytes from the
    wire, the same measure for both backends."""
    from .capture import payload_bytes

    sums: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for backend, runs in result.runs.items():
        for r in runs:
            for iface, data in sorted(r.pcaps.items()):
                for (src, dst), n in payload_bytes(data).items():
                    sums.setdefault((iface, src, dst), {"simulator": [], "kernel": []})[backend].append(n)
    rows = []
    for (iface, src, dst), values in sorted(sums.items()):
        sim = sum(values["simulator"]) / max(1, len(result.runs["simulator"]))
        ker = sum(values["kernel"]) / max(1, len(result.runs["kernel"]))
        if sim == 0 and ker == 0:
            continue
        rows.append({"interface": iface, "source": src, "destination": dst, "simulator_bytes": sim,
                     "kernel_bytes": ker, "difference_frac": (sim - ker) / ker if ker else None})
    return rows
