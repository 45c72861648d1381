"""mpsim: a packet-level multipath transport simulator (Rust core, Python front end).

    import mpsim
    results = mpsim.run("scenarios/dumbbell.toml", set={"simulation.duration": "10s"})
    print(results.summary["flows"])

    study = mpsim.sweep("scenarios/wifi-3g.toml", grid={"flow.ftp.cc": ["lia", "olia"]}, seeds=5)
    print(study.ci("goodput_bps"))

The public API: `load_scenario`, `Network` (a builder), `run`, `Results`,
`sweep` and its `Study` (tables over grid points and seeds, intervals, figures),
and the exceptions under `MpsimError`: `ScenarioError` (bad input, naming
file, line and key), `EngineError` and its subclasses (`EngineSpecError`,
`EngineBuildError`, `UnsupportedError`, `NoRouteError`), `ResultsError`,
`EngineMissingError`; `ScenarioWarning` for valid but doubtful values.
"""

from __future__ import annotations

from ._version import __version__
from .errors import (
    EngineBuildError,
    EngineError,
    EngineMissingError,
    EngineSpecError,
    MpsimError,
    NoRouteError,
    ResultsError,
    ScenarioError,
    ScenarioWarning,
    UnsupportedError,
)
from .net import Network
from .results import Results
from .runner import run
from .scenario import Scenario, load_scenario
from .sweeps import sweep

__all__ = [
    "EngineBuildError",
    "EngineError",
    "EngineMissingError",
    "EngineSpecError",
    "MpsimError",
    "Network",
    "NoRouteError",
    "Results",
    "ResultsError",
    "Scenario",
    "ScenarioError",
    "Study",
    "ScenarioWarning",
    "UnsupportedError",
    "__version__",
    "load_scenario",
    "run",
    "sweep",
]


def __getattr__(name: str) -> object:
    # Study needs pandas; importing mpsim must not load it (start-up cost).
    if name == "Study":
        from .study import Study

        return Study
    raise AttributeError(f"module 'mpsim' has no attribute {name!r}")
