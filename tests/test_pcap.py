"""record.pcap: the run folder gets one capture per chosen interface."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytest.importorskip("mpsim._core")

import mpsim
from conftest import SCENARIOS


def run_with_capture(tmp_path):
    scenario = mpsim.load_scenario(SCENARIOS / "wifi-3g.toml", overrides={"simulation.duration": "3s"})
    scenario.record.pcap = ["client:wifi", "client:3g"]
    return mpsim.run(scenario, out=tmp_path / "run")


def test_captures_are_written_as_pcap_files(tmp_path):
    results = run_with_capture(tmp_path)
    assert set(results.pcaps) == {"client:wifi", "client:3g"}
    for name in ("client-wifi.pcap", "client-3g.pcap"):
        data = (tmp_path / "run" / name).read_bytes()
        assert data[:4] == bytes.fromhex("4d3cb2a1")  # nanosecond pcap, little-endian
        assert len(data) > 24 + 16 * 10


def test_same_seed_same_capture_bytes(tmp_path):
    a = run_with_capture(tmp_path / "a")
    b = run_with_capture(tmp_path / "b")
    assert a.pcaps == b.pcaps


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_reads_the_capture_without_errors(tmp_path):
    run_with_capture(tmp_path)
    out = subprocess.run(
        ["tshark", "-r", str(tmp_path / "run" / "client-wifi.pcap"), "-o", "mptcp.analyze_mptcp:TRUE", "-V"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "Multipath Transmission Control Protocol" in out
    assert "malformed" not in out.lower()
