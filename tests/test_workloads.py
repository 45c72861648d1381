"""Short-flow workloads (issue 13, item 3): request sizes from a
distribution, closed-loop think times and open-loop Poisson arrivals."""

from __future__ import annotations

import math

import pytest

import mpsim
from mpsim import ScenarioError
from mpsim.scenario import SizeDistribution, scenario_from_dict
from mpsim.workloads import CdfError, load_cdf, mean_bytes

BASE = {
    "format": 1,
    "name": "workload",
    "simulation": {"duration": "30s", "seed": 1},
    "node": [{"name": "c"}, {"name": "s"}, {"name": "r", "kind": "router"}],
    "link": [
        {"name": "access", "between": ["c", "r"], "bandwidth": "10Mbps", "delay": "5ms"},
        {"name": "core", "between": ["r", "s"], "bandwidth": "100Mbps", "delay": "5ms"},
    ],
}


def scenario(tmp_path=None, **flow):
    data = dict(BASE, flow=[{"name": "web", "client": "c", "server": "s", "app": "http", **flow}])
    return scenario_from_dict(data, file="workload.toml", base_dir=tmp_path or ".")


def dist(**keys):
    return SizeDistribution.model_validate(keys)


# ------------------------------------------------------------ means (worked examples)


def test_means_of_the_distributions_with_and_without_a_cap():
    assert mean_bytes(dist(kind="uniform", min="1000B", max="3000B"), None, None) == 2000
    # Cut at 2000: half below (mean 1500), half at 2000.
    assert mean_bytes(dist(kind="uniform", min="1000B", max="3000B", cap="2000B"), None, None) == 1750
    assert mean_bytes(dist(kind="exponential", mean="100B", cap="100B"), None, None) == pytest.approx(100 * (1 - math.exp(-1)))
    # Pareto shape 2, mean 200: scale 100; E[min(X, 400)] = 100 + 100^2 (1/100 - 1/400) = 175.
    pareto = dist(kind="pareto", shape=2.0, mean="200B", cap="400B")
    assert pareto.pareto_scale_bytes == 100
    assert mean_bytes(pareto, None, None) == pytest.approx(175)
    # Half the mass at 100 bytes, the rest uniform to 300: mean 150.
    assert mean_bytes(dist(kind="empirical", file="x"), None, [(100, 0.5), (300, 1.0)]) == 150
    assert mean_bytes(None, [10, 20, 60], None) == 30


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"kind": "uniform", "min": "1KB"}, "needs key 'max'"),
        ({"kind": "exponential", "mean": "1KB", "shape": 2.0}, "'shape' does not apply"),
        ({"kind": "pareto", "shape": 1.0, "mean": "1KB"}, "has no mean"),
        ({"kind": "pareto", "shape": 2.0}, "exactly one of 'mean' and 'scale'"),
        ({"kind": "uniform", "min": "3KB", "max": "1KB"}, "is above max"),
    ],
)
def test_a_distribution_missing_or_mixing_keys_is_refused(keys, message):
    with pytest.raises(ScenarioError, match=message):
        scenario(size_distribution=keys)


def test_a_cdf_file_is_read_with_units_a_header_and_comments(tmp_path):
    path = tmp_path / "sizes.csv"
    path.write_text("size,cdf\n# web search\n1KB, 0.2\n10KB, 0.7\n1000000, 1\n")
    assert load_cdf(path, "sizes.csv") == [(1000, 0.2), (10000, 0.7), (1000000, 1.0)]
    path.write_text("1KB, 0.5\n500B, 1\n")
    with pytest.raises(CdfError, match="sizes.csv:2: sizes and probabilities must not decrease"):
        load_cdf(path, "sizes.csv")
    path.write_text("1KB, 0.5\n2KB, 0.9\n")
    with pytest.raises(CdfError, match="last cumulative probability must be 1"):
        load_cdf(path, "sizes.csv")


def test_a_bad_cdf_file_names_the_scenario_key(tmp_path):
    (tmp_path / "bad.csv").write_text("1KB, 2\n")
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, size_distribution={"kind": "empirical", "file": "bad.csv"}, repeat=3)
    assert "flow[0].size_distribution.file" in str(err.value) and "bad.csv:1" in str(err.value)


