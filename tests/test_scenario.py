"""Scenario loading: overrides, YAML = TOML, line numbers, semantic checks, defaults."""

from __future__ import annotations

import pytest
from conftest import MINIMAL, SCENARIOS, write
from mpsim import ScenarioError, load_scenario
from mpsim.locate import toml_lines


def error_of(path, overrides=None) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides)
    return info.value


# ------------------------------------------------------------ overrides


def test_overrides_change_values_before_validation():
    sc = load_scenario(
        SCENARIOS / "dumbbell.toml",
        ["simulation.duration=30s", "simulation.seed=4", "flow.cubic.cc=vegas",
         "link.bottleneck.bandwidth=2Mbps", "link.bottleneck.b_to_a.loss=0.01"],
    )  # fmt: skip
    spec = sc.to_engine_spec()
    assert spec["duration_ps"] == 30 * 10**12
    assert sc.seed == spec["seed"] == 4
    assert sc.duration_s == 30.0
    assert spec["flows"][1]["cc"] == "vegas"
    bottleneck = spec["links"][2]
    assert bottleneck["a_to_b"]["bandwidth_bps"] == bottleneck["b_to_a"]["bandwidth_bps"] == 2_000_000
    assert bottleneck["a_to_b"]["loss"] == {"model": "none"}
    assert bottleneck["b_to_a"]["loss"] == {"model": "bernoulli", "p": 0.01}


def test_overrides_as_a_dict_and_with_overrides_compose():
    sc = load_scenario(SCENARIOS / "dumbbell.toml", {"simulation.duration": "20s"})
    again = sc.with_overrides({"simulation.seed": 9})
    assert (again.duration_s, again.seed) == (20.0, 9)
    assert (sc.duration_s, sc.seed) == (20.0, 1)  # the original is untouched


def test_override_by_index_and_of_a_missing_table():
    sc = load_scenario(SCENARIOS / "two-path-tcp.toml", ["link.wifi.events.0.at=25s", "controller.app=shortest"])
    assert sc.to_engine_spec()["links"][0]["events"][0]["at_ps"] == 25 * 10**12
    assert sc.controller is not None and sc.controller.app == "shortest"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("flow.reno.ccc=cubic", "unknown key 'ccc'"),
        ("flow.nosuch.cc=reno", "no flow named 'nosuch'"),
        ("simulation.durations=1s", "unknown key 'durations'"),
        ("flows.reno.cc=reno", "unknown key 'flows'"),
        ("link.bottleneck=1", "expected a key after 'link.bottleneck'"),
        ("simulation.duration.x=1", "'duration' is a value, not a table"),
        ("flow.reno.cc", "expected KEY=VALUE"),
    ],
)
def test_bad_overrides_name_the_override(override, message):
    err = error_of(SCENARIOS / "dumbbell.toml", [override])
    assert err.key == f"--set {override.partition('=')[0]}"
    assert message in err.message
    assert err.line is None and err.file == str(SCENARIOS / "dumbbell.toml")


