"""The documentation stands on its own, and the scenario format has a JSON
Schema generated from the models (issue 12, item 7)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, SCENARIOS
from mpsim._toml import tomllib
from mpsim.cli import app
from typer.testing import CliRunner

runner = CliRunner()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_point_only_inside_the_project(path):
    text = path.read_text()
    assert "../shared" not in text
    assert not re.search(r"(?<![\w/.-])specs/", text), re.search(r".{40}specs/.{20}", text)
    assert "ARCHITECTURE.md" not in text and "SCENARIO-FORMAT.md" not in text


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_in_docs_resolve(path):
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
        assert (path.parent / target).exists(), f"{path.name}: {target}"


def test_one_scenario_reference_covers_contract_and_extensions():
    text = (ROOT / "docs" / "scenario-reference.md").read_text()
    for heading in ("[simulation]", "[[node]]", "[[link]]", "[[flow]]", "[record]", "Run summary", "--set"):
        assert heading in text, heading
    assert "scenario-extensions.md" in text
    assert "mpsim schema" in text


def schema() -> dict:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_schema_is_a_json_schema_of_scenario_files():
    doc = schema()
    assert doc["$schema"].startswith("https://json-schema.org/")
    assert {"simulation", "node", "link", "flow", "record"} <= set(doc["properties"])
    link = doc["$defs"]["Link"]["properties"]
    # Quantities are written with units in files: strings (or plain numbers).
    assert {"type": "string"} in link["bandwidth"]["anyOf"]
    assert "jitter" in link


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.stem)
def test_schema_accepts_every_shipped_scenario(path):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(tomllib.loads(path.read_text()), schema())


def test_schema_refuses_an_unknown_key():
    jsonschema = pytest.importorskip("jsonschema")
    data = tomllib.loads((SCENARIOS / "dumbbell.toml").read_text())
    data["link"][0]["bandwith"] = "1Mbps"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema())
