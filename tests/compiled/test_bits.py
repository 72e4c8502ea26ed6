"""compiled.bits: the popcount and the selection of the r-th set bit that the LED minimum
indexes (min_tree, min_blocks) end their walks with."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from dispatchlab.compiled.bits import bit_count, select_bit


@njit(cache=True)
def _select(mask, rank, bits=64):
    return select_bit(mask, rank, bits)


@njit(cache=True)
def _count(mask):
    return bit_count(mask)


def _signed(word: int) -> np.int64:
    """A 64-bit word as the int64 the indexes store (bit 63 set: negative)."""
    return np.int64(word - (1 << 64) if word >= 1 << 63 else word)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 2**64 - 1) | st.integers(1, 2**16 - 1) | st.integers(1, 2**32 - 1),
       st.data())
def test_select_bit_is_the_position_of_the_rank_th_set_bit(word, data):
    positions = [i for i in range(64) if word >> i & 1]
    rank = data.draw(st.integers(0, len(positions) - 1))
    assert _count(_signed(word)) == len(positions)
    assert _select(_signed(word), rank) == positions[rank]
    width = 1 << max(positions).bit_length()  # the narrowest power of two that holds it
    assert _select(_signed(word), rank, min(width, 64)) == positions[rank]


@pytest.mark.parametrize("word", [1, 1 << 63, 2**64 - 1, (1 << 32) - 1, 0x8000000000000001])
def test_select_bit_at_the_ends_of_the_word(word):
    positions = [i for i in range(64) if word >> i & 1]
    assert [_select(_signed(word), r) for r in range(len(positions))] == positions
