"""Reference results for a job's tensors, computed directly from docs/protocol.md
("Quantization", "Sparse") with numpy, and the packet counts a loss-free call sends."""

from __future__ import annotations

import numpy as np
from p4reduce.host import quantize as Q


def wrap_sum(tensors: list[np.ndarray]) -> np.ndarray:
    s = np.sum([t.astype(np.int64) for t in tensors], axis=0)
    return (((s + 2**31) % 2**32) - 2**31).astype(np.int32)


def agreed_exponents(tensors: list[np.ndarray], k: int, slots: int, sparse: bool) -> np.ndarray:
    """Per block, the exponent every worker quantizes with: the maximum over the workers of
    the block's exponent (dense) or of the class's largest exponent (sparse)."""
    own = np.max([Q.block_exponents(Q.to_blocks(t, k)) for t in tensors], axis=0)
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
    for t in tensors:
        b = Q.to_blocks(t, k)
        total += Q.quantize(b, e, n)
    assert np.abs(total).max(initial=0) <= 2**31 - 1, "the sum of quantized values overflowed"
    out = Q.dequantize(total.astype(np.int32), e, n)
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
