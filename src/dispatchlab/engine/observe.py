"""What the loop measures beyond its sums: the queue imbalance of a slot (DQI₁ and DQI₂²,
``detail``), and on request per-server statistics and a decimated trajectory
(docs/statistics.md#per-server), a step compiled only for a run that observes."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from dispatchlab.compiled.lazy import AbsentStep, lazy_function
from dispatchlab.compiled.signature_types import BOOL, I64, I64_MAT, I64_VEC
from dispatchlab.engine.interface import NOT_FIRST_CLASS

# _imbalance is exact in int64 while N·(ΣQ)² stays below this
IMBALANCE_EXACT_LIMIT = 2.0**62


@njit(**NOT_FIRST_CLASS)
def _imbalance(Q, total):
    """(Σ_n |Q_n − q̄|, Σ_n (Q_n − q̄)²) for q̄ = ΣQ/N = ``total``/N (DQI₁ and DQI₂²).

    In integers, exactly, with one rounding each: Σ|Q_n − q̄| = 2·Σ_{Q_n > q̄}(Q_n − q̄)
    = 2·(N·Σ_{Q_n > q̄} Q_n − k·ΣQ)/N for the k servers above q̄, and
    Σ(Q_n − q̄)² = (N·ΣQ_n² − (ΣQ)²)/N; three integer sums that vectorise, where the
    float loop was a serial chain of additions. Beyond IMBALANCE_EXACT_LIMIT, that loop.

    Below the limit no 64-bit product is needed per server (AVX2 has none: LLVM builds one
    from three 32-bit multiplies): Q_n > q̄ ⟺ Q_n > ⌊ΣQ/N⌋, and Q_n ≤ ΣQ < 2³¹ there, so
    Q_n² is the 32 × 32-bit product of its low half (one ``vpmuludq``): 72 → 42 ns at
    N = 100 on an AMD EPYC."""
    N = Q.size
    if float(N) * float(total) * float(total) < IMBALANCE_EXACT_LIMIT:
        level = total // N
        above_sum = np.int64(0)
        above_count = np.int64(0)
        squares = np.uint64(0)
        for n in range(N):
            q = Q[n]
            above = q > level
            above_sum += q if above else 0
            above_count += above
            low = np.uint64(q) & np.uint64(0xFFFFFFFF)
            squares += low * low
        absolute = 2.0 * float(N * above_sum - above_count * total) / N
        square = float(N * np.int64(squares) - total * total) / N
        return absolute, square
    mean = total / N
    absolute = 0.0
    square = 0.0
    for n in range(N):
        deviation = Q[n] - mean
        absolute += abs(deviation)
        square += deviation * deviation
    return absolute, square


#: LoopObservation.cursor[0] when no trajectory is recorded (never reached)
NO_POINT = np.int64(2**62)
CURSOR_NEXT, CURSOR_POINTS = range(2)
#: trajectory columns: t, ΣQ(t), q(t), then Q_n(t) of each recorded server
POINT_SLOT, POINT_TOTAL, POINT_POOLED, POINT_SERVERS = range(4)


def _observe(t, record, Q, Q_prev, A, total_queue, pooled, per_server, served, server_hist,
             every, servers, trajectory, cursor):
    """The optional observations of slot t (docs/statistics.md#per-server): in a measured
    slot, each server's jobs served Q_n(t) + A_n(t) − Q_n(t+1) and the histogram of
    Q_n(t+1) (its last bin: ≥ its index); at t + 1 = the next trajectory point, the row
    (t + 1, ΣQ(t+1), q(t+1), Q_n(t+1) of each recorded server)."""
    if per_server and record:
        top = server_hist.shape[1] - 1
        for n in range(Q.size):
            q = Q[n]
            served[n] += Q_prev[n] + A[n] - q
            server_hist[n, min(max(q, 0), top)] += 1
    if t + 1 == cursor[CURSOR_NEXT]:
        row = cursor[CURSOR_POINTS]
        trajectory[row, POINT_SLOT] = t + 1
        trajectory[row, POINT_TOTAL] = total_queue
        trajectory[row, POINT_POOLED] = pooled
        for i in range(servers.size):
            trajectory[row, POINT_SERVERS + i] = Q[servers[i]]
        cursor[CURSOR_POINTS] = row + 1
        cursor[CURSOR_NEXT] = t + 1 + every


#: observe(t, record, Q, Q_prev, A, ΣQ(t+1), q(t+1), per_server, served, server_hist, every,
#: servers, trajectory, cursor): :func:`_observe`
OBSERVE_SIGNATURE = types.none(I64, BOOL, I64_VEC, I64_VEC, I64_VEC, I64, I64, BOOL, I64_VEC,
                               I64_MAT, I64, I64_VEC, I64_MAT, I64_VEC)
OBSERVE_TYPE = types.FunctionType(OBSERVE_SIGNATURE)
#: the loop's observation step, a first-class function: compiled for a run that observes
#: (per-server statistics, a trajectory) alone (about a tenth of a cold first run's
#: compiling), :data:`NO_OBSERVE` for the others
observe_step = lazy_function(_observe, OBSERVE_SIGNATURE, allocates=False, from_python=False)
NO_OBSERVE = AbsentStep(OBSERVE_SIGNATURE, "no_observe")
