"""dispatchlab: a laboratory for dispatching policies in discrete-time parallel-server systems.

    >>> from dispatchlab import System, simulate
    >>> system = System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    >>> result = simulate(system, "jsq", slots=100_000, seed=7)
    >>> df = sweep(system, [policies.JoinShortestQueue(), policies.PowerOfD(d=2)],
    ...            load=[0.8, 0.9], slots=50_000)       # a pandas DataFrame
    >>> fig = plot(df)                                   # E[ΣQ] with CI bands
"""

from dispatchlab import policies
from dispatchlab.errors import ValidationError
from dispatchlab.model import System
from dispatchlab.policies import Policy, make_policy, policy_names
from dispatchlab.result import Result
from dispatchlab.simulate import simulate

__version__ = "0.1.0"

__all__ = [
    "Policy",
    "Result",
    "System",
    "ValidationError",
    "__version__",
    "make_policy",
    "plot",
    "policies",
    "policy_names",
    "simulate",
    "sweep",
]


def __getattr__(name: str):  # sweeps pull in pandas, matplotlib and the store: load lazily
    if name == "sweep":
        from dispatchlab.experiments.notebook import sweep

        return sweep
    if name == "plot":
        from dispatchlab.report.notebook import plot

        return plot
    raise AttributeError(f"module 'dispatchlab' has no attribute {name!r}")
