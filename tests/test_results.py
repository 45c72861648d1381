"""Results: DataFrames from trace dicts, deterministic Parquet, run folders."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mpsim import Results
from mpsim.errors import ResultsError
from mpsim.results import SCHEMAS, atomic_dir

SUMMARY = {
    "format": 1, "mpsim_version": "0.1.0", "scenario": "synthetic", "seed": 1, "sim_time_s": 3.0,
    "wall_time_s": 0.1, "events": 100, "packet_hops": 50,
    "flows": {"f": {"transport": "tcp", "cc": "reno", "bytes_delivered": 3000, "goodput_bps": 8000.0,
                    "completion_time_s": None, "retransmitted_bytes": 0, "subflows": [], "requests": []}},
    "links": {"l": {"a_to_b": {"bytes": 3000, "drops": 0, "utilization": 0.5},
                    "b_to_a": {"bytes": 100, "drops": 0, "utilization": 0.01}}},
}  # fmt: skip


def traces() -> dict[str, dict[str, list]]:
    return {
        "interfaces": {
            "time_s": [1.0, 2.0, 3.0], "node": ["a", "a", "a"], "interface": ["l", "l", "l"],
            "tx_bytes": [1000, 2000, 3000], "rx_bytes": [10, 20, 30],
            "tx_bps": [8000.0, 8000.0, 8000.0], "rx_bps": [80.0, 80.0, 80.0],
        },
        "subflows": {
            "time_s": [1.0, 2.0], "flow": ["f", "f"], "connection": [0, 0], "subflow": [0, 0],
            "cwnd_bytes": [14480, 20000], "ssthresh_bytes": [None, 15000], "srtt_s": [0.05, 0.06],
            "bytes_in_flight": [1448, 2896], "bytes_delivered": [1000, 2000], "retransmissions": [0, 1],
        },
        "requests": {"flow": ["f"], "index": [0], "size_bytes": [10000], "start_s": [0.1], "end_s": [None]},
    }  # fmt: skip


def test_tables_become_dataframes_with_fixed_columns():
    r = Results(SUMMARY, traces())
    assert list(r.interfaces.columns) == SCHEMAS["interfaces"].names
    assert r.interfaces["tx_bytes"].tolist() == [1000, 2000, 3000]
    assert r.subflows["ssthresh_bytes"].isna().tolist() == [True, False]
    assert pd.isna(r.requests["end_s"][0])
    assert r.goodput_bps("f") == 8000.0
    with pytest.raises(KeyError, match="no flow named 'g'"):
        r.goodput_bps("g")


def test_absent_tables_are_empty_with_the_right_columns():
    r = Results(SUMMARY, {})
    for name in ("interfaces", "flows", "subflows", "connections", "requests"):
        df = r.table(name)
        assert len(df) == 0 and list(df.columns) == SCHEMAS[name].names


def test_columns_of_different_lengths_are_an_error():
    with pytest.raises(ResultsError, match="different lengths"):
        Results(SUMMARY, {"flows": {"time_s": [1.0], "flow": []}})


def test_same_data_gives_identical_bytes(tmp_path):
    Results(SUMMARY, traces()).to_parquet(tmp_path / "one")
    Results(SUMMARY, traces()).to_parquet(tmp_path / "two")
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == ["connections.parquet", "flows.parquet", "interfaces.parquet", "requests.parquet",
                     "subflows.parquet", "summary.json"]  # fmt: skip
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_dataframes_round_trip_to_the_same_bytes(tmp_path):
    """Results built from DataFrames (e.g. read back) write the same files as from trace dicts."""
    first = Results(SUMMARY, traces())
    first.to_parquet(tmp_path / "one")
    again = Results(SUMMARY, {name: first.table(name) for name in SCHEMAS})
    again.to_parquet(tmp_path / "two")
    for path in (tmp_path / "one").iterdir():
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes(), path.name


def test_from_dir_reads_back(tmp_path):
    Results(SUMMARY, traces()).save(tmp_path / "run")
    back = Results.from_dir(tmp_path / "run")
    assert back.summary == SUMMARY
    assert list(back.summary) == list(SUMMARY)  # key order kept
    pd.testing.assert_frame_equal(back.subflows, Results(SUMMARY, traces()).subflows)
    text = (tmp_path / "run" / "summary.json").read_text()
    assert json.loads(text) == SUMMARY and text.endswith("\n")


def test_from_dir_of_something_else(tmp_path):
    with pytest.raises(ResultsError, match="not a run folder"):
        Results.from_dir(tmp_path)


def test_a_failed_write_leaves_no_folder(tmp_path):
    target = tmp_path / "deep" / "out" / "run"
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "half.parquet").write_text("x")
        raise RuntimeError("boom")
    assert not (tmp_path / "deep").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_a_run_folder_is_left_alone(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ResultsError, match="not an mpsim run folder"):
        Results(SUMMARY, traces()).save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_writing_over_a_run_folder_replaces_it_wholly(tmp_path):
    out = tmp_path / "run"
    Results(SUMMARY, traces(), pcaps={"a:l": b"pcap"}).save(out)
    assert (out / "a-l.pcap").exists()
    Results(SUMMARY, traces()).save(out)
    assert not (out / "a-l.pcap").exists()
    assert (out / "summary.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary folders left
