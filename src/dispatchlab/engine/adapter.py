"""The adapters through which the slot loop calls a policy's ``choose`` and hooks.

A first-class function call passes every argument by value, flattened: ``choose(m, jobs,
slot, memory, ctx)`` is 65 machine words (7 per 1-D array, 9 per 2-D one), loaded and
stored again on every call although only ``m``, ``jobs`` and ``t`` change (about half of
a pod2 dispatch went into it). The loop instead packs the arrays once per chunk into a
tuple on its stack (:func:`pack_arrays`) and calls, through :data:`ADAPTER_TYPE`, a small
per-policy adapter ``adapter(m, jobs, t, packed)`` that unpacks them and runs the policy's
``choose`` inlined, so only the fields the policy reads are ever loaded.

In batch dispatch (the default) the loop makes one adapter call a slot,
``adapter(EVERY_DISPATCHER, 0, t, packed)``: the adapter runs ``choose`` for every
dispatcher m with A^m(t) > 0, in order m = 0, …, M−1, each placing its A^m(t) jobs, and
writes the chosen servers into ``targets[m]``; the loop then places them in the same
order. Dispatcher m's ``choose`` still sees the slot-start Q(t) and the memory and policy
stream as left by dispatchers < m (no ``choose`` reads A(t)), so the draws are those of
one call per dispatcher; the adapter stops after the first server outside 0 … N−1, which
the loop reports, so no later ``choose`` runs. In per-job dispatch the loop calls
``adapter(m, k, t, packed)`` for dispatcher m's jobs, k ≤ 32 (``loop.TARGET_BUFFER``) at
a time: k calls of ``choose`` with one job each, the servers into ``targets[0 … k−1]``,
which the loop then places one by one. Both modes go through the adapter's one inlined
copy of ``choose``. (On an AMD EPYC a slot of lean pod2 at M = 10 runs ≈ 1.09× as fast
as with a call per dispatcher; the processor overlaps much of a call with ``choose``'s own
dependency chains: benchmarks/README.md, "One adapter call a slot".)

The hooks ``begin_slot``/``end_slot`` go the same way (:func:`policy_adapter` of a hook): the loop
packs the arrays of their four tuples once per chunk (:data:`HOOK_PACKED_TYPE`, one pack
per hook) and calls ``adapter(t, record, packed)``.

The loop itself stays compiled once for every policy; each adapter is compiled (or loaded
from numba's disk cache, keyed by the policy function's module, name, bytecode and source
file, and the sources it depends on) once per policy, and costs about what compiling
``choose`` alone did (about 10 % more since it loops over the dispatchers). A user's LED
strategy or Π decision runs in a closure of dispatchlab's (``keyed_by``), whose adapter is
kept in the cache by the user's function, so a second run compiles nothing of it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from llvmlite import ir
from numba import errors, njit, types
from numba.core import cgutils
from numba.core.caching import FunctionCache
from numba.extending import intrinsic

from dispatchlab.compiled.dependencies import dependency_digest, is_ours
from dispatchlab.compiled.lazy import AbsentStep, needs_compiling
from dispatchlab.engine.interface import (
    CHOOSE_SIGNATURE,
    HOOK_SIGNATURE,
    Context,
    Memory,
    Slot,
    Step,
    compiled,
    no_hook,
)

_i64 = types.int64
#: the arrays of Slot, Memory and Context, in the order (Q, μ, int_params, float_params,
#: int_state, float_state, rng, msg)
_POLICY_ARRAYS = (
    types.int64[::1], types.float64[::1], types.int64[::1], types.float64[::1],
    types.int64[:, ::1], types.float64[:, ::1], types.uint64[::1], types.int64[::1],
)
#: the arrays ``choose``'s adapter reads: those of Slot, Memory and Context, then A^m(t)
#: and the targets it writes, one per dispatcher: (Q, μ, int_params, float_params,
#: int_state, float_state, rng, msg, A_m, targets)
PACKED_TYPE = types.Tuple((*_POLICY_ARRAYS, types.int64[::1], types.int64[::1]))
#: the arrays of a hook's Slot, Step, Memory and Context: (Q, μ, int_params, float_params,
#: int_state, float_state, rng, msg, Q_prev, A, A_m, diag)
HOOK_PACKED_TYPE = types.Tuple((
    *_POLICY_ARRAYS, types.int64[::1], types.int64[::1], types.int64[::1],
    types.float64[::1],
))
#: the adapter's ``m`` for batch dispatch: every dispatcher with arrivals, in order
EVERY_DISPATCHER = -1
#: adapter(m, jobs, t, packed) -> the last server chosen: m = EVERY_DISPATCHER, ``choose``
#: for each dispatcher d with A^d(t) > 0 placing its A^d(t) jobs, the server into
#: ``targets[d]``; m ≥ 0 (per-job dispatch), ``jobs`` choices of one job each by dispatcher
#: m, into ``targets[0 … jobs − 1]``
ADAPTER_SIGNATURE = _i64(_i64, _i64, _i64, types.voidptr)
ADAPTER_TYPE = types.FunctionType(ADAPTER_SIGNATURE)
#: hook adapter(t, record, packed)
HOOK_ADAPTER_SIGNATURE = types.none(_i64, types.boolean, types.voidptr)
HOOK_ADAPTER_TYPE = types.FunctionType(HOOK_ADAPTER_SIGNATURE)
#: the hook adapter of :func:`~dispatchlab.engine.interface.no_hook`: the loop skips the
#: hooks a policy does not have (``LoopPolicy.has_begin``, ``has_end``), so there is
#: nothing to compile
NO_HOOK_ADAPTER = AbsentStep(HOOK_ADAPTER_SIGNATURE, "no_hook")


@intrinsic
def pack_arrays(typingctx, arrays):
    """A pointer to a copy of the tuple ``arrays`` (:data:`PACKED_TYPE` or
    :data:`HOOK_PACKED_TYPE`) on the caller's stack: valid until the calling function
    returns."""
    if arrays not in (PACKED_TYPE, HOOK_PACKED_TYPE):
        return None

    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once(builder, args[0].type)
        builder.store(args[0], slot)
        return builder.bitcast(slot, cgutils.voidptr_t)

    return types.voidptr(arrays), codegen


def _unpacker(packed_type: types.Type):
    """An intrinsic that loads the ``packed_type`` tuple :func:`pack_arrays` stored at a
    pointer."""

    @intrinsic
    def unpack(typingctx, pointer):
        if pointer != types.voidptr:
            return None

        def codegen(context, builder, signature, args):
            tuple_type = context.get_value_type(packed_type)
            return builder.load(builder.bitcast(args[0], tuple_type.as_pointer()))

        return packed_type(types.voidptr), codegen

    return unpack


#: the arrays ``choose`` reads (:data:`PACKED_TYPE`) and those a hook reads
#: (:data:`HOOK_PACKED_TYPE`), from the pointer the loop passes
_unpack_arrays = _unpacker(PACKED_TYPE)
_unpack_hook_arrays = _unpacker(HOOK_PACKED_TYPE)


def _code_description(code: Any) -> tuple[Any, ...]:
    """A code object's bytecode, names and constants, nested code included (whose repr
    would hold an address that differs from process to process)."""
    consts = tuple(_code_description(c) if hasattr(c, "co_code") else c
                   for c in code.co_consts)
    return (code.co_code, consts, code.co_names)


def _description(function: Any) -> tuple[Any, ...]:
    """What identifies a compiled Python function across processes: its module, name and
    code, and its source file: for a function of the user's, its path and digest when it
    was declared (a global constant the code reads is frozen at compile time; numba's own
    check, the file's time and size, misses an edit that keeps both) or numba's stamp; for
    dispatchlab's, its path alone: the key's dependency digest holds the part of its file
    it can depend on (numba's stamp, which changes with any edit of the file, recompiled
    every policy of a file after an edit to one)."""
    py_func = function.py_func
    user_source = getattr(function, "source_digest", None)
    if user_source is not None:
        stamp = user_source
    elif is_ours(py_func.__module__):
        stamp = None
    else:
        stamp = FunctionCache(py_func)._impl.locator.get_source_stamp()
    return (py_func.__module__, py_func.__qualname__, _code_description(py_func.__code__),
            py_func.__code__.co_filename, stamp)


def _describable(function: Any) -> bool:
    """Whether :func:`_description` tells the user's ``function`` apart in another process:
    declared from a file (``source_digest``), no closure."""
    py_func = getattr(function, "py_func", None)
    return (py_func is not None and py_func.__closure__ is None
            and getattr(function, "source_digest", None) is not None)


class _AdapterCache(FunctionCache):
    """numba's disk cache for an adapter, keyed by the policy function it inlines.

    The adapter is a closure over that function; numba's own key pickles the closure's
    cells, which for a compiled function differs from process to process (a fresh uuid),
    so it would never hit. This key describes the policy function instead
    (:func:`_description`), and the user's function it is a closure over (``keyed_by``: a
    user's LED strategy or Π decision), and the dispatchlab sources the adapter and the
    policy depend on (``compiled.dependencies.dependency_digest``: the helpers a policy
    inlines from other modules, which the stamp does not see)."""

    def __init__(self, py_func, policy_function: Any) -> None:
        super().__init__(py_func)
        described = [_description(f) for f in (policy_function, *_keyed_by(policy_function))]
        self._policy_key = hashlib.sha256(repr(described).encode()).hexdigest()

    def _index_key(self, sig, codegen):
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), (code, self._policy_key,
                                                 dependency_digest(self._py_func)))


_ADAPTERS: dict[Any, Any] = {}


def _keyed_by(function: Any) -> tuple[Any, ...]:
    """The compiled functions a closure ``function`` captured that its adapter's cache key
    describes (``function.keyed_by``, set where the closure is made)."""
    return tuple(getattr(function, "keyed_by", ()))


def _is_cached(function: Any) -> bool:
    """Whether ``function``'s adapter may use the disk cache: ``function`` is cached itself
    and no closure (the cache key does not describe what a closure captured), or a closure
    over functions named by its ``keyed_by`` that the key can describe (a user's strategy
    in a script is: the adapter's entry holds the compiled code, and its key the script's
    path, stamp and the function's code)."""
    keyed_by = _keyed_by(function)
    if keyed_by:
        return all(_describable(inner) for inner in keyed_by)
    return (isinstance(getattr(function, "_cache", None), FunctionCache)
            and function.py_func.__closure__ is None)


#: the words of the policy stream's state (xoshiro256++)
POLICY_STREAM_WORDS = 4


@intrinsic
def _stack_words(typingctx, like):
    """An uninitialised uint64 array of POLICY_STREAM_WORDS words, the type of ``like``
    (the policy stream), in the caller's stack frame (its entry block), with no owner:
    valid until the caller returns."""
    if like != types.uint64[::1]:
        return None

    def codegen(context, builder, signature, args):
        words = cgutils.alloca_once(builder, ir.IntType(64), size=POLICY_STREAM_WORDS)
        array = context.make_array(signature.return_type)(context, builder)
        context.populate_array(
            array, data=words,
            shape=cgutils.pack_array(builder, [context.get_constant(_i64,
                                                                    POLICY_STREAM_WORDS)]),
            strides=cgutils.pack_array(builder, [context.get_constant(_i64, 8)]),
            itemsize=context.get_constant(_i64, 8), meminfo=None)
        return array._getvalue()

    return like(like), codegen


@njit(inline="always", cache=True)
def _copy_words(source, destination):
    for k in range(POLICY_STREAM_WORDS):
        destination[k] = source[k]


def _choosing_adapter(body: Any) -> Any:
    """The adapter (:data:`ADAPTER_SIGNATURE`) that runs ``body``, ``choose`` inlined or
    compiled on its own: one call site, serving both dispatch modes.

    The choices draw from a copy of the policy stream's state on the adapter's stack,
    copied back at the end: the compiler keeps it in registers across the dispatchers
    (the run's ``rng`` array might alias ``targets`` and the policy's arrays, so each
    store to those made it store and reload the state between one choice and the next).
    The draws are the same."""

    def adapter(m, jobs, t, packed):
        (Q, mu, int_params, float_params, int_state, float_state, rng, msg, A_m,
         targets) = _unpack_arrays(packed)
        memory = Memory(int_params, float_params, int_state, float_state)
        state = _stack_words(rng)
        _copy_words(rng, state)
        every = m == EVERY_DISPATCHER
        target = 0
        for i in range(A_m.size if every else jobs):
            placed = A_m[i] if every else 1
            if placed == 0:
                continue
            target = body(i if every else m, placed, Slot(t, Q, mu), memory, Context(state, msg))
            targets[i] = target
            if target < 0 or target >= Q.size:  # the loop stops at it: no later choose
                break
        _copy_words(state, rng)
        return target

    return adapter


def _inlining_adapter(choose: Any) -> Any:
    return _choosing_adapter(njit(inline="always")(choose.py_func))


def _calling_adapter(choose: Any) -> Any:
    return _choosing_adapter(choose)


def _inlining_hook_adapter(hook: Any) -> Any:
    body = njit(inline="always")(hook.py_func)

    def hook_adapter(t, record, packed):
        (Q, mu, int_params, float_params, int_state, float_state, rng, msg, Q_prev, A, A_m,
         diag) = _unpack_hook_arrays(packed)
        body(Slot(t, Q, mu), Step(Q_prev, A, A_m, diag, record),
             Memory(int_params, float_params, int_state, float_state), Context(rng, msg))

    return hook_adapter


def _calling_hook_adapter(hook: Any) -> Any:
    def hook_adapter(t, record, packed):
        (Q, mu, int_params, float_params, int_state, float_state, rng, msg, Q_prev, A, A_m,
         diag) = _unpack_hook_arrays(packed)
        hook(Slot(t, Q, mu), Step(Q_prev, A, A_m, diag, record),
             Memory(int_params, float_params, int_state, float_state), Context(rng, msg))

    return hook_adapter


#: per policy-function signature: how its adapter inlines it, how it calls it when numba
#: cannot inline it, and the adapter's own signature
_KINDS = {
    CHOOSE_SIGNATURE: (_inlining_adapter, _calling_adapter, ADAPTER_SIGNATURE),
    HOOK_SIGNATURE: (_inlining_hook_adapter, _calling_hook_adapter, HOOK_ADAPTER_SIGNATURE),
}


def is_policy_function(function: Any) -> bool:
    """Whether ``function`` was declared with ``choose_function`` or ``hook_function``."""
    return getattr(function, "declared_signature", None) in _KINDS


def policy_adapter(function: Any) -> Any:
    """The compiled adapter that runs the policy function ``function`` (a ``choose``: of
    :data:`ADAPTER_SIGNATURE`; a hook: of :data:`HOOK_ADAPTER_SIGNATURE`) for the slot
    loop; one per function and process (:data:`NO_HOOK_ADAPTER` for ``no_hook``, which
    the loop never calls)."""
    if function is no_hook:
        return NO_HOOK_ADAPTER
    return _adapter(function, *_KINDS[function.declared_signature])


def adapter_needs_compiling(function: Any) -> bool:
    """Whether the adapter of the policy function ``function`` (a ``choose`` or a hook)
    has still to compile: not built in this process, and not in numba's disk cache."""
    if function is no_hook or function in _ADAPTERS or not _is_cached(function):
        return False
    inlining, _, signature = _KINDS[function.declared_signature]
    return needs_compiling(_dispatcher(inlining(function), function, _options(function)),
                           signature)


def bounds_checked(function: Any) -> bool:
    """Whether the policy function ``function`` runs with numba's bounds checking: a
    function of the user's (declared outside dispatchlab, or a closure over one, which says
    so with ``bounds_checked = True``), so that an index outside an array stops its run
    with an error instead of writing over memory. What its adapter inlines is checked
    with it; a helper it calls without inlining keeps its own options."""
    explicit = getattr(function, "bounds_checked", None)
    if explicit is not None:
        return bool(explicit)
    return not function.py_func.__module__.startswith("dispatchlab.")


def _options(function: Any) -> dict[str, Any]:
    """numba's options for the adapter of ``function``: its reference counting, and bounds
    checking for a function of the user's."""
    options = {} if function.targetoptions.get("_nrt", True) else {"_nrt": False}
    if bounds_checked(function):
        options["boundscheck"] = True
    return options


def _adapter(function: Any, inlining: Any, calling: Any, signature: Any) -> Any:
    adapter = _ADAPTERS.get(function)
    if adapter is not None:
        return adapter
    options = _options(function)
    if options.get("boundscheck"):
        function.targetoptions["boundscheck"] = True  # (compiled alone when not inlined)
    try:
        adapter = _compile(inlining(function), function, options, signature)
    except errors.NumbaError:
        # a function numba cannot inline: compile it on its own (this raises the error of
        # a function that does not compile at all) and call it from the adapter
        adapter = _compile(calling(compiled(function)), function, options, signature)
    _ADAPTERS[function] = adapter
    return adapter


def _dispatcher(py_func: Any, choose: Any, options: dict[str, Any]) -> Any:
    """The adapter ``py_func`` of the policy function ``choose`` as a numba dispatcher with
    its disk cache, nothing compiled yet."""
    # a name of its own per policy function: numba names compiled code after the Python
    # function and a per-process counter, so two adapters loaded from the disk cache
    # (compiled by different processes) could otherwise define the same symbol, and the
    # loop would call whichever the process loaded last
    policy = f"{choose.py_func.__module__}.{choose.py_func.__qualname__}"
    checked = "_checked" if options.get("boundscheck") else ""  # (another cache entry)
    py_func.__qualname__ = py_func.__name__ = (
        f"{py_func.__name__}{checked}_for_" + re.sub(r"\W", "_", policy))
    # only the loop calls an adapter (through numba's C wrapper): no wrapper for Python
    dispatcher = njit(no_cpython_wrapper=True, **options)(py_func)
    if _is_cached(choose):
        dispatcher._cache = _AdapterCache(py_func, choose)
    return dispatcher


def _compile(py_func: Any, choose: Any, options: dict[str, Any], signature: Any) -> Any:
    dispatcher = _dispatcher(py_func, choose, options)
    dispatcher.compile(signature)
    dispatcher.disable_compile()
    return dispatcher
