"""Registration is idempotent: the same class or function registered again (a re-run
notebook cell, a module imported twice) replaces its entry; a different one under a
taken name is still an error. Examples load as proper modules, so numba's disk cache
stays loadable across test runs (the second `pytest` run used to fail)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dispatchlab
from conftest import load_example
from dispatchlab.core.errors import ValidationError
from dispatchlab.policies import make_policy
from dispatchlab.policies.base import _REGISTRY, Policy, cache_allowed, register, register_preset
from dispatchlab.policies.classic import RandomRouting
from dispatchlab.policies.framework.decisions import (
    _DECISIONS,
    decision_function,
    register_decision,
)

ROOT = Path(__file__).resolve().parents[2]


def define_policy(summary: str) -> type[Policy]:
    """A class defined by the same code each call, as a re-run notebook cell does."""
    class CellPolicy(RandomRouting):
        name = "test-cell-policy"

    CellPolicy.summary = summary
    return CellPolicy


def define_other_policy() -> type[Policy]:
    class OtherPolicy(RandomRouting):
        name = "test-cell-policy"

    return OtherPolicy


@pytest.fixture
def clean_registry():
    before_policies, before_decisions = dict(_REGISTRY), dict(_DECISIONS)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(before_policies)
    _DECISIONS.clear()
    _DECISIONS.update(before_decisions)


def test_reregistering_a_redefined_class_replaces_it(clean_registry):
    first = register(define_policy("first"))
    second = register(define_policy("second"))  # a new class object, same definition
    assert first is not second
    assert _REGISTRY["test-cell-policy"] is second
    assert make_policy("test-cell-policy").summary == "second"
    register(second)  # the very same class: a no-op
    assert _REGISTRY["test-cell-policy"] is second


def test_a_different_class_under_a_taken_name_is_an_error(clean_registry):
    register(define_policy("first"))
    with pytest.raises(ValidationError, match="already registered"):
        register(define_other_policy())

    class Imposter(RandomRouting):
        name = "jsq"

    with pytest.raises(ValidationError, match="already registered"):
        register(Imposter)


def test_presets_replace_only_their_own_definition(clean_registry):
    cls = register(define_policy("x"))
    register_preset("test-cell-preset", cls, "a preset")
    register_preset("test-cell-preset", define_policy("y"), "again, from a re-run cell")
    with pytest.raises(ValidationError, match="already registered"):
        register_preset("test-cell-preset", define_other_policy(), "another base")
    with pytest.raises(ValidationError, match="already registered"):
        register_preset("jsq", cls, "a preset may not take a policy's name")


@pytest.mark.parametrize("name", ["MyRule", " my-rule", "my-rule ", "JSQ2", ""])
def test_a_name_policy_entry_cannot_find_is_refused(clean_registry, name):
    # look-ups are by name.strip().lower(): a name that is not already that would register
    # and never be found, so register and register_preset refuse it
    class Named(RandomRouting):
        pass

    Named.name = name
    with pytest.raises(ValidationError, match="policy"):
        register(Named)
    with pytest.raises(ValidationError, match="policy"):
        register_preset(name, RandomRouting, "a preset")
    assert name not in _REGISTRY


def test_a_normal_name_is_found_however_it_is_spelt(clean_registry):
    class Named(RandomRouting):
        name = "test-myrule"

    register(Named)
    register_preset("test-myrule-preset", Named, "a preset")
    assert type(make_policy("Test-MyRule")) is Named
    assert type(make_policy("  TEST-MYRULE-PRESET ")) is Named


def _decision(eta, mu, ip, fp, rng, dest, scratch):
    for i in range(dest.size):
        dest[i] = eta[eta.size - 1]


def _other_decision(eta, mu, ip, fp, rng, dest, scratch):
    for i in range(dest.size):
        dest[i] = eta[0]


def test_decisions_are_idempotent_too(clean_registry):
    register_decision("test-last", decision_function(_decision), "last")
    register_decision("test-last", decision_function(_decision), "recompiled, same code")
    assert _DECISIONS["test-last"].summary == "recompiled, same code"
    with pytest.raises(ValidationError, match="already registered"):
        register_decision("test-last", decision_function(_other_decision), "other")


def test_examples_load_twice_as_modules():
    first = load_example("custom_decision_function")
    second = load_example("custom_decision_function")  # re-running registers again
    assert first.two_shortest is not second.two_shortest
    assert sys.modules["custom_decision_function"] is second
    assert cache_allowed(second.two_shortest.py_func)


def test_numba_caches_only_reimportable_code():
    def local(eta, mu, ip, fp, rng, dest, scratch):  # noqa: ARG001
        pass

    local.__module__ = "__main__"
    assert not cache_allowed(local)
    local.__module__ = "not_a_loaded_module"
    assert not cache_allowed(local)
    assert cache_allowed(_decision)


@pytest.mark.parametrize("script", ["custom_decision_function.py", pytest.param(
    "custom_led_strategy.py", marks=pytest.mark.slow)])
def test_examples_run_as_scripts_after_the_tests_loaded_them(script):
    load_example(script.removesuffix(".py"))  # writes numba's cache as the tests do
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)],
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONWARNINGS": "ignore", "PATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_notebook_cell_can_run_twice():
    cell = textwrap.dedent('''
        from dispatchlab.policies.classic import RandomRouting
        from dispatchlab.policies.base import register
        from dispatchlab.policies import make_policy

        @register
        class Mine(RandomRouting):
            name = "nb-mine"
            summary = "from a cell"
    ''')
    program = f"exec({cell!r}); exec({cell!r}); print('ok')"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("alias, same", [
    ("p2c", ("pod", {"d": 2})),
    ("least-request", ("pod", {"d": 2})),
    ("wrr", ("rr", {"weighted": True})),
])
def test_the_names_load_balancers_use_run_as_the_policies_they_map_to(alias, same) -> None:
    system = dispatchlab.System.build("3x0.3,2x0.6", load=0.8, dispatchers=2)
    ran = dispatchlab.simulate(system, alias, slots=3_000, seed=5)
    expected = dispatchlab.simulate(system, same[0], policy_params=same[1], slots=3_000,
                                    seed=5)
    assert ran.mean_total_queue == expected.mean_total_queue
    assert alias in dispatchlab.policy_names()


def test_least_request_takes_its_number_of_choices_and_p2c_keeps_two() -> None:
    assert make_policy("least-request", d=3).d == 3
    with pytest.raises(ValidationError, match="fixes d = 2"):
        make_policy("p2c", d=3)
