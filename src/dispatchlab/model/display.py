"""How a :class:`~dispatchlab.model.system.System` reads: its one-line ``repr`` and its
HTML table in a notebook. The functions read a system by duck typing (its attributes and
``describe()``): this module sits below ``model.system`` and imports nothing of it."""

from __future__ import annotations

from typing import Any

from dispatchlab.core.display import html_table, number


def system_line(system: Any) -> str:
    """``System(N=100, M=10, ρ=0.9, ε=3, μ=50x0.1,50x0.5, poisson/bernoulli, batch)``."""
    described = system.describe()
    return (f"System(N={system.n_servers}, M={system.dispatchers}, ρ={number(system.load)}, "
            f"ε={number(system.epsilon)}, μ={described['servers']}, "
            f"{described['arrivals']}/{described['service']}, dispatch={system.dispatch})")


def system_html(system: Any) -> str:
    """The HTML table of a System for notebooks: N, M, μ_n, μ_Σ, λ_Σ, ρ, ε, the arrival and
    service laws, the split and the dispatch mode (docs/model.md#slotted-model)."""
    described = system.describe()
    rows = [("N (servers)", system.n_servers), ("M (dispatchers)", system.dispatchers),
            ("μ_n (service rates)", described["servers"]), ("μ_Σ", system.mu_sum),
            ("λ_Σ (arrival rate)", system.arrival_rate), ("ρ = λ_Σ/μ_Σ", system.load),
            ("ε = μ_Σ − λ_Σ", system.epsilon), ("arrivals", described["arrivals"]),
            ("service", described["service"]), ("split", system.split),
            ("dispatch", system.dispatch)]
    return html_table("System", rows)
