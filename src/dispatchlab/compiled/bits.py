"""Bit counting for compiled code (the minimiser masks of
:mod:`dispatchlab.policies.led.min_tree`)."""

from __future__ import annotations

from llvmlite import ir
from numba import types
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
