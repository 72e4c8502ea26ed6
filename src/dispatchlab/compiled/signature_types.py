"""Short names for the numba types that the compiled steps' signatures are written in."""

from __future__ import annotations

from numba import types

I64 = types.int64
F64 = types.float64
BOOL = types.boolean
#: contiguous vectors and row-major matrices
I64_VEC = types.int64[::1]
F64_VEC = types.float64[::1]
U64_VEC = types.uint64[::1]
I64_MAT = types.int64[:, ::1]
F64_MAT = types.float64[:, ::1]