def test_override_values_parse_as_toml_when_they_can(tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    sc = load_scenario(path, ['flow.f.client_interfaces=["ab"]', "flow.f.sack=false", "simulation.mss=1000"])
    flow = sc.to_engine_spec()["flows"][0]
    assert (flow["client_interfaces"], flow["sack"], flow["mss_bytes"]) == (["ab"], False, 1000)


# ------------------------------------------------------------ YAML


YAML = """\
name: mini
simulation:
  duration: 10s
node:
  - name: a
  - {name: b}
link:
  - name: ab
    between: [a, b]
    bandwidth: 10Mbps
    delay: 5ms
flow:
  - name: f
    client: a
    server: b
"""


def test_yaml_equals_toml(tmp_path):
    toml_sc = load_scenario(write(tmp_path, "s.toml", MINIMAL))
    yaml_sc = load_scenario(write(tmp_path, "s.yaml", YAML))
    assert toml_sc.to_engine_spec() == yaml_sc.to_engine_spec()


def test_yaml_null_is_refused_with_its_key_and_line(tmp_path):
    # TOML has no null; in YAML it would slip past the defaults.
    path = write(tmp_path, "s.yaml", YAML.replace("  - name: f\n", "  - name: null\n"))
    err = error_of(path)
    assert (err.line, err.key) == (13, "flow[0].name"), str(err)
    assert "leave the key out" in err.message
    empty = write(tmp_path, "e.yaml", YAML.replace("    delay: 5ms\n", "    delay:\n"))
    assert (error_of(empty).line, error_of(empty).key) == (11, "link[0].delay")


def test_yaml_errors_have_lines(tmp_path):
    path = write(tmp_path, "s.yaml", YAML.replace("    delay: 5ms", "    delay: 5 parsecs"))
    err = error_of(path)
    assert (err.line, err.key) == (11, "link[0].delay")


def test_yaml_on_off_keys_are_not_booleans(tmp_path):
    onoff = "    transport: udp\n    app: onoff\n    on: 1s\n    off: 2s\n    rate: 1Mbps\n"
    text = YAML.replace("    server: b\n", "    server: b\n" + onoff)
    app = load_scenario(write(tmp_path, "s.yaml", text)).to_engine_spec()["flows"][0]["app"]
    assert app == {"kind": "onoff", "on_ps": 10**12, "off_ps": 2 * 10**12,
                   "inner": {"kind": "cbr", "rate_bps": 10**6, "packet_bytes": 1500}}  # fmt: skip


def test_yaml_duplicate_keys_are_errors(tmp_path):
    err = error_of(write(tmp_path, "s.yaml", YAML.replace("  duration: 10s\n", "  duration: 10s\n  duration: 20s\n")))
    assert (err.line, err.key) == (4, "simulation.duration")
    assert "duplicate key" in err.message


# ------------------------------------------------------------ line locator


def test_toml_locator_follows_arrays_inline_tables_and_subtables():
    text = """\
name = "x"   # a comment with [brackets] and = signs
[simulation]
duration = "1s"
[[link]]
name = "l0"
[[link]]
name = "l1"
loss = { model = "gilbert", p_good_bad = 0.1,
         p_bad_good = 0.2 }
[link.b_to_a]
bandwidth = "1Mbps"
[[link.events]]
at = "1s"
[[link.events]]
at = "2s"
[controller]
thresholds = [
  { below = "50KB", gap = 0.0 },
  { gap = 0.9 },
]
s = \"\"\"multi
line\"\"\"
after = 1
"""
    lines = toml_lines(text)
    assert lines[("simulation", "duration")] == 3
    assert lines[("link", 1)] == 6
    assert lines[("link", 1, "loss", "p_bad_good")] == 9
    assert lines[("link", 1, "b_to_a", "bandwidth")] == 11
    assert lines[("link", 1, "events", 1, "at")] == 15
    assert lines[("controller", "thresholds", 1, "gap")] == 19
    assert lines[("controller", "after")] == 23


def test_missing_key_points_at_its_table(tmp_path):
    text = MINIMAL.replace('client = "a"\n', "")
    err = error_of(write(tmp_path, "s.toml", text))
    assert (err.key, err.line) == ("flow[0].client", text.splitlines().index("[[flow]]") + 1)


# ------------------------------------------------------------ semantic checks


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        (('name = "b"', 'name = "a"'), "node[1].name", "node name 'a' is already used by node[0]"),
        (('name = "b"', 'name = "b c"'), "node[1].name", "bad name 'b c'"),
        (('between = ["a", "b"]', 'between = ["a", "a"]'), "link[0].between", "two different nodes"),
        (('between = ["a", "b"]', 'between = ["a"]'), "link[0].between", "expected two node names"),
        (('server = "b"', 'server = "b"\ncc = "lia"'), "flow[0].cc", "'lia' is not available for tcp"),
        (('server = "b"', 'server = "b"\nsizes = []\napp = "http"'), "flow[0].sizes", "at least one size"),
        (('server = "b"', 'server = "b"\napp = "http"'), "flow[0].sizes", "app 'http' needs one of 'sizes' and 'size_distribution'"),
        (('server = "b"', 'server = "b"\nrate = "1Mbps"'), "flow[0].rate", "applies only to app = 'cbr'"),
        (('server = "b"', 'server = "b"\napp = "cbr"\nrate = "1Mbps"'), "flow[0].transport", "needs transport = 'udp'"),
        (('server = "b"', 'server = "b"\ntransport = "udp"'), "flow[0].app", "carries only app = 'cbr'"),
        (('server = "b"', 'server = "b"\nclient_interfaces = ["zz"]'), "flow[0].client_interfaces[0]", "unknown link 'zz'"),
        (('server = "b"', 'server = "b"\nscheduler = "redundant"'), "flow[0].scheduler", "only to transport = 'mptcp'"),
        (('server = "b"', 'server = "b"\nrack = true'), "flow[0].rack", "applies only to cc_mode = 'linux'"),
        (('server = "b"', 'server = "b"\nstart = "5s"\nstop = "1s"'), "flow[0].stop", "stop must be after start"),
        (('server = "b"', 'server = "b"\nsize = "0B"'), "flow[0].size", "size must be positive"),
        (('server = "b"', 'server = "b"\nhandover = { after = "1s" }'), "flow[0].handover.after", "unknown key 'after'"),
        (('delay = "5ms"', 'delay = "5ms"\nqueue = "100B"'), "link[0].queue", "cannot hold one 1514-byte packet"),
        (('delay = "5ms"', 'delay = "5ms"\nloss = { model = "gilbert", p_good_bad = 0.1 }'), "link[0].loss", "needs key 'p_bad_good'"),
        (('delay = "5ms"', 'delay = "5ms"\n[[link.events]]\nat = "1s"'), "link[0].events[0]", "event changes nothing"),
        (('name = "mini"', 'name = "mini"\nformat = 2'), "format", "format 2 is not supported"),
        (('duration = "10s"', 'duration = "10s"\nseed = true'), "simulation.seed", "expected a whole number"),
        (('duration = "10s"', 'duration = "0s"'), "simulation.duration", "must be positive"),
        (('name = "mini"', 'name = "mini"\n[record]\npcap = ["a:zz"]'), "record.pcap[0]", "node 'a' has no link 'zz'"),
        (('name = "mini"', 'name = "mini"\n[controller]\napp = "magic"'), "controller.app", "bad value 'magic'"),
    ],
)  # fmt: skip
def test_semantic_errors_name_key_and_line(tmp_path, change, key, message):
    text = MINIMAL.replace(*change, 1)
    err = error_of(write(tmp_path, "s.toml", text))
    assert err.key == key, str(err)
    assert message in err.message, str(err)
    assert err.line is not None, str(err)


