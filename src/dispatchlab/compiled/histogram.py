"""Layout of the delay histogram: exact bins below EXACT_DELAY_BINS, then
LOG_BINS_PER_OCTAVE bins per doubling (the slot loop fills it, the statistics read it)."""

from __future__ import annotations

EXACT_DELAY_BINS = 1024
LOG_BINS_PER_OCTAVE = 128
DELAY_BINS = EXACT_DELAY_BINS + LOG_BINS_PER_OCTAVE * 44
