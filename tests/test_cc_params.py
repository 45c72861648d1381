"""`cc_params` (controller parameters by controller) and the note `mpsim
validate` prints for MPTCP flows in linux mode."""

from __future__ import annotations

import pytest
from conftest import MINIMAL, write
from mpsim.cli import app
from mpsim.errors import ScenarioError
from mpsim.scenario import CC_BY_TRANSPORT, load_scenario
from typer.testing import CliRunner

runner = CliRunner()


def flow_with(extra: str) -> str:
    return MINIMAL + extra


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_kellyvoice_is_an_mptcp_controller():
    assert "kellyvoice" in CC_BY_TRANSPORT["mptcp"]


def test_vegas_parameters_reach_the_engine_spec(tmp_path):
    text = flow_with('cc = "vegas"\ncc_params = { alpha = 1, beta = 3.5, gamma = 1 }\n')
    spec = load_scenario(write(tmp_path, "s.toml", text)).to_engine_spec()
    assert spec["flows"][0]["cc"] == "vegas"
    assert spec["flows"][0]["cc_params"] == {"alpha": 1.0, "beta": 3.5, "gamma": 1.0}


def test_flows_without_parameters_have_no_cc_params_key(tmp_path):
    spec = load_scenario(write(tmp_path, "s.toml", MINIMAL)).to_engine_spec()
    assert "cc_params" not in spec["flows"][0]


@pytest.mark.parametrize(
    ("extra", "key", "message"),
    [
        ('cc = "cubic"\ncc_params = { alpha = 2 }\n', "alpha", "'alpha' is not a parameter of congestion control 'cubic' (it takes none)"),
        ('cc = "vegas"\ncc_params = { total_alpha = 2 }\n', "total_alpha", "its keys are alpha, beta, gamma"),
        ('cc = "vegas"\ncc_params = { alpha = 3, beta = 2 }\n', "beta", "beta (2) must be at least alpha (3)"),
        ('cc = "vegas"\ncc_params = { alpha = -1 }\n', "alpha", "alpha must be a number of at least 0"),
        ('cc = "vegas"\ncc_params = { alpha = "2" }\n', "alpha", "expected a number, got '2'"),
        ('transport = "mptcp"\ncc = "balia"\ncc_params = { ssthresh_floor = 0.5 }\n', "ssthresh_floor", "at least 1"),
        ('transport = "mptcp"\ncc = "wvegas"\ncc_params = { alpha = 2 }\n', "alpha", "its keys are total_alpha, initial_alpha, gamma"),
    ],
)  # fmt: skip
def test_a_bad_parameter_is_refused_with_file_line_and_key(tmp_path, extra, key, message):
    text = flow_with(extra)
    path = write(tmp_path, "s.toml", text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert err.value.file == str(path)
    assert err.value.line == line_of(text, "cc_params")
    assert err.value.key == f"flow[0].cc_params.{key}"
    assert message in err.value.message


def test_cc_params_do_not_apply_to_udp(tmp_path):
    text = flow_with('transport = "udp"\napp = "cbr"\nrate = "1Mbps"\ncc_params = { alpha = 2 }\n')
    with pytest.raises(ScenarioError) as err:
        load_scenario(write(tmp_path, "s.toml", text))
    assert err.value.key == "flow[0].cc_params"


def test_validate_notes_linux_mode_mptcp_coupled_controllers(tmp_path):
    text = flow_with('transport = "mptcp"\ncc = "lia"\ncc_mode = "linux"\n')
    path = write(tmp_path, "s.toml", text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{path}: ok")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{path}:{line_of(text, 'cc_mode')}: flow[0].cc_mode: note: ")
    assert "ACK events" in lines[0] and "srtt_us" in lines[0]


@pytest.mark.parametrize(
    "extra",
    ['transport = "mptcp"\ncc = "lia"\n', 'transport = "mptcp"\ncc = "coupled"\ncc_mode = "linux"\n', 'cc_mode = "linux"\n'],
)
def test_validate_is_silent_otherwise(tmp_path, extra):
    result = runner.invoke(app, ["validate", str(write(tmp_path, "s.toml", flow_with(extra)))])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