def test_flows_must_run_between_hosts(tmp_path):
    text = MINIMAL.replace('name = "b"', 'name = "b"\nkind = "switch"')
    err = error_of(write(tmp_path, "s.toml", text))
    assert err.key == "flow[0].server" and "is a switch" in err.message


def test_unknown_file_type(tmp_path):
    assert "expected .toml, .yaml or .yml" in error_of(write(tmp_path, "s.json", "{}")).message


def test_bandwidth_trace_is_loaded_relative_to_the_scenario(tmp_path):
    write(tmp_path, "traces/t.csv", "# time, rate\ntime,rate\n0,1000000\n1.5s, 2Mbps\n2s 500kbps\n")
    text = MINIMAL.replace('bandwidth = "10Mbps"', 'bandwidth_trace = "traces/t.csv"')
    spec = load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()
    direction = spec["links"][0]["a_to_b"]
    assert direction["bandwidth_trace"] == [[0, 1_000_000], [1_500_000_000_000, 2_000_000], [2 * 10**12, 500_000]]
    assert direction["bandwidth_bps"] == 1_000_000


def test_trace_times_must_not_decrease(tmp_path):
    write(tmp_path, "t.csv", "0s,1Mbps\n2s,1Mbps\n1s,1Mbps\n")
    text = MINIMAL.replace('bandwidth = "10Mbps"', 'bandwidth_trace = "t.csv"')
    assert "t.csv:3: times must not decrease" in error_of(write(tmp_path, "s.toml", text)).message