@pytest.mark.parametrize(
    "flow, message",
    [
        ({"sizes": ["1KB"], "size_distribution": {"kind": "exponential", "mean": "1KB"}}, "one of 'sizes' and 'size_distribution'"),
        ({}, "one of 'sizes' and 'size_distribution'"),
        ({"sizes": ["1KB"], "arrivals": "poisson"}, "needs one of 'arrival_rate'"),
        ({"sizes": ["1KB"], "arrivals": "poisson", "load": 0.5, "gap": "1s"}, "key 'gap' applies to arrivals = 'closed'"),
        ({"sizes": ["1KB"], "load": 0.5}, "applies only to arrivals = 'poisson'"),
        ({"sizes": ["1KB"], "arrivals": "poisson", "load": 0.5, "load_link": "nosuch"}, "unknown link 'nosuch'"),
    ],
)
def test_workload_keys_that_do_not_fit_are_refused(flow, message):
    with pytest.raises(ScenarioError, match=message):
        scenario(**flow)


# ------------------------------------------------------------ runs


def run(**flow):
    pytest.importorskip("mpsim._core")
    return mpsim.run(scenario(**flow))


def test_poisson_arrivals_offer_the_load_asked_for():
    res = run(arrivals="poisson", load=0.3, size_distribution={"kind": "exponential", "mean": "50KB"})
    # 0.3 x 10 Mbit/s / 50 KB = 7.5 requests/s over about 30 s: 225, sd 15.
    n = len(res.requests)
    assert abs(n - 225) < 4 * 15, n
    done = res.requests.dropna(subset=["end_s"])
    assert len(done) >= n - 10, "nearly all requests complete at 30 % load"
    assert abs(done["size_bytes"].mean() / 50_000 - 1) < 0.25
    # Open loop: some requests overlap (they would not in a closed loop).
    starts, ends = done["start_s"].to_numpy(), done["end_s"].to_numpy()
    assert any(starts[i + 1] < ends[i] for i in range(len(done) - 1))


def test_seeds_give_different_sizes_and_the_same_seed_the_same():
    pytest.importorskip("mpsim._core")
    flow = {"repeat": 20, "size_distribution": {"kind": "pareto", "shape": 1.5, "mean": "30KB", "cap": "1MB"}}
    sizes = [list(mpsim.run(scenario(**flow), seed=s).requests["size_bytes"]) for s in (1, 2, 1)]
    assert len(sizes[0]) == 20
    assert sizes[0] == sizes[2] and sizes[0] != sizes[1]
    # Scale = mean (shape - 1) / shape = 10 KB: never below it, never above the cap.
    assert all(10_000 <= b <= 1_000_000 for b in sizes[0] + sizes[1])


def test_a_closed_loop_with_exponential_think_times_runs_its_requests_in_turn():
    res = run(repeat=30, think="exponential", gap="200ms", size_distribution={"kind": "uniform", "min": "5KB", "max": "15KB"})
    req = res.requests
    assert len(req) == 30
    gaps = (req["start_s"].to_numpy()[1:] - req["end_s"].to_numpy()[:-1])
    assert (gaps >= 0).all(), "closed loop: a request starts after the previous ended"
    assert gaps.std() > 0.05, "think times vary"
    assert req["size_bytes"].between(5000, 15000).all()


def test_an_empirical_distribution_draws_its_sizes(tmp_path):
    pytest.importorskip("mpsim._core")
    (tmp_path / "cdf.csv").write_text("2KB,0.5\n20KB,1\n")
    res = mpsim.run(scenario(tmp_path, repeat=200, size_distribution={"kind": "empirical", "file": "cdf.csv"}))
    sizes = res.requests["size_bytes"]
    assert sizes.between(2000, 20000).all()
    assert (sizes == 2000).mean() == pytest.approx(0.5, abs=0.1)
    assert sizes.mean() == pytest.approx(0.5 * 2000 + 0.5 * 11000, rel=0.1)
