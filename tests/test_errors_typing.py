"""Typed engine errors, shipped type stubs, a library crate that holds only
the engine (issue 12, item 9)."""

from __future__ import annotations

import ast
import json

import mpsim
import pytest
from conftest import ROOT, SCENARIOS
from mpsim import errors


def test_exception_hierarchy_under_mpsim_error():
    for cls in (errors.EngineSpecError, errors.EngineBuildError, errors.UnsupportedError, errors.NoRouteError):
        assert issubclass(cls, errors.EngineError)
        assert issubclass(cls, mpsim.MpsimError)
        assert getattr(mpsim, cls.__name__) is cls


def test_the_binding_raises_a_spec_error_for_a_malformed_spec():
    core = pytest.importorskip("mpsim._core")
    with pytest.raises(errors.EngineSpecError) as info:
        core.Simulation("{not json")
    assert type(info.value) is not ValueError


def engine_spec(**changes) -> dict:
    spec = mpsim.load_scenario(SCENARIOS / "dumbbell.toml").to_engine_spec()
    spec.update(changes)
    return spec


def test_the_binding_raises_a_build_error_for_an_unknown_node():
    core = pytest.importorskip("mpsim._core")
    spec = engine_spec()
    spec["flows"][0]["client"] = "nowhere"
    with pytest.raises(errors.EngineBuildError, match="nowhere"):
        core.Simulation(json.dumps(spec))


def cmt_cbr(spec: dict) -> dict:
    """A cmt flow with an app the association does not run (datagrams)."""
    spec["flows"][0]["transport"] = "cmt"
    spec["flows"][0]["app"] = {"kind": "cbr", "rate_bps": 100_000, "packet_bytes": 1000}
    return spec


def test_the_binding_raises_unsupported_for_a_cmt_flow_with_cbr():
    core = pytest.importorskip("mpsim._core")
    spec = cmt_cbr(engine_spec())
    with pytest.raises(errors.UnsupportedError):
        core.Simulation(json.dumps(spec))


def test_the_binding_raises_no_route_for_unreachable_hosts():
    core = pytest.importorskip("mpsim._core")
    spec = engine_spec()
    spec["links"] = [link for link in spec["links"] if link["name"] != "bottleneck"]
    with pytest.raises(errors.NoRouteError):
        core.Simulation(json.dumps(spec))


def test_mpsim_run_keeps_the_class_and_names_the_file(monkeypatch):
    core = pytest.importorskip("mpsim._core")
    real = core.Simulation

    def refuse(spec_json):
        return real(json.dumps(cmt_cbr(json.loads(spec_json))))

    monkeypatch.setattr(core, "Simulation", refuse)
    with pytest.raises(errors.UnsupportedError, match=r"dumbbell\.toml"):
        mpsim.run(SCENARIOS / "dumbbell.toml")


def test_stubs_and_py_typed_ship_with_the_package():
    package = ROOT / "python" / "mpsim"
    assert (package / "py.typed").exists()
    stub = ast.parse((package / "_core.pyi").read_text())
    classes = {node.name: node for node in stub.body if isinstance(node, ast.ClassDef)}
    assert "Simulation" in classes
    core = pytest.importorskip("mpsim._core")
    public = {name for name in dir(core.Simulation) if not name.startswith("_")}
    stubbed = {n.name for n in classes["Simulation"].body if isinstance(n, ast.FunctionDef)}
    assert public <= stubbed, public - stubbed
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "py.typed" in pyproject and "_core.pyi" in pyproject


def test_the_library_crate_holds_only_the_engine():
    src = ROOT / "crates" / "mpsim" / "src"
    for name in ("multipath", "validation", "testbed"):
        assert not (src / f"{name}.rs").exists(), name
        assert f"mod {name}" not in (src / "lib.rs").read_text()