def test_defaults_are_filled(tmp_path):
    sc = load_scenario(write(tmp_path, "s.toml", MINIMAL.replace('name = "f"\n', "")))
    flow = sc.to_engine_spec()["flows"][0]
    assert flow["name"] == "flow1"
    assert flow["rcvbuf_bytes"] == 6_291_456
    assert (flow["delayed_ack_ps"], flow["min_rto_ps"], flow["initial_cwnd_pkts"]) == (40 * 10**9, None, 10)
    assert (flow["initial_ssthresh_pkts"], flow["time_wait_ps"], flow["timestamps"]) == (None, None, None)
    assert flow["rack"] is None
    assert (flow["cc"], flow["cc_mode"], flow["sack"]) == ("reno", "reference", True)


def test_unnamed_links_are_named_after_their_ends(tmp_path):
    sc = load_scenario(write(tmp_path, "s.toml", MINIMAL.replace('name = "ab"\n', "")), ["link.a-b.delay=1ms"])
    assert sc.to_engine_spec()["links"][0]["name"] == "a-b"
    assert sc.to_engine_spec()["links"][0]["a_to_b"]["delay_ps"] == 10**9


def test_scenario_name_defaults_to_the_file_stem(tmp_path):
    assert load_scenario(write(tmp_path, "my-run.toml", MINIMAL.replace('name = "mini"\n', ""))).name == "my-run"


def test_multipath_keys_are_validated_and_sent(tmp_path):
    text = MINIMAL.replace(
        'server = "b"',
        'server = "b"\ntransport = "mptcp"\ncc = "olia"\npath_manager = "ndiffports"\nsubflows = 4\nscheduler = "roundrobin"',
    )
    sc = load_scenario(write(tmp_path, "s.toml", text))
    assert (sc.flows[0].path_manager, sc.flows[0].subflows, sc.flows[0].scheduler) == ("ndiffports", 4, "roundrobin")
    flow = sc.to_engine_spec()["flows"][0]
    assert (flow["transport"], flow["cc"]) == ("mptcp", "olia")
    assert (flow["scheduler"], flow["path_manager"], flow["subflows"]) == ("roundrobin", "ndiffports", 4)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("**/*.toml")), ids=lambda p: p.name)
def test_every_scenario_file_validates(path):
    sc = load_scenario(path)
    assert sc.nodes and sc.links and sc.flows


@pytest.mark.parametrize("key", ["initial_cwnd", "initial_ssthresh"])
def test_a_window_beyond_32_bits_is_refused_with_its_key(tmp_path, key):
    path = write(tmp_path, "s.toml", MINIMAL + f"{key} = 4294967296\n")
    err = error_of(path)
    assert err.key == f"flow[0].{key}", str(err)
    assert err.line == path.read_text().splitlines().index(f"{key} = 4294967296") + 1, str(err)


def test_rack_is_sent_in_linux_mode_and_may_be_turned_off_there(tmp_path):
    for extra, expected in [('cc_mode = "linux"\n', None), ('cc_mode = "linux"\nrack = false\n', False),
                            ("rack = false\n", False)]:  # fmt: skip
        spec = load_scenario(write(tmp_path, "s.toml", MINIMAL + extra)).to_engine_spec()
        assert spec["flows"][0]["rack"] is expected, extra
