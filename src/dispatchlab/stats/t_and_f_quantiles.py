"""Student-t and F quantiles in plain Python, for the confidence intervals of every run.

scipy.special's ``stdtrit`` and ``fdtri`` give the same numbers, but importing scipy.special
(or scipy.linalg) loads scipy's array-API layer, which touches every attribute of numpy and
so imports numpy.f2py, numpy.testing and what they import: ``import numpy, scipy.special``
takes 0.27 s against 0.08 s for numpy alone, about a quarter of a warm classical
``dispatchlab run`` (AMD EPYC). Neither the estimators nor the pooled queue's anchor need
it (theory/pmf.py computes its laws; theory/pooled_queue.py solves chains of up to 1,200
states with numpy). Both quantiles invert the
regularized incomplete beta function I_x(a, b), evaluated by its continued fraction
(the modified Lentz method, as *Numerical Recipes* evaluates it), with Newton steps kept
inside a bracket. tests/stats/test_t_and_f_quantiles.py compares them with scipy.special: t to
1e-9 relative for ν from 0.5 to ∞ and p from 10⁻⁶ to 1 − 10⁻⁸ (1e-11 at the levels the
intervals use, 0.975 and 0.995), F to 1e-8 for d₁, d₂ from 0.5 to 2·10⁵ and p from 10⁻⁶
to 1 − 10⁻⁶. Outside those degrees of freedom (:data:`RESOLVED_DOF`) scipy.special
answers.

For ν ≥ 10⁴ degrees of freedom the t quantile is the Cornish–Fisher expansion about the
normal quantile (Abramowitz & Stegun 26.7.5, four terms; its next term is of order
ν⁻⁵), which there is closer to scipy than the continued fraction, whose terms then number
in the hundreds.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any

from dispatchlab.core.errors import require

#: relative accuracy of the continued fraction and of the inversions
_EPS = 1e-15
_TINY = 1e-300
#: the t quantile of ν at or above this is the Cornish–Fisher expansion
LARGE_DOF = 1e4
#: the degrees of freedom this module's inversions resolve (checked against scipy.special
#: to 1e-8); outside, scipy.special answers — for the F law with more degrees of freedom
#: the continued fraction needs more terms than it is given and log B(a, b) loses digits
#: (3·10⁻³ relative at 10¹²), and below 0.5 the quantiles run to 10¹⁵⁰ and beyond, where
#: neither resolves them (no interval of a run has fewer than 1)
RESOLVED_DOF = (0.5, 2e5)


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) = B(x; a, b)/B(a, b) for a, b > 0 and 0 ≤ x ≤ 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(a * math.log(x) + b * math.log1p(-x)
                     + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (converges for x < (a + 1)/(a + b + 2), in about
    √max(a, b) terms)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    return h


def _t_upper_tail(t: float, dof: float) -> float:
    """P(T > t) for t ≥ 0, from I at whichever of ν/(ν + t²) and t²/(ν + t²) is the
    smaller (the other rounds to 1 for t² ≪ ν)."""
    square = t * t
    if square < dof:
        return 0.5 - 0.5 * regularized_beta(0.5, dof / 2.0, square / (dof + square))
    return 0.5 * regularized_beta(dof / 2.0, 0.5, dof / (dof + square))


def _log_t_density(t: float, dof: float) -> float:
    return (math.lgamma((dof + 1.0) / 2.0) - math.lgamma(dof / 2.0)
            - 0.5 * math.log(dof * math.pi) - (dof + 1.0) / 2.0 * math.log1p(t * t / dof))


def _newton_step(excess: float, log_density: float) -> float:
    """−excess/density, or nan where the density underflows (then the bracket bisects)."""
    return -excess * math.exp(-log_density) if log_density > -700.0 else math.nan


@lru_cache(maxsize=512)
def student_t_quantile(dof: float, p: float) -> float:
    """t_{ν, p}: P(T_ν ≤ t) = p, for ν > 0 (``inf`` for the normal law) and 0 < p < 1."""
    require(dof > 0, "dof", f"must be > 0 (got {dof!r})")
    require(0.0 < p < 1.0, "p", f"must be strictly between 0 and 1 (got {p!r})")
    if p < 0.5:
        return -student_t_quantile(dof, 1.0 - p)
    if p == 0.5:
        return 0.0
    z = NormalDist().inv_cdf(p)
    if dof >= LARGE_DOF:
        return _cornish_fisher(z, dof)
    if dof < RESOLVED_DOF[0]:
        return _scipy_special().stdtrit(dof, p).item()
    if dof == 1.0:  # Cauchy: cot(π(1 − p)), precise as p nears 1
        return 1.0 / math.tan(math.pi * (1.0 - p))
    tail = 1.0 - p  # solve P(T > t) = tail: precise for p near 1
    low, high = 0.0, max(1.0, abs(_cornish_fisher(z, max(dof, 1.0))))
    while _t_upper_tail(high, dof) > tail:
        low, high = high, 2.0 * high
    t = 0.5 * (low + high)
    for _ in range(2_000):
        excess = _t_upper_tail(t, dof) - tail
        if excess > 0.0:
            low = t
        else:
            high = t
        newton = t - _newton_step(excess, _log_t_density(t, dof))
        if abs(newton - t) <= _EPS * t or high - low <= _EPS * high:
            return newton if low <= newton <= high else t
        t = newton if low < newton < high else 0.5 * (low + high)
    return t


def _cornish_fisher(z: float, dof: float) -> float:
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + (g1 + (g2 + (g3 + g4 / dof) / dof) / dof) / dof


@lru_cache(maxsize=512)
def f_quantile(dfn: float, dfd: float, p: float) -> float:
    """F_{d₁, d₂, p}: P(F ≤ f) = p for the F law with d₁, d₂ > 0 degrees of freedom."""
    require(dfn > 0 and dfd > 0, "dof", f"must be > 0 (got {dfn!r}, {dfd!r})")
    require(0.0 < p < 1.0, "p", f"must be strictly between 0 and 1 (got {p!r})")
    if not (RESOLVED_DOF[0] <= min(dfn, dfd) and max(dfn, dfd) <= RESOLVED_DOF[1]):
        return _scipy_special().fdtri(dfn, dfd, p).item()
    a, b = dfn / 2.0, dfd / 2.0
    # x = d₁f/(d₁f + d₂) above its mean may lie near 1: there solve I_{1−x}(b, a) = 1 − p
    # for 1 − x, so that f keeps its digits
    if p > regularized_beta(a, b, a / (a + b)):
        y = _inverse_regularized_beta(b, a, 1.0 - p)
        return dfd * (1.0 - y) / (dfn * y)
    x = _inverse_regularized_beta(a, b, p)
    return dfd * x / (dfn * (1.0 - x))


def _inverse_regularized_beta(a: float, b: float, p: float) -> float:
    """x with I_x(a, b) = p (Newton steps inside a shrinking bracket)."""
    low, high = 0.0, 1.0
    x = a / (a + b)  # the mean
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    for _ in range(2_000):
        excess = regularized_beta(a, b, x) - p
        if excess < 0.0:
            low = x
        else:
            high = x
        newton = x + _newton_step(
            excess, (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - log_beta)
        if abs(newton - x) <= _EPS * x or high - low <= _EPS * high:
            return newton if low <= newton <= high else x
        x = newton if low < newton < high else 0.5 * (low + high)
    return x


def _scipy_special() -> Any:
    from scipy import special  # (outside the resolved degrees of freedom only)

    return special
