"""The per-slot imbalance pass (engine/observe.py ``_imbalance``, DQI₁ and DQI₂²): exact in
integers below its limit, with the same two roundings as the formula it implements, and
the float loop beyond it."""

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchlab.engine.observe import IMBALANCE_EXACT_LIMIT, _imbalance


def formula(queues: list[int]) -> tuple[float, float]:
    """2·(N·Σ_{N·Q_n > ΣQ} Q_n − k·ΣQ)/N and (N·ΣQ_n² − (ΣQ)²)/N in Python integers, then
    one rounding to float and one division, as the pass does."""
    n, total = len(queues), sum(queues)
    above = [q for q in queues if n * q > total]
    absolute = 2.0 * float(n * sum(above) - len(above) * total) / n
    square = float(n * sum(q * q for q in queues) - total * total) / n
    return absolute, square


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**20), min_size=1, max_size=300)
       | st.lists(st.integers(0, 40), min_size=1, max_size=300))
def test_the_pass_equals_its_formula_bit_for_bit(queues):
    Q = np.array(queues, np.int64)
    assert _imbalance(Q, int(Q.sum())) == formula(queues)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=64))
def test_the_pass_is_the_exact_deviation_to_rounding(queues):
    Q = np.array(queues, np.int64)
    n, total = len(queues), sum(queues)
    mean = Fraction(total, n)
    absolute = sum(abs(q - mean) for q in queues)
    square = sum((q - mean) ** 2 for q in queues)
    got = _imbalance(Q, total)
    assert abs(got[0] - float(absolute)) <= 1e-15 * float(absolute) + 1e-300
    assert abs(got[1] - float(square)) <= 1e-15 * float(square) + 1e-300


def test_near_and_beyond_the_exact_limit():
    """A queue that holds almost all of ΣQ just below the limit (Q_n up to 2³¹ − 1: the
    squares of 32-bit halves must still be exact) and beyond it (the float loop)."""
    for N in (2, 7, 100):
        total = int((IMBALANCE_EXACT_LIMIT / N) ** 0.5) - 1
        queues = [total - (N - 1)] + [1] * (N - 1)
        assert N * total * total < IMBALANCE_EXACT_LIMIT
        assert _imbalance(np.array(queues, np.int64), total) == formula(queues)
        big = [4 * total] + [0] * (N - 1)
        got = _imbalance(np.array(big, np.int64), 4 * total)
        exact = formula(big)
        assert np.allclose(got, exact, rtol=1e-12)
