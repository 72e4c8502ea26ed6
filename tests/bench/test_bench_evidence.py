"""The benchmark evidence in results/bench/ and the tables built from it: the tagged
against exact delay table of benchmarks/README.md is the one benchmarks/tagged_vs_exact.py
prints from results/bench/tagged_vs_exact.json, and the committed run shows what the
estimator promises (docs/statistics.md#tagged-delays); each session's bench table is the
median of its committed runs, and the fifth session's scaling table the ratios of its
committed rounds (results/bench/xeon-2026-12-02*/)."""

import importlib.util
import json
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "results" / "bench" / "tagged_vs_exact.json"


def _script():
    spec = importlib.util.spec_from_file_location(
        "tagged_vs_exact", ROOT / "benchmarks" / "tagged_vs_exact.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def evidence() -> dict:
    return json.loads(EVIDENCE.read_text())


def test_the_readme_table_is_the_committed_run(evidence):
    table = _script().table(evidence["workloads"])
    assert table in (ROOT / "benchmarks" / "README.md").read_text()


def test_every_workload_and_quantile_was_measured(evidence):
    from dispatchlab.bench.workloads import WORKLOADS

    assert [row["workload"] for row in evidence["workloads"]] == [w.name for w in WORKLOADS]
    assert evidence["command"].startswith("python benchmarks/tagged_vs_exact.py")
    assert evidence["processor"]


def test_each_exact_quantile_lies_in_its_tagged_interval(evidence):
    quantiles = _script().QUANTILES
    for row in evidence["workloads"]:
        # the same run: tagging does not touch the system's draws
        assert row["mean_total_queue_exact"] == row["mean_total_queue_tagged"]
        assert row["tagged_jobs"] < row["exact_jobs"] / 20
        for q in quantiles:
            cell = row[q]
            assert cell["ci_low"] <= cell["exact"] <= cell["ci_high"], (row["workload"], q)
            assert cell["inside"]


def test_the_default_sample_keeps_p99_within_two_percent(evidence):
    for row in evidence["workloads"]:
        cell = row["p99"]
        assert (cell["ci_high"] - cell["ci_low"]) / 2 <= 0.02 * cell["tagged"], row["workload"]


#: the sessions' evidence folders whose tables benchmarks/README.md quotes
SESSIONS = ("xeon-2026-12-02", "xeon-2026-12-02-fifth")


def _median_and_range(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


@pytest.mark.parametrize("session", SESSIONS)
def test_the_readme_bench_table_is_the_committed_runs(session):
    """A session's bench table in benchmarks/README.md: each row's lean and full ratios are
    the median (range) of the committed JSON lines of its three runs."""
    runs = sorted((ROOT / "results" / "bench" / session).glob("bench_run*.jsonl"))
    assert len(runs) == 3
    ratios: dict[str, list[tuple[float, float]]] = {}
    for path in runs:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            assert row["processor"] == "Intel(R) Xeon(R) Processor"
            ratios.setdefault(row["name"], []).append((row["speed_ratio"],
                                                       row["speed_ratio_full"]))
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert set(ratios) == {"wrand", "jsq", "pod2", "led-jsq-pull", "led-pod-push"}
    for name, pairs in ratios.items():
        lean = _median_and_range([lean for lean, _ in pairs])
        full = _median_and_range([full for _, full in pairs])
        assert f"| {name} | {lean} | {full} |" in readme, name


def test_the_readme_scaling_table_is_the_committed_rounds():
    """The fifth session's scaling table in benchmarks/README.md: per family, the median
    (range) over the committed rounds of cost(M = 100)/cost(M = 1) at N = 10⁴, as
    ``dispatchlab bench --scaling`` computes it from its JSON lines."""
    from dispatchlab.bench.scaling import FAMILIES, dispatcher_ratios

    path = ROOT / "results" / "bench" / SESSIONS[-1] / "scaling.jsonl"
    cells = [json.loads(line) for line in path.read_text().splitlines()]
    assert {c["processor"] for c in cells} == {"Intel(R) Xeon(R) Processor"}
    ratios = dispatcher_ratios(cells)
    assert list(ratios) == [f.label for f in FAMILIES]
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    for family, (ratio, low, high) in ratios.items():
        assert f"| {family} | {ratio:.2f} ({low:.2f}–{high:.2f}) |" in readme, family


def test_the_cold_table_is_the_committed_runs():
    """benchmarks/README.md's cold first runs (issue 46) are the committed ones: before
    (f7885c6) in results/bench/xeon-2026-12-05-cold/, after in xeon-2026-12-05-split/."""
    from dispatchlab.bench.cold import FAMILIES, comparison_table

    bench = ROOT / "results" / "bench"
    before, after = ([json.loads(line) for line in path.read_text().splitlines()]
                     for path in (bench / "xeon-2026-12-05-cold" / "before-f7885c6.jsonl",
                                  bench / "xeon-2026-12-05-split" / "after.jsonl"))
    # (every family of the slot loop: the continuous-time one came after these runs)
    assert [row["family"] for row in after] == [f for f in FAMILIES if f != "continuous"]
    assert all("error" not in row for row in before + after)
    assert comparison_table(before, after) in (ROOT / "benchmarks" / "README.md").read_text()


def test_the_amd_cold_table_is_the_committed_runs():
    """benchmarks/README.md's AMD cold first runs, every family (the continuous-time one
    too), are the committed ones in results/bench/amd-2026-12-06-cold/."""
    from dispatchlab.bench.cold import FAMILIES, cold_table

    path = ROOT / "results" / "bench" / "amd-2026-12-06-cold" / "after.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["family"] for row in rows] == list(FAMILIES)
    assert all("error" not in row and row["processor"] == "AMD EPYC" for row in rows)
    assert cold_table(rows) in (ROOT / "benchmarks" / "README.md").read_text()


def test_the_amd_compile_time_table_is_the_committed_runs():
    """benchmarks/README.md's AMD cold runs before and after numba's compile lost some of its
    Python (2026-12-07) are the committed pair in results/bench/amd-2026-12-07-cold/, every
    family, on AMD EPYC, the same trees the README names."""
    from dispatchlab.bench.cold import FAMILIES, comparison_table

    folder = ROOT / "results" / "bench" / "amd-2026-12-07-cold"
    before, after = ([json.loads(line) for line in (folder / name).read_text().splitlines()]
                     for name in ("ad1261d-1.jsonl", "c2cdca9-1.jsonl"))
    for rows in (before, after):
        assert [row["family"] for row in rows] == list(FAMILIES)
        assert all("error" not in row and row["processor"] == "AMD EPYC" for row in rows)
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert comparison_table(before, after) in readme
    assert "(ad1261d" in readme and "(c2cdca9)" in readme
