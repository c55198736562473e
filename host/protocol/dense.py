"""Dense calls (docs/protocol.md, "Block-to-slot mapping", "Dense").

Block b travels in slot ``b mod S``; slot s carries blocks s, s + S, … one use each.
Float tensors first prime every slot with a header-only packet carrying the worker's
exponent of block s; the result carries E(s), the maximum. Each use then carries block b
quantized with E(b) and the worker's exponent of block b + S (0 past the end), so its
result brings the sum of block b and E(b + S): the exponents run one use ahead. int32
tensors skip priming and send the values themselves with exponent 0.

A block that is zero on this worker goes header-only (``FLAG_NO_PAYLOAD``): the switch
counts it as K zeros. So does a block holding NaN/±Inf, with its ``nonfinite`` bits (and
own exponent 0): every worker's result of that block is then NaN or the infinity.
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


class DenseCall(Call):
    kind = "dense"

    def __init__(self, session: Session, tensor: np.ndarray, out: np.ndarray | None = None) -> None:
        super().__init__(session, tensor, out)
        if self.is_float:
            # Also the non-finite split (or check: it raises before anything is sent).
            self._own = self._own_exponents()
            self._agreed = np.zeros(self.nblocks, dtype=np.uint8)
            self._nonzero = self._own != 0
        else:
            self._nonzero = self.blocks.any(axis=1)
            self._be = self.blocks.astype(">i4")  # the payloads, big-endian, in one pass
            self.blocks = self.blocks[:0]  # (possibly the caller's memory: not kept)

    def _start_slots(self, now: float, acts: list[Action]) -> None:
        for s in range(self.active):
            if self.is_float:
                self._send_use(
                    s,
                    now,
                    acts,
                    block=s,
                    exponent=int(self._own[s]),
                    nxt=0,
                    payload=None,
                    priming=True,
                )
            else:
                self._send_block(s, s, now, acts)

    def _send_block(self, s: int, b: int, now: float, acts: list[Action]) -> None:
        payload: bytes | None = None
        nf = 0
        if self.is_float:
            nf = int(self._nf[b])
            nb = b + self.nslots
            exponent = int(self._own[nb]) if nb < self.nblocks else 0
            if self._nonzero[b]:
                e, own = int(self._agreed[b]), int(self._own[b])
                if own > e:
                    self.stats.clamped_blocks += 1
                payload = (
                    quantize_row(self.blocks[b], e, self.session.n, own).astype(">i4").tobytes()
                )
        else:
            exponent = 0
            if self._nonzero[b]:
                payload = self._be[b].tobytes()  # type: ignore[index]
        self._send_use(
            s, now, acts, block=b, exponent=exponent, nxt=0, payload=payload, nonfinite=nf
        )

    def _on_result(
        self, s: int, h: wire.AggHeader, data: bytes, now: float, acts: list[Action]
    ) -> None:
        if self._priming[s]:
            self._agreed[s] = h.exponent
            self._send_block(s, s, now, acts)
            return
        b = self._block[s]
        self._store(b, h, data)
        nb = b + self.nslots
        if self.is_float:
            if nb < self.nblocks:
                self._agreed[nb] = h.exponent
            elif h.exponent != 0:
                raise self._protocol_error(
                    f"the result of block {b}, the last of slot {s}, carries exponent "
                    f"{h.exponent} for block {nb}: the workers disagree on the tensor's size "
                    f"({self.nblocks} blocks here)"
                )
        if nb < self.nblocks:
            self._send_block(s, nb, now, acts)
        else:
            self._slot_done(s, acts)

    def _agreed_of(self, b: int) -> int:
        return int(self._agreed[b])

    def agreed_exponents(self) -> np.ndarray:
        if not self.is_float:
            return np.zeros(self.nblocks, dtype=np.uint8)
        return self._agreed.copy()
