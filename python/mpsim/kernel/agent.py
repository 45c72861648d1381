"""One side of one flow, run inside a host's namespace by the kernel backend.

Standard library only, started as a script (`python3 agent.py JSON`), so a
namespace needs nothing installed. The data path is the kernel's: this
program only writes and reads large buffers. It prints JSON lines on
stdout: `ready`, periodic samples (bytes delivered to the application;
per-subflow window, RTT and bytes from TCP_INFO / MPTCP_TCPINFO), one line
per completed request, and `done` at the run's end, when it exits.

Times are CLOCK_MONOTONIC (the same clock in every namespace), reported
relative to the run's start `t0_ns`.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
import sys
import threading
import time

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_TCPINFO = 2  # struct mptcp_subflow_data + one tcp_info per subflow (include/uapi/linux/mptcp.h)
MPTCP_SUBFLOW_ADDRS = 3
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO_BYTES = 248
ADDRS_ENTRY_BYTES = 256  # two sockaddr_storage unions: local, remote
SUBFLOW_DATA_BYTES = 16
CHUNK_BYTES = 256 * 1024
HEADER = struct.Struct("!QB")  # response size (all ones: unlimited), op: D(ownload) or U(pload)
UNLIMITED = 2**64 - 1
TCP_STATES = {1: "established", 2: "syn_sent", 3: "syn_recv", 4: "fin_wait1", 5: "fin_wait2", 6: "time_wait",
              7: "closed", 8: "close_wait", 9: "last_ack", 10: "listen", 11: "closing"}

_out_lock = threading.Lock()


def emit(obj: dict) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()


class Clock:
    def __init__(self, t0_ns: int) -> None:
        self.t0_ns = t0_ns

    def now_s(self) -> float:
        return (time.monotonic_ns() - self.t0_ns) / 1e9

    def sleep_until_ns(self, at_ns: int) -> None:
        delay = (at_ns - time.monotonic_ns()) / 1e9
        if delay > 0:
            time.sleep(delay)


# ------------------------------------------------------------ socket info


def parse_tcp_info(raw: bytes) -> dict:
    """The fields of struct tcp_info (include/uapi/linux/tcp.h) the tables use."""
    raw = raw.ljust(TCP_INFO_BYTES, b"\0")
    state, ca_state = raw[0], raw[1]
    snd_mss, = struct.unpack_from("=I", raw, 16)
    unacked, sacked, lost, retrans = struct.unpack_from("=4I", raw, 24)  # after rcv_mss
    rtt_us, = struct.unpack_from("=I", raw, 68)
    ssthresh, cwnd = struct.unpack_from("=2I", raw, 76)
    total_retrans, = struct.unpack_from("=I", raw, 100)
    bytes_acked, bytes_received = struct.unpack_from("=2Q", raw, 120)
    bytes_sent, bytes_retrans = struct.unpack_from("=2Q", raw, 200)
    total_rto, = struct.unpack_from("=H", raw, 240)
    return {
        "state": TCP_STATES.get(state, str(state)),
        "ca_state": ca_state,
        "cwnd_bytes": cwnd * snd_mss,
        "ssthresh_bytes": ssthresh * snd_mss if ssthresh < 0x7FFFFFFF else float(2**31 * snd_mss),
        "srtt_s": rtt_us / 1e6,
        "bytes_in_flight": max(0, unacked - sacked - lost + retrans) * snd_mss,
        "bytes_acked": bytes_acked,
        "bytes_received": bytes_received,
        "bytes_sent": bytes_sent,
        "retransmitted_bytes": bytes_retrans,
        "retransmissions": total_retrans,
        "timeouts": total_rto,
    }


def _sockaddr_in(raw: bytes, at: int) -> tuple[str, int]:
    port, = struct.unpack_from("!H", raw, at + 2)
    return socket.inet_ntoa(raw[at + 4 : at + 8]), port


_libc = None


def _mptcp_getsockopt(sock: socket.socket, optname: int, entry_bytes: int, max_entries: int = 8) -> list[bytes]:
    """Per-subflow records of an MPTCP socket. The kernel reads the header
    the caller fills in (mptcp_get_subflow_data), which Python's
    getsockopt cannot do, hence ctypes."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    size = SUBFLOW_DATA_BYTES + entry_bytes * max_entries
    buf = ctypes.create_string_buffer(size)
    struct.pack_into("=4I", buf, 0, SUBFLOW_DATA_BYTES, 0, 0, entry_bytes)
    optlen = ctypes.c_uint32(size)
    if _libc.getsockopt(sock.fileno(), SOL_MPTCP, optname, buf, ctypes.byref(optlen)) != 0:
        return []
    _, count, size_kernel, size_user = struct.unpack_from("=4I", buf, 0)
    step = size_user or entry_bytes
    raw = buf.raw
    starts = (SUBFLOW_DATA_BYTES + i * step for i in range(min(count, max_entries)))
    return [raw[at : at + step] for at in starts]


