"""``dispatchlab run``: simulate one policy on one system, from options or a TOML spec."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from dispatchlab.cli import options
from dispatchlab.cli.app import app
from dispatchlab.cli.output import (
    integer,
    interval,
    load_text,
    number,
    params_text,
    print_json,
    say_when_piped,
    stderr_console,
    stdout_console,
)
from dispatchlab.cli.warm import precompile
from dispatchlab.engine.control import Progress, progress_to
from dispatchlab.simulation.result import Result

RUN = "Run"


@app.command("run")
def run_command(
    spec: Annotated[Path | None, typer.Argument(
        help="A TOML run spec (see README: \\[system], \\[policy], \\[run]); options override it.",
        metavar="SPEC.toml", show_default=False)] = None,
    policy: Annotated[str | None, typer.Option(
        help="Registered policy name (see `dispatchlab policies`).", show_default=False)] = None,
    set_: options.PolicyParams = None,
    servers: options.Servers = None,
    dispatchers: options.Dispatchers = None,
    load: options.Load = None,
    epsilon: options.Epsilon = None,
    beta: options.Beta = None,
    arrivals: options.Arrivals = None,
    service: options.Service = None,
    dispatch: options.Dispatch = None,
    split: options.Split = None,
    dispatcher_weights: options.DispatcherWeights = None,
    allow_unstable: options.AllowUnstable = False,
    slots: Annotated[int | None, typer.Option(
        help="Slots per replication \\[default: 1000000].", rich_help_panel=RUN,
        show_default=False)] = None,
    warmup: Annotated[int | None, typer.Option(
        help="Slots discarded first \\[default: 10% of slots].", rich_help_panel=RUN,
        show_default=False)] = None,
    warmup_method: Annotated[str | None, typer.Option(
        help="fraction (fixed warm-up) or mser5 \\[default: fraction].", rich_help_panel=RUN,
        show_default=False)] = None,
    estimator: Annotated[str | None, typer.Option(
        help="coupled (E[q] of the pooled queue computed + the mean of ΣQ − q) or plain "
        "(the time average of ΣQ) \\[default: coupled].", rich_help_panel=RUN,
        show_default=False)] = None,
    start: Annotated[str | None, typer.Option(
        help="empty, or stationary: ΣQ(0) = q(0) drawn from the pooled queue's stationary "
        "law \\[default: empty].", rich_help_panel=RUN, show_default=False)] = None,
    replications: Annotated[int | None, typer.Option(
        help="Independent replications (R ≥ 2: CI from their means) \\[default: 1].",
        rich_help_panel=RUN, show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(
        help="Root seed \\[default: 0].", rich_help_panel=RUN, show_default=False)] = None,
    delay: options.Delay = None,
    no_imbalance: options.NoImbalance = False,
    per_server: options.PerServerOn = False,
    per_server_bins: options.PerServerBins = None,
    trajectory_every: options.TrajectoryEvery = None,
    trajectory_servers: options.TrajectoryServers = None,
    workers: options.Workers = None,
    precision_rel: options.PrecisionRel = None,
    precision_abs: options.PrecisionAbs = None,
    precision_max_slots: options.PrecisionMaxSlots = None,
    precision_max_jobs: options.PrecisionMaxJobs = None,
    no_delay: options.OldNoDelay = False,
    trajectory: options.OldTrajectory = None,
    precision: options.OldPrecision = None,
    max_slots: options.OldMaxSlots = None,
    json_: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object instead of the table.")] = False,
    import_: options.Import = None,
    yes: options.Yes = False,
    time: options.Time = None,
    sizes: options.Sizes = None,
    discipline: options.Discipline = None,
    jobs: options.Jobs = None,
) -> None:
    """Simulate one policy on one system and report ΣQ, delay, messages and stability
    (with --time continuous: response time, slowdown and number in system)."""
    from dispatchlab.cli.run_continuous import refuse_other_model, run_continuous, time_model
    from dispatchlab.core.documents import read_toml
    from dispatchlab.core.imports import import_user_modules
    from dispatchlab.core.precision_target import Precision
    from dispatchlab.simulation.measures import merged
    from dispatchlab.specs.continuous import continuous_settings, spec_time

    document = read_toml(spec, "spec", "spec file") if spec is not None else {}
    if time_model(time if time is not None else spec_time(document)) == "continuous":
        # (the event engine loads only for a continuous-time run)
        from dispatchlab.continuous.run import DEFAULT_POLICY

        refuse_other_model("continuous", {
            "epsilon": epsilon, "beta": beta, "service": service,
            "dispatch": dispatch, "split": split, "dispatcher_weights": dispatcher_weights,
            "allow_unstable": allow_unstable, "slots": slots,
            "estimator": estimator, "start": start, "delay": delay,
            "no_imbalance": no_imbalance, "per_server": per_server,
            "per_server_bins": per_server_bins, "trajectory_every": trajectory_every,
            "trajectory_servers": trajectory_servers,
            "precision_max_slots": precision_max_slots})
        import_user_modules(import_ or [])  # a module that registers continuous rules
        written = continuous_settings(document, spec.parent) if spec is not None else {}
        given = {"servers": servers, "policy": policy, "dispatchers": dispatchers,
                 "load": load, "arrivals": arrivals, "sizes": sizes,
                 "discipline": discipline, "jobs": jobs, "warmup": warmup,
                 "replications": replications, "seed": seed, "workers": workers,
                 "warmup_method": warmup_method}
        if load is not None:  # the command line's load replaces the spec's rate
            written.pop("rate", None)
        settings = {**written, **{k: v for k, v in given.items() if v is not None}}
        settings["precision"] = merged(written.get("precision"), Precision, "precision", {
            "rel": precision_rel, "abs": precision_abs, "max_jobs": precision_max_jobs})
        if settings["precision"] is None:
            del settings["precision"]
        label = settings.get("policy", DEFAULT_POLICY)
        with run_status(f"simulating {escape(label)} in continuous time …", 1):
            run_continuous(json_=json_, assignments=set_, confirmed=yes, **settings)
        return
    refuse_other_model("slotted", {"sizes": sizes, "discipline": discipline, "jobs": jobs,
                                   "precision_max_jobs": precision_max_jobs})
    from dispatchlab.simulation.work_guard import check_work, system_work
    from dispatchlab.specs.run import RunSpec, parse_assignments

    import_user_modules(import_ or [])  # asked for here; a spec file never imports
    base = RunSpec.from_mapping(document, base_dir=spec.parent) if spec is not None \
        else RunSpec()
    run_spec = base.with_overrides(
        policy=policy, params=parse_assignments(set_) or None, servers=servers,
        dispatchers=dispatchers, load=load, epsilon=epsilon, beta=beta, arrivals=arrivals,
        service=service, dispatch=dispatch, split=split,
        dispatcher_weights=options.parse_weights(dispatcher_weights),
        allow_unstable=True if allow_unstable else None, slots=slots, warmup=warmup,
        warmup_method=warmup_method, estimator=estimator, start=start,
        replications=replications, seed=seed,
        delay=delay, imbalance=False if no_imbalance else None,
        per_server={"bins": per_server_bins} if per_server_bins is not None
        else True if per_server else None,
        trajectory={"every": trajectory_every, "servers": options.parse_indices(
            trajectory_servers, "trajectory_servers")},
        precision={"rel": precision_rel, "abs": precision_abs,
                   "max_slots": precision_max_slots},
    )
    system = run_spec.build_system()
    check_work(system_work(system, run_spec.slots, run_spec.replications, run_spec.precision),
               confirmed=yes)
    label = run_spec.policy.name

    def run() -> Result:
        return run_spec.simulate(workers=workers)

    if pooled(workers, run_spec.replications, run_spec.precision is not None):
        # once here, not once per worker
        precompile(system, [run_spec.make_policy()], delay=run_spec.delay,
                   observe=run_spec.per_server is not None or run_spec.trajectory is not None)
    with run_status(f"simulating {escape(label)} …", run_spec.replications):
        result = run()
    if json_:
        # ``label`` is the name asked for: a preset (l-jsq-push) runs as its base policy (led)
        print_json({"label": label, **result.to_dict()})
        return
    stdout_console().print(result_table(result, label=label))


def delay_text(result: Result) -> str:
    """The delay quantiles, with their 95 % CIs and the sample when tagged jobs measured them."""
    names = ("p50", "p90", "p99", "p999")
    values = " / ".join(number(getattr(result, f"delay_{q}")) for q in names)
    if result.delay_method != "tagged":
        return f"{values} ({result.delay_method} jobs)" if result.delay_method == "all" \
            else values
    intervals = ", ".join(f"[{number(getattr(result, f'delay_{q}_ci_low'))}, "
                          f"{number(getattr(result, f'delay_{q}_ci_high'))}]" for q in names)
    return (f"{values}; 95 % CIs {intervals} ({result.delay_jobs} tagged jobs, "
            f"p = {number(result.delay_tag_probability)})")


def per_server_text(result: Result) -> str:
    """The range over the servers of each per-server statistic (all of them in --json)."""
    def span(values: list[float]) -> str:
        finite = [v for v in values if math.isfinite(v)]
        return f"{number(min(finite))} … {number(max(finite))}" if finite else "—"

    return (f"utilisation {span(result.server_utilisation)}, idle fraction "
            f"{span(result.server_idle_fraction)}, E[Q_n] {span(result.mean_queues)} "
            "(each server's, and its queue-length distribution, in --json)")


def estimator_text(result: Result) -> str:
    """Which estimator the headline is, with the other one next to it."""
    plain = (f"plain {number(result.plain_mean_total_queue)} [{number(result.plain_ci_low)}, "
             f"{number(result.plain_ci_high)}]")
    coupled = (f"coupled {number(result.coupled_mean_total_queue)} "
               f"[{number(result.coupled_ci_low)}, {number(result.coupled_ci_high)}]")
    note = f"; {result.estimator_note}" if result.estimator_note else ""
    first, other = (coupled, plain) if result.estimator == "coupled" else (plain, coupled)
    return f"{first}; the other: {other}{note}"


def pooled(workers: int | None, replications: int, precision: bool) -> bool:
    """Whether a run's replications go to a pool of several worker processes."""
    from dispatchlab.core.pools import resolve_workers

    # a precision run adds replications up to its budget: the pool is sized for many
    return resolve_workers(workers, 1 << 20 if precision else replications) > 1


