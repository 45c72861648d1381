"""Subflow traces end when the subflow closes, and say its state, priority
and interfaces; plots show the end and label every subflow (issue 12, item 6)."""

from __future__ import annotations

import mpsim
import pytest
from conftest import SCENARIOS


@pytest.fixture(scope="module")
def backup_run():
    pytest.importorskip("mpsim._core")
    return mpsim.run(SCENARIOS / "wifi-3g-backup.toml")


def test_a_closed_subflow_is_not_sampled_after_it_closed(backup_run):
    df = backup_run.subflows
    for column in ("state", "backup", "client_interface", "server_interface"):
        assert column in df.columns
    keys = ["flow", "connection", "subflow", "side"]
    closed_groups = 0
    for _, rows in df.groupby(keys):
        rows = rows.sort_values("time_s")
        states = list(rows["state"])
        if "closed" in states:
            closed_groups += 1
            # One row says it closed, and it is the last.
            assert states.index("closed") == len(states) - 1, states
            assert rows["bytes_in_flight"].iloc[-1] == 0
    assert closed_groups >= 1  # the wifi subflows that failed at 30 s
    wifi_first = df[(df["client_interface"] == "wifi") & (df["subflow"] == 0)]
    assert wifi_first["time_s"].max() < 35.0


def test_state_backup_and_interfaces_are_filled(backup_run):
    df = backup_run.subflows
    assert set(df["state"]) <= {"syn_sent", "syn_received", "established", "fin_wait1", "fin_wait2",
                                "close_wait", "closing", "last_ack", "time_wait", "closed"}
    assert "established" in set(df["state"])
    on_3g = df[df["client_interface"] == "3g"]
    assert len(on_3g) and on_3g["backup"].iloc[0]
    assert set(df["server_interface"]) == {"wan"}
    assert df["backup"].dtype == bool


def test_plots_label_every_subflow_and_mark_the_closed_ones(backup_run):
    fig = backup_run.plot("cwnd")
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert all("sf" in label for label in labels), labels
    assert all("(" in label for label in labels), labels  # every subflow names its interface
    assert any("closed" in label for label in labels), labels


def test_tcp_subflows_are_labelled_too():
    pytest.importorskip("mpsim._core")
    res = mpsim.run(SCENARIOS / "dumbbell.toml", set={"simulation.duration": "5s"})
    labels = [line.get_label() for line in res.plot("cwnd").axes[0].get_lines()]
    assert labels and all("sf0" in label and "(" in label for label in labels), labels
