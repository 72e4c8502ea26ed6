"""A tournament tree: the least of W times, found at the root and kept up to date in
O(log W) when one time changes (the event loop's next event; LWL's first server to empty).

``tree`` has 2W entries for W = :func:`tree_size` leaves: entry W + i is leaf i, entry k
holds the leaf of least time among its two children's (ties: the left one), entry 1 the
least of all.
"""

from __future__ import annotations

from numba import njit


def tree_size(leaves: int) -> int:
    """The tournament tree's width: the least power of two ≥ ``leaves``."""
    return 1 << max(0, (leaves - 1).bit_length())


@njit(inline="always", cache=True)
def carry_up(when, tree, leaf, width):
    """Leaf ``leaf``'s time changed: replay its matches up to the root."""
    position = (width + leaf) >> 1
    while position >= 1:
        a = tree[2 * position]
        b = tree[2 * position + 1]
        tree[position] = a if when[a] <= when[b] else b
        position >>= 1


@njit(cache=True)
def build_tree(when, tree, width):
    """Fill the tournament tree over ``when`` (padded to ``width`` with +inf)."""
    for leaf in range(width):
        tree[width + leaf] = leaf
    for position in range(width - 1, 0, -1):
        a = tree[2 * position]
        b = tree[2 * position + 1]
        tree[position] = a if when[a] <= when[b] else b
