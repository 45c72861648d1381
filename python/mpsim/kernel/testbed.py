"""Set-up and tear-down of a plan on the real kernel.

Everything created is recorded as it is created, and `teardown` removes
it in reverse whatever happened: agents are killed, each link element is
stopped (its TAP devices go with it, as they are not persistent), and
the namespaces are deleted. `leftovers(prefix)` lists what would remain,
for the tests and for a run that was killed outright.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from . import capture
from .plan import HTB_BURST_BYTES, LinkPlan, Plan, iface_mac

NETNS_DIR = Path("/run/netns")
READY_TIMEOUT_S = 5.0
CLONE_NEWNET = 0x40000000
RUN_PREFIX = "mpsim-k"


class KernelSetupError(RuntimeError):
    """A command of the set-up failed: the message names it and its output."""


def sh(args: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise KernelSetupError(f"`{' '.join(args[:6])}{' ...' if len(args) > 6 else ''}` failed: "
                               f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def htb_lines(dev: str, rate_bps: int | None, queue: dict[str, int], change: bool = False) -> list[str]:
    """tc batch lines: htb at the link's rate, one frame of burst so frames
    leave one at a time, and a packet (or byte) FIFO of the link's queue."""
    fifo = f"pfifo limit {queue['packets']}" if "packets" in queue else f"bfifo limit {queue['bytes']}"
    if rate_bps is None:
        return [f"qdisc replace dev {dev} root handle 1: {fifo}"]
    verb = "change" if change else "add"
    rate = f"rate {rate_bps}bit burst {HTB_BURST_BYTES}b cburst {HTB_BURST_BYTES}b quantum {HTB_BURST_BYTES}"
    lines = [] if change else [f"qdisc replace dev {dev} root handle 1: htb default 1"]
    lines.append(f"class {verb} dev {dev} parent 1: classid 1:1 htb {rate}")
    lines.append(f"qdisc {verb} dev {dev} parent 1:1 handle 10: {fifo}")
    return lines


