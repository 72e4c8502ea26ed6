"""A child process that receives Ctrl-C as a user's would, whatever the test runner's own
SIGINT disposition and mask (both pass through fork and exec)."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn``: SIGINT unblocked and at its default action in the child."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
