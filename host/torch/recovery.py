"""After a failed collective, the group goes on by itself at a collective every rank agrees on.

The numpy API recovers a session whose call failed at its next call, but a rank whose own
calls did not fail never joins that recovery round, and ranks that fail at different
collectives would resume out of step (one rank's collective q summed with another's
q + 1: wrong sums, no error). torch issues a group's collectives in the same order on every
rank, so each gets a sequence number, and the recovery uses it:

1. Before each collective through the switch, a *boundary* step runs on the session's
   thread, in order with the calls (``AllreduceSession.submit``). When this rank's last
   call failed, it publishes ``fail/E`` in the group's store (E: the number of recoveries
   so far, the same on every rank); otherwise it looks whether any rank did (one store
   lookup per collective).
2. If so, it runs the session's recovery round (every rank of the job comes: the failed
   ones at once, the others at their next collective, whose call may first have to time
   out), then every rank writes the sequence number of the collective it is at, and all
   go on from the largest: collectives below it fail on the ranks that reach them
   (``P4ReduceError`` "skipped"), so every rank resumes at the same collective.

The step runs before every collective's calls, so when a call failed, the next
collective's step recovers before any call of it could (the session's own
``auto_recover`` stays on as a fallback for uses where the ranks' sequences differ).
"""

from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass, field

import torch.distributed as dist

from ...controller.client import RegistrationError
from ..api import AllreduceSession, SessionFailed
from .errors import P4ReduceError


@dataclass(eq=False)
class Recovery:
    """The boundary step of one rank's session in one group (see the module docstring)."""

    store: dist.Store  # the group's store under a prefix of this job's own
    rank: int
    n: int
    timeout: float  # bound of the waits for the other ranks
    what: str
    epoch: int = 0  # recoveries done (the same on every rank)
    resume_at: int = 0  # collectives below this number are skipped
    _seq: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def next_seq(self) -> int:
        """The number of the next collective (called at submission, in torch's order)."""
        with self._lock:
            seq = self._seq
            self._seq += 1
            return seq

    def boundary(self, session: AllreduceSession, seq: int) -> None:
        """Runs on the session's thread before collective ``seq``'s calls; raises to fail
        the collective (its calls are then cancelled)."""
        key = f"fail/{self.epoch}"
        failure = session.failure
        if failure is not None:
            self.store.set(key, str(seq))
        elif not self.store.check([key]):
            if seq < self.resume_at:
                raise self._skipped(seq)
            return
        try:
            session.recover_here(self.timeout)
        except RegistrationError as err:
            raise SessionFailed(
                f"{self.what}: collective {seq}: a collective failed"
                + (f" ({failure})" if failure else " on another rank")
                + f", and the recovery round failed: {err}"
            ) from None
        mine = f"at/{self.epoch}/{self.rank}"
        self.store.set(mine, str(seq))
        keys = [f"at/{self.epoch}/{r}" for r in range(self.n)]
        try:
            self.store.wait(keys, datetime.timedelta(seconds=self.timeout))
        except RuntimeError as err:
            raise P4ReduceError(
                f"{self.what}: collective {seq}: the ranks did not agree where to resume "
                f"within {self.timeout:g} s ({err})"
            ) from err
        self.resume_at = max(int(self.store.get(k)) for k in keys)
        self.epoch += 1
        if seq < self.resume_at:
            raise self._skipped(seq)

    def _skipped(self, seq: int) -> P4ReduceError:
        return P4ReduceError(
            f"{self.what}: collective {seq} skipped: after a failed collective the group "
            f"resumed at collective {self.resume_at}, which another rank had reached"
        )
