"""The exception of the torch integration's own failures (the host API's ``AllreduceTimeout``,
``RegistrationError``, … reach the caller unchanged)."""

from __future__ import annotations


class P4ReduceError(RuntimeError):
    """Setting up, running or tearing down a p4reduce group failed; the message names the
    group, the rank and the part that failed (``__cause__`` holds the underlying error)."""
