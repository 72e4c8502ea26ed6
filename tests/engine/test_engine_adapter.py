"""The adapters through which the slot loop calls a policy's ``choose`` and hooks
(engine.adapter)."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from dispatchlab.compiled.rng import make_rng_state
from dispatchlab.engine.adapter import (
    ADAPTER_TYPE,
    EVERY_DISPATCHER,
    HOOK_ADAPTER_TYPE,
    _AdapterCache,
    _inlining_adapter,
    pack_arrays,
    policy_adapter,
)
from dispatchlab.engine.interface import (
    Context,
    Memory,
    Slot,
    Step,
    choose_function,
    compiled,
    no_hook,
)
from dispatchlab.model.system import System
from dispatchlab.policies import make_policy
from dispatchlab.policies.classic import _jsq_choose, _pod_choose

_iv = types.int64[::1]
_fv = types.float64[::1]


@njit(types.int64(ADAPTER_TYPE, types.int64, types.int64, types.int64, _iv, _fv, _iv, _fv,
                  types.int64[:, ::1], types.float64[:, ::1], types.uint64[::1], _iv, _iv,
                  _iv))
def _call_with(adapter, m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg, A_m, targets):
    return adapter(m, jobs, t, pack_arrays((Q, mu, ip, fp, ist, fst, rng, msg, A_m, targets)))


def _call(adapter, m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg):
    """Dispatcher m's choice for ``jobs`` jobs, the only one with arrivals (batch)."""
    A_m, targets = np.zeros(3, np.int64), np.full(3, -7, np.int64)
    A_m[m] = jobs
    _call_with(adapter, EVERY_DISPATCHER, 0, t, Q, mu, ip, fp, ist, fst, rng, msg, A_m,
               targets)
    return targets[m]


@njit(types.none(HOOK_ADAPTER_TYPE, types.int64, types.boolean, _iv, _fv, _iv, _fv,
                 types.int64[:, ::1], types.float64[:, ::1], types.uint64[::1], _iv, _iv, _iv,
                 _iv, _fv))
def _call_hook(adapter, t, record, Q, mu, ip, fp, ist, fst, rng, msg, Q_prev, A, A_m, diag):
    adapter(t, record, pack_arrays((Q, mu, ip, fp, ist, fst, rng, msg, Q_prev, A, A_m, diag)))


def _state(policy: str, **params):
    system = System.build("0.2,0.3,0.5,0.6,0.4", load=0.8, dispatchers=3)
    kernel = make_policy(policy, **params).kernel(system)
    Q = np.array([3, 1, 4, 1, 5], np.int64)
    return system, kernel, Q


def test_adapter_answers_and_draws_like_choose() -> None:
    for policy, params in (("pod", {"d": 2}), ("pod", {"d": 3}), ("jsq", {}), ("wrand", {})):
        system, kernel, Q = _state(policy, **params)
        direct_memory, adapted_memory = kernel.memory(), kernel.memory()
        direct_rng, adapted_rng = make_rng_state(3), make_rng_state(3)
        direct_msg, adapted_msg = np.zeros(5, np.int64), np.zeros(5, np.int64)
        adapter = policy_adapter(kernel.choose)
        choose = compiled(kernel.choose)
        for t in range(200):
            m = t % 3
            expected = choose(m, 2, Slot(t, Q, system.mu), direct_memory,
                              Context(direct_rng, direct_msg))
            got = _call(adapter, m, 2, t, Q, system.mu, *adapted_memory, adapted_rng,
                        adapted_msg)
            assert got == expected, (policy, params, t)
        assert (direct_rng == adapted_rng).all() and (direct_msg == adapted_msg).all()


def test_adapters_are_named_after_their_policy_function() -> None:
    """Two adapters loaded from the disk cache must never share a symbol (numba names code
    after the Python function and a per-process counter)."""
    names = set()
    for choose in (_jsq_choose, _pod_choose):
        adapter = policy_adapter(choose)
        assert choose.py_func.__name__ in adapter.py_func.__qualname__
        (result,) = adapter.overloads.values()
        names.add(result.fndesc.mangled_name.split("B")[0])
    assert len(names) == 2


def test_adapter_cache_key_describes_the_policy_function() -> None:
    key = _AdapterCache(_inlining_adapter(_jsq_choose), _jsq_choose)._policy_key
    assert key == _AdapterCache(_inlining_adapter(_jsq_choose), _jsq_choose)._policy_key
    assert key != _AdapterCache(_inlining_adapter(_pod_choose), _pod_choose)._policy_key


