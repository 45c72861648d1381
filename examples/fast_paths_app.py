"""An SDN controller app written in Python, for `examples/sdn-python-app.toml`.

`[controller] app = "python:fast_paths_app:FastPaths"` makes the engine
call `FastPaths(scenario)` once, then `on_packet_in(event)` for every
packet no switch rule matched. The answer is the path as link names from
the source host to the destination host, or None to refuse the packet's
5-tuple (it is dropped at the switch that asked). The run pauses while
the method runs: the engine holds the GIL only then.

FastPaths puts each new subflow of a connection on the next of the
edge-disjoint paths between the two hosts' switches, skipping paths
slower than `MIN_BPS`; a subflow with no fast path left is refused.
"""

from __future__ import annotations

from typing import Any

from mpsim import topo

MIN_BPS = 1_000_000


class FastPaths:
    def __init__(self, scenario: Any) -> None:
        self.g = topo.graph(scenario)
        # Per connection (flow, number): how many of its subflows were placed.
        self.placed: dict[tuple[str | None, int | None], int] = {}

    def on_packet_in(self, event: dict[str, Any]) -> list[str] | None:
        src_host, src_link = event["src"].split(":")
        dst_host, dst_link = event["dst"].split(":")
        first = self._far_end(src_link, src_host)
        last = self._far_end(dst_link, dst_host)
        paths = topo.edge_disjoint_paths(self.g, first, last) if first != last else [[first]]
        fast = [p for p in paths if len(p) == 1 or topo.path_bandwidth(self.g, p) >= MIN_BPS]
        fast.sort(key=lambda p: (-topo.path_bandwidth(self.g, p) if len(p) > 1 else 0, len(p)))
        conn = (event["flow"], event["connection"])
        i = self.placed.get(conn, 0)
        if i >= len(fast):
            return None
        self.placed[conn] = i + 1
        return [src_link, *self._links(fast[i]), dst_link]

    def _far_end(self, link: str, host: str) -> str:
        for u, v, key in self.g.edges(keys=True):
            if key == link:
                return v if u == host else u
        raise KeyError(link)

    def _links(self, nodes: list[str]) -> list[str]:
        """The link names along a node path (the fastest of parallel links)."""
        out = []
        for u, v in zip(nodes, nodes[1:]):
            edges = self.g.get_edge_data(u, v)
            out.append(max(edges, key=lambda k: edges[k]["bandwidth_bps"]))
        return out
