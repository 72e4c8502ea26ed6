"""The fluid limit at N = 10⁵: Po-2, JSQ and weighted random routing on homogeneous servers
at ρ = 0.9 and 0.95, the same runs as results/fluid/validation.md's (docs/fluid.md), one
size further. Writes results/fluid/large.md.

    PYTHONPATH=src python results/fluid/large.py

About 6 CPU-minutes on a 2-core AMD EPYC (20,000 slots × 4 replications per point, per-job
dispatch, M = 10, seed 1: 9·10⁸ jobs a replication at ρ = 0.9).
"""

from __future__ import annotations

import time
from pathlib import Path

import dispatchlab as dl

OUT = Path(__file__).with_name("large.md")
N = 100_000
LOADS = (0.9, 0.95)
POLICIES = ("wrand", "pod", "jsq")
SLOTS, REPLICATIONS, SEED = 20_000, 4, 1


def main() -> None:
    started = time.process_time()
    lines = ["# The fluid limit at N = 10⁵", "",
             "Made by `PYTHONPATH=src python results/fluid/large.py` (homogeneous μ = 0.5, "
             f"Poisson arrivals, per-job dispatch, M = 10; {SLOTS:,} slots × {REPLICATIONS} "
             f"replications per point, seed {SEED}, as results/fluid/validation.md; E[Q] per "
             "server = E[ΣQ]/N with its 95 % CI). c/N is the refined mean field's 1/N term "
             "where it is derived (docs/fluid.md#refined).", "",
             "| policy | ρ | fluid E[Q] | simulation − fluid | c/N | CPU s |",
             "|---|---|---|---|---|---|"]
    for policy in POLICIES:
        for load in LOADS:
            system = dl.System.build(f"{N}x0.5", load=load, dispatch="per-job", dispatchers=10)
            fluid = dl.fluid(system, policy, refined=policy != "jsq")
            before = time.process_time()
            result = dl.simulate(system, policy, slots=SLOTS, replications=REPLICATIONS,
                                 seed=SEED, delay="off", workers=1)
            gap = result.mean_total_queue / N - fluid.mean_queue_per_server
            half = (result.ci_high - result.ci_low) / 2 / N
            term = ("—" if fluid.refined_correction is None
                    else f"{fluid.refined_correction / N:.6f}")
            lines.append(f"| {policy} | {load} | {fluid.mean_queue_per_server:.5f} | "
                         f"{gap:+.5f} ± {half:.5f} | {term} | "
                         f"{time.process_time() - before:.0f} |")
    lines += ["", f"CPU: {time.process_time() - started:.0f} s.", ""]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
