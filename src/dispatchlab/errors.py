"""The one error type that every user-facing entry point raises for bad input."""

from __future__ import annotations


class ValidationError(ValueError):
    """Bad input: names the offending field and what is allowed.

    The CLI prints ``str(error)`` as one line and exits with status 2.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def require(condition: bool, field: str, message: str) -> None:
    """Raise :class:`ValidationError` for ``field`` unless ``condition`` holds."""
    if not condition:
        raise ValidationError(field, message)
