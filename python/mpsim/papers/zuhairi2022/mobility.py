"""Generate the zuhairi2022 scenario library: mobility traces and the four scenarios.

Run once (the output ships beside this file; rerunning rewrites the same bytes):

    python python/mpsim/papers/zuhairi2022/mobility.py [--out DIR]

Everything random here comes from `numpy.random.RandomState([SEED, k])` for
realization k, so the shipped files are reproducible from the seed (NumPy
keeps RandomState's streams fixed across versions; a Generator's may change). Every parameter is a named
constant below; docs/reproductions/zuhairi2022.md gives each one's source.

Models:

- WiFi mobility: the laptop walks a random-waypoint path (Camp, Boleng and
  Davies, "A survey of mobility models for ad hoc network research", WCMC
  2002; speeds bounded away from zero as Yoon, Liu and Noble, "Random
  waypoint considered harmful", INFOCOM 2003, advise) around an access point.
  Received power follows the log-distance path-loss model with log-normal
  shadowing (Rappaport, "Wireless Communications", 2nd ed., section 4.9),
  the shadowing correlated along the walk as Gudmundson ("Correlation model
  for shadow fading in mobile radio systems", Electronics Letters 1991).
  The 802.11n rate adaptation picks the MCS with the largest expected
  throughput; each MCS's frame error rate is 10 % at the standard's minimum
  receiver sensitivity (IEEE 802.11-2016, Table 19-23, 20 MHz, one spatial
  stream) and falls one decade per `PER_DB_PER_DECADE` dB above it. A frame
  is tried at most `RETRY_LIMIT` times (dot11ShortRetryLimit), so the loss
  IP sees is PER^RETRY_LIMIT, and retries take airtime from the capacity.
- 3G capacity: the cell's share for this terminal varies with the load of
  the cell, modelled as a log-normal AR(1) (Gauss-Markov) process in time.
  Walking a few tens of metres changes the distance to a base station
  hundreds of metres away by a few per cent (a fraction of a dB), so the
  walk does not enter the 3G model.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

SEED = 2022
#: Walks and 3G traces shipped: run seed k uses realization k (cycling past the last).
REALIZATIONS = 10
TRACE_S = 1400  # the full runs' simulation.duration: steps at 0 .. TRACE_S - 1 s
STEP_S = 1.0  # one rate decision per second (ifstat's sampling interval)

# --- the walk (random waypoint in a rectangle, the access point inside it)
AREA_M = (60.0, 40.0)
AP_M = (30.0, 20.0)
SPEED_MPS = (0.5, 1.5)  # pedestrian walking speeds
PAUSE_S = (0.0, 10.0)
STATIC_DISTANCE_M = 5.0  # scenarios 1 and 2: "signals excellent, laptop static"

# --- radio (2.4 GHz 802.11n, 20 MHz, one spatial stream, long guard interval)
TX_POWER_DBM = 20.0  # EIRP limit of 2.4 GHz WLANs (ETSI EN 300 328), the AP's rating
PATH_LOSS_1M_DB = 40.05  # free space at 1 m, 2.437 GHz: 20 log10(4 pi / lambda)
PATH_LOSS_EXPONENT = 4.0  # obstructed in building: 4 to 6 (Rappaport, Table 4.2)
SHADOW_SIGMA_DB = 6.0
SHADOW_DECORRELATION_M = 3.0
MCS_RATE_MBPS = (6.5, 13.0, 19.5, 26.0, 39.0, 52.0, 58.5, 65.0)
MCS_SENSITIVITY_DBM = (-82.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0, -64.0)
PER_AT_SENSITIVITY = 0.1
PER_DB_PER_DECADE = 2.0
RETRY_LIMIT = 7
MAC_EFFICIENCY = 0.6  # TCP payload over PHY rate with 802.11n aggregation
MIN_RATE_BPS = 100_000  # the link never reports zero: a trace rate must be positive

# --- 3G (HSPA) capacity
G3_MEAN_BPS = 4_000_000
G3_LOG_SIGMA = 0.3
G3_CORRELATION_S = 10.0
G3_RANGE_BPS = (500_000, 8_000_000)

RATE_QUANTUM_BPS = 100_000
LOSS_FLOOR = 1e-5


# ------------------------------------------------------------ walk


def random_waypoint(rng: np.random.RandomState, duration_s: float, step_s: float) -> np.ndarray:
    """Positions (x, y) in metres every `step_s` from 0 to `duration_s`."""
    times = np.arange(0.0, duration_s, step_s)
    here = np.array([rng.uniform(0, AREA_M[0]), rng.uniform(0, AREA_M[1])])
    legs: list[tuple[float, float, np.ndarray, np.ndarray]] = []  # (start, end, from, to)
    t = 0.0
    while t <= duration_s:
        there = np.array([rng.uniform(0, AREA_M[0]), rng.uniform(0, AREA_M[1])])
        speed = rng.uniform(*SPEED_MPS)
        travel = float(np.linalg.norm(there - here)) / speed
        legs.append((t, t + travel, here, there))
        t += travel
        pause = rng.uniform(*PAUSE_S)
        legs.append((t, t + pause, there, there))
        t += pause
        here = there
    positions = np.empty((len(times), 2))
    leg = 0
    for i, now in enumerate(times):
        while legs[leg][1] < now:
            leg += 1
        start, end, a, b = legs[leg]
        frac = 0.0 if end <= start else (now - start) / (end - start)
        positions[i] = a + (b - a) * frac
    return positions


def shadowing_db(rng: np.random.RandomState, positions: np.ndarray) -> np.ndarray:
    """Gudmundson's exponentially correlated log-normal shadowing along the walk."""
    moved = np.r_[0.0, np.linalg.norm(np.diff(positions, axis=0), axis=1)]
    out = np.empty(len(positions))
    out[0] = rng.normal(0.0, SHADOW_SIGMA_DB)
    for i in range(1, len(positions)):
        rho = math.exp(-moved[i] / SHADOW_DECORRELATION_M)
        out[i] = rho * out[i - 1] + math.sqrt(1 - rho * rho) * rng.normal(0.0, SHADOW_SIGMA_DB)
    return out


