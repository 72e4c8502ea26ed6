"""A user's own continuous-time rule (continuous.user_rules): written as a plain function,
registered by name, compiled once, and run like a built-in rule. Known answers: round
robin and JSQ(2) with replacement written as user rules make the built-in rules' choices
job for job (the same numbers to the last bit); a rule that returns no server, does not
compile or takes the wrong arguments is one line naming it."""

from __future__ import annotations

import pytest

from cli_contract import run_clean
from dispatchlab.compiled.rng import randint
from dispatchlab.continuous import simulate_continuous
from dispatchlab.continuous.user_rules import (
    RULES,
    register_continuous_rule,
    workers_can_import,
)
from dispatchlab.core.errors import ValidationError


def round_robin(m, size, counts, speeds, params, state, rng):
    """Each dispatcher's own cursor, in its state row (the built-in rr)."""
    n = int(state[0])
    state[0] = n + 1 if n + 1 < counts.size else 0
    return n


def two_choices(m, size, counts, speeds, params, state, rng):
    """JSQ(2) with replacement, ties by reservoir: the built-in jsq-d's draws."""
    best, least, ties = -1, 0, 0
    for _ in range(2):
        n = randint(rng, counts.size)
        q = counts[n]
        if best < 0 or q < least:
            best, least, ties = n, q, 1
        elif q == least:
            ties += 1
            if randint(rng, ties) == 0:
                best = n
    return best


def speed_weighted(m, size, counts, speeds, params, state, rng):
    """The fewer jobs per unit of speed**w between two random servers (w: params[0])."""
    a, b = randint(rng, counts.size), randint(rng, counts.size)
    return a if (counts[a] + 1) / speeds[a] ** params[0] <= (counts[b] + 1) / speeds[b] ** \
        params[0] else b


def out_of_range(m, size, counts, speeds, params, state, rng):
    return counts.size if size > 2.0 else 0


def not_compilable(m, size, counts, speeds, params, state, rng):
    return {"a": 1}["a"] + "text"


register_continuous_rule("user-rr", round_robin, "round robin in user code", state=1)
register_continuous_rule("user-two", two_choices, "JSQ(2) with replacement in user code")
register_continuous_rule("speed-weighted", speed_weighted, "two choices by jobs/speed^w",
                         params={"w": 1.0})
register_continuous_rule("out-of-range", out_of_range, "returns N for a large job")
register_continuous_rule("not-compilable", not_compilable)


@pytest.mark.parametrize("user, builtin, params", [
    ("user-rr", "rr", {}), ("user-two", "jsq-d", {"replace": True})])
def test_a_user_rule_makes_the_built_in_rule_s_choices(user, builtin, params) -> None:
    # (ρ = 0.5: round robin gives the slow servers a sixth of λ each, ρ_n = 0.83)
    settings = dict(load=0.5, jobs=20_000, seed=5, dispatchers=3, sizes="hyperexp:1,4",
                    discipline="ps", workers=1)
    ours = simulate_continuous("4x1,2x3", user, **settings)
    theirs = simulate_continuous("4x1,2x3", builtin, policy_params=params, **settings)
    assert ours.policy == user and ours.stability == theirs.stability == "stable"
    assert ours.mean_response == theirs.mean_response
    assert ours.response_quantiles == theirs.response_quantiles


def test_parameters_reach_the_rule_and_are_checked() -> None:
    settings = dict(load=0.7, jobs=20_000, seed=2, workers=1)
    one = simulate_continuous("4x1,4x4", "speed-weighted", **settings)
    zero = simulate_continuous("4x1,4x4", "speed-weighted", policy_params={"w": 0.0},
                               **settings)
    assert one.policy_params == {"w": 1.0} and zero.policy_params == {"w": 0.0}
    assert one.mean_response.mean != zero.mean_response.mean
    with pytest.raises(ValidationError, match="policy_params.v: speed-weighted takes w"):
        simulate_continuous("4x1", "speed-weighted", policy_params={"v": 1}, **settings)
    with pytest.raises(ValidationError, match="policy_params.w: expected a finite number"):
        simulate_continuous("4x1", "speed-weighted", policy_params={"w": "big"}, **settings)


