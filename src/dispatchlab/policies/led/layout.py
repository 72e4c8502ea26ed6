"""The LED policy's memory layout, and the compiled accessors its rules read it through.

``int_state`` (int64, shape (M + 4, N)):
    rows 0..M−1   Q̃^m, dispatcher m's local estimates          :func:`estimates`
    row  M        scratch for the dispatching strategy          :func:`strategy_scratch_row`
    row  M + 1    the servers sampled by a push update          :func:`push_sample_row`
    row  M + 2    [0]: position of the next pull report in the stream of (slot, server)
                  trials                                        :func:`pull_position`
    row  M + 3    [0]: position of the next push event (per slot), or failures left before
                  it (arrival-triggered)                        :func:`push_position`
    rows M + 4..2M + 3  (learn_on_send only) the slot in which dispatcher m last learnt
                  Q_n at a dispatch                             :func:`learnt_slots`
    then the index rows, after the learn_on_send rows, that keep what the strategy needs
    of Q̃^m current at every write (:func:`write_estimate`), by ``ip[IP_INDEX]``:
      INDEX_TREE (L-JSQ and LSQ with push updates, N ≥ 64): M rows, dispatcher m's
                  incremental minimum of Q̃^m (:mod:`.min_tree`) :func:`estimate_index`
      INDEX_BLOCKS (L-JSQ and LSQ with pull updates, N ≥ 64): M rows, dispatcher m's
                  block and group minima of Q̃^m (:mod:`.min_blocks`)
      INDEX_SUM (L-JBA, plain average): ⌈M/N⌉ rows, entry m of the flattened rows is
                  Σ_n Q̃^m_n                                    :func:`estimate_index`
      INDEX_NONE: no rows (the strategy scans)
``int_params`` (int64): see the IP_ constants and their accessors below; ``ip[IP_MEASURE_ERROR]``
    is the stride of the error measurement (0: off; k: every k-th slot).
``float_params`` (float64): [p̂, log(1 − p̂)]              :func:`update_p`, :func:`log_miss`
    then, for INDEX_SUM, the alias table of μ     :func:`rate_alias_table`
``float_state`` (float64, shape (1, ·)): row 0 holds the strategy's parameters
                                               :func:`strategy_params`
"""

from __future__ import annotations

from numba import njit

from dispatchlab.compiled.prefetch import prefetch
from dispatchlab.policies.led.min_blocks import HEADER, block_entry, block_write
from dispatchlab.policies.led.min_tree import mark_dirty

# ip entries
IP_DISPATCHERS, IP_SERVERS, IP_INCREMENT, IP_UPDATE, IP_TRIGGER = range(5)
IP_PUSH_D, IP_MEASURE_ERROR, IP_STRATEGY, IP_LEARN, IP_INDEX = 5, 6, 7, 8, 9
IP_SIZE = 10

# fp entries
FP_P, FP_LOG_MISS = 0, 1
FP_SIZE = 2

UPDATE_PUSH, UPDATE_PULL = 0, 1
INDEX_NONE, INDEX_TREE, INDEX_SUM, INDEX_BLOCKS = 0, 1, 2, 3
TRIGGER_SLOT, TRIGGER_ARRIVAL = 0, 1

# the int_state rows after the M estimate rows, by their offset from M: the strategy's scratch,
# the push sample, the pull position, the push position
SCRATCH_ROW, PUSH_SAMPLE_ROW, PULL_POSITION_ROW, PUSH_POSITION_ROW = 0, 1, 2, 3
EXTRA_ROWS = 4


@njit(inline="always", cache=True)
def dispatchers(memory):
    """M, the number of dispatchers."""
    return memory.int_params[IP_DISPATCHERS]


@njit(inline="always", cache=True)
def estimates(memory, m):
    """Q̃^m, dispatcher m's local estimates (a writable row of N entries)."""
    return memory.int_state[m]


@njit(inline="always", cache=True)
def index_rows_start(memory):
    """The first index row: after the learn_on_send rows when there are any."""
    M = memory.int_params[IP_DISPATCHERS]
    return M + EXTRA_ROWS + (M if memory.int_params[IP_LEARN] != 0 else 0)


@njit(inline="always", cache=True)
def index_kind(memory):
    """INDEX_NONE, INDEX_TREE, INDEX_BLOCKS or INDEX_SUM: what the index rows keep."""
    return memory.int_params[IP_INDEX]