@contextmanager
def run_status(text: str, runs: int) -> Iterator[None]:
    """A spinner on stderr, with what a cold first run compiles while it compiles, then
    "slot t of T, ETA …" once the work takes over 2 s.

    The spinner is shown on a terminal only (Rich draws none when stderr is not one): piped
    or logged stderr gets only the compiling, as one plain line; stdout (the table or the
    JSON) is never touched."""
    console = stderr_console()
    with console.status(text) as status:
        def show(line: str) -> None:
            if line.startswith("compiling "):
                say_when_piped(console, line)
            status.update(f"{text} {escape(line)}")

        with progress_to(Progress(show, runs=runs)):
            yield


def result_table(result: Result, label: str | None = None) -> Table:
    """The human summary of one run (``label``: the policy or preset name asked for)."""
    from dispatchlab.stats.run_stability import below_lower_bound

    system = result.system
    table = Table(title=escape(f"dispatchlab run: {label or result.policy}"), show_header=False,
                  title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value")
    name = result.policy if label in (None, result.policy) else f"{label} = {result.policy}"
    table.add_row("policy", escape(f"{name} ({params_text(result.params)})"))
    table.add_row("system", f"N = {system['n_servers']} servers {system['servers']}, "
                  f"M = {system['dispatchers']} dispatchers")
    table.add_row("model", f"arrivals {system['arrivals']}, service {system['service']}, "
                  f"dispatch {system['dispatch']}, split {system['split']}")
    table.add_row("load", f"ρ = {load_text(result.load)}, ε = {number(result.epsilon)}, "
                  f"λ_Σ = {number(system['arrival_rate'])}")
    table.add_row("run", f"{result.slots_text()} (warm-up {integer(result.warmup)}), "
                  f"seed {result.seed}")
    table.add_row("mean ΣQ \\[95% CI]", escape(f"{interval(result)} "
                                              f"({_tau_in_blocks(result.ci_method)})"))
    table.add_row("estimator", escape(estimator_text(result)))
    table.add_row("E\\[q] + E\\[X]", escape(
        f"E[q] = {number(result.pooled_queue_exact)} ({result.pooled_queue_method}), "
        f"E[X] = E[ΣQ − q] = {number(result.mean_excess)} [{number(result.excess_ci_low)}, "
        f"{number(result.excess_ci_high)}], ε·E[X] = {number(result.epsilon_excess)}"))
    table.add_row("precision", escape(
        f"± {number(result.relative_half_width * 100, 3)} % (half-width "
        f"{number(result.half_width)}), τ̂ = {number(result.autocorrelation_time)} slots; "
        f"{result.stop_reason}"))
    if warning := below_lower_bound(result.ci_high, result.lower_bound_total_queue,
                                     result.mean_total_queue):
        table.add_row("[yellow]warning[/]", f"[yellow]{escape(warning)}[/]")
    table.add_row("mean delay (slots)", f"{number(result.mean_delay)} by Little's law, "
                  f"{number(result.mean_delay_measured)} measured per job")
    table.add_row("delay p50 / p90 / p99 / p99.9", escape(delay_text(result)))
    table.add_row("messages", f"{number(result.messages_per_arrival)} per arrival, "
                  f"{number(result.messages_per_dispatch)} per dispatch")
    verdict_style = {"stable": "green", "unstable": "red"}.get(result.stability, "yellow")
    table.add_row("stability", f"[{verdict_style}]{result.stability}[/]: "
                  f"{escape(result.stability_evidence)}")
    table.add_row("stability by theory", escape(result.theory_stability))
    table.add_row("lower bound on E[ΣQ]", escape(lower_bound_text(result)))
    table.add_row("ζ/2 vs ε·E[ΣQ]", f"{number(result.heavy_traffic_limit)} vs "
                  f"{number(result.epsilon_total_queue)}")
    if result.server_utilisation:
        table.add_row("per server", escape(per_server_text(result)))
    if result.trajectory_slots:
        table.add_row("trajectory", f"{len(result.trajectory_slots)} points, slots 0 … "
                      f"{integer(result.trajectory_slots[-1])} (in --json)")
    for name, value in result.diagnostics.items():
        table.add_row(f"diag: {name}", number(value))
    if result.invariant_violations:
        table.add_row("[red]invariant violations[/]", str(result.invariant_violations))
    table.add_row("speed", f"{integer(result.slots_per_second)} slots/s")
    return table


def _tau_in_blocks(method: str) -> str:
    """The CI method names τ̂ in blocks (its batch means' unit); say so, since the
    precision row gives τ̂ in slots."""
    return re.sub(r"τ̂ = ([0-9.eE+-]+)\)", r"τ̂ = \1 blocks)", method)


def lower_bound_text(result) -> str:
    """The finite-ε bound with what a 0 or a missing value means (docs/model.md#lower-bound)."""
    bound = result.lower_bound_total_queue
    if not math.isfinite(bound):
        return ("— (the finite-ε bound needs bounded service; E[q] = "
                f"{number(result.pooled_queue_exact)}, the pooled queue, still bounds E[ΣQ])")
    if bound <= 0:
        return ("0: the finite-ε bound ζ^(ε)/(2ε) − B is ≤ 0 this far from saturation, so it "
                f"rules nothing out; E[q] = {number(result.pooled_queue_exact)}, the pooled "
                "queue's mean, is the policy-free floor here (docs/model.md#lower-bound)")
    return f"{number(bound)} (ζ^(ε)/(2ε) − B, every policy; docs/model.md#lower-bound)"
