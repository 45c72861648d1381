"""mpsim: a packet-level multipath transport simulator (Rust core, Python front end).

    import mpsim
    results = mpsim.run("scenarios/dumbbell.toml", set={"simulation.duration": "10s"})
    print(results.summary["flows"])

The public API: `load_scenario`, `Network` (a builder), `run`, `Results`,
and the exceptions `MpsimError` and `ScenarioError`.
"""

from __future__ import annotations

from ._version import __version__
from .errors import (
    EngineError,
    EngineMissingError,
    MpsimError,
    ResultsError,
    ScenarioError,
)
from .net import Network
from .results import Results
from .runner import run
from .scenario import Scenario, load_scenario

__all__ = [
    "EngineError",
    "EngineMissingError",
    "MpsimError",
    "Network",
    "Results",
    "ResultsError",
    "Scenario",
    "ScenarioError",
    "__version__",
    "load_scenario",
    "run",
]
