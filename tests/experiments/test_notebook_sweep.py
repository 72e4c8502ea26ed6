"""dispatchlab.sweep / dispatchlab.plot: in-memory sweeps of Policy objects (issue 14)."""

from __future__ import annotations

import math

import matplotlib
import pytest
from matplotlib.collections import PolyCollection

import dispatchlab as dl
from dispatchlab import ValidationError
from dispatchlab.core.pools import START_METHOD
from dispatchlab.experiments.recipes import policy_from_recipe, policy_recipe
from dispatchlab.experiments.store import Store
from dispatchlab.policies.led import strategy_function
from dispatchlab.policies.led.strategies import l_jba

SERVERS = "3x0.3,3x0.6"


def test_sweep_in_process_stores_and_resumes(tmp_path) -> None:
    store = tmp_path / "s.sqlite"
    policies = [dl.policies.JoinShortestQueue(), "pod", dl.policies.LJBAPull(p=0.5)]
    df = dl.sweep(SERVERS, policies, load=[0.6, 0.8], replications=2, slots=5_000,
                  dispatchers=2, workers=1, store=store, experiment="nb")
    assert len(df) == 6 and set(df["policy"]) == {
        "jsq", "pod", "l-jba-pull(p=0.5)"}
    assert set(df["load"].round(6)) == {0.6, 0.8} and (df["replications"] == 2).all()
    assert set(df["executor"]) == {"in-process"}
    assert {"mean_total_queue", "ci_low", "ci_high", "stability", "system", "x"} <= set(df)
    assert Store(store).count("nb") == 6
    again = dl.sweep(SERVERS, policies, load=[0.6, 0.8], replications=2, slots=5_000,
                     dispatchers=2, workers=1, store=store, experiment="nb")
    assert set(again["executor"]) == {"stored"}
    assert again["mean_total_queue"].tolist() == df["mean_total_queue"].tolist()
    # the same points without a store: the same numbers (seeds come from the point)
    fresh = dl.sweep(SERVERS, policies, load=[0.6, 0.8], replications=2, slots=5_000,
                     dispatchers=2, workers=1)
    assert fresh["mean_total_queue"].tolist() == df["mean_total_queue"].tolist()


def test_a_compiled_strategy_goes_to_a_spawned_worker_by_reference() -> None:
    custom = dl.policies.LED(strategy=l_jba, update="pull", p=0.5)
    recipe = policy_recipe(custom)
    assert recipe is not None and recipe["params"]["strategy"] == {
        "__function__": {"module": "dispatchlab.policies.led.strategies", "name": "l_jba"}}
    assert policy_from_recipe(recipe) == custom
    pooled = dl.sweep(SERVERS, [custom, dl.policies.PowerOfD()], epsilon=[0.6], slots=5_000,
                      dispatchers=2, workers=2)
    assert set(pooled["executor"]) == {f"process pool ({START_METHOD}, 2 workers)"}
    here = dl.sweep(SERVERS, [custom, dl.policies.PowerOfD()], epsilon=[0.6], slots=5_000,
                    dispatchers=2, workers=1)
    assert pooled["mean_total_queue"].tolist() == here["mean_total_queue"].tolist()
    assert pooled["epsilon"].round(9).tolist() == [0.6, 0.6]


def test_a_policy_that_cannot_be_imported_runs_in_process() -> None:
    @strategy_function(cache=False)
    def first_server(estimates, mu, rng, params, scratch):
        return 0

    local = dl.policies.LED(strategy=first_server, update="push", p=0.5)
    assert policy_recipe(local) is None
    df = dl.sweep(SERVERS, {"first": local, "pod": "pod"}, load=[0.3], slots=2_000,
                  workers=2)
    assert df.set_index("policy").loc["first", "executor"].startswith("in-process")
    assert df.set_index("policy").loc["pod", "executor"].startswith("process pool")


def test_sweep_refuses_bad_input() -> None:
    with pytest.raises(ValidationError, match="load"):
        dl.sweep(SERVERS, ["jsq"], load=[0.5], epsilon=[1.0])
    with pytest.raises(ValidationError, match="policies"):
        dl.sweep(SERVERS, ["jsq", dl.policies.JoinShortestQueue()], load=[0.5])
    with pytest.raises(ValidationError, match="pod.d"):
        dl.sweep("2x0.5", [dl.policies.PowerOfD(d=3)], load=[0.5])


def test_plot_draws_ci_bands() -> None:
    df = dl.sweep([SERVERS, dl.System.build("4x0.45", load=0.5)], ["jsq", "pod"],
                  load=[0.5, 0.7, 0.9], replications=2, slots=4_000, workers=1)
    fig = dl.plot(df, x="load", y="mean_total_queue")
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    bands = [c for ax in fig.axes for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4  # one band per (system, policy)
    assert all(math.isfinite(v) for v in df["mean_total_queue"])


def test_a_pool_that_breaks_while_points_are_submitted_is_one_clear_error(monkeypatch):
    """submit raises when a worker has already died (forked workers start fast): the
    sweep says what a dead worker most often means and stops the pool's workers."""
    from concurrent.futures.process import BrokenProcessPool

    from dispatchlab.core.pools import BROKEN_POOL
    from dispatchlab.experiments import sweeps

    made = []
    real = sweeps.process_pool

    def breaking_pool(count):
        pool = real(count)
        submit = pool.submit
        calls = []

        def submit_then_break(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                raise BrokenProcessPool("A child process terminated abruptly")
            return submit(*args, **kwargs)

        pool.submit = submit_then_break
        made.append(pool)
        return pool

    monkeypatch.setattr(sweeps, "process_pool", breaking_pool)
    with pytest.raises(RuntimeError) as raised:
        dl.sweep(dl.System.build("4x0.5", load=0.5), ["jsq", "rand"], load=[0.5, 0.7],
                 slots=2000, workers=2)
    assert str(raised.value) == BROKEN_POOL
    assert made and not any(p.is_alive() for p in made[0]._mp_context.made)
