"""`run_kernel`: scenario in, Results out, with the Linux kernel in between."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import MpsimError
from ..results import Results, check_out_dir
from ..scenario import Scenario, _first_error
from ..spec import CBR_DEFAULT_PACKET_BYTES, VIDEO_DEFAULT_BITRATE_BPS, VIDEO_DEFAULT_CHUNK_PS
from . import capture, collect, refuse
from .plan import Plan, make_plan
from .testbed import RUN_PREFIX, KernelSetupError, NetnsReader, Testbed, find_linkd, now_ns

AGENT = Path(__file__).with_name("agent.py")
BASE_PORT = 5001
# Agents start (a Python interpreter each) before the run's time zero.
START_MARGIN_S = 0.6
START_MARGIN_PER_AGENT_S = 0.08
# Diagnosis only: agents set TCP_NODELAY (the simulator has no Nagle). Linux
# apps send with Nagle unless they ask; the comparison keeps Linux's default.
NODELAY_ENV = "MPSIM_KERNEL_NODELAY"


class KernelUnavailableError(MpsimError, RuntimeError):
    """This machine cannot run the kernel backend (not root, no namespaces,
    no link element binary): the message says which and how to fix it."""


class KernelRunError(MpsimError, RuntimeError):
    """The kernel run failed after set-up began (everything was removed)."""


def kernel_unavailable() -> str | None:
    """Why the kernel backend cannot run here, or None when it can."""
    if sys.platform != "linux":
        return "the kernel backend needs Linux"
    if os.geteuid() != 0:
        return "the kernel backend needs root (network namespaces, TAP devices, tc)"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("ethtool", "ethtool")):
        if shutil.which(tool) is None:
            return f"the kernel backend needs `{tool}` (package {package})"
    if not os.path.exists("/dev/net/tun"):
        return "the kernel backend needs /dev/net/tun"
    if find_linkd() is None:
        return ("the link element mpsim-linkd is not built: run `cargo build --release -p mpsim-linkd` "
                "(or set MPSIM_LINKD)")
    probe = f"{RUN_PREFIX}probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` does not work here: {made.stderr.strip()}"
    return None


def check_kernel_runnable(scenario: Scenario) -> None:
    """Raise one ScenarioError (file, line, key) for the first key the kernel cannot honour."""
    found = refuse.problems(scenario)
    if found:
        loc, message = found[0]
        raise _first_error(scenario._source, [(loc, f"kernel backend: {message}")], scenario._applied)


class KernelBackend:
    """The kernel as a backend of `mpsim.run`: the same contract as the simulator's."""

    name = "kernel"

    def check(self, scenario: Scenario) -> None:
        check_kernel_runnable(scenario)

    def run(self, scenario: Scenario, progress: Any = None) -> Results:
        return run_kernel(scenario, progress=progress)


def run_kernel(scenario: Scenario, *, out: str | os.PathLike[str] | None = None, progress: Any = None) -> Results:
    """Run `scenario` in namespaces on this kernel; everything set up is
    removed on return, on error and on Ctrl-C."""
    check_kernel_runnable(scenario)
    if out is not None:
        check_out_dir(Path(out))
    reason = kernel_unavailable()
    if reason is not None:
        raise KernelUnavailableError(reason)
    linkd = find_linkd()
    assert linkd is not None  # kernel_unavailable checked it
    run_id = f"{RUN_PREFIX}{os.getpid():x}{random.randrange(16**4):04x}"
    plan = make_plan(scenario, run_id)
    workdir = Path(tempfile.mkdtemp(prefix=f"{run_id}-"))
    started = time.perf_counter()
    previous = _sigterm_as_interrupt()
    try:
        with Testbed(plan, linkd, scenario.seed) as bed:
            try:
                bed.setup()
            except KernelSetupError as exc:
                raise KernelRunError(f"kernel set-up failed: {exc}") from None
            raw = _run(bed, plan, scenario, workdir, progress)
            links = _link_counters(bed, plan)
        raw["element_stats"] = bed.element_stats
    finally:
        _restore_sigterm(previous)
        shutil.rmtree(workdir, ignore_errors=True)
    results = collect.results(scenario, plan, raw, links, time.perf_counter() - started)
    if out is not None:
        results.save(Path(out))
    return results


