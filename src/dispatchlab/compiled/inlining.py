"""numba's inliner (``inline="always"``) without its two quadratic costs.

The policies' compiled helpers are small and inlined at numba's IR level
(``@njit(inline="always")``), so that a ``choose`` reads only the fields it uses and keeps
its loop in registers. numba's inliner spends almost all of a cold LED compile on two
things (profiled on numba 0.68, L-JSQ on min trees: 94 of 111 s):

* **copying the callee's IR block by block.** Each block is deep-copied on its own, and
  every variable drags in its function's whole scope, so a callee of B blocks and V
  variables costs B·V copies, twice per call site. Here the blocks of one IR are copied
  with one shared memo: the scope is copied once and the copied blocks share it, as the
  callee's own blocks did (the inliner renames variables through that one scope). The
  copy is :func:`_copy`'s, which knows numba's IR: the same copy as ``copy.deepcopy``'s
  without its dispatch on every node, and source locations (``ir.Loc``) shared, not
  copied — numba never changes one after it is made, except to cache its file's lines in
  it, which a deep copy copied too: every line of the file for every statement and
  variable. (A cold L-JSQ push compile spent 0.86 s copying, now 0.55 s; AMD EPYC.)
* **translating the callee again at every call site**, with everything it inlines in
  turn. Here the callee's untyped IR is kept per function (and compiler options) for the
  process; the inliner copies it before it changes anything, so each call site still
  receives a fresh copy.

Same IR, same compiled code (the known-answer fingerprints hold); a cold compile of LED's
choose with every option went from 93 s to 37 s, L-JSQ's on min trees from 33 s to
10 s (Intel Xeon). :func:`install` is called when :mod:`dispatchlab.compiled` is imported.
"""

from __future__ import annotations

import copy
import types
import weakref
from typing import Any

_state: dict[str, Any] = {"installed": False}
#: the callee's untyped IR per Python function, per compiler options
_UNTYPED: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary())


class _BlocksShareOneCopy:
    """Stands for the module ``copy`` inside numba's ``inline_ir``: the deep copies of the
    blocks of one IR (one scope) share one memo, and go through :func:`_copy`."""

    def __init__(self) -> None:
        self._scope: Any = None
        self._memo: dict[int, Any] = {}

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        from numba.core import ir

        if memo is None and isinstance(value, ir.Block):
            if value.scope is not self._scope:  # the blocks of another IR: a new copy
                self._scope, self._memo = value.scope, {}
            memo = self._memo
        return _copy(value, {} if memo is None else memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


#: what ``copy.deepcopy`` returns as it is (as the copy module's own table does), and numba's
#: source locations, which numba never changes after making one except to cache its file's
#: lines in it (a deep copy copied those too: every line of the file for every statement)
_SHARED: set[type] = {type(None), int, float, bool, complex, str, bytes, type, range,
                      types.FunctionType, types.BuiltinFunctionType, types.CodeType}
#: per class met, whether it is a numba IR class copied field by field (its instance dict,
#: as copy.deepcopy would)
_FIELDWISE: dict[type, bool] = {}
_MISSING = object()


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(value, memo)`` for numba's IR, without the copy module's dispatch on
    every node: the same copy (each object copied once per memo; the IR's own
    ``__deepcopy__`` methods used; anything else handed to ``copy.deepcopy``)."""
    cls = value.__class__
    if cls in _SHARED:
        return value
    found = memo.get(id(value), _MISSING)
    if found is not _MISSING:
        return found
    # (the shared kinds are tested before the call: most fields are names and locations)
    if cls is list:
        new: Any = [item if item.__class__ in _SHARED else _copy(item, memo) for item in value]
    elif cls is tuple:
        new = tuple([item if item.__class__ in _SHARED else _copy(item, memo)
                     for item in value])
    elif cls is dict:
        new = {_copy(key, memo): item if item.__class__ in _SHARED else _copy(item, memo)
               for key, item in value.items()}
    elif _FIELDWISE.get(cls) or (cls not in _FIELDWISE and _is_fieldwise(cls)):
        new = cls.__new__(cls)
        memo[id(value)] = new
        new.__dict__.update({name: item if item.__class__ in _SHARED else _copy(item, memo)
                             for name, item in value.__dict__.items()})
        return new
    else:
        deepcopy = getattr(value, "__deepcopy__", None)
        if deepcopy is None:
            return copy.deepcopy(value, memo)
        new = deepcopy(memo)
    memo[id(value)] = new
    return new


def _is_fieldwise(cls: type) -> bool:
    """A numba IR class whose deep copy is its instance dict's: no ``__deepcopy__``,
    ``__slots__``, ``__reduce__`` or ``__setstate__`` of its own (checked once a class)."""
    from numba.core import ir

    plain = (cls.__module__ == ir.__name__
             and not any(name in vars(base) for base in cls.__mro__[:-1]
                         for name in ("__deepcopy__", "__slots__", "__reduce__",
                                      "__reduce_ex__", "__setstate__", "__getstate__")))
    _FIELDWISE[cls] = plain
    return plain


def _options_key(worker: Any) -> tuple[Any, ...]:
    flags = worker.flags
    values = sorted((k, repr(v)) for k, v in flags.values().items() if k != "enable_ssa")
    local_types = sorted((k, repr(v)) for k, v in (worker.locals or {}).items())
    return (type(worker.targetctx).__qualname__, tuple(values), tuple(local_types))


def install() -> None:
    """Patch numba's ``InlineWorker`` (idempotent)."""
    if _state["installed"]:
        return
    from numba.core import inline_closurecall, ir

    _SHARED.add(ir.Loc)
    worker_class = inline_closurecall.InlineWorker
    inline_ir = worker_class.inline_ir
    run_untyped_passes = worker_class.run_untyped_passes

    def inline_ir_sharing_scope(self: Any, *args: Any, **kwargs: Any) -> Any:
        # numba's inline_ir calls copy.deepcopy through its module's global ``copy``
        # (a module attribute; the compiler lock serialises compilations)
        saved = inline_closurecall.copy
        inline_closurecall.copy = _BlocksShareOneCopy()
        try:
            return inline_ir(self, *args, **kwargs)
        finally:
            inline_closurecall.copy = saved

    def inline_function(self: Any, caller_ir: Any, block: Any, i: int, function: Any,
                        arg_typs: Any = None) -> Any:
        per_options = _UNTYPED.setdefault(function, {})
        key = _options_key(self)
        callee_ir = per_options.get(key)
        if callee_ir is None:
            callee_ir = per_options[key] = run_untyped_passes(self, function)
        else:
            self.flags.enable_ssa = False  # as run_untyped_passes leaves the flags
        return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars,
                              arg_typs=arg_typs)

    worker_class.inline_ir = inline_ir_sharing_scope
    worker_class.inline_function = inline_function
    _state["installed"] = True
