"""Reading the small column files a scenario names (capacity traces, size
CDFs): comments after `#`, blank lines, columns split by commas (or by
spaces when a line has none), and an optional header row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def read_text(path: Path, shown: str, what: str, error: type[Exception]) -> str:
    """The file's text; `error` names it (`what 'shown'`) when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} '{shown}' not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {what} '{shown}': {exc}") from None


def rows(text: str) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number, fields) of every line that has any."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            sep = "," if "," in line else None
            yield lineno, [f.strip() for f in line.split(sep)]


def looks_like_header(fields: list[str]) -> bool:
    """A first row such as `time,rate`: no field starts like a number."""
    return all(not f[:1].isdigit() and not f.startswith((".", "-", "+")) for f in fields)
