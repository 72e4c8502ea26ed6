"""Statistics: batch means, replications, MSER-5, delay quantiles and the stability verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal
from scipy import stats as scipy_stats

from dispatchlab import System, simulate
from dispatchlab.compiled.histogram import DELAY_BINS, LOG_BINS_PER_OCTAVE, delay_bin_value
from dispatchlab.engine.layout import delay_bin
from dispatchlab.policies import make_policy
from dispatchlab.simulation.summary import server_arrival_rates
from dispatchlab.stats import (
    batch_means,
    delay_quantiles,
    mser5_truncation,
    replication_estimate,
    stability_verdict,
)
from dispatchlab.stats.estimators import Estimate, with_standard_error_floor
from dispatchlab.stats.run_stability import below_lower_bound
from dispatchlab.stats.standard_error_floor import heavy_traffic_standard_error

# -- confidence intervals ----------------------------------------------------------------------


def coverage(series: np.ndarray, true_mean: float) -> float:
    hits = [batch_means(row).ci_low <= true_mean <= batch_means(row).ci_high for row in series]
    return float(np.mean(hits))


def test_batch_means_coverage_iid():
    """400 i.i.d. series: the 95 % CI covers the mean in 91–99 % of them (±3.5 binomial SE)."""
    rng = np.random.default_rng(1)
    assert 0.91 <= coverage(rng.normal(3.0, 2.0, (400, 2_000)), 3.0) <= 0.99


def test_batch_means_coverage_ar1():
    """AR(1) with φ = 0.9 (correlation time ≈ 19): batches of 1 000 points are nearly
    independent, so batch means still cover; a naive i.i.d. interval would not."""
    rng = np.random.default_rng(2)
    phi, n = 0.9, 20_000
    series = signal.lfilter([1.0], [1.0, -phi], rng.normal(0.0, 1.0, (300, n)), axis=1) + 5.0
    assert 0.9 <= coverage(series, 5.0) <= 0.99
    naive_half = 1.96 * series[0].std() / math.sqrt(n)
    assert batch_means(series[0]).half_width > 2 * naive_half  # √((1+φ)/(1−φ)) ≈ 4.4


def test_batch_means_degenerate_and_replications():
    single = batch_means(np.array([2.0]))
    assert single.mean == 2.0 and math.isnan(single.ci_low)
    values = np.array([1.0, 2.0, 4.0, 5.0])
    estimate = replication_estimate(values)
    half = scipy_stats.t.ppf(0.975, 3) * values.std(ddof=1) / 2
    assert estimate.mean == 3.0
    assert estimate.ci_low == pytest.approx(3.0 - half) and estimate.ci_high == pytest.approx(
        3.0 + half)
    assert estimate.samples == 4


# -- the heavy-traffic floor on the standard error -----------------------------------------------


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_heavy_traffic_se_is_below_the_exact_mm1_se_and_tight_near_saturation(rho):
    """M/M/1 (μ = 1): the time average of Q over T has the exact asymptotic variance
    2ρ(1+ρ)/(μ(1−ρ)⁴)/T (Whitt 1989); the floor 4q³/(δT) with q = ρ/(1−ρ), δ = μ − λ is
    that times 2ρ²/(1+ρ): never above it, and within 0.2 % of it at ρ = 0.999."""
    mu, slots = 1.0, 10**6
    q = rho / (1 - rho)
    exact = math.sqrt(2 * rho * (1 + rho) / (mu * (1 - rho) ** 4) / slots)
    floor = heavy_traffic_standard_error(np.array([q]), np.array([mu]), np.array([rho]), slots)
    assert floor == pytest.approx(exact * math.sqrt(2 * rho**2 / (1 + rho)), rel=1e-12)
    assert floor <= exact
    if rho >= 0.999:
        assert floor == pytest.approx(exact, rel=2e-3)


def test_heavy_traffic_se_adds_independent_servers_and_refuses_overload():
    q, mu, lam = np.array([3.0, 5.0]), np.array([0.5, 0.2]), np.array([0.4, 0.15])
    one = [heavy_traffic_standard_error(q[i:i + 1], mu[i:i + 1], lam[i:i + 1], 100)
           for i in range(2)]
    both = heavy_traffic_standard_error(q, mu, lam, 100)
    assert both == pytest.approx(math.hypot(*one))
    assert math.isnan(heavy_traffic_standard_error(q, mu, np.array([0.5, 0.1]), 100))
    assert math.isnan(heavy_traffic_standard_error(q, mu, lam, 0))
    assert math.isnan(heavy_traffic_standard_error(np.array([np.nan, 1.0]), mu, lam, 100))


def test_standard_error_floor_only_widens():
    estimate = Estimate(10.0, 9.0, 11.0, "batch means", 12, standard_error=0.45, dof=11.0)
    assert with_standard_error_floor(estimate, 0.2, "model") is estimate
    assert with_standard_error_floor(estimate, math.nan, "model") is estimate
    wider = with_standard_error_floor(estimate, 0.9, "model")
    half = scipy_stats.t.ppf(0.975, 11) * 0.9
    assert (wider.ci_low, wider.ci_high) == (pytest.approx(10 - half), pytest.approx(10 + half))
    assert wider.dof == 11.0 and wider.standard_error == 0.9 and "model" in wider.method
    too_short = Estimate(10.0, math.nan, math.nan, "too short to say", 3)
    assert with_standard_error_floor(too_short, 5.0, "model") is too_short


def test_server_arrival_rates_where_the_split_is_fixed():
    system = System.build("2x0.2,2x0.6", load=0.9)
    lam = system.arrival_rate
    weighted = server_arrival_rates(system, make_policy("wrand"))
    assert weighted == pytest.approx(lam * np.array([0.125, 0.125, 0.375, 0.375]))
    assert server_arrival_rates(system, make_policy("rand")) == pytest.approx(np.full(4, lam / 4))
    assert server_arrival_rates(system, make_policy("jsq")) is None  # depends on the state
    single = System.build("0.5", load=0.5)
    assert server_arrival_rates(single, make_policy("jsq")) == pytest.approx([0.25])


def test_default_ci_of_a_saturated_weighted_rand_run_is_floored():
    """A short weighted-RAND run near saturation: the reported CI is at least as wide as the
    heavy-traffic model SE from its own mean queues demands (a floor of the plain
    estimator's SE: it models the variance of ΣQ's time average)."""
    system = System.build("2x0.1,2x0.5", load=0.95)
    result = simulate(system, "wrand", slots=200_000, seed=3, delay="off",
                      estimator="plain")
    rates = server_arrival_rates(system, make_policy("wrand"))
    floor = heavy_traffic_standard_error(np.array(result.mean_queues), system.mu, rates,
                                         200_000 - result.warmup)
    assert result.ci_dof >= 1 and math.isfinite(floor)
    assert "SE raised to the heavy-traffic model SE" in result.ci_method  # binds on this run
    t = scipy_stats.t.ppf(0.975, result.ci_dof)
    assert (result.ci_high - result.ci_low) / 2 >= t * floor * (1 - 1e-9)


# -- warm-up -------------------------------------------------------------------------------------


def test_relative_half_width_is_the_precision_of_the_interval():
    values = np.array([9.0, 10.0, 11.0, 10.0])
    estimate = replication_estimate(values)
    t = scipy_stats.t.ppf(0.975, values.size - 1)
    expected = t * values.std(ddof=1) / math.sqrt(values.size) / values.mean()
    assert estimate.relative_half_width == pytest.approx(expected)
    assert replication_estimate(-values).relative_half_width == pytest.approx(expected)
    assert Estimate(0.0, -1.0, 1.0, "t", 4).relative_half_width == math.inf
    assert math.isnan(replication_estimate(np.array([3.0])).relative_half_width)  # no CI


def test_mser5_finds_an_obvious_transient():
    """A transient 50·e^(−i/15) over 1 000 stationary blocks: MSER-5 truncates past most of
    it (≥ 40 blocks, where the transient is 3·σ) but far less than the search limit."""
    rng = np.random.default_rng(3)
    i = np.arange(1_000)
    blocks = 50 * np.exp(-i / 15) + rng.normal(0.0, 1.0, i.size)
    cut = mser5_truncation(blocks)
    assert cut % 5 == 0
    assert 40 <= cut <= 150
    assert abs(blocks[cut:].mean()) < 0.2


# -- delay quantiles -------------------------------------------------------------------------


def test_delay_quantiles_exact_bins():
    histogram = np.zeros(DELAY_BINS, np.int64)
    histogram[[0, 1, 2, 3]] = [10, 30, 40, 20]  # cumulative 10, 40, 80, 100
    assert delay_quantiles(histogram, (0.05, 0.1, 0.4, 0.5, 0.8, 0.9, 1.0)) == [
        0.0, 0.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert all(math.isnan(q) for q in delay_quantiles(np.zeros(10), (0.5,)))


@pytest.mark.parametrize("delay", [1_023, 1_024, 1_500, 5_000, 123_456, 10**7])
def test_delay_log_bins_within_their_resolution(delay):
    """Above 1 024 slots the histogram is logarithmic: a bin's value is within 0.6 %."""
    index = int(delay_bin(delay))
    value = float(delay_bin_value(index))
    assert value <= delay < value * (1 + 1 / LOG_BINS_PER_OCTAVE) + 1