class Testbed:
    def __init__(self, plan: Plan, linkd: str, seed: int) -> None:
        self.plan = plan
        self.linkd = linkd
        self.seed = seed
        self.namespaces: list[str] = []
        self.elements: dict[int, subprocess.Popen] = {}
        self.agents: list[subprocess.Popen] = []
        self.captures: list[capture.Capture] = []
        self.element_stats: dict[int, dict[str, Any]] = {}
        self.params: dict[int, list[str]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.teardown()

    # ------------------------------------------------------------ set-up

    def setup(self) -> None:
        for ns in self.plan.netns.values():
            # Recorded first: a Ctrl-C between the two lines must not leave it behind.
            self.namespaces.append(ns)
            sh(["ip", "netns", "add", ns])
        for lp in self.plan.links:
            self._start_element(lp)
        for ns in self.plan.netns.values():
            self._configure(ns)

    def _start_element(self, lp: LinkPlan) -> None:
        a, b = lp.ends
        self.params[lp.index] = [f"{d.delay_ns},{d.jitter_ns},{d.loss}" for d in lp.dirs]
        args = [self.linkd, "--a-netns", str(NETNS_DIR / a.netns), "--a-dev", a.dev,
                "--b-netns", str(NETNS_DIR / b.netns), "--b-dev", b.dev,
                "--a-to-b", self.params[lp.index][0], "--b-to-a", self.params[lp.index][1],
                "--seed", str((self.seed << 16) ^ lp.index)]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1)
        self.elements[lp.index] = proc
        ready = _readline_within(proc, READY_TIMEOUT_S)
        if ready.strip() != "ready":
            err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
            raise KernelSetupError(f"link element of link '{lp.name}' did not start: {ready.strip() or err.strip()}")

    def _configure(self, ns: str) -> None:
        """Sysctls, offloads, shapers, addresses, routes and MPTCP endpoints
        of one namespace: one shell, one `tc -batch`, one `ip -batch`."""
        devs = [(lp, side) for lp in self.plan.links for side, e in enumerate(lp.ends) if e.netns == ns]
        script = ["set -e"]
        script += [f"echo {v} > /proc/sys/{k}" for k, v in self.plan.sysctls[ns].items()]
        for lp, side in devs:
            dev = lp.ends[side].dev
            # Offloads off, so that the shaper sees real frames and not 64 KB super-packets.
            script.append(f"ethtool -K {dev} gso off gro off tso off tx off >/dev/null 2>&1 || true")
        sh(["ip", "netns", "exec", ns, "sh", "-c", "\n".join(script)])
        tc = [line for lp, side in devs for line in htb_lines(lp.ends[side].dev, lp.dirs[side].rate_bps,
                                                                lp.dirs[side].queue)]
        ip = ["link set dev lo up"] + [f"link set dev {lp.ends[side].dev} address {iface_mac(lp.index, side)} up"
                                       for lp, side in devs]
        if tc:
            sh(["tc", "-n", ns, "-batch", "-"], "\n".join(tc) + "\n")
        sh(["ip", "-n", ns, "-batch", "-"], "\n".join(ip + self.plan.ip[ns]) + "\n")

    # ------------------------------------------------------------ during the run

    def start_agent(self, ns: str, args: list[str], out: Path) -> subprocess.Popen:
        with open(out, "w", encoding="utf-8") as f:
            proc = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=f, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.agents.append(proc)
        return proc

    def start_captures(self, entries: list[str], folder: Path) -> None:
        """One tcpdump per `record.pcap` entry ("node:link"), listening when this returns."""
        for iface in entries:
            node, _, link = iface.partition(":")
            end = next(e for name, e in self.plan.host_ifaces(node) if name == link)
            try:
                cap = capture.start(iface, end.netns, end.dev, folder / (iface.replace(":", "-") + ".pcap"))
            except capture.CaptureError as exc:
                raise KernelSetupError(str(exc)) from None
            self.captures.append(cap)

    def stop_captures(self) -> None:
        for cap in self.captures:
            capture.stop(cap)

    def apply_event(self, lp: LinkPlan, event: dict[str, Any]) -> None:
        """One `[[link.events]]` entry, now: carrier and propagation on the
        element, rate and queue on the shapers of the directions it names."""
        sides = {"both": (0, 1), "a_to_b": (0,), "b_to_a": (1,)}[event["direction"]]
        for side in sides:
            d = lp.dirs[side]
            if event["delay_ps"] is not None:
                d.delay_ns = event["delay_ps"] // 1000
            if event["jitter_ps"] is not None:
                d.jitter_ns = event["jitter_ps"] // 1000
            if event["loss"] is not None:
                d.loss = _loss_from_spec(event["loss"])
            if any(event[k] is not None for k in ("delay_ps", "jitter_ps", "loss")):
                self._tell(lp, f"set {('a_to_b', 'b_to_a')[side]} {d.delay_ns},{d.jitter_ns},{d.loss}")
            if event["bandwidth_bps"] is not None or event["queue"] is not None:
                if event["bandwidth_bps"] is not None:
                    d.rate_bps = event["bandwidth_bps"]
                if event["queue"] is not None:
                    d.queue = event["queue"]
                end = lp.ends[side]
                sh(["tc", "-n", end.netns, "-batch", "-"],
                   "\n".join(htb_lines(end.dev, d.rate_bps, d.queue, change=True)) + "\n")
        if event["up"] is not None:
            self._tell(lp, "up" if event["up"] else "down")

    def _tell(self, lp: LinkPlan, line: str) -> None:
        proc = self.elements[lp.index]
        if proc.stdin is not None and proc.poll() is None:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()

    def qdisc_drops(self, ns: str, dev: str) -> int:
        try:
            data = json.loads(sh(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev]) or "[]")
        except (KernelSetupError, ValueError):
            return 0
        leaves = [q for q in data if q.get("parent") == "1:1"] or data
        return sum(int(q.get("drops", 0)) for q in leaves)

    # ------------------------------------------------------------ tear-down

    def teardown(self) -> None:
        with self._lock:
            self.stop_captures()
            for proc in self.agents:
                _kill(proc)
            self.agents.clear()
            for index, proc in list(self.elements.items()):
                self.element_stats[index] = _stop_element(proc)
            self.elements.clear()
            for ns in reversed(self.namespaces):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            self.namespaces.clear()


