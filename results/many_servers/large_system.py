"""The large-system table: policy × N → E[Q] per server and the waiting probability with
their 95 % intervals, beside the fluid limit's values (docs/fluid.md), from the catalog
experiment ``large-system`` in the Reproductions store (results/reproductions/store.sqlite,
where its claims are judged). Writes results/many_servers/large_system.md.

    results/reproductions/run.sh large-system   # the experiment, then the store compacted
    PYTHONPATH=src python results/many_servers/large_system.py

The experiment took 6 CPU-minutes on a 2-core AMD EPYC; this table a few seconds (the
fluid fixed points).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

import dispatchlab as dl
from dispatchlab.experiments.catalog.many_servers import (
    CLASSES,
    HUGE_SIZE,
    POLICIES,
    SIZES,
    families,
)
from dispatchlab.experiments.store import Store
from dispatchlab.stats.estimators import t_interval

HERE = Path(__file__).parent
STORE = HERE.parent / "reproductions" / "store.sqlite"
OUT = HERE / "large_system.md"
#: the policies the fluid limit is derived for (docs/fluid.md), with their parameters
FLUID = {"wrand": {}, "jsq": {}, "pod": {"d": 2}, "jiq": {}, "jbt": {"r": 2}}


def interval(values: np.ndarray, stability: np.ndarray) -> str:
    """mean ± the 95 % t half-width over the replications; "unstable" when a replication
    was judged so, — when none ran or a value is missing."""
    if (stability == "unstable").any():
        return "unstable"
    if values.size == 0 or not np.all(np.isfinite(values)):
        return "—"
    mean, low, high = t_interval(values)
    return f"{mean:.3f} ± {(high - low) / 2:.3f}"


def fluid_text(value: float) -> str:
    return "—" if math.isnan(value) else "unstable" if math.isinf(value) else f"{value:.3f}"


def fluid_values(load: float) -> dict[str, tuple[float, float]]:
    """(E[Q] per server, P(wait)) of the fluid limit at ``load`` for each policy it covers."""
    system = dl.System.build(CLASSES.replace("0.5x", "50x"), load=load, dispatch="per_job",
                             dispatchers=10)
    out = {}
    for name, params in FLUID.items():
        try:
            fluid = dl.fluid(system, name, policy_params=params or None)
        except dl.ValidationError:  # unstable on this system (Po-2 beyond ρ̄ = 0.67): none
            out[name] = (math.inf, math.inf)
            continue
        out[name] = (fluid.mean_queue_per_server, fluid.wait_probability)
    return out


def table() -> str:
    """The page's text, from the committed store."""
    with Store(STORE) as db:
        frame = pd.concat([db.frame("large-system"), db.frame("large-system-1e5")],
                          ignore_index=True)
    frame["n"] = frame["system.n_servers"]
    frame["per_server"] = frame["mean_total_queue"] / frame["n"]
    loads = sorted(frame["load"].round(6).unique())
    lines = ["# Many servers at a fixed load", "",
             "Made by `PYTHONPATH=src python results/many_servers/large_system.py` from the "
             "catalog experiments `large-system` and `large-system-1e5` (N = 10⁵, M = 10, "
             "eight of the policies; docs/model.md#many-servers), stored in "
             "`results/reproductions/store.sqlite` by `results/reproductions/run.sh "
             "large-system large-system-1e5` (6 and 24 CPU-minutes, AMD EPYC): N "
             "servers, half at μ = 0.1 and half at 0.5, Poisson arrivals dispatched job by "
             "job, 4 replications of 6000 slots a point (30 % warm-up). Each cell: the mean "
             "over the replications ± the 95 % t half-width; \"unstable\" where a replication "
             "was judged so (Po-d beyond its threshold ρ̄ = 0.67 on these servers; runs "
             "whose queues still grew). E[Q] is E[ΣQ]/N.", "",
             "P(wait) is the share of jobs placed behind another job, same-slot jobs "
             "included; P(busy at slot start) the share whose server held a job at the start "
             "of their slot (docs/statistics.md#waiting), the fluid limit's waiting "
             "probability (docs/fluid.md); the gap is the jobs that meet at a server idle at "
             "the slot's start. With "
             "μ = 0.1 and 0.5 a slot is a tenth to half a job, so a slot's jobs "
             "(ρ·μ̄·N = 0.27N at ρ = 0.9) outnumber the servers idle at its start and "
             "meet: JSQ's P(wait) stays near 0.4–0.5 at every N in the slotted model, "
             "where the continuous-time large-system theory's tends to 0. The fluid "
             "columns are the N → ∞ limit (docs/fluid.md), where it is derived.", "",
             "What these runs cannot show: weighted random routing is N independent "
             "queues, for which the fluid value is exact at every N, and its points sit "
             "4 % (ρ = 0.9) and 18 % (ρ = 0.95) below it at every N: a μ = 0.1 queue "
             "relaxes in about 1/(μ(1 − √ρ)²) = 3,800 (ρ = 0.9) and 16,000 (ρ = 0.95) "
             "slots, as long as or longer than the 4200 slots measured after the empty "
             "start. Its row (and the other slowly relaxing ones: LSQ, "
             "L-JBA-Push) bounds E[Q] from below; JSQ, JIQ and SCD relax within a few "
             "hundred slots.", ""]
    for family in families(SIZES):
        if family.dispatchers == 10:  # (large-system-1e5 extends this family)
            family = replace(family, sizes=(*family.sizes, HUGE_SIZE))
        systems = family.systems()
        for load in loads:
            part = frame[frame["load"].round(6) == load]
            fluid = fluid_values(load)
            lines += [f"## {family.label}, ρ = {load:g}", "",
                      "| policy | " + " | ".join(f"E[Q], N = {n:,}" for n in family.sizes)
                      + " | fluid E[Q] | " + " | ".join(f"P(wait), N = {n:,}"
                                                        for n in family.sizes)
                      + " | " + " | ".join(f"P(busy at slot start), N = {n:,}"
                                           for n in family.sizes)
                      + " | fluid P(busy at slot start) |",
                      "|---" * (3 * len(family.sizes) + 3) + "|"]
            for policy in POLICIES:
                rows = part[part["policy_label"] == policy.display]
                cells = {"per_server": [], "waiting_probability": [],
                         "busy_server_probability": []}
                for system, n in zip(systems, family.sizes, strict=True):
                    at = rows[(rows["n"] == n)
                              & (rows["system.dispatchers"] == system.dispatchers)]
                    for column, out in cells.items():
                        out.append(interval(at[column].to_numpy(float),
                                            at["stability"].to_numpy()))
                mean, busy = fluid.get(policy.name, (math.nan, math.nan))
                lines.append(f"| {policy.display} | " + " | ".join(cells["per_server"])
                             + f" | {fluid_text(mean)} | "
                             + " | ".join(cells["waiting_probability"]) + " | "
                             + " | ".join(cells["busy_server_probability"])
                             + f" | {fluid_text(busy)} |")
            lines.append("")
    return "\n".join(lines)


def write_page(out: Path, text: str) -> None:
    """Write a table page and show it."""
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    write_page(OUT, table())
