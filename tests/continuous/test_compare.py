"""Paired comparisons in continuous time: the pairs' interval covers the exact difference
and is narrower than the unpaired one; the same policy twice differs by exactly 0."""

from __future__ import annotations

import pytest

from dispatchlab.continuous import compare_continuous
from dispatchlab.continuous.closed_forms import jsq_two_servers_response
from dispatchlab.core.errors import ValidationError


@pytest.mark.parametrize("replications", [1, 10])
def test_jsq_against_random_on_two_servers(replications, in_ci) -> None:
    comparison = compare_continuous([1.0, 1.0], "jsq", "random", load=0.8,
                                    jobs=2_000_000 // replications,
                                    replications=replications, seed=4, workers=1)
    rate = comparison.result_a.arrival_rate
    exact = jsq_two_servers_response(rate, (1.0, 1.0)) - 1 / (1 - rate / 2)  # M/M/1 each
    d = comparison.difference
    in_ci(d.mean, d.ci_low, d.ci_high, exact, max_relative_half_width=0.05,
          label=f"E[T] JSQ − random, R = {replications}")
    assert d.half_width < comparison.unpaired_half_width
    assert "jsq − random" in str(comparison)


def test_the_same_policy_under_two_names_differs_by_exactly_zero() -> None:
    comparison = compare_continuous("4x1", "jsq-d", "pod", load=0.8, jobs=20_000, workers=1)
    assert (comparison.difference.mean, comparison.difference.half_width) == (0.0, 0.0)
    assert "same choices" in comparison.difference.method


def test_parameters_of_one_policy_are_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        compare_continuous("4x1", "jsq-d", "jsq", load=0.8, policy_params={"d": 3})
    assert caught.value.field == "policy_params"
