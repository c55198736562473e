"""A worker's session with one job: the state that outlives a call.

It holds what every worker of the job shares (n, K, S, job id, job key, message type), this
worker's rank, the retry policy, the number of the next call (its ``packetId``), and per
slot the set of the slot's next use, which carries across calls (docs/protocol.md,
"Shadow sets, retransmission and reuse").
"""

from __future__ import annotations

import numpy as np

from .. import wire
from ..quantize import check_nonfinite_mode
from . import native
from .buffers import BufferPool
from .call import Call
from .dense import DenseCall
from .events import SessionBusy
from .retry import RetryPolicy
from .sparse import SparseCall

ENGINES = ("native", "python")
MAX_THREADS = 64  # the native driver's limit (_engine_c.MAX_THREADS)


class Session:
    """Per worker, per job. ``allreduce(tensor)`` returns the call object to drive.

    One call at a time: a new call is refused (``SessionBusy``) while the previous one is
    running, failed or broken. A failed call is resolved by resuming it to the end
    (``Call.resume``, once every worker is back) or by ``reset`` after the controller has
    cleared the job's slots (docs/host.md, "Failure and recovery").
    """

    def __init__(
        self,
        *,
        rank: int,
        n: int,
        job_id: int,
        job_key: int,
        slots: int,
        k: int = wire.K_DEFAULT,
        msg_type: int = wire.MSG_DENSE,
        retry: RetryPolicy | None = None,
        first_call: int = 0,
        engine: str = "python",
        nonfinite: str = "propagate",
        threads: int = 1,
    ) -> None:
        if not 1 <= n <= wire.MAX_WORKERS:
            raise ValueError(f"n = {n}: 1 .. {wire.MAX_WORKERS} workers")
        if not 0 <= rank < n:
            raise ValueError(f"rank {rank}: 0 .. {n - 1}")
        if not 1 <= job_id <= wire.MAX_JOB_ID:
            raise ValueError(f"job id {job_id}: 1 .. {wire.MAX_JOB_ID}")
        if not 0 <= job_key <= wire.MAX_KEY:
            raise ValueError(f"job key {job_key}: a 32-bit value (0 .. {wire.MAX_KEY})")
        if not 1 <= slots <= wire.POOL_SLOTS:
            raise ValueError(f"{slots} slots: 1 .. {wire.POOL_SLOTS}")
        if k < 1:
            raise ValueError(f"K = {k}: positive (the programs are built with 64, 256 or 1024)")
        if msg_type not in wire.MSG_TYPES:
            raise ValueError(f"message type {msg_type}: MSG_DENSE or MSG_SPARSE")
        check_nonfinite_mode(nonfinite)
        if engine not in ENGINES:
            raise ValueError(f"engine {engine!r}: one of {', '.join(ENGINES)}")
        if not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads = {threads!r}: 1 .. {MAX_THREADS} driver threads")
        if engine == "native" and not native.available():
            native.unavailable_notice()
            engine = "python"
        self.engine = engine  # what the calls run on: "native" or "python"
        # The native driver's threads per call, each over its own share of the slots
        # (docs/host.md, "Several driver threads"); the Python core and the event methods
        # run one.
        self.threads = threads
        self.rank = rank
        self.n = n
        self.job_id = job_id
        self.job_key = job_key
        self.slots = slots
        self.k = k
        self.msg_type = msg_type
        self.retry = retry if retry is not None else RetryPolicy()
        # NaN/±Inf in a float32 tensor: "propagate" sends the block's non-finite bits, so
        # every worker gets that block back as NaN/±Inf (gloo's outcome, per block);
        # "raise" refuses the tensor before anything is sent (docs/protocol.md).
        self.nonfinite = nonfinite
        self._next_call = first_call & 0xFFFFFFFF
        self._sets = np.zeros(slots, dtype=np.uint8)
        self.current: Call | None = None
        # tensor-sized arrays the calls reuse (buffers.py: fresh ones cost page faults)
        self.buffers = BufferPool()

    @property
    def next_call(self) -> int:
        """The packetId the next call will carry."""
        return self._next_call

    @property
    def sets(self) -> np.ndarray:
        """Per slot, the set its next use goes to (a copy)."""
        return self._sets.copy()

    def allreduce(self, tensor: np.ndarray, out: np.ndarray | None = None) -> Call:
        """A call summing ``tensor`` (float32 or int32, any shape) over the job's workers.
        ``out``: where the result's rows may land as they arrive (``Call._result_rows``
        says when it is used); the caller must not read or write it until the call is done.

        Raises before anything is sent, without using up a call number: ``TypeError`` for
        another dtype, ``quantize.NonFiniteError`` (a ValueError) for NaN or ±Inf when the
        session was made with ``nonfinite="raise"`` (by default they propagate)."""
        cur = self.current
        if cur is not None and cur.state != "done":
            raise SessionBusy(
                f"call {cur.call_id} is {cur.state}"
                + (f": {cur.error}" if cur.error is not None else "")
                + "; finish or resume it, or reset the session after the job's slots are cleared"
            )
        dense = self.msg_type == wire.MSG_DENSE
        if self.engine == "native":
            cls: type[Call] = native.NativeDenseCall if dense else native.NativeSparseCall
        else:
            cls = DenseCall if dense else SparseCall
        call = cls(self, tensor, out)
        call.call_id = self._next_call
        self._next_call = (self._next_call + 1) & 0xFFFFFFFF
        self.current = call
        return call

    def reset(self, *, next_call: int | None = None) -> None:
        """Forget the current call and put every slot back at set 0, as at job creation.

        Only correct once the controller has cleared the job's slot range (bitmaps and
        counts) and every worker of the job resets alike, with the same ``next_call``."""
        self.current = None
        self._sets[:] = 0
        if next_call is not None:
            self._next_call = next_call & 0xFFFFFFFF
