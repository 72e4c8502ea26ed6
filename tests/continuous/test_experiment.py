"""Continuous-time grids in the store (dispatchlab.specs.continuous_grid): a sweep file with
``time = "continuous"`` runs through the same runner, store and figures as a slotted one;
each stored point is the run simulate_continuous gives with its seed; a second sweep
computes nothing; a bad grid is refused with one line before any point runs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cli_contract import run_clean
from dispatchlab.continuous.run import simulate_continuous
from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments.runner import run_experiment
from dispatchlab.experiments.store import Store
from dispatchlab.specs.continuous_grid import (
    ContinuousExperimentSpec,
    ContinuousPoint,
    ContinuousSystemSpec,
)
from dispatchlab.specs.run import PolicySpec

SWEEP = """name = "p2c-vs-jsq"
time = "continuous"
loads = [0.5, 0.8]
jobs = 4000
replications = 2
seed = 7
[[systems]]
servers = "3x1,3x2"
sizes = "hyperexp:1,4"
discipline = "ps"
label = "six servers, PS"
[[policies]]
name = "p2c"
[[policies]]
name = "jsq"
label = "JSQ"
[[figures]]
name = "p99"
x = "load"
y = "response_p99"
"""


def write(tmp_path: Path, text: str = SWEEP) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_continuous_sweep_is_stored_resumed_and_drawn(tmp_path, capsys) -> None:
    store, out = tmp_path / "s.sqlite", tmp_path / "out"
    argv = ["sweep", str(write(tmp_path)), "--store", str(store), "--out", str(out),
            "--no-progress", "--workers", "2"]
    code, _, err = run_clean(capsys, argv)
    assert code == 0, err
    assert "8 computed, 0 already stored, 0 failed" in err and "jobs/s" in err
    assert (out / "p99.png").stat().st_size > 0 and (out / "points.csv").exists()
    code, _, err = run_clean(capsys, argv)
    assert code == 0 and "0 computed, 8 already stored" in err
    spec = ContinuousExperimentSpec.from_toml(write(tmp_path))
    with Store(store) as db:
        frame = db.frame("p2c-vs-jsq")
        assert ContinuousExperimentSpec.from_json(db.experiment_spec("p2c-vs-jsq")) == spec
    assert len(frame) == 8 and set(frame["policy_label"]) == {"p2c", "JSQ"}
    assert set(frame["system"]) == {"six servers, PS"} and (frame["slots"] == 4000).all()
    point = next(p for p in spec.points() if p.policy.name == "jsq" and p.value == 0.8
                 and p.replication == 1)
    row = frame[(frame["policy_label"] == "JSQ") & (frame["x"] == 0.8)
                & (frame["replication"] == 1)].iloc[0]
    direct = simulate_continuous(**point.run_settings(), seed=point.seed)
    assert row["mean_response"] == direct.mean_response.mean
    assert row["response_p99_ci_high"] == direct.response_quantiles[0.99].ci_high
    assert row["discipline"] == "ps" and row["load"] == pytest.approx(0.8)
    code, table, _ = run_clean(capsys, ["results", "p2c-vs-jsq", "--store", str(store)])
    assert code == 0 and "E[T]" in table and "E[ΣQ]" not in table and "4,000" in table
    code, _, err = run_clean(capsys, ["report", "p2c-vs-jsq", "--store", str(store),
                                      "--out", str(tmp_path / "report")])
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert code == 0 and "8 of 8 points stored" in page and "response_p99" in page
    # the report's spec.json sweeps again: the same grid, nothing to compute
    code, _, err = run_clean(capsys, ["sweep", str(tmp_path / "report" / "spec.json"),
                                      "--store", str(store), "--no-progress",
                                      "--out", str(out)])
    assert code == 0 and "0 computed, 8 already stored" in err


def test_a_point_s_key_and_seed_are_its_identity_s() -> None:
    """The same cell in another grid has the same key and seed; the replication, the load
    or the model changes them."""
    system = ContinuousSystemSpec("4x1", sizes="exp:1")
    point = ContinuousPoint("a", system, PolicySpec("jsq"), 0.5, 0, 1000, None, 3)
    assert replace(point, experiment="b").key == point.key
    assert replace(point, experiment="b").seed == point.seed
    for other in (replace(point, replication=1), replace(point, value=0.6),
                  replace(point, root_seed=4), replace(point, system=replace(
                      system, discipline="ps"))):
        assert other.key != point.key and other.seed != point.seed
    assert 0 <= point.seed < 2**62
    assert json.loads(json.dumps(point.to_dict()))["time"] == "continuous"


@pytest.mark.parametrize("edit, words", [
    (("discipline = \"ps\"", "discipline = \"lifo\""), "discipline: unknown discipline"),
    (("name = \"p2c\"", "name = \"no-such-rule\""), "policy"),
    (("loads = [0.5, 0.8]", "loads = [0.5, 1.2]"), "load: ρ must lie in (0, 1)"),
    (("loads = [0.5, 0.8]", "loads = [0.5, 0.5]"), "loads: values must be distinct"),
    (("loads = [0.5, 0.8]", "loads = [0.5, nan]"), "loads[1]: must be a finite number"),
    (("replications = 2", "replications = 0"), "replications: must be ≥ 1"),
    (("jobs = 4000", "jobs = 4000.5"), "jobs: expected an integer"),
    (("jobs = 4000", "jobs = 4000\nslots = 10"), "slots: unknown key"),
    (("discipline = \"ps\"", "arrivals = \"trace:jobs.csv\""), "a trace sets its own"),
    (("y = \"response_p99\"", "y = \"mean_total_queue\""), "figures[0].y: allowed in "
     "continuous time"),
    (("label = \"JSQ\"", "label = \"p2c\""), "policies: labels must be distinct"),
    (("[[systems]]", "[[system]]"), "system: unknown key"),
    (("servers = \"3x1,3x2\"", "servers = \"3x1,3x-2\""), "servers"),
])
def test_a_bad_continuous_grid_is_refused_before_anything_runs(tmp_path, capsys, edit,
                                                              words) -> None:
    store = tmp_path / "s.sqlite"
    code, _, err = run_clean(capsys, ["sweep", str(write(tmp_path, SWEEP.replace(*edit))),
                                      "--store", str(store), "--no-progress",
                                      "--out", str(tmp_path / "out")])
    assert code == 2 and words in err, err
    assert not store.exists()


def test_slotted_options_are_refused_in_continuous_time(tmp_path, capsys) -> None:
    code, _, err = run_clean(capsys, ["sweep", str(write(tmp_path)), "--slots", "1000",
                                      "--store", str(tmp_path / "s.sqlite")])
    assert code == 2 and "slots: a continuous-time grid counts jobs" in err


def test_the_python_api_runs_the_grid_and_validates_it(tmp_path) -> None:
    spec = ContinuousExperimentSpec(
        "api", systems=(ContinuousSystemSpec("2x1", sizes="det:1"),),
        policies=(PolicySpec("rr"),), loads=(0.5,), jobs=2000)
    outcome = run_experiment(spec, store=tmp_path / "s.sqlite", workers=1)
    assert outcome.computed == 1 and not outcome.failed
    with pytest.raises(ValidationError, match="jobs: must be ≥ 2"):
        run_experiment(replace(spec, jobs=1), store=tmp_path / "s.sqlite", workers=1)
    with pytest.raises(ValidationError, match="systems: the grid is empty"):
        replace(spec, systems=()).validate()
    for bad, words in ((dict(loads=([0.5],)), r"loads\[0\]: expected a number"),
                       (dict(systems=("2x1",)), r"systems\[0\]: expected a "
                        "ContinuousSystemSpec"),
                       (dict(policies=("rr",)), r"policies\[0\]: expected a PolicySpec"),
                       (dict(replications=True), "replications: expected an integer")):
        with pytest.raises(ValidationError, match=words):
            replace(spec, **bad).validate()


def test_a_dask_cluster_gives_the_numbers_of_local_processes(tmp_path) -> None:
    """The grid's points on a Dask cluster (two worker processes) are the local ones, bit
    for bit: a point's seed is its identity's, wherever it runs."""
    distributed = pytest.importorskip("distributed")
    spec = ContinuousExperimentSpec(
        "dask", systems=(ContinuousSystemSpec("3x1,3x2", sizes="erlang:2,1", discipline="srpt"),),
        policies=(PolicySpec("lwl", label="LWL"), PolicySpec("p2c", label="P2C")),
        loads=(0.6,), jobs=3000, replications=2)
    run_experiment(spec, store=tmp_path / "local.sqlite", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_experiment(spec, store=tmp_path / "dask.sqlite",
                                cluster=cluster.scheduler_address)
    assert remote.computed == 4 and not remote.failed

    def numbers(path: Path) -> dict[str, tuple[float, float]]:
        with Store(path) as db:
            return {row["point_key"]: (row["result"]["mean_response"],
                                       row["result"]["response_p90"])
                    for row in db.points("dask")}

    assert numbers(tmp_path / "dask.sqlite") == numbers(tmp_path / "local.sqlite")
    with Store(tmp_path / "dask.sqlite") as db:
        assert db.runs()[0]["executor"].startswith("dask")


def test_a_notebook_sweep_returns_the_stored_rows_and_resumes(tmp_path) -> None:
    import dispatchlab as dl

    settings = dict(load=[0.5, 0.7], sizes="exp:1", discipline="fifo", jobs=3000,
                    replications=2, workers=1, seed=3)
    frame = dl.sweep_continuous("2x1,2x2", {"P2C": "p2c", "RR": "rr"}, **settings,
                                store=tmp_path / "s.sqlite", experiment="nb")
    assert len(frame) == 8 and set(frame["policy_label"]) == {"P2C", "RR"}
    again = dl.sweep_continuous("2x1,2x2", {"P2C": "p2c", "RR": "rr"}, **settings,
                                store=tmp_path / "s.sqlite", experiment="nb")
    # (round robin is unstable at ρ = 0.7: its slow servers get more than they serve)
    assert np.array_equal(again["mean_response"], frame["mean_response"], equal_nan=True)
    assert set(frame[frame["policy_label"] == "RR"]["stability"]) == {"stable", "unstable"}
    with Store(tmp_path / "s.sqlite") as db:
        assert len(db.runs("nb")) == 1  # the second call found every point stored
    alone = dl.sweep_continuous("2x1,2x2", ["p2c"], **settings)  # no store: a scratch one
    assert np.array_equal(alone["mean_response"],
                          frame[frame["policy_label"] == "P2C"]["mean_response"])
    fig = dl.plot(frame, x="load", y="response_p90")
    assert fig.axes[0].get_ylabel() == "response time p90"


@pytest.mark.parametrize("call, words", [
    (dict(servers="2x1", policies="p2c", load=0.5), "load: give the loads as a list"),
    (dict(servers="2x1", policies=[3], load=[0.5]), "policies[0]: expected a policy name"),
    (dict(servers=[], policies="p2c", load=[0.5]), "servers: give the speeds"),
    (dict(servers="2x1", policies="p2c", load=[0.5], slots=100), "slots"),
    (dict(servers="2x1", policies="p2c", load=[0.5], sizes="pareto:-1"), "sizes"),
])
def test_a_bad_notebook_sweep_is_one_error_naming_its_field(call, words) -> None:
    import dispatchlab as dl

    with pytest.raises(ValidationError, match=words.replace("[", r"\[").replace("]", r"\]")):
        dl.sweep_continuous(**call)


def test_the_example_grid_is_valid_and_its_dry_run_runs_nothing(tmp_path, capsys) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "continuous_sweep.toml"
    spec = ContinuousExperimentSpec.from_toml(example)
    assert len(spec.points()) == 48 and [f.y for f in spec.figures] == [
        "mean_response", "response_p99"]
    code, out, _ = run_clean(capsys, ["sweep", str(example), "--dry-run", "--store",
                                      str(tmp_path / "s.sqlite")])
    assert code == 0 and "48 points (4 replication(s) each) of 200,000 jobs" in out
    assert not (tmp_path / "s.sqlite").exists()
