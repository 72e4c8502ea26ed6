"""Continuous time with job sizes: an event-driven engine beside the slot loop.

Jobs arrive one at a time (each of M dispatchers has its own renewal stream), bring a
size (the work they need), and join at once the server their dispatcher's policy picks;
servers of speeds s_n serve FIFO, by processor sharing or by preemptive SRPT. This is the
model of the large-system literature (the supermarket model, JIQ, LWL) and of production
balancers (P2C, least request). :func:`simulate_continuous` runs it
(``dispatchlab.sweep_continuous`` a grid of it); the slotted model's
``dispatchlab.simulate`` is untouched.
"""

from dispatchlab.continuous.compare import ContinuousComparison, compare_continuous
from dispatchlab.continuous.run import ContinuousResult, simulate_continuous

__all__ = ["ContinuousComparison", "ContinuousResult", "compare_continuous",
           "simulate_continuous"]
