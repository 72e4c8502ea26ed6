"""Small experiments and sweeps run in a process of their own, for the tests of the runner
and the store: a spec that runs in seconds, the numbers a store holds, and a sweep started
(and waited on) as a separate process that a test can kill."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from dispatchlab.core.errors import ValidationError
from dispatchlab.experiments import (
    ExperimentSpec,
    FigureSpec,
    PolicySpec,
    ReferenceLine,
    SystemSpec,
)
from dispatchlab.experiments.store import Store

TIMING_FIELDS = ("seconds", "slots_per_second")


def small_spec(name: str = "small", slots: int = 4_000, **changes) -> ExperimentSpec:
    spec = ExperimentSpec(
        name=name,
        systems=(SystemSpec("3x0.2,3x0.6", dispatchers=2),),
        policies=(PolicySpec("jsq", label="JSQ"), PolicySpec("pod", {"d": 2}, label="Po2")),
        loads=(0.5, 0.8), replications=2, slots=slots, seed=11,
        figures=(FigureSpec("queue", y="mean_total_queue",
                            references=(ReferenceLine("ζ/2", field="heavy_traffic_limit"),)),),
    )
    return replace(spec, **changes)


def numbers(store_path: Path, experiment: str) -> dict[str, dict]:
    """point key -> its Result dict without the timing fields (which differ between runs)."""
    with Store(store_path) as store:
        rows = store.points(experiment)
    return {row["point_key"]: {k: v for k, v in row["result"].items() if k not in TIMING_FIELDS}
            for row in rows}


_SWEEP_SCRIPT = """
import sys
from dispatchlab.experiments.runner import run_experiment
from dispatchlab.specs.experiment import ExperimentSpec
spec = ExperimentSpec.from_json(open(sys.argv[1]).read())
run_experiment(spec, store=sys.argv[2], workers=int(sys.argv[3]))
"""


def start_sweep(tmp_path: Path, spec: ExperimentSpec, store: Path,
                workers: int) -> subprocess.Popen:
    spec_file = tmp_path / f"{spec.name}.json"
    spec_file.write_text(spec.to_json())
    return subprocess.Popen([sys.executable, "-c", _SWEEP_SCRIPT, str(spec_file), str(store),
                             str(workers)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_points(store: Path, experiment: str, at_least: int, process,
                    timeout: float = 120.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert process.poll() is None, process.stderr.read().decode()
        if store.exists():
            try:
                with Store(store) as db:
                    count = db.count(experiment)
            except ValidationError:
                count = 0  # the file is being created
            if count >= at_least:
                return count
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} points after {timeout} s")
