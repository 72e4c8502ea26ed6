"""What the exact solver asks a policy for: its dispatch law as a function of the state.

Two capabilities, looked up on the policy object (the way the Π stability check asks for
``dispatch_fractions``), so that this package never imports the policies:

* ``dispatch_probabilities(q, mu) -> P`` — a *state-only* rule: ``q`` is an (S, N) integer
  array of slot-start queue vectors Q(t) (one row per state), the answer an (S, N) array
  with ``P[s, n]`` = P(one ``choose`` call sends its jobs to server n | Q(t) = q[s]).
  Calls of one slot are independent given Q(t), unless the policy also answers
  ``dispatch_shared() -> True`` (one draw per slot shared by every call: JSQ's
  ``ties=shared``). ``None``: no exact law for these settings (e.g. JSQ with a lag).
* ``exact_memory(system) -> MemoryRule | None`` — a rule with a finite memory (RR's
  pointers, JIQ's list of idle IDs): a :class:`MemoryRule` that enumerates its memory
  values and gives the law of one ``choose`` call and of the end-of-slot update.

The helpers below compute the laws of the usual argmin rules in NumPy, on the same
float64 scores as the compiled rules (so ties are the same ties).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations, permutations

import numpy as np


def argmin_uniform(values: np.ndarray) -> np.ndarray:
    """P(target = n): uniform over the minimisers of each row of ``values`` (S, N)."""
    values = np.asarray(values)
    hit = values == values.min(axis=1, keepdims=True)
    return hit / hit.sum(axis=1, keepdims=True)


def argmin_lowest(values: np.ndarray) -> np.ndarray:
    """P(target = n): all on the lowest-index minimiser of each row."""
    values = np.asarray(values)
    out = np.zeros(values.shape)
    out[np.arange(values.shape[0]), np.argmin(values, axis=1)] = 1.0
    return out


def subset_argmin(values: np.ndarray, subsets: Sequence[Sequence[int]],
                  weights: Sequence[float]) -> np.ndarray:
    """P(target = n) when a sample ``subsets[i]`` is drawn with probability ``weights[i]``
    and the job joins the sample's minimiser, ties uniform within the sample."""
    values = np.asarray(values)
    out = np.zeros(values.shape)
    for subset, weight in zip(subsets, weights, strict=True):
        index = list(subset)
        out[:, index] += weight * argmin_uniform(values[:, index])
    return out


def uniform_subsets(n: int, d: int) -> tuple[list[tuple[int, ...]], list[float]]:
    """The d-subsets of N servers, each with probability 1/C(N, d) (Po-d's sample)."""
    subsets = list(combinations(range(n), d))
    return subsets, [1.0 / len(subsets)] * len(subsets)


def weighted_sequences(mu: np.ndarray, d: int) -> tuple[list[tuple[int, ...]], list[float]]:
    """Ordered samples of d distinct servers drawn one after another with probability ∝ μ
    among those left (balanced Po-d), with their probabilities."""
    mu = np.asarray(mu, dtype=float)
    total = float(mu.sum())
    sequences, weights = [], []
    for sequence in permutations(range(mu.size), d):
        p, remaining = 1.0, total
        for n in sequence:
            p *= mu[n] / remaining
            remaining -= mu[n]
        sequences.append(sequence)
        weights.append(p)
    return sequences, weights


class MemoryRule:
    """A dispatching rule whose memory takes finitely many values (subclass it).

    ``states`` lists every memory value (hashable, e.g. a tuple); ``initial`` is the one
    the policy starts from (with Q(0) = 0). The law of one slot, as the engine runs it
    (docs/model.md): each ``choose`` call (per dispatcher m with arrivals, once in batch
    mode, once per job in per-job mode) is :meth:`dispatch`; after service the
    end-of-slot phase is :meth:`update` on Q(t+1). Both act on many states at once:
    ``q`` is an (S, N) array, the answer a list of branches ``(prob, ...)`` of (S,)
    arrays, whose probabilities sum to 1 in every row.
    """

    states: Sequence[Hashable] = ()
    initial: Hashable = None

    def dispatch(self, memory: Hashable, q: np.ndarray, m: int, jobs: int
                 ) -> list[tuple[np.ndarray, np.ndarray, list[Hashable] | Hashable]]:
        """Branches (prob, target, memory after the call): ``target`` an (S,) int array,
        the memory one value for every row or a list of S values."""
        raise NotImplementedError

    def update(self, memory: Hashable, q_next: np.ndarray
               ) -> list[tuple[np.ndarray, list[Hashable] | Hashable]]:
        """Branches (prob, memory at the next slot start) of the end-of-slot phase."""
        return [(np.ones(q_next.shape[0]), memory)]
