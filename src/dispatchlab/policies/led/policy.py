"""The ``led`` policy ([LED]; docs/model.md#led): local-estimation-driven dispatching with M
dispatchers.

Each dispatcher m keeps its own estimate vector Q̃^m (length N), decides with a
dispatching strategy on Q̃^m alone (:mod:`.strategies`), and refreshes Q̃^m in the
end-of-slot phase with a push or pull update strategy (:mod:`.updates`). Named
combinations (``l-jsq-push``, …, ``lsq``) are presets of this one class.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dispatchlab.compiled.alias import alias_table
from dispatchlab.core.errors import require
from dispatchlab.core.ram import require_memory
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register, register_preset
from dispatchlab.policies.led.choose import choose_for
from dispatchlab.policies.led.layout import (
    EXTRA_ROWS,
    FP_SIZE,
    INDEX_BLOCKS,
    INDEX_NONE,
    INDEX_SUM,
    INDEX_TREE,
    IP_DISPATCHERS,
    IP_INCREMENT,
    IP_INDEX,
    IP_LEARN,
    IP_MEASURE_ERROR,
    IP_PUSH_D,
    IP_SERVERS,
    IP_SIZE,
    IP_STRATEGY,
    IP_TRIGGER,
    IP_UPDATE,
    PULL_POSITION_ROW,
    PUSH_POSITION_ROW,
    TRIGGER_ARRIVAL,
    TRIGGER_SLOT,
    UPDATE_PULL,
    UPDATE_PUSH,
)
from dispatchlab.policies.led.min_blocks import new_block_rows, uses_blocks
from dispatchlab.policies.led.min_tree import (
    new_tree_rows,
    uses_tree,
)
from dispatchlab.policies.led.strategies import (
    CODE_JBA,
    CODE_JSQ,
    JBA_AVERAGES,
    STRATEGY_NAMES,
    Strategy,
    builtin_strategy,
    custom_strategy,
)
from dispatchlab.policies.led.updates import (
    DIAG_ERROR_SAMPLES,
    DIAG_ESTIMATION_ERROR,
    pull_end_slot,
    push_end_slot,
)
from dispatchlab.theory.updates import expected_dispatch_events, update_probability

UPDATES = ("push", "pull")
#: measure_error samples every (4M)-th slot: O(MN) work each time, ≈ N/4 per slot
ERROR_STRIDE_PER_DISPATCHER = 4
TRIGGERS = ("slot", "arrival")
BUDGETS = ("none", "po2")
BUDGET_UNITS = ("dispatch", "arrival")


def po2_budget_per_slot(system: System, unit: str = "dispatch") -> float:
    """Po-2's expected messages per slot, the budget of ``budget=po2``
    (docs/model.md#messages, docs/model.md#led-fig1).

    ``unit = dispatch``: what Po-2 spends here, 4 per ``choose`` call: 4·E[#dispatch events]
    per slot in batch mode (≈ 1.3 per job in the Fig. 1 system), 4·λ_Σ in per-job mode.
    ``unit = arrival``: "Power-of-d needs at least 4 messages per arrival" ([LED] §5), i.e.
    4·λ_Σ in either mode.
    """
    if unit == "arrival" or system.dispatch == "per_job":
        return 4.0 * system.arrival_rate
    return 4.0 * expected_dispatch_events(system)


def po2_matched_p(update: str, d: int, trigger: str, system: System,
                  unit: str = "dispatch") -> float:
    """p̂ whose expected messages per slot equal Po-2's budget (:func:`po2_budget_per_slot`).

    LED spends 2d·p̂·M per slot (push), 2d·p̂·E[#events] (arrival-triggered push) or N·p̂
    (pull). The result is capped at 1 (the budget is then not reached: pull cannot spend
    more than N messages per slot, push more than 2d per dispatcher and slot).
    """
    events = expected_dispatch_events(system)
    budget = po2_budget_per_slot(system, unit)
    if update == "pull":
        p = budget / system.n_servers
    elif trigger == "arrival":
        p = budget / (2.0 * d * events)
    else:
        p = budget / (2.0 * d * system.dispatchers)
    return float(min(1.0, p))


@register
class LEDPolicy(Policy):
    """LED: dispatch on local estimates Q̃^m, refresh them by push or pull
    ([LED]; docs/model.md#led).

    ``strategy`` is ``jsq``, ``jba``, ``pod`` or a user rule compiled with
    :func:`~dispatchlab.policies.led.strategies.strategy_function` (or a
    :class:`~dispatchlab.policies.led.strategies.Strategy`); ``strategy_params`` are the
    float parameters passed to a user rule.
    """

    name = "led"
    summary = ("LED: each of the M dispatchers sends its jobs by a strategy (jsq | jba | pod | "
               "custom) applied to its own estimates Q̃^m, refreshed at slot end by push(p̂, d) "
               "or pull(p̂); increment=true adds the jobs sent (LSQ).")
    theory = ("[LED] Thm 1: tilted strategy + update with P(I^m_n = 1) ≥ p (Eq. 5) ⇒ throughput "
              "optimal; Thm 2: δ-tilted with δ, p independent of ε ⇒ ε·E[ΣQ] → ζ/2. "
              "L-JSQ δ = μ_min/μ_Σ, L-JBA δ = (μ_min/μ_Σ)², L-Pod δ = 1/N (homogeneous only); "
              "p = p̂·d/N (push), p̂/M (pull). `dispatchlab check tilt` computes Δ and δ.")
    parameters = (
        Param("strategy", str, "jsq", "dispatching strategy on the local estimates",
              choices=STRATEGY_NAMES),
        Param("update", str, "push", "update strategy: push (dispatcher samples d servers) "
              "or pull (a server reports to a uniform dispatcher)", choices=UPDATES),
        Param("p", float, 0.1, "p̂, the update probability per trial", low=0.0, low_open=True,
              high=1.0),
        Param("d", int, 2, "push: number of distinct servers sampled per update", low=1,
              only_with=("update", ("push",))),
        Param("pod_d", int, 2, "L-Pod: number of distinct servers compared", low=1,
              only_with=("strategy", ("pod",))),
        Param("jba_average", str, "plain", "L-JBA threshold: plain mean or μ-weighted mean",
              choices=JBA_AVERAGES, only_with=("strategy", ("jba",))),
        Param("increment", bool, False, "LSQ option: Q̃^m_n += jobs sent at dispatch"),
        Param("learn_on_send", bool, False, "LSQ of the group's simulator: the destination "
              "answers with Q_n(t) (1 message per dispatcher, destination and slot) and "
              "Q̃^m_n = Q_n(t) + the jobs sent there this slot (overrides increment)"),
        Param("trigger", str, "slot", "push: flip the p̂-coin every slot or only in slots "
              "with arrivals at the dispatcher", choices=TRIGGERS,
              only_with=("update", ("push",))),
        Param("measure_error", bool, True, "accumulate E|Q_n − Q̃^m_n|, sampled in every "
              "(4M)-th slot (about N/4 work per slot, whatever M)"),
        Param("budget", str, "none", "po2: ignore p and set p̂ so that the expected messages "
              "per slot equal Po-2's (budget_unit), capped at p̂ = 1", choices=BUDGETS),
        Param("budget_unit", str, "dispatch", "Po-2's budget: dispatch = 4 per dispatch event "
              "(what Po-2 spends in batch mode, ≈ 1.3 per job in Fig. 1), arrival = 4 per "
              "job, as [LED] §5 states", choices=BUDGET_UNITS, only_with=("budget", ("po2",))),
    )
    diagnostics = ("estimation_error",)

    def __init__(self, strategy: Any = "jsq", strategy_params: Any = (), **params: Any) -> None:
        if isinstance(strategy, str):
            self._custom: Strategy | None = None
            super().__init__(strategy=strategy, **params)
        else:
            self._custom = custom_strategy(strategy, strategy_params)
            super().__init__(**params)
            self.params["strategy"] = self._custom.name

    def constructor_params(self) -> dict[str, Any]:
        params = super().constructor_params()
        if self._custom is not None:  # rebuild with the compiled rule, not its display name
            params.update(strategy=self._custom, strategy_params=self._custom.params)
        return params

    def validate_params(self) -> None:
        require(not (self.params["update"] == "pull" and self.params["trigger"] != "slot"),
                f"{self.name}.trigger", "the arrival trigger applies to push updates only "
                "(pull reports are per server and slot)")

    @property
    def dispatching_strategy(self) -> Strategy:
        """The :class:`Strategy` this policy dispatches with."""
        if self._custom is not None:
            return self._custom
        return builtin_strategy(self.params["strategy"], pod_d=self.params["pod_d"],
                                jba_average=self.params["jba_average"])

    def check_system(self, system: System) -> None:
        n = system.n_servers
        if self.params["update"] == "push":
            require(self.params["d"] <= n, f"{self.name}.d",
                    f"d must be between 1 and N = {n} (got {self.params['d']})")
        if self.params["strategy"] == "pod":
            require(self.params["pod_d"] <= n, f"{self.name}.pod_d",
                    f"pod_d must be between 1 and N = {n} (got {self.params['pod_d']})")

    def update_probability(self, system: System) -> float:
        """p of Eq. (5): a lower bound of P(I^m_n(t) = 1 | Z(t)) (see theory.updates)."""
        return update_probability(self.params["update"], self.effective_p(system),
                                  d=self.params["d"], system=system,
                                  trigger=self.params["trigger"])

    def effective_p(self, system: System) -> float:
        """p̂ used on ``system``: the parameter ``p``, or the Po-2-matched value."""
        if self.params["budget"] == "po2":
            return po2_matched_p(self.params["update"], self.params["d"],
                                 self.params["trigger"], system, self.params["budget_unit"])
        return float(self.params["p"])

    def kernel(self, system: System) -> Kernel:
        self.check_system(system)
        n, m = system.n_servers, system.dispatchers
        strategy = self.dispatching_strategy
        ip = np.zeros(IP_SIZE, np.int64)
        ip[IP_DISPATCHERS] = m
        ip[IP_SERVERS] = n
        ip[IP_INCREMENT] = int(self.params["increment"])
        ip[IP_UPDATE] = UPDATE_PUSH if self.params["update"] == "push" else UPDATE_PULL
        ip[IP_TRIGGER] = TRIGGER_ARRIVAL if self.params["trigger"] == "arrival" else TRIGGER_SLOT
        ip[IP_PUSH_D] = self.params["d"]
        ip[IP_MEASURE_ERROR] = (ERROR_STRIDE_PER_DISPATCHER * m if self.params["measure_error"]
                                else 0)
        ip[IP_STRATEGY] = strategy.code
        ip[IP_LEARN] = int(self.params["learn_on_send"])
        # the kernel's int64 state and the copy each run makes of it (Kernel.memory)
        require_memory("dispatchers", 2 * 8 * (m + EXTRA_ROWS) * n,
                       f"LED's estimates Q̃^m_n for M = {m} dispatchers × N = {n} servers")
        p = self.effective_p(system)
        fp = np.zeros(FP_SIZE)
        fp[0] = p
        fp[1] = math.log1p(-p) if p < 1.0 else -math.inf
        # Q̃^m(0) = 0 = Q(0); learn_on_send adds M rows of learnt slots, the index rows
        # follow them (layout.estimate_index): L-JSQ / LSQ one incremental-minimum row per
        # dispatcher, L-JBA with the plain average the sums Σ_n Q̃^m_n (0 at the start)
        learn_rows = m if self.params["learn_on_send"] else 0
        index, index_rows = INDEX_NONE, 0
        pull = self.params["update"] == "pull"
        if strategy.code == CODE_JSQ and pull and uses_blocks(n, n):
            # p̂·N/M random writes per row and choice: per-block minima (see min_blocks)
            index, index_rows = INDEX_BLOCKS, m
        elif strategy.code == CODE_JSQ and uses_tree(n, n):
            index, index_rows = INDEX_TREE, m
        elif strategy.code == CODE_JBA and self.params["jba_average"] == "plain":
            index, index_rows = INDEX_SUM, -(-m // n)
            fp = np.concatenate([fp, alias_table(system.mu)])
        ip[IP_INDEX] = index
        index_start = m + EXTRA_ROWS + learn_rows
        state = np.zeros((index_start + index_rows, n), np.int64)
        state[m + EXTRA_ROWS:index_start, :] = -1  # learn_on_send: no slot learnt yet
        state[m + PULL_POSITION_ROW, 0] = -1  # the positions: drawn at the first update
        state[m + PUSH_POSITION_ROW, 0] = -1
        if index == INDEX_BLOCKS:
            state[index_start:] = new_block_rows(n, m, n)
        elif index == INDEX_TREE:
            state[index_start:] = new_tree_rows(n, m, n)
        choose = choose_for(strategy, index, pod_d=self.params["pod_d"], n_servers=n,
                            n_dispatchers=m, writes=bool(self.params["increment"]
                                                         or self.params["learn_on_send"]))
        end_slot = push_end_slot if self.params["update"] == "push" else pull_end_slot
        return Kernel(choose, end_slot=end_slot, int_params=ip, float_params=fp,
                      int_state=state, float_state=strategy.param_array[None, :].copy(),
                      n_diagnostics=len(self.diagnostics) + 1)  # + the error's sample count

    def summarize(self, diag: np.ndarray, measured_slots: int, system: System) -> dict[str, float]:
        """``estimation_error``: the mean of (1/MN) Σ |Q_n − Q̃^m_n| over the sampled slots."""
        if not self.params["measure_error"] or diag[DIAG_ERROR_SAMPLES] == 0:
            return {"estimation_error": math.nan}
        return {"estimation_error": float(diag[DIAG_ESTIMATION_ERROR] / diag[DIAG_ERROR_SAMPLES])}

    def __eq__(self, other: object) -> bool:
        return (super().__eq__(other) and isinstance(other, LEDPolicy)
                and self._custom == other._custom)

    def __hash__(self) -> int:
        return super().__hash__()


_COMBINATIONS = {
    ("jsq", "push"): "L-JSQ-Push: smallest local estimate; push updates (heterogeneous OK).",
    ("jsq", "pull"): "L-JSQ-Pull: smallest local estimate; pull updates (heterogeneous OK).",
    ("jba", "push"): "L-JBA-Push: μ-weighted choice below the local average; push updates.",
    ("jba", "pull"): "L-JBA-Pull: μ-weighted choice below the local average; pull updates.",
    ("pod", "push"): "L-Pod-Push: best of pod_d sampled local estimates; push (homogeneous).",
    ("pod", "pull"): "L-Pod-Pull: best of pod_d sampled local estimates; pull (homogeneous).",
}
for (_strategy, _update), _summary in _COMBINATIONS.items():
    register_preset(f"l-{_strategy}-{_update}", LEDPolicy, _summary, strategy=_strategy,
                    update=_update)
register_preset(
    "lsq", LEDPolicy,
    "LSQ [LSQ]: L-JSQ with the estimate incremented by the jobs sent; push updates by default; "
    "learn_on_send=true: the destination answers with its queue (the group's simulator).",
    "Heavy-traffic delay optimal as an LED policy ([LED] corollary); stable when the "
    "estimation error stays bounded [LSQ].", strategy="jsq", increment=True)
