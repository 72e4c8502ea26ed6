"""Dispatching preference Δ, tilt, δ-tilt and p of Eq. (5) (docs/model.md#led-tilt,
docs/model.md#led-updates)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import load_example as load_example_module
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.policies.led import as_strategy, builtin_strategy, custom_strategy
from dispatchlab.policies.led.strategies import l_jsq
from dispatchlab.theory.tilt import check_tilt, preference
from dispatchlab.theory.updates import update_probability

HETERO = np.r_[np.full(50, 0.1), np.full(50, 0.5)]


def load_example():
    return load_example_module("custom_led_strategy")


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.tuples(st.integers(0, 6), st.floats(0.05, 5.0)), min_size=1,
                       max_size=12),
       name=st.sampled_from(["jsq", "jba", "pod"]), d=st.integers(1, 4),
       weighted=st.booleans())
def test_delta_sums_to_zero_and_is_a_probability_shift(values, name, d, weighted):
    estimates = np.array([v[0] for v in values])
    mu = np.array([v[1] for v in values])
    rule = builtin_strategy(name, pod_d=min(d, mu.size),
                            jba_average="weighted" if weighted else "plain")
    delta, order = preference(rule, estimates, mu)
    assert abs(delta.sum()) < 1e-12
    probabilities = delta + mu[order] / mu.sum()
    assert np.all(probabilities >= -1e-12) and abs(probabilities.sum() - 1) < 1e-12
    assert np.all(np.diff(estimates[order]) >= 0)  # σ sorts the estimates


def test_l_jsq_exact_values_and_delta():
    mu = np.array([0.5, 0.1, 0.3, 0.1])
    delta, order = preference(as_strategy("jsq"), [3, 1, 2, 5], mu)
    assert order.tolist() == [1, 2, 0, 3]
    assert delta[0] == pytest.approx(1 - 0.1 / 1.0)
    assert delta[1:] == pytest.approx(-mu[order[1:]] / 1.0)
    report = check_tilt(as_strategy("jsq"), HETERO)
    assert report.tilted and report.delta_tilted and report.partial_sums_hold
    assert report.delta == pytest.approx(HETERO.min() / HETERO.sum())
    assert report.min_delta_1 == pytest.approx(1 - HETERO.max() / HETERO.sum())


@pytest.mark.parametrize("n, d", [(10, 2), (20, 3), (100, 2)])
def test_l_pod_homogeneous_exact_values(n, d):
    mu = np.full(n, 0.3)
    delta, _ = preference(builtin_strategy("pod", pod_d=d), np.arange(n), mu)
    assert delta[0] == pytest.approx((d - 1) / n)
    assert delta[-1] == pytest.approx(-1 / n)
    report = check_tilt(builtin_strategy("pod", pod_d=d), mu)
    assert report.tilted and report.delta_tilted
    assert report.delta == pytest.approx(1 / n) == report.delta_theory


def test_l_pod_heterogeneous_is_not_tilted():
    report = check_tilt(as_strategy("pod"), HETERO)
    assert not report.tilted and not report.delta_tilted and report.failing_case is not None


def test_l_jba_is_delta_tilted_with_the_derived_bound():
    homogeneous = check_tilt(as_strategy("jba"), np.full(10, 1.0))
    assert homogeneous.delta_tilted
    assert homogeneous.delta == pytest.approx(1 / (10 * 9))
    report = check_tilt(as_strategy("jba"), HETERO)
    assert report.tilted and report.delta_tilted
    assert report.delta >= report.delta_theory == pytest.approx((0.1 / 30) ** 2)
    weighted = check_tilt(builtin_strategy("jba", jba_average="weighted"), [8, 1, 1])
    assert weighted.tilted and weighted.delta_tilted


def test_uniform_below_average_counter_example():
    rule = custom_strategy(load_example().uniform_below_average)
    assert not check_tilt(rule, [8.0, 1.0, 1.0], samples=5000).tilted
    assert check_tilt(rule, [1.0, 1.0, 1.0], samples=5000).tilted
    # the state of docs/model.md#led-strategies: B = {fast, slow₁} (fast first); a uniform
    # choice gives the fast server 1/2 − 8/10 < 0 and then slow₁ 1/2 − 1/10 > 0
    delta, order = preference(rule, [0, 1, 5], [8.0, 1.0, 1.0], samples=20_000)
    assert order.tolist() == [0, 1, 2]
    assert delta[0] == pytest.approx(-0.3, abs=0.02) and delta[1] == pytest.approx(0.4, abs=0.02)


def test_registered_strategy_declares_exact_probabilities():
    """The example's one module registers a strategy whose exact P_n the tilt check uses,
    and the LED policy runs it by name; Monte Carlo with its rule agrees on tie-free states."""
    module = load_example()
    registered = as_strategy("below-average")
    assert check_tilt(registered, [1.0, 1.0, 1.0]).method == "exact"
    report = check_tilt(registered, [8.0, 1.0, 1.0])
    assert not report.tilted and report.delta_theory is None
    exact, _ = preference(registered, [0, 1, 5], [8.0, 1.0, 1.0])
    approx, _ = preference(custom_strategy(module.uniform_below_average), [0, 1, 5],
                           [8.0, 1.0, 1.0], samples=20_000)
    assert approx == pytest.approx(exact, abs=0.02)
    assert module.main(slots=5_000)["mean_total_queue"] > 0


def test_monte_carlo_matches_exact_on_tie_free_states():
    rule = custom_strategy(l_jsq, name="jsq-as-user")
    mu = np.array([0.2, 0.4, 0.1, 0.3])
    for estimates in ([3, 0, 2, 7], [1, 2, 3, 4]):
        approx, _ = preference(rule, estimates, mu, samples=4000)
        exact, _ = preference(as_strategy("jsq"), estimates, mu)
        assert approx == pytest.approx(exact, abs=1e-12)  # a deterministic rule


def test_update_probability_eq5():
    assert update_probability("push", 0.1, d=2, n_servers=100) == pytest.approx(0.002)
    assert update_probability("pull", 0.1, dispatchers=10) == pytest.approx(0.01)
    from dispatchlab import System
    system = System.build("10x0.3", load=0.5, dispatchers=5)
    expected = 0.5 * 2 / 10 * (1 - math.exp(-1.5 / 5))
    assert update_probability("push", 0.5, d=2, system=system, trigger="arrival") == (
        pytest.approx(expected))
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValidationError):
            update_probability("pull", bad, dispatchers=2)


def test_cli_check_tilt_json_and_bad_input(capsys):
    assert main(["check", "tilt", "--strategy", "jsq", "--servers", "8,1,1", "--json",
                 "--update", "pull", "--p", "0.5", "--dispatchers", "5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tilted"] and data["delta_tilted"]
    assert data["delta"] == pytest.approx(0.1)
    assert data["update"]["p_eq5"] == pytest.approx(0.1)
    assert main(["check", "tilt", "--strategy", "pod", "--servers", "50x0.1,50x0.5"]) == 0
    text = capsys.readouterr().out
    assert "tilted: no" in text and "Δ1=" in text
    assert main(["check", "tilt", "--strategy", "nope"]) == 2
    assert main(["check", "tilt", "--strategy", "pod", "--servers", "3x1", "--pod-d", "4"]) == 2
