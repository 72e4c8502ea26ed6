"""The arguments of :func:`dispatchlab.sweep`, checked by the converters of the spec files.

A notebook sweep is the Python form of an experiment grid, so each of its keywords is
checked by the converter that checks the same key of a TOML spec
(:data:`~dispatchlab.specs.run.RUN_CONVERTERS`, :data:`~dispatchlab.specs.run.SYSTEM_CONVERTERS`,
the experiment's name rule and slot minimum): nothing is converted silently (a bool is
not an int, ``"1000"`` is not a number, ``seed=1.9`` is refused), and every refusal is a
:class:`~dispatchlab.core.errors.ValidationError` naming the keyword.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatchlab.core.convert import as_float, as_int
from dispatchlab.core.errors import require
from dispatchlab.core.pools import resolve_workers
from dispatchlab.specs.experiment import MIN_SLOTS, check_name
from dispatchlab.specs.run import RUN_CONVERTERS, SYSTEM_CONVERTERS

#: options at these values (simulate's defaults) stay out of a point's options, and so of
#: its key
OPTION_DEFAULTS = {"estimator": "coupled", "start": "empty", "delay": "tagged",
                   "imbalance": True}


@dataclass(frozen=True)
class SweepArguments:
    """The validated scalar arguments of a sweep (systems and policies are checked apart)."""

    axis: str
    values: tuple[float, ...]
    replications: int
    slots: int
    warmup: int | None
    seed: int
    workers: int | None
    store: Path | None
    experiment: str
    dispatchers: int | None
    allow_unstable: bool
    options: dict[str, Any]


def axis_values(value: Any, axis: str) -> tuple[float, ...]:
    """A non-empty sequence of distinct finite numbers (a list, tuple, range or 1-D array;
    not one number, not a string)."""
    require(not isinstance(value, str | bytes | Mapping) and _is_sequence(value), axis,
            f"expected a list of numbers, e.g. {axis}=[0.5, 0.9] (got {value!r})")
    values = tuple(as_float(item, f"{axis}[{i}]") for i, item in enumerate(value))
    require(bool(values), axis, f"give at least one value, e.g. {axis}=[0.5, 0.9]")
    require(len(set(values)) == len(values), axis, f"values must be distinct (got {values})")
    return values


def _is_sequence(value: Any) -> bool:
    if getattr(value, "ndim", 1) != 1:  # a numpy scalar or a 2-D array
        return False
    return isinstance(value, Sequence) or hasattr(value, "__array__")


def store_path(value: Any) -> Path | None:
    """A results store: a path (str or os.PathLike), or None."""
    if value is None:
        return None
    require(isinstance(value, str | os.PathLike) and bool(str(os.fspath(value)).strip()),
            "store", f"expected a file path such as 'results.sqlite' (got {value!r})")
    path = Path(os.fspath(value))
    require(not path.is_dir(), "store", f"{str(path)!r} is a folder; give a file path such as "
            f"{str(path / 'results.sqlite')!r}")
    return path


def sweep_arguments(*, load: Any, epsilon: Any, beta: Any, replications: Any, slots: Any,
                    warmup: Any,
                    seed: Any, workers: Any, store: Any, experiment: Any, dispatchers: Any,
                    allow_unstable: Any, warmup_method: Any, delay: Any, imbalance: Any,
                    estimator: Any, start: Any) -> SweepArguments:
    """Check every scalar keyword of :func:`dispatchlab.sweep` (see the module docstring)."""
    given = {axis: value for axis, value in (("load", load), ("epsilon", epsilon),
                                             ("beta", beta)) if value is not None}
    require(len(given) == 1, "load", "give load=[…], epsilon=[…] or beta=[…], one of them")
    ((axis, value),) = given.items()
    values = axis_values(value, axis)
    slots = as_int(slots, "slots", low=MIN_SLOTS)
    warmup = None if warmup is None else RUN_CONVERTERS["warmup"](warmup, "warmup")
    require(warmup is None or warmup < slots, "warmup",
            f"must be in [0, slots) (got {warmup} with {slots} slots)")
    resolve_workers(workers, 1)
    options = {"replications": RUN_CONVERTERS["replications"](replications, "replications"),
               "warmup_method": RUN_CONVERTERS["warmup_method"](warmup_method, "warmup_method")}
    for key, value in (("estimator", estimator), ("start", start), ("delay", delay),
                       ("imbalance", imbalance)):
        value = RUN_CONVERTERS[key](value, key)
        if value != OPTION_DEFAULTS[key]:
            options[key] = value
    return SweepArguments(
        axis=axis, values=values, replications=options["replications"], slots=slots,
        warmup=warmup, seed=RUN_CONVERTERS["seed"](seed, "seed"), workers=workers,
        store=store_path(store), experiment=check_name(experiment, "experiment"),
        dispatchers=(None if dispatchers is None
                     else SYSTEM_CONVERTERS["dispatchers"](dispatchers, "dispatchers")),
        allow_unstable=SYSTEM_CONVERTERS["allow_unstable"](allow_unstable, "allow_unstable"),
        options=options)


def as_list(value: Any, field: str, single: tuple[type, ...], what: str) -> list[Any]:
    """``value`` as a list: one item of a ``single`` type, or an iterable of items (not a
    string of characters, not a mapping)."""
    if isinstance(value, single):
        return [value]
    require(isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping),
            field, f"expected {what} or a list of them (got {value!r})")
    items = list(value)
    require(bool(items), field, f"give at least one: {what}")
    return items