def received_power_dbm(distance_m: np.ndarray, shadow_db: np.ndarray) -> np.ndarray:
    d = np.maximum(distance_m, 1.0)
    return TX_POWER_DBM - (PATH_LOSS_1M_DB + 10 * PATH_LOSS_EXPONENT * np.log10(d)) - shadow_db


# ------------------------------------------------------------ 802.11n link


def frame_error_rate(power_dbm: float, sensitivity_dbm: float) -> float:
    return min(1.0, PER_AT_SENSITIVITY * 10 ** ((sensitivity_dbm - power_dbm) / PER_DB_PER_DECADE))


def wifi_link(power_dbm: float) -> tuple[int, float]:
    """(capacity bit/s, IP packet loss) at the MCS a throughput-maximising rate control picks."""
    best = (0.0, 1.0)
    for rate, sens in zip(MCS_RATE_MBPS, MCS_SENSITIVITY_DBM, strict=True):
        per = frame_error_rate(power_dbm, sens)
        goodput = MAC_EFFICIENCY * rate * 1e6 * (1 - per)
        if goodput > best[0]:
            best = (goodput, per)
    capacity, per = best
    loss = per**RETRY_LIMIT
    capacity_bps = max(MIN_RATE_BPS, int(round(capacity / RATE_QUANTUM_BPS)) * RATE_QUANTUM_BPS)
    return capacity_bps, (0.0 if loss < LOSS_FLOOR else float(f"{loss:.2g}"))


def static_wifi() -> tuple[int, float]:
    """The static scenarios: STATIC_DISTANCE_M from the access point, median shadowing."""
    return wifi_link(float(received_power_dbm(np.array([STATIC_DISTANCE_M]), np.zeros(1))[0]))


def moving_wifi(rng: np.random.RandomState) -> tuple[np.ndarray, list[tuple[int, float]]]:
    positions = random_waypoint(rng, TRACE_S, STEP_S)
    distance = np.linalg.norm(positions - np.array(AP_M), axis=1)
    power = received_power_dbm(distance, shadowing_db(rng, positions))
    return distance, [wifi_link(float(p)) for p in power]


# ------------------------------------------------------------ 3G


def g3_capacity(rng: np.random.RandomState) -> list[int]:
    """Log-normal AR(1) capacity with mean G3_MEAN_BPS, one value per step."""
    rho = math.exp(-STEP_S / G3_CORRELATION_S)
    x = rng.normal(0.0, G3_LOG_SIGMA)
    rates = []
    for _ in np.arange(0.0, TRACE_S, STEP_S):
        rate = G3_MEAN_BPS * math.exp(x - G3_LOG_SIGMA**2 / 2)
        rate = min(max(rate, G3_RANGE_BPS[0]), G3_RANGE_BPS[1])
        rates.append(int(round(rate / RATE_QUANTUM_BPS)) * RATE_QUANTUM_BPS)
        x = rho * x + math.sqrt(1 - rho * rho) * rng.normal(0.0, G3_LOG_SIGMA)
    return rates


