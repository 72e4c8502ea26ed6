"""Compiled signatures shared by a plug-in family and the theory that checks it.

:data:`STRATEGY_SIGNATURE` is the signature of an LED dispatching strategy
(docs/model.md#led-strategies)::

    strategy(estimates, mu, rng, params, scratch) -> server

The LED policy runs such rules, :mod:`dispatchlab.theory.tilt` estimates their dispatch
probabilities by calling them: both import the signature from here, so neither imports
the other.
"""

from __future__ import annotations

from numba import types

STRATEGY_SIGNATURE = types.int64(
    types.int64[::1], types.float64[::1], types.uint64[::1], types.float64[::1],
    types.int64[::1],
)
STRATEGY_TYPE = types.FunctionType(STRATEGY_SIGNATURE)
