"""The Halfin–Whitt table: β, N → E[Q] per server, the waiting probability and the delay's
99th percentile of JSQ, JIQ, Po-2 and weighted random, from the catalog experiment
``halfin-whitt`` in the Reproductions store (results/reproductions/store.sqlite). Writes
results/many_servers/halfin_whitt.md.

    results/reproductions/run.sh halfin-whitt
    PYTHONPATH=src python results/many_servers/halfin_whitt.py
    PYTHONPATH=src python results/many_servers/figure.py     # docs/many-servers/*.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from large_system import STORE, interval, write_page  # noqa: E402  (the same cells as the large-system table)

from dispatchlab.experiments.catalog.many_servers import BETAS, POLICIES, SIZES  # noqa: E402
from dispatchlab.experiments.store import Store  # noqa: E402
from dispatchlab.report.derived import jobs_waiting_per_server  # noqa: E402
from dispatchlab.report.exact_evidence import (  # noqa: E402
    DEFAULT_RANDOM_ROUTING,
    load_random_routing,
)

ROOT = Path(__file__).resolve().parents[2]

OUT = Path(__file__).with_name("halfin_whitt.md")
SHOWN = ("jsq", "jiq", "pod", "wrand")


#: the columns weighted random routing has exactly (results/exact/random_routing.json)
EXACT_COLUMNS = ("per_server", "waiting_jobs", "root_waiting_jobs")


def exact_cell(size: int, rows: pd.DataFrame, column: str) -> str:
    """Weighted random routing's exact value of ``column`` at N = ``size`` and the rows'
    load: N independent queues (results/exact/random_routing.py)."""
    load = float(rows["system.load"].iloc[0])
    total = load_random_routing(ROOT / DEFAULT_RANDOM_ROUTING)[
        (f"{size}x0.1", "poisson", "bernoulli", "per_job")][round(load, 12)]
    exact = rows.iloc[:1].assign(mean_total_queue=total)
    value = {"per_server": total / size,
             "waiting_jobs": float(jobs_waiting_per_server(exact)[0])}
    value["root_waiting_jobs"] = value["waiting_jobs"] * size ** 0.5
    return f"{value[column]:.3f}"


def table() -> str:
    """The page's text, from the committed store."""
    with Store(STORE) as db:
        frame = db.frame("halfin-whitt")
    frame["n"] = frame["system.n_servers"]
    frame["per_server"] = frame["mean_total_queue"] / frame["n"]
    frame["waiting_jobs"] = jobs_waiting_per_server(frame)
    frame["root_waiting_jobs"] = frame["waiting_jobs"] * frame["n"] ** 0.5
    lines = ["# The Halfin–Whitt regime", "",
             "Made by `PYTHONPATH=src python results/many_servers/halfin_whitt.py` from the "
             "catalog experiment `halfin-whitt` (docs/model.md#many-servers) in "
             "`results/reproductions/store.sqlite` (76 CPU-seconds, AMD EPYC): N homogeneous "
             "servers of μ = 0.1 (a slot is a tenth of a job), M = 10, Poisson arrivals "
             "dispatched job by job, 1 − ρ = β/√N, 4 replications of 20,000 slots a point "
             "(30 % warm-up); mean ± 95 % t half-width, \"unstable\" where a replication was "
             "judged so. E[Q] is E[ΣQ]/N at the end of a slot (after its service: a server "
             "that finished its only job shows 0), so it can sit below ρ. The loads: "
             + ", ".join(f"β = {beta:g}: ρ = " + " / ".join(
                 f"{1 - beta / n ** 0.5:.4g}" for n in SIZES) for beta in BETAS)
             + f" at N = {' / '.join(f'{n:,}' for n in SIZES)}.", "",
             "What the slotted model changes: the continuous-time results ([HW81]; JIQ and "
             "JSQ in this regime) let jobs arrive one at a time, so a job finds the idle "
             "servers the previous ones left. Here a slot's ρ·μ·N = 0.1ρN jobs arrive "
             "together and M = 10 dispatchers place them from the slot's start: the jobs "
             "that meet at a server idle at the slot's start wait (docs/statistics.md#waiting), "
             "so P(wait) does not vanish for JSQ, whose dispatchers pick among the shortest "
             "queues independently, while JIQ's idle reports spread a slot's jobs over "
             "distinct idle servers.", "",
             "What these runs cannot show: weighted random routing is N independent "
             "queues at load ρ, whose stationary mean grows like ρ/(1 − ρ) = √N/β − 1 "
             "(≈ 200 per server at β = 0.5, N = 10⁴) and which relax in ~1/(μ(1 − √ρ)²) "
             "slots (10⁷ there): its cells are the transient of 20,000 slots from empty, "
             "lower bounds, not stationary values; its stationary E[Q] and jobs waiting "
             "are exact (N independent single-server chains, results/exact/random_routing.py) "
             "and shown in bold beside the run's. JSQ, JIQ and Po-2 relax within the run.",
             "",
             "Jobs waiting per server, E[Σ_n (Q_n + A_n − 1)⁺]/N, is E[Q] − ρ(1 − μ) by "
             "rate balance (docs/statistics.md#jobs-waiting); the Halfin–Whitt results "
             "make it vanish like 1/√N under JSQ and JIQ, so that √N times it levels off.",
             ""]
    for label, column in (("E[Q] per server", "per_server"),
                          ("Jobs waiting per server", "waiting_jobs"),
                          ("√N × jobs waiting per server", "root_waiting_jobs"),
                          ("P(wait)", "waiting_probability"), ("delay p99 (slots)",
                                                               "delay_p99")):
        lines += [f"## {label}", "",
                  "| policy | β | " + " | ".join(f"N = {n:,}" for n in SIZES) + " |",
                  "|---|---|" + "---|" * len(SIZES)]
        for policy in POLICIES:
            if policy.name not in SHOWN:
                continue
            for beta in BETAS:
                rows = frame[(frame["policy_label"] == policy.display) & (frame["x"] == beta)]
                cells = [interval(rows[rows["n"] == n][column].to_numpy(float),
                                  rows[rows["n"] == n]["stability"].to_numpy())
                         for n in SIZES]
                if policy.name == "wrand" and column in EXACT_COLUMNS:
                    cells = [f"**{exact_cell(n, rows[rows['n'] == n], column)}** (exact; "
                             f"run {cell})" for n, cell in zip(SIZES, cells, strict=True)]
                lines.append(f"| {policy.display} | {beta:g} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    write_page(OUT, table())
