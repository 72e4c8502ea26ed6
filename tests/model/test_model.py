"""The model (docs/model.md#arrivals, docs/model.md#service): parsing, validation, the laws' moments
and the samplers."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest

from dispatchlab import System, ValidationError, simulate
from dispatchlab.compiled import rng as samplers
from dispatchlab.model.arrivals import ArrivalProcess, arrival_process, load_trace
from dispatchlab.model.service import ServiceLaw, format_rates, parse_rates

# -- parsing -------------------------------------------------------------------------------------


def test_parse_compact_and_explicit_rates():
    rates = parse_rates("50x0.1,50x0.5")
    assert rates.size == 100 and np.all(rates[:50] == 0.1) and np.all(rates[50:] == 0.5)
    np.testing.assert_array_equal(parse_rates("0.2, 0.5,2x0.9"), [0.2, 0.5, 0.9, 0.9])
    np.testing.assert_array_equal(parse_rates([0.3, 0.7]), [0.3, 0.7])
    assert format_rates(rates) == "50x0.1,50x0.5"
    np.testing.assert_array_equal(parse_rates(format_rates(np.array([0.2, 0.5, 0.5]))),
                                  [0.2, 0.5, 0.5])


@pytest.mark.parametrize("text", ["", "0x0.1", "ax0.1", "0.1,,0.2", "-0.1", "nan", "2x",
                                  "0.1,0", "x0.5"])
def test_bad_rates_are_rejected(text):
    with pytest.raises(ValidationError) as error:
        parse_rates(text)
    assert error.value.field == "servers"


@pytest.mark.parametrize("build,field", [
    (dict(servers=[1.2], load=0.5), "servers"),  # Bernoulli needs μ ≤ 1
    (dict(servers=[1.5], load=0.5, service="deterministic"), "servers"),
    (dict(servers=[3.5], load=0.5, service="binomial:3"), "servers"),
    (dict(servers=[0.5], load=0.5, service="binomial:x"), "service"),
    (dict(servers=[0.5], load=0.5, service="poisson:3"), "service"),
    (dict(servers=[0.5], load=0.5, service="weibull"), "service"),
    (dict(servers=[0.5], load=0.5, arrivals="pareto"), "arrivals"),
    (dict(servers=[0.5], load=0.5, arrivals="binomial:k"), "arrivals"),
    (dict(servers=[3.0], rate=2.5, arrivals="bernoulli", service="poisson"), "arrivals"),
    (dict(servers=[3.0], rate=2.5, arrivals="binomial:2", service="poisson"), "arrivals"),
    (dict(servers=[3.0], rate=1.5, arrivals="deterministic", service="poisson"), "arrivals"),
    (dict(servers=[0.5], load=0.5, dispatchers=0), "dispatchers"),
    (dict(servers=[0.5], load=0.5, dispatchers=2, dispatcher_weights=(1.0,)),
     "dispatcher_weights"),
    (dict(servers=[0.5], load=0.5, dispatch="sometimes"), "dispatch"),
    (dict(servers=[0.5], load=0.5, split="halves"), "split"),
    (dict(servers=[0.5], load=0.5, epsilon=0.1), "load"),  # two of load/epsilon/rate
    (dict(servers=[0.5]), "load"),  # none of them
])
def test_bad_systems_name_the_field(build, field):
    with pytest.raises(ValidationError) as error:
        System.build(**build)
    assert error.value.field == field
    assert "\n" not in str(error.value)


# -- load, ε and overload ------------------------------------------------------------------------


def test_load_epsilon_and_rate_helpers():
    by_load = System.build("2x0.3,0.4", load=0.8)
    assert by_load.mu_sum == pytest.approx(1.0)
    assert by_load.arrival_rate == pytest.approx(0.8)
    assert by_load.load == pytest.approx(0.8) and by_load.epsilon == pytest.approx(0.2)
    by_eps = System.build("2x0.3,0.4", epsilon=0.05)
    assert by_eps.arrival_rate == pytest.approx(0.95) and by_eps.load == pytest.approx(0.95)
    assert System.build("2x0.3,0.4", rate=0.5).load == pytest.approx(0.5)
    assert by_load.with_load(0.5).arrival_rate == pytest.approx(0.5)
    assert by_load.with_rate(0.3).epsilon == pytest.approx(0.7)
    assert by_load.describe()["servers"] == "2x0.3,0.4"
    np.testing.assert_allclose(System.build([0.5], load=0.5, dispatchers=4).weights, 0.25)
    np.testing.assert_allclose(
        System.build([0.5], load=0.5, dispatchers=2, dispatcher_weights=(1, 3)).weights,
        [0.25, 0.75])


@pytest.mark.parametrize("build,field", [
    (dict(load=1.0), "load"), (dict(load=1.3), "load"), (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-0.1), "epsilon"), (dict(epsilon=2.0), "epsilon"), (dict(rate=1.0), "load"),
    (dict(load=-0.1), "load"),
])
def test_overload_refused(build, field):
    with pytest.raises(ValidationError) as error:
        System.build("2x0.3,0.4", **build)
    assert error.value.field == field


def test_overload_allowed_on_request():
    system = System.build("2x0.3,0.4", load=1.2, allow_unstable=True)
    assert system.epsilon == pytest.approx(-0.2)
    result = simulate(system, "wrand", slots=20_000, seed=1)
    assert result.stability in ("unstable", "undetermined")


# -- traces ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("content,match", [
    ("1,2,-1,0", "non-negative"), ("1,2.5,0", "non-integer"), ("", "empty"),
    ("1,a,2", "not numeric"),
])
def test_bad_traces(tmp_path, content, match):
    path = tmp_path / "trace.csv"
    path.write_text(content)
    with pytest.raises(ValidationError, match=match) as error, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns about an empty file before we refuse it
        load_trace(path)
    assert error.value.field == "arrivals"


def test_trace_missing_file(tmp_path):
    with pytest.raises(ValidationError, match="does not exist"):
        arrival_process(f"trace:{tmp_path / 'nope.csv'}", None)
    with pytest.raises(ValidationError, match="trace needs a file"):
        arrival_process("trace:", None)


def test_trace_replayed_exactly(tmp_path):
    path = tmp_path / "trace.npy"
    np.save(path, np.array([1, 0, 2, 1]))
    system = System.build([0.6, 0.9], arrivals=f"trace:{path}")
    assert system.arrival_rate == pytest.approx(1.0)
    assert system.arrivals.variance == pytest.approx(0.5)
    assert system.arrivals.max_arrivals == 2
    result = simulate(system, "jsq", slots=1_000, warmup=0, seed=3)
    assert result.jobs_arrived == 1_000 and result.arrival_rate_measured == 1.0
    with pytest.raises(ValidationError, match="trace fixes its own rate"):
        system.with_load(0.5)
    csv = tmp_path / "heavy.csv"
    csv.write_text("3\n2\n")
    with pytest.raises(ValidationError) as error:
        System.build([0.6, 0.9], arrivals=f"trace:{csv}")
    assert error.value.field == "load"


# -- the laws: declared moments against the compiled samplers ------------------------------------

SAMPLES = 40_000


def assert_moments(draw: Callable[[np.ndarray], int], mean: float, variance: float,
                   label: str) -> None:
    """Sample mean and variance within 5 standard errors of the declared values."""
    state = samplers.make_rng_state(abs(hash(label)) % 2**32)
    x = np.fromiter((draw(state) for _ in range(SAMPLES)), dtype=float, count=SAMPLES)
    assert abs(x.mean() - mean) < 5 * math.sqrt(variance / SAMPLES) + 1e-12, (label, x.mean())
    fourth = np.mean((x - x.mean()) ** 4)
    se_var = math.sqrt(max(fourth - x.var() ** 2, 0.0) / SAMPLES)
    assert abs(x.var() - variance) < 5 * se_var + 1e-12, (label, x.var(), variance)


@pytest.mark.parametrize("lam", [0.3, 4.0, 9.9, 10.5, 50.0, 1000.0])
def test_poisson_sampler(lam):
    """Inversion below λ = 10, PTRS above; the declared variance is λ (arrivals, service)."""
    arrivals = ArrivalProcess("poisson", lam)
    service_var = float(ServiceLaw("poisson").variance(np.array([lam]))[0])
    assert arrivals.variance == service_var == lam
    assert_moments(lambda s: samplers.poisson(s, lam), lam, lam, f"poisson {lam}")


@pytest.mark.parametrize("trials,mean", [(10, 2.0), (10, 9.0), (200, 80.0), (1000, 970.0),
                                         (3, 1.5)])
def test_binomial_sampler(trials, mean):
    """Small K·p by inversion, large K·p by geometric gaps, p > ½ by symmetry."""
    declared = ArrivalProcess("binomial", mean, trials).variance
    assert declared == pytest.approx(float(ServiceLaw("binomial", trials).variance(
        np.array([mean]))[0]))
    assert_moments(lambda s: samplers.binomial(s, trials, mean / trials), mean, declared,
                   f"binomial {trials} {mean}")


@pytest.mark.parametrize("mean", [0.2, 1.0, 3.0])
def test_geometric_sampler(mean):
    declared = float(ServiceLaw("geometric").variance(np.array([mean]))[0])
    assert declared == pytest.approx(mean * (1 + mean))
    assert_moments(lambda s: samplers.geometric0(s, mean), mean, declared, f"geometric {mean}")


def test_bernoulli_and_deterministic_declared_moments():
    assert ArrivalProcess("bernoulli", 0.3).variance == pytest.approx(0.21)
    assert ArrivalProcess("deterministic", 2.0).variance == 0.0
    np.testing.assert_allclose(ServiceLaw("bernoulli").variance(np.array([0.3])), [0.21])
    np.testing.assert_allclose(ServiceLaw("deterministic").variance(np.array([2.0])), [0.0])
    assert_moments(lambda s: samplers.bernoulli(s, 0.3), 0.3, 0.21, "bernoulli")


@pytest.mark.parametrize("arrivals,rate,dispatchers,split", [
    ("poisson", 0.8, 3, "per_job"), ("poisson", 12.0, 1, "per_job"),
    ("binomial:4", 1.5, 2, "batch"), ("bernoulli", 0.6, 2, "per_job"),
    ("deterministic", 1.0, 2, "batch"),
])
def test_engine_arrival_rate(arrivals, rate, dispatchers, split):
    """Every arrival law through the engine, split among dispatchers: the measured rate is
    λ_Σ within 5 standard errors (slots are i.i.d.)."""
    servers = [0.9] * 20
    system = System.build(servers, rate=rate, arrivals=arrivals, dispatchers=dispatchers,
                          split=split)
    slots = 50_000
    result = simulate(system, "jsq", slots=slots, seed=2, warmup=0, delay="off")
    se = math.sqrt(system.arrivals.variance / slots)
    assert abs(result.arrival_rate_measured - rate) <= 5 * se + 1e-12
