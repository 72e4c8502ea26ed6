"""Tagged against exact delay quantiles on the standard workloads (issue 26, part 1): the
same run (one seed: tagging draws from a stream of its own, so the system's path is the
same) with every job timed through its FIFO (``delay="all"``) and with the default sample
of tagged jobs (``delay="tagged"``, docs/statistics.md#tagged-delays), and whether each
exact quantile lies in its tagged 95 % interval.

    .venv/bin/python benchmarks/tagged_vs_exact.py [--slots 1000000] [--seed 7] \\
        [--out results/bench/tagged_vs_exact.json]

Writes the JSON (one object per workload, with the processor and the command) and prints
the Markdown table of benchmarks/README.md; tests/bench/test_bench_evidence.py checks that
table against the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dispatchlab import simulate
from dispatchlab.bench.machine import processor
from dispatchlab.bench.workloads import WORKLOADS
from dispatchlab.policies import make_policy

QUANTILES = ("p50", "p90", "p99", "p999")


def measure(slots: int, seed: int) -> list[dict]:
    rows = []
    for workload in WORKLOADS:
        system = workload.system()
        policy = make_policy(workload.policy, **workload.params)
        exact = simulate(system, policy, slots=slots, seed=seed, delay="all")
        tagged = simulate(system, policy, slots=slots, seed=seed, delay="tagged")
        row = {"workload": workload.name, "slots": slots, "seed": seed,
               "exact_jobs": exact.delay_jobs, "tagged_jobs": tagged.delay_jobs,
               "mean_total_queue_exact": exact.mean_total_queue,
               "mean_total_queue_tagged": tagged.mean_total_queue}
        for q in QUANTILES:
            low = getattr(tagged, f"delay_{q}_ci_low")
            high = getattr(tagged, f"delay_{q}_ci_high")
            value = getattr(exact, f"delay_{q}")
            row[q] = {"exact": value, "tagged": getattr(tagged, f"delay_{q}"),
                      "ci_low": low, "ci_high": high, "inside": bool(low <= value <= high)}
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| workload | p50 exact / tagged [CI] | p90 | p99 | p99.9 |",
             "|---|---|---|---|---|"]
    for row in rows:
        cells = [f"{row[q]['exact']:g} / {row[q]['tagged']:g} "
                 f"[{row[q]['ci_low']:g}, {row[q]['ci_high']:g}]" for q in QUANTILES]
        lines.append(f"| {row['workload']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("results/bench/tagged_vs_exact.json"))
    args = parser.parse_args(argv)
    rows = measure(args.slots, args.seed)
    document = {"command": "python benchmarks/tagged_vs_exact.py "
                           f"--slots {args.slots} --seed {args.seed}",
                "processor": processor(), "workloads": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(table(rows))
    return 0 if all(row[q]["inside"] for row in rows for q in QUANTILES) else 1


if __name__ == "__main__":
    sys.exit(main())
