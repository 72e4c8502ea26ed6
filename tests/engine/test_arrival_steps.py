"""The loop's arrival step (docs/model.md#arrivals): a single dispatcher's arrivals are
drawn by its law's own step, which compiles that law's draw alone, and give the draws of
the general step (every law, the multinomial split) bit for bit; a trace's is
test_model's test_trace_replayed_exactly."""

from __future__ import annotations

import pytest

import dispatchlab as dl
from dispatchlab.engine import arrivals
from dispatchlab.model.arrivals import ARRIVAL_CODES


@pytest.mark.parametrize("law", ["poisson", "bernoulli", "binomial:3", "deterministic"])
def test_one_dispatcher_s_step_draws_as_the_general_one(law: str, monkeypatch) -> None:
    system = dl.System.build("2x0.4,2x0.6", load=0.5, arrivals=law)  # (λ = 1 a slot)
    step = arrivals.arrival_step(system.arrivals.code, 1, False)
    assert step is arrivals.TO_ONE[system.arrivals.code] and step is not arrivals.other_arrivals
    own = dl.simulate(system, "jsq", slots=3_000, seed=11)
    monkeypatch.setitem(arrivals.TO_ONE, system.arrivals.code, arrivals.other_arrivals)
    general = dl.simulate(system, "jsq", slots=3_000, seed=11)
    assert own.mean_total_queue == general.mean_total_queue
    assert own.mean_delay == general.mean_delay
    assert own.jobs_arrived == general.jobs_arrived > 0


def test_every_law_has_a_step_and_several_dispatchers_share_the_general_one() -> None:
    assert set(arrivals.TO_ONE) == set(ARRIVAL_CODES.values())
    for code in ARRIVAL_CODES.values():
        assert arrivals.arrival_step(code, 3, True) is arrivals.other_arrivals
    poisson = ARRIVAL_CODES["poisson"]
    assert arrivals.arrival_step(poisson, 3, False) is arrivals.split_poisson_only
