"""JSQ/JSED herding options (docs/model.md#herding): tie rule, lag, water-filling."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.core.errors import ValidationError
from dispatchlab.engine.interface import MESSAGE_KINDS, Context, Slot
from dispatchlab.policies import make_policy
from dispatchlab.policies.base import Kernel
from dispatchlab.policies.classic import JoinShortestQueue

SLOTS = 30_000


def picks_per_slot(ties: str, dispatchers: int = 10, slots: int = 300, seed: int = 4):
    """Drive the compiled ``choose`` of ``jsq(ties=…)`` slot by slot on random queue vectors
    with many ties; return, per slot, the server each dispatcher picked."""
    system = System.build("12x0.5", load=0.5, dispatchers=dispatchers)
    kernel = make_policy("jsq", ties=ties).kernel(system)
    memory = kernel.memory()
    ctx = Context(make_rng_state(seed), np.zeros(len(MESSAGE_KINDS), np.int64))
    draws = np.random.default_rng(seed)
    trajectory = []
    for t in range(slots):
        slot = Slot(t, draws.integers(0, 3, system.n_servers).astype(np.int64), system.mu)
        trajectory.append([kernel.choose(m, 1, slot, memory, ctx) for m in range(dispatchers)])
    return trajectory


def test_shared_ties_make_every_dispatcher_pick_the_same_server_every_slot():
    trajectory = picks_per_slot("shared")
    assert all(len(set(slot)) == 1 for slot in trajectory)
    # and the shared pick is a uniform minimiser, not always the same index
    assert len({slot[0] for slot in trajectory}) > 3


def test_random_ties_scatter_the_dispatchers():
    trajectory = picks_per_slot("random")
    assert sum(len(set(slot)) > 1 for slot in trajectory) > 200


def test_shared_ties_herd_in_the_loop():
    # every slot with ≥ 2 active dispatchers herds when all pick one server
    system = System.build("10x0.5", load=0.9, dispatchers=10)
    shared = simulate(system, "jsq", policy_params={"ties": "shared"}, slots=SLOTS, seed=2,
                      delay="off")
    lowest = simulate(system, "jsq", policy_params={"ties": "lowest"}, slots=SLOTS, seed=2,
                      delay="off")
    uniform = simulate(system, "jsq", slots=SLOTS, seed=2, delay="off")
    rate = 0.9 * 5.0 / 10  # Poisson arrivals per dispatcher and slot
    active = 1 - np.exp(-rate)
    two_or_more = 1 - (1 - active) ** 10 - 10 * active * (1 - active) ** 9
    assert shared.herding_fraction == pytest.approx(two_or_more, abs=0.01)
    assert lowest.herding_fraction == pytest.approx(two_or_more, abs=0.01)
    assert uniform.herding_fraction < two_or_more - 0.05
    assert shared.mean_total_queue > uniform.mean_total_queue


class _HerdingPath(JoinShortestQueue):
    """``jsq`` forced through the herding kernel even with the plain options."""

    def kernel(self, system: System) -> Kernel:
        return self.herding_kernel(system)


@pytest.mark.parametrize("dispatch", ["batch", "per_job"])
def test_lag_zero_equals_todays_jsq_draw_for_draw(dispatch):
    system = System.build("6x0.2,6x0.6", load=0.9, dispatchers=4, dispatch=dispatch)
    plain = simulate(system, "jsq", slots=SLOTS, seed=3)
    herding = simulate(system, _HerdingPath(lag=0), slots=SLOTS, seed=3)
    assert herding.mean_total_queue == plain.mean_total_queue
    assert herding.mean_queues == plain.mean_queues
    assert herding.delay_p99 == plain.delay_p99
    assert herding.herding_fraction == plain.herding_fraction
    assert herding.messages_by_kind == plain.messages_by_kind


def queue_trajectory(policy_params: dict, slots: int) -> list[tuple[int, int]]:
    """Q(1), …, Q(slots) of M = 1 on μ = (2, 2) deterministic, 3 jobs per slot."""
    system = System.build([2, 2], rate=3, arrivals="deterministic", service="deterministic")
    sums = [np.zeros(2)]
    for horizon in range(1, slots + 1):
        result = simulate(system, "jsq", policy_params=policy_params, slots=horizon, warmup=0,
                          seed=1, delay="off")
        sums.append(np.asarray(result.mean_queues) * horizon)
    return [tuple(int(round(x)) for x in sums[t] - sums[t - 1]) for t in range(1, slots + 1)]


def test_lag_one_matches_a_hand_computed_trace():
    # lag 1, lowest-index ties: slot t decides on Q(t − 1) (Q(−1) = Q(0) = (0, 0)):
    # t=0 (0,0)→0: Q(1)=(1,0); t=1 Q(0)=(0,0)→0: (2,0); t=2 Q(1)=(1,0)→1: (0,1);
    # t=3 Q(2)=(2,0)→1: (0,2); t=4 Q(3)=(0,1)→0: (1,0); then the cycle repeats
    expected = [(1, 0), (2, 0), (0, 1), (0, 2), (1, 0), (2, 0), (0, 1), (0, 2)]
    assert queue_trajectory({"lag": 1, "ties": "lowest"}, 8) == expected
    # without lag the fresh minimum alternates and ΣQ stays 1
    assert queue_trajectory({"ties": "lowest"}, 4) == [(1, 0), (0, 1), (1, 0), (0, 1)]


@pytest.mark.parametrize("dispatchers", [1, 4])
def test_fill_equals_the_led_emulation_draw_for_draw(dispatchers):
    # LED with p̂ = 1, d = N, increments, per job: estimates = Q(t) at each slot start, +1
    # per job sent — water-filling on the true slot-start queues; the update draws nothing
    system = System.build("6x0.2,6x0.6", load=0.9, dispatchers=dispatchers, dispatch="per_job")
    fill = simulate(system, "jsq", policy_params={"fill": True}, slots=SLOTS, seed=8)
    led = simulate(system, "l-jsq-push", policy_params={"p": 1.0, "d": 12, "increment": True},
                   slots=SLOTS, seed=8)
    assert fill.mean_total_queue == led.mean_total_queue
    assert fill.mean_queues == led.mean_queues
    assert fill.delay_p99 == led.delay_p99
    # messages differ by construction: 2N per dispatch event against 2N per dispatcher-slot
    assert fill.messages_per_dispatch == pytest.approx(24.0)


def test_fill_counts_one_read_per_dispatch_event():
    system = System.build("10x0.5", load=0.9, dispatchers=3, dispatch="per_job")
    fill = simulate(system, "jsq", policy_params={"fill": True}, slots=SLOTS, seed=1)
    per_job = simulate(system, "jsq", slots=SLOTS, seed=1)
    assert fill.messages_per_dispatch == pytest.approx(20.0)
    assert per_job.messages_per_arrival == pytest.approx(20.0)  # 2N per job


def test_jsed_options_run_and_lag_hurts():
    system = System.build("6x0.2,6x0.6", load=0.9, dispatchers=4)
    fresh = simulate(system, "jsed", slots=SLOTS, seed=3, delay="off")
    stale = simulate(system, "jsed", policy_params={"lag": 2}, slots=SLOTS, seed=3,
                     delay="off")
    assert stale.mean_total_queue > fresh.mean_total_queue


def test_option_validation():
    with pytest.raises(ValidationError, match="jsq.ties"):
        make_policy("jsq", ties="first")
    with pytest.raises(ValidationError, match="jsq.lag"):
        make_policy("jsq", lag=-1)
    batch = System.build("4x0.5", load=0.5)
    with pytest.raises(ValidationError, match="jsq.fill"):
        simulate(batch, "jsq", policy_params={"fill": True}, slots=10)
    with pytest.raises(ValidationError, match="jsed.fill"):
        simulate(batch, "jsed", policy_params={"fill": True}, slots=10)
