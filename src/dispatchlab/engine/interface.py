"""The compiled policy interface: the three functions a policy gives the slot loop.

The slot loop (:mod:`dispatchlab.engine.loop`) is compiled once and receives a
policy's functions as first-class compiled functions (each inlined into a small adapter
of its own, :mod:`dispatchlab.engine.adapter`) with the fixed signatures below, so adding
a policy never edits or recompiles the loop, and every compiled piece is cached on disk::

    choose(m, jobs, slot, memory, ctx) -> server       # @choose_function
    begin_slot(slot, step, memory, ctx) -> None        # @hook_function
    end_slot(slot, step, memory, ctx) -> None          # @hook_function

``m`` is the dispatcher index and ``jobs`` the number of jobs this call places:
A^m(t) in batch mode, 1 in per-job mode. The other arguments are named tuples
(numba compiles a field access to a plain load):

:class:`Slot` — slot t (read only):
    ``t``       slot index
    ``Q``       queue lengths: Q(t) in ``begin_slot`` and ``choose``, Q(t+1) in ``end_slot``
    ``mu``      service rates μ_n

:class:`Step` — what moved in slot t, and where the policy measures it (hooks only):
    ``Q_prev``  Q(t) (in ``begin_slot`` the same array as ``Q``)
    ``A``       A_n(t), jobs sent to each server (in ``begin_slot`` still slot t − 1's)
    ``A_m``     A^m(t), jobs that reached each dispatcher (in ``begin_slot`` slot t − 1's);
                its size is M
    ``diag``    the policy's diagnostics (named by its ``diagnostics``); add to them only
                when ``record``
    ``record``  True when slot t is measured (t ≥ warm-up)

:class:`Memory` — the policy's own arrays (built by its :class:`Kernel`, copied per run):
    ``int_params``, ``float_params``  integer and float parameters (1-D)
    ``int_state``, ``float_state``    integer and float memory (2-D)
Their layout is the policy's: each policy module names its entries with small inline
accessors (e.g. ``estimates(memory, m)`` in :mod:`dispatchlab.policies.led.layout`),
so its rules never index these arrays with bare constants.

:class:`Context` — the run's shared services:
    ``rng``   the run's policy stream, xoshiro256++ (draw with :mod:`dispatchlab.compiled.rng`);
              the arrivals and the service draw from streams of their own, so two
              policies run with one seed see the same A(t) and S_n(t)
    ``msg``   message counters by kind (:data:`MESSAGE_KINDS`: ``ctx.msg[PROBE] += d``)

``begin_slot`` runs before the slot's arrivals, ``choose`` once per dispatcher with
arrivals (per job in per-job mode), ``end_slot`` in the end-of-slot update phase
(docs/model.md#slot-order). A policy without a hook leaves it :func:`no_hook`: the loop then skips
the call.

Why ``choose`` gets no :class:`Step`: the fields of the tuples are passed one by one (7
machine words for a vector), and ``choose`` runs up to M times a slot, so it gets only
what deciding needs (a policy that counts something per call keeps the count in its
memory and moves it to ``diag`` in ``end_slot``).

Every array the loop hands over is *borrowed* (no owner, see ``engine.loop._borrowed``):
a policy may read, write and take row views of them, but must not keep them beyond the
call; new arrays it allocates itself are ordinary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import types

from dispatchlab.compiled.lazy import compiled as compiled  # re-exported for the policies
from dispatchlab.compiled.lazy import lazy_function

#: numba options of the compiled helpers the loop calls directly: no C wrapper (numba's
#: entry for a first-class function call, which only the steps passed to the loop need)
#: and, for those that Python never calls either (tests included), no Python wrapper:
#: about 0.03 s of a cold first run each
NOT_FIRST_CLASS = {"cache": True, "no_cfunc_wrapper": True}
LOOP_ONLY = {**NOT_FIRST_CLASS, "no_cpython_wrapper": True}

#: ``answer``: a server's reply to a dispatch (LSQ learn-on-send: the destination answers
#: with its queue length)
MESSAGE_KINDS = ("probe", "reply", "report", "broadcast", "answer")
PROBE, REPLY, REPORT, BROADCAST, ANSWER = range(5)


class Slot(NamedTuple):
    """Slot t as every compiled function sees it (see the module docstring)."""

    t: int
    Q: np.ndarray
    mu: np.ndarray


class Step(NamedTuple):
    """What moved in slot t and where to measure it, for the hooks (see the module docstring)."""

    Q_prev: np.ndarray
    A: np.ndarray
    A_m: np.ndarray
    diag: np.ndarray
    record: bool


class Memory(NamedTuple):
    """A policy's parameters (``int_params``, ``float_params``) and memory (``int_state``,
    ``float_state``)."""

    int_params: np.ndarray
    float_params: np.ndarray
    int_state: np.ndarray
    float_state: np.ndarray


class Context(NamedTuple):
    """The run's random state and message counters."""

    rng: np.ndarray
    msg: np.ndarray