@njit(inline="always", cache=True)
def estimate_index(memory, m):
    """Dispatcher m's index of Q̃^m for :func:`write_estimate`: its min-tree row
    (INDEX_TREE) or block-minima row (INDEX_BLOCKS), a one-entry view of Σ_n Q̃^m_n
    (INDEX_SUM), or a row that must not be written (INDEX_NONE, so that callers need no
    branch to name it)."""
    kind = memory.int_params[IP_INDEX]
    start = index_rows_start(memory)
    if kind == INDEX_TREE or kind == INDEX_BLOCKS:
        return memory.int_state[start + m]
    if kind == INDEX_SUM:
        N = memory.int_state.shape[1]
        column = m % N
        return memory.int_state[start + m // N, column:column + 1]
    return memory.int_state[m]


@njit(inline="always", cache=True)
def write_estimate(values, index, kind, n, value):
    """Q̃^m_n ← value (``values`` = Q̃^m), keeping dispatcher m's index informed: the
    block of n is marked dirty in the min tree, the (min, count) of n's block follows the
    change, or the sum Σ_n Q̃^m_n moves by it."""
    if kind == INDEX_BLOCKS:
        block_write(values, index, n, value)
        return
    if kind == INDEX_TREE:
        mark_dirty(index, n)
    elif kind == INDEX_SUM:
        index[0] += value - values[n]
    values[n] = value


@njit(inline="always", cache=True)
def prefetch_estimate(memory, m, n):
    """Prefetch what a write of Q̃^m_n touches: the estimate and, with block minima, its
    block's pair (a batch of writes to random rows then waits for its misses together)."""
    width = memory.int_state.shape[1]
    prefetch(memory.int_state, m * width + n)
    if memory.int_params[IP_INDEX] == INDEX_BLOCKS:
        first = index_rows_start(memory)
        # (the row's header is the same in every dispatcher's row)
        prefetch(memory.int_state, (first + m) * width + block_entry(memory.int_state[first], n))


@njit(inline="always", cache=True)
def prefetch_next_index(memory, m):
    """With block minima: prefetch dispatcher m + 1's group pairs, which the engine asks
    next within the slot, so that their loads overlap this choice's (out of cache at
    M = 100, they were the first of each choice's misses)."""
    if memory.int_params[IP_INDEX] != INDEX_BLOCKS or m + 1 >= memory.int_params[IP_DISPATCHERS]:
        return
    first = index_rows_start(memory)
    start = (first + m + 1) * memory.int_state.shape[1]
    for k in range(0, HEADER + 2 * memory.int_state[first, 3], 8):
        prefetch(memory.int_state, start + k)


@njit(inline="always", cache=True)
def rate_alias_table(memory):
    """INDEX_SUM: the alias table of μ (for :func:`dispatchlab.compiled.alias.alias_draw`)."""
    return memory.float_params[FP_SIZE:]


@njit(inline="always", cache=True)
def increments(memory):
    """The LSQ option: Q̃^m_n += jobs sent at dispatch."""
    return memory.int_params[IP_INCREMENT] != 0


@njit(inline="always", cache=True)
def learns_on_send(memory):
    """The LSQ option of the group's simulator: the destination answers with its queue."""
    return memory.int_params[IP_LEARN] != 0


@njit(inline="always", cache=True)
def learnt_slots(memory, m):
    """learnt_slots(memory, m)[n]: the slot in which dispatcher m last learnt Q_n by sending
    there (−1: never); only with learn_on_send."""
    return memory.int_state[memory.int_params[IP_DISPATCHERS] + EXTRA_ROWS + m]


@njit(inline="always", cache=True)
def strategy_code(memory):
    """The built-in dispatching strategy's code (see :mod:`.strategies`)."""
    return memory.int_params[IP_STRATEGY]


@njit(inline="always", cache=True)
def strategy_params(memory):
    """The dispatching strategy's float parameters."""
    return memory.float_state[0]


@njit(inline="always", cache=True)
def strategy_scratch_row(memory):
    """Index of the ``int_state`` row the dispatching strategy may use as scratch."""
    return memory.int_params[IP_DISPATCHERS] + SCRATCH_ROW


@njit(inline="always", cache=True)
def push_sample_row(memory):
    """Index of the ``int_state`` row that holds the servers sampled by a push update."""
    return memory.int_params[IP_DISPATCHERS] + PUSH_SAMPLE_ROW


@njit(inline="always", cache=True)
def pull_position(memory):
    """Row whose entry 0 is the position of the next pull report (−1: not drawn yet)."""
    return memory.int_state[memory.int_params[IP_DISPATCHERS] + PULL_POSITION_ROW]


@njit(inline="always", cache=True)
def push_position(memory):
    """Row whose entry 0 is the position of the next push event (−1: not drawn yet)."""
    return memory.int_state[memory.int_params[IP_DISPATCHERS] + PUSH_POSITION_ROW]


@njit(inline="always", cache=True)
def push_d(memory):
    """d, the number of distinct servers a push update samples."""
    return memory.int_params[IP_PUSH_D]


@njit(inline="always", cache=True)
def arrival_triggered(memory):
    """True when the push coin is flipped only in slots with arrivals at the dispatcher."""
    return memory.int_params[IP_TRIGGER] == TRIGGER_ARRIVAL


@njit(inline="always", cache=True)
def measures_error(memory):
    """True when the policy accumulates E|Q_n − Q̃^m_n|."""
    return memory.int_params[IP_MEASURE_ERROR] != 0


@njit(inline="always", cache=True)
def error_stride(memory):
    """k: the estimation error is measured in every k-th slot."""
    return memory.int_params[IP_MEASURE_ERROR]


@njit(inline="always", cache=True)
def update_p(memory):
    """p̂, the update probability per trial."""
    return memory.float_params[FP_P]


@njit(inline="always", cache=True)
def log_miss(memory):
    """log(1 − p̂) (−inf when p̂ = 1), for geometric gaps between successes."""
    return memory.float_params[FP_LOG_MISS]
