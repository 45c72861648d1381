"""Queue disciplines and ECN: scenario keys, their checks, and one run on the engine."""

from __future__ import annotations

import pytest
from conftest import MINIMAL, write
from mpsim import ScenarioError, load_scenario

LINK = 'delay = "5ms"'


def spec_of(tmp_path, link_keys: str, flow_keys: str = "") -> dict:
    text = MINIMAL.replace(LINK, f"{LINK}\n{link_keys}", 1)
    if flow_keys:
        text = text.replace('server = "b"', f'server = "b"\n{flow_keys}', 1)
    return load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()


def test_droptail_is_the_default(tmp_path):
    spec = spec_of(tmp_path, "")
    # Defaults are left to the engine.
    assert "qdisc" not in spec["links"][0]["a_to_b"]
    assert "ecn" not in spec["flows"][0]
    spec = spec_of(tmp_path, 'qdisc = "red"\nred = { min_th = "3pkt", max_th = "9pkt", max_p = 0.1 }\n[link.a_to_b]\nqdisc = "droptail"')
    assert "qdisc" not in spec["links"][0]["a_to_b"] and spec["links"][0]["b_to_a"]["qdisc"]["kind"] == "red"


def test_red_keys_of_the_contract_reach_the_engine(tmp_path):
    spec = spec_of(tmp_path, 'qdisc = "red"\nred = { min_th = "30pkt", max_th = "90pkt", max_p = 0.1, ecn = true }', "ecn = true")
    q = spec["links"][0]["b_to_a"]["qdisc"]
    assert q == {"kind": "red", "min_th": {"packets": 30}, "max_th": {"packets": 90}, "max_p": 0.1, "ecn": True,
                 "weight": 0.002, "gentle": False, "avpkt_bytes": 1000}  # fmt: skip
    assert spec["flows"][0]["ecn"] is True


def test_codel_defaults_and_linux_queue_limits(tmp_path):
    spec = spec_of(tmp_path, 'qdisc = "fq_codel"\n[link.a_to_b]\nqdisc = "codel"\ncodel = { target = "2ms", ecn = true }')
    a_to_b, b_to_a = spec["links"][0]["a_to_b"], spec["links"][0]["b_to_a"]
    assert a_to_b["qdisc"] == {"kind": "codel", "target_ps": 2 * 10**9, "interval_ps": 100 * 10**9, "ecn": True}
    assert a_to_b["queue"] == {"packets": 1000}
    assert b_to_a["qdisc"] == {"kind": "fq_codel", "target_ps": 5 * 10**9, "interval_ps": 100 * 10**9, "ecn": False,
                               "flows": 1024, "quantum_bytes": 1514}  # fmt: skip
    assert b_to_a["queue"] == {"packets": 10240}
    # A queue the link gives is kept.
    spec = spec_of(tmp_path, 'qdisc = "fq_codel"\nqueue = "200pkt"')
    assert spec["links"][0]["a_to_b"]["queue"] == {"packets": 200}


def test_random_drop_defaults_to_htsim_s_region(tmp_path):
    spec = spec_of(tmp_path, 'qdisc = "random_drop"')
    assert spec["links"][0]["a_to_b"]["qdisc"] == {"kind": "random_drop", "region": {"packets": 3}, "p": 0.1}


@pytest.mark.parametrize(
    ("keys", "key", "message"),
    [
        ('qdisc = "pie"', "link[0].qdisc", "bad value 'pie'"),
        ('qdisc = "red"', "link[0].qdisc", "needs a red table"),
        ('qdisc = "red"\nred = { min_th = "30pkt", max_th = "20pkt", max_p = 0.1 }', "link[0].red", "min_th must be below max_th"),
        ('qdisc = "red"\nred = { min_th = "30pkt", max_th = "90KB", max_p = 0.1 }', "link[0].red", "same unit"),
        ('qdisc = "red"\nred = { min_th = "3pkt", max_th = "9pkt", max_p = 2 }', "link[0].red.max_p", "probability"),
        ('qdisc = "red"\nred = { min_th = "3pkt", max_th = "9pkt", max_p = 0.1, sharp = 1 }', "link[0].red.sharp", "unknown key"),
        ('red = { min_th = "3pkt", max_th = "9pkt", max_p = 0.1 }', "link[0].red", "applies when qdisc = 'red'"),
        ('qdisc = "codel"\njitter = "2ms"', "link[0].qdisc", "cannot be combined with jitter"),
        ('qdisc = "codel"\ncodel = { target = "0ms" }', "link[0].codel.target", "must be positive"),
        ('qdisc = "fq_codel"\nfq_codel = { flows = 0 }', "link[0].fq_codel.flows", "at least 1"),
        ('qdisc = "random_drop"\nrandom_drop = { region = "3KB" }', "link[0].random_drop.region", "queue's unit"),
        ('[link.a_to_b]\nqdisc = "droptail"\ncodel = {}', "link[0].a_to_b.codel", "applies when qdisc = 'codel'"),
    ],
)  # fmt: skip
def test_bad_qdisc_keys_name_key_and_line(tmp_path, keys, key, message):
    text = MINIMAL.replace(LINK, f"{LINK}\n{keys}", 1)
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, "s.toml", text))
    err = info.value
    assert err.key == key, str(err)
    assert message in err.message, str(err)
    assert err.line is not None, str(err)


def test_ecn_must_be_a_boolean(tmp_path):
    text = MINIMAL.replace('server = "b"', 'server = "b"\necn = "yes"', 1)
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, "s.toml", text))
    assert info.value.key == "flow[0].ecn"


def test_red_with_ecn_marks_on_the_engine(tmp_path):
    pytest.importorskip("mpsim._core")
    import mpsim

    text = MINIMAL.replace(
        LINK, f'{LINK}\nqueue = "500pkt"\nqdisc = "red"\nred = {{ min_th = "5pkt", max_th = "40pkt", max_p = 0.1, ecn = true }}'
    ).replace('server = "b"', 'server = "b"\necn = true')
    summary = mpsim.run(write(tmp_path, "s.toml", text)).summary
    link = summary["links"]["ab"]
    data = link["b_to_a"]  # a downloads from b
    assert data["ecn_marks"] > 0, link
    assert data["queue_drops"] == 0, link
