"""``dispatchlab.plot_trajectory`` and ``dispatchlab.plot_distribution``: the figures of one
:class:`~dispatchlab.simulation.result.Result` that recorded a trajectory or per-server
statistics (``simulate(…, trajectory=Trajectory(every=k), per_server=True)``;
docs/statistics.md#per-server).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import matplotlib

if "ipykernel" not in sys.modules:  # a notebook keeps its inline backend
    matplotlib.use("Agg")  # before pyplot: figures are files, never windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dispatchlab.core.errors import require  # noqa: E402
from dispatchlab.report.labels import plain  # noqa: E402
from dispatchlab.simulation.plan import is_int  # noqa: E402
from dispatchlab.simulation.result import Result  # noqa: E402

#: the most queue-length distributions one figure draws
MAX_CURVES = 20


def _check_common(result: object, log_y: object, title: object) -> None:
    require(isinstance(result, Result), "result",
            f"expected a Result of dispatchlab.simulate (got {type(result).__name__})")
    require(isinstance(log_y, bool), "log_y", f"expected True or False (got {log_y!r})")
    require(isinstance(title, str), "title", f"expected a string (got {title!r})")


def _servers(servers: object, allowed: Sequence[int], where: str) -> list[int]:
    """``servers`` checked: a list of distinct server indices, each one of ``allowed``."""
    require(isinstance(servers, Sequence | np.ndarray) and not isinstance(servers, str | bytes),
            "servers", f"expected a list of server indices (got {servers!r})")
    chosen = list(servers)
    for i, server in enumerate(chosen):
        require(is_int(server) and int(server) in allowed, f"servers[{i}]",
                f"must be one of {where} (got {server!r})")
    require(len(set(chosen)) == len(chosen), "servers", f"a server given twice ({chosen!r})")
    return [int(server) for server in chosen]


def _title(result: Result, title: str) -> str:
    return plain(title or f"{result.policy} on {result.system['servers']}, "
                 f"ρ = {result.load:.4g}")


def plot_trajectory(result: Result, *, servers: Sequence[int] | None = None,
                    log_y: bool = False, title: str = "") -> Any:
    """ΣQ(t) and the pooled queue q(t) against the slot t, and Q_n(t) of ``servers``, from
    a result of ``simulate(…, trajectory=Trajectory(every=k))`` (its first replication,
    every k slots, the warm-up shaded). Returns the matplotlib Figure.

    Args:
        result: a Result with a trajectory.
        servers: the recorded servers whose Q_n(t) to draw (default: every recorded one;
            ``[]``: none).
        log_y: a symmetric-log y axis (linear below 1, so that empty queues still show).
        title: the figure's title (default: the policy, the servers and ρ).
    """
    _check_common(result, log_y, title)
    require(bool(result.trajectory_slots), "result",
            "no trajectory recorded: run simulate(..., trajectory=Trajectory(every=k))")
    recorded = list(result.trajectory_servers)
    chosen = recorded if servers is None else _servers(
        servers, recorded, f"the recorded servers {recorded}" if recorded
        else "the recorded servers (none: give Trajectory(every=k, servers=[…]))")
    slots = np.asarray(result.trajectory_slots)
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    if result.warmup > 0:
        ax.axvspan(0, result.warmup, color="0.9", label="warm-up")
    ax.plot(slots, result.trajectory_total_queue, color="C0", linewidth=1.4, label="ΣQ(t)")
    ax.plot(slots, result.trajectory_pooled_queue, color="C1", linewidth=1.2,
            linestyle="--", label="q(t), pooled queue")
    for colour, server in enumerate(chosen, start=2):
        ax.plot(slots, result.trajectory_queues[recorded.index(server)], linewidth=0.8,
                color=f"C{colour % 10}", label=f"Q_{server}(t)")
    if log_y:
        ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel(f"slot t (a point every {slots[1] - slots[0] if slots.size > 1 else 0} "
                  "slots)")
    ax.set_ylabel("jobs")
    ax.set_title(_title(result, title), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _default_servers(rates: list[float]) -> list[int]:
    """The first server of each distinct service rate (servers of one rate share a law
    under a policy that treats them alike), at most MAX_CURVES."""
    first: dict[float, int] = {}
    for n, rate in enumerate(rates):
        first.setdefault(rate, n)
    return list(first.values())[:MAX_CURVES]


def plot_distribution(result: Result, *, servers: Sequence[int] | None = None,
                      bars: bool = True, log_y: bool = False, title: str = "") -> Any:
    """Each chosen server's queue-length distribution P(Q_n = k), from a result of
    ``simulate(…, per_server=True)``, and with ``bars`` every server's E[Q_n] and its
    utilisation u_n next to its idle fraction (docs/statistics.md#per-server). Returns the
    matplotlib Figure.

    Args:
        result: a stable Result with per-server statistics.
        servers: whose distribution to draw, at most MAX_CURVES (default: the first
            server of each distinct service rate μ_n).
        bars: add the panels of per-server bars.
        log_y: a logarithmic probability axis (geometric tails become lines).
        title: the figure's title (default: the policy, the servers and ρ).
    """
    _check_common(result, log_y, title)
    require(isinstance(bars, bool), "bars", f"expected True or False (got {bars!r})")
    require(bool(result.server_utilisation), "result",
            "no per-server statistics: run simulate(..., per_server=True)")
    require(bool(result.server_queue_distributions), "result",
            "no queue-length distributions: the run was judged unstable")
    count = len(result.server_rates)
    chosen = _default_servers(result.server_rates) if servers is None else _servers(
        servers, range(count), f"0 … N − 1 = {count - 1}")
    require(0 < len(chosen) <= MAX_CURVES, "servers",
            f"give 1 … {MAX_CURVES} servers (got {len(chosen)})")
    panels = 3 if bars else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.0 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    for server in chosen:
        pmf = np.asarray(result.server_queue_distributions[server])
        k = np.arange(pmf.size)
        shown = pmf > 0 if log_y else np.ones(pmf.size, bool)
        (line,) = ax.plot(k[shown], pmf[shown], marker="o", markersize=3, linewidth=1,
                          label=f"server {server} (μ = {result.server_rates[server]:g})")
        if pmf[-1] > 0:  # the last bin is the tail P(Q_n ≥ k)
            ax.plot(k[-1:], pmf[-1:], marker="^", color=line.get_color(), linestyle="none")
    if log_y:
        ax.set_yscale("log")
    last = len(result.server_queue_distributions[0]) - 1
    ax.set_xlabel(f"queue length k (the last point, ▲: P(Q_n ≥ {last}))")
    ax.set_ylabel("P(Q_n = k)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if bars:
        index = np.arange(count)
        colours = _rate_colours(result.server_rates)
        axes[0][1].bar(index, result.mean_queues, color=colours)
        axes[0][1].set_ylabel("E[Q_n]")
        axes[0][2].bar(index, result.server_utilisation, color=colours, label="utilisation u_n")
        axes[0][2].plot(index, result.server_idle_fraction, linestyle="none", marker="_",
                        markersize=10, color="k", label="idle fraction")
        axes[0][2].set_ylim(0, 1.05)
        axes[0][2].legend(fontsize=8)
        for panel in axes[0][1:]:
            panel.set_xlabel("server n (colour: its rate μ_n)")
            panel.grid(True, axis="y", alpha=0.3)
    fig.suptitle(_title(result, title), fontsize=10)
    fig.tight_layout()
    return fig


def _rate_colours(rates: list[float]) -> list[str]:
    """One colour per distinct service rate."""
    order = {rate: i for i, rate in enumerate(dict.fromkeys(rates))}
    return [f"C{order[rate] % 10}" for rate in rates]
