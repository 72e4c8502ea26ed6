"""The compiled policy interface: the three functions a policy gives the slot loop.

The slot loop (:mod:`dispatchlab.engine.loop`) is compiled once and receives a
policy's functions as first-class compiled functions with the fixed signatures
below, so adding a policy never edits or recompiles the loop, and every compiled
piece is cached on disk.

Arguments, in order (the same names in every policy):

``m``       dispatcher index (``choose`` only)
``jobs``    jobs to place in this call: A^m(t) in batch mode, 1 in per-job mode
``t``       slot index
``Q``       queue lengths: Q(t) at slot start (``begin_slot``/``choose``), Q(t+1) in ``end_slot``
``Q_prev``  Q(t) (hooks only; equals ``Q`` in ``begin_slot``)
``A``       A_n(t), jobs sent to each server this slot (hooks only)
``A_m``     A^m(t), jobs that reached each dispatcher this slot (hooks only)
``mu``      service rates μ_n
``ip, fp``  the policy's integer and float parameters
``ist, fst`` the policy's integer and float memory (2-D, policy-defined layout)
``rng``     the run's xoshiro256++ state (draw with :mod:`dispatchlab.engine.rng`)
``msg``     message counters by kind (:data:`MESSAGE_KINDS`)
``diag``    policy diagnostics, accumulated only when ``record`` (after warm-up)

``choose`` returns the target server of the call. ``begin_slot`` runs before the
slot's arrivals, ``end_slot`` in the end-of-slot update phase (THEORY.md §1.2).
"""

from __future__ import annotations

from numba import njit, types

#: ``answer``: a server's reply to a dispatch (LSQ learn-on-send: the destination answers
#: with its queue length)
MESSAGE_KINDS = ("probe", "reply", "report", "broadcast", "answer")
PROBE, REPLY, REPORT, BROADCAST, ANSWER = range(5)

_i64 = types.int64
_q = types.int64[::1]
_f = types.float64[::1]
_ist = types.int64[:, ::1]
_fst = types.float64[:, ::1]
_rng = types.uint64[::1]

CHOOSE_SIGNATURE = _i64(_i64, _i64, _i64, _q, _f, _q, _f, _ist, _fst, _rng, _q)
HOOK_SIGNATURE = types.none(
    _i64, _q, _q, _q, _q, _f, _q, _f, _ist, _fst, _rng, _q, _f, types.boolean
)
CHOOSE_TYPE = types.FunctionType(CHOOSE_SIGNATURE)
HOOK_TYPE = types.FunctionType(HOOK_SIGNATURE)


def choose_function(func):
    """Compile ``func`` as a policy's ``choose`` (cached)."""
    return njit(CHOOSE_SIGNATURE, cache=True)(func)


def hook_function(func):
    """Compile ``func`` as a policy's ``begin_slot`` or ``end_slot`` hook (cached)."""
    return njit(HOOK_SIGNATURE, cache=True)(func)


@hook_function
def no_hook(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    """The hook of a policy with nothing to do at that point of the slot."""
    return None
