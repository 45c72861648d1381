"""The agents' JSON lines and the interface counters, as the simulator's
summary and trace tables (results.py's columns)."""

from __future__ import annotations

from typing import Any

from .._version import __version__
from ..checks import random_sources
from ..results import Results
from ..scenario import Scenario
from .plan import Plan

ETHERNET_HEADER_BYTES = 14


def results(scenario: Scenario, plan: Plan, raw: dict[str, Any], qdisc_drops: dict[str, list[int]],
            wall_s: float) -> Results:
    traces: dict[str, dict[str, list]] = {}
    if scenario.record.interfaces:
        traces["interfaces"] = _interfaces(plan, raw["samples"])
    flows: dict[str, Any] = {}
    flow_rows: dict[str, list] = {"time_s": [], "flow": [], "bytes_delivered": [], "goodput_bps": []}
    sub_rows: dict[str, list] = {k: [] for k in _SUBFLOW_COLUMNS}
    req_rows: dict[str, list] = {"flow": [], "index": [], "size_bytes": [], "start_s": [], "end_s": []}
    for i, flow in enumerate(scenario.flows):
        name = flow.name or f"flow{i}"
        lines = {role: raw["agents"].get((name, role), []) for role in ("client", "server")}
        flows[name] = _flow_summary(flow, name, plan, lines, raw["duration_s"], flow_rows, sub_rows, req_rows)
    traces.update(flows=flow_rows, subflows=sub_rows, requests=req_rows)
    summary = {
        "format": 1, "mpsim_version": __version__, "scenario": scenario.name, "seed": scenario.seed,
        "randomness": bool(random_sources(scenario)), "sim_time_s": raw["duration_s"], "wall_time_s": wall_s,
        "events": None, "packet_hops": None, "flows": flows,
        "links": _links(plan, raw, qdisc_drops),
        "backend": "kernel",
        "kernel": {"link_elements": {plan.links[i].name: s
                                     for i, s in sorted(raw.get("element_stats", {}).items())}},
    }
    if raw.get("capture_stats"):
        summary["kernel"]["captures"] = raw["capture_stats"]
    provenance = {"mpsim_version": __version__, "backend": "kernel", "scenario_file": scenario._source.file,
                  "seed": scenario.seed, "run_id": plan.run_id}
    return Results(summary, traces, pcaps=raw.get("pcaps", {}), provenance=provenance)


def _interfaces(plan: Plan, samples: list) -> dict[str, list]:
    rows: dict[str, list] = {k: [] for k in ("time_s", "node", "interface", "tx_bytes", "rx_bytes", "tx_bps", "rx_bps")}
    for (t_prev, before), (t, after) in zip(samples, samples[1:]):
        dt = t - t_prev
        for lp in plan.links:
            for end in lp.ends:
                if plan.kinds[end.node] != "host":
                    continue
                rx0, tx0, _ = before.get(end.node, {}).get(end.dev, (0, 0, 0))
                rx1, tx1, _ = after.get(end.node, {}).get(end.dev, (0, 0, 0))
                rows["time_s"].append(t)
                rows["node"].append(end.node)
                rows["interface"].append(lp.name)
                rows["tx_bytes"].append(tx1 - tx0)
                rows["rx_bytes"].append(rx1 - rx0)
                rows["tx_bps"].append((tx1 - tx0) * 8 / dt if dt > 0 else 0.0)
                rows["rx_bps"].append((rx1 - rx0) * 8 / dt if dt > 0 else 0.0)
    return rows


def _links(plan: Plan, raw: dict[str, Any], qdisc_drops: dict[str, list[int]]) -> dict[str, Any]:
    (_, first), (_, last) = raw["samples"][0], raw["samples"][-1]
    out = {}
    for lp in plan.links:
        stats = raw.get("element_stats", {}).get(lp.index, {})
        entry = {}
        for side, which in enumerate(("a_to_b", "b_to_a")):
            end = lp.ends[side]
            _, tx0, p0 = first.get(end.node, {}).get(end.dev, (0, 0, 0))
            _, tx1, p1 = last.get(end.node, {}).get(end.dev, (0, 0, 0))
            queue_drops = qdisc_drops.get(lp.name, [0, 0])[side]
            loss_drops = int(stats.get(which, {}).get("dropped", 0))
            rate = lp.dirs[side].rate_bps
            util = min(1.0, (tx1 - tx0) * 8 / (rate * raw["duration_s"])) if rate else 0.0
            entry[which] = {"bytes": tx1 - tx0, "packets": p1 - p0, "drops": queue_drops + loss_drops,
                            "queue_drops": queue_drops, "loss_drops": loss_drops, "ecn_marks": 0, "utilization": util}
        out[lp.name] = entry
    return out


_SUBFLOW_COLUMNS = ("time_s", "flow", "connection", "subflow", "side", "cwnd_bytes", "ssthresh_bytes", "srtt_s",
                    "bytes_in_flight", "bytes_delivered", "retransmissions", "reinjected_bytes", "timeouts",
                    "fast_recoveries", "state", "backup", "client_interface", "server_interface")


