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
from numba import njit

from dispatchlab.compiled.argmin import shorter_of_two
from dispatchlab.core.errors import require
from dispatchlab.core.ram import require_memory
from dispatchlab.engine.alias import alias_table
from dispatchlab.engine.interface import ANSWER, choose_function
from dispatchlab.model.system import System
from dispatchlab.policies.base import Kernel, Param, Policy, register, register_preset
from dispatchlab.policies.led.ahead import tree_choice
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
    dispatchers,
    estimate_index,
    estimates,
    increments,
    index_kind,
    learns_on_send,
    learnt_slots,
    prefetch_next_index,
    rate_alias_table,
    strategy_code,
    strategy_params,
    strategy_scratch_row,
    write_estimate,
)
from dispatchlab.policies.led.min_blocks import block_argmin, new_block_rows, uses_blocks
from dispatchlab.policies.led.min_tree import (
    new_tree_rows,
    tree_min,
    uses_tree,
    write_through,
)
from dispatchlab.policies.led.strategies import (
    CODE_JBA,
    CODE_JSQ,
    CODE_POD,
    JBA_AVERAGES,
    JBA_WEIGHTED,
    STRATEGY_NAMES,
    Strategy,
    builtin_strategy,
    custom_strategy,
    l_jba_pick,
    l_jba_pick_by_sum,
    l_jsq_pick,
    l_pod_pick,
    prefetch_next_jba_draws,
    prefetch_next_pod_pairs,
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


#: ``current`` of :func:`estimate_after_send` when the caller has not read Q̃^m_target
#: (estimates are never negative)
UNREAD = -1


@njit(inline="always", cache=True)
def _estimate(m, target, current, memory):
    """Q̃^m_target: ``current``, or read when UNREAD."""
    return estimates(memory, m)[target] if current == UNREAD else current


@njit(inline="always", cache=True)
def estimate_after_send(m, target, jobs, current, slot, memory, ctx):
    """Q̃^m_target after the ``jobs`` just sent to ``target``, or −1 when it is left alone.
    ``current`` is Q̃^m_target before the send when the caller has it at hand (a min
    tree's min), else UNREAD: only the options that need it read it (an unconditional
    read cost ~5 ns a choice on L-Pod, measured).

    learn_on_send (the LSQ of the group's simulator): the destination answers with its
    queue length Q_target(t) (1 message, kind ``answer``, once per dispatcher, destination
    and slot) and the estimate becomes Q_target(t) + the jobs m has sent there this slot.
    increment (LSQ of [LSQ]): Q̃^m_target += jobs (per-job mode: water-filling one job at a
    time). Otherwise the estimate is left alone. The caller writes the value through
    write_estimate (or the min tree's write_through), so that the strategy's index stays
    current.
    """
    if learns_on_send(memory):
        learnt = learnt_slots(memory, m)
        if learnt[target] != slot.t:
            learnt[target] = slot.t
            ctx.msg[ANSWER] += 1
            return slot.Q[target] + jobs
        return _estimate(m, target, current, memory) + jobs
    if increments(memory):
        return _estimate(m, target, current, memory) + jobs
    return np.int64(-1)


@choose_function
def _builtin_choose(m, jobs, slot, memory, ctx):
    prefetch_next_index(memory, m)
    own = estimates(memory, m)
    code = strategy_code(memory)
    kind = index_kind(memory)
    if code == CODE_JSQ and kind == INDEX_TREE:
        # the incremental minimum: its walk does not read the estimates, and the chosen
        # one is the tree's min (reading it would be a cache miss with M trees); the tree
        # is updated at once, while the path just walked is in cache
        index = estimate_index(memory, m)
        writes = increments(memory) or learns_on_send(memory)
        target = tree_choice(m, jobs, slot.t, memory, ctx.rng, writes)
        current = tree_min(index)
        value = estimate_after_send(m, target, jobs, current, slot, memory, ctx)
        if value >= 0:
            write_through(own, index, target, current, value)
        return target
    target = _scan_choice(own, code, kind, m, jobs, slot, memory, ctx)
    value = estimate_after_send(m, target, jobs, UNREAD, slot, memory, ctx)
    if value >= 0:
        write_estimate(own, estimate_index(memory, m), kind, target, value)
    return target


#: the fewest estimates (M·N, int64) for which a choice looks ahead to the next
#: dispatchers' (2¹⁶: 512 KB, this AMD EPYC's L2 per core)
LOOKAHEAD_MIN_ESTIMATES = 1 << 16


@njit(inline="always", cache=True)
def _looks_ahead(jobs, memory, own):
    """Whether a choice of ``jobs`` jobs on Q̃^m = ``own`` prefetches what the next
    dispatchers' choices will read: several jobs (batch mode), several dispatchers and M·N ≥
    :data:`LOOKAHEAD_MIN_ESTIMATES` (see :func:`_scan_choice`)."""
    M = dispatchers(memory)
    return jobs > 1 and M > 1 and M * own.size >= LOOKAHEAD_MIN_ESTIMATES


@njit(inline="always", cache=True)
def _scan_choice(own, code, kind, m, jobs, slot, memory, ctx):
    """The built-in strategies' choice other than L-JSQ's on a min tree. A choice of
    several jobs (batch mode) prefetches what the next dispatchers' choices will read
    (L-JBA, L-Pod) when the M rows of estimates are too large for the caches
    (:data:`LOOKAHEAD_MIN_ESTIMATES`): in per-job mode (one job a call) the next call is
    usually m's own, and rows that stay in cache gain nothing from it (led-pod-push of
    the bench, M·N = 1000: ×0.85 with it, paired)."""
    M = dispatchers(memory)
    lookahead = _looks_ahead(jobs, memory, own)
    if code == CODE_JSQ:
        # the block minima when the kernel built them; the scan otherwise (same draw)
        if kind == INDEX_BLOCKS:
            target = block_argmin(own, estimate_index(memory, m), ctx.rng)
        else:
            target = l_jsq_pick(own, ctx.rng)
    elif code == CODE_JBA:
        if kind == INDEX_SUM:
            # the plain average from the kept sum, alias draws ∝ μ (same law as the scan)
            target = l_jba_pick_by_sum(own, estimate_index(memory, m)[0], slot.mu,
                                       rate_alias_table(memory), ctx.rng)
            if lookahead:
                prefetch_next_jba_draws(memory.ist, m, M, ctx.rng,
                                        rate_alias_table(memory))
        else:
            target = l_jba_pick(own, slot.mu, ctx.rng,
                                strategy_params(memory)[0] == JBA_WEIGHTED)
    else:
        target = _pod_choice(own, m, jobs, memory, ctx)
    return target


@njit(inline="always", cache=True)
def _pod_choice(own, m, jobs, memory, ctx):
    """L-Pod's choice of a server for ``jobs`` jobs on Q̃^m = ``own``; with d = 2 it may
    prefetch the next dispatchers' comparisons (:func:`_looks_ahead`)."""
    d = np.int64(strategy_params(memory)[0])
    target = l_pod_pick(own, ctx.rng, d, memory.ist, strategy_scratch_row(memory))
    if d == 2 and _looks_ahead(jobs, memory, own):
        prefetch_next_pod_pairs(memory.ist, m, dispatchers(memory), ctx.rng)
    return target


@choose_function
def _tree_choose(m, jobs, slot, memory, ctx):
    """L-JSQ on its min tree (push updates), without the LSQ options: the walk alone
    (:func:`_builtin_choose`'s tree branch without its tests and the write at dispatch)."""
    return tree_choice(m, jobs, slot.t, memory, ctx.rng, False)


@choose_function
def _blocks_choose(m, jobs, slot, memory, ctx):
    """L-JSQ on block minima (pull updates), without the LSQ options: :func:`_builtin_choose`'s
    choice without its tests of the strategy, the index and the options (a smaller
    adapter, whose loop over the dispatchers the compiler keeps in registers)."""
    prefetch_next_index(memory, m)
    return block_argmin(estimates(memory, m), estimate_index(memory, m), ctx.rng)


@choose_function
def _pod2_choose(m, jobs, slot, memory, ctx):
    """L-Pod with d = 2, without the LSQ options, on M rows of estimates that stay in cache
    (M·N below :data:`LOOKAHEAD_MIN_ESTIMATES`: no look-ahead): :func:`_pod_choose`'s
    choice with nothing read but the two estimates and the random state (the bench's
    led-pod-push: a choice is made ~9.4 times a slot)."""
    return shorter_of_two(estimates(memory, m), ctx.rng)


@choose_function
def _pod_choose(m, jobs, slot, memory, ctx):
    """L-Pod without the LSQ options (no write at dispatch): :func:`_builtin_choose`'s
    choice without its tests of the strategy, the index and the options, which cost
    about a tenth of a choice at M = 10, N = 100 (bench workload led-pod-push)."""
    return _pod_choice(estimates(memory, m), m, jobs, memory, ctx)


_CUSTOM_CHOOSE_CACHE: dict[Any, Any] = {}


def custom_choose(strategy_fn: Any) -> Any:
    """A ``choose`` that runs a user strategy (compiled once per process and strategy)."""
    if strategy_fn in _CUSTOM_CHOOSE_CACHE:
        return _CUSTOM_CHOOSE_CACHE[strategy_fn]

    def choose(m, jobs, slot, memory, ctx):
        own = estimates(memory, m)
        target = strategy_fn(own, slot.mu, ctx.rng, strategy_params(memory),
                             memory.ist[strategy_scratch_row(memory)])
        value = estimate_after_send(m, target, jobs, UNREAD, slot, memory, ctx)
        if value >= 0:
            # (write_estimate, not the built-in's write-through: a user rule walks no
            # tree, and inlining the tree update tripled its compile time)
            write_estimate(own, estimate_index(memory, m), index_kind(memory), target, value)
        return target

    # a closure over a user function: numba cannot reuse an on-disk cache for it; the
    # user's rule may allocate
    compiled = choose_function(choose, cache=False, allocates=True)
    _CUSTOM_CHOOSE_CACHE[strategy_fn] = compiled
    return compiled


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
        choose = self._choose(strategy, index, n, m)
        end_slot = push_end_slot if self.params["update"] == "push" else pull_end_slot
        return Kernel(choose, end_slot=end_slot, int_params=ip, float_params=fp,
                      int_state=state, float_state=strategy.param_array[None, :].copy(),
                      n_diagnostics=len(self.diagnostics) + 1)  # + the error's sample count

    def _choose(self, strategy: Strategy, index: int, n: int, m: int) -> Any:
        """The compiled ``choose`` for this configuration: a user rule's, one specialised to
        the built-in strategy and index when no LSQ option writes at dispatch, else the
        general one."""
        if not strategy.builtin:
            return custom_choose(strategy.function)
        if self.params["increment"] or self.params["learn_on_send"]:
            return _builtin_choose
        if strategy.code == CODE_POD:
            pair = self.params["pod_d"] == 2 and n > 2  # (d ≥ N: every server, a scan)
            in_cache = m * n < LOOKAHEAD_MIN_ESTIMATES
            return _pod2_choose if pair and in_cache else _pod_choose
        if strategy.code == CODE_JSQ and index == INDEX_BLOCKS:
            return _blocks_choose
        if strategy.code == CODE_JSQ and index == INDEX_TREE:
            return _tree_choose
        return _builtin_choose

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
