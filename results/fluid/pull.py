"""The fluid limit of JIQ and JBT-2 against simulations with one and with ten dispatchers
(docs/fluid.md#pull). Writes results/fluid/pull.md.

    PYTHONPATH=src python results/fluid/pull.py

About 35 s of CPU on a 2-core Intel Xeon (20,000 slots × 2 replications, seed 1,
per-job dispatch, N×0.5 at ρ = 0.9; uniform ID pick: the weighted pick scans a
dispatcher's whole list per job, O(N) with one dispatcher).
"""

from __future__ import annotations

import time
from pathlib import Path

import dispatchlab as dl

OUT = Path(__file__).with_name("pull.md")
SIZES = (100, 1_000, 10_000)
CASES = (("jbt", {"r": 2, "weighted": False}, "JBT-2 (uniform pick and fallback)"),
         ("jiq", {"removal": "uniform"}, "JIQ (uniform pick)"))


def main() -> None:
    started = time.process_time()
    lines = ["# The fluid limit of JIQ and JBT-r against simulations, M = 1 and M = 10", "",
             "Made by `PYTHONPATH=src python results/fluid/pull.py` (N servers of rate 0.5 at "
             "ρ = 0.9, per-job dispatch, 20,000 slots × 2 replications, seed 1). The gap is "
             "simulated E[Q] per server − fluid, ± the 95 % CI's half-width.", "",
             "| policy | M | fluid E[Q] | " + " | ".join(f"N = {n:,}" for n in SIZES) + " |",
             "|---|---|---|" + "---|" * len(SIZES)]
    for policy, params, label in CASES:
        for dispatchers in (1, 10):
            cells = []
            for n in SIZES:
                system = dl.System.build(f"{n}x0.5", load=0.9, dispatch="per-job",
                                         dispatchers=dispatchers)
                fluid = dl.fluid(system, policy, policy_params=params).mean_queue_per_server
                result = dl.simulate(system, policy, policy_params=params, slots=20_000,
                                     replications=2, seed=1, delay="off")
                half = (result.ci_high - result.ci_low) / 2 / n
                cells.append(f"{result.mean_total_queue / n - fluid:+.4f} ± {half:.4f}")
            lines.append(f"| {label} | {dispatchers} | {fluid:.4f} | " + " | ".join(cells) + " |")
    lines += ["", f"CPU: {time.process_time() - started:.0f} s.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
