"""`record.pcap` on the kernel: tcpdump on a host's device, in its namespace.

Each `node:link` entry becomes one tcpdump (nanosecond timestamps, whole
frames, packet-buffered) on that end's TAP device, started and listening
before the run's time zero and stopped after its end. The file is then
rewritten to the simulator's layout: the same name (`node-link.pcap`), the
same nanosecond pcap format, and times counted from the run's start
instead of the wall clock, so the two captures of one scenario line up.

Where the packets are seen differs in one way: Linux's packet taps see an
outgoing frame when the shaper releases it to the device
(dev_hard_start_xmit in net/core/dev.c), the simulator when its queue
accepts it. Incoming frames are seen on arrival in both.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PCAP_MAGIC_NS = 0xA1B23C4D
GLOBAL_HEADER_BYTES = 24
RECORD_HEADER_BYTES = 16
READY_TIMEOUT_S = 5.0
BUFFER_KIB = 8192  # the capture's kernel buffer: a busy machine must not make it drop frames
_DROPPED = re.compile(r"(\d+) packets? dropped by kernel")


class CaptureError(RuntimeError):
    """tcpdump did not start: the message carries what it said."""


@dataclass
class Capture:
    iface: str  # "node:link", the record.pcap entry
    path: Path
    proc: subprocess.Popen
    stderr: list[str] = field(default_factory=list)

    def dropped(self) -> int | None:
        """Frames the capture's buffer lost, from tcpdump's closing lines."""
        for line in self.stderr:
            m = _DROPPED.search(line)
            if m:
                return int(m.group(1))
        return None


def tcpdump_args(netns: str, dev: str, path: Path) -> list[str]:
    """tcpdump in the namespace: whole frames (-s 0), nanosecond stamps,
    written per packet (-U), no name lookups, and no privilege drop (-Z root),
    so it can write to the run's private folder."""
    return ["ip", "netns", "exec", netns, "tcpdump", "-i", dev, "-w", str(path), "-U", "-n", "-s", "0",
            "-B", str(BUFFER_KIB), "--time-stamp-precision", "nano", "-Z", "root"]


def start(iface: str, netns: str, dev: str, path: Path) -> Capture:
    """Start tcpdump and wait until it listens (it says so on stderr)."""
    proc = subprocess.Popen(tcpdump_args(netns, dev, path), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    cap = Capture(iface, path, proc)
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None  # opened as a pipe above
        for line in proc.stderr:
            cap.stderr.append(line.strip())
            if "listening on" in line:
                listening.set()
        listening.set()

    threading.Thread(target=read, daemon=True).start()
    if not listening.wait(READY_TIMEOUT_S) or proc.poll() is not None:
        stop(cap)
        raise CaptureError(f"tcpdump on {iface} did not start: {' '.join(cap.stderr)[:300]}")
    return cap


def stop(cap: Capture) -> None:
    """SIGINT, so tcpdump flushes and prints its counters; SIGKILL if it hangs."""
    if cap.proc.poll() is None:
        try:
            os.killpg(cap.proc.pid, signal.SIGINT)
            cap.proc.wait(timeout=5)
        except (ProcessLookupError, PermissionError):
            pass
        except subprocess.TimeoutExpired:
            os.killpg(cap.proc.pid, signal.SIGKILL)
            cap.proc.wait(timeout=5)
    time.sleep(0.05)  # the reader thread takes tcpdump's last lines


def realtime_offset_ns() -> int:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC now: packet stamps are on the
    former (ktime_get_real), the run's time zero on the latter. The
    narrowest of a few readings bounds the error by one clock read."""
    best = None
    for _ in range(5):
        m0 = time.monotonic_ns()
        r = time.time_ns()
        m1 = time.monotonic_ns()
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, r - (m0 + m1) // 2)
    assert best is not None  # five readings were taken
    return best[1]


def rebase(data: bytes, zero_ns: int, end_ns: int) -> tuple[bytes, int]:
    """A nanosecond pcap with times from `zero_ns` (wall clock, ns) and only
    the frames in [zero, end]: the simulator's timeline. Returns the file
    and its number of frames."""
    if len(data) < GLOBAL_HEADER_BYTES:
        return data, 0
    magic, = struct.unpack_from("<I", data, 0)
    order = "<" if magic == PCAP_MAGIC_NS else ">"
    if struct.unpack_from(f"{order}I", data, 0)[0] != PCAP_MAGIC_NS:
        raise CaptureError("tcpdump did not write a nanosecond pcap")
    out = bytearray(struct.pack("<I", PCAP_MAGIC_NS) + _header_le(data, order))
    at, frames = GLOBAL_HEADER_BYTES, 0
    while at + RECORD_HEADER_BYTES <= len(data):
        sec, nsec, incl, orig = struct.unpack_from(f"{order}4I", data, at)
        body = data[at + RECORD_HEADER_BYTES : at + RECORD_HEADER_BYTES + incl]
        at += RECORD_HEADER_BYTES + incl
        if len(body) < incl:
            break  # a frame cut short when tcpdump was stopped
        t_ns = sec * 10**9 + nsec - zero_ns
        if t_ns < 0 or t_ns > end_ns - zero_ns:
            continue
        out += struct.pack("<4I", t_ns // 10**9, t_ns % 10**9, incl, orig) + body
        frames += 1
    return bytes(out), frames


def _header_le(data: bytes, order: str) -> bytes:
    """The global header after the magic, little-endian as the simulator writes it."""
    major, minor, zone, sigfigs, snaplen, linktype = struct.unpack_from(f"{order}HHiIII", data, 4)
    return struct.pack("<HHiIII", major, minor, zone, sigfigs, snaplen, linktype)


def payload_bytes(data: bytes) -> dict[tuple[str, str], int]:
    """TCP and UDP payload bytes of a pcap (Ethernet, IPv4) per (source,
    destination) address pair: what each subflow's path carried, the
    retransmissions included."""
    out: dict[tuple[str, str], int] = {}
    if len(data) < GLOBAL_HEADER_BYTES:
        return out
    order = "<" if struct.unpack_from("<I", data, 0)[0] in (PCAP_MAGIC_NS, 0xA1B2C3D4) else ">"
    at = GLOBAL_HEADER_BYTES
    while at + RECORD_HEADER_BYTES <= len(data):
        _, _, incl, _ = struct.unpack_from(f"{order}4I", data, at)
        frame = data[at + RECORD_HEADER_BYTES : at + RECORD_HEADER_BYTES + incl]
        at += RECORD_HEADER_BYTES + incl
        pair_bytes = _ipv4_payload(frame)
        if pair_bytes is not None:
            pair, n = pair_bytes
            out[pair] = out.get(pair, 0) + n
    return out


def _ipv4_payload(frame: bytes) -> tuple[tuple[str, str], int] | None:
    """((source, destination), transport payload bytes) of an IPv4 TCP or UDP frame."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl_bytes = (frame[14] & 0x0F) * 4
    total, = struct.unpack_from("!H", frame, 16)
    proto = frame[23]
    src, dst = ".".join(map(str, frame[26:30])), ".".join(map(str, frame[30:34]))
    if proto == 6 and len(frame) >= 14 + ihl_bytes + 13:
        header = (frame[14 + ihl_bytes + 12] >> 4) * 4
    elif proto == 17:
        header = 8
    else:
        return None
    return (src, dst), max(0, total - ihl_bytes - header)
