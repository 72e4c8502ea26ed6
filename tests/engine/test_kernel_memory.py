"""A kernel's fresh memory (engine.interface.Kernel.memory): copies, in the loop's layout,
each starting on a cache line."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dispatchlab.engine.interface import CACHE_LINE, Kernel, line_aligned_copy, no_hook


@given(rows=st.integers(0, 5), columns=st.integers(0, 40), shift=st.integers(0, 7),
       dtype=st.sampled_from([np.int64, np.float64]))
def test_line_aligned_copy_is_an_aligned_equal_copy(rows, columns, shift, dtype):
    """Any shape (empty too), from a source at any 8-byte offset into a line: equal values,
    the dtype asked for, C-contiguous, the first item on a line, and no memory shared."""
    buffer = np.arange(rows * columns + shift, dtype=dtype)
    source = buffer[shift:].reshape(rows, columns)
    copy = line_aligned_copy(source, dtype)
    assert copy.dtype == dtype and copy.shape == source.shape
    assert copy.flags.c_contiguous and copy.flags.writeable
    assert (copy == source).all()
    if copy.size:  # (an empty array has no first item)
        assert copy.ctypes.data % CACHE_LINE == 0
        copy[...] = -1
        assert not (source == -1).any()


def test_kernel_memory_is_fresh_and_aligned_every_time():
    """Two runs of one kernel get distinct aligned arrays holding the kernel's values (a
    run's writes never reach the next run's memory)."""
    kernel = Kernel(no_hook, int_params=np.arange(3), float_params=np.ones(2),
                    int_state=np.arange(12).reshape(3, 4), float_state=np.zeros((1, 5)))
    first, second = kernel.memory(), kernel.memory()
    first.int_state[...] = -7
    for array, original in zip(second, (kernel.int_params, kernel.float_params,
                                        kernel.int_state, kernel.float_state), strict=True):
        assert array.ctypes.data % CACHE_LINE == 0
        assert (array == np.atleast_2d(original) if array.ndim == 2 else array == original).all()
    assert second.int_state.dtype == np.int64 and second.float_state.dtype == np.float64