def test_adapter_cache_key_holds_the_sources_it_depends_on() -> None:
    """A policy inlines helpers from other modules (LED's min tree, layouts), which its own
    stamp does not see: a stale adapter chose server 128 of 100 after an update. The key
    holds the digest of what the adapter and its policy reach, and nothing else."""
    from numba.core.registry import cpu_target

    from dispatchlab.compiled.dependencies import PACKAGE, dependency_digest, dependency_files
    from dispatchlab.policies.led.choose import _lsq_tree_choose

    cache = _AdapterCache(_inlining_adapter(_jsq_choose), _jsq_choose)
    key = cache._index_key((types.int64,), cpu_target.target_context.codegen())
    assert dependency_digest(cache._py_func) in key[-1]
    led = {path.relative_to(PACKAGE).as_posix()
           for path in dependency_files(_inlining_adapter(_lsq_tree_choose))}
    assert {"engine/adapter.py", "engine/interface.py", "policies/led/choose.py",
            "policies/led/min_tree.py", "compiled/rng.py"} <= led
    assert not any(name.startswith(("report/", "cli/", "stats/", "experiments/"))
                   for name in led), led
    assert "policies/classic.py" not in led


def test_hook_adapters_update_memory_and_draw_like_the_hooks() -> None:
    """LED push and pull updates, and a Π policy's hooks (which allocate), through their
    adapters: the same memory, draws, messages and diagnostics as calling them directly."""
    cases = (("led", {"strategy": "pod", "update": "push", "p": 0.3, "d": 2, "pod_d": 2}),
             ("led", {"strategy": "jsq", "update": "pull", "p": 0.3}), ("pi-jsq", {}))
    for policy, params in cases:
        system, kernel, _ = _state(policy, **params)
        hooks = [h for h in (kernel.begin_slot, kernel.end_slot) if h is not no_hook]
        assert hooks, policy
        states = np.random.default_rng(1)
        for hook in hooks:
            direct, adapted = kernel.memory(), kernel.memory()
            direct_rng, adapted_rng = make_rng_state(3), make_rng_state(3)
            direct_msg, adapted_msg = np.zeros(5, np.int64), np.zeros(5, np.int64)
            direct_diag = np.zeros(max(1, kernel.n_diagnostics))
            adapted_diag = direct_diag.copy()
            adapter, compiled_hook = policy_adapter(hook), compiled(hook)
            for t in range(100):
                Q = states.integers(0, 6, 5).astype(np.int64)
                Q_prev = states.integers(0, 6, 5).astype(np.int64)
                A = states.integers(0, 3, 5).astype(np.int64)
                A_m = states.integers(0, 4, 3).astype(np.int64)
                record = t >= 10
                compiled_hook(Slot(t, Q, system.mu), Step(Q_prev, A, A_m, direct_diag, record),
                              direct, Context(direct_rng, direct_msg))
                _call_hook(adapter, t, record, Q, system.mu, *adapted, adapted_rng,
                           adapted_msg, Q_prev, A, A_m, adapted_diag)
            for left, right in zip(Memory(*direct), Memory(*adapted), strict=True):
                assert (left == right).all(), (policy, params)
            assert (direct_rng == adapted_rng).all() and (direct_msg == adapted_msg).all()
            assert (direct_diag == adapted_diag).all(), (policy, params)


@choose_function
def _record_calls(m, jobs, slot, memory, ctx):
    """Appends (m, jobs, ΣQ seen) to the row ist[0] (its first entry counts the calls) and
    returns memory.int_params[m], a server chosen ahead by the test (out of range on purpose)."""
    row = memory.int_state[0]
    k = row[0]
    row[1 + 3 * k], row[2 + 3 * k], row[3 + 3 * k] = m, jobs, slot.Q.sum()
    row[0] = k + 1
    return memory.int_params[m]


