"""What was not measured is missing, never 0; a stopped run says how far it ran (issue 38).

Found by a hostile user: ``simulate(…, imbalance=False)`` stored and returned the queue
imbalance as 0.0 (a balanced system, to anyone reading it), and an unstable run stopped
at its bound after 1,001 slots reported "10,000,000 slots" and "fixed run length".
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import dispatchlab as dl
from dispatchlab.cli import main
from dispatchlab.experiments.runner import run_point
from dispatchlab.experiments.store import Store
from dispatchlab.simulation.display import result_html
from dispatchlab.specs.experiment import ExperimentSpec
from dispatchlab.specs.run import PolicySpec, SystemSpec

IMBALANCE = ("queue_imbalance_l1", "queue_imbalance_l2")


@pytest.fixture(scope="module")
def system() -> dl.System:
    return dl.System.build("2x0.2,2x0.8", load=0.7, dispatchers=2)


@pytest.mark.parametrize("replications", [1, 2])
def test_imbalance_false_reports_the_imbalance_as_not_measured(system: dl.System,
                                                            replications: int) -> None:
    off = dl.simulate(system, "jsq", slots=4_000, imbalance=False, replications=replications)
    on = dl.simulate(system, "jsq", slots=4_000, replications=replications)
    for name in IMBALANCE:
        assert math.isnan(getattr(off, name)), name
        assert off.to_dict()[name] is None and off.to_row()[name] is None
        assert getattr(on, name) > 0, name  # measured: four queues are never all equal
    assert off.mean_total_queue == on.mean_total_queue  # no draw changes
    result_html(off)  # renders; nothing crashes
    repr(off)


def test_a_stored_sweep_keeps_not_measured_missing(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    spec = ExperimentSpec("nodetail", systems=(SystemSpec("2x0.5"),),
                          policies=(PolicySpec("jsq"),), loads=(0.5,), replications=1,
                          slots=2_000, options={"imbalance": False})
    with Store(store) as db:  # what a sweep's worker and coordinator do, in this process
        db.save_experiment(spec.name, spec.to_json())
        run = db.start_run(spec.name, "test", 1)
        for point in spec.points():
            reply = run_point(point.to_dict())
            db.record(run, point.to_dict(), result=reply["result"])
        db.finish_run(run, "finished")
    with Store(store, readonly=True) as db:
        stored = db.frame("nodetail")
        point = db.points("nodetail")[0]
    assert stored["queue_imbalance_l1"].isna().all()
    assert point["result"]["queue_imbalance_l1"] is None
    csv = tmp_path / "out.csv"
    assert main(["results", "nodetail", "--store", str(store), "--format", "csv",
                 "--output", str(csv)]) == 0
    import pandas as pd

    read = pd.read_csv(csv)
    assert read["queue_imbalance_l1"].isna().all()  # an empty cell, not 0
    assert main(["results", "nodetail", "--store", str(store), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["queue_imbalance_l1"] is None
    assert main(["results", "nodetail", "--store", str(store)]) == 0
    assert main(["report", "nodetail", "--store", str(store), "--out",
                 str(tmp_path / "report")]) == 0


UNSTABLE = dict(load=1000, allow_unstable=True)


def test_a_run_stopped_at_its_bound_reports_the_slots_it_ran() -> None:
    system = dl.System.build("2x0.5", **UNSTABLE)
    result = dl.simulate(system, "rand", slots=10_000_000, delay="off")
    assert result.stability == "unstable" and result.stopped_early
    assert result.slots_run < 2_000
    assert result.stop_reason.startswith("stopped at the bound: ΣQ passed 1,000,000 after "
                                         f"{result.slots_run:,} of 10,000,000 slots")
    assert result.slots_text().startswith(f"{result.slots_run:,} of 10,000,000 slots run")
    assert f"{result.slots_run:,} of 10,000,000" in result_html(result)


def test_stopped_replications_say_how_many_stopped() -> None:
    system = dl.System.build("2x0.5", **UNSTABLE)
    result = dl.simulate(system, "rand", slots=10_000_000, delay="off", replications=2)
    assert result.stop_reason.startswith("stopped at the bound (2 of 2 replications)")
    assert result.slots_text().startswith(f"{result.slots_run:,} of 20,000,000 slots run")


def test_a_full_run_still_says_fixed_run_length(system: dl.System) -> None:
    result = dl.simulate(system, "jsq", slots=2_000)
    assert result.stop_reason == "fixed run length" and not result.stopped_early
    assert result.slots_text() == "2,000 slots × 1"


@pytest.mark.parametrize("json_", [False, True])
def test_the_cli_reports_the_slots_a_stopped_run_ran(json_: bool,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--policy", "rand", "--servers", "2x0.5", "--load", "1000",
            "--allow-unstable", "--slots", "10000000", "--delay", "off"]
    assert main(argv + (["--json"] if json_ else [])) == 0
    out = capsys.readouterr().out
    if json_:
        data = json.loads(out)
        assert data["slots_run"] < 2_000 and data["stop_reason"].startswith(
            f"stopped at the bound: ΣQ passed 1,000,000 after {data['slots_run']:,} of")
    else:
        assert " of 10,000,000 slots run (10,000,000 × 1 asked)" in out
        assert "10,000,000 slots × 1" not in out and "fixed run length" not in out