def addresses(sock: socket.socket) -> tuple:
    """(local address, port, remote address, port) of a connected socket,
    kept because a closed TCP socket no longer has a peer."""
    try:
        return (*sock.getsockname()[:2], *sock.getpeername()[:2])
    except OSError:
        return ("", 0, "", 0)


def subflow_infos(sock: socket.socket, mptcp: bool, addrs: tuple = ("", 0, "", 0)) -> list[dict]:
    """One dict per subflow (one for a TCP socket): addresses and tcp_info fields."""
    try:
        if not mptcp:
            info = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES))
            la, lp, ra, rp = addrs
            return [{**info, "local": la, "lport": lp, "remote": ra, "rport": rp}]
        infos = _mptcp_getsockopt(sock, MPTCP_TCPINFO, TCP_INFO_BYTES)
        addrs = _mptcp_getsockopt(sock, MPTCP_SUBFLOW_ADDRS, ADDRS_ENTRY_BYTES)
    except OSError:
        return []
    out = []
    for raw_info, raw_addr in zip(infos, addrs):
        (la, lp), (ra, rp) = _sockaddr_in(raw_addr, 0), _sockaddr_in(raw_addr, 128)
        out.append({**parse_tcp_info(raw_info), "local": la, "lport": lp, "remote": ra, "rport": rp})
    return out


# ------------------------------------------------------------ the agent


