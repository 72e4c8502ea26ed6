"""Walker's alias method: a draw from a fixed discrete law in O(1) (weighted random routing).

:func:`alias_table` builds, once from the weights (e.g. the rates μ), a table of N
(probability, alias) pairs stored side by side in a float64 vector, so one draw reads one
entry: a uniform u ∈ [0, 1) gives the column i = ⌊u·N⌋ and the fraction f = u·N − i;
the draw is i when f < prob_i, else alias_i. One 53-bit uniform serves both, so f has
53 − log₂N bits of resolution (2⁻³³ at N = 10⁶); a binary search over the running sums
(:func:`dispatchlab.compiled.rng.weighted_index`) costs log₂N dependent cache misses instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import INV_2_53, next_u64, select_unpredictable


@njit(cache=True)
def _vose(weights):
    n = weights.size
    table = np.empty(2 * n)
    # the sum as numba's ``weights.sum()`` adds (in order), without its implementation's
    # module, whose import (numba.np.arraymath imports scipy.linalg) a cached entry repeats
    total = 0.0
    for i in range(n):
        total += weights[i]
    scaled = weights * (n / total)
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    n_small = 0
    n_large = 0
    for i in range(n):
        if scaled[i] < 1.0:
            small[n_small] = i
            n_small += 1
        else:
            large[n_large] = i
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        s = small[n_small]
        g = large[n_large - 1]
        table[2 * s] = scaled[s]
        table[2 * s + 1] = g
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        if scaled[g] < 1.0:
            n_large -= 1
            small[n_small] = g
            n_small += 1
    # what is left has probability 1 up to rounding
    for k in range(n_large):
        table[2 * large[k]] = 1.0
        table[2 * large[k] + 1] = large[k]
    for k in range(n_small):
        table[2 * small[k]] = 1.0
        table[2 * small[k] + 1] = small[k]
    return table


def alias_table(weights: np.ndarray) -> np.ndarray:
    """The alias table of the law ∝ ``weights`` (non-negative, positive sum), as
    float64[2N]: entry 2i is prob_i, entry 2i + 1 the alias of column i."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.size == 0 or not np.all(weights >= 0) or not weights.sum() > 0:
        raise ValueError("alias_table needs non-negative weights with a positive sum")
    return _vose(weights)


@njit(inline="always", cache=True)
def alias_index(bits, table):
    """The index that the 64-bit random output ``bits`` draws from the table of
    :func:`alias_table` (with probability ∝ its weight)."""
    n = table.size >> 1
    x = np.float64(bits >> np.uint64(11)) * INV_2_53 * n
    i = min(np.int64(x), n - 1)
    keep = x - i < table[2 * i]
    return select_unpredictable(keep, i, np.int64(table[2 * i + 1]))


@njit(inline="always", cache=True)
def alias_draw(rng, table):
    """Index i with probability ∝ its weight, from the table of :func:`alias_table`."""
    return alias_index(next_u64(rng), table)
