"""A new policy family from scratch: power-of-d with memory, SQ(d, k).

Each dispatcher samples d servers uniformly at random and also looks again at the k
servers it remembers from its last dispatch (the least loaded of what it saw then); it
sends its jobs to the shortest of these d + k queues (ties at random) and remembers the
k shortest of them, counting the job just placed. k = 0 is the power of d choices (Po-d);
SQ(1, 1) is the memory scheme of Shah and Prabhakar (2002, "The use of memory in
randomized load balancing"), which does about as well as SQ(2) with one sample a
dispatch. Messages: every look is a probe and its reply, 2·(d + k) per dispatch.

What the example shows, the whole seam a policy author uses:

* the parameters, declared once (``Param``: type, default, range, meaning), with a
  relation between them checked in ``validate_params`` and against the system in
  ``check_system``;
* the memory layout, named once by small inline accessors, and the compiled
  ``choose`` (``@choose_function``) and ``end_slot`` hook (``@hook_function``) that use
  it; randomness from ``ctx.rng``, messages into ``ctx.msg``;
* a diagnostic counted in ``choose``, moved to ``step.diag`` by the hook and turned
  into a metric by ``summarize``;
* ``@register`` and ``register_preset`` (``sq11``);
* the conformance kit (``check_policy``), a run, a paired comparison with Po-2, and the
  command line:

    .venv/bin/python examples/pod_memory.py
    .venv/bin/dispatchlab run --import examples/pod_memory.py --policy pod-memory --set k=1
    .venv/bin/dispatchlab compare --import examples/pod_memory.py --paired \\
        -p pod:d=2 -p sq11 -p pod-memory:d=2,k=2 --servers 20x0.5 --load 0.95
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import randint
from dispatchlab.engine.interface import PROBE, REPLY, choose_function, hook_function
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register, register_preset

# the memory: int_state row m < M holds dispatcher m's remembered servers (k of them, −1 while
# none); row M holds the candidates of the current call (d + k) and row M + 1 counters
DIAGNOSTICS = ("memory_choices",)  # dispatches that went to a remembered server
D_MEMORY = 0
COUNT_MEMORY = 0  # counters row: dispatches to a remembered server since the last end_slot


@njit(inline="always", cache=True)
def samples(memory):
    """ip[0]: d, the fresh samples a dispatch."""
    return memory.int_params[0]


@njit(inline="always", cache=True)
def remembered_count(memory):
    """ip[1]: k, the servers a dispatcher remembers."""
    return memory.int_params[1]


@njit(inline="always", cache=True)
def remembered(memory, m):
    """Dispatcher m's remembered servers (a writable row of k entries, −1: none yet)."""
    return memory.int_state[m]


@njit(inline="always", cache=True)
def candidates(memory):
    """The scratch row of the current call: its d + k candidate servers."""
    return memory.int_state[memory.int_state.shape[0] - 2]


@njit(inline="always", cache=True)
def counters(memory):
    """The counters row (COUNT_MEMORY …)."""
    return memory.int_state[memory.int_state.shape[0] - 1]


@njit(inline="always", cache=True)
def _load(Q, n, target, jobs):
    """Q_n after this call's jobs went to ``target``."""
    return Q[n] + (jobs if n == target else 0)


