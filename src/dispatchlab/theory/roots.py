"""Brent's root finder, step for step as ``scipy.optimize.brentq``, without scipy.optimize.

Every run finds the pooled queue's tail exponent θ* with it
(:func:`dispatchlab.theory.pooled_queue.pooled_queue_mean`); importing scipy.optimize (it
loads scipy.spatial and more) cost about a tenth of a warm run's CPU. The iteration is
scipy's C routine (``scipy/optimize/Zeros/brentq.c``, after Brent, *Algorithms for
Minimization without Derivatives*, ch. 4) with the same floating-point operations in the
same order, so the roots are bit-identical (tests/theory/test_pmf.py compares them).
"""

from __future__ import annotations

import math
from collections.abc import Callable


def brentq(f: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float,
           maxiter: int) -> float:
    """A root of ``f`` in [a, b] (f(a) and f(b) of opposite signs), to within
    ``xtol + rtol·|x|``.

    Raises:
        ValueError: f(a) and f(b) have the same sign.
        RuntimeError: no convergence in ``maxiter`` iterations.
    """
    x_pre, x_cur = float(a), float(b)
    f_pre, f_cur = float(f(x_pre)), float(f(x_cur))
    if f_pre == 0:
        return x_pre
    if f_cur == 0:
        return x_cur
    if math.copysign(1.0, f_pre) == math.copysign(1.0, f_cur):
        raise ValueError("f(a) and f(b) must have different signs")
    x_blk = f_blk = s_pre = s_cur = 0.0
    for _ in range(maxiter):
        if f_pre != 0 and f_cur != 0 and math.copysign(1.0, f_pre) != math.copysign(1.0, f_cur):
            x_blk, f_blk = x_pre, f_pre
            s_pre = s_cur = x_cur - x_pre
        if abs(f_blk) < abs(f_cur):
            x_pre, x_cur, x_blk = x_cur, x_blk, x_cur
            f_pre, f_cur, f_blk = f_cur, f_blk, f_cur
        delta = (xtol + rtol * abs(x_cur)) / 2
        s_bis = (x_blk - x_cur) / 2
        if f_cur == 0 or abs(s_bis) < delta:
            return x_cur
        if abs(s_pre) > delta and abs(f_cur) < abs(f_pre):
            if x_pre == x_blk:  # interpolate
                s_try = -f_cur * (x_cur - x_pre) / (f_cur - f_pre)
            else:  # extrapolate
                d_pre = (f_pre - f_cur) / (x_pre - x_cur)
                d_blk = (f_blk - f_cur) / (x_blk - x_cur)
                s_try = -f_cur * (f_blk * d_blk - f_pre * d_pre) / (d_blk * d_pre * (f_blk - f_pre))
            limit = 3 * abs(s_bis) - delta
            if abs(s_pre) < limit:  # C's MIN(a, b) (a NaN picks b, unlike Python's min)
                limit = abs(s_pre)
            if 2 * abs(s_try) < limit:  # a good short step
                s_pre, s_cur = s_cur, s_try
            else:  # bisect
                s_pre = s_cur = s_bis
        else:  # bisect
            s_pre = s_cur = s_bis
        x_pre, f_pre = x_cur, f_cur
        x_cur += s_cur if abs(s_cur) > delta else (delta if s_bis > 0 else -delta)
        f_cur = float(f(x_cur))
    raise RuntimeError(f"brentq: no convergence in {maxiter} iterations")
