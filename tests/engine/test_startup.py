"""Start-up cost, checked by its causes rather than timed (timings on a shared machine are
noise; benchmarks/README.md has the measured figures).

``import dispatchlab`` and every ``--help`` load neither numba, nor scipy, nor the policies
(the package facades load names on first use); a run compiles — or loads from numba's
disk cache — only the slot loop and its own policy's functions.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: modules whose import costs tenths of a second to a second of CPU each
HEAVY = ("numba", "scipy", "pandas", "matplotlib", "dask", "dispatchlab.policies",
         "dispatchlab.simulation.run", "dispatchlab.experiments.catalog")

#: what a help page need not load either: numpy, and what typer.rich_utils imports only for
#: Markdown help and pretty tracebacks (cli/rich_help.py)
HELP_HEAVY = ("numpy", "rich.markdown", "rich.traceback", "markdown_it", "pygments")
#: the scipy packages a run need not import (about a second of CPU each, scipy.fft 0.2 s;
#: theory.pmf and theory.roots give their numbers)
#: (the event engine had loaded with every slotted run, for the name of its default policy)
RUN_HEAVY = ("scipy.stats", "scipy.signal", "scipy.optimize", "scipy.fft", "pandas",
             "matplotlib", "dispatchlab.continuous.engine")


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (it must succeed)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _heavy_loaded(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    report = (f"\nimport json, sys\nprint(json.dumps(sorted(m for m in {heavy!r} "
              "if m in sys.modules)))")
    return json.loads(_python(code + report).splitlines()[-1])


def test_import_dispatchlab_loads_nothing_heavy() -> None:
    assert _heavy_loaded("import dispatchlab") == []


HELP_PAGES = [
    ["--help"], ["run", "--help"], ["compare", "--help"], ["check", "--help"],
    ["check", "tilt", "--help"], ["check", "bound", "--help"], ["check", "coverage", "--help"],
    ["check", "exact", "--help"], ["check", "fluid", "--help"], ["experiment", "--help"],
    ["results", "--help"],
    ["bench", "--help"], ["warm", "--help"],
]


def test_help_loads_nothing_heavy() -> None:
    """Every help page, one after another in one interpreter (a module one of them loaded
    would still be loaded at the end)."""
    code = "from dispatchlab.cli import main\n" + "".join(
        f"assert main({args!r}) == 0, {args!r}\n" for args in HELP_PAGES)
    assert _heavy_loaded(code, HEAVY + HELP_HEAVY) == []


def test_help_renders_markdown_and_tracebacks_on_demand() -> None:
    """The stand-ins cli.rich_help leaves in typer.rich_utils load the real classes."""
    _python("from dispatchlab.cli import main\nassert main(['--help']) == 0\n"
            "import sys, typer.rich_utils as r\nassert 'rich.markdown' not in sys.modules\n"
            "assert type(r.Markdown('*x*')).__module__ == 'rich.markdown'\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n"
            "    assert type(r.Traceback.from_exception(type(error), error, None)).__name__"
            " == 'Traceback'\n")


def test_a_slotted_run_loads_no_scipy_stats_signal_optimize_fft_or_event_engine() -> None:
    code = ("from dispatchlab.cli import main\nassert main(['run', '--policy', 'jsq', "
            "'--slots', '2000', '--json']) == 0")
    assert _heavy_loaded(code, RUN_HEAVY) == []


def test_warm_runs_load_no_scipy_special_or_linalg(capsys: pytest.CaptureFixture[str]) -> None:
    """The pooled-queue anchor comes from theory.pmf and numpy's solve, and no cached
    function's environment names numba.np.arraymath (the alias table's sum, used by wrand
    and JBT, had): importing scipy.special or scipy.linalg (scipy's array-API layer,
    numpy.f2py, numpy.testing) was a quarter of a warm run. The runs are first made here,
    so that a compile (numba's compiler set-up imports scipy.linalg) happens in this
    process, then again in a fresh one, which is checked."""
    from dispatchlab.cli import main

    runs = [["run", "--policy", policy, "--servers", "10x0.5", "--slots", "2000", "--json"]
            for policy in ("jsq", "wrand", "jbt")]
    for args in runs:
        assert main(args) == 0
    capsys.readouterr()
    code = "from dispatchlab.cli import main\n" + "".join(f"assert main({args!r}) == 0\n"
                                                         for args in runs)
    assert _heavy_loaded(code, ("scipy.special", "scipy.linalg", "scipy.fft")) == []


def test_a_pool_worker_runs_a_replication_without_the_summary_s_scipy() -> None:
    """A spawned worker imports the script's ``from dispatchlab import simulate`` and runs
    ``plan.run_indexed``; it never summarises, so it loads no scipy.special (0.3 s of CPU at
    each worker's start)."""
    code = ("from dispatchlab import System, simulate\n"
            "from dispatchlab.simulation.plan import plan_run, run_indexed\n"
            "plan = plan_run(System.build('2x0.5', load=0.5), 'jsq', slots=500, seed=1)\n"
            "assert run_indexed((plan.task, None)).slots == 500")
    assert _heavy_loaded(code, ("scipy.special", "dispatchlab.stats.estimators")) == []

def test_the_store_loads_no_policy() -> None:
    assert _heavy_loaded("import dispatchlab.experiments.store") == []


def test_the_facade_gives_the_function_simulate_whatever_was_imported_first() -> None:
    # the module is dispatchlab.simulation.run: importing it first must not shadow the function
    _python("import dispatchlab.simulation.run\nfrom dispatchlab import simulate\n"
            "assert callable(simulate) and simulate.__module__ == 'dispatchlab.simulation.run'\n"
            "import dispatchlab\nassert dispatchlab.simulate is simulate")


def test_every_public_name_resolves() -> None:
    import dispatchlab
    import dispatchlab.experiments

    for package in (dispatchlab, dispatchlab.experiments):
        assert sorted(dir(package)) == sorted(package.__all__)
        for name in package.__all__:
            assert getattr(package, name) is not None, name
    with pytest.raises(AttributeError):
        dispatchlab.no_such_name  # noqa: B018


def test_check_tilt_default_samples_is_the_theory_default() -> None:
    from dispatchlab.cli.check_tilt import DEFAULT_SAMPLES
    from dispatchlab.theory.tilt import MONTE_CARLO_SAMPLES

    assert DEFAULT_SAMPLES == MONTE_CARLO_SAMPLES


COMPILED_BY_A_RUN = """
import sys
from numba.core.dispatcher import Dispatcher
from dispatchlab import System, simulate
from dispatchlab.engine.adapter import _ADAPTERS
simulate(System.build("4x0.3,4x0.6", load=0.5, dispatchers=2), "jsq", slots=50, seed=1)
compiled = {f"{value.py_func.__module__}.{value.py_func.__name__}"
            for name, module in list(sys.modules.items())
            if name.startswith("dispatchlab.")
            for value in list(vars(module).values())
            if isinstance(value, Dispatcher) and value.overloads}
# a policy's choose is compiled inside the loop's adapter for it (engine/adapter.py)
compiled |= {f"{choose.py_func.__module__}.{choose.py_func.__name__}" for choose in _ADAPTERS}
compiled = sorted(compiled)
print(json.dumps(compiled))
"""


def test_a_run_compiles_only_the_loop_and_its_policy() -> None:
    compiled = json.loads(_python("import json" + COMPILED_BY_A_RUN).splitlines()[-1])
    assert "dispatchlab.policies.classic._jsq_choose" in compiled
    assert any(name.startswith("dispatchlab.engine.loop.") for name in compiled)
    shared = ("dispatchlab.engine.", "dispatchlab.compiled.")
    others = [name for name in compiled if not name.startswith(shared)
              and name != "dispatchlab.policies.classic._jsq_choose"]
    assert others == []  # no other policy, no theory Monte Carlo, no statistics helper
    # nor the per-job FIFO of delay="all" (about a fifth of the loop's cold compile)
    assert "dispatchlab.engine.service._serve_bernoulli_fifo" not in compiled


def test_a_run_timing_every_job_compiles_the_fifo_step() -> None:
    script = ("from dispatchlab import System, simulate\n"
              "from dispatchlab.engine import arrivals, observe, service, tags\n"
              "result = simulate(System.build('4x0.3,4x0.6', load=0.5, dispatchers=2), 'jsq',"
              " slots=500, seed=1, delay='all')\n"
              "print(bool(service.bernoulli_fifo.overloads),"
              " hasattr(service.bernoulli_only, 'overloads'),"
              " result.delay_method, result.delay_jobs > 0)")
    assert _python(script).split() == ["True", "False", "all", "True"]


def test_observation_and_ptrs_compile_only_for_the_runs_that_take_them() -> None:
    """The loop's observation step (per-server statistics, a trajectory) and the PTRS draw
    of split-Poisson arrivals (a dispatcher at λ_m ≥ POISSON_TABLE_LIMIT) compile on first
    use: a plain run compiles neither."""
    script = (
        "from dispatchlab import System, simulate\n"
        "from dispatchlab.engine import arrivals, observe, service, tags\n"
        "from dispatchlab.engine.raw import needs_ptrs\n"
        "def compiled():\n"
        "    print(bool(observe.observe_step.overloads), bool(arrivals.ptrs_draw.overloads))\n"
        "small = System.build('4x0.3,4x0.6', load=0.5, dispatchers=2)\n"
        "big = System.build('1500x0.9', load=0.9, dispatchers=2)\n"
        "print(needs_ptrs(small), needs_ptrs(big))\n"
        "simulate(small, 'jsq', slots=50, seed=1)\n"
        "compiled()\n"
        "simulate(small, 'jsq', slots=50, seed=1, per_server=True)\n"
        "compiled()\n"
        "simulate(big, 'jsq', slots=50, seed=1)\n"
        "compiled()\n")
    assert _python(script).split() == ["False", "True", "False", "False", "True", "False",
                                       "True", "True"]


def test_per_job_tagging_compiles_only_for_tagged_per_job_runs() -> None:
    """The tagging of per-job placements is a step of its own, compiled on first use: a
    batch run and an untagged per-job run compile none of it (the batch placement's tagging
    is the loop's one inlined copy)."""
    script = (
        "from dispatchlab import System, simulate\n"
        "from dispatchlab.engine import arrivals, observe, service, tags\n"
        "batch = System.build('4x0.3,4x0.6', load=0.5, dispatchers=2)\n"
        "per_job = System.build('4x0.3,4x0.6', load=0.5, dispatchers=2, dispatch='per_job')\n"
        "simulate(batch, 'jsq', slots=200, seed=1)\n"
        "simulate(per_job, 'jsq', slots=200, seed=1, delay='off')\n"
        "print(bool(tags.tag_one_step.overloads))\n"
        "result = simulate(per_job, 'jsq', slots=2000, seed=1)\n"
        "print(bool(tags.tag_one_step.overloads), result.delay_method, result.delay_jobs > 0)\n")
    assert _python(script).split() == ["False", "True", "tagged", "True"]


def test_warm_compiles_the_on_demand_steps_too() -> None:
    script = ("from dispatchlab.cli import main\n"
              "from dispatchlab.engine import arrivals, observe, service, tags\n"
              "assert main(['warm']) == 0\n"
              "print(bool(observe.observe_step.overloads), bool(arrivals.ptrs_draw.overloads),\n"
              "      bool(tags.tag_one_step.overloads))\n")
    assert _python(script).split()[-3:] == ["True", "True", "True"]


def test_an_absent_step_is_a_first_class_function_that_compiles_nothing() -> None:
    """The steps a run never takes (Bernoulli service without FIFO timing, the other
    arrivals of a split-Poisson run, the hooks a policy lacks) are passed to the loop as
    AbsentStep: typed as the first-class function the loop expects, nothing compiled."""
    from numba import typeof, types

    from dispatchlab.compiled.lazy import AbsentStep
    from dispatchlab.engine import arrivals, service
    from dispatchlab.engine.adapter import HOOK_ADAPTER_TYPE, NO_HOOK_ADAPTER, policy_adapter
    from dispatchlab.engine.interface import no_hook

    assert typeof(service.bernoulli_only) == service.SERVE_TYPE
    assert typeof(arrivals.split_poisson_only) == arrivals.ARRIVALS_TYPE
    assert policy_adapter(no_hook) is NO_HOOK_ADAPTER
    assert typeof(NO_HOOK_ADAPTER) == HOOK_ADAPTER_TYPE
    assert typeof(AbsentStep(types.int64(types.int64), "f")) != arrivals.ARRIVALS_TYPE


def test_calling_an_absent_step_stops_the_process() -> None:
    """Should the loop ever call a step it was told is absent, the process aborts (the
    C library's abort) rather than run whatever lies at the address."""
    script = ("from numba import njit, types\n"
              "from dispatchlab.compiled.lazy import AbsentStep\n"
              "signature = types.int64(types.int64)\n"
              "@njit(types.int64(types.FunctionType(signature), types.int64))\n"
              "def call(step, x):\n"
              "    return step(x) if x > 0 else -1\n"
              "absent = AbsentStep(signature, 'absent')\n"
              "print(call(absent, 0), flush=True)\n"
              "print(call(absent, 1), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.stdout.split() == ["-1"]  # passed and not called: fine
    assert done.returncode != 0  # called: SIGABRT, not a number


def test_warm_compiles_the_named_policies(capsys: pytest.CaptureFixture[str]) -> None:
    from dispatchlab.cli import main

    assert main(["warm", "--policy", "jsq", "-p", "pod"]) == 0
    err = capsys.readouterr().err
    assert "jsq:" in err and "pod:" in err and "2 policies" in err
    assert main(["warm", "--policy", "no-such-policy"]) == 2  # bad input: one line, exit 2
    assert capsys.readouterr().err.startswith("error: policy")


def test_runs_on_a_pool_compile_first_in_the_parent() -> None:
    from dispatchlab.cli.run import pooled

    assert not pooled(2, 1, None)  # one replication runs here: nothing to share
    assert pooled(2, 3, None) and not pooled(1, 3, None)
    assert pooled(2, 1, 0.01)  # a precision run adds replications on the pool


def test_precompile_skips_a_policy_the_small_system_does_not_fit() -> None:
    from dispatchlab import System
    from dispatchlab.cli.warm import precompile
    from dispatchlab.policies import make_policy

    system = System.build("20x0.5", load=0.5, dispatchers=2, dispatch="per_job")
    precompile(system, ["jsq", make_policy("pod", d=20)])  # d = 20 > 8 servers: skipped


def test_precompile_compiles_the_loop_steps_of_the_system_s_laws() -> None:
    """A system with one dispatcher and Poisson service needs the loop's one-dispatcher
    arrival step and other-service step, which the small warm system does not run:
    precompile compiles them
    too (here: in a fresh process, where nothing else has), so that the workers do not
    each compile them."""
    script = (
        "from dispatchlab import System\n"
        "from dispatchlab.cli.warm import precompile\n"
        "from dispatchlab.engine import arrivals, observe, service, tags\n"
        "assert not arrivals.poisson_to_one.overloads and not service.serve_other_law.overloads\n"
        "precompile(System.build('20x0.5', load=0.5, dispatchers=1, service='poisson'),"
        " ['jsq'])\n"
        "print(bool(arrivals.poisson_to_one.overloads), bool(service.serve_other_law.overloads))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_the_command_runs_with_one_blas_thread_unless_told_otherwise() -> None:
    """OpenBLAS's spinning threads cost a cold run CPU and do nothing for its small solves:
    the command asks for one before numpy loads, and leaves a user's setting alone."""
    from dispatchlab.cli import single_threaded_blas

    environ: dict[str, str] = {}
    single_threaded_blas(environ, {})
    assert environ == {"OPENBLAS_NUM_THREADS": "1"}
    environ = {"OPENBLAS_NUM_THREADS": "4"}
    single_threaded_blas(environ, {})
    assert environ == {"OPENBLAS_NUM_THREADS": "4"}
    environ = {}
    single_threaded_blas(environ, {"numpy": object()})  # too late: numpy has its threads
    assert environ == {}
    script = ("import os, sys\n"
              "sys.argv = ['dispatchlab', '--help']\n"
              "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
              "import atexit\n"
              "atexit.register(lambda: print('threads', os.environ.get('OPENBLAS_NUM_THREADS')))\n"
              "from dispatchlab.cli import entry_point\n"
              "entry_point()\n")
    assert "threads 1" in _python(script)


def test_the_command_compiles_without_colorama_s_wrapping_of_each_failed_overload() -> None:
    """The command turns numba's error highlighting off before numba loads (colorama's
    set-up and tear-down around every failed overload numba tries), unless the user chose."""
    from dispatchlab.cli import plain_compile_errors

    environ: dict[str, str] = {}
    plain_compile_errors(environ)
    assert environ == {"NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING": "1"}
    environ = {"NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING": ""}
    plain_compile_errors(environ)
    assert environ == {"NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING": ""}
    script = ("import os, sys, atexit\n"
              "sys.argv = ['dispatchlab', '--help']\n"
              "os.environ.pop('NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING', None)\n"
              "def scheme():\n"
              "    from numba.core import errors\n"
              "    print('scheme', type(errors.termcolor()).__name__)\n"
              "atexit.register(scheme)\n"
              "from dispatchlab.cli import entry_point\n"
              "entry_point()\n")
    assert "scheme NOPColorScheme" in _python(script)


def test_drawing_figures_loads_no_scipy_stats() -> None:
    """The figures' t quantiles come from stats.estimators, as the runs' do: scipy.stats
    took ~1.5 s of every `report`, `experiment` and `sweep` process to import (its
    docstrings parsed at import), for one quantile. The same numbers (to 1e-11:
    stats/t_and_f_quantiles.py)."""
    from scipy import stats

    from dispatchlab.report import plots

    for dof in (1, 2, 3, 9, 29, 99, 999):
        assert plots.t_quantile(dof, plots.CONFIDENCE) == pytest.approx(
            stats.t.ppf(0.5 + plots.CONFIDENCE / 2, dof), rel=1e-11)
    assert _heavy_loaded("import dispatchlab.report.plots", ("scipy.stats",)) == []
