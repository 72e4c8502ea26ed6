"""dispatchlab: a laboratory for dispatching policies in discrete-time parallel-server systems.

    >>> import dispatchlab as dl
    >>> system = dl.System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    >>> result = dl.simulate(system, "jsq", slots=100_000, seed=7)
    >>> df = dl.sweep(system, [dl.policies.JoinShortestQueue(), dl.policies.PowerOfD(d=2)],
    ...               load=[0.8, 0.9], slots=50_000)    # a pandas DataFrame
    >>> fig = dl.plot(df)                                # E[ΣQ] with CI bands

Every public name is loaded on first use (PEP 562): ``import dispatchlab`` and every
``dispatchlab.x`` submodule import (the command line's first) load neither numba, nor
scipy, nor the policies until a name that needs them is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and the docs see; at run time, __getattr__ below
    from dispatchlab import policies
    from dispatchlab.continuous import (
        ContinuousComparison,
        ContinuousResult,
        compare_continuous,
        simulate_continuous,
    )
    from dispatchlab.core.errors import ValidationError
    from dispatchlab.core.precision_target import Precision
    from dispatchlab.experiments.continuous_sweeps import sweep_continuous
    from dispatchlab.experiments.sweeps import sweep
    from dispatchlab.model import System
    from dispatchlab.policies import Policy, make_policy, policy_names
    from dispatchlab.report.result_plots import plot_distribution, plot_trajectory
    from dispatchlab.report.sweep_plot import plot
    from dispatchlab.simulation.compare import PairedComparison, compare
    from dispatchlab.simulation.exact import exact
    from dispatchlab.simulation.fluid import fluid
    from dispatchlab.simulation.measures import PerServer, Trajectory
    from dispatchlab.simulation.result import Result
    from dispatchlab.simulation.run import simulate
    from dispatchlab.specs.family import SystemFamily

from dispatchlab.core.version import __version__  # noqa: E402

#: public name -> the module that defines it (``policies`` is the subpackage itself)
_HOMES = {
    "ContinuousComparison": "dispatchlab.continuous",
    "ContinuousResult": "dispatchlab.continuous",
    "Policy": "dispatchlab.policies",
    "Result": "dispatchlab.simulation.result",
    "System": "dispatchlab.model",
    "SystemFamily": "dispatchlab.specs.family",
    "PairedComparison": "dispatchlab.simulation.compare",
    "PerServer": "dispatchlab.simulation.measures",
    "Precision": "dispatchlab.core.precision_target",
    "Trajectory": "dispatchlab.simulation.measures",
    "ValidationError": "dispatchlab.core.errors",
    "compare": "dispatchlab.simulation.compare",
    "compare_continuous": "dispatchlab.continuous",  # continuous time (numba on first run)
    "exact": "dispatchlab.simulation.exact",  # scipy, on first call
    "fluid": "dispatchlab.simulation.fluid",
    "make_policy": "dispatchlab.policies",
    "plot": "dispatchlab.report.sweep_plot",  # matplotlib
    "plot_distribution": "dispatchlab.report.result_plots",  # matplotlib
    "plot_trajectory": "dispatchlab.report.result_plots",
    "policy_names": "dispatchlab.policies",
    "simulate": "dispatchlab.simulation.run",
    "simulate_continuous": "dispatchlab.continuous",
    "sweep": "dispatchlab.experiments.sweeps",  # pandas and the store
    "sweep_continuous": "dispatchlab.experiments.continuous_sweeps",
}

__all__ = [
    "ContinuousComparison",
    "ContinuousResult",
    "PairedComparison",
    "PerServer",
    "Policy",
    "Precision",
    "Result",
    "System",
    "SystemFamily",
    "Trajectory",
    "ValidationError",
    "__version__",
    "compare",
    "compare_continuous",
    "exact",
    "fluid",
    "make_policy",
    "plot",
    "plot_distribution",
    "plot_trajectory",
    "policies",
    "policy_names",
    "simulate",
    "simulate_continuous",
    "sweep",
    "sweep_continuous",
]


def __getattr__(name: str) -> Any:
    if name == "policies":
        return importlib.import_module("dispatchlab.policies")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dispatchlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
