"""The loopback stack of a group started without a registration service URL: the embedded
switch and ``p4reduce-ctl serve`` on 127.0.0.1, run by the group's rank 0 through
``p4reduce.stack.LoopbackStack`` with the ranks' own sockets as the switch's UDP peers.

Stacks are stopped by their group (``destroy_process_group``, ``HookState.close``), at
interpreter exit by the ``atexit`` hook below, and when the process dies any other way by the
kernel (``LoopbackStack(die_with_parent=True)``: the children get SIGTERM).
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import P4ReduceError
from .options import P4ReduceOptions

if TYPE_CHECKING:
    from ...stack.loopback import LoopbackStack

log = logging.getLogger("p4reduce.torch")

_lock = threading.Lock()
_live: list[LoopbackStack] = []


def start(peers: Sequence[tuple[str, int]], options: P4ReduceOptions, what: str) -> LoopbackStack:
    """Start a stack whose switch port r + 1 stands for ``peers[r]``; P4ReduceError with
    the stack's one-line reason when a part does not start."""
    from ...stack.loopback import LoopbackStack, StackError  # only loopback groups need it

    stack = LoopbackStack(
        len(peers),
        options.loopback_program,
        k=options.k,
        join_timeout=options.timeout,
        start_timeout=options.timeout,
        peers=peers,
        die_with_parent=True,
        log=lambda msg: log.info("%s: %s", what, msg),
    )
    with _lock:
        _live.append(stack)
    try:
        stack.start()
    except BaseException as err:
        stop(stack)
        if isinstance(err, (StackError, OSError)):
            raise P4ReduceError(f"{what}: the loopback stack did not start: {err}") from err
        raise
    return stack


def stop(stack: LoopbackStack) -> None:
    """Stop the stack's processes (idempotent)."""
    with _lock:
        if stack in _live:
            _live.remove(stack)
    stack.stop()


def live() -> list[LoopbackStack]:
    with _lock:
        return list(_live)


@atexit.register
def _stop_all() -> None:
    for stack in live():
        try:
            stop(stack)
        except Exception:  # noqa: BLE001 - exiting: stop the others regardless
            log.exception("stopping a loopback stack at exit failed")
