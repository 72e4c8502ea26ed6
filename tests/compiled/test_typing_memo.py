"""numba's typing of a builtin call, done once per argument types
(dispatchlab.compiled.typing_memo): what it remembers is what numba's templates give, and
it remembers nothing an @overload resolved."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.types import functions

import dispatchlab.compiled  # noqa: F401  (installs the patch)
from dispatchlab.compiled import typing_memo


@njit
def _sums(values, weights):
    total = 0.0
    for i in range(values.size):
        if values[i] > 0 and i % 2 == 0:
            total += values[i] * weights[i] - min(values[i], 1.0)
    return total + np.sum(weights) + len(values)


def test_the_patch_is_installed() -> None:
    assert functions.BaseFunction.get_call_type is not typing_memo._state["numba_get_call_type"]


def test_what_is_remembered_is_what_numba_resolves() -> None:
    """Compile a function of repeated builtin calls; every remembered resolution of its
    typing context, resolved again by numba's own code, is the same signature with the
    function itself as its implementation key; none is an @overload's (np.sum)."""
    values = np.array([1.5, -2.0, 3.0, 0.5])
    assert _sums(values, np.ones(4)) == _sums.py_func(values, np.ones(4))
    context = _sums.targetctx.typing_context
    resolve = typing_memo._state["numba_get_call_type"]
    mine = [(key, sig) for key, sig in typing_memo._RESOLVED.items() if key[0] is context]
    assert len(mine) >= 5
    names = set()
    for (_, function, args, kws), signature in mine:
        again = resolve(function, context, args, dict(kws))
        assert again == signature and again.args == signature.args
        assert function._impl_keys[again.args] is function.typing_key
        names.add(getattr(function.typing_key, "__name__", str(function.typing_key)))
    assert {"getitem", "mul", "gt"} <= names
    assert "sum" not in names  # np.sum: an @overload implementation


def test_a_remembered_call_sets_the_implementation_key_again() -> None:
    """A later call site of a remembered resolution puts back the builtin implementation key,
    as numba's templates would, whatever another resolution wrote there in between."""
    _sums(np.ones(3), np.ones(3))
    (context, function, args, kws), signature = next(iter(typing_memo._RESOLVED.items()))
    function._impl_keys[signature.args] = "overwritten"
    assert function.get_call_type(context, args, dict(kws)) is signature
    assert function._impl_keys[signature.args] is function.typing_key


def test_arguments_that_cannot_be_hashed_go_to_numba_s_own_resolution() -> None:
    """A call whose argument types cannot be hashed is resolved by numba's code as it is,
    and remembered nowhere."""
    _sums(np.ones(2), np.ones(2))
    (context, function, args, _), _ = next(iter(typing_memo._RESOLVED.items()))
    before = len(typing_memo._RESOLVED)
    unhashable = [*args[:-1], [args[-1]]]  # a list where a type should be

    def outcome(resolve):
        try:
            return resolve(function, context, unhashable, {})
        except Exception as error:  # noqa: BLE001 - compared with numba's own
            return type(error)

    assert outcome(functions.BaseFunction.get_call_type) == outcome(
        typing_memo._state["numba_get_call_type"])
    assert len(typing_memo._RESOLVED) == before
