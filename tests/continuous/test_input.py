"""Bad input to the continuous-time API is one ValidationError naming its field; the laws'
draws have the moments the closed forms use; the same seed gives the same run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.continuous import simulate_continuous
from dispatchlab.continuous.laws import draw_many, parse_arrival_shape, parse_size_law
from dispatchlab.continuous.policies import ALIASES, POLICIES
from dispatchlab.core.errors import ValidationError


@pytest.mark.parametrize(("servers", "policy", "settings", "field"), [
    ("abc", "jsq", {"load": 0.5}, "servers"),
    ([1.0, float("nan")], "jsq", {"load": 0.5}, "servers"),
    ([], "jsq", {"load": 0.5}, "servers"),
    ("2x1", "jsq", {"load": float("nan")}, "load"),
    ("2x1", "jsq", {"load": 1.0}, "load"),
    ("2x1", "jsq", {"load": "0.5"}, "load"),
    ("2x1", "jsq", {"load": 0.5, "rate": 1.0}, "load"),
    ("2x1", "jsq", {}, "load"),
    ("2x1", "jsq", {"rate": 5.0}, "rate"),
    ("2x1", "jsq", {"rate": -1.0}, "rate"),
    ("2x1", "fastest", {"load": 0.5}, "policy"),
    ("2x1", 3, {"load": 0.5}, "policy"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "pareto:1"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "bpareto:1.5,10,1"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "exp:0"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "hyperexp:1,0.5"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "erlang:2.5,1"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": "lognormal:1,nan"}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "sizes": 1.0}, "sizes"),
    ("2x1", "jsq", {"load": 0.5, "arrivals": "bursty"}, "arrivals"),
    ("2x1", "jsq", {"load": 0.5, "arrivals": "erlang"}, "arrivals"),
    ("2x1", "jsq", {"load": 0.5, "discipline": "lifo"}, "discipline"),
    ("2x1", "jsq", {"load": 0.5, "jobs": 1}, "jobs"),
    ("2x1", "jsq", {"load": 0.5, "jobs": 10.5}, "jobs"),
    ("2x1", "jsq", {"load": 0.5, "jobs": 100, "warmup": 100}, "warmup"),
    ("2x1", "jsq", {"load": 0.5, "dispatchers": 0}, "dispatchers"),
    ("2x1", "jsq", {"load": 0.5, "seed": -1}, "seed"),
    ("2x1", "jsq", {"load": 0.5, "bound": 0}, "bound"),
    ("2x1", "jsq", {"load": 0.5, "slots": 10}, "slots"),
    ("2x1", "jsq", {"load": 0.5, "policy_params": {"d": 2}}, "policy_params.d"),
    ("2x1", "jsq-d", {"load": 0.5, "policy_params": {"d": 3}}, "policy_params.d"),
    ("2x1", "jsq-d", {"load": 0.5, "policy_params": {"d": True}}, "policy_params.d"),
    ("2x1", "jsq-d", {"load": 0.5, "policy_params": [2]}, "policy_params"),
    ("3x1", "sita", {"load": 0.5, "policy_params": {"cutoffs": [2.0]}}, "policy_params.cutoffs"),
    ("3x1", "sita", {"load": 0.5, "policy_params": {"cutoffs": [2.0, 1.0]}},
     "policy_params.cutoffs"),
    ("3x1", "sita", {"load": 0.5, "policy_params": {"cutoffs": "even"}},
     "policy_params.cutoffs"),
])
def test_bad_input_is_one_validation_error_naming_its_field(servers, policy, settings,
                                                            field) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate_continuous(servers, policy, jobs=settings.pop("jobs", 1000), **settings)
    assert caught.value.field == field, str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["exp:2", "det:3", "erlang:3,2", "hyperexp:2,5",
                                  "bpareto:1.5,1,1000", "bpareto:2,1,10", "lognormal:2,4"])
def test_draws_have_the_laws_moments(text: str) -> None:
    law = parse_size_law(text)
    values = np.empty(400_000)
    draw_many(make_rng_state(7), law.code, law.a, law.b, law.c, values)
    assert values.min() > 0
    se = math.sqrt(max(law.second_moment - law.mean**2, 0.0) / values.size)
    assert abs(values.mean() - law.mean) <= 5 * se + 1e-12, (values.mean(), law.mean)
    assert values.var() == pytest.approx(law.second_moment - law.mean**2, rel=0.15, abs=1e-12)


@pytest.mark.parametrize("text", ["hyperexp:1,4", "lognormal:1,0.25", "erlang:4,1"])
def test_scv_is_what_was_asked(text: str) -> None:
    assert parse_size_law(text).scv == pytest.approx(float(text.split(",")[-1])
                                                     if "erlang" not in text else 0.25)


def test_an_arrival_shape_scales_to_any_mean() -> None:
    for text in ("poisson", "det", "erlang:3", "hyperexp:4"):
        law = parse_arrival_shape(text)
        assert law.mean == pytest.approx(1.0)
        assert law.with_mean(0.25).mean == pytest.approx(0.25)
        assert law.with_mean(0.25).scv == pytest.approx(law.scv)


def test_the_same_seed_gives_the_same_run_and_every_policy_the_same_jobs() -> None:
    first = simulate_continuous("3x1", "jsq-d", load=0.7, jobs=20_000, seed=4)
    again = simulate_continuous("3x1", "jsq-d", load=0.7, jobs=20_000, seed=4)
    assert first.mean_response == again.mean_response
    other = simulate_continuous("3x1", "jsq-d", load=0.7, jobs=20_000, seed=5)
    assert other.mean_response.mean != first.mean_response.mean
    # common random numbers: FIFO and SRPT see the same jobs arrive at the same times, and
    # both are work-conserving, so each arrival finds the server busy or idle alike
    fifo = simulate_continuous("1x1", "random", load=0.7, jobs=20_000, seed=4)
    srpt = simulate_continuous("1x1", "random", load=0.7, jobs=20_000, seed=4,
                               discipline="srpt")
    assert fifo.waiting_probability == srpt.waiting_probability  # busy periods are the same


@pytest.mark.parametrize("name", [*POLICIES, *ALIASES])
def test_every_policy_and_alias_runs(name: str) -> None:
    # ρ = 0.3: even the rules blind to speed leave the slow servers at 0.6
    result = simulate_continuous("2x1,2x3", name, load=0.3, jobs=20_000, seed=2,
                                 sizes="hyperexp:1,4")
    assert result.stability != "unstable", result.stability_evidence
    assert result.mean_response.mean >= 1 / 3 * 0.5  # a response is at least its service
    assert result.mean_slowdown.mean >= 1.0


def test_replications_on_a_pool_are_the_runs_in_this_process() -> None:
    settings = {"load": 0.8, "jobs": 30_000, "replications": 3, "seed": 9,
                "discipline": "ps", "sizes": "lognormal:1,2"}
    here = simulate_continuous("3x1,1x2", "lwl", workers=1, **settings)
    pooled = simulate_continuous("3x1,1x2", "lwl", workers=2, **settings)
    assert pooled.mean_response == here.mean_response
    assert pooled.response_quantiles == here.response_quantiles


@pytest.mark.parametrize(("policy", "settings", "field"), [
    ("jsq", {"bound": 1 << 31}, "bound"),
    ("wrr", {"dispatchers": 1 << 20}, "dispatchers"),
    ("l-jsq", {"dispatchers": 1 << 20}, "dispatchers"),
])
def test_a_run_too_large_for_memory_is_refused_before_allocating(monkeypatch, policy,
                                                                 settings, field) -> None:
    monkeypatch.setenv("DISPATCHLAB_MEMORY_LIMIT", "200M")
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("100x1", policy, load=0.5, jobs=100, workers=1, **settings)
    assert caught.value.field == field and "needs about" in str(caught.value)


@pytest.mark.parametrize(("speeds", "sizes"), [([1e-6], "exp:1e5"), ([1.0], "det:1e-8")])
def test_quantiles_beyond_the_histogram_say_so(speeds, sizes) -> None:
    result = simulate_continuous(speeds, "random", load=0.5, sizes=sizes, jobs=20_000,
                                 workers=1)
    assert math.isfinite(result.mean_response.mean)  # the mean is measured all the same
    for estimate in result.response_quantiles.values():
        assert math.isnan(estimate.mean) and "beyond the histogram's range" in estimate.method


@pytest.mark.parametrize(("settings", "field"), [
    ({"load": 1e-300}, "load"),      # interarrival times of 1e300 swallow a service time
    ({"load": 5e-324}, "load"),      # λ underflows
    ({"rate": 1e-200}, "rate"),
    ({"load": 0.5, "jobs": 10**12}, "jobs"),  # a clock of 5e11 cannot resolve 1e-6
])
def test_a_clock_that_cannot_resolve_a_service_time_is_refused(settings, field) -> None:
    with pytest.raises(ValidationError) as caught:
        simulate_continuous("4x1", "jsq", workers=1, **{"jobs": 20_000, **settings})
    assert caught.value.field == field and "double precision" in str(caught.value)
