"""LED — local-estimation-driven load balancing with multiple dispatchers (THEORY.md §2).

:mod:`.strategies`: dispatching strategies (L-JSQ, L-JBA, L-Pod, and the signature of
a user strategy); :mod:`.updates`: push/pull refresh of the estimates; :mod:`.policy`:
the registered ``led`` policy and its presets.
"""

from dispatchlab.policies.led.policy import LEDPolicy
from dispatchlab.policies.led.strategies import (
    STRATEGY_SIGNATURE,
    STRATEGY_TYPE,
    Strategy,
    builtin_strategy,
    custom_strategy,
    strategy_function,
)

__all__ = [
    "STRATEGY_SIGNATURE",
    "STRATEGY_TYPE",
    "LEDPolicy",
    "Strategy",
    "builtin_strategy",
    "custom_strategy",
    "strategy_function",
]
