"""Small compiled building blocks shared by policies."""

from __future__ import annotations

from numba import njit

from dispatchlab.engine.rng import randint


@njit(inline="always", cache=True)
def argmin_random_ties(values, rng):
    """Index of the smallest entry of an integer vector, ties broken uniformly."""
    best = values[0]
    arg = 0
    count = 1
    for n in range(1, values.size):
        v = values[n]
        if v < best:
            best = v
            arg = n
            count = 1
        elif v == best:
            count += 1
            if randint(rng, count) == 0:
                arg = n
    return arg


@njit(inline="always", cache=True)
def argmin_scaled_random_ties(values, offset, scale, rng):
    """argmin_n (values[n] + offset) / scale[n], ties broken uniformly (JSED-type rules)."""
    best = (values[0] + offset) / scale[0]
    arg = 0
    count = 1
    for n in range(1, values.size):
        v = (values[n] + offset) / scale[n]
        if v < best:
            best = v
            arg = n
            count = 1
        elif v == best:
            count += 1
            if randint(rng, count) == 0:
                arg = n
    return arg


@njit(inline="always", cache=True)
def shortest_of(values, candidates, d, rng):
    """The candidate among ``candidates[:d]`` with the smallest value, ties uniform."""
    arg = candidates[0]
    best = values[arg]
    count = 1
    for i in range(1, d):
        c = candidates[i]
        v = values[c]
        if v < best:
            best = v
            arg = c
            count = 1
        elif v == best:
            count += 1
            if randint(rng, count) == 0:
                arg = c
    return arg
