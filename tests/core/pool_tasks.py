"""Tasks that the tests hand to a process pool, in a module of their own: a worker imports
the module of the function it runs, and a test module would cost every worker its imports
and what it computes at import (``test_pickled_errors`` imports every dispatchlab module)."""

from __future__ import annotations

from dispatchlab import ValidationError


def refuse(value: int) -> int:
    """Refuse the input, as a worker that validates its task does."""
    raise ValidationError("replications", f"must be ≥ 1 (got {value})")
