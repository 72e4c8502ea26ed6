"""The laws of job sizes and interarrival times in continuous time: parsed from text, their
exact moments (for the closed forms), and one compiled draw for all of them.

A law is written ``NAME`` or ``NAME:PARAMETERS``:

========================  ===========================================================
``exp:MEAN``              exponential with the given mean (``exp`` alone: mean 1)
``det:VALUE``             deterministic
``erlang:K,MEAN``         Erlang-K (the sum of K exponentials), squared coefficient of
                          variation C² = 1/K
``hyperexp:MEAN,C2``      two-phase hyperexponential with balanced means (each phase
                          carries half the mean), C² > 1
``bpareto:ALPHA,L,H``     bounded Pareto on [L, H], density ∝ x^(−α−1)
``lognormal:MEAN,C2``     lognormal with the given mean and C²
========================  ===========================================================

A size is the work a job brings: a server of speed s serves it in size/s. An interarrival
law is given by its shape alone (``poisson``, ``det``, ``erlang:K``, ``hyperexp:C2``): its
mean is set by the load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from dispatchlab.compiled.rng import uniform
from dispatchlab.core.errors import ValidationError, require

EXPONENTIAL, DETERMINISTIC, ERLANG, HYPEREXPONENTIAL, BOUNDED_PARETO, LOGNORMAL = range(6)
#: the names users type, with the number of parameters each takes (the size laws')
SIZE_LAWS = {"exp": 1, "det": 1, "erlang": 2, "hyperexp": 2, "bpareto": 3, "lognormal": 2}
#: the interarrival shapes (their mean is set by the arrival rate), with their parameters
ARRIVAL_SHAPES = {"poisson": 0, "det": 0, "erlang": 1, "hyperexp": 1}
_CODES = {"exp": EXPONENTIAL, "poisson": EXPONENTIAL, "det": DETERMINISTIC, "erlang": ERLANG,
          "hyperexp": HYPEREXPONENTIAL, "bpareto": BOUNDED_PARETO, "lognormal": LOGNORMAL}
_USAGE = {"exp": "exp:MEAN", "det": "det:VALUE", "erlang": "erlang:K,MEAN",
          "hyperexp": "hyperexp:MEAN,C2", "bpareto": "bpareto:ALPHA,L,H",
          "lognormal": "lognormal:MEAN,C2"}
#: the largest K of an Erlang law (a draw costs K logarithms)
MAX_ERLANG_PHASES = 1000
#: sizes and times stay within these bounds, so that sums of a billion of them are finite
#: and a slowdown (response / size) never divides by a denormal
LEAST_VALUE, LARGEST_VALUE = 1e-9, 1e12


@dataclass(frozen=True)
class Law:
    """A law of positive values (job sizes X, or interarrival times): its ``code`` and the
    three numbers the compiled draw reads (``a``, ``b``, ``c``: see :func:`draw`), with
    its text as the user wrote it."""

    text: str
    code: int
    a: float
    b: float = 0.0
    c: float = 0.0

    @property
    def mean(self) -> float:
        """E[X]."""
        return self.moment(1)

    @property
    def second_moment(self) -> float:
        """E[X²]."""
        return self.moment(2)

    @property
    def scv(self) -> float:
        """The squared coefficient of variation C² = Var X / E[X]²."""
        return self.second_moment / self.mean**2 - 1.0

    def moment(self, k: int) -> float:
        """E[X^k] for k = 1, 2, 3, in closed form."""
        a, b, c = self.a, self.b, self.c
        if self.code == EXPONENTIAL:  # a: the mean
            return math.factorial(k) * a**k
        if self.code == DETERMINISTIC:
            return a**k
        if self.code == ERLANG:  # a: K, b: the mean; the phase mean θ = b/K
            theta = b / a
            return math.prod(a + i for i in range(k)) * theta**k
        if self.code == HYPEREXPONENTIAL:  # a: p₁, b: mean of phase 1, c: of phase 2
            return math.factorial(k) * (a * b**k + (1 - a) * c**k)
        if self.code == BOUNDED_PARETO:  # a: α, b: L, c: H
            alpha, low, high = a, b, c
            scale = alpha * low**alpha / (1 - (low / high) ** alpha)
            if k == alpha:
                return scale * math.log(high / low)
            return scale * (high ** (k - alpha) - low ** (k - alpha)) / (k - alpha)
        # lognormal: a = μ, b = σ² of the normal log
        return math.exp(k * a + k * k * b / 2)

    def with_mean(self, mean: float) -> Law:
        """The same shape scaled to the given mean."""
        factor = mean / self.mean
        if self.code in (EXPONENTIAL, DETERMINISTIC):
            return Law(self.text, self.code, self.a * factor)
        if self.code == ERLANG:
            return Law(self.text, self.code, self.a, self.b * factor)
        if self.code == HYPEREXPONENTIAL:
            return Law(self.text, self.code, self.a, self.b * factor, self.c * factor)
        if self.code == BOUNDED_PARETO:
            return Law(self.text, self.code, self.a, self.b * factor, self.c * factor)
        return Law(self.text, self.code, self.a + math.log(factor), self.b)


def _numbers(text: str, name: str, argument: str, count: int, field: str) -> list[float]:
    parts = [part for part in argument.split(",")] if argument else []
    require(len(parts) == count, field,
            f"{name} takes {count} parameter{'s' if count > 1 else ''}: {_USAGE[name]} "
            f"(got {text!r})")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValidationError(field, f"cannot read the numbers of {text!r}; use "
                                     f"{_USAGE[name]}") from None
    require(all(math.isfinite(value) for value in values), field,
            f"the parameters of {text!r} must be finite numbers")
    return values


def _in_range(value: float, field: str, what: str) -> None:
    require(LEAST_VALUE <= value <= LARGEST_VALUE, field,
            f"{what} must lie in [{LEAST_VALUE:g}, {LARGEST_VALUE:g}] (got {value:g})")


def _balanced_hyperexponential(text: str, mean: float, scv: float, field: str) -> Law:
    require(scv > 1, field, f"a hyperexponential law needs C² > 1 (got {scv:g}); "
                            "use exp for C² = 1, erlang:K for 1/K")
    require(scv <= 1e6, field, f"a hyperexponential C² must be ≤ 1e6 (got {scv:g})")
    p1 = (1 + math.sqrt((scv - 1) / (scv + 1))) / 2
    return Law(text, HYPEREXPONENTIAL, p1, mean / (2 * p1), mean / (2 * (1 - p1)))


def _erlang(text: str, phases: float, mean: float, field: str) -> Law:
    require(phases == int(phases) and 1 <= phases <= MAX_ERLANG_PHASES, field,
            f"Erlang's K must be an integer in [1, {MAX_ERLANG_PHASES}] (got {phases:g})")
    return Law(text, ERLANG, float(int(phases)), mean)


def parse_size_law(text: object, field: str = "sizes") -> Law:
    """The size law written ``text`` (see the module's table); a ValidationError on
    ``field`` for anything else."""
    require(isinstance(text, str), field, f"expected a law such as exp:1 or bpareto:1.5,1,1e6 "
                                          f"(got {text!r}, a {type(text).__name__})")
    assert isinstance(text, str)
    name, _, argument = text.strip().lower().partition(":")
    require(name in SIZE_LAWS, field,
            f"unknown law {name!r}; allowed: {', '.join(_USAGE.values())}")
    if name == "exp" and not argument:
        argument = "1"
    values = _numbers(text, name, argument, SIZE_LAWS[name], field)
    if name in ("exp", "det"):
        _in_range(values[0], field, f"the {'mean' if name == 'exp' else 'value'}")
        return Law(text, _CODES[name], values[0])
    if name == "erlang":
        _in_range(values[1], field, "the mean")
        return _erlang(text, values[0], values[1], field)
    if name == "hyperexp":
        _in_range(values[0], field, "the mean")
        return _balanced_hyperexponential(text, values[0], values[1], field)
    if name == "bpareto":
        alpha, low, high = values
        require(0 < alpha <= 100, field, f"bounded Pareto's α must lie in (0, 100] "
                                         f"(got {alpha:g})")
        _in_range(low, field, "L")
        _in_range(high, field, "H")
        require(low < high, field, f"bounded Pareto needs L < H (got L = {low:g}, H = {high:g})")
        return Law(text, BOUNDED_PARETO, alpha, low, high)
    mean, scv = values  # lognormal
    _in_range(mean, field, "the mean")
    require(0 < scv <= 1e6, field, f"a lognormal C² must lie in (0, 1e6] (got {scv:g})")
    sigma2 = math.log1p(scv)
    return Law(text, LOGNORMAL, math.log(mean) - sigma2 / 2, sigma2)


def parse_arrival_shape(text: object, field: str = "arrivals") -> Law:
    """The interarrival law written ``text`` with mean 1 (the run scales it to 1/λ)."""
    require(isinstance(text, str), field, f"expected poisson, det, erlang:K or hyperexp:C2 "
                                          f"(got {text!r}, a {type(text).__name__})")
    assert isinstance(text, str)
    name, _, argument = text.strip().lower().partition(":")
    require(name in ARRIVAL_SHAPES, field, f"unknown interarrival law {name!r}; allowed: "
                                           "poisson, det, erlang:K, hyperexp:C2")
    count = ARRIVAL_SHAPES[name]
    parts = argument.split(",") if argument else []
    require(len(parts) == count, field,
            f"{name} takes {count or 'no'} parameter{'s' if count != 1 else ''} (got {text!r})")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValidationError(field, f"cannot read the number of {text!r}") from None
    require(all(math.isfinite(value) for value in values), field,
            f"the parameter of {text!r} must be a finite number")
    if name == "poisson":
        return Law(text, EXPONENTIAL, 1.0)
    if name == "det":
        return Law(text, DETERMINISTIC, 1.0)
    if name == "erlang":
        return _erlang(text, values[0], 1.0, field)
    return _balanced_hyperexponential(text, 1.0, values[0], field)


@njit(inline="always", cache=True)
def _exponential(s, mean):
    return -mean * math.log1p(-uniform(s))


@njit(cache=True)
def draw(s, code, a, b, c):
    """One value of the law (``code``, ``a``, ``b``, ``c``) from the xoshiro stream ``s``
    (a draw of a given law always takes the same number of uniforms, so one stream per
    kind of value keeps the others' draws the same across policies)."""
    if code == EXPONENTIAL:
        return _exponential(s, a)
    if code == DETERMINISTIC:
        return a
    if code == ERLANG:
        total = 0.0
        for _ in range(np.int64(a)):
            total -= math.log1p(-uniform(s))
        return (b / a) * total
    if code == HYPEREXPONENTIAL:
        u = uniform(s)
        return _exponential(s, b if u < a else c)
    if code == BOUNDED_PARETO:  # the inverse of the distribution function
        alpha, low, high = a, b, c
        u = uniform(s)
        return low / (1.0 - u * (1.0 - (low / high) ** alpha)) ** (1.0 / alpha)
    # lognormal: Box–Muller, one normal a draw (two uniforms)
    u1 = 1.0 - uniform(s)
    u2 = uniform(s)
    normal = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return math.exp(a + math.sqrt(b) * normal)


@njit(cache=True)
def draw_many(s, code, a, b, c, out):
    """``out`` filled with values of the law (see :func:`draw`)."""
    for i in range(out.size):
        out[i] = draw(s, code, a, b, c)
