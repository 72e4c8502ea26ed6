"""``dispatchlab compare``: several policies on one system, one table.

The default is the quick-start demo: the heterogeneous system 50x0.1,50x0.5 with
M = 10 dispatchers at load 0.9, the classical policies and every registered LED or
pull-based policy, 2·10^5 slots each, all with the same seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import app
from dispatchlab.cli.output import (
    interval,
    load_text,
    number,
    params_text,
    print_json,
    stderr_console,
    stdout_console,
)
from dispatchlab.cli.run import run_status
from dispatchlab.cli.warm import precompile
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.simulation.result import Result

if TYPE_CHECKING:  # imported where used: the policies load numba (`--help` needs neither)
    from dispatchlab.model.system import System
    from dispatchlab.policies import Policy
    from dispatchlab.simulation.compare import PairedComparison
    from dispatchlab.specs.run import RunSpec

RUN = "Run"
CLASSICAL = ("wrand", "jsq", "jsed", "pod:d=2", "balanced-pod", "rr")
# policies defined in these modules (LED and pull-based) join the default comparison
FAMILY_MODULES = ("dispatchlab.policies.led", "dispatchlab.policies.pull")
DEFAULT_SLOTS = 200_000


def default_policies() -> list[str]:
    """The classical baselines plus every registered LED / pull-based policy."""
    from dispatchlab.policies import policy_names
    from dispatchlab.policies.base import policy_entry

    chosen = [p for p in CLASSICAL if p.partition(":")[0] in policy_names()]
    family = [name for name in policy_names()
              if getattr(policy_entry(name), "base", policy_entry(name)).__module__.startswith(
                  FAMILY_MODULES) and name not in chosen]
    # presets first: a generic policy equal to a preset is then dropped, keeping the clear name
    family.sort(key=lambda name: not hasattr(policy_entry(name), "base"))
    return chosen + family


@dataclass(frozen=True)
class Entry:
    """One row of the comparison: the name asked for (a policy or preset) and the policy."""

    label: str
    policy: Policy
    shown_params: dict[str, Any]


def parse_policy(text: str) -> Entry:
    """``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE`` → a validated policy.

    The row shows the parameters given here and those that differ from the policy's
    defaults, except the ones a preset fixes (its name already says them).
    """
    from dispatchlab.policies import make_policy
    from dispatchlab.policies.base import policy_entry
    from dispatchlab.specs.run import parse_assignments

    name, _, rest = text.partition(":")
    name = name.strip().lower()
    require(bool(name), "policy", f"expected NAME or NAME:KEY=VALUE,… (got {text!r})")
    given = parse_assignments([item for item in rest.split(",") if item] if rest else [],
                              field_name="policy")
    policy = make_policy(name, **given)
    entry = policy_entry(name)
    fixed = getattr(entry, "fixed", {})
    defaults = {p.name: p.default for p in policy.parameters}
    shown = {k: v for k, v in policy.params.items()
             if k in given or (k not in fixed and v != defaults.get(k))}
    return Entry(name, policy, shown)


def select_policies(texts: list[str] | None, system: System) -> tuple[list[Entry], list[str]]:
    """The policies to run and notes on skipped defaults.

    Explicit policies must all be valid for ``system``; default ones that cannot run on
    it (e.g. d > N) are skipped with a note.
    """
    entries: list[Entry] = []
    notes: list[str] = []
    for text in texts or default_policies():
        entry = parse_policy(text)
        try:
            entry.policy.check_system(system)
        except ValidationError as error:
            if texts:
                raise
            notes.append(f"skipped {entry.label}: {error}")
            continue
        if not texts and any(entry.policy == kept.policy for kept in entries):
            continue  # a generic default equal to a preset (led = l-jsq-push)
        entries.append(entry)
    return entries, notes


@app.command("compare")
def compare_command(
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="NAME or NAME:KEY=VALUE,KEY=VALUE (repeatable) "
        "\\[default: wrand, jsq, jsed, pod, balanced-pod, rr and the LED/pull policies].",
        show_default=False)] = None,
    servers: options.Servers = None,
    dispatchers: options.Dispatchers = None,
    load: options.Load = None,
    epsilon: options.Epsilon = None,
    arrivals: options.Arrivals = None,
    service: options.Service = None,
    dispatch: options.Dispatch = None,
    split: options.Split = None,
    allow_unstable: options.AllowUnstable = False,
    slots: Annotated[int, typer.Option(help="Slots per policy.", rich_help_panel=RUN)]
    = DEFAULT_SLOTS,
    warmup: Annotated[int | None, typer.Option(
        help="Slots discarded first \\[default: 10% of slots].", rich_help_panel=RUN,
        show_default=False)] = None,
    replications: Annotated[int, typer.Option(
        help="Independent replications per policy.", rich_help_panel=RUN)] = 1,
    seed: Annotated[int, typer.Option(
        help="Root seed (the same for every policy).", rich_help_panel=RUN)] = 0,
    delay: options.Delay = None,
    workers: options.Workers = None,
    precision_rel: options.PrecisionRel = None,
    precision_abs: options.PrecisionAbs = None,
    precision_max_slots: options.PrecisionMaxSlots = None,
    no_delay: options.OldNoDelay = False,
    precision: options.OldPrecision = None,
    max_slots: options.OldMaxSlots = None,
    json_: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object {system, results: [...]}.")] = False,
    paired: Annotated[bool, typer.Option(
        "--paired", help="Pair every policy with the first on common random numbers (one "
        "seed: the same arrivals and service): E[ΣQ] − E[ΣQ of the first] with a paired "
        "95% CI and the variance it leaves (docs/statistics.md#paired).",
        rich_help_panel=RUN)] = False,
    import_: options.Import = None,
    yes: options.Yes = False,
) -> None:
    """Run several policies on one system (same seed) and print one comparison table."""
    from dispatchlab.core.imports import import_user_modules
    from dispatchlab.core.pools import resolve_workers
    from dispatchlab.simulation.compare import compare_with_first
    from dispatchlab.simulation.run import simulate_each
    from dispatchlab.simulation.work_guard import check_work, system_work
    from dispatchlab.specs.run import RunSpec
    from dispatchlab.stats.run_stability import below_lower_bound

    import_user_modules(import_ or [])
    spec = RunSpec(slots=slots, seed=seed, replications=replications).with_overrides(
        servers=servers, dispatchers=dispatchers, load=load, epsilon=epsilon,
        arrivals=arrivals, service=service, dispatch=dispatch, split=split,
        allow_unstable=True if allow_unstable else None, warmup=warmup,
        delay=delay, precision={"rel": precision_rel, "abs": precision_abs,
                                "max_slots": precision_max_slots},
    )
    system = spec.build_system()
    chosen, notes = select_policies(policy, system)
    # validate the run settings once, before any output
    require(slots >= 1, "slots", f"must be an integer ≥ 1 (got {slots})")
    require(warmup is None or 0 <= warmup < slots, "warmup",
            f"must be in [0, slots) (got {warmup})")
    require(replications >= 1, "replications", f"must be ≥ 1 (got {replications})")
    require(not paired or len(chosen) >= 2, "paired", "give two policies or more (-p A -p B): "
            "each after the first is paired with the first")
    require(not paired or spec.precision is None, "paired", "a paired comparison runs a fixed "
            "number of replications on every policy; leave out --precision-rel, "
            "--precision-abs and --precision-max-slots")
    check_work(len(chosen) * system_work(system, slots, replications, spec.precision),
               confirmed=yes,
               what=f"comparing {len(chosen)} policies")
    errors = stderr_console()
    for note in notes:
        errors.print(f"note: {escape(note)}")

    pairs: list[PairedComparison] = []

    def run() -> list[Result]:
        if paired:
            pairs.extend(compare_with_first(
                system, [item.policy for item in chosen], workers=workers, slots=spec.slots,
                warmup=spec.warmup, seed=spec.seed, replications=spec.replications,
                delay=spec.delay))
            return [pairs[0].result_b, *(pair.result_a for pair in pairs)]
        return simulate_each(system, [item.policy for item in chosen], workers=workers,
                             slots=spec.slots, warmup=spec.warmup, seed=spec.seed,
                             replications=spec.replications, delay=spec.delay,
                             precision=spec.precision)

    workers_used = resolve_workers(workers, len(chosen))
    if resolve_workers(workers, len(chosen) * spec.replications) > 1:
        # once here, not once per worker
        precompile(system, [item.policy for item in chosen], delay=spec.delay)
    with run_status(f"{len(chosen)} policies on {workers_used} worker(s) …",
                    len(chosen) * spec.replications):
        results = run()
    for entry, result in zip(chosen, results, strict=True):
        if "DISAGREES with theory" in result.stability_evidence:
            errors.print(f"note: {escape(entry.label)}: simulated {result.stability}, but "
                         f"theory says {result.theory_stability}")
    if json_:
        record = comparison_record(system, spec, chosen, results)
        if paired:
            record["paired"] = [{"label": entry.label, "baseline": chosen[0].label,
                                 **{k: v for k, v in pair.to_dict().items()
                                    if k not in ("result_a", "result_b")}}
                                for entry, pair in zip(chosen[1:], pairs, strict=True)]
        print_json(record)
        return
    stdout_console().print(comparison_table(system, spec, chosen, results))
    if paired:
        stdout_console().print(paired_table(chosen, pairs))
    for entry, result in zip(chosen, results, strict=True):
        if warning := below_lower_bound(result.ci_high, result.lower_bound_total_queue,
                                     result.mean_total_queue):
            stdout_console().print(f"[yellow]warning: {escape(entry.label)}: {escape(warning)}[/]")


def _distinct_names(entries: list[Entry]) -> list[str]:
    """Each entry's label, with its parameters where another entry has the same label
    (``jbt (r=1)`` and ``jbt (r=3)``, not ``jbt`` twice)."""
    labels = [entry.label for entry in entries]
    return [f"{entry.label} ({params_text(entry.shown_params)})"
            if labels.count(entry.label) > 1 else entry.label for entry in entries]


def paired_table(entries: list[Entry], pairs: list[PairedComparison]) -> Table:
    """The ``--paired`` table: per policy after the first, its E[ΣQ] minus the first's
    (the comparison's a − b, b the first) with
    the paired 95 % CI, the CI's method, the remaining variance and the unpaired
    half-width of the same runs (docs/statistics.md#paired)."""
    from dispatchlab.simulation.compare import NO_MEAN

    names = _distinct_names(entries)
    baseline = names[0]
    table = Table(title=escape(f"paired with {baseline} on common random numbers (the same "
                               "arrivals and service)"), title_justify="left",
                  caption="remaining variance: Var(paired difference) / (Var(a) + Var(b)) "
                  "on the same runs, the share pairing leaves; unpaired ±: the half-width "
                  "were they independent",
                  caption_justify="left")
    table.add_column("policy", style="bold")
    for name in (f"Δ E[ΣQ] vs {baseline} [95% CI]", "remaining variance", "unpaired ±"):
        table.add_column(escape(name), justify="right")
    table.add_column("method")
    for name, pair in zip(names[1:], pairs, strict=True):
        if not math.isfinite(pair.difference):
            shown = NO_MEAN  # one side (or both) unstable: no difference to give
        elif math.isfinite(pair.half_width):
            shown = f"{number(pair.difference)} [{number(pair.ci_low)}, {number(pair.ci_high)}]"
        else:
            shown = f"{number(pair.difference)} [—]"
        table.add_row(escape(name), escape(shown), number(pair.remaining_variance),
                      number(pair.unpaired_half_width), escape(pair.method))
    return table


def comparison_record(system: System, spec: RunSpec, entries: list[Entry],
                      results: list[Result]) -> dict[str, Any]:
    """The ``--json`` object; each result carries ``label``, the name asked for."""
    return {"system": system.describe(), "slots": spec.slots, "seed": spec.seed,
            "replications": spec.replications,
            "results": [{"label": entry.label, **result.to_dict()}
                        for entry, result in zip(entries, results, strict=True)]}


def _bound_text(lower: float) -> str:
    """The lower bound ζ^(ε)/2ε − B on E[ΣQ] (docs/model.md#lower-bound), said to be empty
    where it is not above 0 (light load: it bounds nothing there)."""
    if lower > 0 or not math.isfinite(lower):
        return number(lower)
    return "none at this load (ζ^(ε)/2ε − B ≤ 0)"


def comparison_table(system: System, spec: RunSpec, entries: list[Entry],
                     results: list[Result]) -> Table:
    """The table of ``dispatchlab compare``: one row per policy (mean ΣQ with its 95 % CI,
    delay, messages, stability, speed), titled with the system and captioned with the lower
    bound on E[ΣQ] and ζ/2 (docs/model.md#lower-bound)."""
    described = system.describe()
    title = (f"N = {system.n_servers} servers {described['servers']}, "
             f"M = {system.dispatchers} dispatchers, ρ = {load_text(system.load)} "
             f"(ε = {number(system.epsilon)}), {described['arrivals']} arrivals, "
             f"{described['service']} service, {described['dispatch'].replace('_', '-')} "
             f"dispatch, {spec.slots:,} slots × {spec.replications}, seed {spec.seed}")
    lower = results[0].lower_bound_total_queue if results else float("nan")
    limit = results[0].heavy_traffic_limit if results else float("nan")
    table = Table(title=escape(title), title_justify="left",
                  caption=f"lower bound on E[ΣQ], every policy: {_bound_text(lower)}; "
                  f"ζ/2 = {number(limit)} (the ε·E[ΣQ] of a heavy-traffic optimal policy as "
                  "ε → 0)",
                  caption_justify="left")
    for name in ("policy", "params"):
        table.add_column(name, style="bold" if name == "policy" else None)
    for name in ("mean ΣQ [95% CI]", "mean delay (slots)", "p99 delay (slots)",
                 "msgs/arrival"):
        table.add_column(escape(name), justify="right")
    table.add_column("stability")
    table.add_column("slots/s", justify="right")
    for entry, result in zip(entries, results, strict=True):
        style = {"stable": "green", "unstable": "red"}.get(result.stability, "yellow")
        table.add_row(escape(entry.label), escape(params_text(entry.shown_params)),
                      interval(result), number(result.mean_delay), number(result.delay_p99),
                      number(result.messages_per_arrival), f"[{style}]{result.stability}[/]",
                      f"{result.slots_per_second:,.0f}")
    return table
