"""A heavy-traffic limit lim_{ε↓0} f(ε) estimated from a series of points at several ε.

The theorems of the three papers are statements about limits: ε·E[X] → 0 (heavy-traffic
delay optimal) or lim ε·E[X] > 0 (not). A finite ε series bounds such a limit; it neither
reaches it nor, for a small positive one, tells it from zero by looking at the smallest ε
alone. Here f(ε) = a + b·ε·r(ε) is fitted by weighted least squares to the points at
the smallest ε (each weighted by the inverse variance its CI implies), a is the limit,
with a normal CI from the fit's covariance, and a χ² test on the residuals says whether
the form holds there (docs/statistics.md#limits). r(ε) is 1, or JBT-r's threshold: the
finite-ε part of its Eq. (7) term is of order 2r·ε ([JBT] §5's two-server bound), so a
threshold ⌈log 1/ε⌉ approaches its limit like ε·log(1/ε), which a straight line in ε
would extrapolate to a spurious positive intercept. With two points the fit is exact and
unchecked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

#: the points fitted: the smallest ε with an interval, at most this many, none above
#: LIMIT_MAX_EPSILON (where the O(ε) expansion may not hold yet)
LIMIT_POINTS = 3
LIMIT_MAX_EPSILON = 0.01
#: the χ² test of a + b·ε on those points: the fit holds when P(χ² ≥ observed) ≥ this
FIT_LEVEL = 0.01


@dataclass(frozen=True)
class LimitEstimate:
    """lim_{ε↓0} f(ε) = a from f(ε) = a + b·ε·r(ε) on the points at ``epsilons``."""

    value: float  # a, the limit
    ci_low: float
    ci_high: float
    slope: float  # b
    scaled: bool  # r(ε) ≠ 1 somewhere: the form is a + b·ε·r(ε)
    epsilons: tuple[float, ...]  # the ε of the points fitted, smallest first
    chi2: float  # Σ (residual/σ)² of the fit (0 with two points)
    dof: int  # points − 2
    fit_p: float  # P(χ²_dof ≥ chi2); nan with two points (nothing to test)

    @property
    def fit_holds(self) -> bool:
        """The linear form is not rejected at FIT_LEVEL (unchecked with two points)."""
        return not self.fit_p < FIT_LEVEL

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    @property
    def resolution(self) -> float:
        """δ with |limit| ≤ δ at the CI's confidence: max(|a_low|, |a_high|)."""
        return max(abs(self.ci_low), abs(self.ci_high))

    def describe(self) -> str:
        fitted = ", ".join(f"{e:g}" for e in self.epsilons)
        check = ("fit unchecked (2 points)" if math.isnan(self.fit_p)
                 else f"χ² p = {self.fit_p:.2g}")
        form = "a + b·ε·r" if self.scaled else "a + b·ε"
        return (f"lim = {self.value:.3g} [{self.ci_low:.3g}, {self.ci_high:.3g}] "
                f"({form} over ε = {fitted}; {check})")


def estimate_limit(epsilons: np.ndarray, values: np.ndarray, ci_low: np.ndarray,
                   ci_high: np.ndarray, *, scale: np.ndarray | None = None,
                   points: int = LIMIT_POINTS, max_epsilon: float = LIMIT_MAX_EPSILON,
                   confidence: float = 0.95) -> LimitEstimate | None:
    """The limit a of f(ε) = a + b·ε·r(ε) (``scale`` r, 1 when not given) from the
    ``points`` smallest ε in (0, ``max_epsilon``] whose CI is finite and of positive width;
    ``None`` with fewer than two such points or fewer than two distinct regressors ε·r.
    Each point's standard error is its CI half-width over the normal quantile of
    ``confidence`` (the points' CIs are Student-t on tens of degrees of freedom or more)."""
    eps = np.asarray(epsilons, dtype=float)
    y = np.asarray(values, dtype=float)
    low, high = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    z = float(special.ndtri(0.5 + confidence / 2))
    r = np.ones_like(eps) if scale is None else np.asarray(scale, dtype=float)
    usable = np.isfinite(eps) & np.isfinite(y) & np.isfinite(low) & np.isfinite(high) \
        & (high > low) & (eps > 0) & (eps <= max_epsilon) & np.isfinite(r)
    order = np.argsort(eps[usable], kind="stable")[:points]
    eps, y, r = eps[usable][order], y[usable][order], r[usable][order]
    se = ((high - low)[usable][order]) / (2 * z)
    regressor = eps * r
    if eps.size < 2 or np.unique(regressor).size < 2:
        return None
    design = np.column_stack([np.ones_like(eps), regressor])
    weights = 1.0 / se**2
    normal = design.T @ (design * weights[:, None])
    covariance = np.linalg.inv(normal)
    a, b = covariance @ (design.T @ (weights * y))
    residual = (y - (a + b * regressor)) / se
    chi2 = float(residual @ residual)
    dof = int(eps.size - 2)
    # = scipy.stats.chi2.sf, without importing scipy.stats (~1.5 s: the report's start)
    fit_p = float(special.chdtrc(dof, chi2)) if dof > 0 else math.nan
    half = z * math.sqrt(covariance[0, 0])
    return LimitEstimate(float(a), float(a - half), float(a + half), float(b),
                         bool(np.any(r != 1.0)), tuple(float(e) for e in eps), chi2, dof, fit_p)
