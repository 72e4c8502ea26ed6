"""LED's local estimates in continuous time: each dispatcher m keeps its own estimates
Q̃^m_n of the jobs present at each server, decides on them alone (no message before a
decision), and refreshes them by messages after its decisions.

* **Push** (the dispatcher samples): after each of its dispatches, with probability p,
  dispatcher m draws ``probes`` distinct servers uniformly and learns their true counts:
  2·probes messages (a query and its answer each).
* **Pull** (the servers report): at each departure, with probability p, the server sends
  its count (after the departure) to a dispatcher drawn uniformly: 1 message. A server
  reports only when a job leaves it, so an idle server whose estimates are high stays
  unreported until a job reaches it.
* **Periodic** (shared, stale information): every ``interval`` time units every
  dispatcher learns every server's count at once (M·N messages) and keeps it until the
  next broadcast — the model in which all dispatchers see the same old state and join
  the same queues (the herd; [Mitz00], Mitzenmacher, "How Useful Is Old Information?").
* **Increment** (option): a dispatcher adds the job it sends to its estimate of the server.

The coins and the draws of the updates come from their own stream, so that the rule's
own draws (ties, samples) are those of the full-information rule it mirrors: with pull at
p = 1, one dispatcher and the increment, L-JSQ's estimates are the true counts at every
decision and it chooses as JSQ does, draw for draw.
"""

from __future__ import annotations

from numba import njit

from dispatchlab.compiled.rng import randint, sample_distinct_row, uniform
from dispatchlab.continuous.choose import P_INCREMENT, P_PROBES, P_UPDATE, PULL, PUSH
from dispatchlab.continuous.servers import S_COUNT

#: the policy's float parameters: the update probability p, the broadcast interval
F_P, F_INTERVAL = range(2)
N_POLICY_FLOATS = 2


@njit(cache=True)
def after_dispatch(estimates, m, n, si, ints, floats, s, probed):
    """Dispatcher m has sent a job to server n: its increment and its push update.
    Returns the messages sent."""
    if ints[P_INCREMENT] != 0:
        estimates[m, n] += 1
    if ints[P_UPDATE] != PUSH or not uniform(s) < floats[F_P]:
        return 0
    probes = ints[P_PROBES]
    sample_distinct_row(s, si.shape[1], probes, probed, 0)  # (probed: a (1, probes) row)
    for k in range(probes):
        server = probed[0, k]
        estimates[m, server] = si[S_COUNT, server]
    return 2 * probes


@njit(cache=True)
def after_departure(estimates, n, si, ints, floats, s):
    """A job has left server n: its pull report. Returns the messages sent."""
    if ints[P_UPDATE] != PULL or not uniform(s) < floats[F_P]:
        return 0
    estimates[randint(s, estimates.shape[0]), n] = si[S_COUNT, n]
    return 1


@njit(cache=True)
def broadcast(estimates, si):
    """Every dispatcher learns every server's count (a periodic update). Returns the
    messages sent."""
    for m in range(estimates.shape[0]):
        for n in range(si.shape[1]):
            estimates[m, n] = si[S_COUNT, n]
    return estimates.shape[0] * si.shape[1]
