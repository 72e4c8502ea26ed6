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

from dispatchlab.engine.interface import REPORT, choose_function, hook_function
from dispatchlab.engine.kernels import argmin_random_ties
from dispatchlab.engine.rng import uniform
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register

IP_PERIOD, IP_SYNCHRONOUS = range(2)
COUNTDOWN, READY = range(2)
DIAGNOSTICS = ("estimation_error",)


@choose_function
def _estimate_choose(m, jobs, t, Q, mu, ip, fp, ist, fst, rng, msg):
    estimates = ist[m]
    target = argmin_random_ties(estimates[:Q.size], rng)
    estimates[target] += jobs
    return target


@hook_function
def _estimate_begin(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    control = A_m.size
    if ist[control, READY] == 0:
        for m in range(A_m.size):
            for n in range(Q.size):
                ist[m, n] = Q[n]
        ist[control, COUNTDOWN] = ip[IP_PERIOD]
        ist[control, READY] = 1
    return None


@hook_function
def _estimate_end(t, Q, Q_prev, A, A_m, mu, ip, fp, ist, fst, rng, msg, diag, record):
    dispatchers = A_m.size
    N = Q.size
    if ip[IP_SYNCHRONOUS] == 1:
        ist[dispatchers, COUNTDOWN] -= 1
        if ist[dispatchers, COUNTDOWN] == 0:
            for m in range(dispatchers):
                for n in range(N):
                    ist[m, n] = Q[n]
            msg[REPORT] += N * dispatchers
            ist[dispatchers, COUNTDOWN] = ip[IP_PERIOD]
    else:
        probability = fp[0]
        for n in range(N):
            if uniform(rng) < probability:
                for m in range(dispatchers):
                    ist[m, n] = Q[n]
                msg[REPORT] += dispatchers
    if record:  # E|Q_n − Q̃^m_n| over dispatchers and servers, as for LED
        error = 0
        for m in range(dispatchers):
            for n in range(N):
                error += abs(ist[m, n] - Q[n])
        diag[0] += error / (dispatchers * N)
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
