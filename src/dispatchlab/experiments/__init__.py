"""Experiments at scale: specs, the catalog, the runner and the results store.

    >>> from dispatchlab.experiments import build_experiment, run_experiment
    >>> spec = build_experiment("classic-load-sweep", quick=True)
    >>> outcome = run_experiment(spec, store="dispatchlab-results.sqlite")

The grid's systems and policies are the run spec's :class:`SystemSpec` and
:class:`PolicySpec` (``dispatchlab.specs.run``); its figures are ``dispatchlab.specs.figure``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded on first use (__getattr__): the store needs none of them
    from dispatchlab.experiments.catalog import (
        build_experiment,
        experiment_names,
        register_experiment,
    )
    from dispatchlab.experiments.runner import run_experiment
    from dispatchlab.specs.experiment import ExperimentSpec, Point, SlotsRule
    from dispatchlab.specs.figure import FigureSpec, ReferenceLine
    from dispatchlab.specs.run import PolicySpec, SystemSpec

__all__ = [
    "ExperimentSpec",
    "FigureSpec",
    "Point",
    "PolicySpec",
    "ReferenceLine",
    "SlotsRule",
    "SystemSpec",
    "build_experiment",
    "experiment_names",
    "register_experiment",
    "run_experiment",
]

#: public name -> its module; every name is loaded on first use, so that importing a
#: submodule (the store, for ``dispatchlab results``) loads neither numba nor the catalog
_HOMES = {
    "ExperimentSpec": "dispatchlab.specs.experiment",
    "FigureSpec": "dispatchlab.specs.figure",
    "Point": "dispatchlab.specs.experiment",
    "PolicySpec": "dispatchlab.specs.run",
    "ReferenceLine": "dispatchlab.specs.figure",
    "SlotsRule": "dispatchlab.specs.experiment",
    "SystemSpec": "dispatchlab.specs.run",
    "build_experiment": "dispatchlab.experiments.catalog",
    "experiment_names": "dispatchlab.experiments.catalog",
    "register_experiment": "dispatchlab.experiments.catalog",
    "run_experiment": "dispatchlab.experiments.runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
