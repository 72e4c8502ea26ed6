"""Where the slot loop keeps things: the entries of its ``counters``, ``moments`` and
``carry`` arrays, the statuses a chunk stops with, and the bin of the delay histogram
(compiled here from :func:`dispatchlab.compiled.histogram.delay_bin`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from dispatchlab.compiled import histogram

# counters[...] layout
ARRIVALS, ARRIVALS_MEASURED, DEPARTURES, DISPATCH_EVENTS, DISPATCH_EVENTS_MEASURED = range(5)
HERDING_SLOTS, INVARIANT_VIOLATIONS, MAX_TOTAL_QUEUE, MEASURED_SLOTS = range(5, 9)
TAGS_DROPPED = 9  # tagged jobs not followed: the tag table was full (see _tag_jobs)
# measured jobs placed behind another job: its server's Q_n(t) plus the jobs placed on it
# earlier in the slot (its own batch's included) was > 0 (the waiting probability)
JOBS_QUEUED = 10
# measured jobs whose server held a job at the start of their slot, Q_n(t) > 0 (the fluid
# limit's waiting probability; jobs placed earlier in the slot do not count)
JOBS_FOUND_BUSY = 11
N_COUNTERS = 12

# moments[...] layout (sums over measured slots)
SUM_TOTAL_QUEUE, SUM_TOTAL_QUEUE_SQ, SUM_POOLED, SUM_QU, SUM_DQI1, SUM_DQI2 = range(6)
SUM_DELAY, SUM_UNUSED = 6, 7
# Σ ΣU(t)² and Σ ū(t)², ū the pooled queue's unused service: the O(ε) terms of the drift
# identity that ties ε·E[X] to the Eq. (7) term E[ΣQ(t+1)·ΣU(t)] (docs/statistics.md)
SUM_UNUSED_SQ, SUM_POOLED_UNUSED_SQ = 8, 9
N_MOMENTS = 10

# carry[...] layout: what a chunk hands to the next one, and why it stopped
CARRY_POOLED, CARRY_FIFO_FULL, CARRY_STATUS, CARRY_BAD_TARGET, CARRY_BAD_DISPATCHER = range(5)
CARRY_BAD_SLOT = 5
# the tagged jobs (delay="tagged"): how many are followed, the jobs still to pass before the
# next tag, the flag of a chunk stopped for a tag table more than half full, and the first
# free row of the tag table (−1: none)
CARRY_TAG_COUNT, CARRY_TAG_SKIP, CARRY_TAGS_FULL, CARRY_TAG_FREE = 6, 7, 8, 9
N_CARRY = 10

# state.work's rows, one entry per server n: A_n(t), Q_n(t) before the slot's service, the
# last slot and the dispatcher that chose n, S_n(t) (then the jobs n served); row
# tags.ARRIVED_ON counts the jobs placed on n in the measured slots
WORK_ARRIVALS, WORK_Q_PREV, WORK_LAST_SLOT, WORK_LAST_CHOOSER, WORK_SERVICE = range(5)
#: CARRY_TAG_SKIP when nothing is tagged (the loop leaves it alone then)
NO_TAGS = np.int64(2**62)
#: CARRY_TAG_SKIP of a tagged run before its first tag: the first gap is still to draw
TAG_START = np.int64(-1)
# carry[CARRY_STATUS]: the chunk ran to t_stop (or stopped early for a FIFO about to fill
# up, with CARRY_FIFO_FULL set), ΣQ passed the bound, or ``choose`` returned a bad server
STATUS_RUNNING, STATUS_HIT_BOUND, STATUS_BAD_TARGET = range(3)
#: per-job dispatch: the most servers one adapter call chooses (a dispatcher's jobs in a
#: slot, that many at a time; a power of 2, so that the index into them is a mask)
TARGET_BUFFER = 32

#: the delay histogram's bin of a delay (compiled.histogram), inlined where delays are timed
delay_bin = njit(inline="always", cache=True)(histogram.delay_bin)
