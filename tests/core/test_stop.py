"""Safe and stoppable runs (issue 10): the checked seam, invariants that raise, the chunked
loop (bit-identical to one chunk), Ctrl-C, progress, the memory guard."""

from __future__ import annotations

import dataclasses
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.cli import main
from dispatchlab.core.errors import PolicyError, SimulationError, ValidationError
from dispatchlab.core.ram import format_bytes, require_memory
from dispatchlab.engine.control import ChunkSizer, Progress, format_seconds, progress_to
from dispatchlab.engine.interface import Kernel, choose_function, hook_function
from dispatchlab.engine.raw import default_bound, run_once
from dispatchlab.policies import make_policy
from dispatchlab.policies.base import Policy, policy_names, register
from sigint import default_sigint

# -- deliberately broken policies --------------------------------------------------------------


@choose_function
def _choose_n(m, jobs, slot, memory, ctx):
    return slot.Q.size  # one past the last server


@choose_function
def _choose_minus_one(m, jobs, slot, memory, ctx):
    return -1 if slot.t >= 3 else 0


@choose_function
def _choose_first(m, jobs, slot, memory, ctx):
    return 0


@hook_function
def _add_a_job(slot, step, memory, ctx):
    slot.Q[0] += 1  # creates a job the loop never saw arrive


@hook_function
def _empty_the_queues(slot, step, memory, ctx):
    for n in range(slot.Q.size):
        slot.Q[n] = 0  # ΣQ drops below the pooled queue q


class _Broken(Policy):
    summary = "a deliberately broken policy (tests only)"
    flavour = "n"

    def kernel(self, system: System) -> Kernel:
        if self.flavour == "n":
            return Kernel(_choose_n)
        if self.flavour == "minus-one":
            return Kernel(_choose_minus_one)
        if self.flavour == "adds-jobs":
            return Kernel(_choose_first, end_slot=_add_a_job)
        return Kernel(_choose_first, end_slot=_empty_the_queues)


def _broken(flavour: str) -> type[Policy]:
    name = f"test-broken-{flavour}"
    cls = type(f"Broken_{flavour}", (_Broken,), {"name": name, "flavour": flavour})
    if name not in policy_names():  # registration survives between tests in one process
        register(cls)
    return cls


SYSTEM = System.build([0.5, 0.3, 0.2], load=0.8, dispatchers=2)


@pytest.mark.parametrize(("flavour", "server"), [("n", "3"), ("minus-one", "-1")])
def test_choose_out_of_range_raises_policy_error(flavour: str, server: str) -> None:
    with pytest.raises(PolicyError) as caught:
        simulate(SYSTEM, _broken(flavour)(), slots=1000, seed=1)
    message = str(caught.value)
    assert message.startswith(f"policy test-broken-{flavour}: choose returned server {server},")
    assert "0 … N − 1 = 2" in message


@pytest.mark.parametrize(("flavour", "words"), [("adds-jobs", "jobs not conserved"),
                                                ("empties", "ΣQ < q")])
def test_broken_invariants_raise(flavour: str, words: str) -> None:
    with pytest.raises(SimulationError, match=words):
        simulate(SYSTEM, _broken(flavour)(), slots=2000, seed=1)


