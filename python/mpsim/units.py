"""Quantities with units: scenario strings in, integers in base units out.

Scenario files write quantities as strings with units ("10Mbps", "45ms");
the engine wants integers in base units (bit/s, picoseconds, bytes). The
conversion happens once, here, with exact decimal arithmetic so "0.2Mbps"
is 200000 bit/s and not 199999.99.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

PS_PER_S = 10**12
# Largest time, rate or size a scenario may give: the engine keeps them in
# 64-bit integers and adds times together (2**62 ps is about 53 days).
MAX_QUANTITY = 2**62
# Largest queue in packets (a 32-bit count in the engine).
MAX_QUEUE_PACKETS = 2**32 - 1

_TIME_UNITS = {"s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}
_RATE_UNITS = {"bps": 1, "kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9}
_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}
_QUANTITY = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$"
)


class UnitError(ValueError):
    """A quantity that cannot be read: bad number, bad unit, out of range."""


def _split(value: object, what: str) -> tuple[Decimal, str | None]:
    """Split a quantity into (number, unit); unit is None for bare numbers."""
    # bool is an int subclass; `true` is never a quantity.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnitError(f"expected a {what}, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise UnitError(f"expected a finite {what}, got {value!r}")
        # str() of a float is its shortest round-trip form: 0.1 -> "0.1".
        return Decimal(str(value)), None
    match = _QUANTITY.match(value)
    if match is None:
        raise UnitError(f"cannot read {value!r} as a {what}")
    try:
        number = Decimal(match["num"])
    except InvalidOperation as exc:  # the regex makes this unreachable in practice
        raise UnitError(f"cannot read {value!r} as a {what}") from exc
    return number, (match["unit"] or None)


def _scale(value: object, what: str, units: dict[str, int], base: str, expected: str) -> Decimal:
    """The quantity in base units, as an exact Decimal."""
    number, unit = _split(value, what)
    if unit is None:
        unit = base
    if unit not in units:
        raise UnitError(f"bad unit {unit!r} in {value!r}: expected {expected}")
    return number * units[unit]


def _to_int(amount: Decimal, value: object, what: str) -> int:
    n = int(amount.to_integral_value(rounding=ROUND_HALF_EVEN))
    if n > MAX_QUANTITY:
        raise UnitError(f"{what} {value!r} is too large")
    return n


def parse_time(value: object) -> int:
    """A time ("60s", "45ms", "250us", "10ns"; a number is seconds) in picoseconds."""
    amount = _scale(value, "time", _TIME_UNITS, "s", "s, ms, us, ns or ps")
    if amount < 0:
        raise UnitError(f"time must not be negative, got {value!r}")
    return _to_int(amount, value, "time")


def parse_rate(value: object) -> int:
    """A rate ("10Mbps", "500kbps"; a number is bit/s) in bit/s; must be positive."""
    amount = _scale(value, "rate", _RATE_UNITS, "bps", "bps, kbps, Mbps or Gbps")
    bps = _to_int(amount, value, "rate")
    if amount <= 0 or bps <= 0:
        raise UnitError(f"rate must be positive, got {value!r}")
    return bps


def parse_size(value: object) -> int:
    """A size ("1500B", "64KB" = 64000, "64KiB" = 65536; a number is bytes) in bytes."""
    amount = _scale(value, "size", _SIZE_UNITS, "B", "B, KB, MB, GB, KiB, MiB or GiB")
    if amount < 0:
        raise UnitError(f"size must not be negative, got {value!r}")
    if amount != amount.to_integral_value():
        raise UnitError(f"size must be a whole number of bytes, got {value!r}")
    return _to_int(amount, value, "size")


def parse_queue(value: object) -> dict[str, int]:
    """A queue limit: "100pkt" -> {"packets": 100}, a size -> {"bytes": n}."""
    number, unit = _split(value, "queue size")
    if unit == "pkt":
        if number != number.to_integral_value() or number <= 0:
            raise UnitError(f"queue must be a positive whole number of packets, got {value!r}")
        if number > MAX_QUEUE_PACKETS:
            raise UnitError(f"queue {value!r} is too large: at most {MAX_QUEUE_PACKETS} packets")
        return {"packets": int(number)}
    try:
        size = parse_size(value)
    except UnitError as exc:
        if unit is not None and unit not in _SIZE_UNITS:
            raise UnitError(
                f"bad unit {unit!r} in {value!r}: expected pkt, B, KB, MB, GB, KiB, MiB or GiB"
            ) from exc
        raise
    if size <= 0:
        raise UnitError(f"queue must be positive, got {value!r}")
    return {"bytes": size}


def parse_probability(value: object) -> float:
    """A probability: a number in [0, 1] (numeric strings accepted, for YAML's 1e-3)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UnitError(f"expected a probability in [0, 1], got {value!r}")
    try:
        p = float(value)
    except ValueError as exc:
        raise UnitError(f"expected a probability in [0, 1], got {value!r}") from exc
    if not 0.0 <= p <= 1.0:
        raise UnitError(f"probability must be in [0, 1], got {value!r}")
    return p


def format_time(ps: int) -> str:
    """A picosecond count as the shortest exact unit string ("30s", "250us")."""
    for unit in ("s", "ms", "us", "ns"):
        if ps % _TIME_UNITS[unit] == 0:
            return f"{ps // _TIME_UNITS[unit]}{unit}"
    return f"{ps}ps"


def format_rate(bps: int) -> str:
    """A bit/s count as the shortest exact unit string ("10Mbps")."""
    for unit in ("Gbps", "Mbps", "kbps"):
        if bps % _RATE_UNITS[unit] == 0:
            return f"{bps // _RATE_UNITS[unit]}{unit}"
    return f"{bps}bps"
