"""SUJSQ / AUJSQ (docs/model.md#sujsq): the shared-report implementation against the definition.

The policy keeps one row of reports, a per-dispatcher list of servers sent to since their
last report and one shared min tree; the reference below keeps the M × N estimates
explicitly and scans them, as the papers describe. Both consume the same random numbers,
so their runs must agree exactly (queues, messages, estimation error)."""

from __future__ import annotations

import numpy as np
import pytest

from dispatchlab import System, simulate
from dispatchlab.compiled.argmin import argmin_random_ties
from dispatchlab.compiled.rng import uniform
from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.model.system import System as SystemType
from dispatchlab.policies import policy_names
from dispatchlab.policies.base import Kernel, Param, Policy, register
from dispatchlab.policies.sparse_feedback import (
    LIST_MIN_DISPATCHERS,
    NO_LIST,
    SynchronousUpdateJsq,
    listed_minimisers,
    minimisers,
    rebuild_reports,
    reports,
)


@choose_function
def _explicit_choose(m, jobs, slot, memory, ctx):
    own = memory.int_state[m]
    target = argmin_random_ties(own[:slot.Q.size], ctx.rng)
    own[target] += jobs
    return target


@hook_function
def _explicit_begin(slot, step, memory, ctx):
    M = step.A_m.size
    state = memory.int_state[M]
    if state[1] == 0:
        for m in range(M):
            for n in range(slot.Q.size):
                memory.int_state[m, n] = slot.Q[n]
        state[0] = memory.int_params[0]
        state[1] = 1
    return None


@hook_function
def _explicit_end(slot, step, memory, ctx):
    Q = slot.Q
    M = step.A_m.size
    N = Q.size
    if memory.int_params[1] == 1:
        state = memory.int_state[M]
        state[0] -= 1
        if state[0] == 0:
            for m in range(M):
                for n in range(N):
                    memory.int_state[m, n] = Q[n]
            ctx.msg[REPORT] += N * M
            state[0] = memory.int_params[0]
    else:
        for n in range(N):
            if uniform(ctx.rng) < memory.float_params[0]:
                for m in range(M):
                    memory.int_state[m, n] = Q[n]
                ctx.msg[REPORT] += M
    if step.record:
        error = 0
        for m in range(M):
            for n in range(N):
                error += abs(memory.int_state[m, n] - Q[n])
        step.diag[0] += error / (M * N)
    return None


class _Explicit(Policy):
    summary = "SUJSQ/AUJSQ with explicit M × N estimates (tests only)"
    diagnostics = ("estimation_error",)
    parameters = (Param("T_u", int, 10, "update period", low=1),)
    synchronous = 1

    def kernel(self, system: SystemType) -> Kernel:
        n, m = system.n_servers, system.dispatchers
        period = self.params["T_u"]
        return Kernel(_explicit_choose, _explicit_begin, _explicit_end,
                      int_params=np.array([period, self.synchronous], np.int64),
                      float_params=np.array([1.0 / period]),
                      int_state=np.zeros((m + 1, max(n, 2)), np.int64), n_diagnostics=1)


@pytest.fixture(autouse=True)
def _registry_left_as_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The explicit-estimate policies these tests register leave with them: a later test
    that lists every registered policy (the docs site's, for one) must not find them."""
    from dispatchlab.policies import base

    policy_names()  # the built-in policies loaded into the registry copied
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


def _explicit(synchronous: int) -> type[Policy]:
    name = f"test-explicit-{'sujsq' if synchronous else 'aujsq'}"
    cls = type(name.replace("-", "_"), (_Explicit,), {"name": name,
                                                       "synchronous": synchronous})
    if name not in policy_names():
        register(cls)
    return cls


@pytest.mark.parametrize("policy", ["sujsq", "aujsq"])
@pytest.mark.parametrize("servers, dispatchers, dispatch, period", [
    (5, 2, "batch", 3),          # N too small for an overlay: the scan
    (300, 3, "batch", 10),       # overlays of a few touched servers
    (2000, 5, "batch", 10),
    (600, 2, "per_job", 3),      # long touched lists: the scan takes over
    (1000, 20, "batch", 30),     # M ≥ LIST_MIN_DISPATCHERS: minimisers off the list
    (400, 12, "batch", 4),       # the list, with overlays when all minimisers are touched
    (300, 8, "batch", 2),        # a new list every other slot
])
def test_shared_reports_run_like_explicit_estimates(policy, servers, dispatchers, dispatch,
                                                    period):
    system = System.build(f"{servers // 2}x0.2,{servers - servers // 2}x0.6", load=0.85,
                          dispatchers=dispatchers, dispatch=dispatch)
    fast = simulate(system, policy, policy_params={"T_u": period}, slots=1_500, seed=5,
                    warmup=0, delay="off")
    reference = simulate(system, _explicit(int(policy == "sujsq"))(T_u=period), slots=1_500,
                         seed=5, warmup=0, delay="off")
    for field in ("jobs_departed", "jobs_in_system", "idle_while_busy",
                  "messages_per_arrival"):
        assert getattr(fast, field) == getattr(reference, field)
    assert fast.diagnostics["estimation_error"] == reference.diagnostics["estimation_error"]
    assert fast.diagnostics["estimation_error"] > 0


@pytest.mark.parametrize("dispatchers", [LIST_MIN_DISPATCHERS - 1, LIST_MIN_DISPATCHERS])
def test_rebuild_lists_the_minimisers_in_index_order(dispatchers):
    system = System.build("200x0.5", load=0.5, dispatchers=dispatchers)
    memory = SynchronousUpdateJsq().kernel(system).memory()
    R = reports(memory)
    R[:200] = np.random.default_rng(3).integers(2, 6, 200)
    R[[7, 50, 51, 199]] = 1
    rebuild_reports(memory)
    if dispatchers < LIST_MIN_DISPATCHERS:
        assert listed_minimisers(memory) == NO_LIST
    else:
        assert listed_minimisers(memory) == 4
        assert list(minimisers(memory)[:4]) == [7, 50, 51, 199]
