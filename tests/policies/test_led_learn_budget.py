"""LSQ learn-on-send and the unit of LED's message budget (docs/model.md#herding,
docs/model.md#lsq)."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.engine.interface import ANSWER, MESSAGE_KINDS, Context, Slot
from dispatchlab.policies import make_policy
from dispatchlab.policies.led.policy import po2_budget_per_slot

FIG1 = "50x0.1,50x0.5"
SLOTS = 20_000


def led_kernel(**params):
    system = System.build([1.0] * 5, load=0.5, dispatchers=2)
    kernel = make_policy("lsq", **params).kernel(system)
    ctx = Context(make_rng_state(1), np.zeros(len(MESSAGE_KINDS), np.int64))
    return system, kernel, kernel.memory(), ctx


def test_learn_on_send_writes_the_true_queue_plus_the_jobs_sent():
    system, kernel, memory, ctx = led_kernel(learn_on_send=True)
    ist = memory.int_state
    Q = np.array([4, 7, 2, 9, 5], np.int64)
    ist[0, :] = [3, 3, 3, 3, 0]  # stale: server 4 looks empty
    target = kernel.choose(0, 3, Slot(0, Q, system.mu), memory, ctx)
    assert target == 4
    assert ist[0, 4] == Q[4] + 3  # the destination answered Q_4(t) = 5
    assert ctx.msg[ANSWER] == 1
    # the same slot again: the jobs sent there so far are added, no second answer
    ist[0, :4] = 100
    assert kernel.choose(0, 2, Slot(0, Q, system.mu), memory, ctx) == 4
    assert ist[0, 4] == Q[4] + 3 + 2
    assert ctx.msg[ANSWER] == 1
    # a later slot: a fresh answer
    Q[4] = 1
    assert kernel.choose(0, 1, Slot(1, Q, system.mu), memory, ctx) == 4
    assert ist[0, 4] == 2 and ctx.msg[ANSWER] == 2
    # the other dispatcher's estimates are untouched
    assert (ist[1, :5] == 0).all()


def test_increment_only_lsq_adds_the_jobs_to_the_stale_estimate():
    system, kernel, memory, ctx = led_kernel()
    Q = np.array([4, 7, 2, 9, 5], np.int64)
    memory.int_state[0, :5] = [3, 3, 3, 3, 0]
    assert kernel.choose(0, 3, Slot(0, Q, system.mu), memory, ctx) == 4
    assert memory.int_state[0, 4] == 3 and ctx.msg[ANSWER] == 0


def test_learn_on_send_costs_one_answer_per_dispatch_event_in_batch_mode():
    system = System.build("8x0.5", load=0.8, dispatchers=3)
    result = simulate(system, "lsq", policy_params={"learn_on_send": True, "update": "pull",
                                                    "p": 0.1}, slots=SLOTS, seed=2)
    answers_per_dispatch = (result.messages_by_kind["answer"] * result.messages_per_dispatch
                            / result.messages_per_arrival)
    assert answers_per_dispatch == pytest.approx(1.0)


def test_learn_on_send_helps_with_rare_updates():
    system = System.build("10x0.5", load=0.9, dispatchers=5)
    common = {"update": "pull", "p": 0.02, "measure_error": False}
    learn = simulate(system, "lsq", policy_params={"learn_on_send": True, **common},
                     slots=SLOTS, seed=3, delay="off")
    plain = simulate(system, "lsq", policy_params=common, slots=SLOTS, seed=3,
                     delay="off")
    assert learn.mean_total_queue < plain.mean_total_queue


@pytest.mark.parametrize("load", [0.5, 0.7])
def test_budget_per_arrival_calibrates_to_four_messages_per_job(load):
    # push d = 5 and pull can spend 4·λ_Σ per slot here (4λ_Σ ≤ 2dM = 100 and ≤ N = 100)
    system = System.build(FIG1, load=load, dispatchers=10)
    for name in ("l-jsq-push", "l-jsq-pull", "l-jba-push", "l-jba-pull"):
        params = {"budget": "po2", "budget_unit": "arrival", "d": 5, "measure_error": False}
        policy = make_policy(name, **params)
        assert policy.effective_p(system) < 1.0
        result = simulate(system, policy, slots=SLOTS, seed=4, delay="off",
                          imbalance=False)
        assert result.messages_per_arrival == pytest.approx(4.0, rel=0.02), name


@pytest.mark.parametrize("load", [0.5, 0.9])
def test_budget_per_dispatch_calibrates_to_po2_measured_overhead(load):
    system = System.build(FIG1, load=load, dispatchers=10)
    po2 = simulate(system, "pod", policy_params={"d": 2}, slots=SLOTS, seed=4,
                   delay="off", imbalance=False)
    assert po2.messages_per_arrival < 2.5  # 4 per dispatch event: ≈ 1.3-2.1 per job, not 4
    for name in ("l-jsq-push", "l-jsq-pull", "l-jba-push", "l-jba-pull"):
        result = simulate(system, name, policy_params={"budget": "po2", "d": 2,
                                                       "measure_error": False},
                          slots=SLOTS, seed=5, delay="off", imbalance=False)
        assert result.messages_per_arrival == pytest.approx(po2.messages_per_arrival,
                                                            rel=0.02), name


def test_an_unreachable_budget_caps_p_at_one():
    system = System.build(FIG1, load=0.95, dispatchers=10)
    assert po2_budget_per_slot(system, "arrival") == pytest.approx(4 * 0.95 * 30)
    pull = make_policy("l-jsq-pull", budget="po2", budget_unit="arrival")
    assert pull.effective_p(system) == 1.0  # N = 100 reports per slot < 114
    assert make_policy("l-jsq-pull", budget="po2").effective_p(system) < 1.0
    per_job = System.build(FIG1, load=0.5, dispatchers=10, dispatch="per_job")
    assert po2_budget_per_slot(per_job, "dispatch") == po2_budget_per_slot(per_job, "arrival")
