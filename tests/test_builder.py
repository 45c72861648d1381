"""The builder: same engine spec as an equivalent file, errors naming the call."""

from __future__ import annotations

import pytest
from conftest import SCENARIOS
from mpsim import Network, ScenarioError, load_scenario


def dumbbell_by_hand(**link_units) -> Network:
    net = Network("dumbbell", seed=1, duration="60s", sample_interval="1s", start_jitter="50ms")
    net.describe("Reno and CUBIC downloads sharing a 10 Mbps, 20 ms bottleneck")
    for host in ("snd1", "snd2", "rcv1", "rcv2"):
        net.add_host(host)
    net.add_switch("s1")
    net.add_switch("s2")
    net.add_link("snd1", "s1", bw="100Mbps", delay="1ms", jitter="0.5ms")
    net.add_link("snd2", "s1", bw_mbps=100, delay_ms=1, jitter_us=500)
    net.add_link("s1", "s2", bw="10Mbps", delay="20ms", queue="100pkt", name="bottleneck")
    net.add_link("s2", "rcv1", bw_gbps=0.1, delay_us=1000)
    net.add_link("s2", "rcv2", bw_bps=100_000_000, delay_s=0.001)
    net.add_flow("rcv1", "snd1", name="reno", cc="reno")
    net.add_flow("rcv2", "snd2", name="cubic", cc="cubic")
    net.record(interfaces=True, subflows=True)
    return net


def test_builder_spec_equals_the_scenario_file():
    from_file = load_scenario(SCENARIOS / "dumbbell.toml").to_engine_spec()
    assert dumbbell_by_hand().to_scenario().to_engine_spec() == from_file


def test_builder_returns_names():
    net = Network()
    assert net.add_host("a") == "a"
    assert net.add_router("r") == "r"
    assert net.add_link("a", "r", bw="1Mbps") == "a-r"
    assert net.add_link("a", "r", bw="1Mbps") == "a-r-2"
    assert net.add_flow("a", "a") == "flow1"


def test_builder_events_and_overrides():
    net = Network("ev", duration_s=30)
    net.add_host("a")
    net.add_host("b")
    net.add_link("a", "b", bw="4Mbps", delay="10ms", name="wifi", b_to_a={"bw_mbps": 8}, loss_frac=0.01)
    net.link_event("wifi", at="10s", up=False)
    net.link_event("wifi", at_s=20, bw_mbps=2, direction="a_to_b")
    net.add_flow("a", "b", app="http", sizes_kb=[10, 50], repeat=3, gap_ms=100)
    spec = net.to_scenario().to_engine_spec()
    link = spec["links"][0]
    assert spec["duration_ps"] == 30 * 10**12
    assert (link["a_to_b"]["bandwidth_bps"], link["b_to_a"]["bandwidth_bps"]) == (4_000_000, 8_000_000)
    assert link["a_to_b"]["loss"] == {"model": "bernoulli", "p": 0.01}
    assert [e["at_ps"] for e in link["events"]] == [10 * 10**12, 20 * 10**12]
    assert link["events"][1]["bandwidth_bps"] == 2_000_000 and link["events"][1]["direction"] == "a_to_b"
    assert spec["flows"][0]["app"] == {
        "kind": "http", "sizes_bytes": [10_000, 50_000], "repeat": 3, "gap_ps": 100 * 10**9,
        "new_connection": True, "request_bytes": 100,
    }  # fmt: skip


def build_error(fn) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        fn()
    return info.value


def two_hosts() -> Network:
    net = Network("t")
    net.add_host("a")
    net.add_host("b")
    return net


def test_errors_name_the_call():
    net = two_hosts()
    err = build_error(lambda: net.add_link("a", "x", bw="1Mbps"))
    assert str(err) == "add_link('a', 'x'): between: unknown node 'x'"
    err = build_error(lambda: net.add_link("a", "b", bw="10Mbs"))
    assert str(err).startswith("add_link('a', 'b'): bw: bad unit 'Mbs'")
    err = build_error(lambda: net.add_link("a", "b", bw=10))
    assert "bw_<unit>" in str(err) and err.key == "bw"
    err = build_error(lambda: net.add_link("a", "b", bw="1Mbps", bw_mbps=1))
    assert "given twice" in str(err)
    err = build_error(lambda: net.add_host("a"))
    assert str(err) == "add_host('a'): name: node name 'a' is already used"
    err = build_error(lambda: net.link_event("nope", at="1s", up=False))
    assert "unknown link 'nope'" in str(err)
    err = build_error(lambda: net.add_flow("a", "b", colour="red"))
    assert str(err) == "add_flow('a', 'b'): colour: unknown key 'colour'"
    err = build_error(lambda: Network("n", duration="10 days"))
    assert str(err).startswith("Network('n'): duration: bad unit 'days'")


def test_whole_scenario_errors_name_the_call():
    net = two_hosts()
    net.add_link("a", "b", bw="1Mbps")
    net.add_flow("a", "b", cc="lia")
    err = build_error(net.to_scenario)
    assert str(err).startswith("add_flow('a', 'b'): cc: congestion control 'lia' is not available for tcp")


def test_a_cmt_flow_runs_a_video_app():
    net = two_hosts()
    net.add_link("a", "b", bw="1Mbps")
    net.add_flow("a", "b", transport="cmt", cc="reno", app="video", bitrate="200kbps", chunk="1s", name="v")
    summary = net.run().summary["flows"]["v"]
    assert summary["transport"] == "cmt"
    assert summary["bytes_delivered"] > 0


def test_a_cmt_download_runs_over_both_links_of_dual_homed_hosts():
    net = two_hosts()
    net.add_link("a", "b", bw="0.2Mbps", delay="45ms", name="pa")
    net.add_link("a", "b", bw="1Mbps", delay="45ms", name="pb")
    net.add_flow("a", "b", transport="cmt", size="500KB", rbuf="64KB", name="f")
    summary = net.run().summary["flows"]["f"]
    assert summary["transport"] == "cmt"
    assert summary["bytes_delivered"] == 500_000
    assert [row["client_interface"] for row in summary["subflows"]] == ["pa", "pb"]
    assert all(row["bytes_delivered"] > 0 for row in summary["subflows"])


def test_builder_overrides():
    net = two_hosts()
    net.add_link("a", "b", bw="1Mbps", name="ab")
    sc = net.to_scenario(["link.ab.bandwidth=3Mbps"])
    assert sc.to_engine_spec()["links"][0]["a_to_b"]["bandwidth_bps"] == 3_000_000
    assert sc.path is None
