"""SCD in the benchmarks: the ``scd`` workload of ``dispatchlab bench`` (timed against our
JSQ, refsim cannot express it) and the scaling families run when named."""

from __future__ import annotations

from dispatchlab.bench.scaling import FAMILIES, NEW_FAMILIES, select_families
from dispatchlab.bench.workloads import OWN_WORKLOADS, WORKLOADS, run_workload, select_workloads


def test_the_scd_workload_is_timed_against_our_jsq() -> None:
    (workload,) = select_workloads(["scd"])
    assert workload in OWN_WORKLOADS and workload not in WORKLOADS
    row = run_workload(workload, slots=5_000, seed=3, refsim=None)
    assert row["versus"] == "jsq" and row["versus_slots_per_second"] > 0
    assert row["speed_ratio_versus"] == row["slots_per_second"] / row["versus_slots_per_second"]
    assert "refsim_slots_per_second" not in row and not row["reference_agrees"]
    # full information, 2N messages per dispatch event: JSQ's count
    assert 60 < row["messages_per_arrival"] < 72


def test_scaling_runs_scd_only_when_named() -> None:
    assert select_families(None) == list(FAMILIES)
    assert [f.label for f in select_families(["scd", "jsq"])] == ["scd", "jsq"]
    assert {f.policy for f in NEW_FAMILIES} == {"scd"}
