"""Quantities with units: good values, bad values, exact conversion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mpsim import units
from mpsim.units import UnitError


@pytest.mark.parametrize(
    ("text", "ps"),
    [
        ("60s", 60 * 10**12), ("45ms", 45 * 10**9), ("250us", 250 * 10**6), ("10ns", 10_000),
        ("7ps", 7), ("1.5s", 1_500_000_000_000), (" 2 ms ", 2 * 10**9), (60, 60 * 10**12),
        (0.25, 250 * 10**9), ("0s", 0), ("1e-3s", 10**9), ("0.1", 10**11),
    ],
)  # fmt: skip
def test_time_in_picoseconds(text, ps):
    assert units.parse_time(text) == ps


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Mbps", 10**7), ("0.2Mbps", 200_000), ("1Gbps", 10**9), ("500kbps", 500_000),
        ("4bps", 4), (1000, 1000), (2.5e6, 2_500_000), ("1.5Gbps", 1_500_000_000),
    ],
)  # fmt: skip
def test_rate_in_bits_per_second(text, bps):
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1500B", 1500), ("64KB", 64_000), ("64KiB", 65_536), ("5MB", 5_000_000), ("1GB", 10**9),
        ("2MiB", 2 * 2**20), ("1GiB", 2**30), (1448, 1448), ("1.5KB", 1500), ("0B", 0),
    ],
)  # fmt: skip
def test_size_in_bytes(text, size):
    assert units.parse_size(text) == size


def test_queue_in_packets_or_bytes():
    assert units.parse_queue("100pkt") == {"packets": 100}
    assert units.parse_queue("64KB") == {"bytes": 64_000}
    assert units.parse_queue(3000) == {"bytes": 3000}


@pytest.mark.parametrize("p", [0, 0.0, 0.5, 1, 1.0, "1e-3", "0.01"])
def test_probability_in_range(p):
    assert units.parse_probability(p) == float(p)


@pytest.mark.parametrize(
    ("parse", "value", "needle"),
    [
        (units.parse_rate, "10Mbs", "bad unit 'Mbs' in '10Mbs': expected bps, kbps, Mbps or Gbps"),
        (units.parse_rate, "10Kbps", "bad unit 'Kbps'"),
        (units.parse_rate, "10mbps", "bad unit 'mbps'"),
        (units.parse_rate, "-1Mbps", "rate must be positive"),
        (units.parse_rate, 0, "rate must be positive"),
        (units.parse_rate, "0bps", "rate must be positive"),
        (units.parse_time, "5 minutes", "bad unit 'minutes'"),
        (units.parse_time, "-1s", "must not be negative"),
        (units.parse_time, "fast", "cannot read 'fast' as a time"),
        (units.parse_time, True, "expected a time"),
        (units.parse_time, float("nan"), "finite"),
        (units.parse_size, "10kb", "bad unit 'kb'"),
        (units.parse_size, "0.5B", "whole number of bytes"),
        (units.parse_size, [1], "expected a size"),
        (units.parse_queue, "0pkt", "positive"),
        (units.parse_queue, "1.5pkt", "whole number of packets"),
        (units.parse_queue, "10pkts", "bad unit 'pkts'"),
        (units.parse_time, "1e8s", "time '1e8s' is too large"),
        (units.parse_rate, "1e20Gbps", "too large"),
        (units.parse_size, 2**63, "too large"),
        (units.parse_queue, "5000000000pkt", "too large: at most 4294967295 packets"),
        (units.parse_probability, 1.5, "in [0, 1]"),
        (units.parse_probability, -0.1, "in [0, 1]"),
        (units.parse_probability, "often", "probability"),
    ],
)
def test_bad_quantities_say_why(parse, value, needle):
    with pytest.raises(UnitError, match=None) as info:
        parse(value)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


@given(st.integers(min_value=0, max_value=10**9))
def test_integer_milliseconds_are_exact(n):
    assert units.parse_time(f"{n}ms") == n * 10**9


@given(st.integers(min_value=1, max_value=10**12))
def test_rate_round_trips_through_format(bps):
    assert units.parse_rate(units.format_rate(bps)) == bps


@given(st.integers(min_value=0, max_value=10**18))
def test_time_round_trips_through_format(ps):
    assert units.parse_time(units.format_time(ps)) == ps
