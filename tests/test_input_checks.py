"""Silent mistakes in scenario files: bare numbers, flows with no path,
times after the end of the run (issue 12, item 3)."""

from __future__ import annotations

import warnings

import mpsim
import pytest
from conftest import MINIMAL, write
from mpsim.cli import app
from mpsim.errors import ScenarioError, ScenarioWarning
from typer.testing import CliRunner

runner = CliRunner()


def line_of(text: str, needle: str) -> int:
    for n, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return n
    raise AssertionError(needle)


def validate(tmp_path, text):
    path = write(tmp_path, "s.toml", text)
    return path, runner.invoke(app, ["validate", str(path)])


@pytest.mark.parametrize(
    ("old", "new", "key", "needle"),
    [
        ('bandwidth = "10Mbps"', "bandwidth = 4", "link[0].bandwidth", "4 bit/s"),
        ('bandwidth = "10Mbps"', 'bandwidth = "999"', "link[0].bandwidth", "999 bit/s"),
        ('delay = "5ms"', "delay = 10", "link[0].delay", "10 s"),
        ('delay = "5ms"', "delay = 12.5", "link[0].delay", "12.5 s"),
    ],
)
def test_implausible_bare_numbers_warn_with_file_line_key(tmp_path, old, new, key, needle):
    text = MINIMAL.replace(old, new)
    path, result = validate(tmp_path, text)
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1, result.stderr
    assert warned[0].startswith(f"{path}:{line_of(text, new)}: {key}: warning:"), warned[0]
    assert needle in warned[0]


def test_plausible_bare_numbers_and_unit_strings_do_not_warn(tmp_path):
    text = MINIMAL.replace('bandwidth = "10Mbps"', "bandwidth = 10000000").replace('delay = "5ms"', "delay = 0.005")
    _, result = validate(tmp_path, text)
    assert result.exit_code == 0
    assert result.stderr == ""
    _, result = validate(tmp_path, MINIMAL.replace('"10Mbps"', '"4bps"'))
    assert result.stderr == ""  # a unit says it is meant


def test_load_scenario_warns_through_the_warnings_module(tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL.replace('bandwidth = "10Mbps"', "bandwidth = 4"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mpsim.load_scenario(path)
    found = [w for w in caught if issubclass(w.category, ScenarioWarning)]
    assert len(found) == 1
    assert "link[0].bandwidth" in str(found[0].message)


def test_an_override_that_is_a_bare_number_is_named_in_the_warning(tmp_path):
    path = write(tmp_path, "s.toml", MINIMAL)
    result = runner.invoke(app, ["validate", str(path), "--set", "link.ab.bandwidth=4"])
    assert result.exit_code == 0
    assert "--set link.ab.bandwidth" in result.stderr
    assert "warning" in result.stderr


NO_PATH = MINIMAL.replace(
    '[[flow]]', '[[node]]\nname = "c"\n\n[[node]]\nname = "s"\nkind = "switch"\n\n'
    '[[link]]\nname = "cs"\nbetween = ["c", "s"]\nbandwidth = "1Mbps"\n\n[[flow]]'
).replace('server = "b"', 'server = "c"')


def test_a_flow_between_hosts_with_no_path_is_an_error(tmp_path):
    path, result = validate(tmp_path, NO_PATH)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    line = line_of(NO_PATH, 'server = "c"')
    assert lines[0].startswith(f"{path}:{line}: flow[0].server:"), lines[0]
    assert "no path" in lines[0]


def test_a_path_through_another_host_is_no_path(tmp_path):
    # a - b - c with b a host: hosts do not forward.
    text = NO_PATH.replace('between = ["c", "s"]', 'between = ["c", "b"]')
    _, result = validate(tmp_path, text)
    assert result.exit_code == 2
    assert "no path" in result.stderr


def test_a_flow_starting_after_the_end_is_an_error(tmp_path):
    text = MINIMAL.replace('server = "b"', 'server = "b"\nstart = "10s"')
    path, result = validate(tmp_path, text)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}:{line_of(text, 'start = ')}: flow[0].start:"), result.stderr


def test_an_event_after_the_end_is_a_warning(tmp_path):
    text = MINIMAL.replace('delay = "5ms"', 'delay = "5ms"\n\n[[link.events]]\nat = "20s"\nup = false')
    path, result = validate(tmp_path, text)
    assert result.exit_code == 0
    assert result.stderr.startswith(f"{path}:{line_of(text, 'at = ')}: link[0].events[0].at: warning:"), result.stderr


def test_a_sample_interval_longer_than_the_run_is_a_warning(tmp_path):
    text = MINIMAL.replace('duration = "10s"', 'duration = "10s"\nsample_interval = "20s"')
    path, result = validate(tmp_path, text)
    assert result.exit_code == 0
    where = f"{path}:{line_of(text, 'sample_interval')}: simulation.sample_interval: warning:"
    assert result.stderr.startswith(where), result.stderr


def test_the_builder_reports_no_path_naming_the_call():
    net = mpsim.Network("np", duration="10s")
    net.add_host("a"); net.add_host("b"); net.add_host("c"); net.add_switch("s")  # noqa: E702
    net.add_link("a", "b", bw="1Mbps"); net.add_link("c", "s", bw="1Mbps")  # noqa: E702
    net.add_flow("a", "c")
    with pytest.raises(ScenarioError, match="no path"):
        net.to_scenario()
