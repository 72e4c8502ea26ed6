"""How results and systems read in a terminal and a notebook: one-line ``repr`` texts
and small HTML tables (``_repr_html_``). Formatting only; no computation."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dispatchlab.model.system import System
    from dispatchlab.result import Result


def number(value: Any, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits; ``—`` for nan/None (an unreported mean)."""
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def system_line(system: System) -> str:
    """``System(N=100, M=10, ρ=0.9, ε=3, μ=50x0.1,50x0.5, poisson/bernoulli, batch)``."""
    described = system.describe()
    return (f"System(N={system.n_servers}, M={system.dispatchers}, ρ={number(system.load)}, "
            f"ε={number(system.epsilon)}, μ={described['servers']}, "
            f"{described['arrivals']}/{described['service']}, dispatch={system.dispatch})")


def result_line(result: Result) -> str:
    """``Result(jsq, N=100, M=10, ρ=0.9, E[ΣQ]=60.1 [59.2, 61.0], stable, 200 msg/job)``."""
    policy = result.policy + (f"({params_text(result.params)})" if result.params else "")
    ci = (f" [{number(result.ci_low)}, {number(result.ci_high)}]"
          if math.isfinite(result.ci_low) and math.isfinite(result.ci_high) else "")
    return (f"Result({policy}, N={result.system.get('n_servers', '?')}, "
            f"M={result.system.get('dispatchers', '?')}, ρ={number(result.load)}, "
            f"E[ΣQ]={number(result.mean_total_queue)}{ci}, {result.stability}, "
            f"{number(result.messages_per_arrival, 3)} msg/job)")


def html_table(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column HTML table with a caption; values are escaped."""
    esc = html.escape
    body = "".join(f"<tr><th style='text-align:left'>{esc(name)}</th>"
                   f"<td style='text-align:left'>{esc(number(value))}</td></tr>"
                   for name, value in rows)
    return f"<table><caption style='text-align:left'><b>{esc(title)}</b></caption>{body}</table>"


def system_html(system: System) -> str:
    described = system.describe()
    rows = [("N (servers)", system.n_servers), ("M (dispatchers)", system.dispatchers),
            ("μ_n (service rates)", described["servers"]), ("μ_Σ", system.mu_sum),
            ("λ_Σ (arrival rate)", system.arrival_rate), ("ρ = λ_Σ/μ_Σ", system.load),
            ("ε = μ_Σ − λ_Σ", system.epsilon), ("arrivals", described["arrivals"]),
            ("service", described["service"]), ("split", system.split),
            ("dispatch", system.dispatch)]
    return html_table("System", rows)


def result_html(result: Result) -> str:
    ci = (f"[{number(result.ci_low)}, {number(result.ci_high)}] ({result.ci_method})"
          if math.isfinite(result.ci_low) and math.isfinite(result.ci_high) else "—")
    rows = [("policy", result.policy + (f"({params_text(result.params)})"
                                         if result.params else "")),
            ("system", f"N={result.system.get('n_servers')}, M={result.system.get('dispatchers')}"
                       f", μ={result.system.get('servers')}"),
            ("ρ (load)", result.load), ("ε", result.epsilon),
            ("E[ΣQ] (mean total queue)", result.mean_total_queue), ("95 % CI of E[ΣQ]", ci),
            ("ζ/2 (heavy-traffic limit of ε·E[ΣQ])", result.heavy_traffic_limit),
            ("ε·E[ΣQ]", result.epsilon_total_queue),
            ("lower bound on E[ΣQ]", result.lower_bound_total_queue),
            ("mean delay (Little)", result.mean_delay),
            ("delay p50 / p99", f"{number(result.delay_p50)} / {number(result.delay_p99)}"),
            ("messages per job", result.messages_per_arrival),
            ("stability", result.stability), ("evidence", result.stability_evidence),
            ("slots × replications", f"{result.slots} × {result.replications}"),
            ("seed", result.seed)]
    return html_table("Result", rows)
