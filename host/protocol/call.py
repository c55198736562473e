"""The machinery every call shares: outstanding packets per slot, timers, result filtering,
statistics, failure and resume. ``DenseCall`` and ``SparseCall`` add what they send.

A call keeps, per active slot (``slot < min(S, B)``), at most one outstanding packet: its
bytes (retransmissions resend them unchanged), the set and block its result must carry,
how often it went out, when it first went out and its current timeout. Timers live in one
heap of ``(deadline, slot, version)``; a slot's version changes whenever its deadline does,
so superseded entries are skipped when they surface.

States: ``new`` → ``running`` → ``done``; ``running`` → ``failed`` (a ``CallTimeout``;
``resume`` goes back to ``running``); ``running`` → ``broken`` (a ``ProtocolError``).
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from .. import wire
from ..quantize import apply_nonfinite, dequantize, split_nonfinite, to_blocks
from .events import (
    Action,
    CallStats,
    CallTimeout,
    Done,
    Failed,
    ProtocolError,
    Send,
    SetTimer,
    StuckSlot,
)

if TYPE_CHECKING:
    from .session import Session

_MAX_LISTED = 8  # stuck slots named in the error message; all are in the exception


class Call(ABC):
    """One all-reduce of one tensor on one ``Session``. Create it with
    ``Session.allreduce``; then ``start(now)``, and feed it ``on_packet(data, now)`` and
    ``on_timer(now)`` until it returns ``Done`` or ``Failed``."""

    kind = "call"

    def __init__(self, session: Session, tensor: np.ndarray, out: np.ndarray | None = None) -> None:
        a = np.asarray(tensor)
        if a.dtype not in (np.float32, np.int32):
            raise TypeError(f"tensor dtype {a.dtype}: float32 or int32 expected")
        k = session.k
        blocks = to_blocks(a, k)
        self._owned: np.ndarray | None = None  # the input copy, from the session's pool
        if a.dtype == np.float32 and np.shares_memory(blocks, a):
            # Float blocks are quantized as their agreed exponents arrive, while the call
            # runs: keep a copy. int32 calls convert everything up front (subclasses).
            blocks = self._owned = session.buffers.copy(blocks)
        if blocks.shape[0] >= wire.NEXT_END:
            raise ValueError(f"{blocks.shape[0]} blocks: the block field allows < 2^32 - 1")
        self.session = session
        self.shape = a.shape
        self.dtype = a.dtype
        self.is_float = a.dtype == np.float32
        self.m = a.size
        self.k = k
        self.blocks = blocks
        self.nblocks = blocks.shape[0]
        self.nslots = session.slots
        self.active = min(session.slots, self.nblocks)
        self.call_id = 0  # set by the session once the call is accepted
        self.stats = CallStats()
        self.state = "new"
        self.error: Exception | None = None
        self.result: np.ndarray | None = None
        # Where the results land, row b final once block b's result is stored: float32
        # (dequantized on arrival) or int32 sums. The caller's ``out`` itself when it can
        # hold the rows (then nothing is copied at the end), else a pooled array. Dense
        # calls store every row; sparse ones leave the blocks zero everywhere unsent.
        self._result = self._result_rows(out, a.dtype, self.kind == "sparse")
        # float: per block, the NF_* bits it sends (_nf) and those its result brought (_nf_out)
        self._nf = np.zeros(self.nblocks if self.is_float else 0, dtype=np.uint8)
        self._nf_out = np.zeros(self.nblocks if self.is_float else 0, dtype=np.uint8)
        na = self.active
        self._pkt: list[bytes | None] = [None] * na
        self._set = [0] * na
        self._block = [0] * na
        self._priming = [False] * na
        self._attempts = [0] * na
        self._first = [0.0] * na
        self._timeout = [0.0] * na
        self._version = [0] * na
        self._heap: list[tuple[float, int, int]] = []
        self._open = 0
        self._last_deadline: float | None = None
        self._retry = session.retry
        self._be: np.ndarray | None = None  # int32 payloads, big-endian (subclasses)

    # ------------------------------------------------------------ events

    def start(self, now: float) -> list[Action]:
        """Send the first packet of every active slot."""
        if self.state != "new":
            raise RuntimeError(f"call {self.call_id} already started ({self.state})")
        self.state = "running"
        acts: list[Action] = []
        if self.active == 0:
            self._finish(acts)
            return acts
        self._start_slots(now, acts)
        return self._close(acts)

    def on_packet(self, data: bytes, now: float) -> list[Action]:
        """A datagram from the switch's aggregation port."""
        st = self.stats
        st.packets_received += 1
        st.bytes_received += len(data)
        try:
            h = wire.unpack_header(data)
            wire.check_result(h, len(data), self.k)
        except wire.WireError:
            st.malformed += 1
            return []
        ses = self.session
        if h.msg_type != ses.msg_type or h.job_id != ses.job_id or h.key != ses.job_key:
            st.foreign += 1
            return []
        if h.packet_id != self.call_id:
            st.stale += 1
            return []
        if self.state != "running":
            st.late += 1
            return []
        s = h.slot
        if (
            s >= self.active
            or self._pkt[s] is None
            or h.set != self._set[s]
            or h.block != self._block[s]
        ):
            st.duplicates += 1
            return []
        st.results += 1
        if h.flags & wire.FLAG_RETRANSMIT:
            st.unicast_results += 1
        acts: list[Action] = []
        try:
            self._on_result(s, h, data, now, acts)
        except ProtocolError as e:
            self.state = "broken"
            self.error = e
            return self._stop(acts) + [Failed(e, self.stats)]
        return self._close(acts)

    def on_timer(self, now: float) -> list[Action]:
        """Resend every packet whose timer expired; fail the call when one is stuck."""
        if self.state != "running":
            return []
        heap = self._heap
        due: list[int] = []
        while heap and heap[0][0] <= now:
            _, s, ver = heapq.heappop(heap)
            if ver == self._version[s] and self._pkt[s] is not None:
                due.append(s)
        pol = self._retry
        stuck = [
            s
            for s in due
            if now - self._first[s] >= pol.give_up_after
            or (pol.max_attempts is not None and self._attempts[s] >= pol.max_attempts)
        ]
        if stuck:
            return self._fail(stuck, now)
        acts: list[Action] = []
        for s in due:
            self._attempts[s] += 1
            self._timeout[s] = pol.next_timeout(self._timeout[s])
            self._arm(s, now)
            self._emit(self._pkt[s], s, True, acts)  # type: ignore[arg-type]
        return self._close(acts)

    def resume(self, now: float) -> list[Action]:
        """Continue a call that failed with ``CallTimeout``: every outstanding packet is
        resent unchanged, with a fresh retry budget. Correct at any time, since a delay is
        all the switch sees (docs/host.md, "Failure and recovery")."""
        if self.state != "failed":
            raise RuntimeError(f"call {self.call_id} is {self.state}: only a failed call resumes")
        self.state = "running"
        self.error = None
        acts: list[Action] = []
        for s in range(self.active):
            if self._pkt[s] is not None:
                self._attempts[s] += 1
                self._first[s] = now
                self._timeout[s] = self._retry.initial_timeout
                self._arm(s, now)
                self._emit(self._pkt[s], s, True, acts)  # type: ignore[arg-type]
        self._last_deadline = None
        return self._close(acts)

    def next_deadline(self) -> float | None:
        """When ``on_timer`` is next due (None: no timer needed)."""
        if self.state != "running":
            return None
        heap = self._heap
        while heap:
            _, s, ver = heap[0]
            if ver == self._version[s] and self._pkt[s] is not None:
                return heap[0][0]
            heapq.heappop(heap)
        return None

    def outstanding(self, now: float) -> list[StuckSlot]:
        """Every slot waiting for a result, with how long it has waited at ``now``."""
        return [self._describe(s, now) for s in range(self.active) if self._pkt[s] is not None]

    # ------------------------------------------------------------ for subclasses

    @abstractmethod
    def _start_slots(self, now: float, acts: list[Action]) -> None:
        """Send each slot's first packet (priming or first use)."""

    @abstractmethod
    def _on_result(
        self, s: int, h: wire.AggHeader, data: bytes, now: float, acts: list[Action]
    ) -> None:
        """Consume the result for slot s: then either ``_send_use`` or ``_slot_done``."""

    @abstractmethod
    def _agreed_of(self, b: int) -> int:
        """The agreed exponent block b was quantized with (float32 calls)."""

    @abstractmethod
    def agreed_exponents(self) -> np.ndarray:
        """uint8 per block: the agreed exponent each block was quantized with (float32
        calls, once done; 0 for int32 and for blocks no worker sent). A worker's own
        quantization error follows from it and its input alone (compression's error
        feedback, docs/compression.md)."""

    def _own_exponents(self) -> np.ndarray:
        """float32: the blocks' own exponents; a block with NaN/±Inf gets its NF_* bits in
        ``_nf`` and travels as zeros (the session's ``nonfinite="raise"`` raises instead,
        before anything is sent). Docs: protocol.md, "Non-finite values"."""
        own, self._nf = split_nonfinite(self.blocks, self.session.nonfinite)
        return own

    def _result_rows(self, out: np.ndarray | None, dtype: np.dtype, sparse: bool) -> np.ndarray:
        """The (B, K) rows the results land in: ``out`` reshaped when it is an array of the
        call's dtype that holds exactly B rows, C-contiguous and writable (the caller
        vouches that nothing else reads or writes it during the call: api.py passes it
        only when it is not the input); else the pool's."""
        shape = (self.nblocks, self.k)
        if (
            out is not None
            and out.dtype == dtype
            and out.size == self.nblocks * self.k
            and out.flags.c_contiguous
            and out.flags.writeable
        ):
            rows = out.reshape(shape)
            if sparse:
                rows.fill(0)
            self.into_out = True
            return rows
        self.into_out = False
        pool = self.session.buffers
        return pool.zeros(shape, dtype) if sparse else pool.empty(shape, dtype)

    def _assemble(self) -> np.ndarray:
        """The (B, K) result once every slot is done: every row was final on arrival."""
        return self._result

    def _send_use(
        self,
        s: int,
        now: float,
        acts: list[Action],
        *,
        block: int,
        exponent: int,
        nxt: int,
        payload: bytes | None,
        priming: bool = False,
        nonfinite: int = 0,
    ) -> None:
        """A new use of slot s: takes the session's next set for the slot and flips it."""
        ses = self.session
        sets = ses._sets
        st = int(sets[s])
        sets[s] = st ^ 1
        flags = wire.FLAG_NO_PAYLOAD if payload is None else 0
        hdr = wire.header_bytes(
            ses.msg_type,
            flags,
            ses.rank,
            ses.job_id,
            st,
            s,
            exponent,
            self.call_id,
            block,
            nxt,
            ses.job_key,
            nonfinite,
        )
        data = hdr if payload is None else hdr + payload
        if self._pkt[s] is None:
            self._open += 1
        self._pkt[s] = data
        self._set[s] = st
        self._block[s] = block
        self._priming[s] = priming
        self._attempts[s] = 1
        self._first[s] = now
        self._timeout[s] = self._retry.initial_timeout
        self._arm(s, now)
        self._emit(data, s, False, acts)

    def _slot_done(self, s: int, acts: list[Action]) -> None:
        self._pkt[s] = None
        self._version[s] += 1
        self._open -= 1
        if self._open == 0:
            self._finish(acts)

    def _store(self, b: int, h: wire.AggHeader, data: bytes) -> None:
        """Row b of the result from its result packet, final: int32 the lanes; float32
        the lanes dequantized with the block's agreed exponent, or NaN/±Inf when the
        result carried non-finite bits (int32 results carry none; the bits are ignored).
        A header-only result is a row of zeros."""
        row = self._result[b]
        if h.flags & wire.FLAG_NO_PAYLOAD:
            row.fill(0)
        else:
            lanes = np.frombuffer(data, dtype=">i4", count=self.k, offset=wire.HEADER_BYTES)
            if self.is_float:
                e = np.full(1, self._agreed_of(b), dtype=np.uint8)
                sums = lanes.astype(np.int32).reshape(1, self.k)
                dequantize(sums, e, self.session.n, out=row.reshape(1, self.k))
            else:
                row[:] = lanes
        if self.is_float:
            nf = h.nonfinite & wire.NF_MASK
            self._nf_out[b] = nf
            if nf:
                apply_nonfinite(row.reshape(1, self.k), self._nf_out[b : b + 1])

    # ------------------------------------------------------------ internals

    def _emit(self, data: bytes, s: int, retransmit: bool, acts: list[Action]) -> None:
        st = self.stats
        st.packets_sent += 1
        st.bytes_sent += len(data)
        if retransmit:
            st.retransmissions += 1
        acts.append(Send(data, s, retransmit))

    def _arm(self, s: int, now: float) -> None:
        deadline = min(now + self._timeout[s], self._first[s] + self._retry.give_up_after)
        self._version[s] += 1
        heapq.heappush(self._heap, (deadline, s, self._version[s]))

    def _close(self, acts: list[Action]) -> list[Action]:
        if self.state == "running":
            dl = self.next_deadline()
            if dl != self._last_deadline:
                self._last_deadline = dl
                acts.append(SetTimer(dl))
        return acts

    def _finish(self, acts: list[Action]) -> None:
        flat = self._assemble().reshape(-1)
        result = flat[: self.m].reshape(self.shape)
        self.state = "done"
        self.result = result
        self._heap.clear()
        self.blocks = self.blocks[:0]  # the input copy is no longer needed
        if self._owned is not None:
            self.session.buffers.give(self._owned)
            self._owned = None
        self._be = None
        self._stop(acts)
        acts.append(Done(result, self.stats))

    def release(self, kept: object) -> None:
        """The caller is done with this call's result and hands ``kept`` on (what it made
        of the result): unless ``kept`` may share memory with the result rows, or they are
        the caller's ``out``, they go back to the session's pool for the next call, and
        ``result`` is cleared (docs/host.md, "Buffers")."""
        rows = self._result
        if self.state != "done" or rows.size == 0 or self.into_out:
            return
        if isinstance(kept, np.ndarray) and np.may_share_memory(kept, rows):
            return
        self.result = None
        self._result = rows[:0]
        self.session.buffers.give(rows)

    def _describe(self, s: int, now: float) -> StuckSlot:
        return StuckSlot(
            slot=s,
            set=self._set[s],
            block=self._block[s],
            priming=self._priming[s],
            attempts=self._attempts[s],
            waiting=max(0.0, now - self._first[s]),
        )

    def _fail(self, stuck: list[int], now: float) -> list[Action]:
        self.state = "failed"
        stuck.sort()
        st = tuple(self._describe(s, now) for s in stuck)
        flight = tuple(self._describe(s, now) for s in range(self.active) if self._pkt[s])
        err = self._timeout_error(st, flight)
        self.error = err
        return self._stop([]) + [Failed(err, self.stats)]

    def _timeout_error(
        self, st: tuple[StuckSlot, ...], flight: tuple[StuckSlot, ...]
    ) -> CallTimeout:
        ses = self.session
        listed = ", ".join(str(x) for x in st[:_MAX_LISTED])
        more = f", and {len(st) - _MAX_LISTED} more" if len(st) > _MAX_LISTED else ""
        pol = self._retry
        limit = (
            f"{pol.give_up_after:g} s"
            if pol.max_attempts is None
            else f"{pol.give_up_after:g} s or {pol.max_attempts} sends"
        )
        msg = (
            f"{self.kind} call {self.call_id} (job {ses.job_id}, rank {ses.rank} of {ses.n}): "
            f"{len(st)} of {self.active} slots got no result within {limit}: {listed}{more}. "
            f"Some worker is not contributing; resume() once it is back, or reset the job."
        )
        return CallTimeout(msg, self.call_id, st, flight)

    def _stop(self, acts: list[Action]) -> list[Action]:
        """No more timers for this call (until a resume)."""
        if self._last_deadline is not None:
            acts.append(SetTimer(None))
            self._last_deadline = None
        return acts

    def _protocol_error(self, message: str) -> ProtocolError:
        ses = self.session
        return ProtocolError(
            f"{self.kind} call {self.call_id} (job {ses.job_id}, rank {ses.rank}): {message}",
            self.call_id,
        )
