"""JSQ on occasionally refreshed estimates: SUJSQ and AUJSQ ([HSJSQ], THEORY.md §7.13).

Each dispatcher keeps estimates Q̃^m of the queue lengths, sends each dispatch (the
slot's batch, or one job in per-job mode) to argmin_n Q̃^m_n (ties uniform) and adds
the jobs sent to that estimate; estimates are never decremented between updates.
The estimates start at Q(0) (known at set-up, no message).

* SUJSQ (synchronous updates): at the end of every T_u-th slot (t + 1 a multiple of
  T_u) every server reports Q_n(t+1) to every dispatcher: N·M messages per update.
* AUJSQ (asynchronous updates): at the end of each slot every server independently
  reports with probability 1/T_u, to every dispatcher: M messages per report.

With M > 1 a report reaches every dispatcher (the papers have M = 1); each dispatcher
reached counts as one message. SUJSQ with T_u = 1 is JSQ, draw for draw.

Memory (``ist``): rows 0..M−1 the estimates Q̃^m; row M: slots left to the next
synchronous update, initialised flag.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.engine.kernels import argmin_random_ties
from dispatchlab.engine.rng import uniform
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register

IP_PERIOD, IP_SYNCHRONOUS = range(2)
COUNTDOWN, READY = range(2)
DIAGNOSTICS = ("estimation_error",)


@njit(inline="always", cache=True)
def estimates(memory, m):
    """Q̃^m, dispatcher m's estimates (the row is at least N long)."""
    return memory.ist[m]


@njit(inline="always", cache=True)
def control(memory, dispatchers):
    """[slots left to the next synchronous update, initialised flag] (row M)."""
    return memory.ist[dispatchers]


@njit(inline="always", cache=True)
def update_period(memory):
    """T_u, the update period in slots."""
    return memory.ip[IP_PERIOD]


@njit(inline="always", cache=True)
def is_synchronous(memory):
    """SUJSQ (True) or AUJSQ (False)."""
    return memory.ip[IP_SYNCHRONOUS] == 1


@njit(inline="always", cache=True)
def report_probability(memory):
    """AUJSQ: 1/T_u, the probability that a server reports in a slot."""
    return memory.fp[0]


@choose_function
def _estimate_choose(m, jobs, slot, memory, ctx):
    own = estimates(memory, m)
    target = argmin_random_ties(own[:slot.Q.size], ctx.rng)
    own[target] += jobs
    return target


@hook_function
def _estimate_begin(slot, step, memory, ctx):
    Q = slot.Q
    dispatchers = step.A_m.size
    state = control(memory, dispatchers)
    if state[READY] == 0:
        for m in range(dispatchers):
            own = estimates(memory, m)
            for n in range(Q.size):
                own[n] = Q[n]
        state[COUNTDOWN] = update_period(memory)
        state[READY] = 1
    return None


@hook_function
def _estimate_end(slot, step, memory, ctx):
    Q = slot.Q
    dispatchers = step.A_m.size
    N = Q.size
    msg = ctx.msg
    if is_synchronous(memory):
        state = control(memory, dispatchers)
        state[COUNTDOWN] -= 1
        if state[COUNTDOWN] == 0:
            for m in range(dispatchers):
                own = estimates(memory, m)
                for n in range(N):
                    own[n] = Q[n]
            msg[REPORT] += N * dispatchers
            state[COUNTDOWN] = update_period(memory)
    else:
        probability = report_probability(memory)
        for n in range(N):
            if uniform(ctx.rng) < probability:
                for m in range(dispatchers):
                    estimates(memory, m)[n] = Q[n]
                msg[REPORT] += dispatchers
    if step.record:  # E|Q_n − Q̃^m_n| over dispatchers and servers, as for LED
        error = 0
        for m in range(dispatchers):
            own = estimates(memory, m)
            for n in range(N):
                error += abs(own[n] - Q[n])
        step.diag[0] += error / (dispatchers * N)
    return None


class _EstimateJsq(Policy):
    diagnostics = DIAGNOSTICS
    synchronous = 1
    parameters = (Param("T_u", int, 10, "T_u, update period in slots (AUJSQ: mean interval "
                        "between a server's reports)", low=1),)

    def kernel(self, system: System) -> Kernel:
        n, m = system.n_servers, system.dispatchers
        period = self.params["T_u"]
        return Kernel(_estimate_choose, _estimate_begin, _estimate_end,
                      int_params=np.array([period, self.synchronous], np.int64),
                      float_params=np.array([1.0 / period]),
                      int_state=np.zeros((m + 1, max(n, 2)), np.int64),
                      n_diagnostics=len(DIAGNOSTICS))


@register
class SynchronousUpdateJsq(_EstimateJsq):
    name = "sujsq"
    summary = ("SUJSQ: JSQ on estimates incremented on dispatch and refreshed by all N servers "
               "every T_u slots (N messages per update and dispatcher).")
    theory = ("Hyper-scalable JSQ [HSJSQ]: near-JSQ delay at a message rate ~N/T_u; T_u = 1 "
              "is JSQ.")
    synchronous = 1


@register
class AsynchronousUpdateJsq(_EstimateJsq):
    name = "aujsq"
    summary = ("AUJSQ: JSQ on estimates incremented on dispatch; each server reports its queue "
               "with probability 1/T_u per slot (1 message per report and dispatcher).")
    theory = ("Hyper-scalable JSQ [HSJSQ] with asynchronous (geometric) update intervals; "
              "message rate N/T_u per slot.")
    synchronous = 0
