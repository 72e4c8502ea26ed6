"""The catalog of named experiments (``dispatchlab experiment NAME``, ``--list``).

Every module in this package is imported automatically (like ``dispatchlab.policies``),
so adding a catalog experiment is adding one module that registers a builder.

How to add a catalog experiment
-------------------------------

A catalog entry is a function returning an :class:`~dispatchlab.specs.experiment.ExperimentSpec`.
It may run pilot simulations first (e.g. calibrate p̂ to match Po-2's message rate);
it may accept ``quick: bool`` (``--quick``: make pilots and the grid small — the runner
also multiplies the slots by ``spec.quick_scale``). Register it with
:func:`register_experiment`::

    # src/dispatchlab/experiments/catalog/mypaper.py
    from dispatchlab.specs.experiment import ExperimentSpec, SlotsRule
    from dispatchlab.specs.figure import FigureSpec, ReferenceLine
    from dispatchlab.specs.run import PolicySpec, SystemSpec
    from dispatchlab.experiments.catalog import register_experiment
    from dispatchlab.theory.bounds import lower_bound_total_queue


    @register_experiment("mypaper-fig3", title="ε·E[ΣQ] of Po-2 and JSQ as ε → 0",
                         paper="My paper, Fig. 3")
    def fig3(quick: bool = False) -> ExperimentSpec:
        return ExperimentSpec(
            name="mypaper-fig3",
            systems=(SystemSpec("50x0.1,50x0.5", dispatchers=10),),
            policies=(PolicySpec("jsq", label="JSQ"),
                      PolicySpec("pod", {"d": 2}, label="Po2")),
            epsilons=(0.5, 1.0, 2.0) if quick else (0.25, 0.5, 1.0, 2.0, 4.0),
            replications=2,
            slots=SlotsRule(coefficient=2e5, power=2, per="epsilon"),  # 2·10⁵/ε² slots
            seed=3,
            figures=(
                FigureSpec("eps-queue", x="epsilon", y="epsilon_total_queue", log_x=True,
                           references=(ReferenceLine("ζ/2", field="heavy_traffic_limit"),)),
                FigureSpec("queue", x="epsilon", y="mean_total_queue", log_x=True, log_y=True,
                           references=(ReferenceLine("lower bound",
                                                     function=lower_bound_total_queue),)),
            ),
        )

That is all: ``dispatchlab experiment mypaper-fig3`` runs it on all cores (or
``--cluster tcp://HOST:PORT``), stores every point, and writes CSV and PNGs;
``dispatchlab report mypaper-fig3`` draws the HTML report from the store. In Python::

    from dispatchlab.experiments import build_experiment, run_experiment
    outcome = run_experiment(build_experiment("mypaper-fig3", quick=True),
                             store="dispatchlab-results.sqlite")

Figure y values: ``mean_total_queue`` (E[ΣQ]), ``mean_delay``, ``epsilon_total_queue``
(ε·E[ΣQ]), ``messages_per_arrival``, any scalar Result field, or a key of
``diagnostics`` / ``messages_by_kind``. Reference lines: a constant ``value``, a
per-point Result ``field`` (``heavy_traffic_limit`` = ζ/2, ``lower_bound_total_queue``),
or a module-level ``function(system) -> float`` (stored as ``"module:qualname"``;
lambdas are refused so the stored spec can always be redrawn). A stored name resolves
only among the registered reference functions (:mod:`dispatchlab.specs.references`: the
theory's, and those registered by code the user runs); a spec or a store imports nothing.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from dispatchlab.core.errors import ValidationError, require
from dispatchlab.specs.experiment import ExperimentSpec

Builder = Callable[..., ExperimentSpec]


@dataclass(frozen=True)
class CatalogEntry:
    """A registered experiment: its name, a one-line title, the paper it reproduces."""

    name: str
    title: str
    paper: str
    builder: Builder
    #: optional closing note: ``summary(frame, directory) -> str`` from the stored points
    summary: Callable[..., str] | None = None

    def build(self, quick: bool = False, pilots: bool = True) -> ExperimentSpec:
        """Call the builder (passing ``quick`` and ``pilots`` to one that accepts them) and
        validate the spec. ``pilots=False``: a builder that checks its settings with pilot
        runs (a calibration) skips them, for a spec that is only sized or listed."""
        accepted = inspect.signature(self.builder).parameters
        options = {key: value for key, value in (("quick", quick), ("pilots", pilots))
                   if key in accepted}
        spec = self.builder(**options)
        require(isinstance(spec, ExperimentSpec), self.name,
                f"the builder returned {type(spec).__name__}, not an ExperimentSpec")
        spec.validate()
        return spec


_REGISTRY: dict[str, CatalogEntry] = {}


def register_experiment(name: str, *, title: str = "", paper: str = "",
                        summary: Callable[..., str] | None = None
                        ) -> Callable[[Builder], Builder]:
    """Decorator: register ``builder`` as the catalog experiment ``name`` (``summary``: the
    closing note the CLI prints after a run, from the stored points)."""

    def decorate(builder: Builder) -> Builder:
        require(name not in _REGISTRY, "experiment", f"{name!r} is registered twice")
        doc_lines = (builder.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = CatalogEntry(name, title or (doc_lines[0] if doc_lines else name),
                                       paper, builder, summary)
        return builder

    return decorate


def experiment_names() -> list[str]:
    """The names of the registered catalog experiments, sorted."""
    return sorted(_REGISTRY)


def catalog_entry(name: str) -> CatalogEntry:
    """The catalog experiment registered as ``name``; a ValidationError listing the names if
    there is none."""
    if name not in _REGISTRY:
        raise ValidationError("experiment", f"unknown experiment {name!r}; allowed: "
                              + ", ".join(experiment_names()))
    return _REGISTRY[name]


def build_experiment(name: str, *, quick: bool = False, pilots: bool = True) -> ExperimentSpec:
    """The validated spec of the catalog experiment ``name`` (``pilots``: see
    :meth:`CatalogEntry.build`)."""
    return catalog_entry(name).build(quick=quick, pilots=pilots)


def entries() -> list[CatalogEntry]:
    """Every registered catalog experiment, sorted by name."""
    return [_REGISTRY[name] for name in experiment_names()]


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "CatalogEntry",
    "build_experiment",
    "catalog_entry",
    "entries",
    "experiment_names",
    "register_experiment",
]