# -- stability verdict ---------------------------------------------------------------------------


def verdict(blocks: np.ndarray, **kwargs: object) -> str:
    options = dict(hit_bound=False, bound=10**6, slots_run=blocks.size * 100, overloaded=False)
    options.update(kwargs)
    return stability_verdict(blocks, 100, **options).verdict  # type: ignore[arg-type]


def test_stability_verdict_on_synthetic_series():
    rng = np.random.default_rng(4)
    t = np.arange(900)
    assert verdict(20 + rng.normal(0, 2, t.size)) == "stable"
    assert verdict(5 + 0.5 * t + rng.normal(0, 2, t.size)) == "unstable"
    assert verdict(20 + rng.normal(0, 2, t.size), hit_bound=True) == "unstable"
    assert verdict(20 + rng.normal(0, 2, 10)) == "undetermined"
    assert verdict(20 + rng.normal(0, 2, t.size), overloaded=True) == "unstable"  # ρ ≥ 1
    # a slow drift that is small against the level is not instability
    assert verdict(1_000 + 0.05 * t + rng.normal(0, 2, t.size)) == "stable"


def test_an_undetermined_trend_says_run_longer():
    """A significant trend whose growth is neither clear (≥ ½ of the level) nor negligible
    (< 20 %): undetermined, and the evidence says what to do."""
    t = np.arange(900)
    sawtooth = 1_000 + 0.4 * t + 40 * np.sin(t / 20)
    result = stability_verdict(sawtooth, 100, hit_bound=False, bound=10**6,
                               slots_run=90_000, overloaded=False)
    assert result.verdict == "undetermined" and result.evidence.endswith("run longer")


