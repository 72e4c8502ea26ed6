"""Per-server statistics and the decimated trajectory (simulate(per_server=PerServer(…),
trajectory=Trajectory(every=k, …));
docs/statistics.md#per-server): invariants, the Geo/Geo/1 closed form,
option off = nothing changes, hostile inputs, the frames, the plots and the CLI."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError
from dispatchlab.simulation.measures import MAX_OBSERVED_ENTRIES, PerServer, Trajectory
from dispatchlab.simulation.result import Result
from dispatchlab.specs.run import RunSpec
from dispatchlab.theory.closed_forms import geo_geo_1_distribution, geo_geo_1_ratio

HET = dl.System.build("3x0.3,2x0.7", load=0.85, dispatchers=2)
NEW_FIELDS = {f.name for f in fields(Result)
              if f.name.startswith(("server_", "trajectory_"))}
TIMING = {"seconds", "slots_per_second"}


def observed(system: dl.System = HET, policy: str = "jsq", **settings) -> Result:
    options = {"slots": 40_000, "seed": 5, "per_server": True,
               "trajectory": Trajectory(400, range(system.n_servers)), **settings}
    return dl.simulate(system, policy, **options)


def same(a: object, b: object) -> bool:
    return json.dumps(a) == json.dumps(b)  # NaN equals NaN, floats digit for digit


# -- off: nothing changes ------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["jsq", "pod", "rand"])
def test_observing_changes_no_number(policy: str) -> None:
    """Every number of the run without observation is the same with it (no draw moves)."""
    plain = dl.simulate(HET, policy, slots=30_000, seed=9)
    seen = observed(policy=policy, slots=30_000, seed=9)
    for name in {f.name for f in fields(Result)} - NEW_FIELDS - TIMING:
        assert same(getattr(plain, name), getattr(seen, name)), name
    assert all(getattr(plain, name) == [] for name in NEW_FIELDS)


# -- invariants ----------------------------------------------------------------------------


@pytest.mark.parametrize("settings", [
    {},
    {"replications": 3},
    {"start": "stationary"},
    {"system": dl.System.build("3x0.3,2x0.7", load=0.85, service="geometric")},
    {"system": dl.System.build("3x0.3,2x0.7", load=0.85, service="binomial:3",
                               dispatch="per_job", dispatchers=3), "policy": "pod"},
])
def test_per_server_invariants(settings: dict) -> None:
    result = observed(**settings)
    system = settings.get("system", HET)
    n, mu = system.n_servers, system.mu
    measured = (result.slots - result.warmup) * result.replications
    assert result.server_rates == mu.tolist()
    # Σ_n E[Q_n] is the time average of ΣQ over the same window
    assert sum(result.mean_queues) == pytest.approx(result.plain_mean_total_queue, rel=1e-12)
    hist = np.array(result.server_queue_distributions) * measured
    assert hist.shape == (n, 64)
    np.testing.assert_allclose(hist, np.round(hist), atol=1e-6)  # whole slot counts
    np.testing.assert_allclose(hist.sum(axis=1), measured)  # each sums to the slots
    assert result.server_idle_fraction == [pmf[0] for pmf in result.server_queue_distributions]
    # below the last (tail) bin the histogram's mean is E[Q_n] exactly
    assert np.all(hist[:, -1] == 0)
    np.testing.assert_allclose(hist @ np.arange(64) / measured, result.mean_queues, rtol=1e-12)
    # the jobs served in the window: arrivals in it + ΣQ(warm-up) − ΣQ(end)
    served = np.array(result.server_utilisation) * mu * measured
    np.testing.assert_allclose(served, np.round(served), atol=1e-6)
    if result.replications == 1:
        at = result.trajectory_slots.index(result.warmup)
        arrived = result.arrival_rate_measured * measured
        assert served.sum() == pytest.approx(
            arrived + result.trajectory_total_queue[at] - result.trajectory_total_queue[-1])
        # throughput = λ_Σ in a stable run, so Σ_n u_n μ_n ≈ λ_Σ
        assert (np.array(result.server_utilisation) @ mu
                == pytest.approx(system.arrival_rate, rel=0.02))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(rates=st.lists(st.sampled_from([0.2, 0.5, 0.9]), min_size=1, max_size=4),
       load=st.floats(0.2, 0.95), policy=st.sampled_from(["jsq", "rand", "rr", "pod"]),
       service=st.sampled_from(["bernoulli", "geometric", "poisson"]),
       k=st.integers(1, 300), blocks=st.integers(2, 20), bins=st.integers(2, 12),
       seed=st.integers(0, 2**32))
def test_observation_invariants_hold_on_any_small_system(rates, load, policy, service, k,
                                                         blocks, bins, seed) -> None:
    """On random systems, policies, laws and settings: each histogram sums to 1 with the
    idle fraction as its first entry and a mean below E[Q_n]; Σ_n E[Q_n] is the time
    average of ΣQ; the jobs served in the window are the arrivals in it plus ΣQ at its
    start minus ΣQ at its end (read from the trajectory); ΣQ(t) = Σ_n Q_n(t) ≥ q(t)."""
    if policy == "pod" and len(rates) < 2:
        policy = "jsq"
    system = dl.System.build(rates, load=load, service=service)
    n = system.n_servers
    result = dl.simulate(system, policy, slots=k * blocks, warmup=k * (blocks // 2),
                         seed=seed, per_server=PerServer(bins),
                         trajectory=Trajectory(k, list(range(n))), delay="off")
    measured = k * blocks - k * (blocks // 2)
    total = np.array(result.trajectory_total_queue)
    assert result.trajectory_slots == list(range(0, k * blocks + 1, k))
    assert np.array_equal(np.array(result.trajectory_queues).sum(axis=0), total)
    assert np.all(total >= np.array(result.trajectory_pooled_queue))
    served = np.array(result.server_utilisation) * system.mu * measured
    start = result.trajectory_slots.index(k * (blocks // 2))
    arrived = result.arrival_rate_measured * measured
    assert served.sum() == pytest.approx(arrived + total[start] - total[-1], abs=1e-6)
    if result.stability == "unstable":
        assert result.server_queue_distributions == []
        return
    pmf = np.array(result.server_queue_distributions)
    assert pmf.shape == (n, bins)
    np.testing.assert_allclose(pmf.sum(axis=1), 1.0)
    assert result.server_idle_fraction == pmf[:, 0].tolist()
    assert np.all(pmf @ np.arange(bins) <= np.array(result.mean_queues) + 1e-9)
    assert sum(result.mean_queues) == pytest.approx(result.plain_mean_total_queue, rel=1e-12)


def test_trajectory_invariants() -> None:
    result = observed(replications=2, slots=40_000)  # the first replication's
    k = 400
    assert result.trajectory_slots == list(range(0, 40_001, k))
    total = np.array(result.trajectory_total_queue)
    pooled = np.array(result.trajectory_pooled_queue)
    queues = np.array(result.trajectory_queues)
    assert queues.shape == (5, total.size)
    assert np.all(total >= pooled) and np.all(pooled >= 0)
    assert np.array_equal(queues.sum(axis=0), total)  # every server recorded
    assert total[0] == pooled[0] == 0 and total.max() > 0
    frame = result.trajectory_frame()
    assert list(frame.columns) == ["slot", "total_queue", "pooled_queue",
                                   *(f"queue_{n}" for n in range(5))]
    assert frame["total_queue"].tolist() == result.trajectory_total_queue


def test_trajectory_starts_from_a_stationary_start_and_keeps_the_bound() -> None:
    busy = dl.System.build("3x0.3,2x0.7", load=0.98, dispatchers=2)
    start = observed(busy, start="stationary", trajectory=Trajectory(1000, [4, 0]))
    assert start.trajectory_servers == [4, 0]
    assert start.trajectory_total_queue[0] == start.trajectory_pooled_queue[0] > 0
    over = dl.System.build("2x0.5", load=1.5, allow_unstable=True)
    unstable = dl.simulate(over, "jsq", slots=100_000, warmup=100, bound=2_000,
                           trajectory=Trajectory(every=100), per_server=True)
    assert unstable.stability == "unstable" and unstable.slots_run < 100_000
    # points up to where the run stopped, ΣQ climbing to the bound
    assert unstable.trajectory_slots[-1] == unstable.slots_run // 100 * 100
    assert 1_500 < unstable.trajectory_total_queue[-1] <= 2_000
    # an unstable run has no stationary distribution, but its servers were saturated
    assert unstable.server_queue_distributions == []
    assert min(unstable.server_utilisation) > 0.95
    with pytest.raises(ValidationError, match="unstable"):
        unstable.server_distribution_frame()
    assert unstable.per_server_frame()["utilisation"].min() > 0.95


def test_a_run_stopped_before_its_warm_up_has_nan_per_server_statistics() -> None:
    over = dl.System.build("2x0.5", load=3.0, allow_unstable=True)
    result = dl.simulate(over, "jsq", slots=100_000, bound=50, per_server=True)
    assert result.slots_run < result.warmup
    assert all(math.isnan(u) for u in result.server_utilisation)
    json.dumps(result.to_dict(), allow_nan=False)


# -- closed form ---------------------------------------------------------------------------


def test_geo_geo_1_queue_length_distribution_utilisation_and_idle_fraction() -> None:
    """N = 1, Bernoulli(λ) arrivals and Bernoulli(μ) service: Q(t+1) is geometric,
    P(Q = k) = (1 − r)·r^k, r = λ(1−μ)/(μ(1−λ)); u = λ/μ = ρ, and the idle fraction (slots
    ending empty) is 1 − r = (1 − ρ)/(1 − λ), not 1 − ρ. Student-t intervals over 8
    independent runs."""
    lam, mu = 0.3, 0.5
    system = dl.System.build("1x0.5", load=lam / mu, arrivals="bernoulli")
    runs = [dl.simulate(system, "rand", slots=60_000, seed=seed, per_server=PerServer(bins=12),
                        delay="off") for seed in range(8)]
    pmf = np.array([r.server_queue_distributions[0] for r in runs])
    exact = geo_geo_1_distribution(lam, mu, 12)
    half = stats.t.ppf(0.9995, len(runs) - 1) * pmf.std(axis=0, ddof=1) / math.sqrt(len(runs))
    assert np.all(np.abs(pmf.mean(axis=0) - exact) <= half + 1e-9), (pmf.mean(axis=0), exact)
    utilisation = np.array([r.server_utilisation[0] for r in runs])
    idle = np.array([r.server_idle_fraction[0] for r in runs])
    for values, expected in ((utilisation, lam / mu), (idle, 1 - geo_geo_1_ratio(lam, mu))):
        width = stats.t.ppf(0.9995, 7) * values.std(ddof=1) / math.sqrt(8)
        assert abs(values.mean() - expected) <= width, (values.mean(), expected)
    # and 1 − ρ is outside the idle fraction's interval: the two are different things
    assert abs(idle.mean() - (1 - lam / mu)) > 10 * idle.std(ddof=1) / math.sqrt(8)


# -- frames and JSON -----------------------------------------------------------------------


def test_frames_and_json() -> None:
    result = observed(per_server=PerServer(bins=8))
    frame = result.per_server_frame()
    assert list(frame.columns) == ["server", "mu", "mean_queue", "throughput", "utilisation",
                                   "idle_fraction"]
    np.testing.assert_allclose(frame["throughput"], frame["utilisation"] * frame["mu"])
    long = result.server_distribution_frame()
    assert len(long) == 5 * 8
    assert long.groupby("server")["probability"].sum().tolist() == pytest.approx([1.0] * 5)
    assert long[long["tail"]]["queue"].tolist() == [7] * 5
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["trajectory_slots"] == result.trajectory_slots
    assert len(data["server_queue_distributions"]) == 5
    row = result.to_row()
    assert not any(key.startswith(("server_", "trajectory_")) for key in row)
    plain = dl.simulate(HET, "jsq", slots=2_000)
    with pytest.raises(ValidationError, match="Trajectory"):
        plain.trajectory_frame()
    with pytest.raises(ValidationError, match="per_server=True"):
        plain.per_server_frame()
    with pytest.raises(ValidationError, match="per_server=True"):
        plain.server_distribution_frame()


# -- hostile input -------------------------------------------------------------------------


@pytest.mark.parametrize(("settings", "field", "words"), [
    ({"per_server": 1}, "per_server", "True, False or PerServer"),
    ({"per_server": "yes"}, "per_server", "True, False or PerServer"),
    ({"per_server": 8}, "per_server", "PerServer\\(bins=…\\)"),
    ({"per_server": PerServer(1)}, "per_server.bins", "≥ 2"),
    ({"per_server": PerServer(True)}, "per_server.bins", "integer"),
    ({"per_server": PerServer(8.0)}, "per_server.bins", "integer"),
    ({"per_server": PerServer(MAX_OBSERVED_ENTRIES)}, "per_server.bins", "at most"),
    ({"per_server_bins": 8}, "per_server_bins", "renamed: now per_server=PerServer"),
    ({"trajectory": 10}, "trajectory", "Trajectory\\(every=k"),
    ({"trajectory": Trajectory(0)}, "trajectory.every", "in \\[1, slots = 1000\\]"),
    ({"trajectory": Trajectory(-5)}, "trajectory.every", "integer k in"),
    ({"trajectory": Trajectory(1001)}, "trajectory.every", "integer k in"),
    ({"trajectory": Trajectory(2**70)}, "trajectory.every", "integer k in"),
    ({"trajectory": Trajectory(True)}, "trajectory.every", "integer"),
    ({"trajectory": Trajectory(math.nan)}, "trajectory.every", "integer"),
    ({"trajectory": Trajectory("10")}, "trajectory.every", "integer"),
    ({"trajectory": Trajectory(1), "slots": 10**8}, "trajectory.every", "take k ≥ 30"),
    ({"trajectory_servers": [0]}, "trajectory_servers", "renamed: now trajectory=Trajectory"),
    ({"trajectory": Trajectory(10, "0")}, "trajectory.servers", "list"),
    ({"trajectory": Trajectory(10, 3)}, "trajectory.servers", "list"),
    ({"trajectory": Trajectory(10, [5])}, "trajectory.servers[0]", "0 … N − 1 = 4"),
    ({"trajectory": Trajectory(10, [0, -1])}, "trajectory.servers[1]", "server"),
    ({"trajectory": Trajectory(10, [True])}, "trajectory.servers[0]", "server"),
    ({"trajectory": Trajectory(10, [1.0])}, "trajectory.servers[0]", "server"),
    ({"trajectory": Trajectory(10, [2, 2])}, "trajectory.servers", "twice"),
])
def test_bad_observation_settings_are_refused_before_running(settings, field, words) -> None:
    options = {"slots": 1_000, **settings}
    with pytest.raises(ValidationError, match=words) as error:
        dl.simulate(HET, "jsq", **options)
    assert error.value.field == field


def test_numpy_indices_are_accepted() -> None:
    result = dl.simulate(HET, "jsq", slots=2_000,
                         trajectory=Trajectory(np.int64(500), np.array([3, 1])))
    assert result.trajectory_servers == [3, 1] and len(result.trajectory_slots) == 5


@pytest.mark.parametrize(("run", "field"), [
    ({"per_server": 1}, "run.per_server"),
    ({"per_server": {"bins": 1}}, "run.per_server.bins"),
    ({"per_server": {"bin": 4}}, "run.per_server.bin"),
    ({"per_server_bins": 4}, "run.per_server_bins"),
    ({"trajectory": True}, "run.trajectory"),
    ({"trajectory": 100}, "run.trajectory"),
    ({"trajectory": {"every": 0}}, "run.trajectory.every"),
    ({"trajectory": {"servers": [0]}}, "run.trajectory.every"),
    ({"trajectory": {"every": 10, "servers": [0, "1"]}}, "run.trajectory.servers[1]"),
    ({"trajectory": {"every": 10, "servers": 0}}, "run.trajectory.servers"),
    ({"precision": {"rel": "1%"}}, "run.precision.rel"),
])
def test_a_run_spec_checks_the_observation_settings(run: dict, field: str) -> None:
    with pytest.raises(ValidationError) as error:
        RunSpec.from_mapping({"policy": {"name": "jsq"}, "run": run})
    assert error.value.field == field


# -- plots ---------------------------------------------------------------------------------


def test_plot_trajectory_and_distribution() -> None:
    result = observed(trajectory=Trajectory(400, [0, 3]))
    fig = dl.plot_trajectory(result)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["ΣQ(t)", "q(t), pooled queue", "Q_0(t)", "Q_3(t)"]
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == result.trajectory_slots
    fig = dl.plot_trajectory(result, servers=[3], log_y=True, title="a $b$ title")
    assert fig.axes[0].get_yscale() == "symlog"
    assert len(fig.axes[0].get_lines()) == 3
    fig = dl.plot_distribution(result)
    assert len(fig.axes) == 3  # the distributions, E[Q_n], utilisation
    # the default: the first server of each rate (0 and 3 of 3x0.3,2x0.7)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "server 0 (μ = 0.3)", "server 3 (μ = 0.7)"]
    assert [p.get_height() for p in fig.axes[2].patches] == pytest.approx(
        result.server_utilisation)
    fig = dl.plot_distribution(result, servers=[1], bars=False, log_y=True)
    assert len(fig.axes) == 1 and fig.axes[0].get_yscale() == "log"


@pytest.mark.parametrize(("call", "field", "words"), [
    (lambda r: dl.plot_trajectory({"trajectory": []}), "result", "Result"),
    (lambda r: dl.plot_trajectory(r, servers=[1]), "servers[0]", "recorded servers"),
    (lambda r: dl.plot_trajectory(r, servers="0"), "servers", "list"),
    (lambda r: dl.plot_trajectory(r, log_y="yes"), "log_y", "True or False"),
    (lambda r: dl.plot_trajectory(r, title=3), "title", "string"),
    (lambda r: dl.plot_distribution(r, servers=[9]), "servers[0]", "0 … N − 1 = 4"),
    (lambda r: dl.plot_distribution(r, servers=[]), "servers", "give 1"),
    (lambda r: dl.plot_distribution(r, servers=[0, 0]), "servers", "twice"),
    (lambda r: dl.plot_distribution(r, bars=1), "bars", "True or False"),
    (lambda r: dl.plot_trajectory(dl.simulate(HET, "jsq", slots=1_000)), "result",
     "Trajectory"),
    (lambda r: dl.plot_distribution(dl.simulate(HET, "jsq", slots=1_000)), "result",
     "per_server=True"),
])
def test_plot_arguments_are_checked(call, field, words) -> None:
    result = observed(slots=4_000, trajectory=Trajectory(400, [0]))
    with pytest.raises(ValidationError, match=words) as error:
        call(result)
    assert error.value.field == field


# -- command line --------------------------------------------------------------------------


def test_cli_run_records_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--policy", "jsq", "--servers", "3x0.3,2x0.7", "--dispatchers", "2",
            "--load", "0.85", "--slots", "20000", "--seed", "5", "--per-server",
            "--per-server-bins", "16", "--trajectory-every", "1000", "--trajectory-servers",
            "4,0"]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["trajectory_slots"] == list(range(0, 20_001, 1000))
    assert data["trajectory_servers"] == [4, 0] and len(data["trajectory_queues"]) == 2
    assert [len(pmf) for pmf in data["server_queue_distributions"]] == [16] * 5
    api = dl.simulate(dl.System.build("3x0.3,2x0.7", load=0.85, dispatchers=2), "jsq",
                      slots=20_000, seed=5, per_server=PerServer(bins=16),
                      trajectory=Trajectory(every=1000, servers=[4, 0]))
    assert data["server_utilisation"] == api.server_utilisation
    assert data["trajectory_total_queue"] == api.trajectory_total_queue
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "per server" in table and "utilisation" in table and "21 points" in table


@pytest.mark.parametrize(("extra", "field"), [
    (["--trajectory-every", "0"], "trajectory.every"),
    (["--trajectory-every", "10", "--trajectory-servers", "a,b"], "trajectory_servers"),
    (["--trajectory-every", "10", "--trajectory-servers", "7"], "trajectory.servers[0]"),
    (["--trajectory-servers", "0"], "trajectory.every"),
    (["--per-server", "--per-server-bins", "1"], "per_server.bins"),
    (["--trajectory", "10"], "trajectory"),  # the option of earlier versions
])
def test_cli_refuses_bad_observation_options(capsys: pytest.CaptureFixture[str], extra,
                                             field) -> None:
    code = main(["run", "--policy", "jsq", "--servers", "2x0.5", "--slots", "1000", *extra])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), captured.err


def test_run_spec_file_reads_the_observation_settings(tmp_path) -> None:
    spec = tmp_path / "run.toml"
    spec.write_text('[system]\nservers = "2x0.5"\n[policy]\nname = "jsq"\n[run]\n'
                    'slots = 5000\n[run.per_server]\nbins = 4\n'
                    '[run.trajectory]\nevery = 2500\nservers = [1]\n')
    result = RunSpec.from_toml(spec).simulate()
    assert [len(pmf) for pmf in result.server_queue_distributions] == [4, 4]
    assert result.trajectory_slots == [0, 2500, 5000] and result.trajectory_servers == [1]
