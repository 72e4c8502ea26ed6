"""The physical limit of a slot on the standard workloads (issue 26, part 3): the work a
slot cannot avoid, as measured costs of its parts on this machine, next to the measured
ns a slot (benchmarks/README.md#physical-limit).

A slot of a standard workload (N = 100 servers, M = 10 dispatchers, λ_Σ = 28.5) must draw
N Bernoulli services (vectorised SplitMix64 outputs), M Poisson arrival counts (one
xoshiro256++ output each, table inversion) and its policy's random choices (one xoshiro
output each), and touch the queue state: the service update reads and writes Q, A, S and
Q(t) (4·N int64) and a policy that reads every queue (JSQ, LED's argmin over its
estimates) scans N int64 at least once a slot. This script measures each
unit cost in a compiled loop: one vectorised Bernoulli draw, one sequential xoshiro draw
and one int64 of an in-cache argmin scan.

    .venv/bin/python benchmarks/limit.py            # the unit costs and the limits
    .venv/bin/python benchmarks/limit.py --bench    # and, in the same run, the bench's ns
                                                    # a slot (ours lean and full, refsim)
"""

from __future__ import annotations

import sys
import time
from math import nan

import numpy as np
from numba import njit

from dispatchlab.bench.machine import processor
from dispatchlab.compiled.rng import make_rng_state, next_u64, splitmix64

N = 100
SLOTS = 200_000


@njit(cache=True)
def _bernoulli(thresholds, S, slots):
    start = np.uint64(12345)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    total = 0
    for _ in range(slots):
        for n in range(thresholds.size):
            bits = splitmix64(start + np.uint64(n + 1) * gamma)
            S[n] = np.int64((bits >> np.uint64(11)) < thresholds[n])
        start += np.uint64(thresholds.size) * gamma
        total += S[0]
    return total


@njit(cache=True)
def _xoshiro(state, draws):
    total = np.uint64(0)
    for _ in range(draws):
        total ^= next_u64(state)
    return total


@njit(cache=True)
def _scan(Q, passes):
    found = 0
    for p in range(passes):
        best = Q[0]
        where = 0
        for n in range(Q.size):
            smaller = Q[n] < best
            best = Q[n] if smaller else best
            where = n if smaller else where
        found += where
        Q[p % Q.size] += 1
    return found


def _ns(run, units: int) -> float:
    run()  # compile / warm
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best / units * 1e9


def unit_costs() -> dict[str, float]:
    """ns per vectorised Bernoulli draw, per xoshiro draw, per int64 scanned."""
    thresholds = np.full(N, np.uint64(0.3 * 2**53))
    S = np.zeros(N, np.int64)
    state = make_rng_state(1)
    Q = np.random.default_rng(1).integers(0, 50, N).astype(np.int64)
    return {
        "bernoulli_draw": _ns(lambda: _bernoulli(thresholds, S, SLOTS), SLOTS * N),
        "xoshiro_draw": _ns(lambda: _xoshiro(state, SLOTS * 10), SLOTS * 10),
        "scanned_int64": _ns(lambda: _scan(Q, SLOTS), SLOTS * N),
    }


#: per workload: (xoshiro draws a slot besides the M = 10 arrival draws, int64 scanned by
#: the policy a slot): wrand one weighted draw per dispatcher with arrivals (1 − e^−2.85 =
#: 0.94 of 10); jsq one pass over the N queues a slot (the slot's argmin, then updated
#: per dispatcher; ties: about one draw each); pod2 two samples each; led-jsq-pull one pass
#: over N estimates a slot (a lower bound: each dispatcher keeps its own) and its updates
#: (geometric gaps between successes: one draw per update, about one a slot);
#: led-pod-push two samples each and one draw per push (p·N = 1 a slot)
POLICY_WORK = {
    "wrand": (9.4, 0),
    "jsq": (9.4, N),
    "pod2": (18.8, 0),
    "led-jsq-pull": (9.4 + 1, N),
    "led-pod-push": (18.8 + 1, 0),
}


def limits(costs: dict[str, float]) -> dict[str, float]:
    """The ns a slot cannot go below, per workload, at these unit costs."""
    service = N * costs["bernoulli_draw"] + 4 * N * costs["scanned_int64"]
    arrivals = 10 * costs["xoshiro_draw"]
    return {name: service + arrivals + draws * costs["xoshiro_draw"]
            + scanned * costs["scanned_int64"] for name, (draws, scanned) in POLICY_WORK.items()}


def main() -> None:
    costs = unit_costs()
    print(f"processor: {processor()}")
    print(", ".join(f"{k} {v:.2f} ns" for k, v in costs.items()))
    bounds = limits(costs)
    if "--bench" not in sys.argv[1:]:
        for name, ns in bounds.items():
            print(f"{name}: limit {ns:.0f} ns a slot")
        return
    from dispatchlab.bench.workloads import run_bench

    print("| workload | limit (ns a slot) | ours lean | ours full | refsim | lean / limit |")
    print("|---|---|---|---|---|---|")
    for row in run_bench(repeat=3):
        lean, full = 1e9 / row["slots_per_second"], 1e9 / row["slots_per_second_full"]
        refsim = 1e9 / row["refsim_slots_per_second"] if "refsim_slots_per_second" in row else nan
        print(f"| {row['name']} | {bounds[row['name']]:.0f} | {lean:.0f} | {full:.0f} | "
              f"{refsim:.0f} | {lean / bounds[row['name']]:.2f} |")


if __name__ == "__main__":
    main()
