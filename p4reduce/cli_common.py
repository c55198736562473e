"""Pieces every p4reduce command line shares: one-line usage errors and one-line ends on
unexpected errors, never a traceback.

It lives in the neutral top-level package, which depends on no part, so the switch, the
controller and the testbed commands all use it without depending on each other.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, ``PROG: error: message``, and ``exit_status``.

    Subparsers are built by argparse with the parent's class but none of its arguments, so a
    command whose subcommands must report under the command's own name and status sets the
    class attributes in a subclass instead."""

    exit_status = 1
    error_prog: str | None = None  # the name errors start with; default: this parser's prog

    def __init__(self, *args: Any, exit_status: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if exit_status is not None:
            self.exit_status = exit_status

    def error(self, message: str) -> NoReturn:
        print(f"{self.error_prog or self.prog}: error: {message}", file=sys.stderr)
        sys.exit(self.exit_status)


def one_line(err: BaseException) -> str:
    """The error's message on one line (its type name when it has none)."""
    return " ".join(str(err).split()) or type(err).__name__


def internal_error(prog: str, err: BaseException) -> str:
    return f"{prog}: error: internal error: {type(err).__name__}: {one_line(err)}"


def stdout_gone() -> int:
    """Output was piped into a reader that quit (``| head``): stop quietly, exit 141 as a
    shell would, and keep Python from complaining again when it flushes stdout at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def rank_main(
    prog: str,
    parse: Callable[[list[str] | None], argparse.Namespace],
    run: Callable[[argparse.Namespace], object],
    argv: list[str] | None,
) -> int:
    """The ``main`` of a worker process started per rank: exit 2 for a bad command line
    (already printed), 130 on Ctrl-C, 1 with one line naming the rank for any failure."""
    try:
        args = parse(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 2
    try:
        run(args)
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: rank {args.rank}: error: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        print(
            f"{prog}: rank {args.rank}: error: {type(err).__name__}: {one_line(err)}",
            file=sys.stderr,
        )
        return 1


class StopSignals:
    """SIGINT and SIGTERM, recorded for a server's main loop to poll (``wait``).

    The handler only appends to a list. A handler that calls ``threading.Event.set()``
    deadlocks when the signal lands while the main thread is inside ``Event.wait()``: the
    handler runs in that thread, between bytecodes, and waits for the lock ``wait()``
    holds. (``p4reduce-ctl serve`` was found hung exactly so after two signals.) Polling
    also catches a signal that the kernel handed to another thread, whose handler runs
    only once the main thread executes bytecode again. Use from the main thread."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous = {sig: signal.signal(sig, self._record) for sig in self.SIGNALS}

    def _record(self, sig: int, _frame: object) -> None:
        self.received.append(sig)

    def wait(self, timeout: float, step: float = 0.1) -> bool:
        """Sleep until a stop signal came or ``timeout`` passed; whether one came."""
        deadline = time.monotonic() + timeout
        while not self.received:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(step, left))
        return True

    def restore(self) -> None:
        """Put back the handlers found at construction."""
        for sig, handler in self._previous.items():
            # None: a handler installed from C, which Python cannot restore
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
