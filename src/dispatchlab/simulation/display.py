"""How a :class:`~dispatchlab.simulation.result.Result` reads: its one-line ``repr`` and
its HTML table in a notebook. The functions read a result by duck typing (its fields):
this module sits below ``simulation.result`` and imports nothing of it."""

from __future__ import annotations

import math
from typing import Any

from dispatchlab.core.display import html_table, number, params_text


def result_line(result: Any) -> str:
    """``Result(jsq, N=100, M=10, ρ=0.9, E[ΣQ]=60.1 [59.2, 61.0], stable, 200 msg/job)``."""
    policy = result.policy + (f"({params_text(result.params)})" if result.params else "")
    ci = (f" [{number(result.ci_low)}, {number(result.ci_high)}]"
          if math.isfinite(result.ci_low) and math.isfinite(result.ci_high) else "")
    return (f"Result({policy}, N={result.system.get('n_servers', '?')}, "
            f"M={result.system.get('dispatchers', '?')}, ρ={number(result.load)}, "
            f"E[ΣQ]={number(result.mean_total_queue)}{ci}, {result.stability}, "
            f"{number(result.messages_per_arrival, 3)} msg/job)")


def result_html(result: Any) -> str:
    """The HTML table of a Result for notebooks: E[ΣQ] with its CI, ε·E[ΣQ] against ζ/2,
    the lower bound, delay, messages and the stability verdict."""
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
            ("slots × replications", result.slots_text()),
            ("seed", result.seed)]
    return html_table("Result", rows)
