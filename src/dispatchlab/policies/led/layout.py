"""The LED policy's memory layout, and the compiled accessors its rules read it through.

``ist`` (int64, shape (M + 4, N)):
    rows 0..M−1   Q̃^m, dispatcher m's local estimates          :func:`estimates`
    row  M        scratch for the dispatching strategy          :func:`strategy_scratch_row`
    row  M + 1    the servers sampled by a push update          :func:`push_sample_row`
    row  M + 2    [0]: position of the next pull report in the stream of (slot, server)
                  trials                                        :func:`pull_position`
    row  M + 3    [0]: position of the next push event (per slot), or failures left before
                  it (arrival-triggered)                        :func:`push_position`
    rows M + 4..2M + 3  (learn_on_send only) the slot in which dispatcher m last learnt
                  Q_n at a dispatch                             :func:`learnt_slots`
    the next M rows (L-JSQ and LSQ only) dispatcher m's incremental minimum of Q̃^m, see
                  :mod:`.min_tree`: rows M + 4 .. 2M + 3, or 2M + 4 .. 3M + 3 after the
                  learn_on_send rows                            :func:`min_tree`
    (trees only where a tree row fits in N entries, i.e. N ≥ 6; smaller N scan)
``ip`` (int64): see the IP_ constants and their accessors below; ``ip[IP_MEASURE_ERROR]``
    is the stride of the error measurement (0: off; k: every k-th slot).
``fp`` (float64): [p̂, log(1 − p̂)]              :func:`update_p`, :func:`log_miss`
``fst`` (float64, shape (1, ·)): row 0 holds the strategy's parameters
                                               :func:`strategy_params`
"""

from __future__ import annotations

from numba import njit

# ip entries
IP_DISPATCHERS, IP_SERVERS, IP_INCREMENT, IP_UPDATE, IP_TRIGGER = range(5)
IP_PUSH_D, IP_MEASURE_ERROR, IP_STRATEGY, IP_LEARN = 5, 6, 7, 8
IP_SIZE = 9

# fp entries
FP_P, FP_LOG_MISS = 0, 1
FP_SIZE = 2

UPDATE_PUSH, UPDATE_PULL = 0, 1
TRIGGER_SLOT, TRIGGER_ARRIVAL = 0, 1

EXTRA_ROWS = 4  # scratch, push sample, pull position, push position


@njit(inline="always", cache=True)
def dispatchers(memory):
    """M, the number of dispatchers."""
    return memory.ip[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def estimates(memory, m):
    """Q̃^m, dispatcher m's local estimates (a writable row of N entries)."""
    return memory.ist[m]


@njit(inline="always", cache=True)
def _tree_rows_start(memory):
    """The first min-tree row: after the learn_on_send rows when there are any."""
    M = memory.ip[IP_DISPATCHERS]
    return M + EXTRA_ROWS + (M if memory.ip[IP_LEARN] != 0 else 0)


@njit(inline="always", cache=True)
def has_min_tree(memory):
    """True when the dispatchers keep an incremental minimum of their estimates."""
    return memory.ist.shape[0] > _tree_rows_start(memory)


@njit(inline="always", cache=True)
def min_tree(memory, m):
    """Dispatcher m's incremental minimum (:mod:`.min_tree`) when :func:`has_min_tree`, else
    a row that must not be written (so that callers need no branch to name it)."""
    if has_min_tree(memory):
        return memory.ist[_tree_rows_start(memory) + m]
    return memory.ist[m]


@njit(inline="always", cache=True)
def increments(memory):
    """The LSQ option: Q̃^m_n += jobs sent at dispatch."""
    return memory.ip[IP_INCREMENT] != 0


@njit(inline="always", cache=True)
def learns_on_send(memory):
    """The LSQ option of the group's simulator: the destination answers with its queue."""
    return memory.ip[IP_LEARN] != 0


@njit(inline="always", cache=True)
def learnt_slots(memory, m):
    """learnt_slots(memory, m)[n]: the slot in which dispatcher m last learnt Q_n by sending
    there (−1: never); only with learn_on_send."""
    return memory.ist[memory.ip[IP_DISPATCHERS] + EXTRA_ROWS + m]


@njit(inline="always", cache=True)
def strategy_code(memory):
    """The built-in dispatching strategy's code (see :mod:`.strategies`)."""
    return memory.ip[IP_STRATEGY]


@njit(inline="always", cache=True)
def strategy_params(memory):
    """The dispatching strategy's float parameters."""
    return memory.fst[0]


@njit(inline="always", cache=True)
def strategy_scratch_row(memory):
    """Index of the ``ist`` row the dispatching strategy may use as scratch."""
    return memory.ip[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def push_sample_row(memory):
    """Index of the ``ist`` row that holds the servers sampled by a push update."""
    return memory.ip[IP_DISPATCHERS] + 1


@njit(inline="always", cache=True)
def pull_position(memory):
    """Row whose entry 0 is the position of the next pull report (−1: not drawn yet)."""
    return memory.ist[memory.ip[IP_DISPATCHERS] + 2]


@njit(inline="always", cache=True)
def push_position(memory):
    """Row whose entry 0 is the position of the next push event (−1: not drawn yet)."""
    return memory.ist[memory.ip[IP_DISPATCHERS] + 3]


@njit(inline="always", cache=True)
def push_d(memory):
    """d, the number of distinct servers a push update samples."""
    return memory.ip[IP_PUSH_D]


@njit(inline="always", cache=True)
def arrival_triggered(memory):
    """True when the push coin is flipped only in slots with arrivals at the dispatcher."""
    return memory.ip[IP_TRIGGER] == TRIGGER_ARRIVAL


@njit(inline="always", cache=True)
def measures_error(memory):
    """True when the policy accumulates E|Q_n − Q̃^m_n|."""
    return memory.ip[IP_MEASURE_ERROR] != 0


@njit(inline="always", cache=True)
def error_stride(memory):
    """k: the estimation error is measured in every k-th slot."""
    return memory.ip[IP_MEASURE_ERROR]


@njit(inline="always", cache=True)
def update_p(memory):
    """p̂, the update probability per trial."""
    return memory.fp[FP_P]


@njit(inline="always", cache=True)
def log_miss(memory):
    """log(1 − p̂) (−inf when p̂ = 1), for geometric gaps between successes."""
    return memory.fp[FP_LOG_MISS]
