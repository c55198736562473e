"""Test tensors, their reference sum and the accuracy check of ``p4reduce check``.

Pure numpy, no I/O: the parent of a check and every worker call ``rank_data`` with the same
arguments and get the same array, so nothing but the seed travels to the workers.

- float32: standard normal values;
- int32: uniform over the whole int32 range, so the sum of two or more ranks wraps (the
  reference wraps the same way: the exact sum modulo 2^32, as int32 arithmetic and the
  switch's 32-bit add do);
- density D < 1: whole K-element blocks are zeroed, so that round(D * B) of the B blocks
  (at least one when D > 0) stay non-zero on each rank, chosen independently per rank.

The bound is docs/protocol.md "Quantization": per element of block b,
``n^2 * 2^(E - 159)`` with E the exponent the switch agrees on for the block, plus half an
ulp of the float32 result. Dense: E is the maximum over ranks of block b's exponent, i.e.
the exponent of the element-wise maximum of |x| over ranks. Sparse: every block of a
stride class (b mod S) is quantized with the class exponent, the maximum of E over the
class's blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from p4reduce.host import quantize

DTYPES = ("float32", "int32")
MODES = ("dense", "sparse")


def rank_data(
    seed: int, rank: int, elements: int, dtype: str, density: float = 1.0, k: int = 64
) -> np.ndarray:
    """Rank ``rank``'s tensor: deterministic in (seed, rank, elements, dtype, density, k)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    rng = np.random.default_rng([seed, rank])
    if dtype == "float32":
        x = rng.standard_normal(elements, dtype=np.float32)
    else:
        x = rng.integers(-(2**31), 2**31, size=elements, dtype=np.int64).astype(np.int32)
    if density < 1.0:
        b = quantize.block_count(elements, k)
        keep = min(b, max(1, round(density * b))) if density > 0 else 0
        mask = np.zeros(b, dtype=bool)
        mask[rng.choice(b, size=keep, replace=False)] = True
        x.reshape(-1)[~np.repeat(mask, k)[:elements]] = 0
    return x


def reference(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """float32 inputs: the float64 sum. int32: the exact sum modulo 2^32, as int32."""
    if arrays[0].dtype == np.int32:
        total = np.zeros(arrays[0].shape, dtype=np.int64)
        for a in arrays:
            total += a
        return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    total = np.zeros(arrays[0].shape, dtype=np.float64)
    for a in arrays:
        total += a
    return total


def agreed_exponents(arrays: Sequence[np.ndarray], k: int, mode: str, slots: int) -> np.ndarray:
    """The exponent the switch agrees on for every block (uint8, B entries)."""
    peak = np.zeros(arrays[0].size, dtype=np.float32)
    for a in arrays:
        np.maximum(peak, np.abs(np.ravel(a)), out=peak)
    e = quantize.block_exponents(quantize.to_blocks(peak, k))
    if mode == "sparse" and e.size:
        b = e.size
        rows = -(-b // slots)
        grid = np.zeros(rows * slots, dtype=np.uint8)
        grid[:b] = e
        per_class = grid.reshape(rows, slots).max(axis=0)
        e = per_class[np.arange(b) % slots]
    return e


@dataclass
class Comparison:
    ok: bool
    max_abs_error: float
    bound: float  # the largest per-element tolerance (0 for int32)
    mismatches: int  # elements outside their tolerance


class Checker:
    """The reference and per-element tolerance of one set of inputs, computed once; then
    ``check(result)`` for each worker's result (exact for int32)."""

    def __init__(
        self, arrays: Sequence[np.ndarray], *, k: int = 64, mode: str = "dense", slots: int = 64
    ) -> None:
        self.dtype = arrays[0].dtype
        self.ref = np.ravel(reference(arrays))
        self.tol: np.ndarray | None = None
        if self.dtype == np.float32:
            e = agreed_exponents(arrays, k, mode, slots)
            per_block = np.asarray(quantize.bound(len(arrays), e), dtype=np.float64)
            self.tol = np.repeat(per_block, k)[: self.ref.size]

    def check(self, result: np.ndarray) -> Comparison:
        result = np.ravel(result)
        if result.shape != self.ref.shape or result.dtype != self.dtype:
            raise ValueError(
                f"result is {result.dtype} with {result.size} elements, "
                f"expected {self.dtype} with {self.ref.size}"
            )
        if self.tol is None:
            err = np.abs(result.astype(np.int64) - self.ref.astype(np.int64))
            bad = int(np.count_nonzero(err))
            return Comparison(bad == 0, float(err.max(initial=0)), 0.0, bad)
        # plus half an ulp of the float32 result (docs/host.md, "Error bound"); the factor
        # covers the float64 reference's own rounding (below 2^-21 of the bound for n <= 32)
        tol = self.tol * (1 + 2.0**-20) + 0.5 * np.spacing(np.abs(result)).astype(np.float64)
        err = np.abs(result.astype(np.float64) - self.ref)
        err[~np.isfinite(err)] = np.inf
        bad = int(np.count_nonzero(~(err <= tol)))
        return Comparison(bad == 0, float(err.max(initial=0.0)), float(tol.max(initial=0.0)), bad)


def compare(
    result: np.ndarray,
    arrays: Sequence[np.ndarray],
    *,
    k: int = 64,
    mode: str = "dense",
    slots: int = 64,
) -> Comparison:
    """Check one all-reduce result against the inputs (exact for int32)."""
    return Checker(arrays, k=k, mode=mode, slots=slots).check(result)
