"""The t and F quantiles of stats/t_and_f_quantiles.py against scipy.special's."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dispatchlab.core.errors import ValidationError
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


@pytest.mark.parametrize("dfn", [0.5, 1, 2, 3, 5, 11, 99, 1000])
def test_the_f_quantile_is_scipy_s(dfn: float) -> None:
    for dfd in (1, 2, 3, 10, 110, 1099, 12_000, 2e5):
        for p in (0.01, 0.5, 0.9, 0.99, 0.999):
            assert f_quantile(dfn, dfd, p) == pytest.approx(special.fdtri(dfn, dfd, p),
                                                            rel=1e-8), (dfd, p)


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