_i64 = types.int64
_iv = types.int64[::1]
_fv = types.float64[::1]

SLOT_TYPE = types.NamedTuple((_i64, _iv, _fv), Slot)
STEP_TYPE = types.NamedTuple((_iv, _iv, _iv, _fv, types.boolean), Step)
MEMORY_TYPE = types.NamedTuple((_iv, _fv, types.int64[:, ::1], types.float64[:, ::1]), Memory)
CONTEXT_TYPE = types.NamedTuple((types.uint64[::1], _iv), Context)

CHOOSE_SIGNATURE = _i64(_i64, _i64, SLOT_TYPE, MEMORY_TYPE, CONTEXT_TYPE)
HOOK_SIGNATURE = types.none(SLOT_TYPE, STEP_TYPE, MEMORY_TYPE, CONTEXT_TYPE)
CHOOSE_TYPE = types.FunctionType(CHOOSE_SIGNATURE)
HOOK_TYPE = types.FunctionType(HOOK_SIGNATURE)


def choose_function(func=None, *, cache: bool = True, allocates: bool = False):
    """Declare ``func(m, jobs, slot, memory, ctx) -> server`` a policy's ``choose``
    (compiled with its signature on first use).

    Cached on disk unless ``cache=False`` (a closure cannot be); ``allocates=True`` when it
    (or a compiled helper it calls) creates arrays. Usable with or without arguments."""
    def declare(f):
        return lazy_function(f, CHOOSE_SIGNATURE, cache=cache, allocates=allocates)

    return declare if func is None else declare(func)


def hook_function(func=None, *, cache: bool = True, allocates: bool = False):
    """Declare ``func(slot, step, memory, ctx)`` a policy's ``begin_slot`` or ``end_slot``
    hook (options as for :func:`choose_function`)."""
    def declare(f):
        return lazy_function(f, HOOK_SIGNATURE, cache=cache, allocates=allocates)

    return declare if func is None else declare(func)


@hook_function
def no_hook(slot, step, memory, ctx):
    """The hook of a policy with nothing to do at that point of the slot."""
    return None


def _ints(*shape: int) -> Callable[[], np.ndarray]:
    return lambda: np.zeros(shape, np.int64)


def _floats(*shape: int) -> Callable[[], np.ndarray]:
    return lambda: np.zeros(shape, np.float64)


@dataclass
class Kernel:
    """What the slot loop runs for one policy on one system.

    ``choose``/``begin_slot``/``end_slot`` are compiled with :func:`choose_function` and
    :func:`hook_function`; the arrays are the policy's parameters and initial memory,
    the fields of :class:`Memory` (copied per run, so a kernel may be reused).
    """

    choose: Callable[..., int]
    begin_slot: Callable[..., None] = no_hook
    end_slot: Callable[..., None] = no_hook
    int_params: np.ndarray = field(default_factory=_ints(1))
    float_params: np.ndarray = field(default_factory=_floats(1))
    int_state: np.ndarray = field(default_factory=_ints(1, 1))
    float_state: np.ndarray = field(default_factory=_floats(1, 1))
    n_diagnostics: int = 0

    def memory(self) -> Memory:
        """Fresh copies of the parameter and memory arrays, in the loop's layout, each
        starting on a cache line."""
        return Memory(
            line_aligned_copy(self.int_params, np.int64),
            line_aligned_copy(self.float_params, np.float64),
            line_aligned_copy(np.atleast_2d(self.int_state), np.int64),
            line_aligned_copy(np.atleast_2d(self.float_state), np.float64),
        )


#: bytes of a cache line
CACHE_LINE = 64


def line_aligned_copy(array: np.ndarray, dtype: type) -> np.ndarray:
    """A C-contiguous copy of ``array`` as ``dtype`` whose first item starts a cache line.
    Why: a large allocation starts 16 bytes into a line, so that what a policy lays out to
    start a line (a min tree's four-child groups, one line each) straddled two."""
    source = np.asarray(array, dtype=dtype)
    itemsize = source.itemsize
    buffer = np.empty(source.size + CACHE_LINE // itemsize, dtype)
    start = (-buffer.ctypes.data % CACHE_LINE) // itemsize
    copy = buffer[start:start + source.size].reshape(source.shape)
    copy[...] = source
    return copy
