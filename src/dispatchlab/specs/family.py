"""A family of systems: server classes in fixed shares, at several sizes N.

The many-server regimes grow the system: N servers split into classes in fixed shares
(``0.5x0.1,0.5x0.5``: half the servers at μ = 0.1, half at 0.5), with M dispatchers fixed
or in proportion to N (M = m·N). A :class:`SystemFamily` expands into one
:class:`~dispatchlab.specs.run.SystemSpec` per size, each labelled ``LABEL, N=…`` and
carrying the family's label in ``SystemSpec.family``, so that a grid sweeps the load, ε
or the Halfin–Whitt β (:func:`~dispatchlab.specs.run.halfin_whitt_epsilon`) at every N
and a report can draw "vs N". A size's system is an ordinary system: its points' store
keys are those of the same system written out by hand.

In a sweep file::

    [[families]]
    classes = "0.5x0.1,0.5x0.5"      # SHARExRATE, shares summing to 1
    sizes = [100, 1000, 10000]       # N; each share × N must be a whole number
    dispatchers = 10                 # M fixed, or
    # dispatchers_per_server = 0.1   # M = m·N
    label = "half slow"
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from dispatchlab.core.convert import as_float, as_int, as_str, as_table, check_keys
from dispatchlab.core.errors import ValidationError, require
from dispatchlab.model.size_limits import MAX_DISPATCHERS, MAX_SERVERS
from dispatchlab.specs.run import SYSTEM_CONVERTERS, SystemSpec

#: shares × N this close to a whole number count as whole (binary fractions of 0.1, …)
WHOLE = 1e-9


@dataclass(frozen=True)
class SystemFamily:
    """Server classes in fixed shares at the sizes N in ``sizes``.

    Attributes:
        classes: ``SHARExRATE`` entries, e.g. ``"0.5x0.1,0.5x0.5"``; shares sum to 1.
        sizes: the numbers of servers N.
        dispatchers: M at every N (give this or ``dispatchers_per_server``).
        dispatchers_per_server: m, with M = m·N (a whole number at every N).
        arrivals, service, dispatch, split: as in :class:`SystemSpec`.
        label: the family's name (default: its classes); each system is ``LABEL, N=…``.
    """

    classes: str
    sizes: tuple[int, ...]
    dispatchers: int | None = None
    dispatchers_per_server: float | None = None
    arrivals: str = "poisson"
    service: str = "bernoulli"
    dispatch: str = "batch"
    split: str = "per_job"
    label: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.sizes, list):  # one spelling; anything else is refused by systems()
            object.__setattr__(self, "sizes", tuple(self.sizes))

    @property
    def name(self) -> str:
        return self.label or self.classes

    def shares(self) -> list[tuple[float, float]]:
        """``(share, rate)`` of each class, checked."""
        require(isinstance(self.classes, str) and bool(self.classes.strip()), "classes",
                f"expected SHARExRATE entries, e.g. \"0.5x0.1,0.5x0.5\" (got {self.classes!r})")
        parsed = []
        for part in self.classes.replace(" ", "").split(","):
            share, sep, rate = part.partition("x")
            try:
                parsed.append((float(share), float(rate)))
            except ValueError:
                sep = ""
            require(bool(sep), "classes", f"cannot read {part!r}; use SHARExRATE, e.g. "
                    "0.5x0.1,0.5x0.5")
        for share, rate in parsed:
            require(math.isfinite(share) and 0 < share <= 1, "classes",
                    f"a share is in (0, 1] (got {share:g})")
            require(math.isfinite(rate) and 0 < rate <= 1, "classes",
                    f"a rate μ is in (0, 1] (got {rate:g})")
        total = sum(share for share, _ in parsed)
        require(abs(total - 1) <= 1e-9, "classes", f"the shares sum to 1 (got {total:g})")
        return parsed

    def servers(self, n: int) -> str:
        """The ``COUNTxRATE`` list of the family at N = ``n``."""
        counts = []
        for share, rate in self.shares():
            count = share * n
            require(abs(count - round(count)) <= WHOLE * n and round(count) >= 1, "sizes",
                    f"N = {n} gives {count:.10g} servers of rate {rate:g}: each share × N "
                    "must be a whole number ≥ 1")
            counts.append(f"{round(count)}x{rate:g}")
        return ",".join(counts)

    def dispatchers_at(self, n: int) -> int:
        """M at N = ``n``."""
        if self.dispatchers is not None:
            return self.dispatchers
        assert self.dispatchers_per_server is not None
        m = self.dispatchers_per_server * n
        require(abs(m - round(m)) <= WHOLE * n and 1 <= round(m) <= MAX_DISPATCHERS,
                "dispatchers_per_server", f"M = m·N = {m:g} at N = {n}: a whole number in "
                f"[1, {MAX_DISPATCHERS:,}] at every N")
        return round(m)

    def systems(self) -> tuple[SystemSpec, ...]:
        """One :class:`SystemSpec` per size, checked."""
        require((self.dispatchers is None) != (self.dispatchers_per_server is None),
                "dispatchers", "give dispatchers (M fixed) or dispatchers_per_server "
                "(M = m·N), one of them")
        if self.dispatchers is not None:
            as_int(self.dispatchers, "dispatchers", low=1)
        else:
            require(as_float(self.dispatchers_per_server, "dispatchers_per_server") > 0,
                    "dispatchers_per_server", f"m must be > 0 (got {self.dispatchers_per_server})")
        require(isinstance(self.sizes, tuple) and bool(self.sizes), "sizes",
                "give the sizes N, e.g. sizes = [100, 1000]")
        for i, n in enumerate(self.sizes):
            as_int(n, f"sizes[{i}]", low=1)
            require(n <= MAX_SERVERS, f"sizes[{i}]", f"at most {MAX_SERVERS:,} servers")
        require(len(set(self.sizes)) == len(self.sizes), "sizes",
                f"sizes must be distinct (got {list(self.sizes)})")
        return tuple(SystemSpec(self.servers(n), dispatchers=self.dispatchers_at(n),
                                arrivals=self.arrivals, service=self.service,
                                dispatch=self.dispatch, split=self.split,
                                label=f"{self.name}, N={n}", family=self.name)
                     for n in self.sizes)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["sizes"] = list(self.sizes)
        return {key: value for key, value in data.items() if value is not None}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], name: str = "family") -> SystemFamily:
        """A ``[[families]]`` table; errors name ``NAME.KEY``."""
        data = as_table(data, name)
        check_keys(data, name, tuple(f.name for f in fields(cls)))
        for key in ("classes", "sizes"):
            require(key in data, f"{name}.{key}", f"a family needs {key}")
        sizes = data["sizes"]
        require(isinstance(sizes, list | tuple), f"{name}.sizes",
                f"expected an array of sizes N (got {sizes!r})")
        converted: dict[str, Any] = {
            "classes": as_str(data["classes"], f"{name}.classes"),
            "sizes": tuple(as_int(n, f"{name}.sizes[{i}]", low=1) for i, n in enumerate(sizes)),
        }
        if "dispatchers" in data:
            converted["dispatchers"] = as_int(data["dispatchers"], f"{name}.dispatchers", low=1)
        if "dispatchers_per_server" in data:
            converted["dispatchers_per_server"] = as_float(
                data["dispatchers_per_server"], f"{name}.dispatchers_per_server")
        for key in ("arrivals", "service", "dispatch", "split", "label"):
            if key in data:
                converted[key] = SYSTEM_CONVERTERS[key](data[key], f"{name}.{key}")
        return cls(**converted)


def family_systems(family: SystemFamily, name: str) -> list[SystemSpec]:
    """``family.systems()``, an error naming its field under ``name`` (``families[0].sizes``)."""
    try:
        return list(family.systems())
    except ValidationError as error:
        raise ValidationError(f"{name}.{error.field}", error.message) from None
