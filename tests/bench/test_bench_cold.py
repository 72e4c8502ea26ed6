"""``dispatchlab bench --cold``: each family's first run on an empty compile cache (issue 46).

The measuring is checked on children whose figures are known (memory they fill, time they
sleep, a failure); the real cold runs compile for seconds each and are marked slow.
"""

from __future__ import annotations

import json
import math

import pytest

from dispatchlab.bench import cold
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError


def test_a_child_s_own_time_and_peak_memory_are_measured(monkeypatch) -> None:
    monkeypatch.setattr(cold, "_CHILD", "import time\nblock = bytearray(300 * 2**20)\n"
                        "block[::4096] = b'x' * len(block[::4096])\ntime.sleep(0.5)\n"
                        "# {servers} {dispatchers} {policy} {slots}\n")
    row = cold.cold_run("classical")
    assert "error" not in row, row
    assert 300 <= row["peak_mb"] < 600, row
    assert row["wall_seconds"] >= 0.5 and row["cpu_seconds"] < row["wall_seconds"], row
    assert row["family"] == "classical" and row["policy"] == "jsq" and row["processor"]


def test_a_failing_run_says_its_last_line(monkeypatch) -> None:
    monkeypatch.setattr(cold, "_CHILD", "raise SystemExit('no compiler here')  # {servers}"
                        "{dispatchers}{policy}{slots}\n")
    assert cold.cold_run("lsq")["error"] == "no compiler here"


def test_a_run_past_its_time_is_stopped(monkeypatch) -> None:
    monkeypatch.setattr(cold, "_CHILD", "import time; time.sleep(60)  # {servers}"
                        "{dispatchers}{policy}{slots}\n")
    row = cold.cold_run("jbt", timeout=0.5)
    assert row["wall_seconds"] < 10 and row["error"].startswith("exit status"), row
    assert math.isnan(row["peak_mb"])  # it never said


def test_an_unknown_family_is_one_line(capsys) -> None:
    with pytest.raises(ValidationError, match="family"):
        cold.cold_rows(["led-push", "nope"])
    assert main(["bench", "--cold", "--family", "nope"]) == 2
    err = capsys.readouterr().err
    assert "family" in err and "classical" in err and "Traceback" not in err
    assert main(["bench", "--cold", "--scaling"]) == 2


def test_the_continuous_family_runs_the_event_engine(monkeypatch) -> None:
    """Its child's own code (run here, on the warm cache: the cold run is slow below), and
    a row that counts jobs, not slots."""
    namespace: dict = {}
    exec(cold._CONTINUOUS_CHILD.format(servers=cold.CONTINUOUS_SERVERS, policy="jsq",  # noqa: S102
                                       dispatchers=cold.DISPATCHERS, jobs=cold.JOBS), namespace)
    result = namespace["result"]
    assert result.jobs == cold.JOBS and result.dispatchers == cold.DISPATCHERS
    assert result.load == pytest.approx(0.9) and result.stability != "unstable"
    monkeypatch.setattr(cold, "_CONTINUOUS_CHILD", "# {servers}{dispatchers}{policy}{jobs}\n")
    row = cold.cold_run("continuous")
    assert row["jobs"] == cold.JOBS and "slots" not in row and "error" not in row, row


@pytest.mark.slow
def test_every_family_runs_cold(capsys) -> None:
    assert main(["bench", "--cold", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["family"] for row in rows] == list(cold.FAMILIES)
    for row in rows:
        assert "error" not in row, row
        assert 0 < row["wall_seconds"] < 120 and 0 < row["peak_mb"] < 2048, row
