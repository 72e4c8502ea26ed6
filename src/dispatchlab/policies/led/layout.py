"""Memory and parameter layout shared by the LED policy's compiled functions.

``ist`` (int64, shape (M + 4, N)):
    rows 0..M−1   Q̃^m, dispatcher m's local estimates
    row  M        scratch for the dispatching strategy
    row  M + 1    the servers sampled by a push update
    row  M + 2    [0]: position of the next pull report in the stream of (slot, server) trials
    row  M + 3    [0]: position of the next push event (per slot), or failures left before it
                  (arrival-triggered)
    rows M + 4..2M + 3  (learn_on_send) slot in which dispatcher m last learnt Q_n at a dispatch
``ip`` (int64): see the *_ constants below.
``fp`` (float64): [p̂, log(1 − p̂)].
``fst`` (float64, shape (1, ·)): row 0 holds the strategy's parameters.
"""

from __future__ import annotations

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
