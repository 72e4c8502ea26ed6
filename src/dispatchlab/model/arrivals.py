"""The total arrival process A_Σ(t) (docs/model.md#arrivals)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.core.paths import guarded_io, require_readable_file
from dispatchlab.model.size_limits import MAX_JOBS_PER_SLOT, check_arrival_rate, check_trace_counts
from dispatchlab.model.values import as_int, as_text

# the law's code in the compiled slot loop, by name (the loop compares with the constants)
ARRIVAL_POISSON, ARRIVAL_BERNOULLI, ARRIVAL_BINOMIAL, ARRIVAL_DETERMINISTIC = 0, 1, 2, 3
ARRIVAL_TRACE = 4
ARRIVAL_CODES = {"poisson": ARRIVAL_POISSON, "bernoulli": ARRIVAL_BERNOULLI,
                 "binomial": ARRIVAL_BINOMIAL, "deterministic": ARRIVAL_DETERMINISTIC,
                 "trace": ARRIVAL_TRACE}
ARRIVAL_LAWS = tuple(ARRIVAL_CODES)


@dataclass(frozen=True)
class ArrivalProcess:
    """A_Σ(t), i.i.d. across slots with mean λ_Σ (``rate``) and variance σ_Σ².

    ``poisson``: Poisson(λ_Σ). ``bernoulli``: Bernoulli(λ_Σ), λ_Σ ≤ 1.
    ``binomial``: Binomial(K, λ_Σ/K), bounded by K. ``deterministic``: λ_Σ ∈ ℕ jobs
    every slot. ``trace``: per-slot counts replayed from a file, cyclically; its rate
    is the trace's mean.
    """

    law: str
    rate: float
    trials: int = 0
    trace_path: str = ""
    trace: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        require(as_text(self.law, "arrivals") in ARRIVAL_LAWS, "arrivals",
                f"unknown law {self.law!r}; allowed: " + ", ".join(ARRIVAL_LAWS))
        as_int(self.trials, "arrivals", low=0)
        check_arrival_rate(self.rate)
        if self.law == "bernoulli":
            require(self.rate <= 1, "arrivals",
                    f"Bernoulli arrivals need λ_Σ ≤ 1 (got {self.rate:g}); "
                    "use poisson or binomial:K")
        elif self.law == "binomial":
            require(self.trials >= 1, "arrivals", "binomial needs K ≥ 1 trials (binomial:K)")
            require(self.rate <= self.trials, "arrivals",
                    f"binomial:{self.trials} arrivals need λ_Σ ≤ K (got {self.rate:g})")
        elif self.law == "deterministic":
            require(float(self.rate).is_integer(), "arrivals",
                    f"deterministic arrivals need an integer λ_Σ (got {self.rate:g})")
        elif self.law == "trace":
            require(self.trace is not None and self.trace.size > 0, "arrivals", "empty trace")

    @property
    def code(self) -> int:
        """The law's code in the compiled slot loop (``ARRIVAL_CODES``)."""
        return ARRIVAL_CODES[self.law]

    @property
    def variance(self) -> float:
        """σ_Σ² = Var A_Σ."""
        lam = self.rate
        if self.law == "poisson":
            return lam
        if self.law == "bernoulli":
            return lam * (1.0 - lam)
        if self.law == "binomial":
            return lam * (1.0 - lam / self.trials)
        if self.law == "deterministic":
            return 0.0
        assert self.trace is not None
        return float(np.var(self.trace))

    @property
    def max_arrivals(self) -> float:
        """A_max (∞ for Poisson)."""
        if self.law == "trace":
            assert self.trace is not None
            return float(self.trace.max())
        return {"poisson": np.inf, "bernoulli": 1.0, "binomial": float(self.trials),
                "deterministic": self.rate}[self.law]

    def describe(self) -> str:
        if self.law == "binomial":
            return f"binomial:{self.trials}"
        if self.law == "trace":
            return f"trace:{self.trace_path}"
        return self.law

    def with_rate(self, rate: float) -> ArrivalProcess:
        """The same law at another mean rate λ_Σ (not possible for a trace)."""
        require(self.law != "trace", "load", "a trace fixes its own rate; do not pass --load")
        return ArrivalProcess(self.law, rate, self.trials)


