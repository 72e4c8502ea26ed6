"""Bit counting and selection for compiled code (the minimiser masks of
:mod:`dispatchlab.policies.led.min_tree` and :mod:`dispatchlab.policies.led.min_blocks`)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def bit_count(typingctx, word):
    """The number of set bits of a 64-bit integer (one ``popcnt`` instruction)."""
    if not isinstance(word, types.Integer) or word.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64]), "llvm.ctpop.i64")
        return builder.call(function, [args[0]])

    return types.int64(word), codegen


@njit(inline="always", cache=True)
def select_bit(mask, rank, bits):
    """The position of the (``rank`` + 1)-th set bit of ``mask``, counting from bit 0, for a
    mask of at most ``bits`` bits (a power of two ≤ 64; 0 ≤ rank < bit_count(mask),
    otherwise the result is below ``bits`` and meaningless).

    A branch-free binary search: at each of log₂(bits) steps the set bits of the lower half
    of what is left (bits/2, bits/4, …, 1 wide) are counted, and the search moves into the
    upper half when ``rank`` is not among them; log₂(bits) popcounts in place of a pass
    over the bits (a pass over 32 bits was most of an L-JSQ choice with pull updates at
    N = 100)."""
    word = np.uint64(mask)
    position = np.int64(0)
    width = bits // 2
    while width >= 1:
        low = bit_count(np.int64(word & ((np.uint64(1) << np.uint64(width)) - np.uint64(1))))
        up = np.int64(rank >= low)
        rank -= low * up
        step = width * up
        word >>= np.uint64(step)
        position += step
        width //= 2
    return position
