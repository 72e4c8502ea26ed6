"""Loads within a hair of 1 keep their digits (issue 47): the pooled queue's exact mean, the
lower bound and the stability verdict as λ_Σ → μ_Σ, and the load as it is printed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.cli import main
from dispatchlab.policies import make_policy
from dispatchlab.theory.stability import induced_threshold


@pytest.mark.parametrize("epsilon", [1e-8, 1e-9])
def test_a_run_near_one_sits_above_its_bound_and_is_stable(epsilon: float) -> None:
    """JSQ on 4x0.5 at ε = 10⁻⁸, 10⁻⁹: the coupled interval (E[q] computed + E[X] measured)
    lay wholly below the every-policy lower bound (by 16.8 and 1,762 jobs) and theory said
    unstable; E[q] now keeps its digits, and JSQ is throughput optimal."""
    result = simulate(System.build("4x0.5", epsilon=epsilon), "jsq", slots=50_000, seed=1)
    assert result.pooled_queue_method == "exact"
    assert result.ci_high >= result.lower_bound_total_queue
    assert result.pooled_queue_exact >= result.lower_bound_total_queue
    assert result.theory_stability == "stable"


@pytest.mark.parametrize("policy", ["jsq", "rand", "wrand", "pod"])
def test_the_verdict_compares_rates_exactly(policy: str) -> None:
    mu = np.array([0.5, 0.5, 0.25, 0.75])
    region = induced_threshold(make_policy(policy).dispatch_fractions(mu), mu)
    below = region.mu_sum * (1 - 5e-10)
    if region.throughput_optimal:
        assert region.verdict(below) == "stable"
    assert region.verdict(region.mu_sum) == "unstable"
    assert region.verdict(region.mu_sum * (1 + 1e-15)) == "transient"


def test_check_stability_says_how_far_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "stability", "--policy", "jsq", "--load", "0.9999999995"]) == 0
    assert "at ρ = 1 − 5e-10: stable" in capsys.readouterr().out
    assert main(["check", "stability", "--policy", "jsq", "--load", "0.9999999995",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict_at_load"] == "stable"
