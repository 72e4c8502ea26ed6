"""The t and F quantiles of stats/t_and_f_quantiles.py against scipy.special's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dispatchlab.core.errors import ValidationError
from dispatchlab.stats import pooled_estimate, replication_estimate
from dispatchlab.stats.t_and_f_quantiles import (
    f_quantile,
    regularized_beta,
    student_t_quantile,
)

DOFS = [0.3, 0.5, 1, 1.5, 2, 3, 4.5, 9, 11, 29, 100, 999, 1e4, 5e4, 99_999, 1e5, 1e6, 1e9,
        math.inf]
LEVELS = [1e-6, 0.025, 0.5000001, 0.55, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 1 - 1e-8]


@pytest.mark.parametrize("dof", DOFS)
def test_the_t_quantile_is_scipy_s(dof: float) -> None:
    for p in LEVELS:
        expected = float(special.stdtrit(dof, p))
        assert student_t_quantile(dof, p) == pytest.approx(expected, rel=1e-9, abs=1e-300), p
    if math.isfinite(dof) and dof >= 1:  # the levels the intervals use: far closer
        for p in (0.975, 0.995):
            assert student_t_quantile(dof, p) == pytest.approx(special.stdtrit(dof, p),
                                                               rel=1e-11)


F_DOFS = [0.5, 0.7, 1, 2, 3, 10, 110, 1099, 12_000, 1e5, 2e5]  # the resolved range's


@pytest.mark.parametrize("dfn", F_DOFS)
def test_the_f_quantile_is_scipy_s(dfn: float) -> None:
    for dfd in F_DOFS:
        for p in (1e-6, 0.01, 0.5, 0.9, 0.99, 0.999, 1 - 1e-6):
            assert f_quantile(dfn, dfd, p) == pytest.approx(special.fdtri(dfn, dfd, p),
                                                            rel=1e-8), (dfd, p)


@pytest.mark.parametrize(("dfn", "dfd"), [(1e-300, 3), (0.01, 0.01), (3, 0.3), (1, 1e12),
                                          (1e12, 1e12), (1e300, 2)])
def test_outside_the_resolved_degrees_of_freedom_scipy_answers(dfn: float, dfd: float
                                                               ) -> None:
    """Tiny and huge degrees of freedom (where the continued fraction and log B lose
    digits: 3·10⁻³ relative at 10¹²) go to scipy.special, whatever it says."""
    for p in (0.01, 0.5, 0.99):
        assert f_quantile(dfn, dfd, p) == special.fdtri(dfn, dfd, p)
    for dof in (1e-300, 1e-3, 0.3):
        assert student_t_quantile(dof, 0.975) == special.stdtrit(dof, 0.975)


def test_the_regularized_beta_is_scipy_s() -> None:
    for a in (0.5, 1, 2.5, 5, 49.5, 500):
        for b in (0.5, 1, 5, 55, 5000):
            for x in (0.0, 1e-6, 0.01, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999999, 1.0):
                assert regularized_beta(a, b, x) == pytest.approx(special.betainc(a, b, x),
                                                                  rel=1e-11, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(dof=st.floats(0.5, 1e6), p=st.floats(1e-6, 1 - 1e-6))
def test_the_t_quantile_is_odd_and_increasing(dof: float, p: float) -> None:
    t = student_t_quantile(dof, p)
    assert student_t_quantile(dof, 1 - p) == pytest.approx(-t, rel=1e-9, abs=1e-12)
    if p < 0.999:
        assert student_t_quantile(dof, p + 1e-3) > t


@pytest.mark.parametrize(("dof", "p"), [(0, 0.5), (-1, 0.5), (math.nan, 0.5), (3, 0), (3, 1),
                                        (3, math.nan), (3, 1.5)])
def test_a_quantile_out_of_its_domain_is_refused(dof: float, p: float) -> None:
    with pytest.raises(ValidationError):
        student_t_quantile(dof, p)
    with pytest.raises(ValidationError):
        f_quantile(dof, 3, p)


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.2, math.nan, math.inf, "0.95", None,
                                        True, np.float64(1.0)])
def test_an_interval_s_confidence_out_of_its_domain_names_the_field(confidence: object
                                                                    ) -> None:
    """scipy had answered nan (or ±inf) for these; the public estimators now refuse them
    with one line naming ``confidence``."""
    with pytest.raises(ValidationError, match=r"^confidence: must be a number strictly"):
        replication_estimate(np.array([1.0, 2.0, 4.0]), confidence)  # type: ignore[arg-type]
    runs = [replication_estimate(np.array([1.0, 2.0, 4.0])),
            replication_estimate(np.array([1.5, 2.5, 3.0]))]
    with pytest.raises(ValidationError, match=r"^confidence: "):
        pooled_estimate(runs, confidence)  # type: ignore[arg-type]


def test_degrees_of_freedom_beyond_any_run_still_give_the_normal_quantile() -> None:
    from dispatchlab.stats.estimators import t_quantile

    assert t_quantile(math.inf) == pytest.approx(1.959963984540054, rel=1e-15)
    assert t_quantile(1e300) == pytest.approx(1.959963984540054, rel=1e-15)
    assert math.isnan(t_quantile(0)) and math.isnan(t_quantile(math.nan))


@pytest.mark.parametrize("confidence", [np.float64(0.9), np.float32(0.9)])
def test_a_numpy_confidence_is_a_number_like_any_other(confidence: object) -> None:
    """A level read from an array gives the interval of the same float (scipy.special had
    taken them; a check of the exact type had refused them)."""
    values = np.array([1.0, 2.0, 4.0, 3.5])
    same = replication_estimate(values, float(confidence))  # type: ignore[arg-type]
    assert replication_estimate(values, confidence) == same  # type: ignore[arg-type]
