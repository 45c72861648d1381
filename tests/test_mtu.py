"""The `mtu` key of a link: validation with file, line and key, the engine spec, and
segments that fit it (the payload is what the MTU leaves; `mss` caps it)."""

from __future__ import annotations

import mpsim
import pytest
from conftest import MINIMAL, write
from mpsim import ScenarioError, load_scenario

SWITCHED = MINIMAL.replace(
    '[[link]]\nname = "ab"\nbetween = ["a", "b"]',
    '[[node]]\nname = "s1"\nkind = "switch"\n\n[[node]]\nname = "s2"\nkind = "switch"\n\n'
    '[[link]]\nname = "as1"\nbetween = ["a", "s1"]\nbandwidth = "10Mbps"\n\n'
    '[[link]]\nname = "s2b"\nbetween = ["s2", "b"]\nbandwidth = "10Mbps"\n\n'
    '[[link]]\nname = "ab"\nbetween = ["s1", "s2"]',
)


def with_mtu(value: str, text: str = MINIMAL) -> str:
    return text.replace('delay = "5ms"', f'delay = "5ms"\nmtu = {value}', 1)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"575B"', "mtu must be 576 to 65535 bytes, got 575"),
        ('"64KiB"', "mtu must be 576 to 65535 bytes, got 65536"),
        ('"1500pkt"', "bad unit 'pkt'"),
    ],
)
def test_an_mtu_out_of_range_names_file_line_and_key(tmp_path, value, message):
    text = with_mtu(value)
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, "s.toml", text))
    err = info.value
    assert err.key == "link[0].mtu", str(err)
    assert message in err.message, str(err)
    assert err.line == text.splitlines().index(f"mtu = {value}") + 1


def test_an_mtu_between_switches_is_refused(tmp_path):
    text = with_mtu('"1400B"', SWITCHED)
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, "s.toml", text))
    assert info.value.key == "link[2].mtu"
    assert "host at one end" in info.value.message


def test_the_mtu_reaches_the_engine_and_mss_is_left_to_it(tmp_path):
    spec = load_scenario(write(tmp_path, "s.toml", with_mtu('"9000B"'))).to_engine_spec()
    assert spec["links"][0]["mtu_bytes"] == 9000
    assert spec["mss_bytes"] is None and spec["flows"][0]["mss_bytes"] is None
    plain = load_scenario(write(tmp_path, "p.toml", MINIMAL)).to_engine_spec()
    assert "mtu_bytes" not in plain["links"][0]


@pytest.mark.parametrize(
    ("mtu", "extra", "payload_bytes"),
    [
        (None, "", 1460),  # reference mode: no timestamps
        (None, 'cc_mode = "linux"\n', 1448),  # 12 bytes of timestamps
        ('"1280B"', 'cc_mode = "linux"\n', 1280 - 52),
        ('"9000B"', 'cc_mode = "linux"\nmss = "4000B"\n', 4000),  # mss caps what the MTU leaves
    ],
)
def test_segments_carry_what_the_mtu_leaves(tmp_path, mtu, extra, payload_bytes):
    pytest.importorskip("mpsim._core")
    text = MINIMAL if mtu is None else with_mtu(mtu)
    text = text.replace('server = "b"\n', 'server = "b"\nsize = "2MB"\n' + extra)
    summary = mpsim.run(write(tmp_path, "s.toml", text)).summary
    link = summary["links"]["ab"]["b_to_a"]  # the server b sends the download
    assert summary["flows"]["f"]["bytes_delivered"] == 2_000_000
    header = 54 + (12 if "linux" in extra else 0)
    data_segments = -(-2_000_000 // payload_bytes)
    # Full segments of that payload: that many, besides a few control
    # segments, and no packet larger than one.
    assert 0 <= link["packets"] - data_segments < 5, link
    assert link["bytes"] <= link["packets"] * (payload_bytes + header), link
