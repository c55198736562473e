"""The exception of the torch integration's own failures (the host API's ``AllreduceTimeout``,
``RegistrationError``, … reach the caller unchanged)."""

from __future__ import annotations


class P4ReduceError(RuntimeError):
    """Setting up, running or tearing down a p4reduce group failed; the message names the
    group, the rank and the part that failed (``__cause__`` holds the underlying error)."""


class CollectiveTimeout(TimeoutError):
    """A collective did not finish within its timeout (the group's, or the one given to
    ``work.wait``). ``waiting_for`` says what it was waiting for: a session call running or
    queued behind another, its submission, the copy back of its results."""

    def __init__(self, message: str, waiting_for: str = "") -> None:
        super().__init__(message)
        self.waiting_for = waiting_for
