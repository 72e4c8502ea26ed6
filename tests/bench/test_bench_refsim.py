"""``bench`` and the reference program it runs (issue 25, item 9): every failure of refsim is
one ``error: refsim: …`` line with exit status 2, before any row is printed.

A relative ``--refsim ./fake.sh`` was "No such file" (looked up on PATH); garbage output a
JSONDecodeError traceback; exit 3 or SIGSEGV a CalledProcessError traceback; a refsim
that sleeps hung the bench. The programs here are shell scripts in a scratch folder.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dispatchlab.bench.programs import MAX_OUTPUT, json_line, run_program
from dispatchlab.bench.workloads import REFSIM_ENV, refsim_timeout
from dispatchlab.cli import main
from dispatchlab.core.errors import ValidationError

GOOD = '{"slots_per_s": 1000000, "mean_sum_q": 361.0, "messages_per_arrival": 2.0}'

PROGRAMS = {
    "ok.sh": f"echo '{GOOD}'",
    "garbage.sh": "echo hello",
    "silent.sh": "true",
    "exit3.sh": "echo oops >&2; exit 3",
    "segv.sh": "kill -SEGV $$",
    "sleeps.sh": "sleep 100",
    "leaves_a_child.sh": "sleep 100 & sleep 100",
    "zero_speed.sh": 'echo \'{"slots_per_s": 0, "mean_sum_q": 1, "messages_per_arrival": 1}\'',
    "nan.sh": 'echo \'{"slots_per_s": 1, "mean_sum_q": NaN, "messages_per_arrival": 1}\'',
    "string.sh": 'echo \'{"slots_per_s": "fast", "mean_sum_q": 1, "messages_per_arrival": 1}\'',
    "missing.sh": 'echo \'{"slots_per_s": 5}\'',
    "list.sh": "echo '[1, 2]'",
    "deep.sh": "python3 -c \"print('[' * 100000 + ']' * 100000)\"",
    "floods.sh": "exec yes",
    "bool.sh": 'echo \'{"slots_per_s": true, "mean_sum_q": 1, "messages_per_arrival": 1}\'',
}


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, body in PROGRAMS.items():
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        path.chmod(0o755)
    (tmp_path / "not_executable.bin").write_text("data\n", encoding="utf-8")
    (tmp_path / "bad_elf").write_bytes(b"\x7fELF garbage")
    (tmp_path / "bad_elf").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(REFSIM_ENV, raising=False)
    return tmp_path


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["bench", "--slots", "1000", "--workload", "pod2", "--json", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("program,says", [
    ("garbage.sh", "printed no JSON line (its last line: 'hello')"),
    ("silent.sh", "printed no JSON line (its last line: '')"),
    ("exit3.sh", "exited with status 3; its last words: 'oops'"),
    ("segv.sh", "was killed by SIGSEGV"),
    ("zero_speed.sh", "no positive finite number 'slots_per_s' (got 0)"),
    ("nan.sh", "no finite number 'mean_sum_q' (got nan)"),
    ("string.sh", "'slots_per_s' (got 'fast')"),
    ("bool.sh", "'slots_per_s' (got True)"),
    ("missing.sh", "no finite number 'mean_sum_q' (got None)"),
    ("list.sh", "printed no JSON line"),
    ("deep.sh", "printed no JSON line"),
    ("floods.sh", f"wrote more than {MAX_OUTPUT // 2**20} MB"),
    ("not_executable.bin", "is neither a .c source nor executable"),
    ("bad_elf", "cannot run refsim on workload pod2"),
])
def test_a_failing_refsim_is_one_error_line_before_any_row(
        programs: Path, capsys: pytest.CaptureFixture[str], program: str, says: str) -> None:
    code, out, err = bench(capsys, "--refsim", f"./{program}", "--refsim-timeout", "20")
    assert code == 2 and out == "", out
    assert err.startswith("error: refsim: ") and err.count("\n") == 1, err
    assert says in err, err


@pytest.mark.parametrize("program", ["sleeps.sh", "leaves_a_child.sh"])
def test_a_hanging_refsim_is_stopped_at_its_timeout(programs: Path, program: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code, out, err = bench(capsys, "--refsim", program, "--refsim-timeout", "1")
    assert time.monotonic() - started < 30
    assert code == 2 and out == ""
    assert err.startswith("error: refsim: ") and "did not finish within 1 s" in err, err


def test_a_relative_refsim_path_runs(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for given in ("./ok.sh", "ok.sh"):  # not looked up on PATH
        code, out, err = bench(capsys, "--refsim", given)
        assert code == 0, err
        (row,) = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert row["refsim_slots_per_second"] == 1_000_000
        assert row["refsim_mean_total_queue"] == 361.0


def test_the_variable_naming_nothing_or_a_folder_is_one_line(
        programs: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for value, says in (("/nonexistent", "no such file: /nonexistent (given by "
                                         f"${REFSIM_ENV})"),
                        (str(programs), "is not a file")):
        monkeypatch.setenv(REFSIM_ENV, value)
        code, out, err = bench(capsys)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith("error: refsim: ") and says in err, err
    monkeypatch.setenv(REFSIM_ENV, "./ok.sh")  # relative to the current directory
    assert bench(capsys)[0] == 0


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_refsim_timeout_must_be_seconds(programs: Path, capsys: pytest.CaptureFixture[str],
                                        value: str) -> None:
    code, out, err = bench(capsys, "--refsim", "ok.sh", "--refsim-timeout", value)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(("error: refsim_timeout: ", "error: refsim-timeout: ",
                           "error: refsim_timeout")), err


def test_run_program_kills_what_the_program_left_behind(tmp_path: Path) -> None:
    marker = tmp_path / "child-alive"
    script = tmp_path / "parent.sh"
    script.write_text(f"#!/bin/sh\n(sleep 0.5; touch {marker}) &\necho done\n",
                      encoding="utf-8")
    script.chmod(0o755)
    assert run_program([script], field="x", what="x", timeout=10).strip() == "done"
    time.sleep(1.5)  # a child left alive would have touched the marker by now
    assert not marker.exists()


def test_json_line_takes_the_last_line() -> None:
    assert json_line(f"compiling…\n{GOOD}\n\n", ("slots_per_s",), field="f",
                     what="w")["mean_sum_q"] == 361.0
    with pytest.raises(ValidationError):
        json_line("", ("slots_per_s",), field="f", what="w")


def test_the_default_timeout_grows_with_the_slots() -> None:
    assert refsim_timeout(1000) < refsim_timeout(10**9) and refsim_timeout(5, 2.5) == 2.5
    assert os.path.isabs(str(Path("x").absolute()))
