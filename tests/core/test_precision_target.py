"""The size of a precision run's next round (shared by the slotted and continuous-time
rounds): about R·(h/h*)² replications in all, in whole rounds, never past the budget."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from dispatchlab.core.precision_target import PRECISION_OVERSHOOT, next_round


def test_the_square_law_sizes_the_round() -> None:
    # half-width twice the aim: four times the replications, 1.2 beyond: 10 × 4 × 1.2 = 48
    assert next_round(10, 2.0, 1.0, 1_000, 1) == math.ceil(10 * 4 * PRECISION_OVERSHOOT) - 10
    assert next_round(10, 2.0, 1.0, 1_000, 4) == 40  # 38 rounded up to whole rounds of 4
    assert next_round(10, 2.0, 1.0, 30, 4) == 20  # the budget caps it


def test_without_an_interval_the_replications_double() -> None:
    assert next_round(3, math.nan, 1.0, 100, 1) == 3
    assert next_round(3, 0.0, 1.0, 100, 1) == 3


def test_a_target_out_of_reach_spends_the_budget() -> None:
    assert next_round(2, 1e300, 1e-300, 64, 2) == 62


@given(count=st.integers(1, 10**6), extra=st.integers(1, 10**6),
       half=st.one_of(st.floats(0, 1e308), st.just(math.nan), st.just(math.inf)),
       aim=st.floats(0, 1e308), per_round=st.integers(1, 64))
def test_a_round_adds_at_least_one_and_stays_in_the_budget(count, extra, half, aim,
                                                            per_round) -> None:
    more = next_round(count, half, aim, count + extra, per_round)
    assert 1 <= more <= extra
    assert more % per_round == 0 or more == extra
