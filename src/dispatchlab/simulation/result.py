"""The result of a simulation: readable fields, ``to_dict()`` and a pandas row."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dispatchlab.core.errors import require


@dataclass
class Result:
    """Estimates of one simulated configuration.

    Queue and delay means are ``nan`` (``null`` in JSON) when the run was judged
    unstable: an unstable run never reports a mean as if it were one.

    Windows: everything is measured from slot ``warmup`` on. With
    ``warmup_method="mser5"`` the MSER-5 truncation (``warmup``) applies to the mean and CI
    of ΣQ only; the other measures keep the fixed warm-up (10 % by default). The measured delay
    counts the jobs that arrived in the window and were served before the run ended (jobs
    still queued at the end are censored, which biases it low on runs that are short
    against the queue's relaxation time; ``mean_delay`` by Little's law has no such bias).
    A dispatch event is a dispatcher-slot with arrivals; in per-job mode a policy that
    probes per decision (JSQ, Po-d) spends its messages per job, so
    ``messages_per_dispatch`` then includes the jobs per event.
    """

    # configuration
    policy: str
    params: dict[str, Any]
    system: dict[str, Any]
    slots: int
    warmup: int
    seed: int
    replications: int
    # queue lengths
    mean_total_queue: float  # E[Σ_n Q_n]
    ci_low: float
    ci_high: float
    ci_method: str
    mean_queues: list[float]  # E[Q_n] per server
    mean_pooled_queue: float  # E[q], the resource-pooled single-server queue
    invariant_violations: int  # slots with ΣQ < q (must be 0)
    # delay (slots; a job served in its arrival slot has delay 0)
    mean_delay: float  # by Little's law, E[ΣQ]/λ_Σ
    mean_delay_measured: float  # per job, FIFO
    delay_p50: float
    delay_p90: float
    delay_p99: float
    delay_p999: float
    # messages
    messages_per_arrival: float
    messages_per_dispatch: float
    messages_by_kind: dict[str, float]  # per arrival
    # stability
    stability: str
    stability_evidence: str
    # theory next to the measurement
    lower_bound_total_queue: float  # finite-ε bound, docs/model.md#lower-bound
    heavy_traffic_limit: float  # ζ/2
    # theorem quantities
    epsilon_total_queue: float  # ε·E[ΣQ]
    idle_while_busy: float  # E[‖Q(t+1)‖₁·‖U(t)‖₁], [JBT] Eq. (7)'s term
    queue_imbalance_l1: float  # DQI_1 = E[Σ_n |Q_n − ΣQ/N|]; nan: not measured (imbalance=False)
    queue_imbalance_l2: float  # DQI_2 = E[‖Q_⊥‖₂]; nan (null in JSON) when not measured
    herding_fraction: float  # slots where ≥ 2 dispatchers chose one server
    arrival_rate_measured: float
    # conservation over the whole run (all replications): arrived = departed + in system
    jobs_arrived: int = 0
    jobs_departed: int = 0
    jobs_in_system: int = 0
    jobs_at_start: int = 0  # ΣQ(0): 0 from an empty start; arrived + at start = departed + in
    # job completion time as the LED/LSQ group's simulator reports it: departure slot −
    # arrival slot + 1 = mean_delay_measured + 1 (a job served in its arrival slot takes 1)
    mean_completion_time: float = math.nan
    # the waiting probability: the share of measured jobs placed behind another job (its
    # server's Q_n(t) and the jobs placed there before it in the slot, its own batch's
    # included), the mean over replications with a 95 % t-interval across them (R ≥ 2)
    waiting_probability: float = math.nan
    waiting_probability_ci_low: float = math.nan
    waiting_probability_ci_high: float = math.nan
    # the share of measured jobs whose server held a job at the start of their slot (jobs
    # placed earlier in the slot not counted): the fluid limit's waiting probability
    busy_server_probability: float = math.nan
    busy_server_probability_ci_low: float = math.nan
    busy_server_probability_ci_high: float = math.nan
    total_queue_distribution: list[float] = field(default_factory=list)  # P(ΣQ = k), last: ≥ k
    diagnostics: dict[str, float] = field(default_factory=dict)
    # performance
    slots_run: int = 0
    seconds: float = 0.0
    slots_per_second: float = 0.0
    # the precision of the CI of E[ΣQ] and how the run length was decided
    half_width: float = math.nan  # of the 95 % CI
    relative_half_width: float = math.nan  # half-width / mean
    ci_dof: float = math.nan  # degrees of freedom of its Student-t quantile
    autocorrelation_time: float = math.nan  # τ̂ in slots (the longest of the runs) of the
    # series behind the headline CI: ΣQ (plain) or X = ΣQ − q (coupled)
    precision_target: float | None = None  # relative half-width asked for, if any
    precision_abs_target: float | None = None  # absolute half-width asked for, if any
    slot_budget: int | None = None  # of a precision run, warm-ups included
    stop_reason: str = ""  # "fixed run length", "target reached", "slot budget spent …"
    # stability by theory where it exists (framework Π threshold, λ_Σ ≥ μ_Σ), else "unknown";
    # a disagreement with ``stability`` is named in ``stability_evidence``
    theory_stability: str = "unknown"
    # the two estimators of E[ΣQ] (docs/statistics.md#coupled): ``plain``, the time average
    # of ΣQ; ``coupled``, E[q] of the pooled queue computed (theory.pooled_queue) plus the
    # time average of X = ΣQ − q ≥ 0 on the same draws. ``estimator`` says which one
    # mean_total_queue and its CI report; ``estimator_note`` why not the coupled one
    estimator: str = "plain"
    estimator_note: str = ""
    start: str = "empty"  # Q(0): empty, or stationary (q(0) from the pooled queue's law)
    plain_mean_total_queue: float = math.nan
    plain_ci_low: float = math.nan
    plain_ci_high: float = math.nan
    coupled_mean_total_queue: float = math.nan
    coupled_ci_low: float = math.nan  # X's interval shifted by E[q], widened by its error
    coupled_ci_high: float = math.nan
    # [JBT] Eq. (7)'s term with its batch-means CI, and the O(ε) terms of the drift
    # identity ε·E[X] = E[ΣQ(t+1)·ΣU(t)] − (E[U_Σ²] − E[ū²])/2 (docs/statistics.md#drift)
    idle_while_busy_ci_low: float = math.nan
    idle_while_busy_ci_high: float = math.nan
    mean_unused_square: float = math.nan  # E[U_Σ(t)²], U_Σ = Σ_n U_n
    mean_pooled_unused_square: float = math.nan  # E[ū(t)²] of the pooled queue
    pooled_queue_exact: float = math.nan  # E[q] computed (not the run's time average)
    pooled_queue_error: float = math.nan  # the half-width within which E[q] lies
    pooled_queue_method: str = ""  # exact, bounded (…), unavailable: …
    mean_excess: float = math.nan  # E[X] = E[ΣQ − q]: → 0·(1/ε) iff heavy-traffic optimal
    excess_ci_low: float = math.nan
    excess_ci_high: float = math.nan
    epsilon_excess: float = math.nan  # ε·E[X]
    epsilon_excess_ci_low: float = math.nan
    epsilon_excess_ci_high: float = math.nan
    # how the delay quantiles were measured (docs/statistics.md#tagged-delays): ``tagged``
    # (a sample of tagged jobs, each measured job tagged with probability
    # ``delay_tag_probability``), ``all`` (every job) or ``off``; ``delay_jobs``, the jobs
    # behind them; for ``tagged`` each quantile's 95 % order-statistic CI, which covers the
    # quantile ``all`` gives on the same run (nan for ``all``: no tagging error)
    delay_method: str = "all"
    delay_jobs: int = 0
    delay_tag_probability: float = math.nan
    delay_p50_ci_low: float = math.nan
    delay_p50_ci_high: float = math.nan
    delay_p90_ci_low: float = math.nan
    delay_p90_ci_high: float = math.nan
    delay_p99_ci_low: float = math.nan
    delay_p99_ci_high: float = math.nan
    delay_p999_ci_low: float = math.nan
    delay_p999_ci_high: float = math.nan
    # per-server statistics (simulate(per_server=True), docs/statistics.md#per-server) over
    # the measured slots of every replication; empty when not asked for
    server_rates: list[float] = field(default_factory=list)  # μ_n
    server_utilisation: list[float] = field(default_factory=list)  # u_n = D_n/(μ_n·T)
    server_idle_fraction: list[float] = field(default_factory=list)  # slots ending Q_n = 0
    # P(Q_n = k) for k = 0 … bins − 2, the last entry P(Q_n ≥ bins − 1); [] when unstable
    server_queue_distributions: list[list[float]] = field(default_factory=list)
    # the decimated trajectory (simulate(trajectory=Trajectory(every=k))) of the first
    # replication, warm-up included: ΣQ(t), q(t) and Q_n(t) of trajectory_servers at t = 0, k, 2k, …
    trajectory_slots: list[int] = field(default_factory=list)
    trajectory_total_queue: list[int] = field(default_factory=list)
    trajectory_pooled_queue: list[int] = field(default_factory=list)
    trajectory_servers: list[int] = field(default_factory=list)
    trajectory_queues: list[list[int]] = field(default_factory=list)  # one list per server

    @property
    def load(self) -> float:
        return float(self.system["load"])

    @property
    def epsilon(self) -> float:
        return float(self.system["epsilon"])

    @property
    def stable(self) -> bool:
        return self.stability == "stable"

    @property
    def stopped_early(self) -> bool:
        """Whether fewer slots ran than asked (a run stopped at its bound)."""
        return 0 < self.slots_run < self.slots * self.replications

    def slots_text(self) -> str:
        """``10,000 slots × 2``, or ``1,001 of 10,000,000 slots run × 1`` when stopped."""
        if self.stopped_early:
            return (f"{self.slots_run:,} of {self.slots * self.replications:,} slots run "
                    f"({self.slots:,} × {self.replications} asked)")
        return f"{self.slots:,} slots × {self.replications}"

    @property
    def little_law_gap(self) -> float:
        """|λ·W − L| / L with W measured per job and L the time average of ΣQ over the same
        window (the plain estimate: Little's law holds on the sample path): ≈ 0 up to end
        effects."""
        lhs = self.arrival_rate_measured * self.mean_delay_measured
        mean = self.plain_mean_total_queue
        return abs(lhs - mean) / max(mean, 1e-12)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` becomes ``None``) with the flat CLI keys."""
        data = asdict(self)
        data.update(
            servers=self.system["servers"], dispatchers=self.system["dispatchers"],
            load=self.load, epsilon=self.epsilon,
        )
        return _json_ready(data)

    def to_row(self) -> dict[str, Any]:
        """One flat row for a pandas DataFrame: see :func:`flat_row`.

        ``pandas.DataFrame([r.to_row() for r in results])`` has one row per run; the
        experiment store's frame is built from the same rows.
        """
        return flat_row(self.to_dict())

    def to_records(self) -> list[dict[str, Any]]:
        """``[self.to_row()]``: records for ``pandas.DataFrame.from_records``."""
        return [self.to_row()]

    def to_frame(self):  # -> pandas.DataFrame (imported lazily: pandas is slow to import)
        """A one-row pandas DataFrame of :meth:`to_row`."""
        import pandas as pd

        return pd.DataFrame.from_records(self.to_records())

    def trajectory_frame(self):  # -> pandas.DataFrame
        """The trajectory (``simulate(…, trajectory=Trajectory(every=k))``) as a DataFrame,
        one row per point:
        ``slot`` (t = 0, k, 2k, …), ``total_queue`` (ΣQ(t)), ``pooled_queue`` (q(t), the
        resource-pooled queue on the same draws) and ``queue_<n>`` (Q_n(t)) for each
        recorded server n. Raises ValidationError when no trajectory was recorded."""
        import pandas as pd

        require(bool(self.trajectory_slots), "trajectory",
                "no trajectory recorded: run simulate(..., trajectory=Trajectory(every=k))")
        columns = {"slot": self.trajectory_slots, "total_queue": self.trajectory_total_queue,
                   "pooled_queue": self.trajectory_pooled_queue}
        columns.update({f"queue_{n}": values for n, values in
                        zip(self.trajectory_servers, self.trajectory_queues, strict=True)})
        return pd.DataFrame(columns)

    def per_server_frame(self):  # -> pandas.DataFrame
        """The per-server statistics (``simulate(…, per_server=True)``) as a DataFrame, one
        row per server: ``server`` (n), ``mu`` (μ_n), ``mean_queue`` (E[Q_n], NaN when
        unstable), ``throughput`` (jobs served a slot, u_n·μ_n), ``utilisation`` (u_n) and
        ``idle_fraction`` (docs/statistics.md#per-server). Raises ValidationError when
        they were not measured."""
        import pandas as pd

        require(bool(self.server_utilisation), "per_server",
                "no per-server statistics: run simulate(..., per_server=True)")
        mu = self.server_rates
        return pd.DataFrame({
            "server": range(len(mu)), "mu": mu, "mean_queue": self.mean_queues,
            "throughput": [u * m for u, m in zip(self.server_utilisation, mu, strict=True)],
            "utilisation": self.server_utilisation, "idle_fraction": self.server_idle_fraction,
        })

    def server_distribution_frame(self):  # -> pandas.DataFrame
        """Each server's queue-length distribution (``simulate(…, per_server=True)``) in long
        form: ``server``, ``queue`` (k), ``probability`` (P(Q_n = k)) and ``tail`` (True on
        each server's last row, which is P(Q_n ≥ k)). Raises ValidationError when it was not
        measured, or the run was unstable (no stationary distribution to show)."""
        import pandas as pd

        require(bool(self.server_utilisation), "per_server",
                "no per-server statistics: run simulate(..., per_server=True)")
        require(bool(self.server_queue_distributions), "per_server",
                "no queue-length distributions: the run was judged unstable")
        rows = [(n, k, p, k == len(pmf) - 1)
                for n, pmf in enumerate(self.server_queue_distributions)
                for k, p in enumerate(pmf)]
        return pd.DataFrame(rows, columns=["server", "queue", "probability", "tail"])

    def __repr__(self) -> str:
        from dispatchlab.simulation.display import result_line

        return result_line(self)

    def _repr_html_(self) -> str:
        from dispatchlab.simulation.display import result_html

        return result_html(self)


#: the nested dicts of a Result and the prefix of their keys in a flat row
ROW_PREFIXES = {"params": "params.", "system": "system.", "messages_by_kind": "messages.",
                "diagnostics": "diag."}


def flat_row(data: Mapping[str, Any]) -> dict[str, Any]:
    """A Result dict (``Result.to_dict()``, or one read back from the store) as one flat
    row: the scalar fields as they are, ``params.K``, ``system.K``, ``messages.KIND`` (per
    arrival) and ``diag.NAME`` for the nested dicts; the per-server vectors (E[Q_n], the
    ΣQ distribution) are left out."""
    row = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
    for key, prefix in ROW_PREFIXES.items():
        row.update({f"{prefix}{k}": v for k, v in (data.get(key) or {}).items()})
    return row


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _json_ready(value.item())
    return value