def load_trace(path: str | Path) -> np.ndarray:
    """Read per-slot arrival counts from a ``.npy`` file or a CSV/text file of integers."""
    path = require_readable_file(path, "arrivals", "trace file")

    def read() -> np.ndarray:
        with warnings.catch_warnings():  # an empty file: our own message below
            warnings.simplefilter("ignore")
            if path.suffix == ".npy":
                array = np.load(path, allow_pickle=False)
                require(array.dtype.kind in "iuf", "arrivals",  # complex, bool: not counts
                        f"trace {str(path)!r} holds {array.dtype} values; a trace is per-slot "
                        "counts: integers (or integral floats)")
                return np.asarray(array, dtype=float)
            # UTF-8 with or without a byte-order mark (a CSV saved by Excel has one), as
            # spec files are read
            return np.loadtxt(path, delimiter=",", ndmin=1, dtype=float,
                              encoding="utf-8-sig")

    try:
        raw = guarded_io("arrivals", path, read, verb="read")
    except ValidationError:
        raise
    except (ValueError, TypeError, EOFError) as error:
        raise ValidationError("arrivals", _unreadable_trace(path, error)) from None
    require(raw.ndim == 1 or (raw.ndim == 2 and 1 in raw.shape), "arrivals",
            f"trace {str(path)!r} must be one column of per-slot counts (shape {raw.shape})")
    raw = raw.ravel()
    require(raw.size > 0, "arrivals", f"trace {str(path)!r} is empty")
    require(bool(np.all(np.isfinite(raw))), "arrivals", "trace counts must be finite")
    require(bool(np.all(raw >= 0)), "arrivals",
            f"trace counts must be non-negative integers (found {raw.min():g})")
    require(bool(np.all(raw == np.round(raw))), "arrivals",
            "trace counts must be non-negative integers (found a non-integer count)")
    check_trace_counts(raw)
    return raw.astype(np.int64)


def _unreadable_trace(path: Path, error: Exception) -> str:
    """Why a trace could not be read, *without* any of its content: the reader's message
    quotes what it could not convert, and the path may name any readable file (a trace
    error must never print a line of /etc/shadow). Only the position is kept."""
    where = re.search(r"at row (\d+), column (\d+)", str(error))
    if path.suffix == ".npy":
        return (f"trace {str(path)!r} is not a .npy array of numbers (numpy.save of one "
                "column of per-slot counts)")
    at = f" (line {int(where[1]) + 1}, column {where[2]})" if where else ""
    return (f"trace {str(path)!r} is not numeric{at}: expected one per-slot arrival count "
            "per line (integers, or comma-separated)")


def parse_arrival_law(text: str) -> tuple[str, int, str]:
    """Split ``poisson`` / ``binomial:K`` / ``trace:PATH`` into (law, K, path)."""
    name, _, arg = as_text(text, "arrivals").strip().partition(":")
    name = name.lower()
    require(name in ARRIVAL_LAWS, "arrivals",
            f"unknown law {name!r}; allowed: poisson, bernoulli, binomial:K, deterministic, "
            "trace:PATH")
    if name == "binomial":
        try:
            trials = int(arg)
        except ValueError:
            raise ValidationError("arrivals", "binomial needs an integer K: binomial:K") from None
        require(1 <= trials <= MAX_JOBS_PER_SLOT, "arrivals",
                f"binomial needs 1 ≤ K ≤ {MAX_JOBS_PER_SLOT:,} (got {trials:,})")
        return name, trials, ""
    if name == "trace":
        require(bool(arg), "arrivals", "trace needs a file: trace:PATH")
        return name, 0, arg
    require(not arg, "arrivals", f"law {name!r} takes no parameter")
    return name, 0, ""


def arrival_process(text: str, rate: float | None) -> ArrivalProcess:
    """Build the arrival process named by ``text`` at mean rate λ_Σ = ``rate``."""
    law, trials, path = parse_arrival_law(text)
    if law == "trace":
        counts = load_trace(path)
        require(counts.mean() > 0, "arrivals", "the trace has no arrivals at all")
        return ArrivalProcess("trace", float(counts.mean()), 0, path, counts)
    require(rate is not None, "load", "give load=ρ or epsilon=ε to set the arrival rate "
            "(on the command line: --load or --epsilon)")
    assert rate is not None
    if law == "deterministic" and abs(rate - round(rate)) < 1e-9:
        rate = round(rate)  # ρ·μ_Σ may miss an integer by a rounding error
    return ArrivalProcess(law, float(rate), trials)
