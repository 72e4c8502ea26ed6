"""A user's policy is checked, not trusted (issue 48): it runs with numba's bounds checking,
so an index outside an array stops its run with one line, and the conformance kit reports
it, and a server outside 0 … N − 1, as a failed check.

A policy writing ``slot.Q[slot.Q.size + 3]`` had run to a table with exit 0 (memory written
over), and ``check_policy`` had said "conforms" before the process died of a segmentation
fault. The policies live in a module of the test's own, run in processes of their own (so
this process's registry never holds them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

POLICIES = '''
import numpy as np
from dispatchlab.engine.interface import choose_function
from dispatchlab.policies.base import Kernel, Policy, register


@choose_function
def _writes_past_q(m, jobs, slot, memory, ctx):
    slot.Q[slot.Q.size + 3] = 7
    return np.int64(0)


@choose_function
def _reads_past_mu(m, jobs, slot, memory, ctx):
    return np.int64(0) if slot.mu[slot.mu.size] > 2.0 else np.int64(0)


@choose_function
def _beyond_the_servers(m, jobs, slot, memory, ctx):
    return np.int64(slot.Q.size + 2)


def _policy(name, title, choose):
    def kernel(self, system):
        return Kernel(choose)

    return register(type(title, (Policy,), {
        "__doc__": "A broken policy of the test.", "__module__": __name__, "name": name,
        "summary": "broken on purpose", "kernel": kernel}))


WritesPastQ = _policy("writes-past-q", "WritesPastQ", _writes_past_q)
ReadsPastMu = _policy("reads-past-mu", "ReadsPastMu", _reads_past_mu)
BeyondTheServers = _policy("beyond-the-servers", "BeyondTheServers", _beyond_the_servers)
'''

REPORTS = '''
import json, sys
sys.path.insert(0, ".")
import broken
from dispatchlab.testing import check_policy
from dispatchlab.testing.conformance import ConformanceError

out = {}
for cls in (broken.WritesPastQ, broken.ReadsPastMu, broken.BeyondTheServers):
    report = check_policy(cls, strict=False, checks=("conservation", "little"), examples=1)
    out[cls.name] = [[c.name, c.status, c.detail] for c in report.checks]
try:
    check_policy(broken.WritesPastQ, checks=("conservation",), examples=1)
except ConformanceError as error:
    out["strict"] = str(error)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("checked")
    (where / "broken.py").write_text(POLICIES, encoding="utf-8")
    return where


def test_a_run_that_indexes_outside_stops_with_one_line(folder: Path) -> None:
    code = "import sys; from dispatchlab.cli import entry_point; entry_point()"
    done = subprocess.run([sys.executable, "-c", code, "run", "--import", "broken.py",
                           "--policy", "writes-past-q", "--servers", "2x0.5", "--slots",
                           "10000"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # (a segmentation fault is -11)
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: policy writes-past-q: IndexError (index is out of bounds) in "
                      "slots 0 … 7: it reads or writes outside its arrays (a user policy "
                      "runs with bounds checking)"], done.stderr
    assert "Traceback" not in done.stderr


def test_the_kit_reports_each_broken_policy_as_failed_checks(folder: Path) -> None:
    done = subprocess.run([sys.executable, "-c", REPORTS], cwd=folder, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for name in ("writes-past-q", "reads-past-mu"):
        for check, status, detail in found[name]:
            assert status == "failed", (name, check)
            assert f"policy {name}: IndexError (index is out of bounds)" in detail
    for _, status, detail in found["beyond-the-servers"]:
        assert status == "failed" and "choose returned server " in detail, detail
        assert ", not in 0 … N − 1 = " in detail
    assert found["strict"].startswith("WritesPastQ: FAILS"), found["strict"]
    assert "IndexError" in found["strict"]


def test_built_in_policies_run_unchecked_and_a_user_s_checked() -> None:
    from dispatchlab.engine.adapter import bounds_checked
    from dispatchlab.model import System
    from dispatchlab.policies import make_policy
    from dispatchlab.policies.led.choose import custom_choose
    from dispatchlab.policies.led.strategies import l_jsq_pick

    system = System.build("4x0.5", load=0.5)
    for name in ("jsq", "pod", "l-jsq-push", "jiq"):
        assert not bounds_checked(make_policy(name).kernel(system).choose), name
    assert bounds_checked(custom_choose(l_jsq_pick))  # (a user's rule, inlined)
