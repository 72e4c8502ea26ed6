"""The conformance kit: the checks every dispatching policy must pass, importable by users.

    >>> from dispatchlab.testing.conformance import check_policy
    >>> report = check_policy("pod")            # or a Policy object, a class, a factory
    >>> report                                  # one line per named check

Checks (docs/model.md#queue-dynamics, docs/model.md#lower-bound), each on small random
systems (N ≤ 6, M ≤ 3, every arrival/service law, batch and per-job dispatch):

- ``conservation``: arrived + at the start = departed + in system; nothing negative.
- ``invariants``: ΣQ(t) ≥ q(t), the resource-pooled queue, every slot; E[ΣQ] ≥ E[q]
  (time averages) and E[X] = E[ΣQ − q] ≥ 0; an unstable run reports no stationary law.
- ``nonnegative``: every mean queue, message count and the herding fraction ≥ 0.
- ``determinism``: the same seed gives the same statistics.
- ``seed-sensitivity``: another seed gives another trajectory.
- ``little``: λ·W = L per job (docs/model.md#delay) on a longer stable run.
- ``parameter-validation``: generated from each ``Param``: values outside its range,
  outside its choices, of the wrong type, and unknown names are refused with
  :class:`~dispatchlab.ValidationError`.
- ``parameters``: the invariants again with non-default parameters drawn from each
  ``Param``'s range and choices (with hypothesis when installed, else a seeded sample of
  the same law).
- ``led-estimates``: LED only: with p̂ = 1 and d = N every estimate equals Q(t+1) after
  every slot (estimation error 0), for push and for pull (M = 1).

``check_policy`` raises :class:`ConformanceError` (an ``AssertionError``) listing the
failed checks, or returns the :class:`ConformanceReport` (``strict=False`` returns it
either way). Hypothesis is optional: it is a test extra, not a dependency.
"""

from __future__ import annotations

import html
import math
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dispatchlab.core.errors import PolicyError, ValidationError
from dispatchlab.model.system import System
from dispatchlab.policies.base import Param, Policy, Preset, make_policy, policy_entry
from dispatchlab.simulation.run import simulate

SHORT_SLOTS = 2_000
LITTLE_SLOTS = 50_000
SERVICE_LAWS = ("bernoulli", "binomial:3", "poisson", "geometric")
TIMING_FIELDS = ("seconds", "slots_per_second")
CHECKS = ("conservation", "invariants", "nonnegative", "determinism", "seed-sensitivity",
          "little", "parameter-validation", "parameters", "led-estimates")


class ConformanceError(AssertionError):
    """A policy failed one or more conformance checks (the message lists them)."""


@dataclass(frozen=True)
class CheckResult:
    """One named check: passed, failed, or skipped (does not apply), with what it saw."""

    name: str
    status: str  # passed | failed | skipped
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status != "failed"


@dataclass
class ConformanceReport:
    """The outcome of :func:`check_policy`: one :class:`CheckResult` per check."""

    policy: str
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def __getitem__(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def __repr__(self) -> str:
        lines = [f"{self.policy}: {'conforms' if self.passed else 'FAILS'}"]
        lines += [f"  {c.status:7} {c.name}" + (f" — {c.detail}" if c.detail else "")
                  for c in self.checks]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(f"<tr><td>{esc(c.name)}</td><td>{esc(c.status)}</td>"
                       f"<td style='text-align:left'>{esc(c.detail)}</td></tr>"
                       for c in self.checks)
        return (f"<table><caption><b>{esc(self.policy)}</b></caption>"
                f"<tr><th>check</th><th>status</th><th>detail</th></tr>{rows}</table>")

    def raise_if_failed(self) -> None:
        if not self.passed:
            raise ConformanceError(repr(self))


# -- what is being checked ---------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """A policy under test: how to build it with parameters, and which parameters it takes."""

    label: str
    build: Callable[..., Policy]
    base: dict[str, Any]  # the parameters of the policy as given
    params: tuple[Param, ...]  # the parameters a user may set

    def make(self, **changes: Any) -> Policy:
        return self.build(**{**self.base, **changes})


def subject_of(policy: Policy | type[Policy] | Callable[..., Policy] | str) -> Subject:
    """Accept a registered name, a Policy object, a Policy class or a preset factory."""
    if isinstance(policy, str):
        entry = policy_entry(policy)
        params = entry.free_parameters() if isinstance(entry, Preset) else entry.parameters
        return Subject(policy, lambda **kw: make_policy(policy, **kw), {}, tuple(params))
    if isinstance(policy, Policy):
        return Subject(repr(policy), type(policy), policy.constructor_params(),
                       type(policy).parameters)
    if isinstance(policy, type) and issubclass(policy, Policy):
        return Subject(policy.public_name, policy, {}, policy.parameters)
    preset = getattr(policy, "preset", None)
    if isinstance(preset, Preset):
        return Subject(preset.name, policy, {}, preset.free_parameters())
    raise TypeError(f"check_policy needs a Policy, a Policy class, a preset factory or a "
                    f"registered name (got {policy!r})")


# -- small random systems ----------------------------------------------------------------------


def random_small_system(rng: np.random.Generator) -> System:
    """N in 1..6, M in 1..3, load in 0.3..0.9, every arrival/service law and dispatch mode."""
    n = int(rng.integers(1, 7))
    service = SERVICE_LAWS[int(rng.integers(len(SERVICE_LAWS)))]
    top = 1.0 if service == "bernoulli" else 2.5
    rates = [round(float(r), 3) for r in rng.uniform(0.05, top, n)]
    load = float(rng.uniform(0.3, 0.9))
    arrivals = "poisson"
    if rng.random() < 0.5:
        arrivals = f"binomial:{max(int(rng.integers(1, 9)), math.ceil(load * sum(rates)))}"
    return System.build(rates, load=load, arrivals=arrivals, service=service,
                        dispatchers=int(rng.integers(1, 4)),
                        split=("per_job", "batch")[int(rng.integers(2))],
                        dispatch=("batch", "per_job")[int(rng.integers(2))])


def _systems_for(policy: Policy, seed: int, count: int) -> Iterator[tuple[System, int]]:
    """``count`` (system, run seed) pairs the policy accepts (out-of-scope ones are skipped,
    e.g. d > N), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    found = tries = 0
    while found < count and tries < 50 * count:
        tries += 1
        system = random_small_system(rng)
        try:
            policy.check_system(system)
        except ValidationError:
            continue
        found += 1
        yield system, int(rng.integers(2**32))


def _comparable(result: Any, *drop: str) -> dict[str, Any]:
    data = result.to_dict()
    for key in TIMING_FIELDS + drop:
        data.pop(key)
    return data


# -- the checks --------------------------------------------------------------------------------


def invariant_failures(result: Any, system: System) -> dict[str, list[str]]:
    """What a single run violates, by check name (empty lists: nothing)."""
    out: dict[str, list[str]] = {"conservation": [], "invariants": [], "nonnegative": []}
    if result.jobs_arrived + result.jobs_at_start != result.jobs_departed + result.jobs_in_system:
        out["conservation"].append(f"arrived {result.jobs_arrived} + at the start "
                                   f"{result.jobs_at_start} ≠ departed {result.jobs_departed} "
                                   f"+ in system {result.jobs_in_system}")
    if result.jobs_in_system < 0:
        out["conservation"].append(f"{result.jobs_in_system} jobs in system")
    if result.invariant_violations:
        out["invariants"].append(f"ΣQ < q in {result.invariant_violations} slots")
    # time averages over the same window: ΣQ ≥ q in every slot, so the averages too
    if math.isfinite(result.plain_mean_total_queue) and \
            result.plain_mean_total_queue < result.mean_pooled_queue - 1e-9:
        out["invariants"].append(f"E[ΣQ] {result.plain_mean_total_queue:g} < E[q] "
                                 f"{result.mean_pooled_queue:g}")
    if math.isfinite(result.mean_excess) and result.mean_excess < -1e-9:
        out["invariants"].append(f"E[X] = E[ΣQ − q] = {result.mean_excess:g} < 0")
    if result.stability == "unstable" and result.total_queue_distribution:
        out["invariants"].append("an unstable run reports a stationary distribution")
    if result.stability != "unstable" and \
            not math.isclose(sum(result.total_queue_distribution), 1.0, rel_tol=1e-9):
        out["invariants"].append("P(ΣQ = k) does not sum to 1")
    if len(result.mean_queues) != system.n_servers:
        out["invariants"].append(f"{len(result.mean_queues)} mean queues for N = "
                                 f"{system.n_servers}")
    if any(q < 0 for q in result.mean_queues):
        out["nonnegative"].append(f"negative mean queue {min(result.mean_queues):g}")
    if result.messages_per_arrival < 0 or result.messages_per_dispatch < 0 or \
            any(v < 0 for v in result.messages_by_kind.values()):
        out["nonnegative"].append("negative message count")
    if not 0 <= result.herding_fraction <= 1:
        out["nonnegative"].append(f"herding fraction {result.herding_fraction:g} ∉ [0, 1]")
    return out


def _on_systems(subject: Subject, *, seed: int, examples: int,
                slots: int) -> dict[str, CheckResult]:
    """conservation, invariants, nonnegative, determinism, seed-sensitivity together: they
    share their runs."""
    policy = subject.make()
    problems: dict[str, list[str]] = {name: [] for name in CHECKS[:5]}
    runs = 0
    for system, run_seed in _systems_for(policy, seed, examples):
        runs += 1
        where = f" ({system!r}, seed {run_seed})"
        result = simulate(system, policy, slots=slots, seed=run_seed)
        for name, found in invariant_failures(result, system).items():
            problems[name] += [p + where for p in found]
        again = simulate(system, subject.make(), slots=slots, seed=run_seed)
        if _comparable(again) != _comparable(result):
            problems["determinism"].append("same seed, different statistics" + where)
        other = simulate(system, subject.make(), slots=slots, seed=run_seed ^ 0x5EED)
        if _comparable(other, "seed") == _comparable(result, "seed"):
            problems["seed-sensitivity"].append("another seed, identical statistics" + where)
    if runs == 0:
        return {name: CheckResult(name, "skipped", "no small system in the policy's scope")
                for name in problems}
    return {name: CheckResult(name, "failed" if found else "passed",
                              "; ".join(found[:3]) or f"{runs} random systems")
            for name, found in problems.items()}


def check_little(subject: Subject) -> CheckResult:
    """λ·W = L per job (docs/model.md#delay) at ρ = 0.5 on a heterogeneous system (in per-job
    dispatch for a policy that needs it); a policy judged unstable there must report no mean, and be
    stable at λ_Σ < μ_min."""
    policy = subject.make()
    for dispatch in ("batch", "per_job"):  # e.g. PI-Split runs in per-job dispatch only
        system = System.build([0.4, 0.5, 0.6, 0.7], load=0.5, dispatchers=2, dispatch=dispatch)
        try:
            policy.check_system(system)
            break
        except ValidationError as error:
            out_of_scope = error
    else:
        return CheckResult("little", "skipped", f"out of scope: {out_of_scope}")
    result = simulate(system, policy, slots=LITTLE_SLOTS, seed=1)
    if result.stability == "unstable":
        if not (math.isnan(result.mean_total_queue) and math.isnan(result.mean_delay)):
            return CheckResult("little", "failed", "an unstable run reports a mean")
        system = system.with_rate(0.9 * float(system.mu.min()))
        result = simulate(system, policy, slots=LITTLE_SLOTS, seed=1)
    if result.stability == "unstable":
        return CheckResult("little", "failed", "unstable although λ_Σ < μ_min: "
                           + result.stability_evidence)
    gap = result.little_law_gap
    if gap >= 0.02 or result.plain_mean_total_queue < result.mean_pooled_queue:
        return CheckResult("little", "failed", f"|λW − L|/L = {gap:.3g} (W measured "
                           f"{result.mean_delay_measured:.4g}, L/λ {result.mean_delay:.4g})")
    return CheckResult("little", "passed", f"|λW − L|/L = {gap:.2g} at ρ = {system.load:.3g}")


def invalid_values(param: Param) -> list[Any]:
    """Values the parameter must refuse, generated from its type, range and choices."""
    bad: list[Any] = []
    if param.kind in (int, float):
        # a number's text and a bool are not numbers: nothing is converted silently
        bad += ["not-a-number", str(param.default), True, math.inf, math.nan]
        if param.low is not None and math.isfinite(param.low):
            bad.append(param.low if param.low_open else param.low - 1)
        if param.high is not None and math.isfinite(param.high):
            bad.append(param.high + 1)
        if param.kind is int:
            bad += [1.5, float(param.default), 2**63, -(2**63) - 1]
    elif param.kind is bool:
        bad += ["maybe", "true", 1, 0]
    elif param.kind is str:
        bad += [3, b"bytes"]
    if param.choices:
        bad.append("not-" + "-".join(map(str, param.choices)))
    return bad


def check_parameter_validation(subject: Subject) -> CheckResult:
    """Every generated invalid value, and an unknown name, raise ValidationError naming the
    parameter; the defaults and every choice are accepted."""
    problems = []
    tried = 0
    for param in subject.params:
        for value in invalid_values(param):
            tried += 1
            try:
                subject.make(**{param.name: value})
            except ValidationError as error:
                if param.name not in error.field:
                    problems.append(f"{param.name}={value!r}: error names {error.field!r}")
            else:
                problems.append(f"{param.name}={value!r} accepted")
        for value in param.choices:
            tried += 1
            try:
                subject.make(**{param.name: value})
            except ValidationError as error:  # a relation to another parameter may refuse it
                if error.message.startswith("allowed"):
                    problems.append(f"{param.name}={value!r} (a declared choice) refused")
    tried += 1
    try:
        subject.make(no_such_parameter=1)
    except ValidationError as error:
        if "no_such_parameter" not in str(error):
            problems.append("an unknown parameter's error does not name it")
    else:
        problems.append("an unknown parameter is accepted")
    return CheckResult("parameter-validation", "failed" if problems else "passed",
                       "; ".join(problems[:3]) or f"{tried} generated values")


def _value_sampler(param: Param) -> Callable[[np.random.Generator], Any] | None:
    """Draw a value of ``param`` from its range and choices (None: nothing to draw)."""
    if param.choices:
        return lambda rng: param.choices[int(rng.integers(len(param.choices)))]
    if param.kind is bool:
        return lambda rng: bool(rng.integers(2))
    if param.kind is int:
        low = int(param.low if param.low is not None else 0) + int(param.low_open)
        high = int(min(param.high if param.high is not None else low + 6, low + 6))
        return lambda rng: int(rng.integers(low, high + 1))
    if param.kind is float:
        low = param.low if param.low is not None else 0.0
        high = param.high if param.high is not None else low + 4.0
        return lambda rng: float(low + (high - low) * (1.0 - rng.random()))  # (low, high]
    return None  # free-form strings (a decision name, γ): their defaults are the examples


def _hypothesis_strategy(param: Param) -> Any:
    from hypothesis import strategies as st

    if param.choices:
        return st.sampled_from(param.choices)
    if param.kind is bool:
        return st.booleans()
    if param.kind is int:
        low = int(param.low if param.low is not None else 0) + int(param.low_open)
        return st.integers(low, int(min(param.high if param.high is not None else low + 6,
                                         low + 6)))
    low = param.low if param.low is not None else 0.0
    high = param.high if param.high is not None else low + 4.0
    return st.floats(low, high, exclude_min=param.low_open, allow_nan=False)


def _run_with_params(subject: Subject, params: dict[str, Any], system: System,
                     seed: int) -> list[str] | None:
    """Invariant failures of one short run with ``params``; None when the parameters (or
    the system) are out of scope for a declared relation (validate_params, check_system)."""
    try:
        policy = subject.make(**params)
        policy.check_system(system)
    except ValidationError:
        return None
    result = simulate(system, policy, slots=SHORT_SLOTS // 2, seed=seed)
    return [f"{p} with {params}" for found in invariant_failures(result, system).values()
            for p in found]


def check_parameters(subject: Subject, *, seed: int, examples: int) -> CheckResult:
    """The invariants with non-default parameters (hypothesis when installed)."""
    samplers = {p.name: p for p in subject.params if _value_sampler(p) is not None}
    if not samplers:
        return CheckResult("parameters", "skipped", "no parameter to vary")
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        return _check_parameters_seeded(subject, samplers, seed=seed, examples=examples)
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    problems: list[str] = []
    ran = [0]

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(params=st.fixed_dictionaries({}, optional={
        name: _hypothesis_strategy(p) for name, p in samplers.items()}),
        system_seed=st.integers(0, 2**32 - 1))
    def run(params: dict[str, Any], system_seed: int) -> None:
        rng = np.random.default_rng(system_seed)
        found = _run_with_params(subject, params, random_small_system(rng), system_seed)
        assume(found is not None)
        ran[0] += 1
        if found:
            problems.extend(found)
            raise AssertionError(found[0])

    try:
        run()
    except AssertionError:
        pass
    except Exception as error:  # hypothesis could not find examples in scope, …
        if not ran[0]:
            return CheckResult("parameters", "skipped", f"{type(error).__name__}: {error}")
        problems.append(traceback.format_exception_only(error)[-1].strip())
    return CheckResult("parameters", "failed" if problems else "passed",
                       problems[-1] if problems else
                       f"hypothesis: {ran[0]} runs over {', '.join(samplers)}")


def _check_parameters_seeded(subject: Subject, samplers: dict[str, Param], *, seed: int,
                             examples: int) -> CheckResult:
    rng = np.random.default_rng(seed + 1)
    problems: list[str] = []
    ran = 0
    for _ in range(20 * examples):
        if ran >= examples:
            break
        params = {name: _value_sampler(p)(rng) for name, p in samplers.items()  # type: ignore[misc]
                  if rng.random() < 0.5}
        found = _run_with_params(subject, params, random_small_system(rng),
                                 int(rng.integers(2**32)))
        if found is None:
            continue
        ran += 1
        problems += found
    return CheckResult("parameters", "failed" if problems else "passed",
                       "; ".join(problems[:3]) or f"seeded sample (hypothesis not installed): "
                       f"{ran} runs over {', '.join(samplers)}")


def check_led_estimates(subject: Subject) -> CheckResult:
    """LED: p̂ = 1 and d = N ⇒ every estimate is Q(t+1) after every slot (error 0)."""
    from dispatchlab.policies.led.policy import LEDPolicy

    policy = subject.make()
    if not isinstance(policy, LEDPolicy):
        return CheckResult("led-estimates", "skipped", "not an LED policy")
    problems = []
    for update, dispatchers in (("push", 3), ("pull", 1)):
        system = System.build([0.3, 0.5, 0.9, 1.0], load=0.85, dispatchers=dispatchers,
                              service="geometric")
        # (the LSQ increment may move estimates at dispatch; the full refresh overwrites it)
        exact = policy.with_params(update=update, p=1.0, d=system.n_servers, trigger="slot",
                                   measure_error=True, budget="none")
        result = simulate(system, exact, slots=5_000, seed=11)
        error = result.diagnostics["estimation_error"]
        if error != 0:
            problems.append(f"{update}: E|Q(t+1) − Q̃| = {error:.4g}, not 0")
    return CheckResult("led-estimates", "failed" if problems else "passed",
                       "; ".join(problems) or "push (M = 3) and pull (M = 1): error 0")


def run_check(policy: Policy | type[Policy] | Callable[..., Policy] | str, name: str, *,
              seed: int = 0, examples: int = 5) -> CheckResult:
    """Run the single check ``name`` (one of :data:`CHECKS`)."""
    return check_policy(policy, checks=(name,), seed=seed, examples=examples,
                        strict=False)[name]


def _failing_as_checks(names: tuple[str, ...], run: Callable[[], Any]) -> dict[str, CheckResult]:
    """The checks ``names`` that ``run()`` makes (a dict by name, or the one check's
    result), each failed with the error when the policy broke a run (a server outside
    0 … N − 1, an index outside its arrays: :class:`PolicyError`)."""
    try:
        found = run()
    except PolicyError as error:
        return {name: CheckResult(name, "failed", str(error)) for name in names}
    return found if isinstance(found, dict) else {names[0]: found}


def check_policy(policy: Policy | type[Policy] | Callable[..., Policy] | str, *,
                 checks: tuple[str, ...] = CHECKS, seed: int = 0, examples: int = 5,
                 slots: int = SHORT_SLOTS, strict: bool = True) -> ConformanceReport:
    """Run the named conformance ``checks`` on ``policy``; see the module docstring.

    Args:
        policy: a Policy object (checked with its parameters), a Policy class, a preset
            factory, or a registered name.
        checks: which checks (default: all of :data:`CHECKS`).
        seed: draws the random systems and run seeds (the same seed, the same checks).
        examples: random systems (and parameter draws) per check.
        slots: slots per short run.
        strict: raise :class:`ConformanceError` when a check fails.
    """
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        raise ValidationError("checks", f"unknown check {unknown[0]!r}; allowed: "
                              + ", ".join(CHECKS))
    subject = subject_of(policy)
    report = ConformanceReport(subject.label)
    found: dict[str, CheckResult] = {}
    if set(checks) & set(CHECKS[:5]):
        found.update(_failing_as_checks(CHECKS[:5], lambda: _on_systems(
            subject, seed=seed, examples=examples, slots=slots)))
    single = {"little": lambda: check_little(subject),
              "parameter-validation": lambda: check_parameter_validation(subject),
              "parameters": lambda: check_parameters(subject, seed=seed, examples=examples),
              "led-estimates": lambda: check_led_estimates(subject)}
    for name, check in single.items():
        if name in checks:
            found.update(_failing_as_checks((name,), check))
    report.checks = [found[name] for name in CHECKS if name in checks]
    if strict:
        report.raise_if_failed()
    return report
