"""The system: N servers, M dispatchers and the arrival process (docs/model.md#slotted-model)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dispatchlab.core.errors import refuse_unknown, require
from dispatchlab.model.arrivals import ArrivalProcess, arrival_process
from dispatchlab.model.service import ServiceLaw, format_rates, parse_rates
from dispatchlab.model.size_limits import (
    MAX_DISPATCHERS,
    MAX_SERVERS,
    check_arrival_rate,
    check_rates,
    check_weights,
)
from dispatchlab.model.values import as_flag, as_int, as_number, as_numbers, as_text

SPLITS = ("per_job", "batch")
DISPATCH_MODES = ("batch", "per_job")
#: how every caller is told to accept an overloaded system: the same name in the API
#: (``allow_unstable=True``), the CLI (``--allow-unstable``) and TOML (``allow_unstable``)
ALLOW_UNSTABLE_HINT = ("set allow_unstable to simulate it anyway (--allow-unstable on the "
                       "command line, allow_unstable = true in a spec file)")


@dataclass(frozen=True)
class System:
    """A validated, immutable discrete-time parallel-server system.

    Attributes:
        rates: μ_n, the mean service per slot of each server (length N).
        arrivals: the total arrival process A_Σ(t) with mean λ_Σ.
        service: the law of S_n(t).
        dispatchers: M, the number of dispatchers.
        dispatcher_weights: p_m, the probability that a job reaches dispatcher m
            (uniform when empty).
        split: how A_Σ(t) is shared among dispatchers: ``per_job`` (each job picks
            its dispatcher independently: a multinomial split, the default) or
            ``batch`` (the whole slot's arrivals go to one dispatcher drawn from p).
        dispatch: ``batch`` (all of a dispatcher's jobs in a slot go to one server,
            the papers' model) or ``per_job`` (each job is dispatched on its own).
        allow_unstable: accept λ_Σ ≥ μ_Σ (a system that cannot be stable).
    """

    rates: tuple[float, ...]
    arrivals: ArrivalProcess
    service: ServiceLaw = field(default_factory=ServiceLaw)
    dispatchers: int = 1
    dispatcher_weights: tuple[float, ...] = ()
    split: str = "per_job"
    dispatch: str = "batch"
    allow_unstable: bool = False

    def __post_init__(self) -> None:
        rates = as_numbers(self.rates, "servers")
        require(rates.size >= 1, "servers", "at least one server is needed")
        require(rates.size <= MAX_SERVERS, "servers",
                f"at most {MAX_SERVERS:,} servers (got {rates.size:,})")
        check_rates(rates)
        require(isinstance(self.service, ServiceLaw), "service",
                f"expected a ServiceLaw (got {self.service!r})")
        require(isinstance(self.arrivals, ArrivalProcess), "arrivals",
                f"expected an ArrivalProcess (got {self.arrivals!r})")
        self.service.validate_rates(rates)
        as_int(self.dispatchers, "dispatchers", low=1, high=MAX_DISPATCHERS)
        require(self.split in SPLITS, "split", f"allowed: per-job, batch (got {self.split!r})")
        require(self.dispatch in DISPATCH_MODES, "dispatch",
                f"allowed: batch, per-job (got {self.dispatch!r})")
        as_flag(self.allow_unstable, "allow_unstable")
        if not (isinstance(self.dispatcher_weights, tuple | list)
                and len(self.dispatcher_weights) == 0):
            weights = as_numbers(self.dispatcher_weights, "dispatcher_weights")
            require(weights.size == self.dispatchers, "dispatcher_weights",
                    f"need one weight per dispatcher ({self.dispatchers})")
            check_weights(weights)
        if not self.allow_unstable:
            mu_sum = float(rates.sum())
            require(self.arrivals.rate < mu_sum, "load",
                    f"λ_Σ = {self.arrivals.rate:g} ≥ μ_Σ = {mu_sum:g} (load "
                    f"{self.arrivals.rate / mu_sum:.4g} ≥ 1): no policy can keep this system "
                    f"stable; {ALLOW_UNSTABLE_HINT}")

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        servers: str | list[float] | tuple[float, ...] | np.ndarray,
        *,
        load: float | None = None,
        epsilon: float | None = None,
        rate: float | None = None,
        arrivals: str = "poisson",
        service: str | ServiceLaw = "bernoulli",
        dispatchers: int = 1,
        dispatcher_weights: tuple[float, ...] | list[float] = (),
        split: str = "per_job",
        dispatch: str = "batch",
        allow_unstable: bool = False,
        **unknown: Any,
    ) -> System:
        """Build a system with λ_Σ set by ``load`` ρ (λ_Σ = ρ·μ_Σ), by ``epsilon``
        (λ_Σ = μ_Σ − ε), or directly by ``rate``; exactly one of them (none for a trace).

        Every argument is type-checked: a wrong type or an unknown keyword raises
        :class:`ValidationError` naming it, and nothing is converted silently
        (``dispatchers=2.9`` is refused, not truncated).
        """
        refuse_unknown(cls.build, unknown, name="System.build")
        rates = parse_rates(servers)
        require(rates.size <= MAX_SERVERS, "servers",
                f"at most {MAX_SERVERS:,} servers (got {rates.size:,})")
        law = service if isinstance(service, ServiceLaw) else ServiceLaw.parse(service)
        allow_unstable = as_flag(allow_unstable, "allow_unstable")
        dispatchers = as_int(dispatchers, "dispatchers", low=1, high=MAX_DISPATCHERS)
        split = as_text(split, "split").strip().lower().replace("-", "_")
        dispatch = as_text(dispatch, "dispatch").strip().lower().replace("-", "_")
        given = [name for name, value in (("load", load), ("epsilon", epsilon), ("rate", rate))
                 if value is not None]
        require(len(given) <= 1, "load", f"give only one of load, epsilon, rate (got {given})")
        mu_sum = float(rates.sum())
        lam: float | None = None
        if rate is not None:
            lam = as_number(rate, "rate")
            check_arrival_rate(lam, "rate")
        elif load is not None:
            load = as_number(load, "load")
            require(load > 0, "load", f"ρ must be > 0 (got {load:g})")
            require(load < 1 or allow_unstable, "load",
                    f"ρ = {load:g} ≥ 1: no policy can keep this system stable; "
                    + ALLOW_UNSTABLE_HINT)
            check_arrival_rate(load * mu_sum, "load")
            lam = load * mu_sum
        elif epsilon is not None:
            epsilon = as_number(epsilon, "epsilon")
            require(epsilon < mu_sum, "epsilon", f"ε must be < μ_Σ = {mu_sum:g} (got {epsilon:g})")
            require(epsilon > 0 or allow_unstable, "epsilon",
                    f"ε = {epsilon:g} ≤ 0 means λ_Σ ≥ μ_Σ: no policy can keep this system "
                    "stable; " + ALLOW_UNSTABLE_HINT)
            check_arrival_rate(mu_sum - epsilon, "epsilon")
            require(mu_sum - epsilon != mu_sum, "epsilon",
                    f"ε = {epsilon:g} is below the resolution of μ_Σ = {mu_sum:g} (λ_Σ = μ_Σ − ε "
                    f"rounds to μ_Σ); use ε ≥ {mu_sum * np.finfo(float).eps:.3g}")
            lam = mu_sum - epsilon
        process = arrival_process(as_text(arrivals, "arrivals"), lam)
        weights = tuple(as_numbers(dispatcher_weights, "dispatcher_weights").tolist())
        return cls(tuple(float(x) for x in rates), process, law, dispatchers, weights, split,
                   dispatch, allow_unstable)

    def with_rate(self, rate: float) -> System:
        return replace(self, arrivals=self.arrivals.with_rate(as_number(rate, "rate")))

    def with_load(self, load: float) -> System:
        return self.with_rate(as_number(load, "load") * self.mu_sum)

    # -- derived quantities ------------------------------------------------------------------

    @property
    def n_servers(self) -> int:
        """N."""
        return len(self.rates)

    @property
    def mu(self) -> np.ndarray:
        """μ as an array."""
        return np.asarray(self.rates, dtype=float)

    @property
    def mu_sum(self) -> float:
        """μ_Σ = Σ_n μ_n."""
        return float(np.sum(self.rates))

    @property
    def arrival_rate(self) -> float:
        """λ_Σ."""
        return self.arrivals.rate

    @property
    def load(self) -> float:
        """ρ = λ_Σ / μ_Σ."""
        return self.arrival_rate / self.mu_sum

    @property
    def epsilon(self) -> float:
        """ε = μ_Σ − λ_Σ."""
        return self.mu_sum - self.arrival_rate

    @property
    def weights(self) -> np.ndarray:
        """p_m (uniform unless given)."""
        if not len(self.dispatcher_weights):
            return np.full(self.dispatchers, 1.0 / self.dispatchers)
        w = np.asarray(self.dispatcher_weights, dtype=float)
        return w / w.sum()

    @property
    def service_variances(self) -> np.ndarray:
        """ν_n²."""
        return self.service.variance(self.mu)

    def describe(self) -> dict[str, object]:
        """A JSON-ready description (the fields a stored result keeps)."""
        return {
            "servers": format_rates(self.mu),
            "n_servers": self.n_servers,
            "dispatchers": self.dispatchers,
            "arrivals": self.arrivals.describe(),
            "arrival_rate": self.arrival_rate,
            "service": self.service.describe(),
            "split": self.split,
            "dispatch": self.dispatch,
            "load": self.load,
            "epsilon": self.epsilon,
        }

    def __repr__(self) -> str:
        from dispatchlab.model.display import system_line

        return system_line(self)

    def _repr_html_(self) -> str:
        from dispatchlab.model.display import system_html

        return system_html(self)
