"""Block floating point for the wire, exactly as docs/protocol.md "Quantization" fixes it.

A float32 tensor travels as int32 blocks of K elements, each with a biased exponent:

- exponent of a block x: 0 when every element is zero, else
  ``max(frexp_exponent(max|x|), -126) + 127`` (1 .. 255), so ``max|x| < 2^(E-127)``;
- agreed exponent E: the maximum over the workers (the switch takes it);
- scale ``f = 2^(158-E) / n``; each worker sends ``q = round_half_even(x * f)``, clamped to
  ``±floor((2^31-1)/n)``; the sum dequantizes as ``sum(q) / f``;
- error per element ``|sum(q)/f - sum(x)| <= n^2 * 2^(E-127-32)`` (``bound``).

Everything is vectorised over all blocks at once; the only Python loop walks chunks of
thousands of blocks so the temporaries stay in the CPU's L2 cache.

Exactness (docs/host.md, "Quantization"):

- ``q`` is the round-half-even of the *exact* product ``x * 2^(158-E) / n``. When n is a
  power of two, f is a power of two: ``x * f`` is exact in float32 (a power-of-two scale
  only moves the exponent; a product too small to be normal is far below 0.5 and rounds
  to 0 either way), so the whole path is float32. Otherwise the product
  ``x * (2^(158-E) * fl(1/n))`` is formed in float64: its error (< 2^-52 relative) is far
  below the distance of any non-tie quotient to a half-integer, and an exact tie comes
  out exactly because ``n * fl(1/n)`` is within 2^-54 of 1 for every n <= 32 (checked
  per n; other n divide instead), so rounding it gives the exact result.
- ``sum(q) / f = sum(q) * n * 2^(E-158)`` is rounded once to float32: for a power-of-two n
  the int32 to float32 conversion is the only rounding (the power-of-two scale is exact);
  otherwise the product is exact in float64 (|sum(q) * n| < 2^37) and rounded once to
  float32.
- Blocks whose scale leaves float32's normal range (E < 32 - log2 n: only blocks with
  every |x| < 2^-96) and blocks whose agreed exponent is below the worker's own (a peer or
  switch error; the clamp applies) go through the float64 path, row by row in a vector op.

Speed (docs/host.md, "Speed"): where the compiled kernel ``_quantize_c`` (host/_quantize_c.c,
built by setup.py) is importable, ``block_exponents``, ``quantize`` and ``dequantize`` hand
contiguous, aligned native arrays to it: one pass per function, each element through the
same IEEE operations as the numpy code below, so the results are bit for bit the same.
Anything else (other layouts or out dtypes, overlapping arrays, no kernel) runs the numpy
code, which stays the definition; ``_C = None`` forces it. ``quantize_row`` stays numpy:
for one block the call overheads dominate either way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from fractions import Fraction

import numpy as np

from .. import contracts

try:
    from . import _quantize_c as _C
except ImportError as _exc:  # a source checkout without a build, or a platform without one
    _C = None
    logging.getLogger(__name__).debug(
        "compiled quantize kernel unavailable (%s): numpy code only", _exc
    )

INT32_MAX = 2**31 - 1

_ABS_MASK = np.uint32(0x7FFFFFFF)
_MIN_NORMAL_BITS = 0x00800000  # smallest normal float32, as bits
_INF_BITS = 0x7F800000
_CHUNK_ELEMENTS = 1 << 16  # elements per chunk: 256 KiB of float32, well inside L2
# the kernels' statuses and modes, by position in p4reduce/contracts/spec.py (the one source
# host/_quantize_c.c's enums are generated from)
_OK, _NONFINITE, _REDO = (contracts.KERNEL_STATUSES.index(s) for s in ("ok", "nonfinite", "redo"))
_Q_F32_MUL, _Q_F64_MUL, _Q_F64_DIV = (
    contracts.QUANTIZE_MODES.index(m) for m in ("f32_mul", "f64_mul", "f64_div")
)
_D_F32, _D_F64_TO_F32, _D_F64 = (
    contracts.DEQUANTIZE_MODES.index(m) for m in ("f32", "f64_to_f32", "f64")
)


class NonFiniteError(ValueError):
    """The input holds NaN or ±Inf; nothing may be sent (docs/protocol.md)."""

    def __init__(self, count: int, first: int, value: float) -> None:
        super().__init__(
            f"tensor has {count} non-finite element{'s' if count != 1 else ''} "
            f"(NaN or ±Inf); the first at flat index {first} is {value!r}"
        )
        self.count = count
        self.first = first


# ------------------------------------------------------------------ blocks


def block_count(m: int, k: int) -> int:
    """B = ceil(M / K)."""
    return -(-m // k)


def to_blocks(x: np.ndarray, k: int) -> np.ndarray:
    """The flattened tensor as a C-contiguous (B, K) array, the last block zero-padded."""
    flat = np.ravel(x)
    b = block_count(flat.size, k)
    if flat.size == b * k and flat.flags.c_contiguous:
        return flat.reshape(b, k)
    out = np.empty(b * k, dtype=flat.dtype)
    out[: flat.size] = flat
    out[flat.size :] = 0
    return out.reshape(b, k)


def check_finite(x: np.ndarray) -> None:
    """Raise NonFiniteError (naming the count and the first flat index) for NaN/±Inf."""
    flat = np.ravel(x)
    if flat.dtype.kind != "f":
        return
    bad = ~np.isfinite(flat)
    if bad.any():
        first = int(np.argmax(bad))
        raise NonFiniteError(int(np.count_nonzero(bad)), first, float(flat[first]))


# the nonfinite byte's bits (docs/protocol.md, "Non-finite values"; mirrors p4reduce.host.wire)
NF_NAN, NF_POS_INF, NF_NEG_INF = 0x1, 0x2, 0x4
NONFINITE_MODES = ("propagate", "raise")


def check_nonfinite_mode(mode: str) -> str:
    """``mode`` if it is one of NONFINITE_MODES, else a ValueError naming the choices."""
    if mode not in NONFINITE_MODES:
        raise ValueError(f"nonfinite={mode!r}: one of {', '.join(map(repr, NONFINITE_MODES))}")
    return mode


def nonfinite_bits(blocks: np.ndarray) -> np.ndarray:
    """Per row of (B, K) float32 blocks, the NF_* bits of its non-finite elements (uint8)."""
    b = blocks.shape[0]
    bits = np.zeros(b, dtype=np.uint8)
    if not b:
        return bits
    # one pass over the bit patterns finds the rows (all-ones exponent field: NaN or ±Inf),
    # then only those few rows are classified
    rows = _chunk_rows(blocks.shape[1])
    bad = np.zeros(b, dtype=bool)
    u = blocks.view(np.uint32)
    for r0 in range(0, b, rows):
        bad[r0 : r0 + rows] = ((u[r0 : r0 + rows] & _ABS_MASK) >= _INF_BITS).any(axis=1)
    idx = np.flatnonzero(bad)
    if idx.size:
        x = blocks[idx]
        bits[idx] = (
            np.isnan(x).any(axis=1) * NF_NAN
            | (x == np.inf).any(axis=1) * NF_POS_INF
            | (x == -np.inf).any(axis=1) * NF_NEG_INF
        ).astype(np.uint8)
    return bits


def split_nonfinite(blocks: np.ndarray, mode: str = "propagate") -> tuple[np.ndarray, np.ndarray]:
    """The own exponents and the NF_* bits of (B, K) float32 blocks.

    Finite blocks: their exponents and bits 0, at the cost of ``block_exponents``. Where a
    block holds NaN or ±Inf, ``mode="raise"`` raises NonFiniteError; ``"propagate"`` sets
    its bits, overwrites the whole row with zeros **in place** (so ``blocks`` must be the
    caller's own copy) and gives it exponent 0: it travels as a zero block plus its bits.
    """
    b = blocks.shape[0]
    if mode == "raise":
        return block_exponents(blocks), np.zeros(b, dtype=np.uint8)
    if (
        _C is not None
        and b
        and blocks.shape[1]
        and blocks.flags.c_contiguous
        and blocks.flags.aligned
    ):
        e = np.empty(b, dtype=np.uint8)
        if _C.exponents(blocks, blocks.shape[1], e) == 0:  # finite: the common case, one pass
            return e, np.zeros(b, dtype=np.uint8)
    bits = nonfinite_bits(blocks)
    blocks[bits != 0] = 0
    return block_exponents(blocks), bits


def apply_nonfinite(out: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Overwrite each row of the (B, K) float result ``out`` whose NF_* bits are set: NaN
    when NF_NAN or both infinities are set (+Inf + -Inf is NaN), else the one infinity."""
    idx = np.flatnonzero(bits & (NF_NAN | NF_POS_INF | NF_NEG_INF))
    if idx.size:
        v = bits[idx]
        nan = (v & NF_NAN != 0) | ((v & NF_POS_INF != 0) & (v & NF_NEG_INF != 0))
        fill = np.where(nan, np.nan, np.where(v & NF_POS_INF != 0, np.inf, -np.inf))
        out[idx] = fill.astype(out.dtype)[:, None]
    return out


def _chunk_rows(k: int, itemsize: int = 4) -> int:
    """Rows per chunk: temporaries of about _CHUNK_ELEMENTS float32s (half the rows for
    float64 temporaries), at least one row."""
    return max(1, _CHUNK_ELEMENTS * 4 // (itemsize * k))


@contextlib.contextmanager
def _row_buffers(k: int) -> Iterator[None]:
    """Around ufunc calls that scale (rows, K) blocks by a (rows, 1) column.

    With numpy's default 8192-element buffers such a call copies the blocks and repeats
    the column into its buffers, which costs more than the multiply. With one-row buffers
    the inner loop runs once per row on the arrays themselves: for K >= 256 that makes
    the call about twice as fast; for K = 64 the per-row calls cost more than the copies,
    so the default stays. Only speed changes, never a result. (numpy 1.x wants a multiple
    of 16; numpy 2 also restores the size when the enclosing errstate exits.)
    """
    if k < 256 or k % 16:
        yield
        return
    old = np.setbufsize(k)
    try:
        yield
    finally:
        np.setbufsize(old)


def _kernel_takes(
    out: np.ndarray, dtype: np.dtype | type, src: np.ndarray, *, in_place: bool = False
) -> bool:
    """Whether the kernel can read src (already C-contiguous) and write out: native arrays
    it can take as plain buffers, out of the exact dtype and shape, not overlapping src,
    or (``in_place``) exactly src's memory, which the element-wise kernel overwrites as
    it goes."""
    return (
        _C is not None
        and src.size > 0
        and src.flags.aligned
        and out.dtype == dtype
        and out.shape == src.shape
        and out.flags.c_contiguous
        and out.flags.aligned
        and out.flags.writeable
        and (not np.may_share_memory(out, src) or (in_place and _same_memory(out, src)))
    )


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two C-contiguous arrays cover the same bytes, item for item."""
    return (
        a.ctypes.data == b.ctypes.data
        and a.itemsize == b.itemsize
        and a.shape == b.shape
        and a.flags.c_contiguous
        and b.flags.c_contiguous
    )


def block_exponents(blocks: np.ndarray) -> np.ndarray:
    """The biased exponent of every row of a (B, K) float32 array, as uint8.

    Computed on the bit patterns: with ``m`` the largest ``|x|`` bits of the block,
    E = 0 when m == 0, 1 when x is denormal-only, else ``(m >> 23) + 1`` (the frexp
    exponent of a normal float32 with biased exponent field e is e - 126). Raises
    NonFiniteError when a block holds NaN or ±Inf.
    """
    if blocks.dtype != np.float32 or blocks.ndim != 2:
        raise TypeError(f"(B, K) float32 blocks expected, got {blocks.dtype} {blocks.shape}")
    b, k = blocks.shape
    blocks = np.ascontiguousarray(blocks)
    if _C is not None and b and k and blocks.flags.aligned:
        e = np.empty(b, dtype=np.uint8)
        if _C.exponents(blocks, k, e) == 0:
            return e
        check_finite(blocks)  # the kernel met NaN or ±Inf: raises NonFiniteError
    m = np.empty(b, dtype=np.uint32)
    if b:
        rows = _chunk_rows(k)
        bits = blocks.view(np.uint32).reshape(-1)
        tmp = np.empty(min(rows, b) * k, dtype=np.uint32)
        starts = np.arange(0, min(rows, b) * k, k)
        for r0 in range(0, b, rows):
            r1 = min(b, r0 + rows)
            t = tmp[: (r1 - r0) * k]
            np.bitwise_and(bits[r0 * k : r1 * k], _ABS_MASK, out=t)
            m[r0:r1] = np.maximum.reduceat(t, starts[: r1 - r0])
    if b and int(m.max()) >= _INF_BITS:
        check_finite(blocks)
    e = (m >> np.uint32(23)).astype(np.uint8) + np.uint8(1)
    e[m < _MIN_NORMAL_BITS] = 1
    e[m == 0] = 0
    return e


# ------------------------------------------------------------------ scale and bound


def _pow2(n: int) -> int | None:
    """log2(n) when n is a power of two, else None."""
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def _check_n(n: int) -> None:
    if not isinstance(n, int | np.integer) or not 1 <= n <= 2**16:
        raise ValueError(f"worker count {n!r}: a positive integer expected")


# The largest n for which a row quantized at (or above) its own exponent provably stays
# within the clamp without applying it (see _Tables).
UNCLAMPED_MAX_N = 255


def clamp_limit(n: int) -> int:
    """``floor((2^31 - 1) / n)``: hosts clamp every q to plus or minus this."""
    return INT32_MAX // n


def scale(n: int, exponent: int | np.ndarray) -> float | np.ndarray:
    """``f = 2^(158 - E) / n`` in float64 (informative; the functions here never multiply
    by a rounded f, see the module's notes)."""
    e = np.asarray(exponent, dtype=np.int64)
    f = np.ldexp(1.0, 158 - e) / n
    return float(f) if f.ndim == 0 else f


def bound(n: int, exponent: int | np.ndarray) -> float | np.ndarray:
    """Quantization error bound per element: ``n^2 * 2^(E - 127 - 32)`` (0 for E = 0).

    This bounds ``|sum(q)/f - sum(x)|`` with ``sum(q)/f`` taken exactly (``dequantize``
    with ``dtype=np.float64`` is exact); a float32 result adds at most half an ulp of its
    own value (docs/host.md).
    """
    e = np.asarray(exponent, dtype=np.int64)
    r = np.where(e == 0, 0.0, np.ldexp(float(n) * n, e - 159))
    return float(r) if r.ndim == 0 else r


# ------------------------------------------------------------------ per-n tables


@functools.lru_cache(maxsize=64)
def _tables(n: int) -> _Tables:
    return _Tables(n)


class _Tables:
    """Per worker count n, everything that depends only on the exponent E (0 .. 255), so
    the per-block work is one table lookup instead of a handful of vector ops over B."""

    def __init__(self, n: int) -> None:
        e = np.arange(256, dtype=np.int64)
        self.p = p = _pow2(n)
        if p is not None:
            s = 158 - p - e  # quantize: x * 2^s, exact in float32 while 2^s is normal
            self.q_scale = np.ldexp(np.float32(1.0), np.minimum(s, 127)).astype(np.float32)
            self.q_irregular = s > 127
            self.q_regular_from = 31 - p  # E below this: scale 2^s not a normal float32
            t = e - 158 + p  # dequantize: float32(sum) * 2^t
            self.d_scale = np.ldexp(np.float32(1.0), np.maximum(t, -126)).astype(np.float32)
            self.d_scale[0] = 0
            self.d_regular_from = 32 - p  # E (> 0) below this: 2^t not a normal float32
            self.q_mode, self.q_table = _Q_F32_MUL, self.q_scale  # for the kernel: float32 multiply
        else:
            # quantize: x * (2^(158 - E) * fl(1/n)) in float64, exact but for one rounding
            # of x * 2^(158-E) * fl(1/n). That rounds to the same integer as the exact
            # x * 2^(158-E) / n when n * fl(1/n) is within 2^-54 of 1 (true for every
            # n <= 32; see docs/host.md); otherwise divide by n * 2^(E - 158), which is
            # exact but for the one rounding of the quotient.
            r = 1.0 / n
            self.q_reciprocal = abs(Fraction(r) * n - 1) <= Fraction(1, 2**54)
            if self.q_reciprocal:
                self.q_mul = np.ldexp(1.0, 158 - e) * r
                self.q_mode, self.q_table = _Q_F64_MUL, self.q_mul  # float64 multiply
            else:
                self.q_div = n * np.ldexp(1.0, e - 158)
                self.q_mode, self.q_table = _Q_F64_DIV, self.q_div  # float64 division
            self.q_irregular = np.zeros(256, dtype=bool)
            self.q_regular_from = self.d_regular_from = 0
        # dequantize in float64: sum * n * 2^(E - 158) is exact (|sum * n| < 2^37)
        self.d_mul64 = np.where(e == 0, 0.0, n * np.ldexp(1.0, e - 158))
        if n > UNCLAMPED_MAX_N:
            # |x * 2^(158-E) / n| <= (2^31 - 2^7) / n leaves a margin of 2^7 / n under
            # floor((2^31 - 1) / n) + 1/2, so rounding cannot pass the clamp only while
            # n < 2^8; beyond (more workers than a job has, but the API takes up to 2^16)
            # every row takes the clamped path, in the kernel and in numpy alike.
            self.q_regular_from = 256
            self.q_irregular = np.ones(256, dtype=bool)  # quantize_row: the same path


def _exponent_index(exponents: np.ndarray, b: int) -> np.ndarray:
    e = np.asarray(exponents)
    if e.shape != (b,):
        raise ValueError(f"exponents of shape {e.shape} for {b} blocks")
    if e.dtype != np.uint8:
        if e.size and (e.min() < 0 or e.max() > 255):
            raise ValueError("exponents must lie in 0 .. 255")
        e = e.astype(np.uint8)
    return e


# ------------------------------------------------------------------ quantize


def _quantize_rows64(x: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """The reference path for a few rows: exact scale in float64, one correctly rounded
    division by n, round half to even, clamp."""
    lim = clamp_limit(n)
    y = x.astype(np.float64) * np.ldexp(1.0, 158 - e.astype(np.int64))[:, None]
    y /= n
    np.rint(y, out=y)
    np.clip(y, -lim, lim, out=y)
    return y.astype(np.int32)


def quantize(
    blocks: np.ndarray,
    exponents: np.ndarray,
    n: int,
    *,
    own: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Quantize (B, K) float32 blocks with their agreed exponents (B,) for n workers.

    ``own`` are the blocks' own exponents (``block_exponents``); when omitted they are
    computed (which also rejects non-finite input). Where an agreed exponent is below the
    block's own, the clamp to ``±floor((2^31-1)/n)`` takes effect; elsewhere it provably
    cannot (docs/protocol.md, "Why the sum cannot overflow"), so no pass is spent on it.
    """
    _check_n(n)
    if blocks.dtype != np.float32 or blocks.ndim != 2:
        raise TypeError(f"(B, K) float32 blocks expected, got {blocks.dtype} {blocks.shape}")
    b, k = blocks.shape
    e = _exponent_index(exponents, b)
    blocks = np.ascontiguousarray(blocks)
    if own is not None:
        own = _exponent_index(own, b)
    elif out is not None or _C is None:
        # The kernel computes the own exponents on the way, but only into a fresh array:
        # on NaN or ±Inf a caller's out must stay untouched, as it does here.
        own = block_exponents(blocks)
    if out is None:
        out = np.empty((b, k), dtype=np.int32)
    if b == 0:
        return out
    if np.may_share_memory(out, blocks):
        # Both paths may read a block again after writing its row (the kernel redoes
        # blocks in numpy, numpy's clamped rows come last): quantize a copy.
        blocks = blocks.copy()
    tab = _tables(n)
    if _kernel_takes(out, np.int32, blocks):
        own_c = None if own is None else np.ascontiguousarray(own)  # None: computed in C
        args = (n, tab.q_mode, tab.q_table, tab.q_regular_from)
        status = _C.quantize(blocks, k, np.ascontiguousarray(e), own_c, *args, out)
        if status == _OK:
            return out
        if status == _NONFINITE:
            check_finite(blocks)  # raises NonFiniteError
        # _REDO: values beyond int32 (an own below the real exponent): numpy defines those
    if own is None:
        own = block_exponents(blocks)
    rows = _chunk_rows(k)
    ei = e.astype(np.intp)  # take() with intp indices: uint8 fancy indexing is ~2.5x slower
    with np.errstate(over="ignore", invalid="ignore"), _row_buffers(k):
        if tab.p is not None:
            f = tab.q_scale.take(ei)[:, None]
            tmp = np.empty((min(rows, b), k), dtype=np.float32)
            for r0 in range(0, b, rows):
                r1 = min(b, r0 + rows)
                t = tmp[: r1 - r0]
                np.multiply(blocks[r0:r1], f[r0:r1], out=t)
                # rint in place, then a casting copy: rint straight into int32 is a
                # buffered cast, which _row_buffers' small buffers would slow down. (The
                # output itself as the float32 scratch saves nothing: numpy copies an
                # input that overlaps the output of another dtype.)
                np.rint(t, out=t)
                np.copyto(out[r0:r1], t, casting="unsafe")
        else:
            rows = _chunk_rows(k, 8)
            if tab.q_reciprocal:
                c, op = tab.q_mul.take(ei)[:, None], np.multiply
            else:
                c, op = tab.q_div.take(ei)[:, None], np.divide
            tmp = np.empty((min(rows, b), k), dtype=np.float64)
            for r0 in range(0, b, rows):
                r1 = min(b, r0 + rows)
                t = tmp[: r1 - r0]
                np.copyto(t, blocks[r0:r1])
                op(t, c[r0:r1], out=t)
                np.rint(t, out=t)
                np.copyto(out[r0:r1], t, casting="unsafe")
    fix = own > e
    if tab.q_regular_from:
        fix |= e < tab.q_regular_from
    if fix.any():
        idx = np.flatnonzero(fix)
        out[idx] = _quantize_rows64(blocks[idx], e[idx], n)
    return out


def quantize_row(x: np.ndarray, exponent: int, n: int, own: int) -> np.ndarray:
    """One block: K float32 values with agreed exponent ``exponent`` and own exponent
    ``own`` to K int32, identical to the matching row of ``quantize`` (the protocol core
    quantizes block by block, as each agreed exponent arrives)."""
    tab = _tables(n)
    if own <= exponent and not tab.q_irregular[exponent]:
        if tab.p is not None:
            y = x * tab.q_scale[exponent]
        elif tab.q_reciprocal:
            y = x * tab.q_mul[exponent]  # float32 array * float64 scalar: float64
        else:
            y = x / tab.q_div[exponent]
        np.rint(y, out=y)
        return y.astype(np.int32)
    return _quantize_rows64(x[None, :], np.array([exponent]), n)[0]


# ------------------------------------------------------------------ dequantize


def dequantize(
    sums: np.ndarray,
    exponents: np.ndarray,
    n: int,
    *,
    dtype: type = np.float32,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``sum(q) / f`` for (B, K) int32 sums and their agreed exponents (B,).

    Rows with E = 0 are zeros. ``dtype=np.float32`` (the default) rounds the exact value
    once; ``dtype=np.float64`` returns it exactly. ``out=sums.view(np.float32)``
    dequantizes in place, the cheapest way (the protocol's result buffer is its own).
    """
    _check_n(n)
    if sums.dtype != np.int32 or sums.ndim != 2:
        raise TypeError(f"(B, K) int32 sums expected, got {sums.dtype} {sums.shape}")
    b, k = sums.shape
    e = _exponent_index(exponents, b)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype {dtype}: float32 or float64")
    if out is None:
        out = np.empty((b, k), dtype=dtype)
    if b == 0:
        return out
    sums = np.ascontiguousarray(sums)
    tab = _tables(n)
    # float32 in place (out = sums.view(np.float32), as the protocol calls it) saves the
    # second buffer's memory traffic: each element is read, then overwritten.
    if _kernel_takes(out, dtype, sums, in_place=dtype == np.float32):
        mode = _D_F64 if dtype == np.float64 else _D_F32 if tab.p is not None else _D_F64_TO_F32
        scale32 = tab.d_scale if tab.p is not None else None
        _C.dequantize(
            sums, k, np.ascontiguousarray(e), mode, scale32, tab.d_mul64, tab.d_regular_from, out
        )
        return out
    if np.may_share_memory(out, sums):
        sums = sums.copy()  # the rows fixed below read the sums after out is written
    rows = _chunk_rows(k)
    ei = e.astype(np.intp)  # take() with intp indices: uint8 fancy indexing is ~2.5x slower
    if dtype == np.float64:
        np.multiply(sums, tab.d_mul64.take(ei)[:, None], out=out)
        return out
    with np.errstate(over="ignore"), _row_buffers(k):
        if tab.p is not None:
            # float32(sum) is the only rounding; the power-of-two scale is exact.
            f = tab.d_scale.take(ei)[:, None]
            for r0 in range(0, b, rows):
                r1 = min(b, r0 + rows)
                o = out[r0:r1]
                np.copyto(o, sums[r0:r1], casting="unsafe")
                np.multiply(o, f[r0:r1], out=o)
            fix = (e < tab.d_regular_from) & (e != 0)
            if fix.any():
                idx = np.flatnonzero(fix)
                out[idx] = (sums[idx] * tab.d_mul64[e[idx]][:, None]).astype(np.float32)
        else:
            rows = _chunk_rows(k, 8)
            g = tab.d_mul64.take(ei)[:, None]
            tmp = np.empty((min(rows, b), k), dtype=np.float64)
            for r0 in range(0, b, rows):
                r1 = min(b, r0 + rows)
                t = tmp[: r1 - r0]
                np.copyto(t, sums[r0:r1])
                np.multiply(t, g[r0:r1], out=t)
                np.copyto(out[r0:r1], t, casting="same_kind")
    return out
