"""``dispatchlab run --time continuous``: one continuous-time run from the command line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.table import Table

from dispatchlab.cli.output import integer, number, params_text, print_json, stdout_console
from dispatchlab.core.errors import ValidationError


def time_model(text: str | None) -> str:
    """The model ``--time`` names (slotted when not given)."""
    if text is None:
        return "slotted"
    model = text.strip().lower()
    if model not in ("slotted", "continuous"):
        raise ValidationError("time", f"expected slotted or continuous (got {text!r})")
    return model


def refuse_other_model(time: str, given: Mapping[str, Any]) -> None:
    """One line naming the first option of ``given`` (option name → value, None when not
    given) that the other model alone takes."""
    for option, value in given.items():
        if value is not None and value is not False and value != []:
            option = option.replace("_", "-")
            other = "slotted" if time == "continuous" else "continuous"
            raise ValidationError(option, f"is an option of the {other} model; with "
                                  f"--time {time} it does not apply (see dispatchlab run "
                                  "--help)")


def continuous_table(result: Any, label: str) -> Table:
    """The human summary of one continuous-time run (``label``: the policy name asked for)."""
    name = result.policy if label == result.policy else f"{label} = {result.policy}"
    table = Table(title=escape(f"dispatchlab run --time continuous: {label}"),
                  show_header=False, title_justify="left")
    table.add_column("quantity", style="bold")
    table.add_column("value")

    def interval(estimate: Any) -> str:
        return (f"{number(estimate.mean)} [{number(estimate.ci_low)}, "
                f"{number(estimate.ci_high)}]")

    speeds = result.speeds
    table.add_row("policy", escape(f"{name} ({params_text(result.policy_params)})"))
    table.add_row("system", escape(
        f"N = {speeds.size} servers, speeds Σs = {number(float(speeds.sum()))}, "
        f"M = {result.dispatchers} dispatchers, discipline {result.discipline}"))
    table.add_row("model", escape(f"sizes {result.sizes}, arrivals {result.arrivals}"))
    table.add_row("load", f"ρ = {number(result.load)}, λ = {number(result.arrival_rate)}")
    table.add_row("run", f"{integer(result.jobs)} jobs (warm-up {integer(result.warmup)}) × "
                  f"{result.replications} replication(s), seed {result.seed}")
    for label, estimate in (("mean response time E[T]", result.mean_response),
                            ("mean slowdown", result.mean_slowdown),
                            ("mean number in system E[L]", result.mean_in_system),
                            ("P(server busy at arrival)", result.waiting_probability)):
        table.add_row(f"{escape(label)} \\[95% CI]", escape(interval(estimate)))
    for level, estimate in result.response_quantiles.items():
        table.add_row(f"response time p{level * 100:g} \\[95% CI]",
                      escape(f"{interval(estimate)} (bins of ±1.2 %; {estimate.method})"))
    if result.stop_reason:
        response = result.mean_response
        table.add_row("precision", escape(
            f"± {number(100 * response.half_width / abs(response.mean), 3)} % of E[T] "
            f"(half-width {number(response.half_width)}): {result.stop_reason}"))
    table.add_row("messages", f"{number(result.messages_per_job)} per job")
    style = {"stable": "green", "unstable": "red"}.get(result.stability, "yellow")
    table.add_row("stability", f"[{style}]{result.stability}[/]: "
                  f"{escape(result.stability_evidence)}")
    table.add_row("speed", f"{integer(result.jobs_per_second)} jobs/s")
    return table


def continuous_json(result: Any, label: str) -> dict[str, Any]:
    """The JSON object of one continuous-time run."""
    def estimate(value: Any) -> dict[str, Any]:
        return {"mean": value.mean, "ci_low": value.ci_low, "ci_high": value.ci_high,
                "method": value.method}

    return {"time": "continuous", "label": label, "policy": result.policy,
            "params": result.policy_params, "discipline": result.discipline,
            "speeds": result.speeds.tolist(), "dispatchers": result.dispatchers,
            "sizes": result.sizes, "arrivals": result.arrivals, "load": result.load,
            "arrival_rate": result.arrival_rate, "jobs": result.jobs, "warmup": result.warmup,
            "warmup_method": result.warmup_method, "warmup_dropped": result.warmup_dropped,
            "replications": result.replications, "seed": result.seed,
            "mean_response": estimate(result.mean_response),
            "mean_slowdown": estimate(result.mean_slowdown),
            "mean_in_system": estimate(result.mean_in_system),
            "waiting_probability": estimate(result.waiting_probability),
            "response_quantiles": {str(level): estimate(value) for level, value
                                   in result.response_quantiles.items()},
            "stability": result.stability, "stability_evidence": result.stability_evidence,
            "messages_per_job": result.messages_per_job,
            "max_in_system": result.max_in_system, "events": result.events,
            "jobs_per_second": result.jobs_per_second, "notes": result.notes,
            "precision": {"rel": result.precision_target, "abs": result.precision_abs_target,
                          "max_jobs": result.job_budget, "stop_reason": result.stop_reason}
            if result.stop_reason else None}


#: the cost of a job in the work guard's server-slot updates: about 300 ns (two events),
#: and JSQ's scan of the N servers, about 1 ns a server (benchmarks/README.md)
UPDATES_PER_JOB = 10.0
SERVERS_PER_UPDATE = 30.0


def check_continuous_work(servers: Any, jobs: Any, replications: Any, confirmed: bool,
                          precision: Any = None) -> None:
    """The work guard of the slotted runs for a continuous-time one: a run far larger than
    anyone means (``--jobs 10**12``, or a precision run's budget) is refused with its
    estimate unless ``--yes``."""
    from dispatchlab.continuous.run import DEFAULT_JOBS
    from dispatchlab.model.service import parse_rates
    from dispatchlab.model.values import as_int
    from dispatchlab.simulation.work_guard import check_work

    count = parse_rates(servers).size
    jobs = DEFAULT_JOBS if jobs is None else as_int(jobs, "jobs", 2)
    replications = as_int(replications, "replications", 1)
    total = (float(jobs) * replications if precision is None
             else float(precision.check_jobs(jobs, replications).max_jobs))
    check_work(total * (UPDATES_PER_JOB + count / SERVERS_PER_UPDATE),
               confirmed=confirmed, what="this continuous-time run",
               field="jobs" if precision is None else "precision.max_jobs",
               check="jobs and replications" if precision is None
               else "jobs and the precision run's budget")


def run_continuous(*, json_: bool, assignments: list[str] | None, confirmed: bool = False,
                   **settings: Any) -> None:
    """Run and print one continuous-time run; ``settings`` are ``simulate_continuous``'s
    (from a spec and the command line), ``assignments`` the ``--set KEY=VALUE`` items
    merged into the spec's policy parameters, ``confirmed`` the ``--yes`` of the work
    guard."""
    from dispatchlab.continuous import simulate_continuous
    from dispatchlab.continuous.run import DEFAULT_POLICY
    from dispatchlab.specs.run import (  # the slotted run's system, the same defaults
        DEFAULT_DISPATCHERS,
        DEFAULT_LOAD,
        DEFAULT_SERVERS,
        parse_assignments,
    )

    given = dict(settings)
    servers = given.pop("servers", DEFAULT_SERVERS)
    policy = given.pop("policy", DEFAULT_POLICY)
    replaying = str(given.get("arrivals", "")).strip().lower().startswith("trace:")
    if not replaying:  # (a trace's jobs are the file's)
        check_continuous_work(servers, given.get("jobs"), given.get("replications", 1),
                              confirmed, given.get("precision"))
    if assignments:
        given["policy_params"] = {**given.get("policy_params", {}),
                                  **parse_assignments(assignments)}
    if "rate" not in given and not replaying:  # (a trace sets its own rate)
        given.setdefault("load", DEFAULT_LOAD)
    given.setdefault("dispatchers", DEFAULT_DISPATCHERS)
    result = simulate_continuous(servers, policy, **given)
    if json_:
        print_json(continuous_json(result, policy))
        return
    stdout_console().print(continuous_table(result, policy))
