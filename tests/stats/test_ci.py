"""The default confidence interval: τ̂-sized batch means, pooled replications, verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dispatchlab import System
from dispatchlab.simulation.run import simulate
from dispatchlab.simulation.summary import theory_stability
from dispatchlab.stats.autocorrelation import integrated_autocorrelation_time
from dispatchlab.stats.estimators import Estimate, batch_means, pooled_estimate


def _ar1(phi: float, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = noise[0] / np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + noise[t]
    return x


def test_integrated_autocorrelation_time_of_ar1() -> None:
    # τ = (1 + φ)/(1 − φ): 1 for white noise, 9 for φ = 0.8
    assert integrated_autocorrelation_time(_ar1(0.0, 20_000)) == pytest.approx(1.0, abs=0.1)
    assert integrated_autocorrelation_time(_ar1(0.8, 100_000)) == pytest.approx(9.0, rel=0.1)
    assert integrated_autocorrelation_time(np.ones(50)) == 1.0


def test_batches_follow_tau_and_short_series_say_so() -> None:
    x = _ar1(0.9, 2000) + 10  # τ = 19: batches of ⌈5τ̂⌉ ≈ 95 blocks, ≈ 20 of them → 12 max
    estimate = batch_means(x)
    assert 3 <= estimate.samples <= 12 and estimate.dof == estimate.samples - 1
    assert "τ̂" in estimate.method and not estimate.too_short
    slow = _ar1(0.995, 300)  # τ = 399 > the series: no interval, and a mean all the same
    short = batch_means(slow)
    assert short.too_short and "too short to say" in short.method
    assert short.mean == pytest.approx(slow.mean())


def test_pooled_replications_do_not_pinch() -> None:
    # two runs whose means happen to agree: the between-run variance alone (1 df) pinches
    runs = [Estimate(100.0, 93.0, 107.0, "bm", 20, standard_error=3.3, dof=19.0),
            Estimate(100.2, 93.2, 107.2, "bm", 20, standard_error=3.3, dof=19.0)]
    pooled = pooled_estimate(runs)
    assert pooled.dof == 39
    assert pooled.half_width == pytest.approx(2.024 * 3.3 * np.sqrt(
        (38 * 1 + 1 * 0.02 / 3.3**2) / 39 / 2), rel=1e-3)
    assert pooled.half_width > 4  # not the ±0.3 of two close means on one df
    # far apart means: the between-run variance overrules the within-run one
    apart = pooled_estimate([runs[0], Estimate(140.0, 133.0, 147.0, "bm", 20,
                                               standard_error=3.3, dof=19.0)])
    assert apart.dof == 1 and "between-run" in apart.method


def test_r2_interval_is_not_pinched_in_simulate() -> None:
    system = System.build("2x0.2,2x0.6", load=0.9, dispatchers=2)
    single = [simulate(system, "wrand", slots=200_000, seed=s, delay="off")
              for s in (1, 2)]
    both = simulate(system, "wrand", slots=200_000, replications=2, seed=7, delay="off")
    assert both.ci_dof > 10
    assert both.half_width > 0.4 * min(r.half_width for r in single)


def test_theory_cross_check() -> None:
    over = System.build("2x0.1,2x0.9", load=0.5)  # λ/N = 0.25 > μ_min = 0.1
    assert theory_stability(over, _policy("rand"))[0] == "unstable"
    assert theory_stability(over, _policy("wrand"))[0] == "stable"
    assert theory_stability(over, _policy("led"))[0] == "unknown"
    result = simulate(over, "rand", slots=50_000, delay="off")
    assert result.theory_stability == "unstable"
    assert result.stability != "stable"


def test_short_run_is_undetermined() -> None:
    system = System.build("50x0.1,50x0.5", load=0.95, dispatchers=10)
    result = simulate(system, "wrand", slots=20_000, delay="off", imbalance=False)
    assert result.stability == "undetermined"
    assert "the slowest server's relaxation time" in result.stability_evidence


def test_the_slowest_server_sets_the_relaxation_time() -> None:
    from dispatchlab.stats.standard_error_floor import heavy_traffic_relaxation

    mu, rates = np.array([0.1, 0.5]), np.array([0.095, 0.45])
    assert heavy_traffic_relaxation(np.array([20.0, 9.0]), mu, rates) == pytest.approx(16_000)
    assert math.isnan(heavy_traffic_relaxation(np.array([1.0, 1.0]), mu, mu))  # δ_n = 0


def _policy(name: str):
    from dispatchlab.policies.base import make_policy
    return make_policy(name)


def test_a_disagreement_with_theory_is_named() -> None:
    from dispatchlab.simulation.summary import _cross_check
    from dispatchlab.stats.run_stability import StabilityVerdict

    named = _cross_check(StabilityVerdict("stable", "flat"), "unstable", "λ̄ = 1")
    assert "DISAGREES with theory (unstable: λ̄ = 1)" in named.evidence
    agreed = _cross_check(StabilityVerdict("undetermined", "short"), "unstable", "λ̄ = 1")
    assert agreed.evidence == "short"