def test_one_batch_call_chooses_for_every_dispatcher_as_separate_calls_did() -> None:
    """adapter(EVERY_DISPATCHER, …): one call runs choose for each dispatcher with
    arrivals, m = 0 … M−1, each placing its A^m(t) jobs, with the same draws and servers as
    one call per dispatcher; dispatchers without arrivals keep their target entry."""
    draws = np.random.default_rng(5)
    for policy, params in (("pod", {"d": 2}), ("jsq", {}), ("wrand", {}),
                           ("led", {"strategy": "pod", "update": "push", "p": 0.3})):
        system, kernel, Q = _state(policy, **params)
        direct_memory, adapted_memory = kernel.memory(), kernel.memory()
        direct_rng, adapted_rng = make_rng_state(4), make_rng_state(4)
        direct_msg, adapted_msg = np.zeros(5, np.int64), np.zeros(5, np.int64)
        adapter, choose = policy_adapter(kernel.choose), compiled(kernel.choose)
        calls = 0
        for t in range(300):
            A_m = draws.integers(0, 3, 3).astype(np.int64)
            targets = np.full(3, -7, np.int64)
            expected = targets.copy()
            for m in np.flatnonzero(A_m):
                expected[m] = choose(int(m), int(A_m[m]), Slot(t, Q, system.mu),
                                     direct_memory, Context(direct_rng, direct_msg))
                calls += 1
            _call_with(adapter, EVERY_DISPATCHER, 0, t, Q, system.mu, *adapted_memory,
                       adapted_rng, adapted_msg, A_m, targets)
            assert (targets == expected).all(), (policy, t, A_m, targets, expected)
        assert calls > 300
        assert (direct_rng == adapted_rng).all() and (direct_msg == adapted_msg).all()
        for left, right in zip(direct_memory, adapted_memory, strict=True):
            assert (left == right).all(), policy


def _recorded(ist: np.ndarray) -> list[tuple[int, int, int]]:
    row = ist[0]
    return [tuple(int(x) for x in row[1 + 3 * k:4 + 3 * k]) for k in range(row[0])]


def test_batch_call_order_jobs_and_slot_start_queues() -> None:
    adapter = policy_adapter(_record_calls)
    Q, mu = np.array([3, 1, 4], np.int64), np.full(3, 0.5)
    A_m = np.array([2, 0, 5, 1, 0], np.int64)
    ip = np.array([0, 1, 2, 0, 1], np.int64)  # every target in range
    ist = np.zeros((1, 64), np.int64)
    targets = np.full(5, -7, np.int64)
    _call_with(adapter, EVERY_DISPATCHER, 0, 9, Q, mu, ip, np.zeros(1), ist,
               np.zeros((1, 1)), make_rng_state(1), np.zeros(5, np.int64), A_m, targets)
    assert _recorded(ist) == [(0, 2, 8), (2, 5, 8), (3, 1, 8)]
    assert targets.tolist() == [0, -7, 2, 0, -7]
    # per-job dispatch: 3 jobs of dispatcher 2, one choose call each, into targets[0:3]
    ist[0, 0] = 0
    _call_with(adapter, 2, 3, 9, Q, mu, ip, np.zeros(1), ist, np.zeros((1, 1)),
               make_rng_state(1), np.zeros(5, np.int64), A_m, targets)
    assert _recorded(ist) == [(2, 1, 8)] * 3
    assert targets.tolist() == [2, 2, 2, 0, -7]


def test_batch_call_stops_after_the_first_bad_server() -> None:
    """The loop reports the first dispatcher whose server is outside 0 … N−1 and stops:
    no later dispatcher's choose runs (as when each had a call of its own)."""
    adapter = policy_adapter(_record_calls)
    Q, mu = np.array([3, 1, 4], np.int64), np.full(3, 0.5)
    A_m = np.array([1, 1, 0, 1, 1], np.int64)
    for bad in (3, -1):
        ip = np.array([1, 2, 0, bad, 0], np.int64)
        ist = np.zeros((1, 64), np.int64)
        targets = np.full(5, -7, np.int64)
        _call_with(adapter, EVERY_DISPATCHER, 0, 0, Q, mu, ip, np.zeros(1), ist,
                   np.zeros((1, 1)), make_rng_state(1), np.zeros(5, np.int64), A_m, targets)
        assert [m for m, _, _ in _recorded(ist)] == [0, 1, 3]
        assert targets.tolist() == [1, 2, -7, bad, -7]
    # per job: dispatcher 3's first job already gets the bad server, no second call
    ist = np.zeros((1, 64), np.int64)
    _call_with(adapter, 3, 4, 0, Q, mu, ip, np.zeros(1), ist, np.zeros((1, 1)),
               make_rng_state(1), np.zeros(5, np.int64), A_m, targets)
    assert _recorded(ist) == [(3, 1, 8)] and targets[0] == -1
