"""One contract for every facade function (issue 38): an unknown keyword is a ValidationError
naming it and listing the allowed ones, integers above 2^62 are refused naming the field,
and a float option whose arithmetic cannot hold it is one line, not a traceback.

Found by a hostile user: ``dl.exact(S, "jsq", bogus=1)`` and ``dl.sweep(..., bogus=1)``
raised a plain TypeError, seeds and ``max_states`` of 2^70 were accepted, and
``--precision 1e-300`` ended in an OverflowError traceback.
"""

from __future__ import annotations

import pytest

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError

HUGE = 2**70


@pytest.fixture(scope="module")
def small() -> dl.System:
    return dl.System.build("0.5,0.5", load=0.5, dispatchers=1, arrivals="bernoulli")


@pytest.mark.parametrize("call", [
    lambda s: dl.exact(s, "jsq", bogus=1),
    lambda s: dl.sweep("2x0.5", ["jsq"], load=[0.5], bogus=1),
    lambda s: dl.simulate(s, "jsq", bogus=1),
    lambda s: dl.compare(s, "jsq", "rand", bogus=1),
], ids=["exact", "sweep", "simulate", "compare"])
def test_an_unknown_keyword_is_named_and_the_allowed_ones_listed(small: dl.System,
                                                                 call) -> None:
    with pytest.raises(ValidationError, match=r"^bogus: unknown keyword of \w+; allowed: ") \
            as caught:
        call(small)
    assert caught.value.field == "bogus" and "\n" not in str(caught.value)


def test_the_first_of_several_unknown_keywords_is_named(small: dl.System) -> None:
    with pytest.raises(ValidationError,
                       match="^alpha: .*allowed: system, policy, method, policy_params, "
                             "truncation"):
        dl.exact(small, "jsq", zulu=1, alpha=2)
    with pytest.raises(ValidationError, match="^alpha: unknown keyword of sweep"):
        dl.sweep("2x0.5", ["jsq"], load=[0.5], zeta=False, alpha=1)



@pytest.mark.parametrize("call", ["System.build", "simulate", "exact", "sweep"])
def test_an_unknown_keyword_lists_what_the_signature_takes(small: dl.System, call: str) -> None:
    """One guard (core.errors.refuse_unknown), its list read from the signature: adding
    an option cannot leave the refusal's list behind."""
    import inspect

    function, run = {
        "System.build": (dl.System.build, lambda: dl.System.build("2x0.5", load=0.5, zz=1)),
        "simulate": (dl.simulate, lambda: dl.simulate(small, "jsq", zz=1)),
        "exact": (dl.exact, lambda: dl.exact(small, "jsq", zz=1)),
        "sweep": (dl.sweep, lambda: dl.sweep("2x0.5", ["jsq"], zz=1)),
    }[call]
    takes = [name for name, parameter in inspect.signature(function).parameters.items()
             if parameter.kind is not parameter.VAR_KEYWORD]
    with pytest.raises(ValidationError) as refused:
        run()
    assert str(refused.value) == (f"zz: unknown keyword of {call}; allowed: "
                                  f"{', '.join(takes)}")

@pytest.mark.parametrize("field", ["max_states", "truncation"])
def test_exact_refuses_integers_above_2_62(small: dl.System, field: str) -> None:
    with pytest.raises(ValidationError, match=rf"^{field}: must be an integer ≤ 2\^62"):
        dl.exact(small, "jsq", **{field: HUGE})


@pytest.mark.parametrize(("field", "settings"), [
    ("seed", {"seed": HUGE}), ("seed", {"seed": 2**63}),
    ("precision.max_slots", {"precision": dl.Precision(rel=0.1, max_slots=HUGE)})])
def test_simulate_refuses_integers_above_2_62(small: dl.System, field: str,
                                              settings: dict) -> None:
    with pytest.raises(ValidationError, match=rf"^{field}: must be an integer in .*2\^6"):
        dl.simulate(small, "jsq", slots=1_000, **settings)


def test_a_sweep_refuses_a_seed_above_2_62() -> None:
    with pytest.raises(ValidationError, match=r"^seed: must be ≤ 2\^62"):
        dl.sweep("2x0.5", ["jsq"], load=[0.5], seed=HUGE)


@pytest.mark.parametrize("precision", [1e-300, 1e-17, 5e-324])
def test_a_precision_below_a_doubles_resolution_is_refused(small: dl.System,
                                                           precision: float) -> None:
    with pytest.raises(ValidationError, match=r"^precision.rel: must be ≥ 2.22e-16"):
        dl.simulate(small, "jsq", slots=1_000, precision=dl.Precision(rel=precision))


@pytest.mark.parametrize("argv", [
    ["--precision-rel", "1e-300"], ["--precision-rel", "1e-20"], ["--seed", str(HUGE)],
])
def test_the_cli_refuses_them_with_one_line(argv: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--policy", "jsq", "--servers", "4x0.5", "--load", "0.5",
                 "--slots", "2000", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_an_unreachable_absolute_precision_spends_the_budget_without_overflow(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--policy", "jsq", "--servers", "4x0.5", "--load", "0.5",
                 "--slots", "2000", "--precision-abs", "1e-300", "--precision-max-slots", "8000",
                 "--json", "--workers", "1"]) == 0
    assert '"stop_reason": "slot budget spent' in capsys.readouterr().out


def test_the_seed_bounds_are_the_ones_the_readme_states(small: dl.System) -> None:
    """A run takes 63-bit seeds (a sweep derives its points' from a root seed ≤ 2^62): the
    README had said 2^62 for every seed while `simulate` took 2^63 − 1."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "seed of\none run (`--seed`, `simulate(seed=…)`), at most 2^63 − 1" in readme
    assert dl.simulate(small, "jsq", slots=100, seed=2**63 - 1).seed == 2**63 - 1
    with pytest.raises(ValidationError, match=r"^seed: "):
        dl.simulate(small, "jsq", slots=100, seed=2**63)
    with pytest.raises(ValidationError, match=r"^seed: must be ≤ 2\^62"):
        dl.sweep("2x0.5", ["jsq"], load=[0.5], seed=2**62 + 1)
