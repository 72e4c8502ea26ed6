"""Common random numbers (docs/statistics.md#paired): the exogenous draws, A^m(t) and
S_n(t), come from streams no policy draws from, so two policies run with one seed see the
same arrivals and the same service; paired comparisons build on it."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab.engine import loop
from dispatchlab.engine.raw import run_once
from dispatchlab.model.system import System
from dispatchlab.policies.base import make_policy

SLOTS = 1000  # one slot a block: the block sums are the per-slot paths

SYSTEMS = {
    # split Poisson arrivals (the loop's own draw), Bernoulli service (its own stream)
    "split-poisson": dict(mu="4x0.3,4x0.7", load=0.9, dispatchers=3),
    # binomial arrivals split multinomially, geometric service (the exogenous stream)
    "binomial-geometric": dict(mu="0.2,0.3,0.5,0.6", load=0.85, dispatchers=3,
                               arrivals="binomial:6", service="geometric"),
    # one dispatcher drawn per slot (the batch split), Poisson service
    "batch-poisson": dict(mu="0.5,1.5,2", load=0.9, dispatchers=2, split="batch",
                          service="poisson"),
}
POLICIES = [("jsq", {}), ("pod", {"d": 2}), ("rand", {}), ("led", {"strategy": "jba"}),
            ("jbt", {"r": 2})]


def exogenous_path(system: System, name: str, params: dict, seed: int):
    raw = run_once(system, make_policy(name, **params).kernel(system), slots=SLOTS, warmup=0,
                   seed=seed, bound=10**9, track_delay=False, detail=False)
    assert raw.block_length == 1 and raw.slots_run == SLOTS
    offered = int(raw.counters[loop.DEPARTURES]) + int(raw.moments[loop.SUM_UNUSED])
    return raw.block_pooled[:SLOTS].copy(), int(raw.counters[loop.ARRIVALS]), offered, raw


@pytest.mark.parametrize("label", sorted(SYSTEMS))
def test_every_policy_sees_the_same_arrivals_and_service(label: str) -> None:
    """q(t + 1) = max(q(t) + A_Σ(t) − Σ_n S_n(t), 0) is a function of the exogenous draws
    alone: identical per slot across policies, as are the arrivals and the service
    offered (departures + unused service), while the queues themselves differ."""
    keywords = dict(SYSTEMS[label])
    system = System.build(keywords.pop("mu"), **keywords)
    paths = {name: exogenous_path(system, name, params, seed=5) for name, params in POLICIES}
    pooled, arrivals, offered, raw = paths["jsq"]
    assert arrivals > 0 and pooled.max() > 0
    for name, (other_pooled, other_arrivals, other_offered, _raw) in paths.items():
        assert (other_pooled == pooled).all(), name
        assert (other_arrivals, other_offered) == (arrivals, offered), name
    assert not (paths["rand"][3].block_sum == raw.block_sum).all()  # policies still differ
    # another seed, other arrivals
    assert not (exogenous_path(system, "jsq", {}, seed=6)[0] == pooled).all()


def test_replications_pair_by_index() -> None:
    """Replication r of two policies shares its exogenous draws (the spawned seed r)."""
    system = System.build("4x0.3,4x0.7", load=0.9, dispatchers=3)
    for index in (0, 3):
        seed = np.random.SeedSequence(2, spawn_key=(index,))
        first = exogenous_path(system, "jsq", {}, seed)[0]
        assert (exogenous_path(system, "pod", {"d": 2}, seed)[0] == first).all()
