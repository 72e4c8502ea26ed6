"""The conformance suite: every registered policy, on small random systems, must keep the
model's invariants (docs/model.md#queue-dynamics, docs/model.md#lower-bound). The checks live in
:mod:`dispatchlab.testing.conformance` (``check_policy``), which users run on their own policies;
policies are discovered at collection time, so a policy registered by a new module is tested here
without touching this file."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dispatchlab import System, ValidationError, policy_names, simulate
from dispatchlab.compiled.rng import randint
from dispatchlab.engine.interface import choose_function
from dispatchlab.policies.base import Kernel, Param, Policy, policy_entry
from dispatchlab.policies.led import LEDPolicy
from dispatchlab.testing.conformance import CHECKS, ConformanceError, check_policy, run_check

POLICIES = policy_names()
SYSTEM_CHECKS = CHECKS[:5]  # conservation … seed-sensitivity share their runs


def _is_led(name: str) -> bool:
    entry = policy_entry(name)
    return getattr(entry, "base", entry) is LEDPolicy


@pytest.mark.parametrize("name", POLICIES)
def test_invariants(name: str) -> None:
    report = check_policy(name, checks=SYSTEM_CHECKS, strict=False)
    assert report.passed, report


@pytest.mark.parametrize("name", POLICIES)
def test_little_law_on_a_stable_run(name: str) -> None:
    result = run_check(name, "little")
    assert result.status == "passed", result.detail


@pytest.mark.parametrize("name", POLICIES)
def test_parameter_validation(name: str) -> None:
    result = run_check(name, "parameter-validation")
    assert result.status == "passed", result.detail
    system = System.build([0.5, 0.5], load=0.5)
    with pytest.raises(ValidationError, match="no_such_parameter"):
        simulate(system, name, slots=10, policy_params={"no_such_parameter": 1})


@pytest.mark.parametrize("name", POLICIES)
def test_non_default_parameters(name: str) -> None:
    result = run_check(name, "parameters")
    assert result.passed, result.detail


@pytest.mark.parametrize("name", [n for n in POLICIES if _is_led(n)])
def test_led_updates_write_q_of_the_next_slot(name: str) -> None:
    """p̂ = 1, d = N: every estimate is Q(t+1) after every slot (error exactly 0), for
    push (any M) and pull (M = 1). Fails if push writes Q + 1 or pull writes Q(t)."""
    result = run_check(name, "led-estimates")
    assert result.status == "passed", result.detail


# -- the kit itself can fail ------------------------------------------------------------------


@choose_function
def _cycle_choose(m, jobs, slot, memory, ctx):
    return memory.int_params[randint(ctx.rng, memory.int_params.size)]


class _UnseededPolicy(Policy):
    """Not registered: its kernel draws a server subset from the global NumPy state."""

    name = "unseeded"
    summary = "a deliberately non-deterministic policy"
    parameters = (Param("k", int, 1, "servers in the subset", low=1, high=3),)

    def kernel(self, system: System) -> Kernel:
        subset = np.random.choice(system.n_servers, min(2, system.n_servers), replace=False)
        return Kernel(_cycle_choose, int_params=subset.astype(np.int64))


class _LaxPolicy(_UnseededPolicy):
    """Not registered: swallows unknown parameters instead of refusing them."""

    name = "lax"

    def __init__(self, **params: object) -> None:
        super().__init__(**{k: v for k, v in params.items() if k == "k"})


def test_the_kit_catches_a_non_deterministic_policy() -> None:
    report = check_policy(_UnseededPolicy(), checks=("determinism",), strict=False,
                          examples=8)
    assert report["determinism"].status == "failed"
    with pytest.raises(ConformanceError, match="determinism"):
        check_policy(_UnseededPolicy(), checks=("determinism",), examples=8)


def test_the_kit_catches_a_policy_that_accepts_unknown_parameters() -> None:
    result = run_check(_LaxPolicy, "parameter-validation")
    assert result.status == "failed" and "unknown parameter" in result.detail


def test_the_kit_runs_without_hypothesis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis → ImportError
    result = run_check("pod", "parameters")
    assert result.status == "passed" and "hypothesis not installed" in result.detail


def test_unknown_check_is_refused() -> None:
    with pytest.raises(ValidationError, match="checks"):
        check_policy("jsq", checks=("conservation", "bogus"))


def test_a_vanishing_update_probability_stays_in_bounds() -> None:
    """p̂ = 1e-300 made the geometric gap between update trials overflow int64 (negative
    positions: the push/pull hooks wrote outside the estimates, a heap corruption found by
    the ``parameters`` check); the gap is now capped, and such a run is an ordinary one."""
    import math

    from dispatchlab.compiled.rng import make_rng_state
    from dispatchlab.policies.led.updates import MAX_GAP, failures_before_success

    rng = make_rng_state(1)
    for p in (1e-300, 5e-324, 1e-19):
        gaps = [failures_before_success(rng, p, math.log1p(-p)) for _ in range(100)]
        assert all(0 <= g <= MAX_GAP for g in gaps), (p, min(gaps))
    system = System.build([0.9, 0.4, 0.6], load=0.4, dispatchers=2)
    for update in ("push", "pull"):
        result = simulate(system, LEDPolicy(p=1e-300, update=update), slots=2_000, seed=3)
        assert result.messages_per_arrival == 0 and result.jobs_in_system >= 0
