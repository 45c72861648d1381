"""The engine spec of docs/engine-spec.md: golden document and exact key sets."""

from __future__ import annotations

import json
import os

import pytest
from conftest import MINIMAL, ROOT, SCENARIOS, write

from mpsim import ScenarioError, load_scenario

GOLDEN = ROOT / "tests" / "golden" / "dumbbell.spec.json"

TOP_KEYS = ["name", "seed", "duration_ps", "sample_interval_ps", "mss_bytes", "header_bytes",
            "nodes", "links", "flows", "record"]  # fmt: skip
LINK_KEYS = ["name", "a", "b", "strip_mptcp", "a_to_b", "b_to_a", "events"]
DIRECTION_KEYS = ["bandwidth_bps", "delay_ps", "queue", "loss", "jitter_ps", "bandwidth_trace"]
EVENT_KEYS = ["at_ps", "direction", "up", "bandwidth_bps", "delay_ps", "loss", "queue", "jitter_ps", "backup"]
FLOW_KEYS = ["name", "transport", "client", "server", "app", "start_ps", "stop_ps", "cc", "cc_mode",
             "mss_bytes", "rcvbuf_bytes", "sndbuf_bytes", "sack", "delayed_ack", "delayed_ack_ps",
             "min_rto_ps", "initial_cwnd_pkts", "initial_ssthresh_pkts", "time_wait_ps", "timestamps", "rack",
             "client_interfaces",
             "handover_after_down_ps"]  # fmt: skip


