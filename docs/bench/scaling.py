"""How the engine's cost grows with hosts, flows and simulated time
(docs/performance.md, "How cost grows").

Each point is one engine run of a spec written by the Python builder and
run by the `run_spec` example in a child process, so Python is not in the
measured process: its user CPU seconds (`wait4`) and peak RSS (GNU time),
events and packet-hops from the run's summary. Three series:

- hosts: FatTree k = 4, 6, 8, 10, 12, 16 (16 to 1,024 hosts), 10 Gbit/s links of
  1 µs, 100-packet queues, ECMP, TCP Reno permutation traffic with a 2 ms
  minimum RTO, 5 ms simulated;
- flows: the bench's 1 Gbit/s dumbbell (docs/performance.md) with 1 to
  1,000 Reno flows, 5 s simulated;
- simulated time: the 100-flow dumbbell for 1 to 16 s.

    cargo build --release -p mpsim --example run_spec
    python docs/bench/scaling.py --out docs/bench/scaling.json --figure docs/bench/scaling.png

The figure plots CPU seconds against each variable on log-log axes, with
the packet-hops per CPU-second of each point in a second row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mpsim import topo
from mpsim.bench import dumbbell_bench

ROOT = Path(__file__).resolve().parents[2]
RUN_SPEC = ROOT / "target" / "release" / "examples" / "run_spec"


def fabric(k: int) -> dict[str, Any]:
    net = topo.fat_tree(k, duration="5ms", sample_interval="5ms")
    net.add_traffic("permutation", transport="tcp", cc="reno", min_rto="2ms")
    net.record(interfaces=False, subflows=False)
    return net.to_scenario().to_engine_spec()


def dumbbell(flows: int, duration: str) -> dict[str, Any]:
    return dumbbell_bench(flows, duration).to_scenario().to_engine_spec()


SERIES: dict[str, list[tuple[int, Any]]] = {
    "hosts": [(k**3 // 4, lambda k=k: fabric(k)) for k in (4, 6, 8, 10, 12, 16)],
    "flows": [(n, lambda n=n: dumbbell(n, "5s")) for n in (1, 3, 10, 30, 100, 300, 1000)],
    "simulated_s": [(t, lambda t=t: dumbbell(100, f"{t}s")) for t in (1, 2, 4, 8, 16)],
}


def measure(spec: dict[str, Any], folder: Path) -> dict[str, float]:
    path = folder / "spec.json"
    path.write_text(json.dumps(spec))
    with open(folder / "summary.json", "w+") as out:
        # GNU time reports the engine's peak RSS (a child forked from this
        # Python process would count its image); wait4 gives the CPU time
        # of time and the engine it reaped, in microseconds.
        rss = folder / "rss.txt"
        child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(rss), str(RUN_SPEC), str(path)], stdout=out)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"run_spec failed on {path} ({child.returncode})")
        out.seek(0)
        summary = json.load(out)
    return {"cpu_s": usage.ru_utime, "peak_rss_mib": int(rss.read_text().split()[-1]) / 1024, "events": summary["events"],
            "packet_hops": summary["packet_hops"], "load": os.getloadavg()[0]}


def plot(rows: list[dict[str, Any]], figure: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"hosts": "hosts (FatTree, 5 ms)", "flows": "flows (1 Gbit/s dumbbell, 5 s)",
              "simulated_s": "simulated seconds (100-flow dumbbell)"}
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5), sharex="col")
    for col, series in enumerate(SERIES):
        pts = [r for r in rows if r["series"] == series]
        x = [r["x"] for r in pts]
        axes[0][col].loglog(x, [r["cpu_s"] for r in pts], "o-")
        axes[1][col].semilogx(x, [r["packet_hops"] / r["cpu_s"] / 1e6 for r in pts], "o-")
        axes[1][col].set_xlabel(labels[series])
        axes[1][col].set_ylim(bottom=0)
    axes[0][0].set_ylabel("engine CPU seconds")
    axes[1][0].set_ylabel("M packet-hops per CPU-second")
    fig.suptitle("How the engine's cost grows (log-log)")
    fig.tight_layout()
    fig.savefig(figure, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--figure", type=Path)
    parser.add_argument("--series", default=",".join(SERIES))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for series in args.series.split(","):
            for x, build in SERIES[series]:
                rows.append({"series": series, "x": x, **measure(build(), Path(tmp))})
                print(json.dumps(rows[-1]), flush=True)
                args.out.write_text(json.dumps(rows, indent=1) + "\n")
    if args.figure is not None:
        plot(rows, args.figure)


if __name__ == "__main__":
    main()
