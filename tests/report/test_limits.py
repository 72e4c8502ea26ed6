"""The heavy-traffic limit estimator (docs/statistics.md#limits) and the verdicts built
on it: a small positive limit is told from zero only where the CIs allow it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchlab.stats.limit_fits import LimitEstimate, estimate_limit

EPS = np.array([1e-3, 3e-3, 1e-2])


def _points(a: float, b: float, half: float, scale: np.ndarray | None = None):
    r = np.ones_like(EPS) if scale is None else scale
    y = a + b * EPS * r
    return EPS, y, y - half, y + half


def test_an_exact_line_gives_its_intercept_and_a_fit_that_holds() -> None:
    estimate = estimate_limit(*_points(0.25, 3.0, 0.01))
    assert estimate is not None
    assert estimate.value == pytest.approx(0.25, abs=1e-12)
    assert estimate.slope == pytest.approx(3.0, rel=1e-9)
    assert estimate.ci_low < 0.25 < estimate.ci_high and estimate.fit_holds
    assert estimate.dof == 1 and estimate.chi2 == pytest.approx(0.0, abs=1e-12)


def test_the_threshold_scale_removes_the_log_thresholds_spurious_intercept() -> None:
    r = np.ceil(np.log(1 / EPS))  # ε·E[X] ≈ 2r·ε: tends to 0
    eps, y, low, high = _points(0.0, 2.0, 0.002, r)
    straight = estimate_limit(eps, y, low, high)
    scaled = estimate_limit(eps, y, low, high, scale=r)
    assert straight is not None and scaled is not None
    assert scaled.value == pytest.approx(0.0, abs=1e-12) and scaled.scaled
    assert straight.value > 0.005 or not straight.fit_holds  # a line misreads it


def test_curvature_fails_the_fit() -> None:
    eps = EPS
    y = 0.3 * np.sqrt(eps / 1e-3) ** 3  # far from a + b·ε over a decade
    estimate = estimate_limit(eps, y, y - 1e-3, y + 1e-3)
    assert estimate is not None and not estimate.fit_holds


def test_points_without_an_interval_or_above_the_range_are_left_out() -> None:
    eps = np.array([1e-4, 1e-3, 3e-3, 0.03])
    y = np.array([0.1, 0.2, 0.21, 0.5])
    low = np.array([math.nan, 0.19, 0.2, 0.49])
    high = np.array([math.nan, 0.21, 0.22, 0.51])
    estimate = estimate_limit(eps, y, low, high)
    assert estimate is not None and estimate.epsilons == (1e-3, 3e-3)
    assert math.isnan(estimate.fit_p) and estimate.fit_holds  # two points: unchecked
    assert estimate_limit(eps[:2], y[:2], low[:2], high[:2]) is None


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.0, 1.0), b=st.floats(-50.0, 50.0), half=st.floats(1e-4, 0.1))
def test_the_interval_covers_the_intercept_of_noise_free_points(a, b, half) -> None:
    estimate = estimate_limit(*_points(a, b, half))
    assert estimate is not None
    assert estimate.ci_low <= a + 1e-9 and a - 1e-9 <= estimate.ci_high
    assert estimate.resolution >= abs(a) - 1e-9


def _estimate(value: float, low: float, high: float, p: float = 0.5) -> LimitEstimate:
    return LimitEstimate(value, low, high, 1.0, False, (1e-3, 3e-3, 1e-2), 0.5, 1, p)


def test_a_gap_is_held_only_when_its_ci_excludes_zero_and_never_refuted() -> None:
    from dispatchlab.report.limit_claims import persisting

    assert persisting(_estimate(0.09, 0.08, 0.10), 0.0156)[0] == "held"
    # JIQ on 10×0.5 at ε = 10⁻⁴: a small limit within 5 % of ζ/2 is still a gap
    assert persisting(_estimate(0.07, 0.05, 0.09), 0.1875)[0] == "held"
    status, reading = persisting(_estimate(0.0, -0.008, 0.008), 0.165)
    assert status == "below resolution" and "0.008" in reading
    assert persisting(_estimate(0.1, 0.05, 0.15, p=1e-5), 0.2)[0] == "undecided"


def test_a_vanishing_limit_is_held_only_when_its_ci_is_narrow_around_zero() -> None:
    from dispatchlab.report.limit_claims import vanishing

    assert vanishing(_estimate(0.001, -0.01, 0.012), 0.1875)[0] == "held"
    assert vanishing(_estimate(0.001, -0.01, 0.012), 0.1875, rival=0.005)[0] == \
        "below resolution"  # narrower than ζ/2's tolerance, not than the rival's limit
    assert vanishing(_estimate(0.3, 0.25, 0.35), 0.1875)[0] == "not held"
    assert vanishing(_estimate(0.007, 0.002, 0.013), 0.1875)[0] == "below resolution"
    assert vanishing(_estimate(-0.5, -0.7, -0.3), 0.1875)[0] == "undecided"


def test_two_points_judge_nothing() -> None:
    """A line through two points fits them exactly: estimate_limit says "fit unchecked",
    and no verdict may rest on it (it had returned "held: the limit's CI contains 0")."""
    from dispatchlab.report.limit_claims import TOO_FEW_POINTS, persisting, vanishing

    two = LimitEstimate(0.001, -0.01, 0.012, 1.0, False, (1e-3, 3e-3), 0.0, 0, math.nan)
    assert two.fit_holds  # unchecked, not rejected
    assert vanishing(two, 0.1875) == ("undecided", TOO_FEW_POINTS)
    gap = LimitEstimate(0.09, 0.08, 0.10, 1.0, False, (1e-3, 3e-3), 0.0, 0, math.nan)
    assert persisting(gap, 0.0156) == ("undecided", TOO_FEW_POINTS)


def test_runs_of_one_point_that_disagree_are_not_equilibrated() -> None:
    from dispatchlab.report.reproductions import _runs_disagree

    nan = math.nan
    longer = pd.Series({"epsilon_excess": 0.077, "epsilon_excess_ci_low": 0.05,
                        "epsilon_excess_ci_high": 0.104})
    # JIQ on 10×0.5 at ε = 10⁻⁴: 2·10⁹ slots gave 0.169 without an interval
    shorter = pd.Series({"epsilon_excess": 0.169, "epsilon_excess_ci_low": nan,
                         "epsilon_excess_ci_high": nan})
    assert _runs_disagree(shorter, longer)
    assert not _runs_disagree(shorter.copy().replace(0.169, 0.09), longer)
    apart = pd.Series({"epsilon_excess": 0.2, "epsilon_excess_ci_low": 0.15,
                       "epsilon_excess_ci_high": 0.25})
    assert _runs_disagree(apart, longer)


def test_an_epsilon_outside_the_model_is_never_fitted() -> None:
    """A store row with ε = −5 (or 0) was the 'smallest ε' of a fit."""
    eps = np.array([-5.0, 0.0, 1e-3, 3e-3, 1e-2])
    y = np.array([0.5, 0.4, 0.2, 0.21, 0.22])
    half = np.full(5, 0.01)
    estimate = estimate_limit(eps, y, y - half, y + half)
    assert estimate is not None and estimate.epsilons == (1e-3, 3e-3, 1e-2)


def test_a_curve_point_whose_interval_crosses_zero_is_not_judged() -> None:
    """ε·E[X] ≥ 0: a stored interval [−0.5091, 0.9779] had been a point of the page's fit;
    it is left out, and the page says why."""
    from dispatchlab.report.limit_claims import _excess_text, judged_points

    curve = pd.DataFrame({
        "x": [-5.0, 1e-3, 3e-3, 1e-2], "y": [0.3, 0.2344, 0.2, 0.21],
        "ci_low": [0.2, -0.5091, 0.19, 0.2], "ci_high": [0.4, 0.9779, 0.21, 0.22],
        "equilibrated": [True] * 4, "stable": [True] * 4, "scale": [1.0] * 4,
        "exact": [math.nan] * 4})
    assert list(judged_points(curve)["x"]) == [3e-3, 1e-2]
    text = _excess_text("10x0.5", "JIQ", curve, 0.25, False, None, "undecided")
    assert "ε = 0.001: 0.2344, its interval reaches below 0" in text
    assert "ε = -5: 0.3, ε outside the model" in text


def _curve(f, half: float, scale=None):
    """estimate_limit on noise-free points f(ε) at ε = 10⁻³, 3·10⁻³, 10⁻², each ± half."""
    eps = np.array([1e-3, 3e-3, 1e-2])
    y = np.array([f(e) for e in eps])
    return estimate_limit(eps, y, y - half, y + half,
                          scale=None if scale is None else np.array([scale(e) for e in eps]))


def test_the_evidence_standard_on_curves_with_known_limits() -> None:
    """docs/statistics.md#limits on synthetic curves (ζ/2 = 1, tolerance 0.05): a limit 0
    approached like ε; a gap of 1 % of ζ/2, held as a gap unless a control's model error
    covers it (then below resolution as a gap, held as → 0: never held both ways); a log
    threshold's approach like ε·log(1/ε), whose form a + b·ε·r recovers 0 while a plain line
    a + b·ε has a positive intercept, which its χ² rejects (why the fit's form follows the
    theorem's rate, and is checked)."""
    from dispatchlab.report.limit_claims import persisting, vanishing

    tolerance = 0.05
    zero = _curve(lambda e: 3 * e, 0.002)
    assert vanishing(zero, tolerance)[0] == "held"
    assert persisting(zero, tolerance)[0] == "below resolution"
    gap = _curve(lambda e: 0.01 + 3 * e, 0.001)
    assert persisting(gap, tolerance) == ("held", "the limit's CI excludes 0")
    assert vanishing(gap, tolerance)[0] == "below resolution"
    # a control's fit strays up to 0.02 from its true 0: a gap of 0.01 is within that
    assert persisting(gap, tolerance, error=0.02)[0] == "below resolution"
    assert vanishing(gap, tolerance, error=0.02)[0] == "held"
    assert persisting(gap, tolerance, error=0.005)[0] == "held"
    for error in (0.0, 0.005, 0.02):
        statuses = {persisting(gap, tolerance, error=error)[0],
                    vanishing(gap, tolerance, error=error)[0]}
        assert statuses != {"held"}, error  # never held both ways
    threshold = lambda e: math.ceil(math.log(1 / e))  # noqa: E731
    slow = lambda e: 0.5 * e * threshold(e)  # noqa: E731
    scaled = _curve(slow, 2e-4, scale=threshold)
    assert scaled.ci_low <= 0 <= scaled.ci_high
    assert vanishing(scaled, tolerance)[0] == "held"
    assert persisting(scaled, tolerance)[0] == "below resolution"
    line = _curve(slow, 2e-4)
    assert line.ci_low > 0  # the straight line's intercept is not the limit,
    assert line.fit_p < 0.01  # and its χ² rejects the form: no verdict rests on it
    assert persisting(line, tolerance)[0] == vanishing(line, tolerance)[0] == "undecided"
