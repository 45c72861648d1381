"""The kernel backend: a scenario run on the real Linux kernel.

One network namespace per host and router, a pair of TAP devices per link
joined by the `mpsim-linkd` element (propagation delay, jitter, loss),
htb and a FIFO on each device's egress (rate and queue), the simulator's
addresses and shortest-path routes, real TCP and MPTCP sockets, and small
agents that move the data and read TCP_INFO / MPTCP_TCPINFO. The result
is the simulator's `Results`: the same summary keys and Parquet tables.

Modules: `refuse` (what cannot run, before anything is set up), `plan`
(the test bed as data), `testbed` (set-up and tear-down), `agent` (the
program run in the namespaces), `collect` (agents' output to Results).
"""

from __future__ import annotations

from .backend import KernelBackend, kernel_unavailable, run_kernel

__all__ = ["KernelBackend", "kernel_unavailable", "run_kernel"]
