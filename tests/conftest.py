"""Shared fixtures: paths, scenario text, and a fake engine for plumbing tests.

The fake `mpsim._core` is for unit tests of the run loop, Results and CLI
plumbing only: it returns made-up but well-formed numbers. Tests that need a
real simulation use `pytest.importorskip("mpsim._core")` instead.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
try:  # the installed package, with its compiled engine, is what users run
    import mpsim._core  # noqa: F401
except ImportError:  # no build yet: test the front end from the source tree
    sys.path.insert(0, str(ROOT / "python"))

PS = 10**12


class FakeSimulation:
    """Quacks like mpsim._core.Simulation; deterministic numbers derived from the spec."""

    def __init__(self, spec_json: str) -> None:
        self.spec = json.loads(spec_json)
        for flow in self.spec["flows"]:
            # Stands for a spec the front end passes and the engine refuses.
            if flow["name"] == "refused":
                raise ValueError(f"flow {flow['name']}: the engine cannot build it")
        self.end_ps = self.spec["duration_ps"]
        self.now_ps = 0
        self.calls: list[int] = []
        self.events = 0
        self.packet_hops = 0

    def run_until(self, t_ps: int) -> bool:
        self.calls.append(t_ps)
        self.now_ps = min(t_ps, self.end_ps)
        self.events = self.now_ps // 10**6
        self.packet_hops = self.now_ps // 10**7
        return self.now_ps >= self.end_ps

    def summary_json(self, requests: bool = True) -> str:
        sim_s = self.now_ps / PS
        flows = {
            f["name"]: {
                "transport": f["transport"], "cc": f.get("cc"),
                "bytes_delivered": 1000 * (i + 1), "goodput_bps": 8000 * (i + 1) / max(sim_s, 1e-9),
                "completion_time_s": None, "retransmitted_bytes": 0,
                "subflows": [], "requests": [],
            }
            for i, f in enumerate(self.spec["flows"])
        }  # fmt: skip
        zero = {"bytes": 0, "drops": 0, "utilization": 0.0}
        links = {lk["name"]: {"a_to_b": dict(zero), "b_to_a": dict(zero)} for lk in self.spec["links"]}
        # Deliberately out of the documented order: Python must reorder.
        return json.dumps({
            "links": links, "flows": flows, "events": self.events, "packet_hops": self.packet_hops,
            "format": 1, "scenario": self.spec["name"], "seed": self.spec["seed"],
            "sim_time_s": sim_s, "wall_time_s": 0.5,
        })  # fmt: skip

    def traces(self) -> dict[str, dict[str, list]]:
        seconds = int(self.now_ps // PS)
        ifaces = [(lk["a"], lk["name"]) for lk in self.spec["links"]]
        columns = ("time_s", "node", "interface", "tx_bytes", "rx_bytes", "tx_bps", "rx_bps")
        interfaces: dict[str, list] = {k: [] for k in columns}
        for t in range(1, seconds + 1):
            for n, (node, iface) in enumerate(ifaces):
                for key, value in (("time_s", float(t)), ("node", node), ("interface", iface),
                                   ("tx_bytes", 1000 * t * (n + 1)), ("rx_bytes", 10 * t),
                                   ("tx_bps", 8000.0 * (n + 1)), ("rx_bps", 80.0)):  # fmt: skip
                    interfaces[key].append(value)
        flows = {"time_s": [], "flow": [], "bytes_delivered": [], "goodput_bps": []}
        subflows: dict[str, list] = {k: [] for k in ("time_s", "flow", "connection", "subflow", "cwnd_bytes",
                                                    "ssthresh_bytes", "srtt_s", "bytes_in_flight",
                                                    "bytes_delivered", "retransmissions")}  # fmt: skip
        for t in range(1, seconds + 1):
            for f in self.spec["flows"]:
                flows["time_s"].append(float(t))
                flows["flow"].append(f["name"])
                flows["bytes_delivered"].append(1000 * t)
                flows["goodput_bps"].append(8000.0)
                for key, value in (("time_s", float(t)), ("flow", f["name"]), ("connection", 0), ("subflow", 0),
                                   ("cwnd_bytes", 14480 + t), ("ssthresh_bytes", None), ("srtt_s", 0.05),
                                   ("bytes_in_flight", 1448), ("bytes_delivered", 1000 * t),
                                   ("retransmissions", 0)):  # fmt: skip
                    subflows[key].append(value)
        return {"interfaces": interfaces, "flows": flows, "subflows": subflows}


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Install the fake engine as `mpsim._core` for this test only."""
    module = types.ModuleType("mpsim._core")
    module.Simulation = FakeSimulation  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mpsim._core", module)
    return module


@pytest.fixture
def dumbbell_text() -> str:
    return (SCENARIOS / "dumbbell.toml").read_text()


def write(folder: Path, name: str, text: str) -> Path:
    """Write a scenario (or trace) file and return its path."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


MINIMAL = """\
name = "mini"

[simulation]
duration = "10s"

[[node]]
name = "a"

[[node]]
name = "b"

[[link]]
name = "ab"
between = ["a", "b"]
bandwidth = "10Mbps"
delay = "5ms"

[[flow]]
name = "f"
client = "a"
server = "b"
"""