@pytest.mark.parametrize("flavour", ["n", "minus-one", "empties"])
def test_cli_reports_a_broken_policy_in_one_line(flavour: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _broken(flavour)
    status = main(["run", "--policy", f"test-broken-{flavour}", "--servers", "3x0.5",
                   "--slots", "1000", "--json"])
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


# -- chunked = one chunk, bit for bit ----------------------------------------------------------


CHUNKED_CASES = [
    ("jsq", {}, "bernoulli", "batch", True),
    ("pod", {"d": 2}, "bernoulli", "per_job", True),
    ("l-jsq-push", {}, "bernoulli", "batch", True),
    ("pi-jsq", {"T": 7}, "bernoulli", "batch", False),
    ("jiq", {}, "poisson", "batch", True),
    ("wrand", {}, "geometric", "per_job", True),
]


@pytest.mark.parametrize(("name", "params", "service", "dispatch", "time_every_job"), CHUNKED_CASES)
def test_chunked_run_is_bit_identical(name, params, service, dispatch, time_every_job) -> None:
    """Chunks of 1, 37 and 1000 slots (the warm-up, slot 450, falls inside a chunk; the
    FIFOs grow at high load: one to four times in each timed case's 2,000 slots, counted)
    give exactly the accumulators of one chunk."""
    system = System.build([0.9, 0.5, 0.3, 0.3], load=0.97, dispatchers=3, service=service,
                          dispatch=dispatch)
    kernel = make_policy(name, **params).kernel(system)
    runs = [run_once(system, kernel, slots=2000, warmup=450, seed=11,
                     bound=default_bound(system), time_every_job=time_every_job, chunk=chunk)
            for chunk in (2000, 1, 37, 1000)]
    reference = dataclasses.asdict(runs[0])
    assert runs[0].measured_slots == 1550
    for run in runs[1:]:
        for key, value in dataclasses.asdict(run).items():
            if key != "seconds":
                np.testing.assert_array_equal(value, reference[key], err_msg=key)


def test_chunked_run_stops_at_the_bound_in_the_same_slot() -> None:
    system = System.build([0.5, 0.5], load=0.99, dispatchers=1)
    kernel = make_policy("wrand").kernel(system)
    runs = [run_once(system, kernel, slots=50_000, warmup=0, seed=3, bound=40, chunk=chunk)
            for chunk in (50_000, 7)]
    assert runs[0].hit_bound and runs[1].hit_bound
    assert runs[0].slots_run == runs[1].slots_run < 50_000
    np.testing.assert_array_equal(runs[0].final_queues, runs[1].final_queues)


def test_chunk_sizer_aims_at_the_chunk_time() -> None:
    sizer = ChunkSizer()
    assert sizer.size == 8  # whatever a slot costs: a slow policy's Ctrl-C waits little
    sizer.record(8, 0.0001)  # very fast: grows, but at most 8× per chunk
    assert sizer.size == 8 * 8
    sizer.record(64, 0.0001)
    assert sizer.size == 8 * 64
    sizer.record(512, 2.0)  # slow: shrinks to about 0.2 s of work
    assert sizer.size == 51


# -- progress and Ctrl-C -----------------------------------------------------------------------


def test_progress_reports_slot_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr("dispatchlab.engine.control.PROGRESS_AFTER_SECONDS", 0.0)
    with progress_to(Progress(lines.append, runs=2, interval=0.0)):
        simulate(SYSTEM, "jsq", slots=20_000, seed=1, replications=2, workers=1)
    assert lines, "no progress reported"
    assert lines[0].startswith("run 1/2: slot ") and "ETA" in lines[0]
    assert lines[-1].startswith("run 2/2: slot ")
    assert format_seconds(65) == "1 min 05 s" and format_seconds(float("inf")) == "unknown"


def test_no_progress_without_a_reporter_or_when_short() -> None:
    lines: list[str] = []
    with progress_to(Progress(lines.append)):
        simulate(SYSTEM, "jsq", slots=2000, seed=1)  # well under 2 s
    assert lines == []


def _start_run(*args: str, stderr: int) -> subprocess.Popen[str]:
    """``dispatchlab run ARGS`` (with ``--yes`` where the work-size guard asks for it)."""
    cli = Path(sys.executable).with_name("dispatchlab")
    help_text = subprocess.run([cli, "run", "--help"], capture_output=True, text=True,
                               env={**os.environ, "COLUMNS": "300"}).stdout
    extra = ["--yes"] if "--yes" in help_text else []
    return subprocess.Popen([cli, "run", *args, *extra], stdout=subprocess.PIPE,
                            stderr=stderr, text=True, env={**os.environ, "COLUMNS": "200"},
                            preexec_fn=default_sigint)


def _read_until(fd: int, marker: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
    return seen


@pytest.mark.parametrize("json_", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_ctrl_c_stops_a_huge_run_within_a_second(json_: bool) -> None:
    """``run --slots 10**12`` with stdout piped and stderr on a terminal: progress with an
    ETA on stderr after 2 s; SIGINT then stops it within a second, exit status 130, with
    "interrupted at slot t of T" and no traceback."""
    leader, follower = pty.openpty()
    child = _start_run("--policy", "jsq", "--slots", str(10**12), "--delay", "off",
                       *(["--json"] if json_ else []), stderr=follower)
    os.close(follower)
    try:
        shown = _read_until(leader, b"ETA", timeout=120)
        assert b"slot " in shown and b"of 1,000,000,000,000" in shown, shown[-500:]
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
        waited = time.perf_counter() - sent
        err = _read_until(leader, b"(jsq)", timeout=5).decode(errors="replace")
    finally:
        child.kill()
        os.close(leader)
    assert child.returncode == 130, err
    assert waited < 1.0, f"took {waited:.2f} s to stop"
    assert out == ""
    assert "Traceback" not in err
    assert re.search(r"interrupted at slot [\d,]+ of 1,000,000,000,000 \(jsq\)", err), err


def test_nothing_on_a_piped_stderr() -> None:
    """Piped stderr: no spinner, no progress lines, only the result on stdout."""
    child = _start_run("--policy", "jsq", "--slots", "3000", "--json", stderr=subprocess.PIPE)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and err == ""
    assert out.startswith("{")


def test_api_interrupt_is_a_keyboard_interrupt_at_a_slot_boundary() -> None:
    """The API raises RunInterrupted (a KeyboardInterrupt) between two chunks."""
    code = (
        "import os, signal, threading\n"
        "from dispatchlab import System, simulate\n"
        "from dispatchlab.engine.control import RunInterrupted\n"
        "s = System.build([0.5, 0.5], load=0.9)\n"
        "simulate(s, 'jsq', slots=2000, seed=1)\n"
        "threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    simulate(s, 'jsq', slots=10**12, seed=1, delay='off')\n"
        "except RunInterrupted as e:\n"
        "    assert isinstance(e, KeyboardInterrupt) and 0 < e.slot < e.slots\n"
        "    print('stopped', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, preexec_fn=default_sigint)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("stopped interrupted at slot ")


# -- the memory guard --------------------------------------------------------------------------


def test_memory_guard_refuses_with_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPATCHLAB_MEMORY_LIMIT", "1G")
    require_memory("x", 2**29, "half a gibibyte")  # fits
    with pytest.raises(ValidationError, match=r"^x: two GB needs about 2 GB of memory, more "
                       r"than the 1 GB"):
        require_memory("x", 2 * 2**30, "two GB")
    assert format_bytes(512) == "512 B" and format_bytes(7.45 * 2**30) == "7.45 GB"


@pytest.mark.parametrize(("args", "field"), [
    (["--servers", "100000x0.5", "--dispatchers", "10000", "--policy", "l-jsq-push"],
     "dispatchers"),
    (["--servers", "4x0.5", "--policy", "pi-jsq", "--set", "T=1000000000000"],
     "pi-framework.T"),
])
def test_huge_policy_memory_is_one_error_line(args: list[str], field: str,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPATCHLAB_MEMORY_LIMIT", "2G")  # LED needs 15 GB, π 16 TB
    status = main(["run", *args, "--slots", "1000"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.startswith(f"error: {field}: ") and "needs about" in err, err
    assert err.count("\n") == 1


# -- verdicts of short runs -------------------------------------------------------------------


def _verdict(series: np.ndarray, relaxation: float = 0.0):
    from dispatchlab.stats.run_stability import stability_verdict

    return stability_verdict(series, 10, hit_bound=False, bound=10**6, slots_run=10 * series.size,
                             overloaded=False, relaxation_slots=relaxation)


def test_a_stable_system_still_filling_up_is_undetermined_not_unstable() -> None:
    t = np.arange(200) * 10.0
    rng = np.random.default_rng(0)
    filling = 2000 * (1 - np.exp(-t / 600)) + rng.normal(0, 5, t.size)
    verdict = _verdict(filling)
    assert verdict.verdict == "undetermined" and "run longer" in verdict.evidence
    assert "still relaxing" in verdict.evidence


@pytest.mark.parametrize("growth", [lambda t: 3.0 * t, lambda t: 40 * np.sqrt(t)])
def test_linear_and_square_root_growth_stay_unstable(growth) -> None:
    t = np.arange(200) * 10.0 + 10
    assert _verdict(growth(t)).verdict == "unstable"


def test_a_window_shorter_than_the_relaxation_time_is_undetermined() -> None:
    t = np.arange(200) * 10.0
    verdict = _verdict(3.0 * t, relaxation=10**5)
    assert verdict.verdict == "undetermined" and "relaxation time" in verdict.evidence


def test_short_led_run_reads_undetermined_and_a_really_unstable_one_unstable() -> None:
    system = System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    led = simulate(system, "l-jsq-push", policy_params={"p": 1}, slots=2000, seed=0)
    assert led.stability == "undetermined" and "run longer" in led.stability_evidence
    rr = simulate(system, "rr", slots=2000, seed=0)  # unweighted: the slow servers overflow
    assert rr.stability == "unstable"


def test_mean_far_below_the_lower_bound_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    # the plain estimate: the coupled one computes E[q] and cannot fall below the bound
    status = main(["run", "--policy", "jsq", "--load", "0.99999999", "--slots", "2000",
                   "--delay", "off", "--estimator", "plain"])
    out = " ".join(capsys.readouterr().out.split())
    assert status == 0
    assert "warning" in out and "lies below the lower bound 7.833e+07" in out
    result = simulate(System.build("50x0.1,50x0.5", load=0.99999999, dispatchers=10), "jsq",
                      slots=2000, seed=0, delay="off", estimator="plain")
    assert result.stability != "stable" and "below the lower bound" in result.stability_evidence


def test_errors_survive_a_worker_process() -> None:
    import pickle

    from dispatchlab.engine.control import RunInterrupted

    error = pickle.loads(pickle.dumps(PolicyError("p", "choose returned server 5")))
    assert str(error) == "policy p: choose returned server 5" and error.policy == "p"
    stop = pickle.loads(pickle.dumps(RunInterrupted(3, 10, "jsq")))
    assert str(stop) == "interrupted at slot 3 of 10 (jsq)" and stop.slot == 3