def receiving_role(flow: Any) -> str:
    """The side whose application receives the flow's data (flows.rs
    `make_app`): the server for uploads and datagrams, else the client."""
    app = flow.effective_on_app if flow.app == "onoff" else flow.app
    return "server" if app in ("upload", "cbr") else "client"


def _flow_summary(flow: Any, name: str, plan: Plan, lines: dict[str, list], duration_s: float,
                  flow_rows: dict, sub_rows: dict, req_rows: dict) -> dict[str, Any]:
    receiver_role = receiving_role(flow)
    sender_role = "client" if receiver_role == "server" else "server"
    recv = lines[receiver_role]
    done = next((x for x in recv if x.get("done")), {})
    errors = [x["error"] for role in lines for x in lines[role] if "error" in x]
    delivered = int(done.get("delivered", max([x.get("delivered", 0) for x in recv if "t" in x] or [0])))
    start_s = _start_s(lines)
    completion = done.get("completion_s")
    prev = 0
    for x in recv:
        if "delivered" in x and "done" not in x:
            flow_rows["time_s"].append(x["t"])
            flow_rows["flow"].append(name)
            flow_rows["bytes_delivered"].append(x["delivered"])
            flow_rows["goodput_bps"].append((x["delivered"] - prev) * 8 / _step(flow_rows, name))
            prev = x["delivered"]
    requests = [x["request"] for x in lines["client"] if "request" in x]
    for r in requests:
        req_rows["flow"].append(name)
        for k in ("index", "size_bytes", "start_s", "end_s"):
            req_rows[k].append(r[k])
    span = completion if completion is not None else max(1e-9, duration_s - start_s)
    subflows = _subflows(name, plan, lines[sender_role], sender_role, span, sub_rows)
    summary = {
        "transport": flow.transport, "cc": flow.effective_cc, "bytes_delivered": delivered,
        "goodput_bps": delivered * 8 / span if span > 0 else 0.0,
        "completion_time_s": completion if (flow.size_bytes is not None or flow.app == "http") else None,
        "retransmitted_bytes": sum(s["retransmitted_bytes"] for s in subflows),
        "subflows": subflows, "fallback": False, "requests": requests, "start_s": start_s,
    }
    if flow.transport == "udp":
        client_done = next((x for x in lines["client"] if x.get("done")), {})
        summary["sent_bytes"] = int(client_done.get("sent_datagram_bytes", 0))
    if errors:
        summary["errors"] = errors
    return summary


def _step(flow_rows: dict, name: str) -> float:
    times = [t for t, f in zip(flow_rows["time_s"], flow_rows["flow"]) if f == name]
    return times[-1] - times[-2] if len(times) > 1 else (times[-1] if times else 1.0)


def _start_s(lines: dict[str, list]) -> float:
    return float(next((x["started"] for x in lines["client"] if "started" in x), 0.0))


def _subflows(name: str, plan: Plan, lines: list, side: str, span_s: float, rows: dict) -> list[dict[str, Any]]:
    """The sender's samples as subflows rows; the last sample of each subflow as its summary."""
    names = plan.addr_names()
    ids: dict[tuple, int] = {}
    last: dict[tuple, dict] = {}
    samples = [(x["t"], int(x["conn"]), x["subflows"]) for x in lines if "subflows" in x]
    done = next((x for x in lines if x.get("done")), None)
    if done is not None:
        samples += [(done["t"], int(conn), subs) for conn, subs in done.get("final", {}).items()]
    for t, conn, subs in samples:
        for s in subs:
            key = (conn, s["local"], s["lport"], s["remote"], s["rport"])
            index = ids.setdefault(key, sum(1 for k in ids if k[0] == conn))
            client_addr, server_addr = (s["remote"], s["local"]) if side == "server" else (s["local"], s["remote"])
            s = {**s, "client_interface": names.get(client_addr, ("", ""))[1],
                 "server_interface": names.get(server_addr, ("", ""))[1]}
            last[key] = s
            if done is not None and t == done["t"]:
                continue
            row = {"time_s": t, "flow": name, "connection": conn, "subflow": index, "side": side,
                   "cwnd_bytes": float(s["cwnd_bytes"]), "ssthresh_bytes": float(s["ssthresh_bytes"]),
                   "srtt_s": s["srtt_s"], "bytes_in_flight": s["bytes_in_flight"], "bytes_delivered": s["bytes_acked"],
                   "retransmissions": s["retransmissions"], "reinjected_bytes": 0, "timeouts": s["timeouts"],
                   "fast_recoveries": 0, "state": s["state"], "backup": False,
                   "client_interface": s["client_interface"], "server_interface": s["server_interface"]}
            for k, v in row.items():
                rows[k].append(v)
    out = []
    for key in sorted(last, key=lambda k: (k[0], ids[k])):
        s = last[key]
        acked = max(0, int(s["bytes_acked"]) - 1)  # the SYN counts one in bytes_acked
        out.append({"client_interface": s["client_interface"], "server_interface": s["server_interface"],
                    "bytes_delivered": acked, "goodput_bps": acked * 8 / span_s if span_s > 0 else 0.0,
                    "retransmitted_bytes": int(s["retransmitted_bytes"]), "timeouts": int(s["timeouts"]),
                    "fast_recoveries": None, "spurious_retransmissions": None})
    return out
