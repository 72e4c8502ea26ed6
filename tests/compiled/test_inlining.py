"""numba's inliner with one copy of a scope and one translation of a callee (issue 46).

The patch must not change what is compiled: helpers inlined at several call sites, nested
and with closures, give the values plain Python gives; the callee is translated once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import dispatchlab.compiled  # noqa: F401 - installs the patch
from dispatchlab.compiled import inlining


@njit(inline="always")
def _clip(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


@njit(inline="always")
def _step(values, i, shift):
    total = 0
    for k in range(values.size):
        if k != i:
            total += _clip(values[k] + shift, 0, 10)
    return total


def _make_scaled(scale):
    @njit(inline="always")
    def scaled(x):
        return _clip(x * scale, -50, 50)
    return scaled


_triple = _make_scaled(3)


def _body(values, shift):
    a = _step(values, 0, shift)
    b = _step(values, 1, -shift)
    c = _clip(a - b, -3, 3) + _triple(shift)
    out = 0
    for i in range(values.size):
        out += _step(values, i, i) if i % 2 else _clip(values[i], 1, 4)
    return a, b, c, out


def test_helpers_inlined_at_many_sites_compute_what_python_computes() -> None:
    compiled = njit(_body)
    rng = np.random.default_rng(5)
    for _ in range(20):
        values = rng.integers(-5, 15, size=int(rng.integers(2, 9)))
        shift = int(rng.integers(-4, 5))
        assert compiled(values, shift) == _python_body(values, shift)


def _python_body(values, shift):
    def clip(x, low, high):
        return low if x < low else high if x > high else x

    def step(i, s):
        return sum(clip(int(values[k]) + s, 0, 10) for k in range(values.size) if k != i)

    a, b = step(0, shift), step(1, -shift)
    c = clip(a - b, -3, 3) + clip(shift * 3, -50, 50)
    out = sum(step(i, i) if i % 2 else clip(int(values[i]), 1, 4) for i in range(values.size))
    return a, b, c, out


def test_a_callee_is_translated_once_for_all_its_call_sites() -> None:
    @njit
    def many_sites(x):
        return _clip(x, 0, 1) + _clip(x, 2, 3) + _clip(x, 4, 5) + _clip(x, -1, 0)

    assert many_sites(2) == 1 + 2 + 4 + 0
    assert len(inlining._UNTYPED[_clip.py_func]) == 1  # one options key, one translation


def _blocks_equal(a: dict, b: dict) -> bool:
    """Two IRs' blocks equal statement by statement (numba's IR nodes compare by their
    fields, variables by name)."""
    return a.keys() == b.keys() and all(
        [str(s) for s in a[k].body] == [str(s) for s in b[k].body]
        and a[k].body == b[k].body for k in a)


def test_the_ir_copier_copies_as_copy_deepcopy_does() -> None:
    """inlining._copy on the blocks of real IR (loops, closures, globals, constants, a
    free variable): equal to copy.deepcopy's copy, sharing nothing mutable with the
    original (blocks, statements, variables, scope) and the scope once for all blocks."""
    import copy

    from numba.core import ir
    from numba.core.compiler import run_frontend

    for function in (_step.py_func, _make_scaled(3).py_func, _python_loop):
        blocks = run_frontend(function).blocks
        memo: dict[int, object] = {}
        ours = {label: inlining._copy(block, memo) for label, block in blocks.items()}
        theirs = {label: copy.deepcopy(block, {}) for label, block in blocks.items()}
        assert _blocks_equal(ours, theirs) and _blocks_equal(ours, blocks)
        scopes = {id(block.scope) for block in ours.values()}
        assert len(scopes) == 1 and scopes.isdisjoint({id(b.scope) for b in blocks.values()})
        for label, block in blocks.items():
            copied = ours[label]
            assert copied is not block and copied.body is not block.body
            for old, new in zip(block.body, copied.body, strict=True):
                assert new is not old
                for var_old, var_new in zip(old.list_vars(), new.list_vars(), strict=True):
                    assert var_new is not var_old and var_new.scope is copied.scope
                if isinstance(old, ir.Assign) and isinstance(old.value, ir.Const):
                    assert new.value.value is old.value.value  # constants shared, as numba does


def _python_loop(values=np.arange(3.0)) -> float:  # noqa: B008  (a source of IR)
    total = 0.0
    for x in values:
        total += _clip(x, 0.5, 1.5)
    return total
