"""The model: arrival process, service laws and the system (docs/model.md#slotted-model)."""

from dispatchlab.model.arrivals import ArrivalProcess, arrival_process, parse_arrival_law
from dispatchlab.model.service import SERVICE_LAWS, ServiceLaw, parse_rates
from dispatchlab.model.system import System

__all__ = [
    "ArrivalProcess",
    "SERVICE_LAWS",
    "ServiceLaw",
    "System",
    "arrival_process",
    "parse_arrival_law",
    "parse_rates",
]
