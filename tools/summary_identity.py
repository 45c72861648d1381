"""Checks that an engine change leaves TCP and MPTCP results untouched.

`save DIR` runs every scenario file under scenarios/ and every bench case
(quick duration) and writes, per run, its summary (without the wall-clock
`wall_time_s`) and a digest of each trace column; `compare DIR` runs them
again and lists every run whose output differs from the saved one.

    python tools/summary_identity.py save /tmp/before
    (change the engine, rebuild)
    python tools/summary_identity.py compare /tmp/before
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from mpsim.bench import CASES, QUICK_DURATION
from mpsim.runner import run

ROOT = Path(__file__).resolve().parent.parent


def runs() -> list[tuple[str, object]]:
    # scenarios/papers is a link into the package: rglob does not follow it.
    roots = [ROOT / "scenarios", ROOT / "scenarios" / "papers"]
    files = sorted({p for r in roots for p in r.rglob("*") if p.suffix in (".toml", ".yaml", ".yml")})
    out: list[tuple[str, object]] = [(str(p.relative_to(ROOT)), p) for p in files]
    out += [(f"bench/{c.name}", c.build(QUICK_DURATION).to_scenario()) for c in CASES]
    return out


def fingerprint(target: object) -> str:
    results = run(target)
    summary = dict(results.summary)
    summary.pop("wall_time_s", None)
    summary.pop("mpsim_version", None)
    digests = {}
    for name in ("interfaces", "flows", "subflows", "connections", "requests"):
        frame = results.table(name)
        for column in frame.columns:
            text = frame[column].to_csv(index=False)
            digests[f"{name}.{column}"] = hashlib.sha256(text.encode()).hexdigest()
    return json.dumps({"summary": summary, "traces": digests}, sort_keys=True, indent=1)


def same(before: dict, after: dict) -> bool:
    """The summary and every column saved before are unchanged; columns a
    change adds are new output, not a difference."""
    columns = before["traces"]
    return before["summary"] == after["summary"] and all(after["traces"].get(k) == v for k, v in columns.items())


def main(argv: list[str]) -> int:
    mode, folder = argv[1], Path(argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    differ = []
    for name, target in runs():
        path = folder / (name.replace("/", "__") + ".json")
        text = fingerprint(target)
        if mode == "save":
            path.write_text(text)
            print("saved", name, flush=True)
        elif not path.exists():
            print("new", name, flush=True)  # no run to compare with
        elif not same(json.loads(path.read_text()), json.loads(text)):
            differ.append(name)
            (folder / (path.name + ".new")).write_text(text)
            print("DIFFERS", name, flush=True)
        else:
            print("same", name, flush=True)
    if differ:
        print(f"{len(differ)} runs differ: {', '.join(differ)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
