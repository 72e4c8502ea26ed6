"""Command-line options shared by every command that describes a system.

Each is an ``Annotated`` type to use as a parameter's annotation, so the option's
name, help and panel are written once. ``None`` means "not given": the run spec's
default (or the TOML file's value) applies.
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

from dispatchlab.core.errors import require

SYSTEM = "System"

Servers = Annotated[str | None, typer.Option(
    help="Service rates μ_n: COUNTxRATE list or rates, e.g. 50x0.1,50x0.5 "
    "\\[default: 50x0.1,50x0.5].", rich_help_panel=SYSTEM, show_default=False)]
Dispatchers = Annotated[int | None, typer.Option(
    help="M, the number of dispatchers \\[default: 10].", rich_help_panel=SYSTEM,
    show_default=False)]
Load = Annotated[float | None, typer.Option(
    help="ρ = λ_Σ/μ_Σ \\[default: 0.9].", rich_help_panel=SYSTEM, show_default=False)]
Epsilon = Annotated[float | None, typer.Option(
    help="ε = μ_Σ − λ_Σ, the heavy-traffic distance (replaces --load).",
    rich_help_panel=SYSTEM, show_default=False)]
Beta = Annotated[float | None, typer.Option(
    help="The Halfin–Whitt β: ε = β·μ_Σ/√N, 1 − ρ = β/√N (replaces --load).",
    rich_help_panel=SYSTEM, show_default=False)]
Arrivals = Annotated[str | None, typer.Option(
    help="Arrival law of A_Σ(t): poisson, bernoulli, binomial:K, deterministic, "
    "trace:PATH \\[default: poisson].", rich_help_panel=SYSTEM, show_default=False)]
Service = Annotated[str | None, typer.Option(
    help="Service law of S_n(t): bernoulli, binomial:K, poisson, geometric, deterministic "
    "\\[default: bernoulli].", rich_help_panel=SYSTEM, show_default=False)]
Dispatch = Annotated[str | None, typer.Option(
    help="batch (a dispatcher's jobs of a slot go to one server, the papers' model) or "
    "per_job \\[default: batch].", rich_help_panel=SYSTEM, show_default=False)]
Split = Annotated[str | None, typer.Option(
    help="How arrivals reach dispatchers: per_job (each job picks one) or batch (the "
    "slot's arrivals all go to one) \\[default: per_job].", rich_help_panel=SYSTEM,
    show_default=False)]
DispatcherWeights = Annotated[str | None, typer.Option(
    help="p_m, the share of arrivals of each dispatcher: M comma-separated weights, "
    "e.g. 1,1,2 \\[default: uniform].", rich_help_panel=SYSTEM, show_default=False)]
AllowUnstable = Annotated[bool, typer.Option(
    "--allow-unstable", help="Accept a system with load ≥ 1.", rich_help_panel=SYSTEM)]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
PolicyParams = Annotated[list[str] | None, typer.Option(
    "--set", help="Policy parameter KEY=VALUE (repeatable), e.g. --set d=2.",
    show_default=False)]


def parse_weights(text: str | None) -> tuple[float, ...] | None:
    """``"1,1,2"`` → ``(1.0, 1.0, 2.0)``; ``None`` (not given) stays ``None``."""
    if text is None:
        return None
    try:
        weights = tuple(float(item) for item in text.split(","))
    except ValueError:
        weights = ()
    require(bool(weights) and all(math.isfinite(w) for w in weights), "dispatcher_weights",
            f"expected comma-separated numbers, one per dispatcher (got {text!r})")
    return weights


def parse_indices(text: str | None, name: str) -> tuple[int, ...] | None:
    """``"0,5"`` → ``(0, 5)``; ``None`` (not given) stays ``None``."""
    if text is None:
        return None
    try:
        indices = tuple(int(item) for item in text.split(","))
    except ValueError:
        indices = ()
    require(bool(indices), name, f"expected comma-separated server indices, e.g. 0,5 "
            f"(got {text!r})")
    return indices


Import = Annotated[list[str] | None, typer.Option(
    "--import", help="Import MODULE first (a dotted name, found from the current "
    "directory, or a .py file; repeatable), so the policies it registers can be named.",
    metavar="MODULE", show_default=False)]

Yes = Annotated[bool, typer.Option(
    "--yes", help="Run even when the estimated work is above the guard's limit "
    "(see dispatchlab.simulation.work_guard).")]

Delay = Annotated[str | None, typer.Option(
    help="Delay quantiles from tagged (a sample of tagged jobs, each quantile with a "
    "95 % CI), all (every job timed) or off \\[default: tagged].", rich_help_panel="Run",
    show_default=False)]
NoImbalance = Annotated[bool, typer.Option(
    "--no-imbalance", help="Measure no queue imbalance DQI₁, DQI₂ (faster).",
    rich_help_panel="Run")]
PerServerOn = Annotated[bool, typer.Option(
    "--per-server", help="Also measure each server's utilisation, idle fraction and "
    "queue-length distribution (in --json).", rich_help_panel="Run")]
PerServerBins = Annotated[int | None, typer.Option(
    help="Bins of each server's queue-length histogram, the last for Q_n ≥ bins − 1 "
    "(implies --per-server) \\[default: 64].", rich_help_panel="Run", show_default=False)]
TrajectoryEvery = Annotated[int | None, typer.Option(
    help="Record ΣQ(t) and the pooled q(t) every K slots of the first replication "
    "(in --json).", metavar="K", rich_help_panel="Run", show_default=False)]
TrajectoryServers = Annotated[str | None, typer.Option(
    help="Comma-separated server indices whose Q_n(t) the trajectory records too, "
    "e.g. 0,5.", rich_help_panel="Run", show_default=False)]


def _renamed(flag: str, now: str, metavar: str | None = None) -> typer.models.OptionInfo:
    """A hidden option of an earlier version: given, it stops with one line naming ``now``."""
    from dispatchlab.core.errors import ValidationError

    def refuse(value: object) -> object:
        if value not in (None, False):
            raise ValidationError(flag.lstrip("-"), f"renamed: now {now}")
        return value

    return typer.Option(flag, hidden=True, callback=refuse, metavar=metavar,
                        show_default=False)


#: options of earlier versions, refused with one line naming the new one
OldNoDelay = Annotated[bool, _renamed("--no-delay", "--delay off")]
OldTrajectory = Annotated[str | None, _renamed("--trajectory", "--trajectory-every K")]
OldPrecision = Annotated[str | None, _renamed("--precision", "--precision-rel")]
OldMaxSlots = Annotated[str | None, _renamed("--max-slots", "--precision-max-slots")]

PRECISION = "Precision"
Workers = Annotated[int | None, typer.Option(
    help="Processes for replications and policies \\[default: every core].",
    rich_help_panel=PRECISION, show_default=False)]
PrecisionRel = Annotated[float | None, typer.Option(
    help="Target relative half-width of the 95% CI of ΣQ (in continuous time, of E[T]; "
    "0.01 = ±1%): replications run until it is reached or the budget is spent.",
    rich_help_panel=PRECISION, show_default=False)]
PrecisionAbs = Annotated[float | None, typer.Option(
    "--precision-abs", help="Target absolute half-width of the 95% CI of ΣQ (of E[T]).",
    rich_help_panel=PRECISION, show_default=False)]
PrecisionMaxSlots = Annotated[int | None, typer.Option(
    help="Slot budget of a precision run, warm-ups included \\[default: 64 × slots].",
    rich_help_panel=PRECISION, show_default=False)]
PrecisionMaxJobs = Annotated[int | None, typer.Option(
    help="Job budget of a continuous-time precision run, all replications, warm-ups "
    "included \\[default: 64 × jobs].", rich_help_panel=PRECISION, show_default=False)]

CONTINUOUS = "Continuous time"
Time = Annotated[str | None, typer.Option(
    "--time", help="The model: slotted (the papers' discrete time) or continuous "
    "(event-driven, one job at a time, with job sizes: docs/continuous.md; --servers are "
    "then speeds, --arrivals poisson, det, erlang:K, hyperexp:C2 or trace:PATH of jobs "
    "TIME[,SIZE[,DISPATCHER]]) \\[default: slotted].", rich_help_panel=CONTINUOUS,
    show_default=False)]
Sizes = Annotated[str | None, typer.Option(
    help="Job sizes (continuous time): exp:MEAN, det:V, erlang:K,MEAN, hyperexp:MEAN,C2, "
    "bpareto:ALPHA,L,H, lognormal:MEAN,C2 \\[default: exp:1].", rich_help_panel=CONTINUOUS,
    show_default=False)]
Discipline = Annotated[str | None, typer.Option(
    help="Server discipline (continuous time): fifo, ps (processor sharing) or srpt "
    "(preemptive) \\[default: fifo].", rich_help_panel=CONTINUOUS, show_default=False)]
Jobs = Annotated[int | None, typer.Option(
    help="Jobs per replication (continuous time) \\[default: 1000000].",
    rich_help_panel=CONTINUOUS, show_default=False)]
