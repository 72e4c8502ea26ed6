"""Service laws S_n(t) per server and the parsing of heterogeneous rate lists
(docs/model.md#service)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.size_limits import MAX_JOBS_PER_SLOT, MAX_SERVERS, check_rates
from dispatchlab.model.values import as_int, as_numbers, as_text

# the law's code in the compiled slot loop, by name (the loop compares with the constants)
SERVICE_BERNOULLI, SERVICE_BINOMIAL, SERVICE_POISSON, SERVICE_GEOMETRIC = 0, 1, 2, 3
SERVICE_DETERMINISTIC = 4
SERVICE_CODES = {"bernoulli": SERVICE_BERNOULLI, "binomial": SERVICE_BINOMIAL,
                 "poisson": SERVICE_POISSON, "geometric": SERVICE_GEOMETRIC,
                 "deterministic": SERVICE_DETERMINISTIC}
SERVICE_LAWS = tuple(SERVICE_CODES)


@dataclass(frozen=True)
class ServiceLaw:
    """The law of S_n(t), the service offered by server n in a slot, with mean μ_n.

    ``bernoulli``: Bernoulli(μ_n), μ_n ≤ 1. ``binomial``: Binomial(K, μ_n/K), μ_n ≤ K.
    ``poisson``: Poisson(μ_n). ``geometric``: geometric on {0, 1, …} with mean μ_n.
    ``deterministic``: exactly μ_n ∈ ℕ every slot.
    """

    kind: str = "bernoulli"
    trials: int = 0  # K, for the binomial law

    def __post_init__(self) -> None:
        as_text(self.kind, "service")
        as_int(self.trials, "service", low=0)
        require(
            self.kind in SERVICE_LAWS, "service", f"unknown law {self.kind!r}; allowed: "
            + ", ".join(SERVICE_LAWS),
        )
        if self.kind == "binomial":
            require(self.trials >= 1, "service", "binomial needs K ≥ 1 trials (binomial:K)")

    @property
    def code(self) -> int:
        """The law's code in the compiled slot loop (``SERVICE_CODES``)."""
        return SERVICE_CODES[self.kind]

    def validate_rates(self, rates: np.ndarray) -> None:
        """Check that every μ_n is admissible for this law."""
        require(bool(np.all(rates > 0)), "servers", "every service rate μ_n must be > 0")
        if self.kind == "bernoulli":
            require(bool(np.all(rates <= 1)), "servers",
                    "Bernoulli service needs every μ_n ≤ 1 (use binomial:K or poisson for more)")
        elif self.kind == "binomial":
            require(bool(np.all(rates <= self.trials)), "servers",
                    f"binomial:{self.trials} service needs every μ_n ≤ K = {self.trials}")
        elif self.kind == "deterministic":
            require(bool(np.all(rates == np.round(rates))), "servers",
                    "deterministic service needs integer rates μ_n ∈ {1, 2, …}")

    def variance(self, rates: np.ndarray) -> np.ndarray:
        """ν_n² = Var S_n for each server."""
        mu = np.asarray(rates, dtype=float)
        if self.kind == "bernoulli":
            return mu * (1.0 - mu)
        if self.kind == "binomial":
            return mu * (1.0 - mu / self.trials)
        if self.kind == "poisson":
            return mu.copy()
        if self.kind == "geometric":
            return mu * (1.0 + mu)
        return np.zeros_like(mu)

    def max_service(self, rates: np.ndarray) -> np.ndarray:
        """S_max,n (∞ for unbounded laws)."""
        mu = np.asarray(rates, dtype=float)
        if self.kind == "bernoulli":
            return np.ones_like(mu)
        if self.kind == "binomial":
            return np.full_like(mu, float(self.trials))
        if self.kind == "deterministic":
            return mu.copy()
        return np.full_like(mu, math.inf)

    def describe(self) -> str:
        return f"binomial:{self.trials}" if self.kind == "binomial" else self.kind

    @classmethod
    def parse(cls, text: str) -> ServiceLaw:
        """``bernoulli``, ``binomial:K``, ``poisson``, ``geometric`` or ``deterministic``."""
        name, _, arg = as_text(text, "service").strip().lower().partition(":")
        if name == "binomial":
            try:
                trials = int(arg)
            except ValueError:
                raise ValidationError(
                    "service", "binomial needs an integer K: binomial:K") from None
            require(1 <= trials <= MAX_JOBS_PER_SLOT, "service",
                    f"binomial needs 1 ≤ K ≤ {MAX_JOBS_PER_SLOT:,} (got {trials:,})")
            return cls("binomial", trials)
        require(not arg, "service", f"law {name!r} takes no parameter")
        return cls(name)


def parse_rates(text: str | list[float] | tuple[float, ...] | np.ndarray) -> np.ndarray:
    """Parse service rates μ: an explicit list, or the compact form ``50x0.1,50x0.5``."""
    if not isinstance(text, str):
        rates = as_numbers(text, "servers")
    else:
        values: list[float] = []
        for part in text.replace(" ", "").split(","):
            require(bool(part), "servers", f"empty entry in {text!r}; use e.g. 50x0.1,50x0.5")
            count_text, sep, rate_text = part.partition("x")
            try:
                count = int(count_text) if sep else 1
                rate = float(rate_text if sep else part)
            except ValueError:
                raise ValidationError(
                    "servers", f"cannot read {part!r}; use a list of rates or COUNTxRATE, "
                    "e.g. 50x0.1,50x0.5") from None
            require(count >= 1, "servers", f"count in {part!r} must be ≥ 1")
            require(len(values) + count <= MAX_SERVERS, "servers",
                    f"at most {MAX_SERVERS:,} servers (got {part!r} after {len(values):,})")
            values.extend([rate] * count)
        rates = np.asarray(values, dtype=float)
    require(rates.size >= 1, "servers", "at least one server is needed")
    check_rates(rates)
    return rates


def format_rates(rates: np.ndarray) -> str:
    """The compact form of a rate vector (inverse of :func:`parse_rates`)."""
    parts: list[str] = []
    i = 0
    while i < len(rates):
        j = i
        while j + 1 < len(rates) and rates[j + 1] == rates[i]:
            j += 1
        count = j - i + 1
        parts.append(f"{count}x{rates[i]:g}" if count > 1 else f"{rates[i]:g}")
        i = j + 1
    return ",".join(parts)
