"""A user's LED strategy and Π decision: their adapters come from the disk cache in the next
process, and an edit to the user's file compiles them afresh (engine.adapter: a closure's
adapter keyed by the user's function). The keys are checked here in-process; the runs that
show it end to end compile the loop into a cache of their own (~50 s): slow."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

STRATEGY = textwrap.dedent("""\
    from dispatchlab.compiled.argmin import argmin_random_ties
    from dispatchlab.policies.led import strategy_function

    MODE = {mode}


    @strategy_function
    def pick(estimates, mu, rng, params, scratch):
        if MODE == 1:
            return 0
        return argmin_random_ties(estimates, rng)
""")

DECISION = textwrap.dedent("""\
    from dispatchlab.policies.framework import decision_function

    MODE = {mode}


    @decision_function
    def decide(eta, mu, int_params, float_params, rng, dest, scratch):
        for i in range(dest.size):
            dest[i] = eta[0] if MODE == 1 else eta[eta.size - 1]
""")

#: a child that runs the user's rule and says what it compiled (numba's compile events)
RUN = textwrap.dedent("""\
    import json, sys
    from numba.core import event
    compiled = []
    class Seen(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Seen())
    from dispatchlab import System, simulate
    system = System.build("2x0.5", load=0.4)
    if sys.argv[1] == "strategy":
        from dispatchlab.policies.led import LEDPolicy
        from rule import pick
        policy = LEDPolicy(strategy=pick, update="pull", p=0.5)
    else:
        from dispatchlab.policies import make_policy
        from dispatchlab.policies.framework import register_decision
        from rule import decide
        register_decision("test-rule", decide, "the shortest or the longest scaled queue")
        policy = make_policy("pi-framework", decision="test-rule", T=1)
    result = simulate(system, policy, slots=3000, seed=3, delay="off")
    print(json.dumps({"mean": result.mean_total_queue,
                      "adapters": [name for name in compiled if "adapter" in name]}))
""")


def _run(folder: Path, kind: str, cache: Path) -> dict:
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(folder)}
    done = subprocess.run([sys.executable, str(folder / "run.py"), kind], cwd=folder,
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _load_rule(path: Path, source: str):
    """``rule.py`` at ``path`` loaded as the module ``rule`` (kept out of sys.modules)."""
    path.parent.mkdir(exist_ok=True)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rule", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: kind → the user's function's name in its file, and the file
RULES = {"strategy": ("pick", STRATEGY), "decision": ("decide", DECISION)}


def _closure(kind: str, function):
    """The closure of dispatchlab's that runs the user's ``function``."""
    from dispatchlab.policies.framework.kernel import make_begin_slot
    from dispatchlab.policies.led.choose import custom_choose

    return custom_choose(function) if kind == "strategy" else make_begin_slot(function)


def _adapter_key(kind: str, function) -> str:
    """The part of its adapter's cache key that describes the policy function."""
    from dispatchlab.engine.adapter import (
        _AdapterCache,
        _inlining_adapter,
        _inlining_hook_adapter,
    )

    closure = _closure(kind, function)
    inlining = _inlining_adapter if kind == "strategy" else _inlining_hook_adapter
    return _AdapterCache(inlining(closure), closure)._policy_key


@pytest.mark.parametrize("kind", RULES)
def test_a_closure_s_adapter_key_is_that_of_the_user_s_function(tmp_path: Path,
                                                                 kind: str) -> None:
    from dispatchlab.engine.adapter import _is_cached

    name, source = RULES[kind]

    def loaded(folder: str, mode: int):
        return getattr(_load_rule(tmp_path / folder / "rule.py", source.format(mode=mode)),
                       name)

    first = loaded("a", 0)
    first_key = _adapter_key(kind, first)
    assert _adapter_key(kind, loaded("a", 0)) == first_key
    # the same module, function and code in another file: another key
    assert _adapter_key(kind, loaded("b", 0)) != first_key
    # an edit that keeps the file's size (a frozen global constant): another key for the
    # function loaded from it, and the first keeps the key of the source it was loaded from
    assert _adapter_key(kind, loaded("a", 1)) != first_key
    assert _adapter_key(kind, first) == first_key
    assert _is_cached(_closure(kind, first))


def test_a_strategy_without_a_source_file_is_compiled_in_each_process() -> None:
    from dispatchlab.engine.adapter import _is_cached

    namespace: dict = {}
    exec(STRATEGY.format(mode=0), namespace)  # noqa: S102 - the test's own source
    assert not _is_cached(_closure("strategy", namespace["pick"]))


@pytest.mark.slow
@pytest.mark.parametrize("kind", RULES)
def test_a_user_rule_s_adapter_is_loaded_then_recompiled_after_an_edit(tmp_path: Path,
                                                                      kind: str) -> None:
    _, source = RULES[kind]
    # the child's own cache: the user's code and dispatchlab's, compiled for it
    cache = tmp_path / "cache"
    folder = _rule_folder(tmp_path / "user", source.format(mode=0))
    first = _run(folder, kind, cache)
    assert first["adapters"], "the first run compiles the rule's adapter"
    second = _run(folder, kind, cache)
    assert second == {"mean": first["mean"], "adapters": []}
    # the same rule, module and function names in another folder, another constant: its
    # own adapter (the key holds the file), sharing the cache with the first
    other = _run(_rule_folder(tmp_path / "other", source.format(mode=1)), kind, cache)
    assert other["adapters"] and other["mean"] != first["mean"]
    # an edit of the first: compiled afresh, then the first's answer changes
    rule = folder / "rule.py"
    rule.write_text(source.format(mode=1))
    os.utime(rule, (rule.stat().st_atime + 2, rule.stat().st_mtime + 2))
    edited = _run(folder, kind, cache)
    assert edited["adapters"] and edited["mean"] == other["mean"]
    assert _run(folder, kind, cache) == {"mean": other["mean"], "adapters": []}


def _rule_folder(folder: Path, rule: str) -> Path:
    folder.mkdir()
    (folder / "run.py").write_text(RUN)
    (folder / "rule.py").write_text(rule)
    return folder
