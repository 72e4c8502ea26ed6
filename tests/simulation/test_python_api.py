"""The notebook-facing API: readable results, policies as objects (issue 14)."""

from __future__ import annotations

import inspect
import pickle

import pytest

import dispatchlab.policies as P
from dispatchlab import System, ValidationError, make_policy, policy_names, simulate
from dispatchlab.policies.base import Preset, policy_entry


@pytest.fixture(scope="module")
def result():
    system = System.build("3x0.3,3x0.6", load=0.8, dispatchers=2)
    return simulate(system, P.PowerOfD(d=2), slots=20_000, seed=3)


def test_result_repr_is_one_short_line(result) -> None:
    text = repr(result)
    assert "\n" not in text and len(text) < 160
    assert text.startswith("Result(pod(d=2), N=6, M=2, ρ=0.8, E[ΣQ]=")
    assert f"{result.mean_total_queue:.4g}" in text and result.stability in text
    assert "msg/job" in text


def test_result_html_and_frame(result) -> None:
    page = result._repr_html_()
    assert page.startswith("<table>") and "E[ΣQ]" in page and result.stability in page
    frame = result.to_frame()
    assert len(frame) == 1 and frame.loc[0, "mean_total_queue"] == result.mean_total_queue
    assert frame.loc[0, "params.d"] == 2
    assert result.to_records() == [result.to_row()]


def test_system_repr() -> None:
    system = System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    assert repr(system) == ("System(N=100, M=10, ρ=0.9, ε=3, μ=50x0.1,50x0.5, "
                            "poisson/bernoulli, dispatch=batch)")
    assert "<table>" in system._repr_html_() and "λ_Σ" in system._repr_html_()


def test_every_registered_policy_has_a_public_name() -> None:
    public = P.public_policies()
    assert len(public) == len(policy_names())
    for name in policy_names():
        entry = policy_entry(name)
        obj = getattr(P, P.api.public_name_of(name))
        assert obj() == make_policy(name)
        if not isinstance(entry, Preset):
            assert obj is entry


def test_signatures_are_generated_from_params() -> None:
    assert str(inspect.signature(P.PowerOfD)) == "(*, d: int = 2)"
    led = inspect.signature(P.LED).parameters
    assert led["p"].default == 0.1 and led["update"].default == "push"
    assert led["strategy_params"].kind is inspect.Parameter.KEYWORD_ONLY
    free = inspect.signature(P.LJBAPull).parameters
    assert "strategy" not in free and "update" not in free and "p" in free
    assert inspect.signature(P.PeriodicJSQ).parameters["T"].default == 10


def test_objects_match_string_names_and_are_frozen() -> None:
    policy = P.LED(strategy="jba", update="pull", p=0.05)
    assert policy == make_policy("l-jba-pull", p=0.05) == P.LJBAPull(p=0.05)
    assert repr(policy) == "LED(strategy='jba', update='pull', p=0.05)"
    assert repr(P.PowerOfD(d=3)) == "PowerOfD(d=3)" and repr(P.JoinShortestQueue()) == \
        "JoinShortestQueue()"
    with pytest.raises(TypeError, match="frozen"):
        policy.params["p"] = 0.5
    with pytest.raises(AttributeError, match="immutable"):
        policy.p = 0.5
    changed = policy.with_params(p=0.2)
    assert changed.p == 0.2 and policy.p == 0.05 and changed.update == "pull"
    with pytest.raises(ValidationError, match="led.p"):
        policy.with_params(p=2.0)
    with pytest.raises(ValidationError, match="preset fixes"):
        P.LJBAPull(update="push")
    assert pickle.loads(pickle.dumps(policy)) == policy


def test_with_params_keeps_a_custom_strategy() -> None:
    from dispatchlab.policies.led.strategies import l_jsq

    policy = P.LED(strategy=l_jsq, update="pull", p=0.5)
    changed = policy.with_params(p=0.25)
    assert changed.dispatching_strategy.function is l_jsq and changed.p == 0.25


def test_a_policy_is_labelled_by_its_name_and_the_parameters_given() -> None:
    """What dl.sweep shows for a policy object (not its repr, which hides d=2)."""
    import dispatchlab as dl

    assert dl.policies.PowerOfD(d=2).given_name == "pod(d=2)"
    assert dl.policies.JoinShortestQueue().given_name == "jsq"
    assert dl.make_policy("l-jba-pull", p=0.05).given_name == "l-jba-pull(p=0.05)"
    assert dl.make_policy("p2c").given_name == "p2c"
    assert dl.policies.PowerOfD(d=2) == dl.policies.PowerOfD()  # equality ignores it


def test_the_package_docstring_runs_as_written() -> None:
    """Its example had used names it never imported (a NameError as written)."""
    import doctest

    import dispatchlab

    failures, tried = doctest.testmod(dispatchlab, verbose=False, report=False)
    assert tried >= 5 and failures == 0