class Agent:
    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.clock = Clock(cfg["t0_ns"])
        self.mptcp = cfg["transport"] == "mptcp"
        self.delivered = 0
        self.completion_s: float | None = None
        self.senders: list[tuple[int, socket.socket, tuple]] = []  # (connection index, socket, addresses)
        self.last: dict[int, list[dict]] = {}  # the last non-empty sample of each connection
        self.lock = threading.Lock()
        self.connections = 0
        self.sent_datagram_bytes = 0

    def new_socket(self) -> socket.socket:
        proto = IPPROTO_MPTCP if self.mptcp else socket.IPPROTO_TCP
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
        cfg = self.cfg
        if cfg.get("cc"):
            sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cfg["cc"].encode())
        if cfg.get("mss"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, cfg["mss"])
        if cfg.get("rcvbuf"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, cfg["rcvbuf"])
        if cfg.get("nodelay"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if cfg.get("sndbuf"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, cfg["sndbuf"])
        return sock

    def add_sender(self, sock: socket.socket) -> int:
        with self.lock:
            index = self.connections
            self.connections += 1
            self.senders.append((index, sock, addresses(sock)))
            return index

    def infos(self, index: int, sock: socket.socket, addrs: tuple) -> list[dict]:
        """The connection's subflows now, or as last seen once it has none (closed)."""
        now = subflow_infos(sock, self.mptcp, addrs) if sock.fileno() >= 0 else []
        with self.lock:
            if now:
                self.last[index] = now
            return now or self.last.get(index, [])

    def snapshot(self) -> None:
        with self.lock:
            senders = list(self.senders)
        for index, sock, addrs in senders:
            self.infos(index, sock, addrs)

    def count(self, n: int) -> None:
        with self.lock:
            self.delivered += n

    # -------------------------------------------------------- sampling

    def sample_loop(self) -> None:
        cfg = self.cfg
        tick = 1
        while True:
            at_ns = cfg["t0_ns"] + tick * cfg["sample_ns"]
            if at_ns > cfg["end_ns"]:
                break
            self.clock.sleep_until_ns(at_ns)
            self.sample(tick * cfg["sample_ns"] / 1e9)
            tick += 1
        self.clock.sleep_until_ns(cfg["end_ns"])
        self.finish()

    def sample(self, t_s: float) -> None:
        if self.cfg["receiver"]:
            emit({"delivered": self.delivered, "t": t_s})
        if self.cfg["record_subflows"]:
            with self.lock:
                senders = list(self.senders)
            for index, sock, addrs in senders:
                emit({"subflows": self.infos(index, sock, addrs), "conn": index, "t": t_s})

    def finish(self) -> None:
        with self.lock:
            senders = list(self.senders)
        final = {index: self.infos(index, sock, addrs) for index, sock, addrs in senders}
        emit({"done": True, "delivered": self.delivered, "completion_s": self.completion_s,
              "sent_datagram_bytes": self.sent_datagram_bytes,
              "final": {str(k): v for k, v in final.items()}, "t": self.clock.now_s()})
        os._exit(0)

    # -------------------------------------------------------- data

    def send(self, sock: socket.socket, size: int, stop_ns: int | None) -> None:
        chunk = memoryview(bytes(CHUNK_BYTES))
        left = size
        while left > 0:
            if stop_ns is not None and time.monotonic_ns() >= stop_ns:
                break
            n = sock.send(chunk[: min(left, CHUNK_BYTES)])
            left -= n

    def receive(self, sock: socket.socket, size: int, started_s: float | None) -> int:
        """Read until `size` bytes or EOF; the completion time is set when all arrived."""
        got = 0
        buf = bytearray(CHUNK_BYTES)
        while got < size:
            n = sock.recv_into(buf, min(CHUNK_BYTES, size - got))
            if n == 0:
                break
            got += n
            self.count(n)
        if got == size and started_s is not None and size != UNLIMITED:
            self.completion_s = self.clock.now_s() - started_s
        return got

    # -------------------------------------------------------- server

    def serve(self) -> None:
        if self.cfg["transport"] == "udp":
            self.serve_datagrams()
            return
        listener = self.new_socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", self.cfg["port"]))
        listener.listen(128)
        threading.Thread(target=self.sample_loop, daemon=True).start()
        emit({"ready": True})
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=self.serve_one, args=(conn,), daemon=True).start()

    def serve_one(self, conn: socket.socket) -> None:
        request_bytes = self.cfg["request_bytes"]
        sampled = False
        with conn:
            while True:
                head = _read_exactly(conn, request_bytes)
                if head is None:
                    return
                size, op = HEADER.unpack_from(head)
                if op == ord("V"):
                    self.add_sender(conn)
                    self.video(conn)
                    return
                if op == ord("U"):
                    self.receive(conn, size, self.cfg["start_s"])
                    return
                if not sampled:
                    self.add_sender(conn)
                    sampled = True
                self.send(conn, size, self.cfg["stop_ns"])
                if size == UNLIMITED or not self.cfg["keep_open"]:
                    conn.shutdown(socket.SHUT_WR)
                    _drain(conn)
                    self.snapshot()  # before the close takes the subflows away
                    return

    def serve_datagrams(self) -> None:
        """The receiving end of a datagram flow: count payload bytes."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)  # a busy reader must not drop datagrams
        sock.bind(("0.0.0.0", self.cfg["port"]))
        threading.Thread(target=self.sample_loop, daemon=True).start()
        emit({"ready": True})
        buf = bytearray(65536)
        while True:
            self.count(sock.recv_into(buf))

    def video(self, conn: socket.socket) -> None:
        """`chunk_bytes` written every `chunk_ns`, on a schedule fixed from
        the first write (apps.rs `Video`), until the flow stops."""
        cfg = self.cfg
        next_ns = time.monotonic_ns()
        chunk = memoryview(bytes(cfg["chunk_bytes"]))
        try:
            while cfg["stop_ns"] is None or next_ns < cfg["stop_ns"]:
                conn.sendall(chunk)
                next_ns += cfg["chunk_ns"]
                self.clock.sleep_until_ns(next_ns)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    # -------------------------------------------------------- client

    def connect(self) -> socket.socket:
        sock = self.new_socket()
        if self.cfg.get("bind"):
            sock.bind((self.cfg["bind"], 0))
        sock.connect((self.cfg["server_addr"], self.cfg["port"]))
        return sock

    def request(self, sock: socket.socket, size: int, op: str) -> None:
        head = HEADER.pack(size, ord(op)).ljust(self.cfg["request_bytes"], b"\0")
        sock.sendall(head)

    def run_client(self) -> None:
        cfg = self.cfg
        threading.Thread(target=self.sample_loop, daemon=True).start()
        emit({"ready": True})
        self.clock.sleep_until_ns(cfg["start_ns"])
        started_s = self.clock.now_s()
        emit({"started": started_s})
        if cfg["transport"] == "udp":
            self.cbr(cfg["start_ns"])
        elif cfg["app"] == "http":
            self.http(started_s)
        elif cfg["app"] == "video":
            self.watch()
        else:
            self.bulk(started_s)
        while True:  # the sampler ends the process at the end of the run
            time.sleep(3600)

    def bulk(self, started_s: float) -> None:
        cfg = self.cfg
        size = cfg["size"] if cfg["size"] is not None else UNLIMITED
        sock = self.connect()
        if cfg["app"] == "download":
            self.request(sock, size, "D")
            if cfg["stop_ns"] is not None:
                threading.Thread(target=_close_at, args=(sock, cfg["stop_ns"]), daemon=True).start()
            try:
                self.receive(sock, size, started_s)
            except OSError:
                pass
        else:
            self.add_sender(sock)
            self.request(sock, size, "U")
            self.send(sock, size, cfg["stop_ns"])
            sock.shutdown(socket.SHUT_WR)
            _drain(sock)
            self.snapshot()

    def cbr(self, start_ns: int) -> None:
        """Datagrams of `packet_bytes` every `interval_ns` from the start
        (apps.rs `Cbr`), on an absolute schedule so a late wake-up does not
        lower the rate; with `on_ns`, only in the on periods of an on/off
        cycle that begins on (apps.rs `OnOff`)."""
        cfg = self.cfg
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if cfg.get("bind"):
            sock.bind((cfg["bind"], 0))
        sock.connect((cfg["server_addr"], cfg["port"]))
        payload = bytes(cfg["packet_bytes"])
        on_ns, off_ns = cfg.get("on_ns"), cfg.get("off_ns") or 0
        k = 0
        while True:
            at_ns = start_ns + k * cfg["interval_ns"]
            k += 1
            if cfg["stop_ns"] is not None and at_ns >= cfg["stop_ns"]:
                return
            if on_ns is not None and (at_ns - start_ns) % (on_ns + off_ns) >= on_ns:
                continue  # an off period
            self.clock.sleep_until_ns(at_ns)
            try:
                sock.send(payload)
            except OSError:
                continue  # no route while a link is down: the datagram is lost, as in the simulator
            with self.lock:
                self.sent_datagram_bytes += len(payload)

    def watch(self) -> None:
        """The viewer of a video flow: one connection, read until the server stops."""
        sock = self.connect()
        self.request(sock, 0, "V")
        try:
            self.receive(sock, UNLIMITED, None)
        except OSError:
            pass

    def http(self, started_s: float) -> None:
        cfg = self.cfg
        sizes = cfg["sizes"] * max(1, cfg["repeat"])
        sock = None
        for index, size in enumerate(sizes):
            if cfg["stop_ns"] is not None and time.monotonic_ns() >= cfg["stop_ns"]:
                break
            begin_s = self.clock.now_s()
            if sock is None or cfg["new_connection"]:
                sock = self.connect()
            self.request(sock, size, "D")
            got = self.receive(sock, size, None)
            end_s = self.clock.now_s()
            if got == size:
                emit({"request": {"index": index, "size_bytes": size, "start_s": begin_s, "end_s": end_s}})
            if cfg["new_connection"]:
                sock.close()
                sock = None
            if cfg["gap_ns"]:
                time.sleep(cfg["gap_ns"] / 1e9)
        self.completion_s = self.clock.now_s() - started_s
        if sock is not None:
            sock.close()


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            return None
        data += part
    return data


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def _close_at(sock: socket.socket, at_ns: int) -> None:
    delay = (at_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def main() -> None:
    cfg = json.loads(sys.argv[1])
    agent = Agent(cfg)
    try:
        if cfg["role"] == "server":
            agent.serve()
        else:
            agent.run_client()
    except OSError as exc:
        emit({"error": f"{cfg['role']} of flow {cfg['flow']}: {exc}"})
        agent.finish()


if __name__ == "__main__":
    main()
