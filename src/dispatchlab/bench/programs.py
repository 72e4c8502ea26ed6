"""External programs the benchmarks run (the C compiler, the reference simulator refsim):
each with a timeout, and each failure as one :class:`ValidationError` line.

A program a user names (``--refsim ./fake.sh``) is run by its absolute path (a relative
one would be looked up on ``PATH``); a non-zero exit, a signal (SIGSEGV), a hang past the
timeout, a file that cannot be executed and output that is not the expected JSON line are
each said in one line naming the program, never as a traceback. What the program printed
is quoted only as its last line, cut to :data:`QUOTED`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dispatchlab.core.errors import ValidationError, require

#: characters of a program's output quoted in an error
QUOTED = 120
#: bytes a program may write to a file (its output, a compiler's binary)
MAX_OUTPUT = 64 * 2**20


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return repr(last if len(last) <= QUOTED else last[:QUOTED] + "…")


def _status(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if name == "SIGXFSZ":
            return f"was stopped: it wrote more than {MAX_OUTPUT // 2**20} MB"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def run_program(argv: Sequence[str | Path], *, field: str, what: str, timeout: float) -> str:
    """Run ``argv`` (its first word made absolute) and return its standard output.

    The program runs in a session of its own: on a timeout (or Ctrl-C here) the whole
    group is killed, so a child it left behind holding the output open cannot keep the
    benchmark waiting. Its output goes to temporary files it may not grow beyond
    :data:`MAX_OUTPUT` bytes (``--refsim /usr/bin/yes`` would fill the memory otherwise)."""
    program = Path(argv[0]).absolute() if "/" in str(argv[0]) else Path(argv[0])
    command = [str(program), *(str(word) for word in argv[1:])]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=err, start_new_session=True,
                                       preexec_fn=_limit_output)
        except OSError as error:
            raise ValidationError(field, f"cannot run {what} ({program}): "
                                  f"{error.strerror or error}") from None
        with process:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                raise ValidationError(field, f"{what} ({program}) did not finish within "
                                      f"{timeout:g} s; it was stopped") from None
            except BaseException:  # Ctrl-C: the program must not outlive the benchmark
                _kill_group(process)
                raise
            _kill_group(process)  # whatever it left running
        stdout, stderr = (_text(stream) for stream in (out, err))
    require(process.returncode == 0, field,
            f"{what} ({program}) {_status(process.returncode)}"
            + (f"; its last words: {_last_line(stderr)}" if stderr.strip() else ""))
    return stdout


def _limit_output() -> None:
    """In the child, before it runs: files it writes (its output) stop at MAX_OUTPUT."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_OUTPUT, MAX_OUTPUT))


def _text(stream: Any) -> str:
    stream.seek(0)
    return stream.read().decode("utf-8", errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and everything it started, and reap it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.wait()


def json_line(output: str, numbers: Sequence[str], *, field: str, what: str) -> dict[str, Any]:
    """The last line of ``output`` as a JSON object whose ``numbers`` are finite numbers
    (the first of them > 0: a speed)."""
    lines = [line for line in output.splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):
        data = None
    require(isinstance(data, dict), field,
            f"{what} printed no JSON line (its last line: {_last_line(output)}); expected "
            f"one object with {', '.join(numbers)}")
    assert isinstance(data, dict)
    for index, key in enumerate(numbers):
        value = data.get(key)
        good = (isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value) and (index > 0 or value > 0))
        require(good, field, f"{what}'s JSON line has no {'positive ' if index == 0 else ''}"
                f"finite number {key!r} (got {value!r})")
    return data