def _loss_from_spec(spec: dict[str, Any]) -> str:
    if spec["model"] == "none":
        return "none"
    if spec["model"] == "bernoulli":
        return repr(float(spec["p"]))
    return "g:" + ":".join(repr(float(spec[k])) for k in ("p_good_bad", "p_bad_good", "loss_good", "loss_bad"))


def _readline_within(proc: subprocess.Popen, timeout_s: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return box[0] if box else ""


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)  # the agent and `ip netns exec` are one session
        except (ProcessLookupError, PermissionError):
            proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _stop_element(proc: subprocess.Popen) -> dict[str, Any]:
    """Close the element's stdin (it prints its counters and exits); kill it if it does not."""
    stats: dict[str, Any] = {}
    if proc.poll() is None and proc.stdin is not None:
        try:
            proc.stdin.close()
            line = _readline_within(proc, 2.0)
            stats = json.loads(line) if line.strip() else {}
        except (OSError, ValueError):
            stats = {}
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return stats


def leftovers(prefix: str = RUN_PREFIX) -> list[str]:
    """Namespaces, link elements and agents of kernel runs still present."""
    found = [f"namespace {p.name}" for p in sorted(NETNS_DIR.glob(f"{prefix}*"))] if NETNS_DIR.is_dir() else []
    for proc in sorted(Path("/proc").glob("[0-9]*")):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ours = f"exec {prefix}" in cmd and "agent.py" in cmd
        capturing = cmd.startswith("tcpdump ") and f"/{prefix}" in cmd  # writes into the run's folder
        if f"/run/netns/{prefix}" in cmd or ours or capturing:
            found.append(f"process {proc.name}: {cmd.strip()[:120]}")
    try:
        mounts = Path("/proc/self/mountinfo").read_text()
    except OSError:
        mounts = ""
    found += [f"mount {line.split()[4]}" for line in mounts.splitlines() if f"/run/netns/{prefix}" in line]
    return found


class NetnsReader:
    """Reads /proc/net/dev inside one namespace from a thread that entered
    it once (setns affects only the calling thread), so sampling costs no
    process per sample."""

    def __init__(self, ns: str) -> None:
        self.ns = ns
        self._requests: list[tuple[threading.Event, list[dict[str, tuple[int, int, int]]]]] = []
        self._cv = threading.Condition()
        self._closed = False
        self._error: str | None = None
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._entered = threading.Event()
        self._thread.start()
        self._entered.wait(5)

    def _loop(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(NETNS_DIR / self.ns, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                self._error = os.strerror(ctypes.get_errno())
        finally:
            os.close(fd)
            self._entered.set()
        while True:
            with self._cv:
                while not self._requests and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                done, box = self._requests.pop(0)
            box.append(read_net_dev(Path(f"/proc/thread-self/net/dev")))
            done.set()

    def counters(self) -> dict[str, tuple[int, int, int]]:
        """device -> (rx_bytes, tx_bytes, tx_packets)."""
        if self._error is not None:
            raise KernelSetupError(f"cannot enter namespace {self.ns}: {self._error}")
        done, box = threading.Event(), []
        with self._cv:
            self._requests.append((done, box))
            self._cv.notify()
        done.wait(5)
        return box[0] if box else {}

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()


def read_net_dev(path: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for line in path.read_text().splitlines()[2:]:
        name, _, rest = line.partition(":")
        cols = rest.split()
        out[name.strip()] = (int(cols[0]), int(cols[8]), int(cols[9]))
    return out


def find_linkd() -> str | None:
    """The link element binary: $MPSIM_LINKD, the workspace's target/release, or PATH."""
    env = os.environ.get("MPSIM_LINKD")
    if env:
        return env if os.access(env, os.X_OK) else None
    roots = (Path(__file__).resolve().parents[3], Path.cwd())  # a source checkout, or the folder it runs from
    for candidate in (r / "target" / kind / "mpsim-linkd" for r in roots for kind in ("release", "debug")):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("mpsim-linkd")


def now_ns() -> int:
    return time.monotonic_ns()
