"""Experiments at scale: specs, the catalog, the runner and the results store.

    >>> from dispatchlab.experiments import build_experiment, run_experiment
    >>> spec = build_experiment("classic-load-sweep", quick=True)
    >>> outcome = run_experiment(spec, store="dispatchlab-results.sqlite")

The grid's systems and policies are the run spec's :class:`SystemSpec` and
:class:`PolicySpec` (``dispatchlab.runspec``); its figures are ``dispatchlab.report.figures``.
"""

from dispatchlab.experiments.catalog import (
    build_experiment,
    experiment_names,
    register_experiment,
)
from dispatchlab.experiments.spec import ExperimentSpec, Point, SlotsRule
from dispatchlab.report.figures import FigureSpec, ReferenceLine
from dispatchlab.runspec import PolicySpec, SystemSpec

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


def __getattr__(name: str):  # the runner pulls in executors and the store: load it lazily
    if name == "run_experiment":
        from dispatchlab.experiments.runner import run_experiment

        return run_experiment
    raise AttributeError(name)
