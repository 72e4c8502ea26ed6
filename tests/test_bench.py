"""``dispatchlab bench`` end to end on a tiny slot count."""

from __future__ import annotations

import json
import math

import pytest

from dispatchlab.bench import (
    WORKLOAD_NAMES,
    WORKLOADS,
    c_compiler,
    find_refsim_source,
    reference_agreement,
)
from dispatchlab.cli import main

REQUIRED = ("name", "slots_per_second", "jobs_per_second", "slots_per_second_full",
            "mean_total_queue", "ci_low", "ci_high", "messages_per_arrival",
            "reference_mean_total_queue", "reference_agrees")
REFSIM_KEYS = ("refsim_slots_per_second", "speed_ratio", "speed_ratio_full",
               "refsim_mean_total_queue")


def _rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict]:
    assert main(argv) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def test_bench_json_without_refsim(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ["bench", "--slots", "20000", "--no-refsim", "--json"])
    assert [row["name"] for row in rows] == list(WORKLOAD_NAMES)
    ran = [row for row in rows if "skipped" not in row]
    assert {"wrand", "jsq", "pod2"} <= {row["name"] for row in ran}
    for row in ran:
        for key in REQUIRED:
            assert key in row, key
        assert row["slots_per_second"] > 0 and row["slots_per_second_full"] > 0
        assert row["jobs_per_second"] > row["slots_per_second"]  # λ_Σ ≈ 28.5 jobs per slot
        assert row["ci_low"] <= row["mean_total_queue"] <= row["ci_high"]
        assert row["refsim"] == "off"
        assert not any(key in row for key in REFSIM_KEYS)
    for row in rows:
        if "skipped" in row:
            assert row["skipped"] == "policy not registered"
    by_name = {row["name"]: row for row in ran}
    # message accounting of the classical rules is exact per dispatch event
    assert by_name["wrand"]["messages_per_arrival"] == 0.0
    assert by_name["pod2"]["messages_per_arrival"] == pytest.approx(1.322, rel=0.02)
    assert by_name["jsq"]["messages_per_arrival"] == pytest.approx(66.11, rel=0.02)


@pytest.mark.skipif(find_refsim_source() is None or c_compiler() is None,
                    reason="refsim.c or a C compiler is not available")
def test_bench_with_refsim(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ["bench", "--slots", "20000", "--workload", "jsq", "--json"])
    (row,) = rows
    for key in REQUIRED + REFSIM_KEYS:
        assert key in row, key
    assert row["speed_ratio"] == pytest.approx(
        row["slots_per_second"] / row["refsim_slots_per_second"], rel=1e-9)
    # refsim simulates the same model: JSQ's ΣQ is about 361 in both
    assert 300 < row["refsim_mean_total_queue"] < 430
    assert 300 < row["mean_total_queue"] < 430


def test_bench_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--slots", "5000", "--workload", "pod2", "--no-refsim"]) == 0
    err = capsys.readouterr().err
    assert "pod2" in err and "reference" in err


@pytest.mark.parametrize("argv, field", [
    (["--workload", "nope"], "workload"),
    (["--slots", "10"], "slots"),
    (["--repeat", "0"], "repeat"),
    (["--refsim", "/no/such/refsim.c"], "refsim"),
])
def test_bench_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    assert main(["bench", "--no-refsim", *argv] if field != "refsim" else ["bench", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {field}:") and "\n" not in err


def test_reference_agreement_uses_both_uncertainties() -> None:
    jsq = next(w for w in WORKLOADS if w.name == "jsq")
    assert reference_agreement(jsq, 361.2, 360.9, 361.5)
    assert not reference_agreement(jsq, 365.0, 364.5, 365.5)
    assert not reference_agreement(jsq, math.nan, math.nan, math.nan)