def _run(bed: Testbed, plan: Plan, scenario: Scenario, workdir: Path, progress: Any) -> dict[str, Any]:
    sim = scenario.simulation
    readers = {node: NetnsReader(plan.netns[node]) for node, kind in plan.kinds.items()}
    try:
        bed.start_captures(list(scenario.record.pcap), workdir)  # listening before time zero is fixed
        initial = {node: r.counters() for node, r in readers.items()}
        n_agents = 2 * len(scenario.flows)
        t0_ns = now_ns() + int((START_MARGIN_S + START_MARGIN_PER_AGENT_S * n_agents) * 1e9)
        end_ns = t0_ns + sim.duration_ps // 1000
        outputs = _start_agents(bed, plan, scenario, workdir, t0_ns, end_ns)
        samples: list[tuple[float, dict[str, dict[str, tuple[int, int, int]]]]] = [(0.0, initial)]
        stop = threading.Event()
        threading.Thread(target=_events, args=(bed, plan, t0_ns, stop), daemon=True).start()
        _sample_until(readers, samples, t0_ns, end_ns, sim.sample_interval_ps // 1000, progress)
        stop.set()
        for proc in bed.agents:
            try:
                proc.wait(timeout=max(0.0, (end_ns - now_ns()) / 1e9) + 3.0)
            except subprocess.TimeoutExpired:
                pass
        bed.stop_captures()
        return {"samples": samples, "agents": {k: _read_lines(p) for k, p in outputs.items()},
                "duration_s": sim.duration_ps / 1e12, **_captured(bed, t0_ns, end_ns)}
    finally:
        for r in readers.values():
            r.close()


def _start_agents(bed: Testbed, plan: Plan, scenario: Scenario, workdir: Path, t0_ns: int,
                  end_ns: int) -> dict[tuple[str, str], Path]:
    """Servers first (and listening), then clients; each writes JSON lines to its file."""
    outputs: dict[tuple[str, str], Path] = {}
    for role in ("server", "client"):
        procs = []
        for i, flow in enumerate(scenario.flows):
            # The receiving side counts delivered bytes: the server of an upload, else the client.
            receiver = collect.receiving_role(flow) == role
            cfg = {**_agent_config(plan, scenario, i, t0_ns, end_ns), "role": role, "receiver": receiver}
            path = workdir / f"{i}-{role}.jsonl"
            host = flow.server if role == "server" else flow.client
            procs.append(bed.start_agent(plan.netns[host], [sys.executable, "-I", str(AGENT), json.dumps(cfg)], path))
            outputs[(flow.name or f"flow{i}", role)] = path
        if role == "server":
            _wait_ready([outputs[(f.name or f"flow{i}", "server")] for i, f in enumerate(scenario.flows)], procs)
    return outputs


def _app_config(flow: Any) -> dict[str, Any]:
    """The datagram, on/off and video parameters, with the simulator's
    defaults (spec.py `app_spec`)."""
    cfg: dict[str, Any] = {}
    if flow.transport == "udp":
        packet = flow.packet_bytes or CBR_DEFAULT_PACKET_BYTES
        cfg.update(packet_bytes=packet, interval_ns=packet * 8 * 1e9 / flow.rate_bps)
    if flow.app == "onoff":
        cfg.update(on_ns=flow.on_ps // 1000, off_ns=(flow.off_ps or 0) // 1000)
    if flow.app == "video":
        bitrate = flow.bitrate_bps if flow.bitrate_bps is not None else VIDEO_DEFAULT_BITRATE_BPS
        chunk_ps = flow.chunk_ps if flow.chunk_ps is not None else VIDEO_DEFAULT_CHUNK_PS
        cfg.update(chunk_bytes=max(1, round(bitrate / 8 * chunk_ps / 1e12)), chunk_ns=chunk_ps // 1000)
    return cfg


def _wait_ready(paths: list[Path], procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + 10
    for path, proc in zip(paths, procs):
        while '"ready"' not in path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise KernelRunError(f"a server agent did not start: {path.read_text().strip()[:300]}")
            time.sleep(0.01)


def _agent_config(plan: Plan, scenario: Scenario, i: int, t0_ns: int, end_ns: int) -> dict[str, Any]:
    flow = scenario.flows[i]
    name = flow.name or f"flow{i}"
    jitter_ps = flow.start_jitter_ps if flow.start_jitter_ps is not None else scenario.simulation.start_jitter_ps
    # A per-flow seeded draw, as the simulator spreads starts (not the same stream: the same distribution).
    start_ps = flow.start_ps + int(random.Random(f"{scenario.seed}:{name}").random() * jitter_ps)
    client_ifaces = plan.host_ifaces(flow.client)
    if flow.client_interfaces:
        client_ifaces = [(n, e) for n, e in client_ifaces if n in set(flow.client_interfaces)]
    bind = client_ifaces[0][1].addr if client_ifaces and flow.client_interfaces else None
    server_addr = plan.host_ifaces(flow.server)[0][1].addr
    is_http = flow.app == "http"
    return {
        "flow": name, "transport": flow.transport, "cc": flow.effective_cc, "app": flow.app,
        "port": BASE_PORT + i, "t0_ns": t0_ns, "end_ns": end_ns,
        "start_ns": t0_ns + start_ps // 1000, "start_s": start_ps / 1e12,
        "stop_ns": t0_ns + flow.stop_ps // 1000 if flow.stop_ps is not None else None,
        "sample_ns": scenario.simulation.sample_interval_ps // 1000,
        "size": flow.size_bytes, "bind": bind, "server_addr": server_addr,
        "sizes": list(flow.sizes_bytes or []), "repeat": flow.repeat or 1, "gap_ns": (flow.gap_ps or 0) // 1000,
        "new_connection": flow.new_connection if flow.new_connection is not None else True,
        "keep_open": is_http and flow.new_connection is False,
        "request_bytes": (flow.request_size_bytes or 100) if is_http else 9,
        "mss": flow.mss_bytes, "rcvbuf": flow.rcvbuf_bytes, "sndbuf": flow.sndbuf_bytes,
        "receiver": False, "record_subflows": scenario.record.subflows,
        "nodelay": os.environ.get(NODELAY_ENV, "") not in ("", "0"),
        **_app_config(flow),
    }


def _sample_until(readers: dict[str, NetnsReader], samples: list, t0_ns: int, end_ns: int, step_ns: int,
                  progress: Any) -> None:
    """Interface counters of every namespace at each sample time, progress in between."""
    tick = 1
    end_s = (end_ns - t0_ns) / 1e9
    while True:
        at_ns = min(t0_ns + tick * step_ns, end_ns)
        while now_ns() < at_ns:
            time.sleep(min(0.2, max(0.0, (at_ns - now_ns()) / 1e9)))
            if progress is not None:
                progress(max(0.0, (now_ns() - t0_ns) / 1e9), end_s)
        samples.append(((at_ns - t0_ns) / 1e9, {node: r.counters() for node, r in readers.items()}))
        if at_ns >= end_ns:
            return
        tick += 1


def _events(bed: Testbed, plan: Plan, t0_ns: int, stop: threading.Event) -> None:
    timeline = sorted(((e["at_ps"], lp.index, k) for lp in plan.links for k, e in enumerate(lp.events)))
    for at_ps, index, k in timeline:
        delay_s = (t0_ns + at_ps // 1000 - now_ns()) / 1e9
        if stop.wait(max(0.0, delay_s)):
            return
        lp = plan.links[index]
        try:
            bed.apply_event(lp, lp.events[k])
        except KernelSetupError as exc:
            sys.stderr.write(f"link {lp.name}: event at {at_ps / 1e12:g}s not applied: {exc}\n")


def _captured(bed: Testbed, t0_ns: int, end_ns: int) -> dict[str, Any]:
    """The captures as the simulator's pcap files (times from the run's
    start), and per interface the frames written and lost by tcpdump."""
    offset_ns = capture.realtime_offset_ns()
    pcaps, stats = {}, {}
    for cap in bed.captures:
        data = cap.path.read_bytes() if cap.path.exists() else b""
        pcaps[cap.iface], frames = capture.rebase(data, t0_ns + offset_ns, end_ns + offset_ns)
        stats[cap.iface] = {"frames": frames, "dropped_by_capture": cap.dropped()}
    return {"pcaps": pcaps, "capture_stats": stats}


def _link_counters(bed: Testbed, plan: Plan) -> dict[str, list[int]]:
    """Drops in each end's FIFO, read before the namespaces go."""
    return {lp.name: [bed.qdisc_drops(end.netns, end.dev) for end in lp.ends] for lp in plan.links}


def _read_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"error": line})
    return out


def _sigterm_as_interrupt() -> Any:
    """SIGTERM tears down as Ctrl-C does (only the main thread can set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _restore_sigterm(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["KernelBackend", "KernelRunError", "KernelUnavailableError", "run_kernel"]
