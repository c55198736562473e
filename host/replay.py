"""Transparent retry of a call that a lost switch left without its results (docs/host.md,
"Transparent retry"), as pure bookkeeping: what a session keeps, and what it does once the
recovery round told it how far every worker had come.

A switch that restarts loses every slot; the registration service re-installs the job
(controller/reconcile.py). The workers' calls in flight time out; each runs the recovery
round, reporting how many calls it had completed (``done``). Workers are at most one call
apart: a worker can complete call c only after every worker contributed to all of c's
packets, so none can be past c + 1 while another still waits in c. A worker that completed
c while another did not (the switch died between the replicas of c's last result) must
contribute to c again, which it can only do from its own input of c: so a session keeps a
copy of its last completed call's input (``ReplayLog``). Every worker then runs the calls
from ``min_done`` on, in the same order: the same call numbers everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RETRY, REDO_LAST, CANNOT = "retry", "redo-last", "cannot"


@dataclass
class LastCall:
    array: np.ndarray  # a private copy of what travelled (float32 or int32)
    op: str
    mode: str


@dataclass
class ReplayLog:
    """Completed calls of a session, and the input of the last one."""

    done: int = 0
    last: LastCall | None = None

    def completed(self, array: np.ndarray, op: str, mode: str) -> None:
        self.done += 1
        self.last = LastCall(array, op, mode)


def plan(done: int, min_done: int | None, max_done: int | None, have_last: bool) -> str:
    """What this worker does after a recovery round: ``RETRY`` its failed call, first
    ``REDO_LAST`` (contribute to its last completed call again, dropping the result) when
    another worker had not completed it, or ``CANNOT`` (the round did not tell how far the
    others were, or they are further apart than a lost switch explains): the call fails."""
    if min_done is None or max_done is None or max_done - min_done > 1:
        return CANNOT
    if done == min_done:
        return RETRY
    if done == min_done + 1 and have_last:
        return REDO_LAST
    return CANNOT
