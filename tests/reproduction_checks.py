"""Checks every reproduction's tests make of its output (the contract's
"Reproduction output": claims.json, claims.md, resuming)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mpsim import reproduce as rp
from mpsim import sweeps

CLAIM_FIELDS = {"id", "claim", "paper", "ours", "agrees", "explanation"}


def read_claims(out: Path, claims: list[rp.Claim], minimum: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """claims.json's rows, checked: one per claim returned, in order, ids
    unique and including `minimum`, each with exactly the contract's fields,
    `agrees` true, false or null, and text in every other field."""
    rows = json.loads((out / rp.CLAIMS_JSON).read_text())
    ids = [row["id"] for row in rows]
    assert ids == [c.id for c in claims]
    assert len(set(ids)) == len(ids)
    assert minimum <= set(ids), minimum - set(ids)
    for row in rows:
        assert set(row) == CLAIM_FIELDS, row["id"]
        assert row["agrees"] in (True, False, None), row["id"]
        assert row["claim"] and row["paper"] and row["ours"] and row["explanation"], row["id"]
    return rows


def assert_rerun_resumes(paper: str, out: Path, claims: list[rp.Claim], monkeypatch: Any) -> None:
    """Reproducing again into the same folder runs nothing and gives the same claims."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a finished run was started again")

    monkeypatch.setattr(sweeps, "run_task", refuse)
    again = rp.reproduce(paper, out, quick=True, jobs=1)
    assert [(c.id, c.ours, c.agrees) for c in again] == [(c.id, c.ours, c.agrees) for c in claims]
