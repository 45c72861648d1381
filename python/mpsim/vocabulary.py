"""The names and defaults a scenario may use, as the engine defines them.

The engine (crates/mpsim/src/vocabulary.rs) gathers them from the modules
that parse them and writes them to vocabulary.json beside this module (a
test of the engine fails when the file differs); the scenario models and
checks read them from here, so that a controller, scheduler or default
exists in one place only, and scenarios validate without the compiled
engine.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Literal

VOCABULARY: dict[str, Any] = json.loads(resources.files(__package__).joinpath("vocabulary.json").read_text("utf-8"))


def names(key: str) -> tuple[str, ...]:
    """The names listed under `key` (e.g. "schedulers"), in the engine's order."""
    return tuple(VOCABULARY[key])


def literal(key: str) -> Any:
    """A `Literal[...]` type of the names under `key`, for pydantic fields."""
    return Literal[names(key)]  # type: ignore[valid-type]
