"""The system: N servers, M dispatchers and the arrival process (THEORY.md §1)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from dispatchlab.errors import require
from dispatchlab.model.arrivals import ArrivalProcess, arrival_process
from dispatchlab.model.service import ServiceLaw, format_rates, parse_rates

SPLITS = ("per_job", "batch")
MAX_SERVERS = 1_000_000  # N: memory stays in the hundreds of MB
MAX_DISPATCHERS = 100_000  # M
DISPATCH_MODES = ("batch", "per_job")


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
        allow_overload: accept λ_Σ ≥ μ_Σ (a system that cannot be stable).
    """

    rates: tuple[float, ...]
    arrivals: ArrivalProcess
    service: ServiceLaw = field(default_factory=ServiceLaw)
    dispatchers: int = 1
    dispatcher_weights: tuple[float, ...] = ()
    split: str = "per_job"
    dispatch: str = "batch"
    allow_overload: bool = False

    def __post_init__(self) -> None:
        rates = np.asarray(self.rates, dtype=float)
        require(rates.size >= 1, "servers", "at least one server is needed")
        self.service.validate_rates(rates)
        require(rates.size <= MAX_SERVERS, "servers",
                f"at most {MAX_SERVERS:,} servers (got {rates.size:,})")
        require(isinstance(self.dispatchers, int | np.integer)
                and 1 <= self.dispatchers <= MAX_DISPATCHERS, "dispatchers",
                f"M must be an integer in [1, {MAX_DISPATCHERS:,}] (got {self.dispatchers!r})")
        require(self.split in SPLITS, "split", f"allowed: {', '.join(SPLITS)}")
        require(self.dispatch in DISPATCH_MODES, "dispatch",
                f"allowed: batch, per-job (got {self.dispatch!r})")
        if self.dispatcher_weights:
            weights = np.asarray(self.dispatcher_weights, dtype=float)
            require(weights.size == self.dispatchers, "dispatcher_weights",
                    f"need one weight per dispatcher ({self.dispatchers})")
            require(bool(np.all(weights >= 0)) and weights.sum() > 0, "dispatcher_weights",
                    "weights must be ≥ 0 and not all zero")
        if not self.allow_overload:
            mu_sum = float(rates.sum())
            require(self.arrivals.rate < mu_sum, "load",
                    f"λ_Σ = {self.arrivals.rate:g} ≥ μ_Σ = {mu_sum:g} (load "
                    f"{self.arrivals.rate / mu_sum:.4g} ≥ 1): no policy can keep this system "
                    "stable; pass --allow-unstable to simulate it anyway")

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
        dispatcher_weights: tuple[float, ...] = (),
        split: str = "per_job",
        dispatch: str = "batch",
        allow_overload: bool = False,
    ) -> System:
        """Build a system with λ_Σ set by ``load`` ρ (λ_Σ = ρ·μ_Σ), by ``epsilon``
        (λ_Σ = μ_Σ − ε), or directly by ``rate``; exactly one of them (none for a trace)."""
        rates = parse_rates(servers)
        law = service if isinstance(service, ServiceLaw) else ServiceLaw.parse(service)
        given = [name for name, value in (("load", load), ("epsilon", epsilon), ("rate", rate))
                 if value is not None]
        require(len(given) <= 1, "load", f"give only one of load, epsilon, rate (got {given})")
        mu_sum = float(rates.sum())
        lam: float | None = rate
        if load is not None:
            require(np.isfinite(load) and load > 0, "load", f"ρ must be > 0 (got {load:g})")
            require(load < 1 or allow_overload, "load",
                    f"ρ = {load:g} ≥ 1: no policy can keep this system stable; "
                    "pass --allow-unstable to simulate it anyway")
            lam = load * mu_sum
        elif epsilon is not None:
            require(bool(np.isfinite(epsilon)), "epsilon", f"ε must be a number (got {epsilon})")
            require(epsilon < mu_sum, "epsilon", f"ε must be < μ_Σ = {mu_sum:g} (got {epsilon:g})")
            require(epsilon > 0 or allow_overload, "epsilon",
                    f"ε = {epsilon:g} ≤ 0 means λ_Σ ≥ μ_Σ: no policy can keep this system "
                    "stable; pass --allow-unstable to simulate it anyway")
            lam = mu_sum - epsilon
        process = arrival_process(arrivals, lam)
        return cls(tuple(float(x) for x in rates), process, law, int(dispatchers),
                   tuple(dispatcher_weights), split.replace("-", "_"), dispatch.replace("-", "_"),
                   allow_overload)

    def with_rate(self, rate: float) -> System:
        return replace(self, arrivals=self.arrivals.with_rate(rate))

    def with_load(self, load: float) -> System:
        return self.with_rate(load * self.mu_sum)

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
        if not self.dispatcher_weights:
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
        from dispatchlab.display import system_line

        return system_line(self)

    def _repr_html_(self) -> str:
        from dispatchlab.display import system_html

        return system_html(self)
