"""Sparse calls (docs/protocol.md, "Sparse"): OmniReduce's rule in its switch-friendly form.

A block is non-zero on a worker when any of its elements is. Slot s primes with a
header-only packet naming the first block ≥ s of its stride class that is non-zero here
(``next``) and this worker's largest exponent over those blocks; the result carries m,
the first block of the class non-zero on any worker, and E_s, the exponent every block of
the class is quantized with in this call. Then, while m is not ``NEXT_END``, every worker
contributes block m (header-only where it is zero here) with ``next`` = its next non-zero
block of the class after m; the result brings the sum and the new minimum. A result with
``FLAG_END`` ends the slot. Blocks zero on every worker never travel. A block holding
NaN/±Inf counts as non-zero (it must travel) but goes header-only with its ``nonfinite``
bits and own exponent 0 (docs/protocol.md, "Non-finite values").

The non-zero bitmap, every block's next non-zero block of its class and the class
exponents are computed once, vectorised, when the call is created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import wire
from ..quantize import quantize_row
from .call import Call
from .events import Action

if TYPE_CHECKING:
    from .session import Session

_END = wire.NEXT_END


class SparseCall(Call):
    kind = "sparse"

    def __init__(self, session: Session, tensor: np.ndarray, out: np.ndarray | None = None) -> None:
        super().__init__(session, tensor, out)
        nb, ns = self.nblocks, self.nslots
        if self.is_float:
            self._own = self._own_exponents()  # NaN/±Inf: bits in _nf (or raises up front)
            nonzero = self._own != 0
        else:
            self._own = np.zeros(nb, dtype=np.uint8)
            nonzero = self.blocks.any(axis=1)
            self._be = self.blocks.astype(">i4")  # the payloads, big-endian, in one pass
            self.blocks = self.blocks[:0]  # (possibly the caller's memory: not kept)
        self._nonzero = nonzero  # blocks with a payload
        travels = nonzero | (self._nf != 0) if self.is_float else nonzero
        # Grid of R rows × S columns: block r*S + s is row r of slot s's class.
        rows = -(-nb // ns) if nb else 0
        idx = np.full(rows * ns, _END, dtype=np.int64)
        idx[:nb] = np.where(travels, np.arange(nb, dtype=np.int64), _END)
        grid = idx.reshape(rows, ns)
        # incl[r, s]: the first non-zero block of class s at row ≥ r.
        incl = np.minimum.accumulate(grid[::-1], axis=0)[::-1] if rows else grid
        after = np.full(rows * ns, _END, dtype=np.int64)
        if rows > 1:
            after[: (rows - 1) * ns] = incl[1:].reshape(-1)
        self._after = after[:nb]  # next_w(b): first non-zero block of b's class after b
        self._first_nonzero = incl[0] if rows else np.full(ns, _END, dtype=np.int64)
        own = np.zeros(rows * ns, dtype=np.uint8)
        own[:nb] = self._own
        self._class_own = own.reshape(rows, ns).max(axis=0) if rows else own[:0]
        self._class_agreed = np.zeros(ns, dtype=np.uint8)

    def _start_slots(self, now: float, acts: list[Action]) -> None:
        for s in range(self.active):
            self._send_use(
                s,
                now,
                acts,
                block=s,
                exponent=int(self._class_own[s]),
                nxt=int(self._first_nonzero[s]),
                payload=None,
                priming=True,
            )

    def _on_result(
        self, s: int, h: wire.AggHeader, data: bytes, now: float, acts: list[Action]
    ) -> None:
        if self._priming[s]:
            self._class_agreed[s] = h.exponent if self.is_float else 0
            low = s
        else:
            m = self._block[s]
            self._store(m, h, data)
            low = m + 1
        nxt = h.next
        if nxt == _END:
            self._slot_done(s, acts)
            return
        if nxt < low or nxt >= self.nblocks or nxt % self.nslots != s:
            raise self._protocol_error(
                f"the result for slot {s} names next block {nxt}, which is not a later block "
                f"of the slot's class among {self.nblocks} blocks: the workers disagree on "
                f"the tensor's size or data layout"
            )
        payload: bytes | None = None
        nf = int(self._nf[nxt]) if self.is_float else 0
        exponent = int(self._class_agreed[s])
        if self._nonzero[nxt]:
            if self.is_float:
                own = int(self._own[nxt])
                if own > exponent:
                    self.stats.clamped_blocks += 1
                q = quantize_row(self.blocks[nxt], exponent, self.session.n, own)
                payload = q.astype(">i4").tobytes()
            else:
                payload = self._be[nxt].tobytes()  # type: ignore[index]
        self._send_use(
            s,
            now,
            acts,
            block=nxt,
            exponent=exponent,
            nxt=int(self._after[nxt]),
            payload=payload,
            nonfinite=nf,
        )

    def _agreed_of(self, b: int) -> int:
        return int(self._class_agreed[b % self.nslots])

    def agreed_exponents(self) -> np.ndarray:
        return self._class_agreed[np.arange(self.nblocks) % self.nslots]
