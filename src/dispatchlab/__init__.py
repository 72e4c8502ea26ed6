"""dispatchlab: a laboratory for dispatching policies in discrete-time parallel-server systems.

    >>> from dispatchlab import System, simulate
    >>> system = System.build("50x0.1,50x0.5", load=0.9, dispatchers=10)
    >>> result = simulate(system, "jsq", slots=100_000, seed=7)
"""

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
    "policy_names",
    "simulate",
]
