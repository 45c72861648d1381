"""The kernel backend: refusals and the plan everywhere; real runs where
network namespaces work (root, `ip netns`, the mpsim-linkd binary), skipped
with the reason elsewhere."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SCENARIOS

import mpsim
from mpsim.errors import ScenarioError
from mpsim.kernel.backend import KernelRunError, check_kernel_runnable, kernel_unavailable, run_kernel
from mpsim.kernel.plan import iface_addr, make_plan
from mpsim.kernel import testbed as tb
from mpsim.kernel.testbed import find_linkd, leftovers
from mpsim.runner import resolve_scenario, run

LINKD = ROOT / "target" / "release" / "mpsim-linkd"
# Child processes import the very mpsim this process runs, installed or not.
PACKAGE_ROOT = str(Path(mpsim.__file__).resolve().parent.parent)
if "MPSIM_LINKD" not in os.environ and LINKD.exists():
    os.environ["MPSIM_LINKD"] = str(LINKD)
WHY_NOT = kernel_unavailable()
needs_kernel = pytest.mark.skipif(WHY_NOT is not None, reason=f"kernel backend unavailable: {WHY_NOT}")
MSS, FRAME = 1448, 1514


def scenario(tmp_path: Path, text: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return resolve_scenario(path)


TWO_HOSTS = """
format = 1
name = "k"
[simulation]
duration = "3s"
[[node]]
name = "c"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "s"
[[link]]
name = "acc"
between = ["c", "r"]
bandwidth = "8Mbps"
delay = "5ms"
[[link]]
name = "core"
between = ["r", "s"]
bandwidth = "100Mbps"
delay = "1ms"
[[flow]]
name = "f"
client = "c"
server = "s"
cc = "cubic"
"""


# ------------------------------------------------------------ everywhere


def test_addresses_follow_the_simulators_numbering():
    assert iface_addr(0, 0) == "10.0.0.1"
    assert iface_addr(3, 1) == "10.0.3.2"
    assert iface_addr(258, 0) == "10.1.2.1"


def test_routers_get_a_route_to_every_host_address_by_the_shortest_path(tmp_path):
    text = TWO_HOSTS.replace('[[flow]]', '[[node]]\nname = "r2"\nkind = "router"\n[[link]]\nname = "x"\n'
                             'between = ["r", "r2"]\nbandwidth = "1Mbps"\n[[flow]]')
    plan = make_plan(scenario(tmp_path, text), "t")
    # r2 reaches the client (10.0.0.1) and the server (10.0.1.2) through r, over link x.
    assert "route add 10.0.0.1/32 via 10.0.2.1 dev x" in plan.ip["t-r2"]
    assert "route add 10.0.1.2/32 via 10.0.2.1 dev x" in plan.ip["t-r2"]
    assert not any("route add" in line for line in plan.ip["t-r"])  # both hosts are attached
    assert "route add default via 10.0.0.2 dev acc" in plan.ip["t-c"]


def test_a_multihomed_host_gets_a_table_and_a_rule_per_address():
    plan = make_plan(resolve_scenario(SCENARIOS / "two-path-tcp.toml"), "t")
    lines = plan.ip["t-client"]
    assert "rule add from 10.0.0.1 table 100 priority 100" in lines
    assert "rule add from 10.0.1.1 table 101 priority 101" in lines
    assert "route add default via 10.0.1.2 dev 3g table 101" in lines


def test_mptcp_endpoints_and_limits_come_from_the_path_manager_keys():
    plan = make_plan(resolve_scenario(SCENARIOS / "mptcp-two-path.toml"), "t")
    assert "mptcp endpoint add 10.0.1.1 dev b subflow" in plan.ip["t-client"]
    assert any(line.startswith("mptcp limits set subflows 2") for line in plan.ip["t-client"])
    fullmesh = make_plan(resolve_scenario(SCENARIOS / "mptcp-two-path.toml",
                                          overrides={"flow.bulk.path_manager": "fullmesh"}), "t")
    assert "mptcp endpoint add 10.0.1.1 dev b subflow fullmesh" in fullmesh.ip["t-client"]


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ('cc = "cubic"', 'cc = "lia"', "flow[0].cc", "coupled controller 'lia'"),
        ('cc = "cubic"', 'cc = "cubic"\nscheduler = "roundrobin"', "flow[0].scheduler", "'roundrobin'"),
        ('cc = "cubic"', 'cc = "cubic"\nscheduler = "redundant"', "flow[0].scheduler", "'redundant'"),
        ('queue = "100pkt"', 'queue = "100pkt"\nqdisc = "codel"', "link[0].qdisc", "qdisc 'codel'"),
        ('queue = "100pkt"', 'queue = "100pkt"\nmtu = "9000B"', "link[0].mtu", "1500 B MTU"),
        ("[record]", '[controller]\napp = "shortest"\n[record]', "controller.app", "SDN controllers"),
    ],
)
def test_what_the_kernel_cannot_do_is_one_line_naming_file_line_and_key(tmp_path, old, new, key, words):
    text = (SCENARIOS / "mptcp-two-path.toml").read_text().replace(old, new, 1)
    s = scenario(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        check_kernel_runnable(s)
    line = str(err.value)
    written = next(x for x in new.splitlines() if x.startswith(key.split(".")[-1] + " ="))
    number = text.splitlines().index(written) + 1
    assert "\n" not in line and f"s.toml:{number}: {key}: " in line and words in line, line


def test_a_refused_scenario_sets_nothing_up(tmp_path):
    s = resolve_scenario(SCENARIOS / "mptcp-two-path.toml", overrides={"flow.bulk.cc": "olia"})
    before = leftovers()
    with pytest.raises(ScenarioError, match="kernel backend"):
        run(s, backend="kernel", out=tmp_path / "out")
    assert leftovers() == before
    assert not (tmp_path / "out").exists()


def test_the_cli_refuses_with_one_line_and_status_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mpsim", "run", str(SCENARIOS / "mptcp-two-path.toml"),
                           "--backend", "kernel", "--set", "flow.bulk.cc=balia"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--set flow.bulk.cc: kernel backend" in proc.stderr


# ------------------------------------------------------------ on the kernel


@needs_kernel
def test_a_tcp_download_fills_its_bottleneck_and_reports_like_the_simulator(tmp_path):
    s = scenario(tmp_path, TWO_HOSTS)
    kernel = run_kernel(s)
    sim = run(s)
    flow = kernel.summary["flows"]["f"]
    payload_bps = 8e6 * MSS / FRAME
    # Slow start takes a little of three seconds.
    assert 0.85 * payload_bps < flow["goodput_bps"] < 1.01 * payload_bps
    assert set(sim.summary) <= set(kernel.summary)
    assert set(sim.summary["flows"]["f"]) <= set(flow)
    for table in ("interfaces", "flows", "subflows"):
        assert list(kernel.table(table).columns) == list(sim.table(table).columns)
        assert len(kernel.table(table)) > 0
    assert flow["subflows"][0]["client_interface"] == "acc"
    assert kernel.summary["links"]["acc"]["b_to_a"]["utilization"] > 0.8
    assert leftovers() == []


@needs_kernel
def test_an_mptcp_download_uses_both_paths():
    s = resolve_scenario(SCENARIOS / "mptcp-two-path.toml", overrides={"simulation.duration": "4s"})
    r = run(s, backend="kernel")
    subflows = {x["client_interface"]: x["goodput_bps"] for x in r.summary["flows"]["bulk"]["subflows"]}
    assert set(subflows) == {"a", "b"}
    assert subflows["a"] > 5e6 and subflows["b"] > 2.5e6
    assert leftovers() == []


@needs_kernel
def test_a_link_that_goes_down_carries_nothing_until_it_returns(tmp_path):
    text = TWO_HOSTS.replace('duration = "3s"', 'duration = "5s"').replace(
        '[[link]]\nname = "core"', '[[link.events]]\nat = "2s"\nup = false\n[[link.events]]\nat = "3s"\nup = true\n'
        '[[link]]\nname = "core"')
    r = run_kernel(scenario(tmp_path, text))
    rx = r.interfaces.query("node == 'c'").set_index("time_s")["rx_bytes"]
    assert rx[2.0] > 500_000 and rx[3.0] < 20_000
    assert r.summary["links"]["acc"]["b_to_a"]["loss_drops"] > 0


@needs_kernel
def test_a_failed_run_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSIM_LINKD", "/bin/false")  # the link elements fail after the namespaces exist
    with pytest.raises(KernelRunError, match="did not start"):
        run_kernel(scenario(tmp_path, TWO_HOSTS))
    assert leftovers() == []


@needs_kernel
def test_ctrl_c_tears_everything_down(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TWO_HOSTS.replace('duration = "3s"', 'duration = "30s"'))
    # The run answers Ctrl-C even where this test process was started
    # with SIGINT ignored (a shell's background job), which it would inherit.
    proc = subprocess.Popen([sys.executable, "-m", "mpsim", "run", str(path), "--backend", "kernel", "-q"],
                            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT}, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 15
    while not any("namespace" in x for x in leftovers()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert leftovers() == []


def _setup_teardown(s, n: int) -> float:
    linkd = find_linkd()
    assert linkd is not None
    started = time.perf_counter()
    for i in range(n):
        with tb.Testbed(make_plan(s, f"mpsim-kt{os.getpid():x}-{i}"), linkd, 1) as bed:
            bed.setup()
    return time.perf_counter() - started


@needs_kernel
def test_ten_set_ups_and_tear_downs_leave_nothing(tmp_path):
    _setup_teardown(resolve_scenario(SCENARIOS / "two-path-tcp.toml"), 10)
    assert leftovers("mpsim-k") == []


@needs_kernel
@pytest.mark.slow
def test_a_hundred_set_ups_and_tear_downs_leave_nothing():
    _setup_teardown(resolve_scenario(SCENARIOS / "two-path-tcp.toml"), 100)
    assert leftovers("mpsim-k") == []


@needs_kernel
def test_http_requests_are_timed_like_the_simulators(tmp_path):
    text = TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\napp = "http"\nsizes = ["100KB"]\nrepeat = 5\ngap = "50ms"')
    s = scenario(tmp_path, text)
    kernel, sim = run_kernel(s).requests, run(s).requests
    assert len(kernel) == len(sim) == 5
    ker_ms, sim_ms = ((t.end_s - t.start_s).median() * 1e3 for t in (kernel, sim))
    # Measured on this machine: within 2 %; 15 % leaves room for a busy machine.
    assert abs(ker_ms - sim_ms) < 0.15 * sim_ms, (ker_ms, sim_ms)


@needs_kernel
def test_an_upload_is_counted_at_the_server(tmp_path):
    text = TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\napp = "upload"\nsize = "1MB"')
    flow = run_kernel(scenario(tmp_path, text)).summary["flows"]["f"]
    assert flow["bytes_delivered"] == 1_000_000
    assert 0.9 < flow["completion_time_s"] < 2.0


@needs_kernel
def test_compare_prints_both_backends_and_writes_both_runs_and_a_figure_per_metric(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TWO_HOSTS.replace('duration = "3s"', 'duration = "2s"'))
    out = tmp_path / "cmp"
    proc = subprocess.run([sys.executable, "-m", "mpsim", "compare", str(path), "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT,
                                                               "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "goodput_bps" in line)
    assert row.count("Mbps") >= 3  # simulator, kernel, kernel spread
    for backend in ("simulator", "kernel"):
        assert (out / backend / "seed-1" / "summary.json").is_file()
    assert sorted(p.name for p in out.glob("compare-*.png")) == [
        "compare-cwnd.png", "compare-flows.png", "compare-interfaces.png", "compare-rtt.png"]


def test_neighbours_are_permanent_so_no_first_packet_waits_for_arp():
    plan = make_plan(resolve_scenario(SCENARIOS / "two-path-tcp.toml"), "t")
    assert "neigh replace 10.0.0.2 lladdr 02:00:0a:00:00:02 dev wifi nud permanent" in plan.ip["t-client"]
    assert "neigh replace 10.0.0.1 lladdr 02:00:0a:00:00:01 dev wifi nud permanent" in plan.ip["t-router"]


@needs_kernel
def test_the_first_short_request_pays_no_address_resolution(tmp_path):
    text = TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\napp = "http"\nsizes = ["10KB"]\nrepeat = 4\ngap = "50ms"')
    req = run_kernel(scenario(tmp_path, text)).requests
    times_ms = ((req.end_s - req.start_s) * 1e3).tolist()
    # Without static neighbours the first request is one access-link round trip (~12 ms) slower.
    assert times_ms[0] < min(times_ms[1:]) + 6, times_ms


def test_scenario_keys_with_a_kernel_sysctl_become_namespace_sysctls():
    s = resolve_scenario(SCENARIOS / "mptcp-two-path.toml", overrides={
        "flow.bulk.ecn": True, "flow.bulk.dss_checksum": True, "flow.bulk.add_addr_timeout": "30s",
        "simulation.rcvbuf": "1MB"})
    client = make_plan(s, "t").sysctls["t-client"]
    assert client["net/ipv4/tcp_ecn"] == "1"
    assert client["net/mptcp/checksum_enabled"] == "1"
    assert client["net/mptcp/add_addr_timeout"] == "30"
    assert client["net/ipv4/tcp_rmem"] == "4096 131072 1000000"
    plain = make_plan(resolve_scenario(SCENARIOS / "mptcp-two-path.toml"), "t")
    assert "net/ipv4/tcp_ecn" not in plain.sysctls["t-client"]


def test_a_multihomed_server_announces_its_other_address(tmp_path):
    text = (TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\ntransport = "mptcp"\npath_manager = "endpoints"\n'
                              'max_add_addr_accepted = 1')
            + '[[link]]\nname = "core2"\nbetween = ["r", "s"]\nbandwidth = "100Mbps"\n')
    plan = make_plan(scenario(tmp_path, text), "t")
    assert "mptcp endpoint add 10.0.2.2 dev core2 signal" in plan.ip["t-s"]
    assert "mptcp limits set subflows 2 add_addr_accepted 1" in plan.ip["t-c"]


# ------------------------------------------------------------ record.pcap


def test_a_capture_is_rebased_to_the_runs_clock_and_cut_to_its_span():
    from mpsim.kernel.capture import rebase
    import struct
    header = struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)  # big-endian, as another host writes
    frames = [(99, 999_999_999, b"early"), (100, 5, b"first"), (101, 0, b"second"), (103, 0, b"late")]
    data = header + b"".join(struct.pack(">4I", s, ns, len(b), len(b)) + b for s, ns, b in frames)
    out, n = rebase(data, zero_ns=100 * 10**9, end_ns=102 * 10**9)
    assert n == 2 and struct.unpack_from("<I", out, 0)[0] == 0xA1B23C4D
    assert struct.unpack_from("<4I", out, 24) == (0, 5, 5, 5) and out[40:45] == b"first"
    assert struct.unpack_from("<4I", out, 45) == (1, 0, 6, 6) and out[61:] == b"second"


@needs_kernel
@pytest.mark.skipif(shutil.which("tcpdump") is None or shutil.which("tshark") is None,
                    reason="tcpdump and tshark are needed")
def test_a_kernel_capture_has_the_simulators_layout_and_tshark_sees_mptcp(tmp_path):
    s = resolve_scenario(SCENARIOS / "mptcp-two-path.toml",
                         overrides={"simulation.duration": "2s", "record.pcap": ["client:a", "client:b"]})
    r = run(s, backend="kernel", out=tmp_path / "k")
    for name, path in (("client:a", "client-a.pcap"), ("client:b", "client-b.pcap")):
        data = (tmp_path / "k" / path).read_bytes()
        assert data[:4] == bytes.fromhex("4d3cb2a1") and r.pcaps[name] == data
        assert r.summary["kernel"]["captures"][name]["frames"] > 100
    fields = subprocess.run(
        ["tshark", "-r", str(tmp_path / "k" / "client-a.pcap"), "-Y", "mptcp", "-T", "fields",
         "-e", "frame.time_epoch", "-e", "tcp.option_kind", "-e", "tcp.options.mptcp.subtype"],
        capture_output=True, text=True, check=True).stdout.splitlines()
    assert fields, "no MPTCP option in the capture"
    first = fields[0].split("\t")
    assert "30" in first[1].split(",") and first[2] == "0"  # the SYN's MP_CAPABLE
    assert 0.0 <= float(first[0]) < 1.0  # times are from the run's start, where the download begins
    joins = subprocess.run(["tshark", "-r", str(tmp_path / "k" / "client-b.pcap"),
                            "-Y", "tcp.options.mptcp.subtype == 1"],
                           capture_output=True, text=True, check=True).stdout
    assert joins.strip(), "no MP_JOIN on the second path"
    assert leftovers() == []


@needs_kernel
@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is needed")
def test_compare_diffs_the_payload_of_both_captures(tmp_path):
    path = tmp_path / "s.toml"
    text = TWO_HOSTS.replace('duration = "3s"', 'duration = "2s"')
    text = text.replace('cc = "cubic"', 'cc = "cubic"\ncc_mode = "linux"')
    path.write_text(text + '[record]\npcap = ["c:acc"]\n')
    proc = subprocess.run([sys.executable, "-m", "mpsim", "compare", str(path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PACKAGE_ROOT, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    # The download's data, server to client, seen on the client's access link by both backends.
    row = next(line for line in proc.stdout.splitlines() if "c:acc" in line and "10.0.1.2" in line.split("│")[2])
    sim, ker = (float(x.replace(",", "")) for x in row.split("│")[4:6])
    assert sim > 1e6 and ker > 1e6 and abs(sim - ker) / ker < 0.1



# ------------------------------------------------------------ apps and ndiffports

UDP_KEYS = 'transport = "udp"\napp = "cbr"\nrate = "2Mbps"\npacket = "1000B"'
UDP = TWO_HOSTS.replace('cc = "cubic"', UDP_KEYS)


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ('packet = "1000B"', 'packet = "1400B"\nstop = "1s"', None, None),
        ('packet = "1000B"', 'packet = "1473B"', "flow[0].packet", "fragmented on the kernel's 1500 B MTU"),
        ('packet = "1000B"', "", "flow[0].packet", "the default is 1500 B"),
        ('app = "cbr"', 'app = "onoff"\non = "1s"\noff = "1s"', None, None),
        (UDP_KEYS, 'cc = "cubic"\napp = "onoff"\non = "1s"\noff = "1s"', "flow[0].on_app", "its send buffer drains"),
        (UDP_KEYS, 'cc = "cubic"\napp = "video"', None, None),
    ],
)
def test_datagrams_video_and_on_off_are_run_or_refused_in_one_line(tmp_path, old, new, key, words):
    text = UDP.replace(old, new, 1)
    s = scenario(tmp_path, text)
    if key is None:
        check_kernel_runnable(s)
        return
    with pytest.raises(ScenarioError) as err:
        check_kernel_runnable(s)
    lines = text.splitlines()
    # The key's own line, or the flow's when the value is a default.
    named = [i for i, x in enumerate(lines) if x.startswith(key.split(".")[-1] + " =")]
    line = (named[0] if named else lines.index("[[flow]]")) + 1
    assert str(err.value).startswith(f"{s._source.file}:{line}: {key}: kernel backend: "), str(err.value)
    assert words in str(err.value)


def test_ndiffports_becomes_signal_endpoints_with_ports_on_the_servers_address(tmp_path):
    text = TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\ntransport = "mptcp"\npath_manager = "ndiffports"\n'
                             'subflows = 3')
    plan = make_plan(scenario(tmp_path, text), "t")
    assert plan.ip["t-s"][-3:] == ["mptcp limits set subflows 2 add_addr_accepted 2",
                                   "mptcp endpoint add 10.0.1.2 port 20001 signal",
                                   "mptcp endpoint add 10.0.1.2 port 20002 signal"]
    assert "mptcp limits set subflows 2 add_addr_accepted 2" in plan.ip["t-c"]
    assert not any("endpoint" in line for line in plan.ip["t-c"])
    client2 = '[[node]]\nname = "c2"\n[[link]]\nname = "acc2"\nbetween = ["c2", "r"]\nbandwidth = "8Mbps"\n[[link]]'
    two = (text.replace('[[link]]', client2, 1)
           + '[[flow]]\nname = "g"\nclient = "c2"\nserver = "s"\ntransport = "mptcp"\ncc = "cubic"\n')
    with pytest.raises(ScenarioError, match="other ndiffports settings"):
        check_kernel_runnable(scenario(tmp_path, two))


@needs_kernel
def test_cbr_over_udp_sends_at_its_rate_like_the_simulator(tmp_path):
    s = scenario(tmp_path, UDP.replace('packet = "1000B"', 'packet = "1000B"\nstart = "0.5s"\nstop = "2.5s"'))
    kernel, sim = run_kernel(s), run(s)
    k, m = kernel.summary["flows"]["f"], sim.summary["flows"]["f"]
    assert m["sent_bytes"] == 500_000  # 250 datagrams a second for 2 s
    assert abs(k["sent_bytes"] - m["sent_bytes"]) <= 2 * 1000 and k["bytes_delivered"] == k["sent_bytes"]
    assert kernel.summary["links"]["acc"]["a_to_b"]["bytes"] == pytest.approx(k["sent_bytes"] / 1000 * 1042, rel=0.01)


@needs_kernel
def test_on_off_cbr_sends_only_in_its_on_periods(tmp_path):
    text = UDP.replace('duration = "3s"', 'duration = "2s"\nsample_interval = "500ms"')
    text = text.replace('app = "cbr"', 'app = "onoff"\non = "500ms"\noff = "500ms"')
    r = run_kernel(scenario(tmp_path, text))
    tx = r.interfaces.query("node == 'c'").set_index("time_s")["tx_bps"]
    assert tx[0.5] > 1.9e6 and tx[1.0] < 0.05e6 and tx[1.5] > 1.9e6 and tx[2.0] < 0.05e6, tx.to_dict()


@needs_kernel
def test_a_video_flow_carries_its_bitrate(tmp_path):
    text = TWO_HOSTS.replace('duration = "3s"', 'duration = "2s"')
    text = text.replace('cc = "cubic"', 'cc = "cubic"\napp = "video"\nbitrate = "2Mbps"\nchunk = "500ms"')
    r = run_kernel(scenario(tmp_path, text))
    # Chunks at 0, 0.5, 1 and 1.5 s, of 125 KB each.
    assert r.summary["flows"]["f"]["bytes_delivered"] == 4 * 125_000


@needs_kernel
def test_ndiffports_opens_its_subflows_over_one_address_pair(tmp_path):
    text = TWO_HOSTS.replace('cc = "cubic"', 'cc = "cubic"\ntransport = "mptcp"\npath_manager = "ndiffports"\n'
                             'subflows = 3').replace('duration = "3s"', 'duration = "2s"')
    r = run_kernel(scenario(tmp_path, text))
    subflows = r.summary["flows"]["f"]["subflows"]
    assert len(subflows) == 3
    assert {(x["client_interface"], x["server_interface"]) for x in subflows} == {("acc", "core")}
    assert all(x["bytes_delivered"] > 100_000 for x in subflows), subflows



def test_tcp_info_is_read_at_the_kernels_offsets():
    from mpsim.kernel.agent import TCP_INFO_BYTES, parse_tcp_info
    import struct
    raw = bytearray(TCP_INFO_BYTES)
    raw[0] = 1  # established
    # rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans (include/uapi/linux/tcp.h)
    struct.pack_into("=8I", raw, 8, 204000, 40000, 1448, 536, 30, 5, 2, 1)
    struct.pack_into("=I", raw, 68, 21000)  # rtt, us
    struct.pack_into("=2I", raw, 76, 20, 40)  # snd_ssthresh, snd_cwnd
    info = parse_tcp_info(bytes(raw))
    assert info["bytes_in_flight"] == (30 - 5 - 2 + 1) * 1448
    assert info["cwnd_bytes"] == 40 * 1448 and info["ssthresh_bytes"] == 20 * 1448 and info["srtt_s"] == 0.021



def test_compare_notes_an_mptcp_flow_left_on_the_out_of_tree_scheduler():
    from mpsim.kernel.compare import notes
    two_path = SCENARIOS / "mptcp-two-path.toml"
    assert notes(resolve_scenario(two_path)) == [
        "flow 'bulk': the simulator runs the out-of-tree default scheduler, the kernel upstream Linux's; "
        'set scheduler = "upstream" to compare the same scheduler']
    assert notes(resolve_scenario(two_path, overrides={"flow.bulk.scheduler": "upstream"})) == []
