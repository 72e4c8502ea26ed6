"""A response-time quantile's interval is never narrower than the histogram bin it falls
in (continuous.summary.quantiles): four replications whose 99th percentiles share a bin
had given an interval of width 0, past what the histogram resolves."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab.continuous import engine
from dispatchlab.continuous.summary import SECTIONS, Replication, quantiles


def replication(bin_index: int) -> Replication:
    histogram = np.zeros((SECTIONS, engine.HISTOGRAM_BINS))
    histogram[:, bin_index] = 100.0
    return Replication(np.zeros((8, 4)), histogram, np.zeros(8, dtype=np.int64))


@pytest.mark.parametrize("runs", [1, 4])
def test_replications_in_one_bin_keep_the_bin_s_width(runs) -> None:
    index = 700  # 10^(−6 + 7.005) ≈ 10.1 time units
    estimate = quantiles([replication(index) for _ in range(runs)], (0.99,))[0.99]
    low_edge = 10 ** (engine.HISTOGRAM_LOW_EXP + index / engine.HISTOGRAM_PER_DECADE)
    high_edge = 10 ** (engine.HISTOGRAM_LOW_EXP + (index + 1) / engine.HISTOGRAM_PER_DECADE)
    assert estimate.ci_low == pytest.approx(low_edge) and estimate.ci_high == pytest.approx(
        high_edge)
    assert low_edge < estimate.mean < high_edge


def test_a_wide_interval_is_left_as_it_is() -> None:
    runs = [replication(index) for index in (600, 650, 700, 750)]
    estimate = quantiles(runs, (0.5,))[0.5]
    assert estimate.ci_high - estimate.ci_low > 10  # Student t over four far apart values
