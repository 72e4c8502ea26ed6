"""The cold first run of each policy family: what a new user waits for, and in how much memory.

Each family's run is a fresh interpreter on an empty numba cache (``NUMBA_CACHE_DIR``, a
temporary folder), so everything it needs compiles: the slot loop, the arrival and service
steps, the policy's ``choose`` and hooks, with a compile helper beside it as a user's run
has one (engine.compile_helper); the continuous-time family's, the event loop (10,000 jobs
for the slots). Measured: the wall time of the whole process (start-up,
import, compiling, a 1,000-slot run), its CPU time (the child's own ``wait4`` figures, plus
the helper's) and its peak resident memory (which the child reports as it ends, plus the
helper's peak: the two high-water marks summed, an upper bound of what the two held at
once). One family at a time: they share nothing, and two at once would measure each
other.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from dispatchlab.core.errors import require

#: family -> (the policy its run uses, what the family holds)
FAMILIES: dict[str, tuple[str, str]] = {
    "classical": ("jsq", "random, round robin, JSQ, JSED, power-of-d"),
    "led-push": ("l-jsq-push", "LED with push updates (L-JSQ on min trees)"),
    "led-pull": ("l-jba-pull", "LED with pull updates (L-JBA from the kept sum)"),
    "lsq": ("lsq", "LSQ: L-JSQ on min trees, the estimate incremented at dispatch"),
    "jbt": ("jbt", "JBT-r and JIQ (pull-based thresholds)"),
    "scd": ("scd", "SCD and TWF (full information, coordinated)"),
    "pi": ("pi-jsq", "the periodic framework Π"),
    "continuous": ("jsq", "continuous time: the event engine (FIFO servers, exponential "
                          "sizes)"),
}
#: the system every family's run uses: N = 100 (the min trees and block minima are in use)
SERVERS = "50x0.3,50x0.6"
DISPATCHERS = 10
SLOTS = 1_000
_CHILD = (
    "import json\n"
    "import dispatchlab as dl\n"
    "system = dl.System.build({servers!r}, load=0.9, dispatchers={dispatchers})\n"
    "dl.simulate(system, {policy!r}, slots={slots}, seed=1)\n"
    "try:  # (a tree from before the compile helper has none)\n"
    "    from dispatchlab.engine.compile_helper import last_helper\n"
    "except ImportError:\n"
    "    last_helper = {{}}\n"
    "print('helper', json.dumps(last_helper))\n"
)
#: the continuous-time family's run: the same servers as speeds, jobs for slots (the event
#: loop compiles beside the main thread; it has no compile helper)
CONTINUOUS_SERVERS = "50x1,50x2"
JOBS = 10_000
_CONTINUOUS_CHILD = (
    "from dispatchlab.continuous import simulate_continuous\n"
    "result = simulate_continuous({servers!r}, {policy!r}, load=0.9, "
    "dispatchers={dispatchers}, "
    "jobs={jobs}, seed=1, workers=1)\n"
)
#: appended to the child's code: its own peak resident memory, as its last line of output.
#: Linux's VmHWM is the high-water mark of the process's memory since its exec; its
#: ru_maxrss also holds what it had before the exec, i.e. the parent's pages a fork shares
#: (an xdist worker's 700 MB)
_REPORT_PEAK = (
    "\nimport sys as _sys\n"
    "try:\n"
    "    _peak = next(int(_line.split()[1]) for _line in open('/proc/self/status')\n"
    "                 if _line.startswith('VmHWM:'))\n"
    "except (OSError, StopIteration):\n"
    "    import resource as _resource\n"
    "    _peak = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss\n"
    "    _peak //= 1024 if _sys.platform == 'darwin' else 1\n"
    "print('peak_kb', _peak)\n"
)


def cold_run(family: str, *, timeout: float = 900.0) -> dict[str, Any]:
    """One cold first run of ``family``: wall and CPU seconds, peak resident MB."""
    from dispatchlab.bench.machine import processor
    from dispatchlab.engine.compile_helper import SWITCH

    require(family in FAMILIES, "family", f"one of {', '.join(FAMILIES)} (got {family!r})")
    policy, _ = FAMILIES[family]
    if family == "continuous":
        servers, budget = CONTINUOUS_SERVERS, {"jobs": JOBS}
        code = _CONTINUOUS_CHILD.format(servers=servers, dispatchers=DISPATCHERS,
                                        policy=policy, jobs=JOBS)
    else:
        servers, budget = SERVERS, {"slots": SLOTS}
        code = _CHILD.format(servers=servers, dispatchers=DISPATCHERS, policy=policy,
                             slots=SLOTS)
    code += _REPORT_PEAK
    with (tempfile.TemporaryDirectory(prefix="dispatchlab-cold-") as cache,
          tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err):
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        env.pop(SWITCH, None)  # as a user's run: with its compile helper
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", code], env=env,
                                 stdout=out, stderr=err)
        timer = threading.Timer(timeout, child.kill)
        timer.start()
        try:
            # the child's own figures (RUSAGE_CHILDREN would hold the peak of every child)
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            child.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        out.seek(0)
        lines = err.read().strip().splitlines()
        output = out.read().splitlines()
        peak_kb = next((int(line.split()[1]) for line in reversed(output)
                        if line.startswith("peak_kb ")), None)
        helper = next((json.loads(line.split(" ", 1)[1]) for line in reversed(output)
                       if line.startswith("helper ")), {})
    helper_mb = helper.get("peak_kb", 0) / 1024
    helper_cpu = helper.get("cpu_seconds", 0.0)
    row: dict[str, Any] = {
        "family": family, "policy": policy, "servers": servers, "dispatchers": DISPATCHERS,
        **budget, "wall_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime + helper_cpu,
        "peak_mb": math.nan if peak_kb is None else peak_kb / 1024 + helper_mb,
        "helper_cpu_seconds": helper_cpu, "helper_peak_mb": helper_mb,
        "processor": processor(),
    }
    if child.returncode != 0:
        row["error"] = lines[-1] if lines else f"exit status {child.returncode}"
    return row


def cold_rows(families: Sequence[str] | None = None,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """The cold run of each of ``families`` (default all), one after the other."""
    names = list(families or FAMILIES)
    for name in names:
        require(name in FAMILIES, "family", f"one of {', '.join(FAMILIES)} (got {name!r})")
    rows = []
    for name in names:
        row = cold_run(name)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def comparison_table(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of two sets of cold runs, family by family (benchmarks/README.md
    shows the committed ones)."""
    now = {row["family"]: row for row in after}
    lines = ["| family (policy) | before: wall s | peak MB | after: wall s | peak MB |",
             "|---|---|---|---|---|"]
    for row in before:
        new = now[row["family"]]
        lines.append(f"| {row['family']} ({row['policy']}) | {row['wall_seconds']:.1f} | "
                     f"{row['peak_mb']:,.0f} | {new['wall_seconds']:.1f} | "
                     f"{new['peak_mb']:,.0f} |")
    return "\n".join(lines) + "\n"


def cold_table(rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of one set of cold runs (benchmarks/README.md shows the committed
    ones)."""
    lines = ["| family (policy) | wall s | CPU s | peak MB |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['family']} ({row['policy']}) | {row['wall_seconds']:.1f} | "
                     f"{row['cpu_seconds']:.1f} | {row['peak_mb']:,.0f} |")
    return "\n".join(lines) + "\n"
