"""LED's local estimates in continuous time: the reductions to the full-information rules,
the messages they cost, and their parameters checked."""

from __future__ import annotations

import math

import pytest

from dispatchlab.continuous import simulate_continuous
from dispatchlab.core.errors import ValidationError

EXACT = {"update": "pull", "p": 1.0, "increment": True}


@pytest.mark.parametrize(("servers", "led", "full"), [("4x1,4x2", "l-jsq", "jsq"),
                                                      ("8x1", "l-pod", "jsq-d")])
def test_exact_estimates_choose_as_the_full_information_rule(servers, led, full) -> None:
    # one dispatcher that adds each job it sends and hears of every departure knows the
    # true counts at every decision: the same choices, draw for draw
    settings = {"load": 0.9, "jobs": 50_000, "dispatchers": 1, "seed": 3, "workers": 1}
    estimated = simulate_continuous(servers, led, policy_params=EXACT, **settings)
    true = simulate_continuous(servers, full, **settings)
    assert estimated.mean_response == true.mean_response
    assert true.messages_per_job == 0.0


@pytest.mark.parametrize(("update", "p", "probes", "per_job"), [
    ("pull", 0.3, 1, 0.3), ("push", 0.2, 1, 0.4), ("push", 0.1, 3, 0.6)])
def test_messages_per_job_are_what_the_update_sends(update, p, probes, per_job) -> None:
    result = simulate_continuous("4x1,4x2", "l-jsq", load=0.8, jobs=200_000, dispatchers=5,
                                 seed=1, workers=1,
                                 policy_params={"update": update, "p": p, "probes": probes})
    # a binomial count of coins, one per measured job (up to a few at the window's edges)
    jobs = 0.9 * 200_000
    spread = 5 * per_job * math.sqrt((1 - p) / (p * jobs)) + 1e-3
    assert result.messages_per_job == pytest.approx(per_job, abs=spread)


def test_rare_updates_without_the_increment_herd_but_stay_stable() -> None:
    # [LED] §6: rare updates send every job of a long stretch to the same server; the rule
    # is still throughput optimal (tilted, with updates meeting its Eq. (5))
    often = simulate_continuous("4x1,4x2", "l-jsq-push", load=0.9, jobs=200_000,
                                dispatchers=10, seed=2, workers=1, policy_params={"p": 0.5})
    rare = simulate_continuous("4x1,4x2", "l-jsq-push", load=0.9, jobs=200_000,
                               dispatchers=10, seed=2, workers=1, policy_params={"p": 0.01})
    assert rare.stability != "unstable" and often.stability == "stable"
    assert rare.mean_response.mean > 5 * often.mean_response.mean


@pytest.mark.parametrize(("policy", "params", "field"), [
    ("l-jsq", {"update": "both"}, "policy_params.update"),
    ("l-jsq", {"p": 0.0}, "policy_params.p"),
    ("l-jsq", {"p": 1.5}, "policy_params.p"),
    ("l-jsq", {"p": "0.5"}, "policy_params.p"),
    ("l-jsq", {"p": float("nan")}, "policy_params.p"),
    ("l-jsq", {"probes": 9}, "policy_params.probes"),
    ("l-jsq", {"increment": 1}, "policy_params.increment"),
    ("l-pod", {"d": 9}, "policy_params.d"),
    ("l-pod", {"replace": True}, "policy_params.replace"),
])
def test_bad_update_parameters_are_one_error(policy, params, field) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("8x1", policy, load=0.5, jobs=1000, policy_params=params)
    assert caught.value.field == field, str(caught.value)


def test_shared_stale_information_herds_past_random_routing() -> None:
    # every `interval` all dispatchers learn the same counts; JSQ on them sends a whole
    # interval's jobs to the same few queues (Mitzenmacher, "How useful is old
    # information?"): at interval 10 it is worse than not looking at all
    settings = {"load": 0.9, "jobs": 100_000, "replications": 4, "dispatchers": 10,
                "seed": 5, "workers": 1}
    stale = simulate_continuous("100x1", "stale-jsq", policy_params={"interval": 10.0},
                                **settings)
    fresh = simulate_continuous("100x1", "stale-jsq", policy_params={"interval": 0.01},
                                **settings)
    blind = simulate_continuous("100x1", "random", **settings)
    jsq = simulate_continuous("100x1", "jsq", **settings)
    assert stale.mean_response.ci_low > blind.mean_response.ci_high
    assert fresh.mean_response.mean == pytest.approx(jsq.mean_response.mean, rel=0.05)
    # M·N messages a broadcast, λ·interval jobs between two
    rate = stale.arrival_rate
    assert stale.messages_per_job == pytest.approx(10 * 100 / (rate * 10.0), rel=0.02)


@pytest.mark.parametrize("interval", [0.0, -1.0, float("inf"), "1", True])
def test_a_bad_broadcast_interval_is_one_error(interval) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("4x1", "stale-jsq", load=0.5, jobs=1000,
                            policy_params={"interval": interval})
    assert caught.value.field == "policy_params.interval", str(caught.value)
