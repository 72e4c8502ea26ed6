"""Ctrl-C within a second whatever a policy's per-slot cost (issue 48).

The slot loop runs in chunks and checks for a stop between two; the first chunk was sized
from a cost model (2¹⁷ units of work over N + M), so a user policy that takes a
millisecond a choice held Ctrl-C for a minute and more. The first chunk is now a few
slots and the measured time sizes the next.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from processes import loop_compiled, wait_for_cpu
from sigint import default_sigint

SLOW_POLICY = '''
import numpy as np
from dispatchlab.engine.interface import choose_function
from dispatchlab.policies.base import Kernel, Policy, register


@choose_function
def _slow_choose(m, jobs, slot, memory, ctx):
    total = 0.0
    for i in range(memory.int_params[0]):  # about a millisecond of work a choice
        total += np.sqrt(i + 1.0)
    return np.int64(0) if total < 0 else np.int64(slot.t % slot.Q.size)


@register
class SlowRoundRobin(Policy):
    """Round robin on the slot number, taking its time."""

    name = "slow-rr"
    summary = "Round robin by slot, a millisecond a choice."

    def kernel(self, system):
        return Kernel(_slow_choose, int_params=np.array([1_000_000], np.int64))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a process group")
def test_ctrl_c_stops_a_run_of_a_slow_policy_within_a_second(tmp_path: Path) -> None:
    (tmp_path / "slow_policy.py").write_text(SLOW_POLICY, encoding="utf-8")
    loop_compiled("2x0.5", "rr", dispatchers=1)
    code = "import sys; from dispatchlab.cli import entry_point; entry_point()"
    child = subprocess.Popen(
        [sys.executable, "-c", code, "run", "--import", "slow_policy.py", "--policy",
         "slow-rr", "--servers", "2x0.5", "--dispatchers", "1", "--slots", "10000000",
         "--yes"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=default_sigint)
    try:
        # the loop loaded, the policy compiled (~0.5 s) and running (1.5 s of CPU then; it
        # slept 6 s, burning them)
        wait_for_cpu(child.pid, 3.0)
        assert child.poll() is None, child.communicate()
        sent = time.monotonic()
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=120)
        waited = time.monotonic() - sent
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, err
    assert "interrupted at slot " in err and "(slow-rr)" in err, err
    assert waited < 1.5, f"Ctrl-C took {waited:.1f} s"
