"""The exact solver (dispatchlab.exact): closed forms, the QBD, refusals, and simulation
against the exact value for every policy that declares its dispatch law."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dispatchlab
from dispatchlab.core.errors import ValidationError
from dispatchlab.model import System
from dispatchlab.policies import make_policy
from dispatchlab.solvers.chain import solve
from dispatchlab.solvers.qbd import logarithmic_reduction, two_server_qbd


def bernoulli_queue_mean(a: float, s: float) -> float:
    """E[Q] of Q' = max(Q + A − S, 0), A ~ Bernoulli(a), S ~ Bernoulli(s): a birth–death
    chain with ratio r = a(1−s)/(s(1−a)), E[Q] = r/(1−r)."""
    r = a * (1 - s) / (s * (1 - a))
    return r / (1 - r)


def test_a_single_bernoulli_queue_matches_its_closed_form() -> None:
    system = System.build([0.6], load=0.5, arrivals="bernoulli", service="bernoulli")
    result = dispatchlab.exact(system, "jsq")
    assert result.mean_total_queue == pytest.approx(bernoulli_queue_mean(0.3, 0.6), rel=1e-8)
    assert result.edge_mass <= 1e-9
    assert sum(result.total_queue_distribution) == pytest.approx(1.0)


def test_a_single_geometric_server_queue_matches_the_power_method() -> None:
    # Q' = max(Q + A − S, 0) with S geometric: a dense chain on 0..200 by power iteration
    system = System.build([0.8], load=0.5, arrivals="bernoulli", service="geometric")
    result = dispatchlab.exact(system, "rand")
    q = 0.8 / 1.8
    size = 200
    p = np.zeros((size, size))
    for x in range(size):
        for a, pa in ((0, 0.6), (1, 0.4)):
            level = x + a
            for s in range(level):
                p[x, min(level - s, size - 1)] += pa * (1 - q) * q**s
            p[x, 0] += pa * q**level
    pi = np.full(size, 1.0 / size)
    for _ in range(3000):
        pi = pi @ p
    assert result.mean_total_queue == pytest.approx(float(pi @ np.arange(size)), rel=1e-7)


def test_random_routing_is_independent_queues() -> None:
    system = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli", service="bernoulli")
    result = dispatchlab.exact(system, "rand")
    lam = system.arrival_rate / 2
    expected = [bernoulli_queue_mean(lam, 0.3), bernoulli_queue_mean(lam, 0.6)]
    assert result.mean_queues == pytest.approx(expected, rel=1e-7)
    weighted = dispatchlab.exact(system, "wrand")
    expected = [bernoulli_queue_mean(system.arrival_rate * m / 0.9, m) for m in (0.3, 0.6)]
    assert weighted.mean_queues == pytest.approx(expected, rel=1e-7)


def test_logarithmic_reduction_on_a_scalar_random_walk() -> None:
    # up p, down q, stay 1 − p − q: G = 1 when p < q, G = q/p when p > q
    for p, q, g in ((0.2, 0.3, 1.0), (0.3, 0.2, 2 / 3)):
        found, _ = logarithmic_reduction(np.array([[p]]), np.array([[1 - p - q]]),
                                         np.array([[q]]))
        assert found[0, 0] == pytest.approx(g, abs=1e-12)


def test_the_qbd_agrees_with_the_truncated_chain() -> None:
    system = System.build([0.3, 0.6], load=0.9, arrivals="bernoulli", service="bernoulli")
    for ties in ("random", "lowest"):
        policy = make_policy("jsq", ties=ties)
        chain = solve(system, policy, tolerance=1e-12)
        qbd = two_server_qbd(system, policy)
        assert qbd.mean_total_queue == pytest.approx(chain.mean_total_queue, rel=1e-9)
        assert qbd.mean_queues == pytest.approx(chain.mean_queues, rel=1e-8)


def test_auto_takes_the_qbd_where_the_chain_is_too_large() -> None:
    """The chain where it fits; the QBD where it does not and the QBD applies; each
    refusal says which method would answer."""
    close = System.build([0.3, 0.6], load=0.999, arrivals="bernoulli")
    auto = dispatchlab.exact(close, "jsq")
    assert "QBD" in auto.method
    assert auto.mean_total_queue == dispatchlab.exact(close, "jsq", method="qbd").mean_total_queue
    with pytest.raises(ValidationError, match="no exact solution this large; method='qbd' "
                       "answers it"):
        dispatchlab.exact(close, "jsq", method="chain")
    loose = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli")
    assert "chain" in dispatchlab.exact(loose, "jsq").method
    # ε far below what the QBD resolves: neither method answers, the chain's refusal stands
    tiny = System.build([0.3, 0.6], epsilon=1e-14, arrivals="bernoulli")
    with pytest.raises(ValidationError, match="^max_states: .*no exact solution this large; "
                       "simulate$"):
        dispatchlab.exact(tiny, "jsq")
    three = System.build("3x0.5", load=0.99, arrivals="binomial:2")  # no QBD for N = 3
    with pytest.raises(ValidationError, match="no exact solution this large; simulate$"):
        dispatchlab.exact(three, "jsq", max_states=10_000)


@pytest.mark.parametrize("options, field", [
    ({"method": "fast"}, "method"), ({"method": 1}, "method"),
    ({"method": "qbd", "truncation": 40}, "truncation"),
    ({"method": "qbd", "tolerance": 1e-9}, "tolerance"),
    ({"method": "qbd", "max_states": 10}, "max_states"),
])
def test_a_method_and_its_options_are_checked(options: dict, field: str) -> None:
    system = System.build([0.3, 0.6], load=0.9, arrivals="bernoulli")
    with pytest.raises(ValidationError, match=f"^{field}: "):
        dispatchlab.exact(system, "jsq", **options)


@pytest.mark.parametrize("args, status, words", [
    (["--method", "qbd"], 0, "QBD"),
    (["--qbd"], 0, "QBD"),
    ([], 0, "QBD"),  # the chain would be too large
    (["--method", "chain"], 2, "method='qbd' answers it"),
    (["--qbd", "--method", "chain"], 2, "qbd: --qbd is --method qbd"),
    (["--method", "qbd", "--truncation", "40"], 2, "truncation: an option of the truncated"),
])
def test_check_exact_takes_a_method(args: list[str], status: int, words: str, capsys) -> None:
    from dispatchlab.cli import main

    code = main(["check", "exact", "--servers", "0.3,0.6", "--dispatchers", "1", "--load",
                 "0.999", "--arrivals", "bernoulli", *args])
    captured = capsys.readouterr()
    assert code == status and words in captured.out + captured.err, captured


def test_the_qbd_reaches_the_heavy_traffic_limit() -> None:
    from dispatchlab.theory.bounds import heavy_traffic_limit

    system = System.build([0.3, 0.6], epsilon=1e-4, arrivals="bernoulli", service="bernoulli")
    result = two_server_qbd(system, make_policy("jsq"))
    assert result.edge_mass < 1e-12 and result.residual < 1e-12
    finer = two_server_qbd(system, make_policy("jsq"), phase_limit=90)
    assert finer.mean_total_queue == pytest.approx(result.mean_total_queue, rel=1e-9)
    assert 1e-4 * result.mean_total_queue == pytest.approx(heavy_traffic_limit(system),
                                                           rel=1e-3)


def test_the_qbd_refuses_a_rule_that_depends_on_the_level() -> None:
    system = System.build([0.3, 0.6], load=0.9, arrivals="bernoulli", service="bernoulli")
    with pytest.raises(ValidationError, match="JSQ-type"):
        two_server_qbd(system, make_policy("jsed"))


def test_refusals_name_the_field() -> None:
    system = System.build("3x0.5", load=0.99, arrivals="binomial:2", service="bernoulli")
    with pytest.raises(ValidationError, match=r"max_states: the state space would hold"):
        dispatchlab.exact(system, "jsq", max_states=10_000)
    small = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli")
    with pytest.raises(ValidationError, match="no exact solution for jsq"):
        dispatchlab.exact(small, "jsq", policy_params={"lag": 1})
    with pytest.raises(ValidationError, match="no exact solution for led"):
        dispatchlab.exact(small, "led")
    with pytest.raises(ValidationError, match="^tolerance"):
        dispatchlab.exact(small, "jsq", tolerance=2.0)
    # random routing splits λ_Σ = 0.63 evenly: 0.315 > μ_1 = 0.3, so no stationary law
    # (it used to grow the truncation for minutes); JSQ is stable on the same system
    overloaded = System.build([0.3, 0.6], load=0.7, arrivals="bernoulli")
    with pytest.raises(ValidationError, match=r"^load: rand is unstable on this system"):
        dispatchlab.exact(overloaded, "rand")
    assert 0 < dispatchlab.exact(overloaded, "jsq").edge_mass < 1e-6


def test_the_package_called_is_the_facade_function() -> None:
    import dispatchlab.solvers.chain  # noqa: F401  (the package now hides the function)

    system = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli")
    assert dispatchlab.exact(system, "jsq").mean_total_queue > 0


TWO = ([0.3, 0.6], "bernoulli")  # μ, arrival law
THREE = ([0.3, 0.5, 0.7], "binomial:2")
#: (policy, params, system, loads): every policy that declares the capability
FAST = [
    ("rand", {}, TWO, (0.4, 0.6)), ("rand", {}, THREE, (0.3, 0.4)),
    ("wrand", {}, TWO, (0.5, 0.75)), ("wrand", {}, THREE, (0.4, 0.6)),
    ("rr", {"weighted": True}, TWO, (0.5, 0.75)), ("rr", {}, THREE, (0.3, 0.45)),
    ("jsq", {}, TWO, (0.5, 0.8)), ("jsq", {}, THREE, (0.5, 0.75)),
    ("jsq", {"ties": "lowest"}, TWO, (0.5, 0.8)), ("jsq", {"ties": "lowest"}, THREE, (0.5, 0.75)),
    ("jsed", {}, TWO, (0.5, 0.8)), ("jsed", {}, THREE, (0.5, 0.75)),
    ("jsed", {"plus_one": False}, TWO, (0.5, 0.8)),
    ("jsed", {"plus_one": False}, THREE, (0.5, 0.75)),
    ("pod", {}, TWO, (0.5, 0.8)), ("pod", {}, THREE, (0.5, 0.75)),
    ("balanced-pod", {}, TWO, (0.5, 0.8)),
    ("balanced-pod", {"by_delay": True}, THREE, (0.5, 0.75)),
    ("jiq", {}, TWO, (0.5, 0.8)), ("jiq", {}, THREE, (0.5, 0.7)),
    ("jbt", {"r": 2}, TWO, (0.5, 0.8)), ("jbt", {"r": 2}, THREE, (0.5, 0.7)),
]


def check_covered(system: System, policy: str, params: dict, slots: int, seed: int) -> None:
    """The simulated 95 % CI (plain time average of ΣQ, four replications) covers the exact
    E[ΣQ]. Each case has its own seed: cases on one seed share their draws, and their
    deviations with them. With some 70 cases a 95 % interval misses about 3.5 times by
    chance, so a miss is run once more, on a new seed with 4× the slots, and must be
    covered then (a false alarm is then about 0.25 % per case, a real bias of one
    half-width still fails)."""
    exact = dispatchlab.exact(system, policy, policy_params=params, tolerance=1e-7)
    assert exact.edge_mass <= 1e-7
    for attempt, length in enumerate((slots, 4 * slots)):
        result = dispatchlab.simulate(system, policy, policy_params=params, slots=length,
                                      seed=seed + 7919 * attempt, replications=4, workers=1,
                                      delay="off", estimator="plain")
        assert exact.truncation_error <= 0.01 * result.half_width
        if abs(result.mean_total_queue - exact.mean_total_queue) <= result.half_width:
            return
    raise AssertionError(
        f"{policy} {params} ρ={system.load:g}: exact {exact.mean_total_queue:.5f}, simulated "
        f"{result.mean_total_queue:.5f} ± {result.half_width:.5f} (twice)")


# the high load is the harder test (longer relaxation, wider tails); the low: in the slow suite
@pytest.mark.parametrize("load_index", [pytest.param(0, marks=pytest.mark.slow), 1],
                         ids=["low", "high"])
@pytest.mark.parametrize(("policy", "params", "setup", "loads"), FAST,
                         ids=[f"{p}{''.join(f'-{k}={v}' for k, v in q.items())}-N{len(s[0])}"
                              for p, q, s, _ in FAST])
def test_simulation_covers_the_exact_value(policy, params, setup, loads, load_index) -> None:
    rates, arrivals = setup
    system = System.build(rates, load=loads[load_index], arrivals=arrivals)
    check_covered(system, policy, params, 400_000,
                  seed=1000 * FAST.index((policy, params, setup, loads)) + load_index)


LAWS = [  # other laws and dispatch modes
    dict(servers=[0.5, 1.2], arrivals="poisson", service="poisson"),
    dict(servers=[0.4, 0.9], arrivals="bernoulli", service="geometric"),
    dict(servers=[1.0, 2.0], arrivals="deterministic", service="binomial:2"),
    dict(servers=[0.3, 0.6], arrivals="binomial:3", service="bernoulli", dispatch="per_job"),
    dict(servers=[0.3, 0.6], arrivals="poisson", service="bernoulli", dispatchers=2),
    dict(servers=[0.3, 0.6], arrivals="poisson", service="bernoulli", dispatchers=2,
         split="batch", dispatch="per_job"),
]


@pytest.mark.parametrize("setup", LAWS, ids=[f"law{i}" for i in range(len(LAWS))])
@pytest.mark.parametrize("policy", ["jsq", "pod", "jsed"])
def test_simulation_covers_the_exact_value_under_other_laws(setup, policy) -> None:
    load = 2 / 3 if setup["arrivals"] == "deterministic" else 0.7
    system = System.build(**setup, load=load)
    seed = 7 + 100 * ["jsq", "pod", "jsed"].index(policy) + 10 * len(str(setup))
    check_covered(system, policy, {}, 400_000, seed=seed)


@pytest.mark.parametrize("ties", ["random", "lowest", "shared"])
def test_jsq_tie_rules_with_two_dispatchers(ties) -> None:
    system = System.build([0.3, 0.5, 0.7], load=0.6, arrivals="poisson", dispatchers=2)
    check_covered(system, "jsq", {"ties": ties}, 400_000, seed=3 + len(ties))


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "params"), [("jsq", {}), ("jsed", {}), ("pod", {}),
                                                ("balanced-pod", {}), ("jiq", {})])
def test_simulation_covers_the_exact_value_near_one(policy, params) -> None:
    system = System.build([0.3, 0.6], load=0.95, arrivals="bernoulli")
    check_covered(system, policy, params, 2_000_000, seed=17)
    system = System.build([0.3, 0.5, 0.7], load=0.9, arrivals="binomial:2")
    check_covered(system, policy, params, 2_000_000, seed=19)


@pytest.mark.parametrize("epsilon", [1e-2, 1e-3, 1e-4, 1e-5])
def test_the_qbd_reports_an_error_that_bounds_its_own(epsilon: float) -> None:
    """Within its resolution, the QBD's answer lies above the pooled queue's exact mean
    E[q] (ΣQ ≥ q on every path) by about the ½ of two balanced servers, within its error."""
    from dispatchlab.theory.pooled_queue import pooled_queue_mean

    system = System.build("0.5,0.5", epsilon=epsilon, arrivals="bernoulli")
    result = two_server_qbd(system, make_policy("jsq"))
    assert 0 < result.error <= 1e-6 * result.mean_total_queue
    pooled = pooled_queue_mean(system).value
    assert result.mean_total_queue >= pooled - result.error
    assert abs(result.mean_total_queue - pooled - 0.5) <= 0.01 + result.error


@pytest.mark.parametrize("epsilon", [1e-6, 1e-8, 1e-10, 1e-12, 1e-15])
def test_the_qbd_keeps_its_digits_as_epsilon_goes_to_zero(epsilon: float) -> None:
    """On μ = (0.5, 0.5), E[ΣQ] = 1/(4ε) + 1/2 + O(ε) as ε → 0 (the O(ε) term is 4·10⁻¹² of
    it at ε = 10⁻⁶, less below).
    Through (I − R)⁻² the answer read ε·E[ΣQ] = 0.2277 at 10⁻⁸, 0.1061 at 10⁻⁹ and 8.6·10⁻⁵
    at 10⁻¹², and the solve broke down at 10⁻¹⁴; the drift identities keep every digit."""
    system = System.build("0.5,0.5", epsilon=epsilon, arrivals="bernoulli")
    result = two_server_qbd(system, make_policy("jsq"))
    eps = result.epsilon
    assert eps == pytest.approx(epsilon, rel=1e-6)
    assert result.mean_total_queue == pytest.approx(0.25 / eps + 0.5, rel=1e-11)
    assert result.error <= 1e-12 * result.mean_total_queue


def test_the_qbd_follows_the_heavy_traffic_expansion_on_unequal_servers() -> None:
    """μ = (0.3, 0.6): ε·E[ΣQ] = ζ/2 + c·ε + …, c from ε = 10⁻⁶; at 10⁻⁹ and 10⁻¹⁰ the
    answer lies within its reported error of that line."""
    from dispatchlab.theory.bounds import heavy_traffic_limit

    def scaled(epsilon: float) -> tuple[float, float]:
        system = System.build("0.3,0.6", epsilon=epsilon, arrivals="bernoulli")
        result = two_server_qbd(system, make_policy("jsq"))
        return result.epsilon * result.mean_total_queue, result.epsilon * result.error

    limit = heavy_traffic_limit(System.build("0.3,0.6", load=0.9, arrivals="bernoulli"))
    assert limit == pytest.approx(0.27)
    slope = (scaled(1e-6)[0] - limit) / 1e-6
    for epsilon in (1e-9, 1e-10):
        value, error = scaled(epsilon)
        assert abs(value - (limit + slope * epsilon)) <= error + 1e-14


@pytest.mark.parametrize(("servers", "epsilon"), [("0.3,0.6", 1e-14), ("0.1,0.7", 1e-12)])
def test_the_qbd_refuses_past_its_resolution(servers: str, epsilon: float, capsys) -> None:
    """Where the rounding of the transition probabilities moves E[ΣQ] by more than the
    tolerance, one line naming ε, exit 2 (a LinAlgError traceback at 10⁻¹⁴ before)."""
    from dispatchlab.cli import main

    system = System.build(servers, epsilon=epsilon, arrivals="bernoulli")
    with pytest.raises(ValidationError, match=r"^epsilon: the QBD does not resolve"):
        two_server_qbd(system, make_policy("jsq"))
    status = main(["check", "exact", "--servers", servers, "--dispatchers", "1",
                   "--arrivals", "bernoulli", "--qbd", "--epsilon", str(epsilon)])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


def test_the_qbd_tolerance_is_checked() -> None:
    system = System.build("0.5,0.5", epsilon=1e-3, arrivals="bernoulli")
    for bad in (0.0, 1e-300, 1.0, float("nan"), "tight"):
        with pytest.raises(ValidationError, match="^tolerance"):
            two_server_qbd(system, make_policy("jsq"), tolerance=bad)
    assert two_server_qbd(system, make_policy("jsq"), tolerance=0.5).error < 1e-6


def test_the_chain_refuses_what_it_cannot_resolve(capsys) -> None:
    """A fixed K with 0.62 of the mass at its edge had printed E[ΣQ] 0.62 (exit 0); a
    tolerance of 10⁻³⁰⁰ was accepted; --max-states 3 solved 1,275 states once the
    multilevel solver took over. Each is now one line naming its field, exit 2."""
    from dispatchlab.cli import main

    base = ["check", "exact", "--servers", "0.5,0.5", "--dispatchers", "1", "--arrivals",
            "bernoulli"]
    cases = [(["--load", "0.9", "--truncation", "1"], "truncation: K = 1 leaves"),
             (["--load", "0.9", "--tolerance", "1e-300"], "tolerance: must be in [1e-14"),
             (["--policy", "jiq", "--epsilon", "0.01", "--max-states", "3"],
              "max_states: the threshold r = 1 needs")]
    for extra, message in cases:
        assert main(base + extra) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1
        assert message in captured.err
    small = System.build([0.5, 0.5], load=0.9, arrivals="bernoulli")
    assert dispatchlab.exact(small, "jsq", truncation=200).edge_mass <= 1e-9


@pytest.mark.parametrize("dispatchers", [20, 100, 1000])
def test_many_dispatchers_are_refused_before_any_work(dispatchers: int, capsys) -> None:
    """`check exact --servers 2x0.5 --dispatchers 1000` died of a RecursionError, 100 printed
    nothing for 300 s and 20 held 1.2 GB at 60 s: the splits of a slot's arrivals among the
    M dispatchers are now counted before any is made."""
    import time

    from dispatchlab.cli import main

    started = time.perf_counter()
    assert main(["check", "exact", "--servers", "2x0.5", "--dispatchers", str(dispatchers)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: dispatchers: ")
    assert f"{dispatchers:,} dispatcher(s) sharing up to" in captured.err
    assert "no exact solution this large; simulate" in captured.err
    assert time.perf_counter() - started < 30


def test_a_thousand_dispatchers_of_one_job_a_slot_are_one_dispatcher() -> None:
    """With Bernoulli arrivals a slot brings at most one job, so M dispatchers running JSQ on
    the true queues act as one: the same law for M = 1,000 as for M = 1 (the splits are
    walked without recursion, deeper than Python's limit)."""
    one = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli")
    many = System.build([0.3, 0.6], load=0.5, arrivals="bernoulli", dispatchers=1000)
    exact_one, exact_many = dispatchlab.exact(one, "jsq"), dispatchlab.exact(many, "jsq")
    assert exact_many.mean_total_queue == pytest.approx(exact_one.mean_total_queue, rel=1e-9)


def test_the_splits_of_one_job_among_more_dispatchers_than_python_recurses() -> None:
    """Once no job is left, the dispatchers after take none at once (each split of one job
    among 3,000 dispatchers was walked to its end: cubic in M, 96 s)."""
    from dispatchlab.solvers.laws import count_splits, multinomial_splits

    weights = np.full(3000, 1 / 3000)
    splits = multinomial_splits(1, weights)
    assert len(splits) == count_splits(1, 3000) == 3000
    assert math.fsum(p for p, _ in splits) == pytest.approx(1.0, rel=1e-12)


def test_the_splits_of_a_slot_follow_the_multinomial_law() -> None:
    from math import factorial

    from dispatchlab.solvers.laws import count_splits, multinomial_splits

    weights = np.array([0.2, 0.3, 0.5])
    splits = multinomial_splits(4, weights)
    assert len(splits) == count_splits(4, 3) == 15
    for probability, parts in splits:
        law = factorial(4) / np.prod([factorial(k) for k in parts]) * np.prod(weights ** parts)
        assert probability == pytest.approx(law, rel=1e-12)
    assert [parts for _, parts in splits] == sorted(parts for _, parts in splits)