def test_a_mean_below_the_lower_bound_is_flagged_with_or_without_a_ci():
    bound = 7.8e7
    assert "CI up to 900" in below_lower_bound(900.0, bound, 800.0)
    # too short a run for a CI: the mean alone is compared
    assert "mean ΣQ 782.8 (no CI)" in below_lower_bound(math.nan, bound, 782.8)
    assert below_lower_bound(math.nan, bound) == ""
    assert below_lower_bound(9e7, bound, 800.0) == ""  # the CI reaches the bound
    assert below_lower_bound(math.nan, math.inf, 800.0) == ""  # no finite bound


def test_unstable_uniform_rand_reports_no_mean():
    """Uniform RAND on 50×0.1 + 50×0.5 at ρ = 0.9: λ_Σ/N = 0.27 > μ_min = 0.1
    (docs/model.md#random-routing)."""
    system = System.build("50x0.1,50x0.5", load=0.9)
    result = simulate(system, "rand", slots=40_000, seed=5)
    assert result.stability == "unstable", result.stability_evidence
    assert math.isnan(result.mean_total_queue) and math.isnan(result.ci_low)
    assert math.isnan(result.mean_delay) and all(math.isnan(q) for q in result.mean_queues)
    assert result.to_dict()["mean_total_queue"] is None


def test_stable_weighted_rand_is_stable():
    """Weighted RAND (per job, so that the slow servers relax within the run) at ρ = 0.9."""
    system = System.build("50x0.1,50x0.5", load=0.9, dispatch="per_job")
    result = simulate(system, "wrand", slots=200_000, seed=5)
    assert result.stability == "stable", result.stability_evidence
    assert math.isfinite(result.mean_total_queue) and result.ci_low < result.ci_high


def test_near_critical_short_run_is_not_called_stable():
    """λ = 0.499, μ = 0.5: 10⁵ slots are far below ζ/ε², so a flat-looking trace must not
    be called stable, and the CI would lie below the proven lower bound anyway."""
    system = System.build([0.5], rate=0.499, arrivals="bernoulli")
    for seed in range(3):
        result = simulate(system, "jsq", slots=100_000, seed=seed)
        assert result.stability != "stable", result.stability_evidence


def test_overloaded_run_reports_no_mean():
    system = System.build("2x0.5", load=1.0, allow_unstable=True)
    result = simulate(system, "jsq", slots=20_000, seed=1)
    assert result.stability == "unstable" and math.isnan(result.mean_total_queue)


def test_bound_passed_in_the_last_slot_is_reported(tmp_path):
    """ΣQ passes the bound in the very last slot: still a stop by the bound (unstable)."""
    trace = tmp_path / "burst.csv"
    trace.write_text("0\n0\n0\n0\n5\n")  # rate 1 < μ_Σ = 2
    system = System.build([2.0], arrivals=f"trace:{trace}", service="deterministic")
    result = simulate(system, "jsq", slots=5, warmup=0, bound=2, seed=0)
    assert result.slots_run == 5
    assert result.stability == "unstable" and "bound 2 in slot 4" in result.stability_evidence
