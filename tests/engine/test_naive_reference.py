"""The compiled slot loop against the plain-Python one of ``tests/naive.py``, draw for draw.

The engine reports no trajectory, so Q(t) is read as the final queues of runs of t slots
with the same seed, t = 1 … SLOTS (with ``warmup=0`` and no delay tracking, a run of t
slots is the first t slots of a longer one; the agreement at every t checks it too), and
ΣQ(t + 1) and the pooled queue q(t + 1) of every slot from one run's block sums (one slot a
block below 1000 slots). The naive loop draws from its own pure-Python generators seeded
as the engine seeds (``tests/compiled/test_rng_vectors.py`` pins them), so the paths agree only if
the compiled loop draws the same numbers in the same order and applies the same slot.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiled_paths import MU, SLOTS, assert_follows_naive, compiled_path
from dispatchlab.model.system import System
from dispatchlab.policies.base import make_policy
from naive import JSQ, PowerOfD, Rand, RoundRobin, WeightedRand, naive_run, vose_alias_table


def naive_policy(name: str, params: dict, system: System):
    mu = [float(x) for x in system.mu]
    return {
        "rand": lambda: Rand(),
        "wrand": lambda: WeightedRand(mu),
        "jsq": lambda: JSQ(),
        "pod": lambda: PowerOfD(params.get("d", 2)),
        "rr": lambda: RoundRobin(len(mu), system.dispatchers),
    }[name]()


CASES = [
    # (policy, params, system keywords, seed)
    ("rand", {}, dict(dispatchers=1), 1),
    ("wrand", {}, dict(dispatchers=1), 2),
    ("jsq", {}, dict(dispatchers=1), 3),
    ("pod", {"d": 2}, dict(dispatchers=1), 4),
    ("rr", {}, dict(dispatchers=1), 5),
    ("rand", {}, dict(dispatchers=2), 6),
    ("wrand", {}, dict(dispatchers=2, dispatcher_weights=(0.3, 0.7)), 7),
    ("jsq", {}, dict(dispatchers=2), 8),
    ("pod", {"d": 2}, dict(dispatchers=2), 9),
    ("pod", {"d": 3}, dict(dispatchers=2), 10),
    ("rr", {}, dict(dispatchers=2), 11),
    # all of a slot's jobs to one dispatcher drawn from p (the batch split)
    ("jsq", {}, dict(dispatchers=2, split="batch", dispatcher_weights=(0.25, 0.75)), 12),
    ("pod", {"d": 2}, dict(dispatchers=2, split="batch"), 13),
    # per-job dispatch: one choice per job, all on the slot-start queues
    ("jsq", {}, dict(dispatchers=2, dispatch="per_job"), 14),
    ("rand", {}, dict(dispatchers=1, dispatch="per_job"), 15),
    # geometric service: one draw per server of the exogenous stream (the arrivals')
    ("jsq", {}, dict(dispatchers=2, service="geometric"), 16),
    ("wrand", {}, dict(dispatchers=1, service="geometric"), 17),
    ("pod", {"d": 2}, dict(dispatchers=2, service="geometric"), 18),
]


@pytest.mark.parametrize("name, params, keywords, seed", CASES,
                         ids=[f"{c[0]}{c[1].get('d', '')}-{c[3]}" for c in CASES])
def test_the_compiled_loop_follows_the_naive_one(name, params, keywords, seed) -> None:
    system = System.build(MU, load=0.9, **keywords)
    assert_follows_naive(system, make_policy(name, **params), naive_policy(name, params, system),
                         seed)


def test_the_naive_alias_table_is_the_policys() -> None:
    system = System.build(MU, load=0.9)
    table = make_policy("wrand").kernel(system).float_params
    assert [(float(table[2 * i]), int(table[2 * i + 1])) for i in range(len(MU))] == \
        vose_alias_table(MU)


def test_a_changed_draw_is_seen() -> None:
    """The comparison can fail: the naive loop with a policy that breaks ties by the
    lowest index (no draw) departs from the compiled JSQ."""

    class LowestJSQ(JSQ):
        def choose(self, m, jobs, t, Q, rng):
            return Q.index(min(Q))

    system = System.build(MU, load=0.9, dispatchers=2)
    queues, _, _ = compiled_path(system, make_policy("jsq"), 8)
    path = naive_run(mu=MU, arrival_rate=float(system.arrival_rate),
                     dispatcher_weights=[0.5, 0.5], split="per_job", dispatch="batch",
                     service="bernoulli", policy=LowestJSQ(), slots=SLOTS, seed=8)
    assert (queues != np.array(path.queues)).any()
