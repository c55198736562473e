"""Switch statistics of a p4reduce group or hook state, cumulative or per period (per
training step: ``stats(reset=True)`` once per step)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import torch.distributed as dist

from ..api import AllreduceStats


class StatsMark:
    """Remembers the statistics at the last reset, to report what happened since."""

    def __init__(self, read: Callable[[], AllreduceStats]) -> None:
        self._read = read
        self._mark = AllreduceStats()
        self._lock = threading.Lock()

    def since(self, reset: bool) -> AllreduceStats:
        with self._lock:
            now = self._read()
            delta = AllreduceStats(
                **{
                    f.name: getattr(now, f.name) - getattr(self._mark, f.name)
                    for f in dataclasses.fields(now)
                }
            )
            if reset:
                self._mark = now
        return delta


def stats(group: Any = None, *, reset: bool = False) -> AllreduceStats:
    """This rank's switch statistics (``p4reduce.host.AllreduceStats``) of a p4reduce
    process group (default: the default group) or of a ``HookState``: cumulative since it
    was made, or with ``reset=True`` since the previous ``reset=True``."""
    from .backend import P4ReduceProcessGroup
    from .hook import HookState

    target = dist.group.WORLD if group is None else group
    if not isinstance(target, (P4ReduceProcessGroup, HookState)):
        raise TypeError(
            f"stats() of {target!r}: neither a p4reduce process group "
            f"(init_process_group('p4reduce')) nor a HookState"
        )
    return target.marks.since(reset)
