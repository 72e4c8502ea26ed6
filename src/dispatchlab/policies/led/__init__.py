"""LED — local-estimation-driven load balancing with multiple dispatchers ([LED];
docs/model.md#led).

:mod:`.strategies`: dispatching strategies (L-JSQ, L-JBA, L-Pod, the registry of named
strategies and the wrapping of a user rule); :mod:`.updates`: push/pull refresh of the
estimates; :mod:`.policy`: the registered ``led`` policy and its presets.
"""

from dispatchlab.compiled.signatures import STRATEGY_SIGNATURE, STRATEGY_TYPE
from dispatchlab.policies.led.policy import LEDPolicy
from dispatchlab.policies.led.strategies import (
    Strategy,
    as_strategy,
    builtin_strategy,
    custom_strategy,
    register_strategy,
    strategy_function,
    strategy_names,
)

__all__ = [
    "STRATEGY_SIGNATURE",
    "STRATEGY_TYPE",
    "LEDPolicy",
    "Strategy",
    "as_strategy",
    "builtin_strategy",
    "custom_strategy",
    "register_strategy",
    "strategy_function",
    "strategy_names",
]
