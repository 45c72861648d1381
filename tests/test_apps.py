"""Every application kind end to end on the real engine (tests/apps.toml):
a multihomed client with wifi and LTE, wifi failing at 10 s."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mpsim._core")

import mpsim

APPS = Path(__file__).parent / "apps.toml"


@pytest.fixture(scope="module")
def results():
    return mpsim.run(APPS)


def flow(results, name):
    return results.summary["flows"][name]


def test_http_records_every_request(results):
    f = flow(results, "web")
    reqs = results.requests[results.requests["flow"] == "web"]
    assert len(reqs) == len(f["requests"]) == 10
    assert sorted(reqs["size_bytes"].unique()) == [10_000, 100_000]
    assert (reqs["end_s"] > reqs["start_s"]).all()
    # Requests are sequential with a 200 ms think time between them.
    assert (reqs["start_s"].iloc[1:].values >= reqs["end_s"].iloc[:-1].values + 0.2 - 1e-9).all()
    assert f["completion_time_s"] is not None


def test_cbr_delivers_its_rate(results):
    f = flow(results, "voip")
    assert f["cc"] is None
    assert f["goodput_bps"] == pytest.approx(64_000, rel=0.02)
    assert f["bytes_delivered"] <= f["sent_bytes"]


def test_onoff_sends_only_while_on(results):
    series = results.flows[results.flows["flow"] == "bursty"].set_index("time_s")["goodput_bps"]
    # on for 2 s, off for 3 s from t = 0: the seconds ending at 4 and 5 are off.
    assert series.loc[4.0] == 0 and series.loc[5.0] == 0
    assert series.loc[1.0] > 0 and series.loc[7.0] > 0


def test_video_streams_at_its_bitrate(results):
    f = flow(results, "tv")
    assert f["goodput_bps"] == pytest.approx(1e6, rel=0.05)


def test_handover_moves_the_download_to_lte_and_completes(results):
    f = flow(results, "mobile")
    assert f["bytes_delivered"] == 20_000_000
    assert f["completion_time_s"] is not None
    by_iface = {s["client_interface"]: s["bytes_delivered"] for s in f["subflows"]}
    assert by_iface["wifi"] > 0 and by_iface["lte"] > 0
    assert by_iface["wifi"] + by_iface["lte"] == 20_000_000


def test_vegas_upload_completes(results):
    f = flow(results, "up")
    assert f["bytes_delivered"] == 1_000_000
    assert f["completion_time_s"] < 20


def test_another_seed_changes_a_lossy_run():
    lossy = {"simulation.duration": "10s", "link.bottleneck.loss": "0.01"}
    a = mpsim.run(Path(__file__).parent.parent / "scenarios" / "dumbbell.toml", seed=1, set=lossy)
    b = mpsim.run(Path(__file__).parent.parent / "scenarios" / "dumbbell.toml", seed=2, set=lossy)
    assert a.summary["flows"] != b.summary["flows"]
    assert a.summary["seed"] == 1 and b.summary["seed"] == 2