# ------------------------------------------------------------ files


def _changes(values: list) -> list[tuple[float, object]]:
    """(time, value) at the start and wherever the value changes."""
    out = []
    for i, v in enumerate(values):
        if i == 0 or v != values[i - 1]:
            out.append((i * STEP_S, v))
    return out


def trace_csv(rates: list[int], what: str, seed: int) -> str:
    lines = [f"# {what}", f"# generated by mobility.py (seed {seed}); do not edit", "time,rate"]
    lines += [f"{t:g}s,{r // 1000}kbps" for t, r in _changes(rates)]
    return "\n".join(lines) + "\n"


def loss_events(losses: list[float]) -> str:
    blocks = []
    for t, loss in _changes(losses):
        if t == 0:
            continue  # the link's own `loss` key holds the value at 0 s
        blocks.append(f'[[link.events]]\nat = "{t:g}s"\nloss = {loss!r}\n')
    return "\n".join(blocks)


SCENARIOS = {
    1: ("s1-static.toml", "static, no competing traffic", False, 0),
    2: ("s2-static-video.toml", "static, one competing YouTube-like video", False, 1),
    3: ("s3-moving.toml", "moving, no competing traffic", True, 0),
    4: ("s4-moving-video.toml", "moving, two competing YouTube-like videos", True, 2),
}


def scenario_toml(number: int, wifi_static: tuple[int, float], wifi_loss0: float, wifi_events: str, seed: int) -> str:
    _file, _what, moving, videos = SCENARIOS[number]
    wifi = _moving_wifi_toml(wifi_loss0, wifi_events) if moving else _static_wifi_toml(wifi_static)
    return (
        _head_toml(number, seed, videos)
        + wifi
        + FIXED_LINKS_TOML
        + "".join(_phone_link_toml(phone, wifi_static) for phone in range(1, videos + 1))
        + DOWNLOAD_TOML
        + "".join(_video_toml(phone) for phone in range(1, videos + 1))
        + RECORD_TOML
    )


def _head_toml(number: int, seed: int, videos: int) -> str:
    _file, what, _moving, _videos = SCENARIOS[number]
    head = f"""# Zuhairi (2022), scenario {number}: {what}.
# Generated by mobility.py (seed {seed}); every number is an assumption written
# down with its source in docs/reproductions/zuhairi2022.md. Do not edit: change
# mobility.py and run it again.
#
#   laptop ==wifi== ap --adsl (4/0.5 Mbps)-- internet --wan-- server (multipath-tcp.org)
#          ==3g (HSPA, trace)== rnc --core--/            \\--cdn-- youtube
#   phone1, phone2 --wifi-- ap (the competing videos)

format = 1
name = "zuhairi2022-s{number}"
description = "Zuhairi (2022) scenario {number}: {what}; a 121 MB download over WiFi+ADSL and 3G"

[simulation]
duration = "1400s"
seed = 1
sample_interval = "1s"
start_jitter = "50ms"

[[node]]
name = "laptop"

[[node]]
name = "ap"
kind = "router"

[[node]]
name = "rnc"
kind = "router"

[[node]]
name = "internet"
kind = "router"

[[node]]
name = "server"

[[node]]
name = "youtube"
"""
    return head + "".join(f'\n[[node]]\nname = "phone{phone}"\n' for phone in range(1, videos + 1))


def _moving_wifi_toml(wifi_loss0: float, wifi_events: str) -> str:
    return f"""
[[link]]
name = "wifi"
between = ["laptop", "ap"]
# The walk (realization 1): capacity and loss of 802.11n from the laptop's
# received power. The reproduction gives run seed k realization k.
bandwidth_trace = "traces/wifi-walk-r01.csv"
delay = "1ms"
queue = "100pkt"
jitter = "1ms"
loss = {wifi_loss0!r}

{wifi_events}"""


def _static_wifi_toml(wifi_static: tuple[int, float]) -> str:
    return f"""
[[link]]
name = "wifi"
between = ["laptop", "ap"]
# Static, {STATIC_DISTANCE_M:g} m from the access point.
bandwidth = "{wifi_static[0] // 1000}kbps"
delay = "1ms"
queue = "100pkt"
jitter = "1ms"
loss = {wifi_static[1]!r}
"""


