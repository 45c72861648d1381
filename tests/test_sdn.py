"""SDN controller keys: validation with file, line and key, the engine spec,
and the three-path testbed of Abu Mohsen's thesis end to end (MPSSHetN
refuses the join onto the slow path; disjoint uses all three)."""

from __future__ import annotations

import mpsim
import pytest
from conftest import ROOT, SCENARIOS, write
from mpsim import Network, ScenarioError, load_scenario

THREE_PATHS = SCENARIOS / "sdn-three-paths.toml"


def both_ways(summary: dict, link: str) -> int:
    d = summary["links"][link]
    return d["a_to_b"]["bytes"] + d["b_to_a"]["bytes"]


def test_the_engine_spec_carries_the_controller_and_its_extension_keys():
    sc = load_scenario(THREE_PATHS, ["controller.buffer=8", "controller.idle_timeout=2s"])
    ctl = sc.to_engine_spec()["controller"]
    assert ctl["app"] == "mpsshetn" and ctl["latency_ps"] == 10**9
    assert ctl["thresholds"][0] == {"below_bytes": 50_000, "gap": 0.0}
    assert ctl["thresholds"][-1] == {"below_bytes": None, "gap": 0.9}
    assert (ctl["buffer_pkts"], ctl["idle_timeout_ps"]) == (8, 2 * 10**12)
    assert sc.to_engine_spec()["record"]["controller"] is True


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ('latency = "1ms"', 'latency = "1ms"\nbuffer = -1', "controller.buffer", "must be at least 0"),
        ('latency = "1ms"', 'latency = "1ms"\nidle_timeout = "soon"', "controller.idle_timeout", "soon"),
        ('app = "mpsshetn"', 'app = "python:no_such_module:MyApp"', "controller.app", "cannot load"),
    ],
)
def test_bad_controller_keys_name_file_line_and_key(tmp_path, old, new, key, words):
    text = THREE_PATHS.read_text().replace(old, new, 1)
    if "python:" in new:  # thresholds belong to mpsshetn alone
        text = text[: text.index("thresholds = [")] + text[text.index("[record]") :]
    path = write(tmp_path, "sdn.toml", text)
    with pytest.raises(ScenarioError) as err:
        mpsim.run(load_scenario(path))
    line = next(i for i, t in enumerate(text.splitlines(), 1) if new.splitlines()[-1] in t)
    assert str(err.value).startswith(f"{path}:{line}: {key}: "), str(err.value)
    assert words in str(err.value)


def test_mpsshetn_refuses_the_join_onto_the_slow_path_and_the_download_completes():
    pytest.importorskip("mpsim._core")
    s = mpsim.run(THREE_PATHS).summary
    assert s["flows"]["download"]["completion_time_s"] is not None
    assert both_ways(s, "p2a") == 0 and both_ways(s, "p2b") == 0
    assert both_ways(s, "p3a") > 100_000
    ctl = s["controller"]
    assert ctl["app"] == "mpsshetn" and ctl["refused"] >= 1
    refused = [d for d in ctl["decisions"] if d["links"] is None]
    assert refused and all(d["opening"] == "mp_join" for d in refused)


def test_disjoint_puts_a_subflow_on_each_path():
    pytest.importorskip("mpsim._core")
    s = mpsim.run(THREE_PATHS, set={"controller.app": "disjoint", "controller.thresholds": None}).summary
    assert all(both_ways(s, p) > 10_000 for p in ("p1a", "p2a", "p3a")), s["links"]


def test_the_builder_runs_a_controller():
    pytest.importorskip("mpsim._core")
    net = Network("built", duration="5s")
    net.add_host("a")
    net.add_host("b")
    net.add_switch("s1")
    net.add_switch("s2")
    net.add_link("a", "s1", bw="100Mbps", delay="1ms", name="la")
    net.add_link("s1", "s2", bw="10Mbps", delay="5ms", name="core")
    net.add_link("s2", "b", bw="100Mbps", delay="1ms", name="lb")
    net.add_flow("a", "b", transport="tcp", size="100KB", name="f")
    net.set_controller("shortest", latency="2ms")
    s = mpsim.run(net).summary
    assert s["controller"]["packet_ins"] == 1
    assert s["flows"]["f"]["completion_time_s"] is not None


RULES = """
[[rule]]
switch = "s1"
priority = 10
match = { dst = "server:s", proto = "tcp" }
action = "output"
links = ["p3a"]

[[rule]]
switch = "s2"
match = { dst = "client:c", tcp_flags = "+ack-syn" }
action = "output"
links = ["p3b"]
"""


