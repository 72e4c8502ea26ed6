"""One run of the compiled slot loop, returning its raw accumulators."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dispatchlab.engine import loop
from dispatchlab.engine.interface import MESSAGE_KINDS, Kernel, compiled, no_hook
from dispatchlab.engine.rng import make_rng_state
from dispatchlab.model.system import System

BLOCKS = 1000
QUEUE_HISTOGRAM_BINS = 4096


@dataclass
class RawRun:
    """Raw accumulators of one run (see :mod:`dispatchlab.engine.loop` for the layouts)."""

    slots: int
    slots_run: int
    warmup: int
    block_length: int
    bound: int
    block_sum: np.ndarray
    block_pooled: np.ndarray
    queue_sum: np.ndarray
    delay_hist: np.ndarray
    queue_hist: np.ndarray  # distribution of ΣQ(t+1); the last bin is ≥ its index
    messages: np.ndarray  # measured window, by kind
    diag: np.ndarray
    counters: np.ndarray
    moments: np.ndarray
    final_queues: np.ndarray
    seconds: float
    hit_bound: bool = False  # stopped because ΣQ passed ``bound``

    @property
    def measured_slots(self) -> int:
        return int(self.counters[loop.MEASURED_SLOTS])

    def block_means(self) -> np.ndarray:
        """Mean ΣQ of each complete block run (the last block may be partial and is dropped)."""
        complete = self.slots_run // self.block_length
        return self.block_sum[:complete] / self.block_length


def default_bound(system: System) -> int:
    """ΣQ above which a run is declared unstable: far above any stable mean we can simulate."""
    return int(min(2**40, max(10**6, 10**4 * system.n_servers)))


def run_once(system: System, kernel: Kernel, *, slots: int, warmup: int,
             seed: int | np.random.SeedSequence, bound: int, track_delay: bool = True,
             detail: bool = True, initial_queues: np.ndarray | None = None) -> RawRun:
    """Run the slot loop once and return its raw accumulators."""
    n, m = system.n_servers, system.dispatchers
    block_length = max(1, -(-slots // BLOCKS))
    blocks = -(-slots // block_length)
    queues = (np.zeros(n, np.int64) if initial_queues is None
              else np.ascontiguousarray(initial_queues, dtype=np.int64).copy())
    trace = (system.arrivals.trace if system.arrivals.trace is not None
             else np.zeros(1, np.int64)).astype(np.int64)
    ip, fp, ist, fst = kernel.memory()
    out = RawRun(
        slots=slots, slots_run=0, warmup=warmup, block_length=block_length, bound=bound,
        block_sum=np.zeros(blocks), block_pooled=np.zeros(blocks),
        queue_sum=np.zeros(n, np.int64),
        delay_hist=np.zeros(loop.DELAY_BINS, np.int64),
        queue_hist=np.zeros(QUEUE_HISTOGRAM_BINS, np.int64),
        messages=np.zeros(len(MESSAGE_KINDS), np.int64),
        diag=np.zeros(max(1, kernel.n_diagnostics)), counters=np.zeros(loop.N_COUNTERS, np.int64),
        moments=np.zeros(loop.N_MOMENTS), final_queues=queues, seconds=0.0,
    )
    messages_at_warmup = np.zeros_like(out.messages)
    start = time.perf_counter()
    run_slots = compiled(loop.run_slots, only=True)
    slots_run = int(run_slots(
        system.mu, system.service.code, system.service.trials,
        system.arrivals.code, float(system.arrival_rate), system.arrivals.trials, trace,
        system.weights, system.split == "batch", system.dispatch == "per_job",
        compiled(kernel.choose), compiled(kernel.begin_slot), compiled(kernel.end_slot),
        kernel.begin_slot is not no_hook, kernel.end_slot is not no_hook, ip, fp, ist, fst,
        slots, warmup, block_length, bound, track_delay, detail, make_rng_state(seed),
        queues, np.zeros(m, np.int64), out.queue_sum, out.block_sum, out.block_pooled,
        out.delay_hist, out.queue_hist, out.messages, messages_at_warmup, out.diag,
        out.counters, out.moments,
    ))
    out.seconds = time.perf_counter() - start
    out.slots_run, out.hit_bound = abs(slots_run), slots_run < 0
    out.messages -= messages_at_warmup
    return out
