"""The simulator-versus-kernel table of docs/validation.md.

`python -m mpsim.kernel.validation [--runs N] [--out FILE]` runs each case
N times on the kernel and N seeds in the simulator and prints a Markdown
table: per case and metric, the simulator's mean, the kernel's mean and
range over its runs, the difference, and the machine's one-minute load
average over the kernel runs (lowest-highest). Bulk cases compare goodput;
short-flow cases compare the median download time per response size;
failure cases compare the goodput of the surviving path while the other
is down; the transfer case compares what a 5 MB download delivered by the
end of the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import warnings
from pathlib import Path
from typing import Any

from ..net import Network
from ..runner import backend_named, resolve_scenario

# The simulator runs upstream Linux's scheduler, as the kernel does (its default is the out-of-tree one).
MPTCP: dict[str, Any] = {"path_manager": "endpoints", "client_interfaces": ["a", "b"], "scheduler": "upstream"}
SHORT: dict[str, Any] = {"app": "http", "sizes": ["10KB", "100KB", "1MB", "5MB"], "repeat": 2, "gap": "200ms"}
DOWNLOAD: dict[str, Any] = {"app": "download"}


def two_paths(name: str, *, duration: str = "10s", server_side: bool = False, rate_b: str = "10Mbps",
              delay_a: str = "10ms", delay_b: str = "10ms", down_a: bool = False, transport: str = "mptcp",
              queue: str = "100pkt", **flow: Any) -> Network:
    """Client, router and server; two paths (a and b, 10 Mbit/s and `rate_b`,
    `queue` each) on the client's side, or on the server's (sa and sb),
    and one 100 Mbit/s link of 1 ms on the other side. With `down_a` the
    first path is down from 5 to 10 s."""
    net = Network(name, duration=duration, start_jitter="50ms")
    net.add_host("client")
    net.add_router("router")
    net.add_host("server")
    wide = dict(bw="100Mbps", delay="1ms", queue="1000pkt")
    if server_side:
        net.add_link("client", "router", name="acc", **wide)
    pair = ("router", "server") if server_side else ("client", "router")
    names = ("sa", "sb") if server_side else ("a", "b")
    net.add_link(*pair, bw="10Mbps", delay=delay_a, queue=queue, name=names[0])
    net.add_link(*pair, bw=rate_b, delay=delay_b, queue=queue, name=names[1])
    if not server_side:
        net.add_link("router", "server", name="wan", **wide)
    if down_a:
        net.link_event(names[0], at="5s", up=False)
        net.link_event(names[0], at="10s", up=True)
    net.add_flow("client", "server", transport=transport, cc="cubic", cc_mode="linux", name="f", **flow)
    return net


# A multihomed server: its second address is announced (a `signal` endpoint) and its first link fails.
SERVER_SIDE = {"path_manager": "endpoints", "max_add_addr_accepted": 1, "scheduler": "upstream"}

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("bulk MPTCP 10/5 Mbit/s", "bulk", {"rate_b": "5Mbps", **DOWNLOAD, **MPTCP}),
    ("bulk MPTCP 10/10 Mbit/s", "bulk", {**DOWNLOAD, **MPTCP}),
    ("short TCP 10 Mbit/s, 20 ms RTT", "short",
     {"duration": "20s", "transport": "tcp", **SHORT, "client_interfaces": ["a"]}),
    ("short MPTCP 10/10, 20 ms RTT", "short", {"duration": "20s", **SHORT, **MPTCP}),
    ("short MPTCP 10/10, 40 ms RTT", "short", {"duration": "20s", "delay_a": "20ms", "delay_b": "20ms", **SHORT, **MPTCP}),
    ("short MPTCP 10/0.1", "short", {"duration": "20s", "rate_b": "0.1Mbps", **SHORT, **MPTCP}),
    ("short MPTCP 10/0.1, slow path backup", "short",
     {"duration": "20s", "rate_b": "0.1Mbps", **SHORT, **MPTCP, "backup_interfaces": ["b"]}),
    ("MPTCP 10/10, client link a down 5-10 s", "failure", {"duration": "15s", "down_a": True, **DOWNLOAD, **MPTCP}),
    ("MPTCP 10/10, server link sa down 5-10 s", "failure_server",
     {"duration": "15s", "server_side": True, "down_a": True, **DOWNLOAD, **SERVER_SIDE}),
    ("download 5 MB, MPTCP 10/0.1", "transfer", {"duration": "30s", "rate_b": "0.1Mbps", "app": "download",
                                                 "size": "5MB", **MPTCP}),
    # The engine's buffers test (crates/mpsim/tests/buffers.rs): 10 ms RTT on both paths, 1000-packet queues.
    ("download 5 MB, MPTCP 10/0.1, 10 ms RTT, 1000-packet queues", "transfer",
     {"duration": "30s", "rate_b": "0.1Mbps", "delay_a": "5ms", "delay_b": "5ms", "queue": "1000pkt",
      "app": "download", "size": "5MB", **MPTCP}),
]


def metrics(kind: str, results: Any) -> dict[str, float]:
    flow = results.summary["flows"]["f"]
    if kind == "bulk":
        return {"goodput (Mbit/s)": flow["goodput_bps"] / 1e6}
    if kind == "transfer":  # the run may end before the transfer does
        return {"delivered (MB)": flow["bytes_delivered"] / 1e6}
    if kind in ("failure", "failure_server"):
        node, iface = ("client", "b") if kind == "failure" else ("server", "sb")
        rows = results.interfaces.query(f"node == '{node}' and interface == '{iface}'")
        column = "rx_bps" if kind == "failure" else "tx_bps"
        during = rows[(rows.time_s > 5.0) & (rows.time_s <= 10.0)]
        before = rows[(rows.time_s > 2.0) & (rows.time_s <= 5.0)]
        return {"path b while a is down (Mbit/s)": during[column].mean() / 1e6,
                "path b before (Mbit/s)": before[column].mean() / 1e6,
                "goodput (Mbit/s)": flow["goodput_bps"] / 1e6}
    req = results.requests
    return {f"{int(size / 1000)} KB time (ms)": float(((g.end_s - g.start_s) * 1e3).median())
            for size, g in req.groupby("size_bytes")}


def run_case(name: str, kind: str, params: dict[str, Any], runs: int) -> list[dict[str, Any]]:
    network = two_paths(name.split()[0], **params)
    values: dict[str, dict[str, list[float]]] = {"simulator": {}, "kernel": {}}
    loads: list[float] = []
    for backend in ("simulator", "kernel"):
        for seed in range(1, runs + 1):
            if backend == "kernel":
                loads.append(os.getloadavg()[0])  # the kernel's figures are timing-sensitive
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scenario = resolve_scenario(network, seed=seed)
            chosen = backend_named(backend)
            chosen.check(scenario)
            for key, value in metrics(kind, chosen.run(scenario, None)).items():
                values[backend].setdefault(key, []).append(value)
    rows = []
    for key, ker in values["kernel"].items():
        sim = values["simulator"].get(key, [float("nan")])
        s, k = statistics.fmean(sim), statistics.fmean(ker)
        rows.append({"case": name, "metric": key, "simulator": s, "kernel": k, "kernel_min": min(ker),
                     "kernel_max": max(ker), "runs": len(ker), "difference_frac": (s - k) / k if k else float("nan"),
                     "load_min": min(loads), "load_max": max(loads)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | metric | simulator | kernel (mean) | kernel (min-max) | runs | sim vs kernel | load |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['metric']} | {r['simulator']:.3f} | {r['kernel']:.3f} | "
                     f"{r['kernel_min']:.3f}-{r['kernel_max']:.3f} | {r['runs']} | {r['difference_frac']:+.1%} | "
                     f"{r['load_min']:.1f}-{r['load_max']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cases", default="", help="comma-separated case numbers (1-based); all by default")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    chosen = [int(c) - 1 for c in args.cases.split(",") if c] or list(range(len(CASES)))
    rows: list[dict[str, Any]] = []
    for i in chosen:
        name, kind, params = CASES[i]
        rows += run_case(name, kind, params, args.runs)
        print(f"done: {name}", flush=True)
        if args.out is not None:  # each case as it ends: a long run that stops keeps what it measured
            args.out.write_text(table(rows) + "\n", encoding="utf-8")
    print(table(rows))


if __name__ == "__main__":
    main()