def without_controller(text: str) -> str:
    return text[: text.index("[controller]")] + text[text.index("[record]") :].replace("controller = true\n", "")


def test_static_rules_put_a_flow_on_a_chosen_path_without_a_controller(tmp_path):
    pytest.importorskip("mpsim._core")
    text = without_controller(THREE_PATHS.read_text()) + RULES
    text = text.replace("path_manager = \"ndiffports\"\nsubflows = 3\n", "")
    sc = load_scenario(write(tmp_path, "rules.toml", text))
    rules = sc.to_engine_spec()["rules"]
    assert rules[1]["tcp_flags"] == [0x12, 0x10] and rules[0]["proto"] == 6 and rules[1]["priority"] == 0x8000
    s = mpsim.run(sc).summary
    assert "controller" not in s
    assert both_ways(s, "p3a") > 1_000_000
    assert 0 < both_ways(s, "p1a") < 200, "only the SYN-ACK (SYN set) misses the rule"


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ('links = ["p3a"]', 'links = ["p1b"]', "rule[0].links[0]", "does not touch switch 's1'"),
        ('links = ["p3a"]', 'links = []', "rule[0].links", "takes exactly one link"),
        ('switch = "s1"', 'switch = "client"', "rule[0].switch", "rules go to switches"),
        ('tcp_flags = "+ack-syn"', 'tcp_flags = "+ack-urg"', "rule[1].match.tcp_flags", "unknown TCP flag 'urg'"),
        ('dst = "server:s", proto', 'dst = "server:p1a", proto', "rule[0].match.dst", "has no link 'p1a'"),
        ('action = "output"\nlinks = ["p3a"]', 'action = "controller"', "rule[0].action", "needs a [controller]"),
    ],
)
def test_bad_rules_name_file_line_and_key(tmp_path, old, new, key, words):
    text = without_controller(THREE_PATHS.read_text()) + RULES
    text = text.replace(old, new, 1)
    path = write(tmp_path, "rules.toml", text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if new in t)
    assert str(err.value).startswith(f"{path}:{line}: {key}: "), str(err.value)
    assert words in str(err.value)


def test_the_python_app_example_refuses_the_slow_path_as_mpsshetn_does():
    pytest.importorskip("mpsim._core")
    s = mpsim.run(ROOT / "examples" / "sdn-python-app.toml").summary
    assert s["flows"]["download"]["completion_time_s"] is not None
    assert both_ways(s, "p2a") == 0 and both_ways(s, "p3a") > 100_000
    reasons = [d["reason"] for d in s["controller"]["decisions"]]
    assert reasons == ["python app", "python app", "python app refused"]


def test_a_python_app_answer_that_is_not_a_path_names_the_switch(tmp_path):
    pytest.importorskip("mpsim._core")
    (tmp_path / "bad_app.py").write_text(
        "class Bad:\n    def __init__(self, scenario):\n        pass\n"
        "    def on_packet_in(self, event):\n        return ['p1a']\n"
    )
    text = THREE_PATHS.read_text().replace('app = "mpsshetn"', 'app = "python:bad_app:Bad"')
    text = text[: text.index("thresholds = [")] + text[text.index("[record]") :]
    path = write(tmp_path, "bad.toml", text)
    with pytest.raises(ValueError, match="SDN app: packet-in at s1"):
        mpsim.run(path)


def test_the_kernel_backend_refuses_rules_with_their_key(tmp_path):
    from mpsim.kernel.backend import check_kernel_runnable

    text = without_controller(THREE_PATHS.read_text()) + RULES
    text = text.replace('transport = "mptcp"', 'transport = "tcp"').replace('cc = "lia"', 'cc = "cubic"')
    text = text.replace('path_manager = "ndiffports"\nsubflows = 3\n', "")
    sc = load_scenario(write(tmp_path, "rules.toml", text))
    with pytest.raises(ScenarioError, match=r"rule\[0\]: kernel backend: flow-table rules have no kernel counterpart"):
        check_kernel_runnable(sc)


def test_a_rule_matches_sctp_by_its_own_protocol_number(tmp_path):
    text = without_controller(THREE_PATHS.read_text()) + RULES.replace('proto = "tcp"', 'proto = "sctp"')
    sc = load_scenario(write(tmp_path, "rules.toml", text))
    assert sc.to_engine_spec()["rules"][0]["proto"] == 132
