"""What a figure of an experiment draws: :class:`FigureSpec` and its theory lines.

Plain data (frozen dataclasses) that an experiment spec carries and the store keeps as
JSON; :mod:`dispatchlab.report.plots` draws them. This module imports only the bottom
layers (errors, the converters, the model), so the experiment layer can hold figures
without importing the plotting code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from dispatchlab.core.convert import as_float, as_table, check_keys
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.system import System
from dispatchlab.specs.references import (
    function_name,
    reference_function,
    register_reference_function,
)

#: the x of a figure: the experiment's swept axis
AXES = ("load", "epsilon", "beta")
#: or the number of servers N of the grid's systems (a family at several sizes), one panel
#: per value of the swept axis
SERVERS = "servers"
#: the matplotlib line styles a reference line may have
LINE_STYLES = ("--", "-", ":", "-.", "solid", "dashed", "dotted", "dashdot")
#: y quantities with a meaning of their own (any Result field or diagnostics key also works)
NAMED_Y = ("mean_total_queue", "mean_delay", "epsilon_total_queue", "messages_per_arrival",
           "queue_per_server", "jobs_waiting_per_server")
#: E[ΣQ]/N, the mean queue per server: the quantity of the many-server regimes, computed
#: from each point's E[ΣQ] and its number of servers N (report.derived)
QUEUE_PER_SERVER = "queue_per_server"
#: E[Σ_n (Q_n + A_n − 1)⁺]/N, the jobs waiting beyond the one in service per server, from
#: E[ΣQ] by rate balance (report.derived; docs/statistics.md#jobs-waiting)
JOBS_WAITING = "jobs_waiting_per_server"
#: Result fields whose CI is a scaled copy of the ΣQ CI (ci_low/ci_high are for E[ΣQ])
CI_SCALED_Y = ("mean_total_queue", "mean_delay", "epsilon_total_queue")
#: the y quantities of a continuous-time point (dispatchlab.specs.continuous_grid), each
#: with its interval's ``_ci_low``/``_ci_high``
CONTINUOUS_Y = ("mean_response", "mean_slowdown", "mean_in_system", "waiting_probability",
                "response_p50", "response_p90", "response_p99")
#: Result fields with a CI of their own: the field -> its (low, high) fields
OWN_CI_Y = {"mean_excess": ("excess_ci_low", "excess_ci_high"),
            "epsilon_excess": ("epsilon_excess_ci_low", "epsilon_excess_ci_high"),
            "plain_mean_total_queue": ("plain_ci_low", "plain_ci_high"),
            "idle_while_busy": ("idle_while_busy_ci_low", "idle_while_busy_ci_high"),
            **{name: (f"{name}_ci_low", f"{name}_ci_high") for name in CONTINUOUS_Y}}


@dataclass(frozen=True)
class ReferenceLine:
    """A line from theory drawn on a figure; give exactly one of the three sources.

    Attributes:
        label: the legend entry, e.g. ``"ζ/2 (lower bound)"``.
        value: a constant (a horizontal line).
        field: a per-point theory value already in every Result, e.g.
            ``"heavy_traffic_limit"`` (ζ/2) or ``"lower_bound_total_queue"``; drawn as
            a curve over x (one per system).
        function: a module-level function ``f(system: System) -> float`` evaluated on
            the system at each x (kept in the store as ``"module:qualname"``), or such a
            name; a name resolves only among the registered reference functions
            (:mod:`dispatchlab.specs.references`): nothing a file names is imported.
        scale_by_epsilon: multiply the value by ε (to compare E[ΣQ]-type bounds on an
            ε·E[ΣQ] axis).
        style: a matplotlib line style.
    """

    label: str
    value: float | None = None
    field: str | None = None
    function: Callable[[System], float] | str | None = None
    scale_by_epsilon: bool = False
    style: str = "--"

    def __post_init__(self) -> None:
        if callable(self.function):  # handed over by the user's own code: register it
            with contextlib.suppress(ValidationError):  # a lambda: validate() says why
                register_reference_function(self.function)

    def resolved_function(self, name: str = "figures.references.function"
                          ) -> Callable[[System], float] | None:
        """The function to evaluate: the one given, or the registered one it names."""
        if self.function is None or callable(self.function):
            return self.function
        return reference_function(self.function, name)

    def validate(self, name: str) -> None:
        require(isinstance(self.label, str), f"{name}.label",
                f"must be text (got {self.label!r})")
        require(isinstance(self.style, str) and self.style in LINE_STYLES, f"{name}.style",
                f"allowed: {', '.join(repr(s) for s in LINE_STYLES)} (got {self.style!r})")
        require(isinstance(self.scale_by_epsilon, bool), f"{name}.scale_by_epsilon",
                f"must be true or false (got {self.scale_by_epsilon!r})")
        given = [k for k in ("value", "field", "function") if getattr(self, k) is not None]
        require(len(given) == 1, name,
                f"give exactly one of value, field, function (got {given or 'none'})")
        if self.field is not None:
            require(isinstance(self.field, str) and bool(self.field), f"{name}.field",
                    f"must name a Result field (got {self.field!r})")
        if self.value is not None:
            as_float(self.value, f"{name}.value")
        if self.function is not None:
            function_name(self.resolved_function(f"{name}.function"), f"{name}.function")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if callable(self.function):
            data["function"] = function_name(self.function, "function")
        return {k: v for k, v in data.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str) -> ReferenceLine:
        data = as_table(data, name)
        check_keys(data, name, tuple(f.name for f in fields(cls)))
        return cls(**data)


@dataclass(frozen=True)
class FigureSpec:
    """One figure of an experiment, drawn from the stored points.

    Attributes:
        name: the file stem (``NAME.png``/``NAME.svg``).
        x: ``load`` (ρ), ``epsilon`` (ε) or ``beta`` (the Halfin–Whitt β): the
            experiment's swept axis; or ``servers``: N, the size of the grid's systems (a
            family's sizes), with a panel per value of the swept axis and a curve per
            policy (and per family when there are several); its references are constants.
        y: ``mean_total_queue`` (E[ΣQ]), ``mean_delay``, ``epsilon_total_queue``
            (ε·E[ΣQ]), ``messages_per_arrival``, any other scalar Result field, a key
            of ``diagnostics`` or of ``messages_by_kind``. Curves are grouped by policy
            label (and by system label when the experiment has several systems).
        ci: draw the confidence interval as a band (for queue/delay y's; across
            replications when there are several).
        log_x / log_y: logarithmic axes.
        policies / systems: draw only these labels (empty: all).
        references: theory lines (:class:`ReferenceLine`).
        stability_thresholds: on a load axis, a dotted vertical line in a curve's colour
            at its policy's predicted stability threshold ρ̄ = λ̄/μ_Σ ([Π] Eq. (3)), for
            each member of framework Π with exact dispatch fractions whose ρ̄ is below 1
            and inside the swept loads (computed when drawn, not stored).
    """

    name: str
    x: str = "load"
    y: str = "mean_total_queue"
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    ci: bool = True
    log_x: bool = False
    log_y: bool = False
    policies: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    references: tuple[ReferenceLine, ...] = ()
    stability_thresholds: bool = True

    def validate(self, name: str) -> None:
        require(isinstance(self.name, str) and bool(self.name) and "/" not in self.name,
                f"{name}.name", f"must be a non-empty file stem (got {self.name!r})")
        for key in ("title", "xlabel", "ylabel"):
            require(isinstance(getattr(self, key), str), f"{name}.{key}",
                    f"must be text (got {getattr(self, key)!r})")
        for key in ("ci", "log_x", "log_y", "stability_thresholds"):
            require(isinstance(getattr(self, key), bool), f"{name}.{key}",
                    f"must be true or false (got {getattr(self, key)!r})")
        for key in ("policies", "systems"):
            require(all(isinstance(label, str) for label in getattr(self, key)),
                    f"{name}.{key}", f"must be a list of labels (got {getattr(self, key)!r})")
        require(self.x in (*AXES, SERVERS), f"{name}.x",
                f"allowed: {', '.join((*AXES, SERVERS))} (got {self.x!r})")
        require(isinstance(self.y, str) and bool(self.y), f"{name}.y",
                "must name a Result field or diagnostics key")
        for i, ref in enumerate(self.references):
            ref.validate(f"{name}.references[{i}]")
            require(self.x != SERVERS or ref.value is not None, f"{name}.references[{i}]",
                    "against servers N a reference line is a constant (value); field and "
                    "function lines follow the swept axis")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["policies"] = list(self.policies)
        data["systems"] = list(self.systems)
        data["references"] = [r.to_dict() for r in self.references]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str) -> FigureSpec:
        data = as_table(data, name)
        check_keys(data, name, tuple(f.name for f in fields(cls)))
        for key in ("policies", "systems", "references"):
            require(isinstance(data.get(key, ()), list | tuple), f"{name}.{key}",
                    f"must be a list (got {data.get(key)!r})")
        data["policies"] = tuple(data.get("policies", ()))
        data["systems"] = tuple(data.get("systems", ()))
        data["references"] = tuple(
            ReferenceLine.from_dict(r, f"{name}.references[{i}]")
            for i, r in enumerate(data.get("references", ())))
        return cls(**data)
