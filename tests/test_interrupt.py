"""`mpsim.run` answers Ctrl-C promptly (issue 12, item 5)."""

from __future__ import annotations

import os
import signal
import threading
import time

import mpsim
import pytest


def heavy_network() -> mpsim.Network:
    """About half a minute of engine time: four 1 Gbit/s downloads for 30 minutes."""
    net = mpsim.Network("heavy", seed=1, duration="1800s")
    net.add_host("a"); net.add_host("b"); net.add_switch("s")  # noqa: E702
    net.add_link("a", "s", bw="1Gbps", delay="1ms")
    net.add_link("s", "b", bw="1Gbps", delay="5ms", queue="500pkt")
    for _ in range(4):
        net.add_flow("b", "a", cc="cubic")
    return net


def test_ctrl_c_interrupts_a_python_run_promptly():
    pytest.importorskip("mpsim._core")
    net = heavy_network()
    # A shell starts a background job with SIGINT ignored, and the test
    # process inherits that: for this test Ctrl-C goes to Python.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            net.run()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 3.0
