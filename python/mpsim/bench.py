"""The benchmark suite behind `mpsim bench`.

Each case builds its scenario with the builder and runs in a fresh Python
process (`python -m mpsim.bench --case NAME`), so the peak memory reported
(ru_maxrss) belongs to that case alone. Append to CASES to add cases.

The cases: Reno downloads through a 1 Gbps dumbbell (1 and 100 flows), an
MPTCP LIA download over two disjoint 1 Gbps paths, and an MPTCP LIA
connection (two subflows) sharing a 1 Gbps bottleneck with a Reno flow, and
an SMT (transport cmt) download over two disjoint paths of 20 and 100 Mbps.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
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


# MPTCP: the connection-level receive buffer must cover both paths' windows
# (about 2 x aggregate rate x the longest RTT with full queues), or it, not
# the engine, limits the run.
MPTCP_RCVBUF = "32MB"
TWO_PATH_DELAYS_MS = (5, 10)
FAST_LINK = {"bw": "10Gbps", "delay": "0ms", "queue": "100000pkt"}


def mptcp_two_path_bench(duration: str) -> Network:
    """An MPTCP LIA download over two disjoint 1 Gbps paths (5 and 10 ms one-way); queues one BDP.

        client ==p1 (1 Gbps, 5 ms)== r --wan (10 Gbps, 0 ms)-- server
               ==p2 (1 Gbps, 10 ms)=

    The wan link is five times faster than both paths together, so each path
    is its own bottleneck (the engine's servers have one interface).
    """
    net = Network("bench-mptcp-2path", duration=duration)
    net.add_host("client")
    net.add_router("r")
    net.add_host("server")
    for i, delay_ms in enumerate(TWO_PATH_DELAYS_MS, start=1):
        queue = f"{bdp_packets(BOTTLENECK_BW_BPS, 2 * delay_ms)}pkt"
        net.add_link("client", "r", bw=f"{BOTTLENECK_BW_BPS}bps", delay=f"{delay_ms}ms", queue=queue, name=f"p{i}")
    net.add_link("r", "server", name="wan", **FAST_LINK)
    net.add_flow(
        "client", "server", transport="mptcp", cc="lia", name="mp",
        path_manager="fullmesh", scheduler="default", rcvbuf=MPTCP_RCVBUF,
    )  # fmt: skip
    net.record(interfaces=False, subflows=False)
    return net


def mptcp_shared_bottleneck_bench(duration: str) -> Network:
    """A 2-subflow MPTCP LIA connection and a Reno flow through one 1 Gbps, 5 ms bottleneck.

    The MPTCP client `mc` has two links to `s1` (one subflow each); the TCP
    client `tc` one. Servers `ms` and `ts` sit behind `s2`. Queue one BDP.
    """
    rtt_ms = 2 * (ACCESS_DELAY_MS + BOTTLENECK_DELAY_MS + ACCESS_DELAY_MS)
    net = Network("bench-mptcp-shared-bottleneck", duration=duration)
    for host in ("mc", "tc", "ms", "ts"):
        net.add_host(host)
    net.add_switch("s1")
    net.add_switch("s2")
    queue = f"{bdp_packets(BOTTLENECK_BW_BPS, rtt_ms)}pkt"
    net.add_link("s1", "s2", bw=f"{BOTTLENECK_BW_BPS}bps", delay=f"{BOTTLENECK_DELAY_MS}ms", queue=queue,
                 name="bottleneck")  # fmt: skip
    access = {"bw": ACCESS_BW, "delay": f"{ACCESS_DELAY_MS}ms", "queue": "100000pkt"}
    net.add_link("mc", "s1", name="mc1", **access)
    net.add_link("mc", "s1", name="mc2", **access)
    net.add_link("tc", "s1", name="tc1", **access)
    net.add_link("s2", "ms", name="ms1", **access)
    net.add_link("s2", "ts", name="ts1", **access)
    net.add_flow(
        "mc", "ms", transport="mptcp", cc="lia", name="mptcp",
        path_manager="fullmesh", scheduler="default", rcvbuf=MPTCP_RCVBUF,
    )  # fmt: skip
    net.add_flow("tc", "ts", cc="reno", delayed_ack=True, name="tcp")
    net.record(interfaces=False, subflows=False)
    return net


# CMT: Khan & Qadir's simple scenario scaled up a hundredfold (20 and 100 Mbit/s,
# the same 5:1 ratio), with a receive buffer of a few windows so that the run
# exercises SMT's inter-path repairs as well as plain transfer.
CMT_PATH_RATES_BPS = (20 * 10**6, 100 * 10**6)
CMT_DELAY_MS = 10
CMT_RBUF = "1MB"


def cmt_two_path_bench(duration: str) -> Network:
    """An SMT bulk download (transport cmt, variant smt) over two disjoint paths of 20 and 100 Mbit/s,
    10 ms one way each; queues one BDP.

        client ==p1 (20 Mbps, 10 ms)== server
               ==p2 (100 Mbps, 10 ms)=

    Each path is a direct link: the association's i-th path joins the i-th
    interface of each end.
    """
    net = Network("bench-cmt-2path", duration=duration)
    net.add_host("client")
    net.add_host("server")
    for i, rate_bps in enumerate(CMT_PATH_RATES_BPS, start=1):
        queue = f"{bdp_packets(rate_bps, 2 * CMT_DELAY_MS)}pkt"
        net.add_link("client", "server", bw=f"{rate_bps}bps", delay=f"{CMT_DELAY_MS}ms", queue=queue, name=f"p{i}")
    net.add_flow("client", "server", transport="cmt", variant="smt", name="cmt", rbuf=CMT_RBUF)
    net.record(interfaces=False, subflows=False)
    return net


CASES: list[BenchCase] = [
    BenchCase("dumbbell-1flow-1g", "1 Reno flow, 1 Gbps bottleneck", lambda d: dumbbell_bench(1, d)),
    BenchCase("dumbbell-100flow-1g", "100 Reno flows, 1 Gbps bottleneck", lambda d: dumbbell_bench(100, d)),
    BenchCase("mptcp-2path-1g", "1 MPTCP LIA download, two disjoint 1 Gbps paths", mptcp_two_path_bench),
    BenchCase(
        "mptcp-shared-bottleneck-1g",
        "MPTCP LIA (2 subflows) and Reno TCP, one 1 Gbps bottleneck",
        mptcp_shared_bottleneck_bench,
    ),
    BenchCase("cmt-2path", "1 SMT (cmt) download, two disjoint paths of 20 and 100 Mbps", cmt_two_path_bench),
]


# The figure MPTCP's cases are compared with: the TCP dumbbell.
REFERENCE_CASE = "dumbbell-100flow-1g"
CONFIDENCE = 0.95


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


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """A distribution-free confidence interval of the median: the order
    statistics x(k) and x(n+1-k), with k the largest rank such that a
    Binomial(n, 1/2) falls below it with probability at most (1 - confidence)/2.
    None when there are too few values for that confidence (fewer than 6 at 95 %)."""
    xs = sorted(values)
    n = len(xs)
    tail = (1 - confidence) / 2
    below, k = 0.0, 0
    while k < n:
        p = math.comb(n, k) / 2**n
        if below + p > tail:
            break
        below += p
        k += 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]


def summarise(rounds: list[list[dict[str, Any]]], reference: str = REFERENCE_CASE) -> list[dict[str, Any]]:
    """One row per case from several rounds (each a list of `run_case` rows,
    every case once). Rates are medians over the rounds; `relative_speed` is
    the median over rounds of the case's rate over the reference case's rate
    in the same round (runs close in time share the machine's load), with its
    confidence interval. The reference itself and runs without it get None."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for rows in rounds:
        for row in rows:
            by_case.setdefault(row["case"], []).append(row)
    reference_rates = [next((r["packet_hops_per_s"] for r in rows if r["case"] == reference), None) for rows in rounds]
    summary = []
    for name, runs in by_case.items():
        first = runs[0]
        for r in runs[1:]:
            if (r["events"], r["packet_hops"]) != (first["events"], first["packet_hops"]):
                raise BenchError(f"bench case {name}: events or packet-hops differ between rounds")
        rates = [r["packet_hops_per_s"] for r in runs]
        ratios = []
        if name != reference:
            ratios = [r["packet_hops_per_s"] / ref for r, ref in zip(runs, reference_rates, strict=True) if ref]
        interval = median_interval(ratios) if ratios else None
        summary.append({
            "case": name,
            "sim_time_s": first["sim_time_s"],
            "rounds": len(runs),
            "wall_s": statistics.median([r["wall_s"] for r in runs]),
            "total_wall_s": statistics.median([r["total_wall_s"] for r in runs]),
            "events": first["events"],
            "packet_hops": first["packet_hops"],
            "packet_hops_per_s": statistics.median(rates),
            "packet_hops_per_s_min": min(rates),
            "packet_hops_per_s_max": max(rates),
            "packet_hops_per_s_rounds": rates,
            "events_per_s": statistics.median([r["events_per_s"] for r in runs]),
            "peak_memory_mib": max(r["peak_memory_mib"] for r in runs),
            "run_memory_mib": max(r["run_memory_mib"] for r in runs),
            "relative_speed": statistics.median(ratios) if ratios else None,
            "relative_speed_ci95": list(interval) if interval else None,
            "relative_speed_min": min(ratios) if ratios else None,
            "relative_speed_rounds": ratios or None,
        })  # fmt: skip
    return summary


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
