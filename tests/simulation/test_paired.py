"""Common random numbers (docs/statistics.md#paired): the exogenous draws, A^m(t) and
S_n(t), come from streams no policy draws from, so two policies run with one seed see the
same arrivals and the same service; paired comparisons build on it."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab.engine import layout
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
                   seed=seed, bound=10**9, time_every_job=False, imbalance=False)
    assert raw.block_length == 1 and raw.slots_run == SLOTS
    offered = int(raw.counters[layout.DEPARTURES]) + int(raw.moments[layout.SUM_UNUSED])
    return raw.block_pooled[:SLOTS].copy(), int(raw.counters[layout.ARRIVALS]), offered, raw


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


# -- dl.compare: the paired CI ------------------------------------------------------------------

EXACT_SYSTEM = dict(mu="0.3,0.6", load=0.7, arrivals="bernoulli")


def test_the_paired_ci_covers_the_exact_difference_and_is_narrower() -> None:
    """JSQ vs weighted random on two servers: D from the exact stationary laws; the paired
    CI covers it (one run: per-block differences; R = 6: per-replication differences) and
    is narrower than the unpaired one on the same runs."""
    import dispatchlab as dl

    keywords = dict(EXACT_SYSTEM)
    system = System.build(keywords.pop("mu"), **keywords)
    exact = (dl.exact(system, "jsq").mean_total_queue
             - dl.exact(system, "wrand").mean_total_queue)
    one = dl.compare(system, "jsq", "wrand", slots=200_000, seed=3)
    many = dl.compare(system, "jsq", "wrand", slots=50_000, seed=3, replications=6)
    for paired in (one, many):
        assert paired.common_random_numbers
        assert paired.ci_low <= exact <= paired.ci_high, (exact, str(paired))
        assert 0 < paired.remaining_variance < 1
        assert paired.half_width < paired.unpaired_half_width
        assert paired.difference == pytest.approx(paired.mean_a - paired.mean_b, abs=0.05)
    assert one.method.startswith("per-block differences, batch means")
    assert many.method == "per-replication differences (6 pairs)" and many.replications == 6
    assert (one.policy_a, one.policy_b) == ("jsq", "wrand")
    record = one.to_dict()
    assert record["half_width"] == one.half_width and "result_a" in record


def test_pairing_buys_most_where_the_policies_are_alike() -> None:
    """JSQ against Po-4 near saturation: both track the pooled queue, so most of their
    variance is the arrivals' and pairing removes it."""
    import dispatchlab as dl
    from dispatchlab.policies import make_policy

    system = System.build("20x0.5", load=0.98)
    paired = dl.compare(system, "jsq", make_policy("pod", d=4), slots=200_000, seed=0)
    assert paired.remaining_variance < 0.5
    assert paired.ci_high < 0  # JSQ's queue is shorter


def test_a_policy_against_itself_differs_by_exactly_zero() -> None:
    import dispatchlab as dl

    system = System.build("4x0.5", load=0.9, dispatchers=2)
    paired = dl.compare(system, "pod", "pod", slots=20_000, seed=1)
    assert (paired.difference, paired.ci_low, paired.ci_high) == (0.0, 0.0, 0.0)
    assert paired.method == "exact: the same path in every block"


def test_the_remaining_variance_keeps_its_old_name_for_a_version(capsys) -> None:
    """``variance_reduction`` held the variance pairing leaves; it is ``remaining_variance``
    now, the old name a deprecated alias. The paired table tells jbt:r=1 from jbt:r=3."""
    import dispatchlab as dl
    from dispatchlab.cli import main

    system = System.build("4x0.5", load=0.9, dispatchers=2)
    paired = dl.compare(system, "jsq", "pod", slots=20_000, seed=1)
    assert 0 < paired.remaining_variance < 1
    with pytest.warns(DeprecationWarning, match="remaining_variance"):
        assert paired.variance_reduction == paired.remaining_variance
    assert "remaining_variance" in paired.to_dict()
    assert main(["compare", "-p", "jsq", "-p", "jbt:r=1", "-p", "jbt:r=3", "--paired",
                 "--servers", "4x0.5", "--slots", "4000"]) == 0
    table = capsys.readouterr().out
    assert "jbt (r=1)" in table and "jbt (r=3)" in table and "remaining variance" in table


@pytest.mark.parametrize("keyword, value, field", [
    ("precision", 0.01, "precision"), ("max_slots", 10**7, "max_slots"),
    ("policy_params", {"d": 2}, "policy_params"), ("slots", 0, "slots"),
    ("seed", -1, "seed"), ("replications", 1.5, "replications"), ("bogus", 1, "bogus"),
])
def test_compare_validates_like_simulate(keyword: str, value: object, field: str) -> None:
    import dispatchlab as dl

    system = System.build("4x0.5", load=0.9)
    with pytest.raises(dl.ValidationError) as caught:
        dl.compare(system, "jsq", "pod", **{"slots": 1000, keyword: value})
    assert caught.value.field == field


def test_compare_refuses_a_bad_policy_or_system() -> None:
    import dispatchlab as dl

    system = System.build("4x0.5", load=0.9)
    with pytest.raises(dl.ValidationError, match="policy"):
        dl.compare(system, "jsq", "no-such-policy", slots=1000)
    with pytest.raises(dl.ValidationError, match="system"):
        dl.compare("4x0.5", "jsq", "pod", slots=1000)