FIXED_LINKS_TOML = """
[[link]]
name = "adsl"
between = ["ap", "internet"]
bandwidth = "4Mbps"
delay = "10ms"
queue = "100pkt"
[link.a_to_b]
# Upstream (ap to internet): the ADSL's 512 kbps.
bandwidth = "512kbps"

[[link]]
name = "3g"
between = ["laptop", "rnc"]
bandwidth = "1Mbps"
delay = "40ms"
queue = "400pkt"
jitter = "2ms"
[link.b_to_a]
# Downlink: HSPA capacity varying with the cell's load (realization 1).
bandwidth_trace = "traces/3g-r01.csv"

[[link]]
name = "core"
between = ["rnc", "internet"]
bandwidth = "1Gbps"
delay = "5ms"

[[link]]
name = "wan"
between = ["internet", "server"]
bandwidth = "100Mbps"
delay = "30ms"

[[link]]
name = "cdn"
between = ["internet", "youtube"]
bandwidth = "1Gbps"
delay = "5ms"
"""


def _phone_link_toml(phone: int, wifi_static: tuple[int, float]) -> str:
    return f"""
[[link]]
name = "phone{phone}-wifi"
between = ["phone{phone}", "ap"]
bandwidth = "{wifi_static[0] // 1000}kbps"
delay = "1ms"
queue = "100pkt"
jitter = "1ms"
"""


DOWNLOAD_TOML = """
[[flow]]
name = "dl"
transport = "mptcp"
client = "laptop"
server = "server"
app = "download"
size = "121MB"
cc = "cubic"
cc_mode = "linux"
scheduler = "roundrobin"
path_manager = "fullmesh"
rcvbuf = "6MB"
"""


def _video_toml(phone: int) -> str:
    return f"""
[[flow]]
name = "video{phone}"
transport = "tcp"
client = "phone{phone}"
server = "youtube"
app = "video"
bitrate = "1.1Mbps"
chunk = "4s"
cc = "cubic"
cc_mode = "linux"
"""


RECORD_TOML = "\n[record]\ninterfaces = true\nsubflows = true\n"


def realization_name(what: str, number: int) -> str:
    """`traces/<what>-rNN.csv`: realization `number` (1-based) of a trace."""
    return f"traces/{what}-r{number:02d}.csv"


def loss_csv(losses: list[float], seed: int, number: int) -> str:
    lines = [
        "# IP packet loss of the walk's 802.11n link (after MAC retries), from the given time on",
        f"# generated by mobility.py (seed {seed}, realization {number}); do not edit",
        "time_s,loss",
    ]
    lines += [f"{t:g},{loss!r}" for t, loss in _changes(losses)]
    return "\n".join(lines) + "\n"


def generate(out: Path, seed: int = SEED, realizations: int = REALIZATIONS) -> list[Path]:
    """Write the traces and scenarios into `out`. Realization k (its walk and 3G
    trace) draws from `RandomState([seed, k])`; the scenario files hold
    realization 1, and the reproduction gives run seed k realization k.
    Another `seed` gives other walks, for sensitivity checks."""
    (out / "traces").mkdir(parents=True, exist_ok=True)
    written: dict[Path, str] = {}
    first: tuple[list[tuple[int, float]], np.ndarray] | None = None
    for number in range(1, realizations + 1):
        rng = np.random.RandomState([seed, number])
        distance, walk = moving_wifi(rng)
        g3 = g3_capacity(rng)
        tag = f"realization {number}"
        written[out / realization_name("wifi-walk", number)] = trace_csv(
            [r for r, _ in walk], f"802.11n capacity of the random-waypoint walk, {tag} (scenarios 3 and 4)", seed
        )
        written[out / realization_name("wifi-loss", number)] = loss_csv([loss for _, loss in walk], seed, number)
        written[out / realization_name("3g", number)] = trace_csv(
            g3, f"HSPA capacity, log-normal AR(1) cell-load variation, {tag} (all scenarios)", seed
        )
        if first is None:
            first = (walk, distance)
    assert first is not None
    walk, distance = first
    written[out / "traces" / "wifi-walk-distance-r01.csv"] = (
        "# distance to the access point along walk 1, metres\ntime_s,distance_m\n"
        + "".join(f"{i * STEP_S:g},{d:.2f}\n" for i, d in enumerate(distance))
    )
    events = loss_events([loss for _, loss in walk])
    for number, (file, *_rest) in SCENARIOS.items():
        written[out / file] = scenario_toml(number, static_wifi(), walk[0][1], events, seed)
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return sorted(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    for path in generate(args.out, args.seed):
        print(path)


if __name__ == "__main__":
    main()
