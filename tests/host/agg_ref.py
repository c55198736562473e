"""Reference results for a job's tensors, computed directly from docs/protocol.md
("Quantization", "Sparse", "Non-finite values") with numpy, and the packet counts a
loss-free call sends."""

from __future__ import annotations

import numpy as np
from p4reduce.host import quantize as Q


def wrap_sum(tensors: list[np.ndarray]) -> np.ndarray:
    s = np.sum([t.astype(np.int64) for t in tensors], axis=0)
    return (((s + 2**31) % 2**32) - 2**31).astype(np.int32)


def finite_blocks(t: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """t's (B, K) blocks with every block holding NaN/±Inf zeroed, and per block whether it
    held a NaN, a +Inf, a -Inf ("Non-finite values": such a block travels as zeros)."""
    b = Q.to_blocks(t, k).copy()
    nan, pos, neg = np.isnan(b).any(1), (b == np.inf).any(1), (b == -np.inf).any(1)
    b[nan | pos | neg] = 0
    return b, nan, pos, neg


def agreed_exponents(tensors: list[np.ndarray], k: int, slots: int, sparse: bool) -> np.ndarray:
    """Per block, the exponent every worker quantizes with: the maximum over the workers of
    the block's exponent (dense) or of the class's largest exponent (sparse)."""
    own = np.max([Q.block_exponents(finite_blocks(t, k)[0]) for t in tensors], axis=0)
    if not sparse:
        return own
    b = own.size
    cls = np.zeros(slots, dtype=np.uint8)
    np.maximum.at(cls, np.arange(b) % slots, own)
    return cls[np.arange(b) % slots]


def reference(tensors: list[np.ndarray], k: int, slots: int, sparse: bool) -> np.ndarray:
    t0 = tensors[0]
    if t0.dtype == np.int32:
        return wrap_sum(tensors)
    n = len(tensors)
    e = agreed_exponents(tensors, k, slots, sparse)
    total = np.zeros((e.size, k), dtype=np.int64)
    nan = np.zeros(e.size, dtype=bool)
    pos, neg = nan.copy(), nan.copy()
    for t in tensors:
        b, bn, bp, bm = finite_blocks(t, k)
        nan |= bn
        pos |= bp
        neg |= bm
        total += Q.quantize(b, e, n)
    assert np.abs(total).max(initial=0) <= 2**31 - 1, "the sum of quantized values overflowed"
    out = Q.dequantize(total.astype(np.int32), e, n)
    # a block with a non-finite input anywhere is non-finite as a whole on every worker
    out[pos] = np.inf
    out[neg] = -np.inf
    out[nan | (pos & neg)] = np.nan
    return out.reshape(-1)[: t0.size].reshape(t0.shape)


def first_transmissions(tensors: list[np.ndarray], k: int, slots: int, sparse: bool) -> int:
    """Packets each worker sends in a loss-free call (retransmissions excluded)."""
    t0 = tensors[0]
    b = -(-t0.size // k)
    primed = min(slots, b)
    if sparse:
        union = np.zeros(b, dtype=bool)
        for t in tensors:
            union |= Q.to_blocks(t, k).any(axis=1)
        return primed + int(union.sum())
    return b + primed if t0.dtype == np.float32 else b
