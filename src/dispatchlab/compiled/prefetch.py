"""A software prefetch for compiled code that walks data out of cache along a path it
learns one step at a time (a dispatcher's min-tree among M trees: each level's load
waits for the one before)."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the CPU to bring the cache line of ``array[index]`` in (a hint: no effect on
    results, and no fault for an index past the end, which is never read)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte_pointer = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, hint, "llvm.prefetch.p0")
        # (address, read, keep in all cache levels, data cache)
        builder.call(function, [builder.bitcast(builder.gep(data, [args[1]]), byte_pointer),
                                i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen
