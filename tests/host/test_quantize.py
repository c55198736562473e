"""p4reduce.host.quantize against docs/protocol.md, "Quantization".

Exactness is checked against Python fractions (the exact round-half-even of x * f and the
exact sum(q) / f), the error bound against float64 sums of the inputs.
"""

from __future__ import annotations

import math
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from p4reduce.host import quantize as Q

F32_MAX = float(np.finfo(np.float32).max)
TINY = float(np.finfo(np.float32).smallest_subnormal)


def exact_q(x: float, e: int, n: int) -> int:
    """round_half_even(x * 2^(158-E) / n), clamped: the exact value of the spec."""
    v = Fraction(x) * Fraction(2) ** (158 - e) / n
    q = math.floor(v)
    r = v - q
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and q % 2):
        q += 1
    lim = (2**31 - 1) // n
    return max(-lim, min(lim, q))


def spec_exponent(block: np.ndarray) -> int:
    m = float(np.max(np.abs(block.astype(np.float64)))) if block.size else 0.0
    if m == 0:
        return 0
    return max(math.frexp(m)[1], -126) + 127


def random_blocks(rng: np.random.Generator, b: int, k: int, spread: int = 30) -> np.ndarray:
    x = rng.standard_normal((b, k)) * np.exp2(rng.integers(-spread, min(spread, 120), (b, 1)))
    x *= np.exp2(rng.integers(-12, 1, (b, k)))  # elements far below their block's maximum
    x[rng.random((b, k)) < 0.1] = 0
    return x.astype(np.float32)


# ------------------------------------------------------------------ exponents


@pytest.mark.parametrize(
    "value,expected",
    [
        (0.0, 0),
        (TINY, 1),  # denormal-only blocks get 1
        (float(np.finfo(np.float32).tiny) * 0.75, 1),
        (float(np.finfo(np.float32).tiny), 2),  # 2^-126 = 0.5 * 2^-125
        (0.75, 127),
        (1.0, 128),  # 1 = 0.5 * 2^1
        (-1.5, 128),
        (2.0, 129),
        (F32_MAX, 255),
        (-F32_MAX, 255),
    ],
)
def test_exponent_of_single_values(value: float, expected: int) -> None:
    b = np.zeros((1, 4), np.float32)
    b[0, 2] = value
    assert Q.block_exponents(b)[0] == expected
    assert spec_exponent(b[0]) == expected


def test_exponents_match_frexp_definition() -> None:
    rng = np.random.default_rng(1)
    blocks = random_blocks(rng, 500, 16, spread=120)
    blocks[::7] = 0
    blocks[3::11] *= np.float32(2.0**-140)  # denormals
    got = Q.block_exponents(blocks)
    assert got.dtype == np.uint8
    assert list(got) == [spec_exponent(b) for b in blocks]
    # max|x| < 2^(E-127)
    m = np.abs(blocks.astype(np.float64)).max(axis=1)
    nz = got > 0
    assert np.all(m[nz] < np.exp2(got[nz].astype(np.int64) - 127))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected_with_count_and_first_index(bad: float) -> None:
    x = np.ones(1000, np.float32)
    x[[123, 456, 789]] = bad
    with pytest.raises(Q.NonFiniteError, match=r"3 non-finite elements .* index 123") as ei:
        Q.block_exponents(Q.to_blocks(x, 64))
    assert ei.value.count == 3 and ei.value.first == 123
    assert isinstance(ei.value, ValueError)
    with pytest.raises(Q.NonFiniteError):
        Q.quantize(Q.to_blocks(x, 64), np.full(16, 200), 2)  # own exponents computed


def test_to_blocks_pads_with_zeros() -> None:
    x = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
    b = Q.to_blocks(x, 4)
    assert b.shape == (3, 4)
    assert list(b.reshape(-1)) == list(range(1, 11)) + [0, 0]
    assert Q.to_blocks(np.zeros(0, np.float32), 4).shape == (0, 4)


