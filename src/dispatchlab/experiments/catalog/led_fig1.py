"""[LED] Fig. 1 in two models (docs/model.md#led-fig1, docs/model.md#herding).

* ``led-fig1`` — the batch model of docs/model.md#slot-order: Bernoulli service, 50 servers
  at μ = 0.1 and 50 at μ = 0.5 (μ_Σ = 30), all jobs of a dispatcher-slot to one server.
* ``led-fig1-slotted`` (and ``led-fig1-slotted-spread``) — the slot model of the public
  simulator of the LED/LSQ group (GitHub guy-goren/stochastically-coordinated-dispatching):
  per-job dispatch, geometric service with mean μ_n per slot, 50×1 + 50×5 (or μ_n = 1, 2,
  …, 100), tens to hundreds of jobs per dispatcher and slot.

Both: M = 10, Poisson arrivals per dispatcher. JSQ in its variants (uniform ties, shared
ties, lag 1, and water-filling — the group's JSQ — in the slotted model), Po-2, JIQ,
weighted random, LSQ with increments and with learn-on-send (push p̂ = 1, d = 2, as in the
group's code), and L-JSQ/L-JBA with push/pull at Po-2's overhead of 4 messages per job
(``budget_unit=arrival``, [LED] §5); the batch model also shows the budget of 4 messages
per dispatch event (what Po-2 spends there, ≈ 1.3 per job). A pilot checks the measured
overhead of every calibrated curve against Po-2's within 2 %; a curve whose budget cannot
be spent (pull: at most N reports per slot) runs at p̂ = 1 and is reported as capped.

After the run, :func:`fig1_summary` prints for each model and ρ ∈ {0.9, 0.95, 0.98}
E[ΣQ] with its CI, the mean job completion time (departure − arrival + 1 slots, as the
group's code reports it) and whether "LED beats JSQ" holds against each JSQ variant; it
also draws ``led-beats-jsq.png``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dispatchlab.experiments.catalog import register_experiment
from dispatchlab.policies import make_policy
from dispatchlab.simulation.run import simulate
from dispatchlab.specs.experiment import ExperimentSpec, FigureSpec, PolicySpec, SystemSpec

LOADS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
QUICK_LOADS = (0.5, 0.9)
SUMMARY_LOADS = (0.9, 0.95, 0.98)
DISPATCHERS = 10
BATCH = SystemSpec("50x0.1,50x0.5", dispatchers=DISPATCHERS, label="50×0.1 + 50×0.5, batch")
SLOTTED = SystemSpec("50x1,50x5", dispatchers=DISPATCHERS, service="geometric",
                     dispatch="per_job", label="50×1 + 50×5, slotted")
SPREAD = SystemSpec(",".join(str(k) for k in range(1, 101)), dispatchers=DISPATCHERS,
                    service="geometric", dispatch="per_job", label="μ = 1…100, slotted")
CALIBRATION_TOLERANCE = 0.02  # relative gap of measured messages per job to Po-2's

LED_VARIANTS = (("l-jsq-push", "L-JSQ-Push"), ("l-jsq-pull", "L-JSQ-Pull"),
                ("l-jba-push", "L-JBA-Push"), ("l-jba-pull", "L-JBA-Pull"))
DISPATCH_UNIT = " (Po-2/dispatch)"
JSQ_VARIANTS = (("JSQ (uniform ties)", {}), ("JSQ (shared ties)", {"ties": "shared"}),
                ("JSQ (lag 1)", {"lag": 1}))
WATER_FILLING = ("JSQ (water-filling)", {"fill": True})
QUIET = {"measure_error": False}


def push_d(systems: tuple[SystemSpec, ...], load: float) -> int:
    """The smallest push d ≥ 2 that can spend 4 messages per job at ``load`` on every system
    (2d·M ≥ 4λ_Σ), at most N: p̂ = 4λ_Σ/(2dM) ≤ 1 then calibrates each load."""
    need = 2
    for spec in systems:
        system = spec.build(load=load)
        need = max(need, min(system.n_servers, math.ceil(2 * system.arrival_rate
                                                             / system.dispatchers)))
    return need


def led_params(unit: str, d: int) -> dict[str, object]:
    """LED parameters of Fig. 1 (docs/model.md#led-fig1): p̂ matched to Po-2's message budget
    counted per ``unit`` (``dispatch`` or ``arrival``), push sample size ``d``, and the
    estimation-error measurement off."""
    return {"budget": "po2", "budget_unit": unit, "d": d, **QUIET}


#: the calibration line of a spec built without its pilot runs (listed or sized only)
NOT_CALIBRATED = "not run (the pilot runs are made when the experiment is built to run)"


def calibrate(spec: SystemSpec, loads: tuple[float, ...], variants: tuple[tuple[str, dict], ...],
              slots: int, seed: int = 99) -> list[str]:
    """Pilot runs: Po-2's measured messages per job, and each calibrated LED curve's.

    Raises if an uncapped curve (p̂ < 1) misses Po-2's measured value by more than 2 % (or
    3 standard errors of the pilot's update-event count, when that is wider);
    returns one line per load (capped curves marked ``capped``)."""
    lines = []
    for load in loads:
        system = spec.build(load=load)
        po2 = simulate(system, "pod", policy_params={"d": 2}, slots=slots, seed=seed,
                       delay="off", imbalance=False).messages_per_arrival
        parts = [f"ρ={load:g}: Po-2 {po2:.3f}"]
        for name, params in variants:
            policy = make_policy(name, **params)
            pilot = simulate(system, policy, slots=slots, seed=seed, delay="off",
                             imbalance=False)
            measured = pilot.messages_per_arrival
            label = f"{name}[{params['budget_unit']}]"
            target = 4.0 if params["budget_unit"] == "arrival" else po2
            # the pilot's own sampling error: its update events are Binomial (relative SE
            # ≈ 1/√events), which a short quick pilot (d = 54: few events) can put past 2 %
            per_event = 2 * params["d"] if policy.params["update"] == "push" else 1
            events = max(measured * pilot.jobs_arrived / per_event, 1.0)
            tolerance = max(CALIBRATION_TOLERANCE, 3.0 / math.sqrt(events))
            if abs(measured / target - 1) <= tolerance:
                parts.append(f"{label} {measured:.3f}")
            elif policy.effective_p(system) >= 1.0:
                parts.append(f"{label} {measured:.3f} (capped at p̂ = 1)")
            else:
                raise RuntimeError(f"{label} at ρ = {load}: {measured:.3f} messages per job "
                                   f"against {target:.3f}")
        lines.append(", ".join(parts))
    return lines


def _figures(title: str) -> tuple[FigureSpec, ...]:
    return (
        FigureSpec("queue", x="load", y="mean_total_queue", log_y=True, title=title,
                   ylabel="E[ΣQ]"),
        FigureSpec("completion", x="load", y="mean_completion_time", log_y=True, ci=False,
                   title="Mean job completion time (departure − arrival + 1)",
                   ylabel="slots"),
        FigureSpec("messages", x="load", y="messages_per_arrival", ci=False, log_y=True,
                   title="Messages per job", ylabel="messages / job"),
        FigureSpec("herding", x="load", y="herding_fraction", ci=False,
                   title="Slots in which ≥ 2 dispatchers chose one server",
                   ylabel="herding fraction"),
    )


def _common_policies() -> tuple[PolicySpec, ...]:
    lsq = {"p": 1.0, "d": 2, **QUIET}
    return (
        PolicySpec("pod", {"d": 2}, label="Po-2"),
        PolicySpec("jiq", label="JIQ"),
        PolicySpec("wrand", label="weighted random"),
        PolicySpec("lsq", lsq, label="LSQ (increments)"),
        PolicySpec("lsq", {**lsq, "learn_on_send": True}, label="LSQ (learn on send)"),
    )


def fig1_summary(frame, directory: Path | None = None) -> str:  # frame: pandas.DataFrame
    """The closing note: per system, ρ ∈ {0.9, 0.95, 0.98}: E[ΣQ] [95 % CI], mean completion
    time and messages per job of every curve, and whether the best LED curve at 4
    messages per job beats each JSQ variant (CIs disjoint). The CI combines the batch-means
    CIs of the replications (independent runs). Draws ``led-beats-jsq.png`` in
    ``directory`` when given."""
    if frame.empty:
        return "no points stored"
    rows = _aggregate(frame)
    lines: list[str] = []
    verdicts: dict[tuple[str, float], list[tuple[str, str, float, float]]] = {}
    for system in sorted({r["system"] for r in rows}):
        lines.append(f"\n== {system} ==")
        for load in SUMMARY_LOADS:
            at = [r for r in rows if r["system"] == system and math.isclose(r["x"], load)]
            if not at:
                continue
            lines.append(f"ρ = {load:g}:  E[ΣQ] [95 % CI] | completion time (slots) | "
                         "messages/job")
            for r in sorted(at, key=lambda r: (math.isnan(r["y"]), r["y"])):
                lines.append(f"  {r['policy']:<34} {_interval(r)} | {r['completion']:8.2f} | "
                             f"{r['messages']:8.3f}")
            led = [r for r in at if _is_led_per_job(r["policy"])]
            best = min(led, key=lambda r: r["y"] if math.isfinite(r["y"]) else math.inf,
                       default=None)
            for r in at:
                if not r["policy"].startswith("JSQ") or best is None:
                    continue
                verdict = _beats(best, r)
                verdicts.setdefault((system, load), []).append(
                    (r["policy"], verdict, best["completion"], r["completion"]))
                lines.append(f"  LED beats {r['policy']}: {verdict} (best LED {best['policy']} "
                             f"E[ΣQ] {best['y']:.4g}, completion {best['completion']:.2f} vs "
                             f"{r['y']:.4g}, {r['completion']:.2f})")
    if directory is not None and verdicts:
        _draw_verdicts(verdicts, Path(directory) / "led-beats-jsq.png")
    return "\n".join(lines).strip()


def _aggregate(frame) -> list[dict]:
    out = []
    for (system, policy, x), group in frame.groupby(["system", "policy_label", "x"]):
        means = group["mean_total_queue"].to_numpy(dtype=float)
        halves = (group["ci_high"] - group["ci_low"]).to_numpy(dtype=float) / 2
        finite = bool(np.all(np.isfinite(means)))
        y = float(means.mean()) if finite else math.nan
        half = float(np.sqrt(np.sum(halves ** 2)) / means.size) if finite else math.nan
        completion = group["mean_completion_time"].to_numpy(dtype=float)
        out.append({"system": system, "policy": policy, "x": float(x), "y": y,
                    "low": y - half, "high": y + half,
                    "completion": float(completion.mean()) if finite else math.nan,
                    "messages": float(group["messages_per_arrival"].mean())})
    return out


def _interval(r: dict) -> str:
    if not math.isfinite(r["y"]):
        return f"{'unstable':>28}"
    return f"{r['y']:9.4g} [{r['low']:8.4g}, {r['high']:8.4g}]"


def _is_led_per_job(label: str) -> bool:
    return label.startswith("L-") and DISPATCH_UNIT not in label


def _beats(led: dict, jsq: dict) -> str:
    if not math.isfinite(led["y"]):
        return "no (LED unstable)"
    if not math.isfinite(jsq["y"]):
        return "yes (JSQ unstable)"
    if led["high"] < jsq["low"]:
        return f"yes ({jsq['y'] / led['y']:.2f}× lower E[ΣQ])"
    if led["low"] > jsq["high"]:
        return f"no ({led['y'] / jsq['y']:.2f}× higher E[ΣQ])"
    return "not resolved (CIs overlap)"


def _draw_verdicts(verdicts, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(verdicts)
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        entries = verdicts[key]
        labels = [e[0].removeprefix("JSQ ").strip("()") for e in entries]
        ratio = [e[3] / e[2] if e[2] > 0 else math.nan for e in entries]
        colors = ["tab:green" if e[1].startswith("yes") else "tab:red" for e in entries]
        ax.bar(range(len(entries)), ratio, color=colors)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(range(len(entries)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{key[0]}\nρ = {key[1]:g}", fontsize=8)
        ax.set_ylabel("JSQ / best LED completion time", fontsize=8)
    fig.suptitle('"LED beats JSQ": green = yes (CIs disjoint), red = no or unresolved',
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _led_policies(unit: str, d: int, suffix: str = "") -> tuple[PolicySpec, ...]:
    return tuple(PolicySpec(name, led_params(unit, d), label=label + suffix)
                 for name, label in LED_VARIANTS)


@register_experiment("led-fig1", title="Fig. 1, batch model: LED at Po-2's overhead (4 per job "
                     "and per dispatch event) vs JSQ variants, Po-2, JIQ, LSQ (50×0.1 + 50×0.5, "
                     "M = 10)", paper="[LED] §6, Fig. 1 (docs/model.md#led-fig1)",
                     summary=fig1_summary)
def led_fig1(quick: bool = False, pilots: bool = True) -> ExperimentSpec:
    """Fig. 1 in the batch model of docs/model.md#slot-order: N = 100 servers (50 at μ = 0.1,
    50 at 0.5, Bernoulli service), M = 10, Poisson arrivals, all of a dispatcher's jobs in a slot to
    one server. LED curves at 4 messages per job (push d chosen so that p̂ ≤ 1 reaches it;
    pull capped at p̂ = 1 above ρ ≈ 0.83) and at Po-2's 4 per dispatch event (push d = 2).
    JSQ: uniform ties (scatters the dispatchers over the many tied servers), shared ties
    (every dispatcher picks the same server), queue lengths one slot old.
    """
    loads = QUICK_LOADS if quick else LOADS
    d = push_d((BATCH,), max(loads))
    variants = tuple((name, led_params("arrival", d)) for name, _ in LED_VARIANTS) + tuple(
        (name, led_params("dispatch", 2)) for name, _ in LED_VARIANTS)
    lines = (calibrate(BATCH, loads, variants, slots=3_000 if quick else 20_000) if pilots
             else [NOT_CALIBRATED])
    policies = (_led_policies("arrival", d) + _led_policies("dispatch", 2, DISPATCH_UNIT)
                + tuple(PolicySpec("jsq", params, label=label) for label, params in JSQ_VARIANTS)
                + _common_policies())
    return ExperimentSpec(
        name="led-fig1",
        title="Fig. 1, batch model: LED policies at Po-2's message overhead (M = 10)",
        description=(led_fig1.__doc__ or "") + f"\nPush d = {d}. Calibration (measured "
        "messages per job): " + "; ".join(lines),
        paper="[LED] Zhou, Shroff, Wierman 2020, Fig. 1",
        systems=(BATCH,), policies=policies, loads=loads, replications=2, slots=100_000,
        warmup=0.2, seed=2002, options={"imbalance": False},
        figures=_figures("Batch model: E[ΣQ] at Po-2's message overhead"),
    )


def _slotted(name: str, system: SystemSpec, quick: bool, slots: int,
             loads: tuple[float, ...], pilots: bool) -> ExperimentSpec:
    d = push_d((system,), max(loads))
    variants = tuple((led, led_params("arrival", d)) for led, _ in LED_VARIANTS)
    lines = (calibrate(system, loads, variants, slots=300 if quick else 2_000) if pilots
             else [NOT_CALIBRATED])
    jsq = tuple(PolicySpec("jsq", params, label=label)
                for label, params in (WATER_FILLING, *JSQ_VARIANTS))
    return ExperimentSpec(
        name=name,
        title=f"Fig. 1, the group's slotted model ({system.label}, M = 10)",
        description=(slotted_doc(system) + f"\nPush d = {d}. Calibration (measured messages "
                     "per job): " + "; ".join(lines)),
        paper="[LED] Fig. 1 in the model of the group's public simulator",
        systems=(system,), policies=_led_policies("arrival", d) + jsq + _common_policies(),
        loads=loads, replications=2, slots=slots, warmup=0.3, seed=2005,
        options={"imbalance": False},
        figures=_figures(f"Slotted model ({system.label}): E[ΣQ]"),
    )


def slotted_doc(system: SystemSpec) -> str:
    """The description of Fig. 1 run in the slot model of the LED/LSQ group's public simulator
    on ``system`` (docs/model.md#led-fig1)."""
    return (f"Fig. 1 in the slot model of the group's public simulator: {system.label} "
            "(geometric service, mean μ_n jobs per slot), M = 10, Poisson arrivals per "
            "dispatcher, per-job dispatch. JSQ water-filling is the group's JSQ; LED curves "
            "at 4 messages per job (per-job Po-2 spends exactly that; pull is capped at p̂ = 1, "
            "N reports per slot). Long relaxation at ρ ≥ 0.95: use --scale for tighter CIs.")


@register_experiment("led-fig1-slotted", title="Fig. 1 in the group's slotted model: per-job "
                     "water-filling, geometric service, 50×1 + 50×5, M = 10",
                     paper="[LED] Fig. 1; public simulator of the LED/LSQ group",
                     summary=fig1_summary)
def led_fig1_slotted(quick: bool = False, pilots: bool = True) -> ExperimentSpec:
    """Fig. 1 in the group's slot model on 50 servers at μ = 1 and 50 at μ = 5 (λ_Σ ≈ 300
    jobs per slot): about 10 minutes on 2 cores at the default scale."""
    return _slotted("led-fig1-slotted", SLOTTED, quick, 40_000,
                    QUICK_LOADS if quick else LOADS, pilots)


@register_experiment("led-fig1-slotted-spread", title="Fig. 1 in the group's slotted model on "
                     "μ_n = 1, 2, …, 100 (λ_Σ ≈ 5000 jobs per slot), M = 10",
                     paper="[LED] Fig. 1; public simulator of the LED/LSQ group",
                     summary=fig1_summary)
def led_fig1_slotted_spread(quick: bool = False, pilots: bool = True) -> ExperimentSpec:
    """The spread profile μ_n = n (n = 1…100): thousands of jobs per slot, so few slots and
    the high loads only (about 10 minutes on 2 cores at the default scale)."""
    return _slotted("led-fig1-slotted-spread", SPREAD, quick, 5_000,
                    (0.9,) if quick else SUMMARY_LOADS, pilots)
