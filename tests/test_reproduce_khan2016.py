"""`mpsim reproduce khan2016` (issue 14, step 6): the scenario library, the
measures behind the claims, the --quick reproduction (claims, figures,
Parquet, resuming), and the full one (slow)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mpsim import reproduce as rp
from mpsim.reproductions import khan2016 as kh
from mpsim.scenario import load_scenario
from reproduction_checks import assert_rerun_resumes, read_claims

LIBRARY = rp.papers_dir() / "khan2016"
CLAIM_IDS = [
    "fig7-smt-highest-everywhere", "fig7-smt-gain-10-percent", "fig7-smt-95-percent",
    "fig6-cmt-rwnd-collapses", "fig5-smt-less-blocking", "fig5-smt-cwnd-steady", "fig5-6-smt-above-cmt",
    "cmt-below-single-path", "smt-cost-duplicates", "iopd-inter-path-dominates", "fig7-scalability-lowers-smt",
]  # fmt: skip
FIGURES = ["fig5-smt-path-b.png", "fig6-cmt-path-b.png", "fig7-utilization.png", "beyond-rbuf-ratio.png"]
PAPER_RATES_BPS = {"simple": {"a": 200_000, "b": 1_000_000}, "scalability": {"a": 200_000, "b": 400_000, "c": 600_000}}
MS_PS = 10**9


# ------------------------------------------------------------ the scenario library (no engine)


def spec_of(name: str, settings: dict | None = None) -> dict:
    return load_scenario(LIBRARY / name, settings or {}).to_engine_spec()


def one_way_delay_ps(spec: dict, client_link: str) -> int:
    """The propagation delay from the server to the client along the path whose client link is given."""
    links = {lk["name"]: lk for lk in spec["links"]}
    path = client_link[-1]  # direct links are named after the path, access links `c<path>`
    names = [path] if client_link == path else [f"s{path}", path, client_link]
    return sum(links[n]["a_to_b"]["delay_ps"] for n in names)


@pytest.mark.parametrize("sc", kh.SCENARIOS, ids=lambda s: s.name)
def test_every_scenario_has_the_papers_paths_buffer_and_run_length(sc):
    spec = spec_of(sc.file)
    assert spec["duration_ps"] == 50 * 10**12
    links = {lk["name"]: lk for lk in spec["links"]}
    base = sc.name.split("-")[0]
    assert {p: links[p]["a_to_b"]["bandwidth_bps"] for p in sc.paths} == PAPER_RATES_BPS[base]
    assert all(links[p]["a_to_b"]["queue"] == {"packets": 50} for p in sc.paths)  # ns-2's DropTail default
    ftp = next(f for f in load_scenario(LIBRARY / sc.file).flows if f.name == "ftp")
    assert (ftp.transport, ftp.app, ftp.size_bytes, ftp.rbuf_bytes) == ("cmt", "download", None, 64_000)
    client_links = [lk["name"] for lk in spec["links"] if "client" in (lk["a"], lk["b"])]
    server_links = [lk["name"] for lk in spec["links"] if "server" in (lk["a"], lk["b"])]
    # The i-th client interface and the i-th server interface are on the same path, in path order.
    assert [n[-1] for n in client_links] == [n[-1] for n in server_links] == list(sc.paths)
    assert all(one_way_delay_ps(spec, n) == 45 * MS_PS for n in client_links)
    assert kh.capacity_bps(rp.Context(LIBRARY), sc.file, sc.paths) == sum(PAPER_RATES_BPS[base].values())


def test_cross_traffic_takes_a_fifth_of_each_bottleneck_in_the_datas_direction():
    for sc in (s for s in kh.SCENARIOS if s.name.endswith("-cbr")):
        scenario = load_scenario(LIBRARY / sc.file)
        spec = scenario.to_engine_spec()
        links = {lk["name"]: lk for lk in spec["links"]}
        cbr = {f.name: f for f in scenario.flows if f.transport == "udp"}
        assert sorted(cbr) == [f"cbr-{p}" for p in sc.paths]
        for p in sc.paths:
            assert cbr[f"cbr-{p}"].rate_bps == links[p]["a_to_b"]["bandwidth_bps"] // 5
            # From the router on the server's side to the one on the client's side: the data's direction.
            assert links[f"xs-{p}"]["b"] == links[p]["a"] == f"r{p}1"
            assert links[f"xd-{p}"]["b"] == links[p]["b"] == f"r{p}2"


def test_the_baselines_are_single_homed_over_the_fastest_path():
    for sc in (s for s in kh.SCENARIOS if s.baseline):
        spec = spec_of(sc.baseline)
        assert [lk["name"] for lk in spec["links"]] == [sc.fast]
        assert spec["links"][0]["a_to_b"]["bandwidth_bps"] == max(PAPER_RATES_BPS[sc.name].values())


def test_quick_runs_shorten_only_the_run():
    ctx = rp.Context(LIBRARY, quick=True)
    spec = spec_of("simple.toml", kh.base_settings(ctx))
    assert spec["duration_ps"] == 10 * 10**12
    assert spec_of("simple.toml", kh.base_settings(ctx))["links"] == spec_of("simple.toml")["links"]


# ------------------------------------------------------------ measures


def trace(rwnd: list[float], cwnd: list[float], delivered: list[float] | None = None) -> pd.DataFrame:
    n = len(rwnd)
    return pd.DataFrame({
        "time_s": [0.1 * (i + 1) for i in range(n)],
        "peer_rwnd_bytes": rwnd,
        "cwnd_bytes": cwnd,
        "bytes_delivered": delivered or [0.0] * n,
        "client_interface": ["b"] * n,
    })  # fmt: skip


def test_blocking_needs_a_closed_window_and_an_open_cwnd():
    rows = trace([0, 1000, 1452, 0, 64000], [60000, 60000, 60000, 6000, 60000])
    # Closed (< one chunk) with cwnd above four packets: the first two samples only.
    assert kh.blocked_share(rows) == pytest.approx(2 / 5)


def test_steady_share_counts_samples_at_half_the_maximum_after_the_warm_up():
    cwnd = [1000.0] * 20 + [40000.0] * 6 + [10000.0] * 2 + [40000.0] * 2
    rows = trace([0.0] * 30, cwnd)
    assert kh.steady_share(rows) == pytest.approx(8 / 10)  # samples after 2 s: 2.1 .. 3.0


def test_normalization_is_the_papers_min_max():
    assert kh.normalized(pd.Series([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert kh.normalized(pd.Series([5.0, 5.0])).tolist() == [0.0, 0.0]


def test_path_throughput_is_delivered_bytes_over_a_one_second_window():
    delivered = [12_500.0 * (i + 1) for i in range(20)]  # 12.5 KB per 100 ms: 1 Mbit/s
    rate = kh.path_throughput_bps(trace([0.0] * 20, [0.0] * 20, delivered))
    assert rate.iloc[:10].tolist() == [0.0] * 10
    assert rate.iloc[10:].tolist() == pytest.approx([1e6] * 10)


def util_frame(means: dict[str, float], seeds: int = 4) -> pd.DataFrame:
    rows = [
        {"variant": v, "seed": s, "pct": m + 0.1 * s, "goodput_bps": 1e4 * (m + 0.1 * s)}
        for v, m in means.items() for s in range(1, seeds + 1)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_fig7_claims_follow_the_numbers_they_are_given():
    good = {sc.name: util_frame({"smt": 95.0, "cmt": 50.0, "smos": 60.0}) for sc in kh.SCENARIOS}
    got = {c.id: c for c in kh.claims_fig7(good)}
    assert got["fig7-smt-highest-everywhere"].agrees is True
    assert got["fig7-smt-gain-10-percent"].agrees is True
    assert got["fig7-smt-95-percent"].agrees is True
    worse = dict(good, scalability=util_frame({"smt": 52.0, "cmt": 50.0, "smos": 60.0}))
    again = {c.id: c for c in kh.claims_fig7(worse)}
    assert again["fig7-smt-highest-everywhere"].agrees is False
    assert again["fig7-smt-gain-10-percent"].agrees is False
    assert "worst: scalability" in again["fig7-smt-gain-10-percent"].ours
    low = {name: util_frame({"smt": 70.0, "cmt": 50.0, "smos": 60.0}) for name in good}
    assert {c.id: c for c in kh.claims_fig7(low)}["fig7-smt-95-percent"].agrees is False


def test_scalability_claim_compares_each_pair_of_forms():
    util = {sc.name: util_frame({"smt": 80.0 if sc.name.startswith("simple") else 60.0}) for sc in kh.SCENARIOS}
    assert kh.claims_scalability(util)[0].agrees is True
    util["scalability-cbr"] = util_frame({"smt": 90.0})
    assert kh.claims_scalability(util)[0].agrees is False


# ------------------------------------------------------------ the quick reproduction


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("mpsim._core")
    out = tmp_path_factory.mktemp("khan") / "out"
    claims = rp.reproduce("khan2016", out, quick=True, jobs=1)
    return out, claims


def test_quick_writes_every_claim_with_the_contract_fields(quick):
    out, claims = quick
    data = read_claims(out, claims, set(CLAIM_IDS))
    assert [row["id"] for row in data] == CLAIM_IDS
    md = (out / rp.CLAIMS_MD).read_text()
    assert "--quick" in md and all(f"| {cid} |" in md for cid in CLAIM_IDS)


def test_quick_writes_the_figures_and_the_tidy_data(quick):
    out, _ = quick
    for name in FIGURES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for sc in kh.SCENARIOS:
        flows = pd.read_parquet(out / "data" / sc.name / "sweep.parquet")
        ftp = flows[flows["flow"] == "ftp"]
        assert sorted(ftp[kh.VARIANT_KEY].unique()) == sorted(kh.VARIANTS)
        assert len(ftp) == len(kh.VARIANTS) * rp.QUICK_SEEDS
    rbuf = pd.read_parquet(out / "data" / "beyond-rbuf" / "sweep.parquet")
    assert len(rbuf[rbuf["flow"] == "ftp"]) == len(kh.VARIANTS) * len(kh.RBUF_SIZES) * rp.QUICK_SEEDS


def test_quick_numbers_are_of_the_runs_not_made_up(quick):
    """CMT blocks on its receive buffer in the simple scenario and delivers less than
    single-path SCTP over the fast path; SMT retransmits on the fast path, CMT does not."""
    out, _ = quick
    data = {row["id"]: row for row in json.loads((out / rp.CLAIMS_JSON).read_text())}
    assert data["fig6-cmt-rwnd-collapses"]["agrees"] is True
    assert data["cmt-below-single-path"]["agrees"] is True
    subflows = pd.read_parquet(out / "data" / "simple" / "sweep_subflows.parquet")
    fast = subflows[(subflows["flow"] == "ftp") & (subflows["client_interface"] == "b")]
    by_variant = fast.groupby(kh.VARIANT_KEY)["retransmitted_bytes"].sum()
    assert by_variant["smt"] > 0 and by_variant["cmt"] == 0


def test_a_rerun_resumes_without_running_again(quick, monkeypatch):
    assert_rerun_resumes("khan2016", *quick, monkeypatch)


# ------------------------------------------------------------ the full reproduction


@pytest.mark.slow
def test_full_reproduction_writes_every_claim_and_figure(tmp_path):
    pytest.importorskip("mpsim._core")
    claims = rp.reproduce("khan2016", tmp_path / "out", jobs=2)
    assert [c.id for c in claims] == CLAIM_IDS
    assert all((tmp_path / "out" / name).is_file() for name in FIGURES)
    flows = pd.read_parquet(tmp_path / "out" / "data" / "simple" / "sweep.parquet")
    assert sorted(flows["seed"].unique()) == list(range(1, rp.DEFAULT_SEEDS + 1))
    by_id = {c.id: c for c in claims}
    # The blocking of the simple scenario has the sign the model predicts (issue 14's acceptance).
    assert by_id["fig5-smt-less-blocking"].agrees is True


def test_the_class_claim_reads_fast_retransmits_by_class_once_the_summary_has_them():
    from mpsim.study import Study

    rows = []
    for variant in ("smt", "cmt"):
        for seed in (1, 2, 3):
            for path, rtx in (("a", 0), ("b", 900_000 + seed)):
                rows.append({
                    kh.VARIANT_KEY: variant, "seed": seed, "flow": "ftp", "client_interface": path,
                    "retransmitted_bytes": rtx if variant == "smt" else 0,
                    "spurious_retransmissions": (600 + seed) if (variant, path) == ("smt", "a") else 0,
                    "bytes_delivered": 150_000, "fast_rtx_inter": 40 + seed, "fast_rtx_intra": seed % 2,
                })  # fmt: skip
    study = Study(pd.DataFrame(), pd.DataFrame(rows), pd.DataFrame(), {})
    res = kh.Results({"simple": study}, {}, study, study, {})
    cost, classes = kh.claims_cost(res)
    assert cost.agrees is True
    assert classes.agrees is True and "inter-path" in classes.ours
    without = Study(pd.DataFrame(), pd.DataFrame(rows).drop(columns=["fast_rtx_inter", "fast_rtx_intra"]),
                    pd.DataFrame(), {})  # fmt: skip
    assert kh.claims_cost(kh.Results({"simple": without}, {}, without, without, {}))[1].agrees is None
