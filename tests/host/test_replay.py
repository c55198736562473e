"""host/replay.py: what a worker does after the recovery round that follows a lost switch."""

from __future__ import annotations

import numpy as np
from p4reduce.host.replay import CANNOT, REDO_LAST, RETRY, ReplayLog, plan


def test_plan() -> None:
    assert plan(5, 5, 5, have_last=True) == RETRY  # everyone stuck in the same call
    assert plan(5, 5, 6, have_last=True) == RETRY  # another worker is one call ahead
    assert plan(6, 5, 6, have_last=True) == REDO_LAST  # this one is: contribute to 5 again
    assert plan(6, 5, 6, have_last=False) == CANNOT  # ... without the input of call 5
    assert plan(7, 5, 7, have_last=True) == CANNOT  # further apart than a lost switch explains
    assert plan(5, None, None, have_last=True) == CANNOT  # the others did not say
    assert plan(4, 5, 6, have_last=True) == CANNOT  # behind everyone: cannot happen


def test_log_keeps_the_last_input() -> None:
    log = ReplayLog()
    a, b = np.arange(4, dtype=np.int32), np.ones(3, dtype=np.float32)
    log.completed(a, "sum", "dense")
    log.completed(b, "avg", "auto")
    assert log.done == 2 and log.last is not None
    assert log.last.array is b and (log.last.op, log.last.mode) == ("avg", "auto")