@choose_function
def _choose(m, jobs, slot, memory, ctx):
    Q = slot.Q
    d, k = samples(memory), remembered_count(memory)
    seen = candidates(memory)
    kept = remembered(memory, m)
    count = 0
    for _ in range(d):
        seen[count] = randint(ctx.rng, Q.size)
        count += 1
    for i in range(k):
        if kept[i] >= 0:
            seen[count] = kept[i]
            count += 1
    ctx.msg[PROBE] += count
    ctx.msg[REPLY] += count
    # the shortest candidate, ties uniformly at random (reservoir sampling over the ties)
    target = seen[0]
    ties = 1
    for i in range(1, count):
        n = seen[i]
        if n == target:
            continue
        if Q[n] < Q[target]:
            target, ties = n, 1
        elif Q[n] == Q[target]:
            ties += 1
            if randint(ctx.rng, ties) == 0:
                target = n
    for i in range(count - d):  # a remembered server won
        if seen[d + i] == target:
            counters(memory)[COUNT_MEMORY] += 1
            break
    # remember the k shortest distinct candidates, counting the jobs just placed
    for i in range(k):
        best = -1
        for j in range(count):
            n = seen[j]
            taken = False
            for h in range(i):
                taken |= kept[h] == n
            if taken:
                continue
            if best < 0 or _load(Q, n, target, jobs) < _load(Q, best, target, jobs):
                best = n
        kept[i] = best
    return target


@hook_function
def _end_slot(slot, step, memory, ctx):
    row = counters(memory)
    if step.record:
        step.diag[D_MEMORY] += row[COUNT_MEMORY]
    row[COUNT_MEMORY] = 0


@register
class PowerOfDWithMemory(Policy):
    """SQ(d, k), registered as ``pod-memory``: the shortest of d fresh samples and the k
    servers remembered from the dispatcher's last dispatch (the shortest it saw then)."""

    name = "pod-memory"
    summary = ("SQ(d, k): the shortest of d uniform samples and k servers remembered from "
               "the last dispatch (2·(d + k) messages a dispatch).")
    theory = ("Shah and Prabhakar (2002): with one dispatcher and Poisson arrivals, SQ(1, 1) "
              "does about as well as SQ(2); heterogeneous rates are not covered.")
    parameters = (
        Param("d", int, 1, "d, uniform samples a dispatch", low=1, high=64),
        Param("k", int, 1, "k, servers remembered from the last dispatch", low=0, high=8),
    )
    diagnostics = DIAGNOSTICS

    def check_system(self, system: System) -> None:
        """Nothing beyond the parameters' ranges: samples are drawn with replacement."""

    def kernel(self, system: System) -> Kernel:
        d, k = int(self.params["d"]), int(self.params["k"])
        memory = np.full((system.dispatchers + 2, max(d + k, 1)), -1, np.int64)
        memory[-1] = 0
        return Kernel(_choose, end_slot=_end_slot, int_params=np.array([d, k], np.int64),
                      int_state=memory, n_diagnostics=len(DIAGNOSTICS))

    def summarize(self, diag: np.ndarray, measured_slots: int,
                  system: System) -> dict[str, float]:
        """memory_choices_per_slot: dispatches a slot that went to a remembered server."""
        return {"memory_choices_per_slot": float(diag[D_MEMORY]) / max(measured_slots, 1)}


register_preset("sq11", PowerOfDWithMemory, "SQ(1, 1): one sample and one remembered server "
                "(Shah and Prabhakar's memory scheme)", d=1, k=1)


def main(slots: int = 200_000) -> dict[str, float]:
    """Check the policy with the conformance kit, run it, and pair it with Po-2."""
    from dispatchlab import compare, simulate
    from dispatchlab.policies import make_policy
    from dispatchlab.testing import check_policy

    report = check_policy(PowerOfDWithMemory, slots=2_000)
    print(report)  # every check of the kit, passed or failed
    system = System.build("20x0.5", load=0.95)
    result = simulate(system, "sq11", slots=slots, seed=1)
    print(f"SQ(1,1): E[ΣQ] = {result.mean_total_queue:.4g} [{result.ci_low:.4g}, "
          f"{result.ci_high:.4g}], {result.messages_per_arrival:.3g} messages a job, "
          f"{result.diagnostics['memory_choices_per_slot']:.3g} memory choices a slot")
    paired = compare(system, make_policy("pod", d=2), "sq11", slots=slots, seed=1)
    print(paired)
    return {"mean_total_queue": result.mean_total_queue, "difference": paired.difference,
            "variance_reduction": paired.variance_reduction, "passed": float(report.passed)}


if __name__ == "__main__":
    main()
