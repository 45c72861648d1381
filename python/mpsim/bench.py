"""The benchmark suite behind `mpsim bench`.

Each case builds its scenario with the builder and runs in a fresh Python
process (`python -m mpsim.bench --case NAME`), so the peak memory reported
(ru_maxrss) belongs to that case alone. Append to CASES to add cases (e.g.
MPTCP ones once the engine has them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MpsimError
from .net import Network
from .topo import dumbbell

FULL_DURATION = "60s"
QUICK_DURATION = "5s"
ACCESS_BW, ACCESS_DELAY_MS = "10Gbps", 1
BOTTLENECK_BW_BPS, BOTTLENECK_DELAY_MS = 10**9, 5
WIRE_PACKET_BYTES = 1448 + 66  # default MSS plus per-segment header bytes


class BenchError(MpsimError):
    """A benchmark case that failed to run."""


@dataclass(frozen=True)
class BenchCase:
    """A named scenario to time; `build(duration)` returns its Network."""

    name: str
    description: str
    build: Callable[[str], Network]


def bdp_packets(bandwidth_bps: int, rtt_ms: float, packet_bytes: int = WIRE_PACKET_BYTES) -> int:
    """The bandwidth-delay product in whole packets (rounded up)."""
    return math.ceil(bandwidth_bps * rtt_ms / 1000 / 8 / packet_bytes)


def dumbbell_bench(n_flows: int, duration: str) -> Network:
    """n Reno downloads (delayed ACK on) through a 1 Gbps, 5 ms bottleneck; queue one BDP."""
    rtt_ms = 2 * (ACCESS_DELAY_MS + BOTTLENECK_DELAY_MS + ACCESS_DELAY_MS)
    queue = f"{bdp_packets(BOTTLENECK_BW_BPS, rtt_ms)}pkt"
    net = dumbbell(
        n_flows,
        bottleneck_bw=f"{BOTTLENECK_BW_BPS}bps",
        bottleneck_delay=f"{BOTTLENECK_DELAY_MS}ms",
        access_bw=ACCESS_BW,
        access_delay=f"{ACCESS_DELAY_MS}ms",
        queue=queue,
        name=f"bench-dumbbell-{n_flows}flow",
        duration=duration,
    )
    for i in range(1, n_flows + 1):
        net.add_flow(f"rcv{i}", f"snd{i}", cc="reno", delayed_ack=True, name=f"f{i}")
    # Measure the engine, not the samplers.
    net.record(interfaces=False, subflows=False)
    return net


CASES: list[BenchCase] = [
    BenchCase("dumbbell-1flow-1g", "1 Reno flow, 1 Gbps bottleneck", lambda d: dumbbell_bench(1, d)),
    BenchCase("dumbbell-100flow-1g", "100 Reno flows, 1 Gbps bottleneck", lambda d: dumbbell_bench(100, d)),
]


def case_named(name: str) -> BenchCase:
    for case in CASES:
        if case.name == name:
            return case
    raise BenchError(f"unknown bench case {name!r}: expected {', '.join(c.name for c in CASES)}")


def peak_memory_mib() -> float:
    """This process's peak resident memory in MiB."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024  # bytes on macOS, KiB on Linux


def run_case(name: str, quick: bool = False) -> dict[str, Any]:
    """Run one case in this process and measure it."""
    from .runner import run

    case = case_named(name)
    scenario = case.build(QUICK_DURATION if quick else FULL_DURATION).to_scenario()
    baseline_mib = peak_memory_mib()
    started = time.perf_counter()
    results = run(scenario)
    total_wall_s = time.perf_counter() - started
    # Rates use the engine's own time (the event loop), not spec building
    # and trace conversion in Python, which `total_wall_s` includes.
    wall_s = float(results.summary.get("wall_time_s") or total_wall_s)
    events = int(results.summary.get("events") or 0)
    hops = int(results.summary.get("packet_hops") or 0)
    peak_mib = peak_memory_mib()
    return {
        "case": case.name,
        "sim_time_s": scenario.duration_s,
        "wall_s": wall_s,
        "total_wall_s": total_wall_s,
        "events": events,
        "packet_hops": hops,
        "packet_hops_per_s": hops / wall_s if wall_s > 0 else None,
        "events_per_s": events / wall_s if wall_s > 0 else None,
        "peak_memory_mib": peak_mib,
        # What the run added to the peak over the interpreter with mpsim imported.
        "run_memory_mib": max(0.0, peak_mib - baseline_mib),
    }


def run_case_subprocess(name: str, quick: bool = False) -> dict[str, Any]:
    """Run one case in a fresh Python process and return its measurements."""
    case_named(name)  # fail early, with the list of names
    command = [sys.executable, "-m", "mpsim.bench", "--case", name] + (["--quick"] if quick else [])
    env = dict(os.environ)
    # The child must import this very mpsim, installed or not.
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise BenchError(f"bench case {name}: {lines[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mpsim.bench", description="Run one benchmark case.")
    parser.add_argument("--case", required=True, help="case name")
    parser.add_argument("--quick", action="store_true", help=f"simulate {QUICK_DURATION} instead of {FULL_DURATION}")
    args = parser.parse_args(argv)
    try:
        row = run_case(args.case, quick=args.quick)
    except MpsimError as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(1)
    sys.stdout.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
