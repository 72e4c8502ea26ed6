"""A long exact solve says what it is doing (dispatchlab.solvers.progress): the chain's size
before it is built, each multilevel cycle with its residual and the time left; shown by
``check exact`` on stderr, never in its JSON, and silent in the Python API."""

from __future__ import annotations

import json
import math
import re

import pytest

import dispatchlab
from dispatchlab.cli import main
from dispatchlab.model import System
from dispatchlab.solvers import chain, multilevel
from dispatchlab.solvers.progress import reporting, say, seconds_left


def test_the_time_left_follows_the_rate_of_the_last_steps() -> None:
    # the error falls ×10 a step, one second a step: from 1e-5 to 1e-13, eight steps
    assert seconds_left([1e-2, 1e-3, 1e-4, 1e-5], 1e-13, 1.0) == pytest.approx(8.0)
    assert math.isinf(seconds_left([1e-2], 1e-13, 1.0))  # no rate yet
    assert math.isinf(seconds_left([1e-3, 1e-2], 1e-13, 1.0))  # not converging
    assert seconds_left([1e-12, 1e-14], 1e-13, 1.0) == 0.0  # there already


def test_nothing_is_said_without_a_listener_and_each_listener_hears_its_own() -> None:
    say("nobody listens")  # no error, no output
    heard: list[str] = []
    with reporting(heard.append):
        say("one")
    say("two")
    assert heard == ["one"]


def _handed_system() -> System:
    # JIQ on two servers at ε = 0.05: the plain chain outgrows 20,000 states, the multilevel
    # solver takes over (tests/solvers/test_exact_multilevel.py)
    return System.build([0.5, 0.5], epsilon=0.05, arrivals="bernoulli", service="bernoulli")


def test_the_solvers_say_the_size_and_every_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (chain, multilevel):
        monkeypatch.setattr(module, "LONG_SOLVE_STATES", 0)  # every chain counts as long
    heard: list[str] = []
    with reporting(heard.append):
        result = dispatchlab.exact(_handed_system(), "jbt", policy_params={"r": 2},
                                   max_states=20_000)
    sizes = [line for line in heard if line.endswith("…")]
    cycles = [line for line in heard if "cycle" in line]
    assert sizes and all("states" in line for line in sizes)
    last = int(result.extras["cycles"])
    assert len(cycles) >= last and f"cycle {last}," in cycles[-1]
    assert "target 1e-13" in cycles[-1]



def test_a_growing_chain_says_how_long_its_next_solve_should_take(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From its second K on, the chain's line gives the time it expects from the last
    solve's (states^1.3), and which solve that was."""
    monkeypatch.setattr(chain, "LONG_SOLVE_STATES", 0)
    heard: list[str] = []
    system = System.build([0.2, 0.3, 0.4], load=0.9, arrivals="bernoulli")
    with reporting(heard.append):
        result = dispatchlab.exact(system, "jsq", method="chain")
    sizes = [line for line in heard if line.startswith("K = ")]
    assert len(sizes) >= 2, heard  # K grew at least once
    assert "about" not in sizes[0]  # nothing to go by before the first solve
    for line in sizes[1:]:
        assert re.search(r"states, building and solving the chain, about [\d,]+ s and "
                         r"[\d.]+ [KMG]?B \(K = [\d,]+: [\d,]+ states took \d+\.\d s and "
                         r"[\d.]+ [KMG]?B\) …$", line), line
    assert f"K = {result.truncation:,}:" in sizes[-1]
    assert chain._time_estimate(2_000, 10, 1_000, 1.0, 3 * 2**20) == (
        f", about {2 ** chain.SOLVE_TIME_EXPONENT:,.0f} s and 6 MB (K = 10: 1,000 states took "
        "1.0 s and 3 MB)")


def test_a_chain_that_would_not_fit_in_memory_is_refused_before_it_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From the second K on, the memory the last solve took, scaled by the states, is
    checked against the memory available to a run (core.ram)."""
    from dispatchlab.core.errors import ValidationError
    from dispatchlab.core.ram import LIMIT_VARIABLE

    rises = iter(range(0, 10**12, 10**9))  # the peak rises by 1 GB at each solve
    monkeypatch.setattr(chain, "peak_resident_bytes", lambda: next(rises))
    monkeypatch.setenv(LIMIT_VARIABLE, "2G")
    system = System.build([0.2, 0.3, 0.4], load=0.9, arrivals="bernoulli")
    with pytest.raises(ValidationError, match=r"^max_states: the chain at K = \d+ \([\d,]+ "
                       r"states\) needs about [\d.]+ GB of memory, more than the 2 GB "
                       r"available to a run"):
        dispatchlab.exact(system, "jsq", method="chain")

def test_check_exact_shows_progress_on_stderr_but_not_with_json(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for module in (chain, multilevel):
        monkeypatch.setattr(module, "LONG_SOLVE_STATES", 0)
    args = ["check", "exact", "--policy", "jbt", "--set", "r=2", "--servers", "0.5,0.5",
            "--dispatchers", "1", "--epsilon", "0.05", "--arrivals", "bernoulli",
            "--max-states", "20000"]
    assert main(args) == 0
    shown = capsys.readouterr()
    assert "states, building" in shown.err and "multilevel" in shown.out
    assert main([*args, "--json"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and json.loads(quiet.out)["extras"]["cycles"] > 0
