"""Stability theory of framework Π (docs/model.md#pi-stability,
docs/model.md#stability-thresholds) and `dispatchlab check stability`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.model.service import parse_rates
from dispatchlab.policies import make_policy
from dispatchlab.policies.base import Policy
from dispatchlab.policies.framework.fractions import dispatch_fractions
from dispatchlab.theory.stability import (
    DispatchFractions,
    induced_threshold,
    kslq_throughput_optimal,
    pod_threshold,
    rank_fractions_kslq,
    rank_fractions_pod,
    transience_certificate,
)

rates_lists = st.lists(st.floats(0.05, 1.0), min_size=2, max_size=6).map(np.array)


def threshold_of(name: str, mu: np.ndarray, **params) -> float:
    return induced_threshold(dispatch_fractions(make_policy(name, **params), mu), mu).threshold_rate


def as_order_kind(fractions: DispatchFractions) -> DispatchFractions:
    """The same fractions, but only as a function of η (forces the enumeration path)."""
    return DispatchFractions("order", of_order=fractions.at)


@given(rates_lists)
@settings(max_examples=25, deadline=None)
def test_uniform_rand_threshold_is_n_times_slowest_rate(mu):
    for name in ("rand", "pi-rand", "rr", "pi-rr"):
        assert threshold_of(name, mu) == pytest.approx(mu.size * mu.min())


@given(rates_lists)
@settings(max_examples=25, deadline=None)
def test_weighted_rand_and_jsq_thresholds_are_the_total_rate(mu):
    for name in ("wrand", "pi-wrand", "jsq", "pi-jsq", "jsed", "pi-jsed"):
        region = induced_threshold(dispatch_fractions(make_policy(name), mu), mu)
        assert region.threshold_rate == pytest.approx(mu.sum())
        assert region.throughput_optimal
    # JSQ satisfies the strict majorisation of [Π] Theorem 4.4; weighted RAND only with equality
    assert induced_threshold(dispatch_fractions(make_policy("jsq"), mu), mu).heavy_traffic_optimal
    assert not induced_threshold(dispatch_fractions(make_policy("wrand"), mu),
                                 mu).heavy_traffic_optimal


def test_pod_threshold_of_the_two_class_example_is_0_673():
    mu = parse_rates("50x0.1,50x0.5")
    region = induced_threshold(dispatch_fractions(make_policy("pod", d=2), mu), mu)
    assert region.threshold_load == pytest.approx(0.673, abs=5e-4)
    assert region.threshold_rate == pytest.approx(pod_threshold(mu, 2))
    assert region.bottleneck_m == 50 and set(region.bottleneck) == set(range(50))
    assert region.exact and not region.throughput_optimal


@given(rates_lists, st.integers(1, 6))
@settings(max_examples=30, deadline=None)
def test_pod_threshold_equals_the_closed_form_and_the_enumeration(mu, d):
    d = min(d, mu.size)
    shortcut = threshold_of("pi-pod", mu, d=d)
    assert shortcut == pytest.approx(pod_threshold(mu, d))
    enumerated = induced_threshold(as_order_kind(
        DispatchFractions("rank", rank_fractions_pod(mu.size, d))), mu).threshold_rate
    assert enumerated == pytest.approx(shortcut)


@given(rates_lists, st.integers(0, 5), st.integers(1, 3))
@settings(max_examples=30, deadline=None)
def test_kslq_threshold_matches_its_majorisation_condition(mu, d, k):
    n = mu.size
    d = min(d, n - 1)
    region = induced_threshold(dispatch_fractions(make_policy("kslq", d=d, k=k), mu), mu)
    ascending = np.cumsum(np.sort(mu))
    expected = min(ascending[m - 1] * (n - d) / (m - d) for m in range(d + 1, n + 1))
    assert region.threshold_rate == pytest.approx(expected)
    assert region.throughput_optimal == kslq_throughput_optimal(mu, d)
    assert np.allclose(rank_fractions_kslq(n, d)[:d], 0.0)


@given(rates_lists)
@settings(max_examples=20, deadline=None)
def test_server_fixed_fractions_shortcut_matches_enumeration(mu):
    w = np.random.default_rng(int(mu.sum() * 1e6)).dirichlet(np.ones(mu.size))
    fractions = DispatchFractions("server", w)
    direct = induced_threshold(fractions, mu)
    assert direct.threshold_rate == pytest.approx(float(np.min(mu / w)))
    assert induced_threshold(as_order_kind(fractions), mu).threshold_rate == pytest.approx(
        direct.threshold_rate)


def test_transience_certificate_only_above_the_threshold():
    mu = np.array([0.1, 0.1, 0.5, 1.0])
    fractions = DispatchFractions("rank", rank_fractions_pod(4, 2))
    region = induced_threshold(fractions, mu)
    assert region.threshold_rate == pytest.approx(1.2)
    assert transience_certificate(fractions, mu, 1.1) is None
    certificate = transience_certificate(fractions, mu, 1.3)
    assert certificate is not None and set(certificate[0][: certificate[1]]) == {0, 1}
    # the enumeration path agrees
    assert transience_certificate(as_order_kind(fractions), mu, 1.3) is not None
    assert region.verdict(1.1) == "stable" and region.verdict(1.3) == "transient"


def test_order_dependent_fractions_without_symmetry_are_not_certified():
    """A policy whose rate into the longest queue depends on who is second (condition (i)
    of docs/model.md#pi-transience fails)."""
    mu = np.array([0.2, 0.3, 1.0])

    def of_order(eta):
        a = np.zeros(3)
        if eta[1] == 2:  # the fast server second: the longest queue gets half the jobs
            a[0] = 0.5
        a[2] += 1.0 - a.sum()
        return a

    fractions = DispatchFractions("order", of_order=of_order)
    region = induced_threshold(fractions, mu)
    # the minimiser puts server 0 (or 1) on top with server 2 second: λ̄ = 0.2/0.5
    assert region.threshold_rate == pytest.approx(0.4)
    assert region.bottleneck == (0,) and region.bottleneck_order[1] == 2
    assert not region.exact
    assert region.verdict(0.5) == "unknown"


def test_policies_outside_pi_are_refused():
    class Outside(Policy):
        name = "outside"
        summary = "not a Π member"

    with pytest.raises(ValidationError, match="not a member of framework Π"):
        dispatch_fractions(Outside(), np.ones(3))


def test_cli_check_stability_json(capsys):
    assert main(["check", "stability", "--policy", "pod", "--set", "d=2", "--servers",
                 "50x0.1,50x0.5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert math.isclose(data["threshold_load"], 0.6735, abs_tol=1e-3)
    assert data["threshold_rate"] == pytest.approx(20.204, abs=1e-3)
    assert data["bottleneck_m"] == 50 and len(data["bottleneck"]) == 50
    assert data["throughput_optimal"] is False
    assert main(["check", "stability", "--policy", "pi-jsed", "--servers", "0.2,0.5,0.9",
                 "--json", "--load", "0.95"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["throughput_optimal"] is True and data["verdict_at_load"] == "stable"


def test_cli_check_stability_human_and_errors(capsys):
    assert main(["check", "stability", "--policy", "rand", "--servers", "2x0.1,2x0.5"]) == 0
    out = capsys.readouterr().out
    assert "λ̄ = 0.4" in out and "throughput optimal: no" in out
    assert main(["check", "stability", "--policy", "balanced-pod"]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert main(["check", "stability", "--policy", "pod", "--set", "d=9", "--servers",
                 "0.5,0.5"]) == 2
    assert "d" in capsys.readouterr().err


def test_eq3_objective_changes_sign_at_the_threshold():
    """h* of Eq. (3) by enumeration: ≥ 0 below λ̄, < 0 above, for RAND on unequal rates."""
    from dispatchlab.theory.stability import DispatchFractions, eq3_objective, induced_threshold

    mu = np.array([0.1, 0.1, 0.5, 1.0])
    fractions = DispatchFractions("rank", np.full(4, 0.25))
    threshold = induced_threshold(fractions, mu).threshold_rate
    assert threshold == pytest.approx(0.4)  # N·μ_min
    below, orders, table = eq3_objective(fractions, mu, 0.99 * threshold)
    above, _, _ = eq3_objective(fractions, mu, 1.01 * threshold)
    assert below >= 0 > above
    assert orders.shape == (24, 4) and table.shape == (24, 4)


def test_majorisation_holds_exactly_for_throughput_optimal_fractions():
    from dispatchlab.theory.stability import DispatchFractions, majorisation_holds

    unequal, equal = np.array([0.1, 0.1, 0.5, 1.0]), np.full(4, 0.5)
    jsq = DispatchFractions("rank", np.eye(4)[3])
    rand = DispatchFractions("rank", np.full(4, 0.25))
    assert majorisation_holds(jsq, unequal) and majorisation_holds(rand, equal)
    assert not majorisation_holds(rand, unequal)


def test_heavy_traffic_exponential_mean_is_half_zeta():
    from dispatchlab.model.system import System
    from dispatchlab.theory.bounds import heavy_traffic_limit, limit_arrival_variance
    from dispatchlab.theory.closed_forms import heavy_traffic_exponential_mean

    system = System.build([0.5], load=0.9)
    assert heavy_traffic_exponential_mean(
        limit_arrival_variance(system), float(system.service_variances.sum())
    ) == pytest.approx(heavy_traffic_limit(system))


def test_monte_carlo_fractions_never_claim_an_exact_threshold() -> None:
    """Issue 24: a region computed from estimated fractions says so and is not exact."""
    import numpy as np

    from dispatchlab.theory.stability import DispatchFractions, induced_threshold

    mu = np.array([0.1, 0.1, 0.5, 1.0])
    exact = induced_threshold(DispatchFractions("rank", np.full(4, 0.25)), mu)
    guessed = induced_threshold(DispatchFractions("rank", np.full(4, 0.25),
                                                  method="monte-carlo (1000 cycles per order)"),
                                mu)
    assert exact.exact and not exact.estimated
    assert not guessed.exact and guessed.estimated and "exact=True" not in repr(guessed)
    assert guessed.to_dict()["estimated"] is True
