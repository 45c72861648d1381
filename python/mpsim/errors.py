"""Exception classes of the Python front end.

Every error a user can cause with a scenario is a ScenarioError whose one-line
text says where: `FILE:LINE: KEY: message`, as a compiler would.
"""

from __future__ import annotations

from pathlib import Path


class MpsimError(Exception):
    """Base class of every error raised on purpose by mpsim."""


class ScenarioError(MpsimError, ValueError):
    """A scenario that cannot be read, validated or built.

    `file` is the scenario file (or a description of the source, such as a
    builder call), `line` the 1-based line when known, `key` the key path
    (`flow[2].cc`) or override (`--set flow.x.cc`) at fault.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        # One line, always: the CLI prints str(self) as its only output.
        self.message = " ".join(str(message).split())
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [p for p in (where, self.key, self.message) if p]
        return ": ".join(parts)

    def __reduce__(self):  # keep pickling (process pools in sweeps) working
        return (_rebuild_scenario_error, (type(self), self.message, self.file, self.line, self.key))


def _rebuild_scenario_error(cls, message, file, line, key):
    return cls(message, file=file, line=line, key=key)


class EngineError(ScenarioError):
    """The engine refused a validated scenario. The binding raises one of
    the subclasses below; `mpsim.run` adds the scenario's file to it."""


class EngineSpecError(EngineError):
    """The engine spec document is not what the engine reads (a front-end bug
    or a hand-written spec): malformed JSON, unknown or missing keys."""


class EngineBuildError(EngineError):
    """The engine could not build the world from the spec (an unknown node,
    an unusable interface, a parameter out of range)."""


class UnsupportedError(EngineBuildError):
    """A part of the scenario contract this version does not simulate
    (transport "cmt", SDN controllers)."""


class NoRouteError(EngineBuildError):
    """A flow between hosts that no path through switches and routers connects."""


class EngineMissingError(MpsimError, ImportError):
    """The compiled engine `mpsim._core` is not available."""


class ResultsError(MpsimError, ValueError):
    """A run folder or trace table that cannot be read or written."""


class ScenarioWarning(UserWarning):
    """A scenario value that is valid but probably not meant (`bandwidth = 4`
    is 4 bit/s). The text names `FILE:LINE: KEY` like a ScenarioError's."""
