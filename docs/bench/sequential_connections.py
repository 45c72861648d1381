"""Writes the scenario of docs/performance.md, "Many sequential connections".

One host pair (two 100 Mbit/s, 5 ms links through a router) and one `http`
flow of 10 KB requests, each on a new connection, the next `gap` after one
completes (a request takes about 41 ms); the run lasts until the last
connection's TIME_WAIT (60 s) is over, or `duration`.
Recording `off` samples neither interfaces nor subflows.

    python docs/bench/sequential_connections.py mptcp 20000 100ms off > /tmp/s.toml
    /usr/bin/time -f "%M KiB" mpsim run /tmp/s.toml --summary /tmp/s.json -q
    python docs/bench/sequential_connections.py mptcp 3000 50ms on 400s > /tmp/r.toml
    /usr/bin/time -f "%M KiB" mpsim run /tmp/r.toml --out /tmp/r -q
"""

import sys

UNITS_S = {"ms": 1e-3, "s": 1.0}


def seconds(text: str) -> float:
    for unit in ("ms", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * UNITS_S[unit]
    return float(text)


def scenario(transport: str, count: int, gap: str, recording: bool, duration: str | None = None) -> str:
    # Each request takes about 41 ms: 100 ms per request and a minute after.
    duration_s = seconds(duration) if duration else count * (seconds(gap) + 0.1) + 70
    on = "true" if recording else "false"
    return f"""format = 1
name = "sequential-{transport}-{count}"

[simulation]
duration = "{duration_s:g}s"
seed = 1
sample_interval = "1s"

[[node]]
name = "client"

[[node]]
name = "router"
kind = "router"

[[node]]
name = "server"

[[link]]
name = "c"
between = ["client", "router"]
bandwidth = "100Mbps"
delay = "5ms"

[[link]]
name = "s"
between = ["router", "server"]
bandwidth = "100Mbps"
delay = "5ms"

[[flow]]
name = "web"
transport = "{transport}"
client = "client"
server = "server"
app = "http"
sizes = ["10KB"]
repeat = {count}
gap = "{gap}"
new_connection = true
cc = "reno"

[record]
interfaces = {on}
subflows = {on}
"""


if __name__ == "__main__":
    transport, count, gap, recording = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "on"
    duration = sys.argv[5] if len(sys.argv) > 5 else None
    sys.stdout.write(scenario(transport, count, gap, recording, duration))