# ------------------------------------------------------------------ quantize


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 31, 32])
def test_quantize_is_exact_round_half_even(n: int) -> None:
    rng = np.random.default_rng(n)
    blocks = random_blocks(rng, 60, 8, spread=140)
    blocks[0] = [1.5, -2.5, 0.5, 3.0, 7.5, -4.5, 1.0, 0.25]  # ties for many n
    blocks[1] = np.float32(F32_MAX)
    blocks[2] = TINY
    own = Q.block_exponents(blocks)
    for agreed in (
        own,
        np.minimum(own.astype(int) + rng.integers(0, 4, own.size), 255),
        np.maximum(own.astype(int) - rng.integers(0, 3, own.size), 0),  # clamps
    ):
        q = Q.quantize(blocks, agreed, n, own=own)
        assert q.dtype == np.int32
        for b in range(blocks.shape[0]):
            e = int(agreed[b])
            want = [exact_q(float(v), e, n) for v in blocks[b]]
            assert list(q[b]) == want, (b, e)
            assert list(Q.quantize_row(blocks[b], e, n, int(own[b]))) == want


@pytest.mark.parametrize("n", [3, 5, 6, 7, 9, 10, 11, 13, 24, 25, 27, 29, 30, 32])
def test_ties_round_to_even(n: int) -> None:
    """Values whose scaled quotient is exactly k + 1/2 (x * 2^(158-E) = (2k+1) n / 2)."""
    e = 158  # scale 2^0 / n: x * f = x / n
    ks = np.arange(0, 600, dtype=np.int64)
    x = ((2 * ks + 1) * n / 2).astype(np.float32)  # exact in float32
    x = x[np.abs(x) < 2.0 ** (e - 127)]
    blocks = np.concatenate([x, -x]).reshape(-1, 1)
    q = Q.quantize(blocks, np.full(blocks.shape[0], e), n)
    want = [exact_q(float(v), e, n) for v in blocks[:, 0]]
    assert list(q[:, 0]) == want
    assert all(v % 2 == 0 for v in want)


def test_clamp_bites_only_when_agreed_exponent_is_below_own() -> None:
    for n in (1, 3, 4, 32):
        lim = (2**31 - 1) // n
        b = np.array([[F32_MAX, -F32_MAX, 1.0, 0.0]], np.float32)
        q = Q.quantize(b, np.array([130]), n)  # own exponent is 255
        assert list(q[0][:2]) == [lim, -lim]
        q = Q.quantize(b, np.array([255]), n)
        assert abs(int(q[0][0])) < 2**31 / n - 3  # docs: |q| < 2^31/n - 3


# ------------------------------------------------------------------ dequantize


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 17, 32])
def test_dequantize_is_correctly_rounded(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    sums = rng.integers(-(2**31), 2**31, (200, 4)).astype(np.int64)
    sums[::2] >>= rng.integers(0, 31, (100, 1))
    sums = sums.astype(np.int32)
    e = rng.integers(0, 256, 200)
    e[:30] = rng.integers(0, 40, 30)  # scales outside float32's normal range
    d32 = Q.dequantize(sums, e, n)
    d64 = Q.dequantize(sums, e, n, dtype=np.float64)
    assert d32.dtype == np.float32 and d64.dtype == np.float64
    for b in range(200):
        for j in range(4):
            exact = (
                Fraction(0)
                if e[b] == 0
                else Fraction(int(sums[b, j])) * n * Fraction(2) ** (int(e[b]) - 158)
            )
            assert Fraction(float(d64[b, j])) == exact
            with np.errstate(over="ignore"):
                want = np.float32(float(exact))  # exact float64 -> one rounding
            assert d32[b, j] == want or (np.isinf(want) and d32[b, j] == want)


def test_zero_exponent_dequantizes_to_zero() -> None:
    s = np.full((2, 4), 12345, np.int32)
    assert not Q.dequantize(s, np.array([0, 0]), 3).any()


# ------------------------------------------------------------------ error bound


def roundtrip(tensors: list[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(tensors)
    blocks = [Q.to_blocks(t, k) for t in tensors]
    e = np.max([Q.block_exponents(b) for b in blocks], axis=0)
    total = np.sum([Q.quantize(b, e, n).astype(np.int64) for b in blocks], axis=0)
    assert np.abs(total).max(initial=0) <= 2**31 - 1  # never overflows int32
    s = total.astype(np.int32)
    return Q.dequantize(s, e, n, dtype=np.float64), Q.dequantize(s, e, n), e


def check_bound(tensors: list[np.ndarray], k: int) -> None:
    n = len(tensors)
    d64, d32, e = roundtrip(tensors, k)
    exact = np.sum([Q.to_blocks(t, k).astype(np.float64) for t in tensors], axis=0)
    bnd = Q.bound(n, e)[:, None]
    assert np.all(np.abs(d64 - exact) <= bnd), "quantization error beyond n^2 2^(E-159)"
    # the float32 result adds at most half an ulp of its own value
    finite = np.isfinite(d32)
    half_ulp = np.spacing(np.abs(d32[finite])).astype(np.float64) / 2
    assert np.all(np.abs(d32[finite] - exact[finite]) <= bnd.repeat(k, 1)[finite] + half_ulp)
    # overflow to ±inf only where the exact sum rounds beyond float32
    assert np.all(np.abs(exact[~finite]) >= F32_MAX)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 32),
    m=st.sampled_from([1, 63, 64, 65, 1000, 5000]),
    spread=st.integers(0, 100),
    seed=st.integers(0, 2**32 - 1),
)
def test_error_bound_random(n: int, m: int, spread: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ts = [
        (rng.standard_normal(m) * np.exp2(rng.integers(-spread, spread + 1, m) / 4)).astype(
            np.float32
        )
        for _ in range(n)
    ]
    check_bound(ts, 64)


def test_error_bound_zeros_denormals_and_huge_values() -> None:
    k = 16
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 8, 32):
        zeros = [np.zeros(100, np.float32) for _ in range(n)]
        d64, d32, e = roundtrip(zeros, k)
        assert not e.any() and not d32.any()
        den = [(rng.integers(-(2**23), 2**23, 100) * TINY).astype(np.float32) for _ in range(n)]
        check_bound(den, k)
        d64, d32, e = roundtrip(den, k)
        assert set(e) <= {0, 1}
        huge = [(F32_MAX * rng.uniform(-1, 1, 100)).astype(np.float32) for _ in range(n)]
        check_bound(huge, k)
        mixed = [np.concatenate([huge[i][:50], den[i][:50]]).astype(np.float32) for i in range(n)]
        check_bound(mixed, k)


def test_sum_of_maxima_overflows_float32_to_inf() -> None:
    ts = [np.full(8, F32_MAX, np.float32) for _ in range(3)]
    _, d32, _ = roundtrip(ts, 8)
    assert np.all(np.isposinf(d32))


def test_bound_formula() -> None:
    assert Q.bound(1, 127 + 32) == 1.0
    assert Q.bound(3, 159) == 9.0
    assert Q.bound(4, 0) == 0.0
    assert np.allclose(Q.bound(2, np.array([128, 159])), [4 * 2.0**-31, 4.0])
    assert Q.scale(2, 158) == 0.5
    assert Q.clamp_limit(3) == (2**31 - 1) // 3


# ------------------------------------------------------------------ chunked fast paths
#
# quantize and dequantize walk the blocks in chunks of _CHUNK_ELEMENTS and pick a path per
# n (float32 for powers of two, float64 otherwise) and per K (_row_buffers for K >= 256).
# The reference below is deliberately plain (float64, one pass, no tables, no chunks);
# its exactness is what the Fraction tests above check on the library's own fallback.


def ref_exponents(blocks: np.ndarray) -> np.ndarray:
    m = np.abs(blocks.astype(np.float64)).max(axis=1, initial=0.0)
    e = np.maximum(np.frexp(m)[1], -126) + 127
    return np.where(m == 0, 0, e).astype(np.uint8)


def ref_quantize(blocks: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """round_half_even(x * 2^(158-E) / n), clamped: the power-of-two scale is exact in
    float64, the division is rounded once, and rint then lands on the exact result."""
    lim = (2**31 - 1) // n
    y = blocks.astype(np.float64) * np.ldexp(1.0, 158 - e.astype(np.int64))[:, None] / n
    return np.clip(np.rint(y), -lim, lim).astype(np.int32)


def ref_dequantize(sums: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """sum * n * 2^(E-158), exact in float64, rounded once to float32; 0 for E = 0."""
    g = np.where(e == 0, 0.0, n * np.ldexp(1.0, e.astype(np.int64) - 158))
    with np.errstate(over="ignore"):
        return (sums.astype(np.float64) * g[:, None]).astype(np.float32)


def mixed_blocks(rng: np.random.Generator, b: int, k: int) -> np.ndarray:
    """Rows of every kind: ordinary, zero, denormal-only, near float32 max, tiny (scales
    outside float32's normal range), and a single non-zero element."""
    x = random_blocks(rng, b, k, spread=120) if b else np.zeros((0, k), np.float32)
    kind = rng.integers(0, 6, b)
    x[kind == 1] = 0
    den = kind == 2
    x[den] = (rng.integers(-(2**23), 2**23, (int(den.sum()), k)) * TINY).astype(np.float32)
    big = kind == 3
    x[big] = (F32_MAX * rng.uniform(-1, 1, (int(big.sum()), k))).astype(np.float32)
    x[kind == 4] *= np.float32(2.0**-110)
    one = np.flatnonzero(kind == 5)
    x[one] = 0
    x[one, rng.integers(0, k, one.size)] = random_blocks(rng, one.size, 1, spread=120)[:, 0]
    return x


def agreed_variants(rng: np.random.Generator, own: np.ndarray) -> list[np.ndarray]:
    o = own.astype(np.int64)
    return [
        own,
        np.minimum(o + rng.integers(0, 4, o.size), 255),  # a peer's larger exponent
        np.maximum(o - rng.integers(0, 3, o.size), 0),  # below own: the clamp applies
        rng.integers(0, 256, o.size),  # anything
    ]


def check_against_reference(blocks: np.ndarray, n: int, rng: np.random.Generator) -> None:
    own = Q.block_exponents(blocks)
    assert np.array_equal(own, ref_exponents(blocks))
    for agreed in agreed_variants(rng, own):
        agreed = agreed.astype(np.uint8)
        q = Q.quantize(blocks, agreed, n, own=own)
        assert np.array_equal(q, ref_quantize(blocks, agreed, n))
        out = np.full(blocks.shape, -7, np.int32)  # a caller's buffer is filled entirely
        assert Q.quantize(blocks, agreed, n, out=out) is out
        assert np.array_equal(out, q)
        # a sum of n contributions: |sum| <= n * floor((2^31 - 1) / n) < 2^31
        sums = (q * rng.integers(-n, n + 1, q.shape)).astype(np.int32)
        d = Q.dequantize(sums, agreed, n)
        want = ref_dequantize(sums, agreed, n)
        assert np.array_equal(d.view(np.uint32), want.view(np.uint32))  # bit for bit


@settings(max_examples=60, deadline=None)
@given(
    n=st.one_of(st.integers(1, 33), st.sampled_from([64, 100, 1000, 2**16])),
    k=st.sampled_from([1, 3, 16, 64, 256, 257, 272]),
    chunk=st.sampled_from([1, 200, 1024, 4096]),
    b=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
# -F32_MAX at its own exponent for 2^16 workers: x * 2^(158-E) / n = -32767.98 rounds to
# -32768, past the clamp of 32767 (the kernel and numpy skipped the clamp for every n)
@example(n=2**16, k=256, chunk=1, b=36, seed=167871043)
def test_chunked_paths_match_reference(n: int, k: int, chunk: int, b: int, seed: int) -> None:
    """Small chunks, so most arrays span several chunks and end in a partial one."""
    rng = np.random.default_rng(seed)
    blocks = mixed_blocks(rng, b, k)
    with mock.patch.object(Q, "_CHUNK_ELEMENTS", chunk):
        check_against_reference(blocks, n, rng)


@pytest.mark.parametrize("k", [64, 256, 1024])
@pytest.mark.parametrize("n", [3, 4])
def test_gradient_sized_tensor_matches_reference(n: int, k: int) -> None:
    """A tensor of the bench's kind with the real chunk size, its length a multiple of
    neither the chunk nor K (to_blocks pads the last block)."""
    rng = np.random.default_rng(n * k)
    m = 3 * Q._CHUNK_ELEMENTS + 12_345
    x = rng.standard_normal(m, dtype=np.float32) * np.float32(1e-3)
    x[rng.random(m) < 0.05] = 0
    blocks = Q.to_blocks(x, k)
    assert blocks.shape == (-(-m // k), k)
    check_against_reference(blocks, n, rng)


@pytest.mark.parametrize("dtype", [">i4", np.int64, np.float64])
def test_quantize_into_another_out_dtype(dtype: str | type) -> None:
    """out may be of any dtype that holds the values (the result is cast into it)."""
    rng = np.random.default_rng(11)
    blocks = mixed_blocks(rng, 50, 64)
    e = Q.block_exponents(blocks)
    for n in (4, 3):
        out = np.empty(blocks.shape, dtype)
        Q.quantize(blocks, e, n, out=out)
        assert np.array_equal(out, ref_quantize(blocks, e, n))


def test_bufsize_is_restored() -> None:
    before = np.getbufsize()
    blocks = np.ones((3, 256), np.float32)
    q = Q.quantize(blocks, Q.block_exponents(blocks), 4)
    Q.dequantize(q, Q.block_exponents(blocks), 3)
    assert np.getbufsize() == before


@pytest.mark.parametrize("kernel", [True, False])
def test_nonfinite_split_and_fill(kernel: bool) -> None:
    """split_nonfinite: per-block NF_* bits, those rows zeroed and given exponent 0, the
    others' exponents unchanged (with and without the compiled kernel); "raise" raises;
    apply_nonfinite: NaN for the NaN bit or both infinities, else the one infinity."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 8)) * 100).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 0] = np.inf
    x[2, 7], x[2, 1] = np.inf, -np.inf
    x[3, 2] = -np.inf
    x[4, 4], x[4, 5] = np.nan, np.inf
    want_e = Q.block_exponents(x[5:])
    with mock.patch.object(Q, "_C", Q._C if kernel else None):
        with pytest.raises(Q.NonFiniteError):
            Q.split_nonfinite(x.copy(), "raise")
        b = x.copy()
        e, bits = Q.split_nonfinite(b, "propagate")
    assert bits.tolist() == [Q.NF_NAN, Q.NF_POS_INF, 6, Q.NF_NEG_INF, 3, 0]
    assert not b[:5].any() and np.array_equal(b[5], x[5])
    assert e[:5].tolist() == [0] * 5 and e[5] == want_e[0]
    out = np.ones((6, 8), np.float32)
    Q.apply_nonfinite(out, bits)
    assert np.isnan(out[[0, 2, 4]]).all() and (out[1] == np.inf).all()
    assert (out[3] == -np.inf).all() and (out[5] == 1).all()
    with pytest.raises(ValueError, match="nonfinite='x'"):
        Q.check_nonfinite_mode("x")
