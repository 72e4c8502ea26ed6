"""Framework Π: periodic, order-based dispatching ([Π]; docs/model.md#framework-pi), as one policy
family.

A Π policy has three parts (docs/model.md#pi-components):

* the dispatching cycle T (``T``): queues are read only at the slots kT;
* the sorting function: scaled lengths O_l = Q_l/γ_l (``gamma`` = ``ones``, ``mu`` or a
  list), ordered decreasingly with uniform random tie-breaks into η;
* the decision function Y(η, μ, W) (``decision``): the destinations of the whole cycle.

``pi`` takes these as parameters; the presets (``pi-jsq``, ``pi-pod``, …) fix them to
the members of docs/model.md#pi-members. New decision functions are registered with
:func:`register_decision` (see ``examples/custom_decision_function.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.ram import require_memory
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register, register_preset
from dispatchlab.policies.framework.decisions import (
    DECISION_SIGNATURE,
    DECISION_TYPE,
    Decision,
    decision_entry,
    decision_function,
    decision_names,
    register_decision,
)
from dispatchlab.policies.framework.fractions import pi_fractions
from dispatchlab.policies.framework.kernel import (
    DIAG_HEADER,
    DIAG_PERP_SQ,
    DIAG_PERP_SQ_LITERAL,
    DIAG_SAMPLES,
    DIAG_TOTAL,
    DIAG_TOTAL_SQ,
    make_begin_slot,
    pi_choose,
    scaling_constants,
)

if TYPE_CHECKING:
    from dispatchlab.theory.stability import DispatchFractions


def parse_gamma(value: str, mu: np.ndarray) -> np.ndarray:
    """The scaling vector γ (gamma) from ``ones``, ``mu`` or a comma list of N positive numbers."""
    text = str(value).strip().lower()
    if text == "ones":
        return np.ones(mu.size)
    if text == "mu":
        return np.asarray(mu, dtype=float).copy()
    try:
        gamma = np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise ValidationError("pi-framework.gamma", f"expected ones, mu or a comma list of numbers "
                              f"(got {value!r})") from None
    require(gamma.size == mu.size, "pi-framework.gamma",
            f"need one γ_l per server ({mu.size}), got {gamma.size}")
    require(bool(np.all(np.isfinite(gamma) & (gamma > 0))), "pi-framework.gamma",
            "every γ_l must be a positive number")
    return gamma


@register
class PiPolicy(Policy):
    """Framework Π, registered as ``pi-framework``: every T slots read Q, sort Q_l/γ_l
    (random ties) and let a decision function Y fix the whole cycle's destinations.

    The framework of [Π] (docs/model.md#framework-pi): stable if λ_Σ < λ̄
    (docs/model.md#pi-stability); N one-way reports per read."""

    name = "pi-framework"
    summary = ("Framework Π: read Q every T slots, sort Q_l/γ_l (random ties), and let a decision "
               "function fix the whole cycle's destinations; N one-way reports per read.")
    theory = ("Stable if λ_Σ < λ̄ ([Π] Eq. (3), docs/model.md#pi-stability); throughput "
              "optimal iff the majorisation of docs/model.md#pi-throughput holds; HT optimal "
              "with Q ∝ γ in the limit under its strict form ([Π] Theorem 4.4, "
              "docs/model.md#pi-heavy-traffic). "
              "`dispatchlab check stability` computes λ̄.")
    parameters = (
        Param("decision", str, "shortest", "the decision function Y (registered name)"),
        Param("T", int, 0, "dispatching cycle T (0: the decision's own cycle, else 1)", low=0),
        Param("gamma", str, "ones", "scaling vector γ: ones, mu, or a comma list of N numbers"),
        Param("d", int, 2, "Po-d: servers sampled; k-SLQ-d: longest queues skipped", low=0),
        Param("k", int, 1, "k-SLQ-d: slots per non-skipped queue in a cycle", low=1),
        Param("resolution", int, 0, "balanced RR: 0 = exact rational weights ∝ μ; k > 0 = "
              "k slots for the fastest server per cycle", low=0),
    )
    diagnostics = ("samples_per_slot", "perp_sq", "perp_sq_literal", "sampled_total_queue",
                   "sampled_total_queue_sq")

    @classmethod
    def parameters_for(cls, fixed: dict[str, Any]) -> tuple[Param, ...]:
        """With the decision fixed: T always, γ when the decision reads the order, and the
        decision's own parameters (``uses``: d, k, resolution)."""
        if "decision" not in fixed:
            return cls.parameters
        entry = decision_entry(fixed["decision"])
        used = {"decision", "T", *entry.uses} | ({"gamma"} if entry.reads_queues else set())
        return tuple(p for p in cls.parameters if p.name in used)

    def validate_params(self) -> None:
        entry = decision_entry(self.params["decision"])
        self.params["decision"] = entry.name
        if entry.name == "pod":
            require(self.params["d"] >= 1, "pi-framework.d", "Po-d needs d ≥ 1")

    @property
    def decision(self) -> Decision:
        return decision_entry(self.params["decision"])

    def check_system(self, system: System) -> None:
        n = system.n_servers
        entry = self.decision
        d = self.params["d"]
        if entry.name == "pod":
            require(d <= n, "pi-framework.d", f"d must be between 1 and N = {n} (got {d})")
        if entry.name == "kslq":
            require(d < n, "pi-framework.d", f"k-SLQ-d needs d < N = {n} (got {d})")
        parse_gamma(self.params["gamma"], system.mu)
        self.cycle_length(system.mu)

    def cycle_length(self, mu: np.ndarray) -> int:
        """T: the decision's own cycle when it has one, else the ``T`` parameter (0 → 1)."""
        entry = self.decision
        T = self.params["T"]
        if entry.cycle is not None:
            natural = int(entry.cycle(self.params, mu))
            require(T in (0, natural), "pi-framework.T",
                    f"decision {entry.name!r} has its own cycle T = {natural} (got {T})")
            return natural
        return max(T, 1)

    def dispatch_fractions(self, mu: np.ndarray) -> DispatchFractions:
        """a_l(η) of the decision: exact when it declares them, else Monte Carlo
        (docs/model.md#pi-fractions)."""
        return pi_fractions(self, mu)

    def kernel(self, system: System) -> Kernel:
        mu = system.mu
        n, m = system.n_servers, system.dispatchers
        entry = self.decision
        T = self.cycle_length(mu)
        gamma = parse_gamma(self.params["gamma"], mu)
        header = np.array([T, m, n, int(entry.reads_queues), 1, int(np.all(gamma == 1.0))],
                          np.int64)
        ip = np.concatenate([header, np.asarray(entry.int_params(self.params, mu), np.int64)])
        fp = np.concatenate([scaling_constants(gamma),
                             np.asarray(entry.float_params(self.params, mu), float)])
        width = max(T, n, 2)  # row M+3 holds two control entries, even when T = N = 1
        # the kernel's int64 state and the copy each run makes of it (Kernel.memory)
        require_memory("pi-framework.T", 2 * 8 * (m + 4) * width,
                       f"a cycle of T = {T} slots for M = {m} dispatchers")
        ist = np.zeros((m + 4, width), np.int64)
        ist[m, :n] = np.arange(n)  # η before any read (decisions that ignore η)
        return Kernel(pi_choose, begin_slot=make_begin_slot(entry.function),
                      int_params=ip, float_params=fp, int_state=ist,
                      float_state=np.zeros((1, n)), n_diagnostics=DIAG_HEADER + n)

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        """Collapse measures at the sampling times kT (docs/model.md#pi-heavy-traffic).

        ``perp_sq``: E‖P_⊥‖² for P = Q/√γ on c = √γ, i.e. Σ_l γ_l(O_l − ΣQ/Σγ)²: bounded
        as ε → 0 when Q_l ∝ γ_l. ``perp_sq_literal``: E‖O_⊥‖² read literally (O = Q/γ on
        c = √γ). ``direction_gap``: ½‖Q̄/ΣQ̄ − γ/‖γ‖₁‖₁ from the sampled means.
        """
        samples = max(float(diag[DIAG_SAMPLES]), 1.0)
        n = system.n_servers
        gamma = parse_gamma(self.params["gamma"], system.mu)
        sampled = diag[DIAG_HEADER:DIAG_HEADER + n] / samples
        total = float(sampled.sum())
        direction = sampled / total if total > 0 else np.full(n, np.nan)
        out = {
            "samples_per_slot": float(diag[DIAG_SAMPLES]) / max(measured_slots, 1),
            "perp_sq": float(diag[DIAG_PERP_SQ]) / samples,
            "perp_sq_literal": float(diag[DIAG_PERP_SQ_LITERAL]) / samples,
            "sampled_total_queue": float(diag[DIAG_TOTAL]) / samples,
            "sampled_total_queue_sq": float(diag[DIAG_TOTAL_SQ]) / samples,
            "direction_gap": float(0.5 * np.abs(direction - gamma / gamma.sum()).sum()),
        }
        out.update({f"sampled_share_{l}": float(direction[l]) for l in range(n)})
        return out


def _preset(name: str, summary: str, theory: str = "", defaults: dict[str, Any] | None = None,
            **fixed: Any) -> None:
    register_preset(name, PiPolicy, summary, theory, defaults, **fixed)


_preset("pi-rand", "Π RAND (T = 1): uniform random server; no reads, no messages.",
        "a_l = 1/N: stable iff λ_Σ < N·μ_min.", decision="rand")
_preset("pi-wrand", "Π weighted RAND (T = 1): server j with probability μ_j/μ_Σ; no reads.",
        "a_l(η) = μ_η(l)/μ_Σ: throughput optimal with equality, not HT optimal.",
        decision="wrand")
_preset("pi-rr", "Π RR (T = N): slot kN + i to server i; no reads.",
        "a_l = 1/N: stable iff λ_Σ < N·μ_min.", decision="rr")
_preset("pi-balanced-rr", "Π balanced RR: a fixed smooth cycle with slots ∝ μ_j; no reads.",
        "a ≈ μ/μ_Σ (rounded to the cycle): threshold min_j μ_j/w_j.", decision="balanced-rr")
_preset("pi-jsq", "Π JSQ (T = 1, γ = 1): the shortest queue at each slot.",
        "a = e_N: throughput and HT optimal; Q_l equal in the limit.", decision="shortest",
        gamma="ones")
_preset("pi-jsed", "Π JSED (T = 1, γ = μ): the shortest Q_l/μ_l at each slot.",
        "a = e_N: throughput and HT optimal; Q_l ∝ μ_l in the limit.", decision="shortest",
        gamma="mu")
_preset("pi-pod", "Π Po-d (T = 1, γ = 1): d distinct uniform samples, the shortest wins.",
        "a_l = C(l−1,d−1)/C(N,d): stable iff λ_Σ·C(m,d)/C(N,d) < μ_(1) + … + μ_(m) for all m.",
        decision="pod", gamma="ones")
_preset("periodic-jsq", "Periodic JSQ: read every T slots (T = 10 unless set), send the whole "
        "cycle to the shortest queue of that read.",
        "a = e_N for every T: throughput optimal (sporadic access).", decision="shortest",
        defaults={"T": 10})
_preset("periodic-pod", "Periodic Po-d: read every T slots (T = 10 unless set); each slot of the "
        "cycle applies Po-d to the order of that read.",
        "Same a_l and threshold as Po-d for every T.", decision="pod", defaults={"T": 10})
_preset("kslq", "k-SLQ-d: read every k(N−d) slots; the N−d queues outside the d longest get k "
        "slots each, shortest first.",
        "Throughput optimal iff (m−d)/(N−d) ≤ (μ_(1) + … + μ_(m))/μ_Σ for all m > d.",
        decision="kslq", defaults={"d": 1})

__all__ = [
    "DECISION_SIGNATURE",
    "DECISION_TYPE",
    "Decision",
    "PiPolicy",
    "decision_function",
    "decision_names",
    "parse_gamma",
    "register_decision",
]
