"""Start-up cost: the heavy libraries load only where used (issue 12, item 8)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import SCENARIOS

HEAVY = ("pandas", "pyarrow", "matplotlib")
CHECK = "import sys; print(' '.join(m for m in {heavy!r} if m in sys.modules))"


def loaded_after(code: str) -> set[str]:
    probe = code + "\n" + CHECK.format(heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_importing_mpsim_and_its_cli_loads_no_heavy_library():
    assert loaded_after("import mpsim, mpsim.cli") == set()


def test_a_summary_only_run_loads_no_heavy_library(tmp_path):
    pytest.importorskip("mpsim._core")
    code = (
        "import sys\nfrom mpsim.cli import app\n"
        f"try:\n    app(['run', {str(SCENARIOS / 'dumbbell.toml')!r}, '--set', 'simulation.duration=2s',"
        f" '--summary', {str(tmp_path / 's.json')!r}, '-q'])\nexcept SystemExit as exc:\n"
        "    assert not exc.code, exc.code"
    )
    assert loaded_after(code) == set()
    assert (tmp_path / "s.json").exists()


def test_results_tables_still_load_pandas_when_asked():
    pytest.importorskip("mpsim._core")
    assert "pandas" in loaded_after(
        "import mpsim\nr = mpsim.run('scenarios/dumbbell.toml', set={'simulation.duration': '2s'})\nr.flows"
    )