def test_replications_on_worker_processes_are_the_same_runs() -> None:
    settings = dict(load=0.8, jobs=5_000, seed=9, replications=2)
    assert (simulate_continuous("3x1", "user-two", workers=2, **settings).mean_response
            == simulate_continuous("3x1", "user-two", workers=1, **settings).mean_response)


def test_a_rule_that_returns_no_server_stops_with_one_line() -> None:
    with pytest.raises(ValidationError, match=r"policy: the rule 'out-of-range' returned "
                       r"server 4 for arrival [\d,]+ \(at dispatcher 0\); a rule returns one "
                       r"of 0 … N − 1 = 3"):
        simulate_continuous("4x1", "out-of-range", load=0.5, jobs=5_000, workers=1)


def test_a_rule_numba_cannot_compile_is_one_line_naming_it() -> None:
    with pytest.raises(ValidationError, match="the rule 'not_compilable' does not compile"):
        simulate_continuous("4x1", "not-compilable", load=0.5, jobs=1_000, workers=1)


@pytest.mark.parametrize("call, words", [
    (lambda: register_continuous_rule("jsq", round_robin), "built-in"),
    (lambda: register_continuous_rule("p2c", round_robin), "built-in"),
    (lambda: register_continuous_rule("a,b", round_robin), "commas"),
    (lambda: register_continuous_rule("ok", lambda m, size: 0), "takes (m, size"),
    (lambda: register_continuous_rule("ok", print), "plain Python function"),
    (lambda: register_continuous_rule("ok", round_robin, state=-1), "state"),
    (lambda: register_continuous_rule("ok", round_robin, params={"w": float("nan")}),
     "params.w"),
    (lambda: register_continuous_rule("ok", round_robin, params={"not a name": 1}),
     "identifiers"),
])
def test_a_bad_registration_is_refused(call, words) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(")):
        call()
    assert "ok" not in RULES


def test_the_command_line_lists_and_runs_an_imported_rule(tmp_path, capsys, monkeypatch
                                                          ) -> None:
    (tmp_path / "house_rules.py").write_text(
        "from dispatchlab.continuous.user_rules import register_continuous_rule\n"
        "def first_idle(m, size, counts, speeds, params, state, rng):\n"
        "    for n in range(counts.size):\n"
        "        if counts[n] == 0:\n"
        "            return n\n"
        "    return m % counts.size\n"
        "register_continuous_rule('first-idle', first_idle, 'the lowest-numbered idle "
        "server')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_clean(capsys, ["policies", "--time", "continuous", "--import",
                                      "house_rules"])
    assert code == 0 and "first-idle" in out and "lowest-numbered idle" in out
    code, out, err = run_clean(capsys, ["run", "--time", "continuous", "--import", "house_rules",
                                        "--policy", "first-idle", "--servers", "4x1",
                                        "--load", "0.5", "--jobs", "5000", "--json"])
    assert code == 0, err
    assert '"policy": "first-idle"' in out
    # a grid of it: its workers import the module too
    (tmp_path / "grid.toml").write_text(
        'name = "house"\ntime = "continuous"\nloads = [0.5]\njobs = 3000\nreplications = 2\n'
        '[[systems]]\nservers = "4x1"\n[[policies]]\nname = "first-idle"\n', encoding="utf-8")
    argv = ["sweep", "grid.toml", "--store", "s.sqlite", "--no-progress", "--workers", "2",
            "--out", "out"]
    code, _, err = run_clean(capsys, [*argv, "--import", "house_rules"])
    assert code == 0 and "2 computed" in err, err
    with pytest.raises(ValidationError, match="--import the module that registers it"):
        simulate_continuous("4x1", "first-idle-2", load=0.5)


def test_the_example_rule_beats_p2c_on_two_speeds() -> None:
    """examples/custom_continuous_rule.py: the shortest expected delay of two choices
    against P2C on 8 × 1 + 8 × 2 at ρ = 0.9, paired: the whole interval below 0 (with a
    quarter of the example's jobs)."""
    from conftest import load_example

    module = load_example("custom_continuous_rule")
    # (examples/ is not on the path of a worker process: the replications run here)
    assert not workers_can_import(module.shortest_expected_delay_of_two)
    assert workers_can_import(two_choices)
    out = module.main(jobs=50_000)
    assert out["difference_high"] < 0 and out["sed_2"] < out["p2c"]
