"""Layout of the delay histogram: exact bins below EXACT_DELAY_BINS, then
LOG_BINS_PER_OCTAVE bins per doubling (the slot loop fills it, the statistics read it).

:func:`delay_bin` (a delay's bin, which the slot loop compiles) and :func:`delay_bin_value`
(a bin's lower edge, which the statistics read back) are the layout's two directions, kept
here together so that they cannot drift apart."""

from __future__ import annotations

import math

import numpy as np

EXACT_DELAY_BINS = 1024
LOG_BINS_PER_OCTAVE = 128
DELAY_BINS = EXACT_DELAY_BINS + LOG_BINS_PER_OCTAVE * 44


def delay_bin(delay: int) -> int:
    """The bin of a delay of ``delay`` ≥ 0 slots (the last bin collects the rest); plain
    Python that the slot loop compiles (``engine.layout.delay_bin``)."""
    if delay < EXACT_DELAY_BINS:
        return delay
    b = EXACT_DELAY_BINS + np.int64(math.log2(delay / EXACT_DELAY_BINS) * LOG_BINS_PER_OCTAVE)
    return min(b, DELAY_BINS - 1)


def delay_bin_value(index: np.ndarray | int) -> np.ndarray:
    """The delay (in slots) that a histogram bin stands for: its lower edge, the smallest
    delay whose :func:`delay_bin` it is."""
    index = np.asarray(index, dtype=float)
    octave = (index - EXACT_DELAY_BINS) / LOG_BINS_PER_OCTAVE
    return np.where(index < EXACT_DELAY_BINS, index, np.floor(EXACT_DELAY_BINS * 2.0 ** octave))
