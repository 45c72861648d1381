"""The names and defaults a scenario may use, as the engine defines them.

The engine (crates/mpsim/src/vocabulary.rs) gathers them from the modules
that parse them; the scenario models and checks read them from here, so
that a controller, scheduler or default exists in one place only.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from . import _core

VOCABULARY: dict[str, Any] = json.loads(_core.vocabulary_json())


def names(key: str) -> tuple[str, ...]:
    """The names listed under `key` (e.g. "schedulers"), in the engine's order."""
    return tuple(VOCABULARY[key])


def literal(key: str) -> Any:
    """A `Literal[...]` type of the names under `key`, for pydantic fields."""
    return Literal[names(key)]  # type: ignore[valid-type]