def test_dumbbell_spec_matches_the_golden_document():
    spec = load_scenario(SCENARIOS / "dumbbell.toml").to_engine_spec()
    if os.environ.get("MPSIM_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(spec, indent=2) + "\n")
    assert spec == json.loads(GOLDEN.read_text())
    # Key order too: the document is meant to be read next to engine-spec.md.
    assert json.dumps(spec, indent=2) + "\n" == GOLDEN.read_text()


def test_spec_keys_are_exactly_those_of_engine_spec_md():
    spec = load_scenario(SCENARIOS / "two-path-tcp.toml").to_engine_spec()
    assert list(spec) == TOP_KEYS
    for link in spec["links"]:
        assert list(link) == LINK_KEYS
        assert list(link["a_to_b"]) == list(link["b_to_a"]) == DIRECTION_KEYS
        for event in link["events"]:
            assert list(event) == EVENT_KEYS
    for flow in spec["flows"]:
        # start_jitter_ps appears only when a start jitter is set (as in this file).
        assert list(flow) == [*FLOW_KEYS, "start_jitter_ps"]
    assert list(spec["record"]) == ["interfaces", "subflows", "pcap"]


def test_spec_is_plain_json_with_integers_in_base_units():
    spec = load_scenario(SCENARIOS / "two-path-tcp.toml").to_engine_spec()
    assert json.loads(json.dumps(spec)) == spec
    wifi = spec["links"][0]
    assert wifi["a_to_b"] == {
        "bandwidth_bps": 4_000_000, "delay_ps": 10_000_000_000, "queue": {"packets": 50},
        "loss": {"model": "none"}, "jitter_ps": 0, "bandwidth_trace": None,
    }  # fmt: skip
    assert [(e["at_ps"], e["up"], e["direction"]) for e in wifi["events"]] == [
        (30 * 10**12, False, "both"), (40 * 10**12, True, "both"),
    ]  # fmt: skip
    assert [f["client_interfaces"] for f in spec["flows"]] == [["wifi"], ["3g"]]


def test_asymmetric_links_gilbert_loss_and_byte_queues(tmp_path):
    text = MINIMAL.replace(
        'delay = "5ms"',
        'delay = "5ms"\nqueue = "64KB"\nloss = { model = "gilbert", p_good_bad = 0.01, p_bad_good = 0.3, loss_bad = 0.5 }\n'
        '[link.b_to_a]\nbandwidth = "8Mbps"\nloss = 0.02\n[[link.events]]\nat = "2s"\nloss = 0.1\nqueue = "10pkt"',
    )
    link = load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()["links"][0]
    assert link["a_to_b"]["bandwidth_bps"] == 10_000_000
    assert link["b_to_a"]["bandwidth_bps"] == 8_000_000
    assert link["a_to_b"]["queue"] == link["b_to_a"]["queue"] == {"bytes": 64_000}
    assert link["a_to_b"]["loss"] == {"model": "gilbert", "p_good_bad": 0.01, "p_bad_good": 0.3,
                                      "loss_good": 0.0, "loss_bad": 0.5}  # fmt: skip
    assert link["b_to_a"]["loss"] == {"model": "bernoulli", "p": 0.02}
    assert link["events"] == [{"at_ps": 2 * 10**12, "direction": "both", "up": None, "bandwidth_bps": None,
                               "delay_ps": None, "loss": {"model": "bernoulli", "p": 0.1},
                               "queue": {"packets": 10}, "jitter_ps": None, "backup": None}]  # fmt: skip


def test_app_specs(tmp_path):
    apps = {
        'app = "upload"\nsize = "1MB"': {"kind": "upload", "size_bytes": 1_000_000},
        'app = "video"\nbitrate = "3Mbps"': {"kind": "video", "bitrate_bps": 3_000_000, "chunk_ps": 4 * 10**12},
        'app = "video"': {"kind": "video", "bitrate_bps": 2_000_000, "chunk_ps": 4 * 10**12},
        'transport = "udp"\napp = "cbr"\nrate = "0.5Mbps"': {"kind": "cbr", "rate_bps": 500_000, "packet_bytes": 1500},
        'app = "onoff"\non = "5s"\noff = "10s"\nsize = "1MB"': {
            "kind": "onoff", "on_ps": 5 * 10**12, "off_ps": 10 * 10**12,
            "inner": {"kind": "download", "size_bytes": 1_000_000},
        },
    }  # fmt: skip
    for keys, expected in apps.items():
        text = MINIMAL.replace('server = "b"', f'server = "b"\n{keys}')
        flow = load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()["flows"][0]
        assert flow["app"] == expected


def test_udp_flows_have_no_congestion_control(tmp_path):
    text = MINIMAL.replace('server = "b"', 'server = "b"\ntransport = "udp"\napp = "cbr"\nrate = "1Mbps"')
    flow = load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()["flows"][0]
    assert "cc" not in flow  # the engine's cc is a string with a default; null would not parse
    assert list(flow) == [k for k in FLOW_KEYS if k != "cc"]


def test_linux_mode_autotunes_a_receive_buffer_no_key_fixes(tmp_path):
    def flow_of(flow_keys: str, simulation_keys: str = "") -> dict:
        text = MINIMAL.replace('server = "b"', f'server = "b"\n{flow_keys}')
        text = text.replace('duration = "10s"', f'duration = "10s"\n{simulation_keys}')
        return load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()["flows"][0]

    assert flow_of('cc_mode = "linux"')["rcvbuf_auto"] is True
    assert flow_of('cc_mode = "linux"\ntransport = "mptcp"\ncc = "lia"')["rcvbuf_auto"] is True
    # A fixed buffer (SO_RCVBUF) turns autotuning off, from the flow or [simulation].
    assert "rcvbuf_auto" not in flow_of('cc_mode = "linux"\nrcvbuf = "256KB"')
    assert "rcvbuf_auto" not in flow_of('cc_mode = "linux"', 'rcvbuf = "4MB"')
    # Reference mode keeps the fixed default.
    assert "rcvbuf_auto" not in flow_of("")


def test_linux_mode_bounds_mptcp_data_by_the_mptcp_sockets_send_buffer(tmp_path):
    def flow_of(flow_keys: str) -> dict:
        text = MINIMAL.replace('server = "b"', f'server = "b"\ntransport = "mptcp"\ncc = "cubic"\n{flow_keys}')
        return load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()["flows"][0]

    assert flow_of('cc_mode = "linux"\nscheduler = "upstream"')["msk_sndbuf_auto"] is True
    # SO_SNDBUF fixes it; the out-of-tree scheduler and reference mode do not model it.
    assert "msk_sndbuf_auto" not in flow_of('cc_mode = "linux"\nscheduler = "upstream"\nsndbuf = "256KB"')
    assert "msk_sndbuf_auto" not in flow_of('cc_mode = "linux"')
    assert "msk_sndbuf_auto" not in flow_of('scheduler = "upstream"')


def test_cmt_flows_carry_variant_and_rbuf_and_others_do_not(tmp_path):
    cmt = MINIMAL.replace('[[flow]]\n', '[[flow]]\ntransport = "cmt"\nvariant = "smt"\nrbuf = "64KB"\n', 1)
    spec = load_scenario(write(tmp_path, "cmt.toml", cmt)).to_engine_spec()
    flow = spec["flows"][0]
    assert list(flow) == [*FLOW_KEYS, "variant", "rbuf_bytes"]
    assert (flow["variant"], flow["rbuf_bytes"]) == ("smt", 64_000)
    plain = load_scenario(write(tmp_path, "plain.toml", cmt.replace('variant = "smt"\nrbuf = "64KB"\n', ""))).to_engine_spec()
    assert (plain["flows"][0]["variant"], plain["flows"][0]["rbuf_bytes"]) == (None, None)
    tcp = load_scenario(write(tmp_path, "tcp.toml", MINIMAL)).to_engine_spec()
    assert "variant" not in tcp["flows"][0] and "rbuf_bytes" not in tcp["flows"][0]


def test_a_cmt_rtx_policy_is_carried_when_set_and_an_unknown_one_refused(tmp_path):
    cmt = MINIMAL.replace('[[flow]]\n', '[[flow]]\ntransport = "cmt"\nrtx_policy = "lossrate"\n', 1)
    flow = load_scenario(write(tmp_path, "cmt.toml", cmt)).to_engine_spec()["flows"][0]
    assert flow["rtx_policy"] == "lossrate"
    with pytest.raises(ScenarioError, match="rtx_policy"):
        load_scenario(write(tmp_path, "bad.toml", cmt.replace('"lossrate"', '"fastest"')))


def test_a_smos_schedule_is_carried_when_set_and_refused_off_smos(tmp_path):
    smos = MINIMAL.replace('[[flow]]\n', '[[flow]]\ntransport = "cmt"\nvariant = "smos"\nsmos_schedule = "trunk"\n', 1)
    flow = load_scenario(write(tmp_path, "smos.toml", smos)).to_engine_spec()["flows"][0]
    assert flow["smos_schedule"] == "trunk"
    unset = load_scenario(write(tmp_path, "unset.toml", smos.replace('smos_schedule = "trunk"\n', ""))).to_engine_spec()
    assert "smos_schedule" not in unset["flows"][0]
    for bad, key in [
        (smos.replace('"trunk"', '"batch"'), "smos_schedule"),
        (smos.replace('variant = "smos"', 'variant = "smt"'), "smos_schedule"),
        (MINIMAL.replace('[[flow]]\n', '[[flow]]\nsmos_schedule = "trunk"\n', 1), "smos_schedule"),
    ]:
        with pytest.raises(ScenarioError, match=key):
            load_scenario(write(tmp_path, "bad.toml", bad))
