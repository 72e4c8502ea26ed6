"""One run of a system and a policy, from the arguments down to a :class:`Result`.

A run flows down once: :mod:`~dispatchlab.simulation.plan` validates the arguments into a
plan; :mod:`~dispatchlab.simulation.execute` takes it through
:mod:`~dispatchlab.simulation.replicate` (its replications, in worker processes if asked),
:mod:`~dispatchlab.simulation.precision` (rounds of them, for a precision target) and
:mod:`~dispatchlab.simulation.summary`, which turns the raw accumulators into estimates,
a stability verdict and the theory's context; and
:mod:`~dispatchlab.simulation.result` is the record it returns. ``dispatchlab.simulate``
(:func:`~dispatchlab.simulation.run.simulate`) is the entry point;
:mod:`~dispatchlab.simulation.work_guard` refuses work far larger than anyone means.
"""
