"""The switch's quantization error, as one worker can compute it alone.

The switch sums integers: every worker sends ``q = rint(x · f)`` with ``f = 2^(158 − E) / n``
and the block's *agreed* exponent E (the maximum over the workers, docs/protocol.md
"Quantization"), and the result is ``Σ q / f``. So the result misses exactly
``Σ_r (x_r − q_r / f)``, and each term is one worker's own: its input and the agreed
exponent give it, with no packet from anyone else. Block top-k adds it to the worker's
residual (error feedback), so what the switch rounds away travels in a later step
(docs/compression.md, "The switch's quantization error").

Not covered: the one rounding of the exact sum ``Σ q / f`` to float32, which a float32
all-reduce makes too and which no worker can compute without the others' values.
"""

from __future__ import annotations

import numpy as np

from ..quantize import dequantize, quantize


def quantization_error(blocks: np.ndarray, exponents: np.ndarray, n: int) -> np.ndarray:
    """``x − q / f`` of (B, K) finite float32 ``blocks`` quantized with their agreed
    ``exponents`` (B,) for ``n`` workers, as the switch paths quantize them: float32
    (B, K). A block whose agreed exponent is below its own (a disagreeing peer) is clamped
    as on the wire, and its clamp error comes back too."""
    x = np.ascontiguousarray(blocks, dtype=np.float32)
    e = np.asarray(exponents, dtype=np.uint8)
    if x.ndim != 2 or e.shape != (x.shape[0],):
        raise ValueError(f"quantization_error: blocks {x.shape} with {e.shape} exponents")
    if x.shape[0] == 0:
        return np.zeros_like(x)
    q = quantize(x, e, n)
    sent = dequantize(q, e, n, dtype=np.float64)  # exact: q / f
    return (x.astype(np.float64) - sent).astype(np.float32)
