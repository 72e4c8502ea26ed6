"""The compiled loop's path, slot by slot, beside the plain-Python loop of ``naive.py``
(which imports no compiled code): the tests that follow the naive loop draw for draw
(``engine/test_naive_reference.py``, ``policies/test_coordinated.py``) share it."""

from __future__ import annotations

import numpy as np

from dispatchlab.engine.raw import run_once
from dispatchlab.model.system import System
from naive import naive_run

SLOTS = 200
MU = [0.3, 0.5, 0.7, 0.9]



def compiled_path(system: System, policy, seed: int) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Q(t) for t = 0 … SLOTS (runs of t slots), and ΣQ(t), q(t) for t = 1 … SLOTS (one run)."""
    kernel = policy.kernel(system)
    bound = 10**9
    queues = [np.zeros(system.n_servers, np.int64)]
    for t in range(1, SLOTS + 1):
        raw = run_once(system, kernel, slots=t, warmup=0, seed=seed, bound=bound,
                       time_every_job=False, imbalance=False)
        assert raw.slots_run == t and not raw.hit_bound
        queues.append(raw.final_queues.copy())
    assert raw.block_length == 1
    return np.array(queues), raw.block_sum[:SLOTS], raw.block_pooled[:SLOTS]


def assert_follows_naive(system: System, policy, naive, seed: int) -> None:
    """The compiled loop's path of ``policy`` is the naive loop's of ``naive``, slot by slot,
    on a path worth comparing (jobs queue, and more than one server holds some)."""
    queues, totals, pooled = compiled_path(system, policy, seed)
    path = naive_run(mu=[float(x) for x in system.mu], arrival_rate=float(system.arrival_rate),
                     dispatcher_weights=[float(p) for p in system.weights], split=system.split,
                     dispatch=system.dispatch, service=system.service.kind,
                     policy=naive, slots=SLOTS, seed=seed)
    expected = np.array(path.queues)
    first = np.flatnonzero((queues != expected).any(axis=1))
    assert first.size == 0, (
        f"Q({first[0]}) = {queues[first[0]].tolist()}, naive {path.queues[first[0]]}")
    assert totals.tolist() == expected[1:].sum(axis=1).tolist()
    assert pooled.tolist() == path.pooled[1:]
    assert expected.sum(axis=1).max() >= 4
    assert (expected > 0).any(axis=0).sum() >= 2
