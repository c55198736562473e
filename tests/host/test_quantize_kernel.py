"""The compiled kernel (host/_quantize_c.c) against the numpy code of host/quantize.py.

Every case runs the same call twice, through the kernel and with ``Q._C = None`` (the
numpy code, which test_quantize.py checks against exact fractions), and asserts the
results are equal bit for bit, or that both raise the same exception. The numpy runs use
small chunks (``_CHUNK_ELEMENTS``) so that its chunk boundaries are exercised too. The
whole module runs once per copy of the kernel: AVX2 (when the CPU has it) and baseline.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any
from unittest import mock

import numpy as np
import p4reduce.host as host_pkg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from p4reduce.host import quantize as Q

KERNEL = Q._C
F32_MAX = float(np.finfo(np.float32).max)
TINY = float(np.finfo(np.float32).smallest_subnormal)
KS = [1, 3, 7, 16, 63, 64, 65, 255, 256, 257, 1023, 1024]
# 1 .. 32 (the protocol's range), larger powers of two, other n with a reciprocal, and
# 49 and 99, whose reciprocal is too inexact: quantize divides (the kernel's mode 2)
NS = st.one_of(st.integers(1, 32), st.sampled_from([33, 49, 64, 99, 100, 1000, 2**16]))

needs_kernel = pytest.mark.skipif(
    KERNEL is None, reason="kernel not built (see test_kernel_is_built)"
)


@pytest.fixture(scope="module", autouse=True, params=["avx2", "baseline"])
def kernel_copy(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which copy of the kernel the module's tests run (the module loads with AVX2 when
    the CPU has it, the fastest; the baseline copy rounds differently, see the C file)."""
    if KERNEL is None and request.param == "baseline":
        pytest.skip("kernel not built")  # test_kernel_is_built fails once, for "avx2"
    if KERNEL is not None:
        if KERNEL.use_avx2(request.param == "avx2") != (request.param == "avx2"):
            pytest.skip("the CPU has no AVX2")
    yield request.param
    if KERNEL is not None:
        KERNEL.use_avx2(True)


def test_kernel_is_built() -> None:
    assert KERNEL is not None, (
        "p4reduce.host._quantize_c is missing: build it with `.venv/bin/pip install -e . "
        "--no-deps` (make install does on a fresh venv); the numpy code is used meanwhile"
    )


# ------------------------------------------------------------------ running both paths


class Spy:
    """The kernel module, counting the calls of each function."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        fn = getattr(KERNEL, name)

        def counted(*args: Any) -> Any:
            self.calls[name] += 1
            return fn(*args)

        return counted


def outcome(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except Exception as exc:  # compared below
        return None, exc


def both(fn: Callable[[], Any], chunk: int = 1 << 16) -> tuple[Any, Spy]:
    """fn() through the kernel and through the numpy code; asserts the same outcome and
    returns the kernel's result (None when both raised) and the spy of its calls."""
    spy = Spy()
    with mock.patch.object(Q, "_C", spy):
        got, got_exc = outcome(fn)
    with mock.patch.object(Q, "_C", None), mock.patch.object(Q, "_CHUNK_ELEMENTS", chunk):
        want, want_exc = outcome(fn)
    if got_exc is not None or want_exc is not None:
        assert type(got_exc) is type(want_exc), (got_exc, want_exc)
        assert str(got_exc) == str(want_exc)
        if isinstance(want_exc, Q.NonFiniteError):
            assert (got_exc.count, got_exc.first) == (want_exc.count, want_exc.first)
        return None, spy
    assert_identical(got, want)
    return got, spy


def assert_identical(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # bit for bit: -0.0, inf and NaN included


# ------------------------------------------------------------------ data


def block_data(rng: np.random.Generator, b: int, k: int, n: int, extra: list[float]) -> np.ndarray:
    """Rows of every kind: ordinary, +0 and -0, denormal-only, near float32 max, tiny
    (scales outside float32's normal range), one non-zero element, and rows of exact ties
    (x * 2^(158-E) / n = j + 1/2 for the row's own E and the next ones). ``extra``
    (hypothesis' own float32 picks) overwrite random elements."""
    x = (rng.standard_normal((b, k)) * np.exp2(rng.integers(-40, 40, (b, 1)))).astype(np.float32)
    x *= np.exp2(rng.integers(-14, 1, (b, k))).astype(np.float32)
    kind = rng.integers(0, 8, b)
    for i in range(b):
        row = x[i]
        if kind[i] == 1:
            row[:] = np.where(rng.random(k) < 0.5, -0.0, 0.0)
        elif kind[i] == 2:
            row[:] = (rng.integers(-(2**23), 2**23, k) * TINY).astype(np.float32)
        elif kind[i] == 3:
            row[:] = (F32_MAX * rng.uniform(-1, 1, k)).astype(np.float32)
            row[rng.integers(0, k)] = F32_MAX * rng.choice([-1, 1])
        elif kind[i] == 4:
            row *= np.float32(2.0**-100)
        elif kind[i] == 5:
            v = row[0]
            row[:] = 0
            row[rng.integers(0, k)] = v
        elif kind[i] == 6:
            # the row's maximum fixes E = e; ties for E = e .. e + 3 are odd multiples of
            # n * 2^(E-159), exact in float32 while the multiple has at most 24 bits
            e = int(rng.integers(20, 250))
            row[:] = 0
            row[0] = np.float32(np.ldexp(rng.uniform(0.5, 1.0), e - 127))
            for j in range(1, k):
                odd = 2 * int(rng.integers(0, 2**20 // n + 1)) + 1
                t = np.ldexp(float(odd * n), e + int(rng.integers(0, 4)) - 159)
                if abs(t) < abs(float(row[0])):
                    row[j] = np.float32(t) * rng.choice([-1, 1])
        row[rng.random(k) < 0.05] = 0
    flat = x.reshape(-1)
    if flat.size:
        for v in extra:
            flat[rng.integers(0, flat.size)] = v
    return x


@pytest.mark.parametrize("n", [1, 3, 4, 7, 32])
def test_tie_rows_hold_ties(n: int) -> None:
    """block_data's tie rows do hold exact ties (checked with fractions), rounded both ways."""
    rng = np.random.default_rng(n)
    blocks = block_data(rng, 200, 16, n, [])
    own = Q.block_exponents(blocks)
    halves = set()
    for row, e in zip(blocks, own, strict=True):
        for v in row:
            f = Fraction(float(v)) * Fraction(2) ** (158 - int(e)) / n
            if f.denominator == 2:
                halves.add(int(f - Fraction(1, 2)) % 2)  # parity of the integer below
    assert halves == {0, 1}


def agreed_variants(rng: np.random.Generator, own: np.ndarray) -> list[np.ndarray]:
    o = own.astype(np.int64)
    variants = [
        own,
        np.minimum(o + rng.integers(0, 5, o.size), 255),  # a peer's larger exponent
        np.maximum(o - rng.integers(0, 4, o.size), 0),  # below own: the clamp applies
        rng.integers(0, 256, o.size),
        np.full(o.size, 255),
    ]
    return [v.astype(np.uint8) for v in variants]


f32s = st.floats(width=32, allow_nan=False, allow_infinity=False)
cases = given(
    n=NS,
    k=st.sampled_from(KS),
    b=st.integers(0, 12),
    seed=st.integers(0, 2**32 - 1),
    extra=st.lists(f32s, max_size=6),
    chunk=st.sampled_from([1, 300, 4096, 1 << 16]),
)


# ------------------------------------------------------------------ exponents, quantize


@needs_kernel
@settings(max_examples=150, deadline=None)
@cases
def test_quantize_matches_numpy(
    n: int, k: int, b: int, seed: int, extra: list[float], chunk: int
) -> None:
    rng = np.random.default_rng(seed)
    blocks = block_data(rng, b, k, n, extra)
    own, spy = both(lambda: Q.block_exponents(blocks), chunk)
    assert spy.calls["exponents"] == (1 if b else 0)
    for agreed in agreed_variants(rng, own):
        q, spy = both(lambda: Q.quantize(blocks, agreed, n, own=own), chunk)  # noqa: B023
        assert spy.calls["quantize"] == (1 if b else 0)
        # own computed inside the kernel (no out), or by block_exponents first (out given)
        assert_identical(both(lambda: Q.quantize(blocks, agreed, n), chunk)[0], q)  # noqa: B023

        def into_out() -> np.ndarray:
            out = np.full(blocks.shape, -7, np.int32)  # a caller's buffer is filled entirely
            assert Q.quantize(blocks, agreed, n, out=out) is out  # noqa: B023
            return out

        assert_identical(both(into_out, chunk)[0], q)
        for i in range(b):  # quantize_row (numpy code) matches the kernel's rows
            assert_identical(Q.quantize_row(blocks[i], int(agreed[i]), n, int(own[i])), q[i])


@needs_kernel
@settings(max_examples=100, deadline=None)
@cases
def test_dequantize_matches_numpy(
    n: int, k: int, b: int, seed: int, extra: list[float], chunk: int
) -> None:
    rng = np.random.default_rng(seed)
    lim = Q.clamp_limit(n)
    kind = rng.integers(0, 4, (b, 1))
    sums = np.select(
        [kind == 0, kind == 1, kind == 2],
        [
            rng.integers(-n * lim, n * lim + 1, (b, k)),  # what n clamped workers can add
            rng.integers(-(2**31), 2**31, (b, k)),  # anything a (broken) switch sends
            rng.integers(-1000, 1001, (b, k)),
        ],
        0,
    ).astype(np.int32)
    if b:
        sums[0, 0], sums[-1, -1] = -(2**31), 2**31 - 1
    agreed = rng.integers(0, 256, b).astype(np.uint8)
    agreed[rng.random(b) < 0.2] = 0  # zero rows (their sums may still be non-zero here)
    agreed[rng.random(b) < 0.2] = 255  # near float32 max: overflow to inf
    agreed[rng.random(b) < 0.2] = rng.integers(1, 40)  # scales below float32's normal range
    for dtype in (np.float32, np.float64):
        d, spy = both(lambda: Q.dequantize(sums, agreed, n, dtype=dtype), chunk)  # noqa: B023
        assert spy.calls["dequantize"] == (1 if b else 0)

        def into_out() -> np.ndarray:
            out = np.full(sums.shape, np.nan, dtype)  # noqa: B023
            assert Q.dequantize(sums, agreed, n, dtype=dtype, out=out) is out  # noqa: B023
            return out

        assert_identical(both(into_out, chunk)[0], d)

    def in_place() -> np.ndarray:
        s = sums.copy()
        assert Q.dequantize(s, agreed, n, out=s.view(np.float32)).base is s
        return s.view(np.float32)

    d32, spy = both(in_place, chunk)
    assert spy.calls["dequantize"] == (1 if b else 0)  # the kernel runs in place
    assert_identical(d32, Q.dequantize(sums, agreed, n))


# ------------------------------------------------------------------ non-finite input


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(
    n=NS,
    k=st.sampled_from(KS),
    b=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    bad=st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), min_size=1, max_size=5),
)
def test_non_finite_input_raises_the_same_error(
    n: int, k: int, b: int, seed: int, bad: list[float]
) -> None:
    rng = np.random.default_rng(seed)
    blocks = block_data(rng, b, k, n, [])
    flat = blocks.reshape(-1)
    flat[rng.choice(flat.size, min(len(bad), flat.size), replace=False)] = bad[: flat.size]
    agreed = np.full(b, 200, np.uint8)
    count = int(np.count_nonzero(~np.isfinite(flat)))
    first = int(np.flatnonzero(~np.isfinite(flat))[0])
    for fn in (
        lambda: Q.block_exponents(blocks),
        lambda: Q.quantize(blocks, agreed, n),  # own exponents computed by the kernel
    ):
        _, spy = both(fn)
        assert sum(spy.calls.values()) == 1
        with pytest.raises(Q.NonFiniteError) as ei:
            fn()
        assert (ei.value.count, ei.value.first) == (count, first)

    def into_out() -> np.ndarray:
        out = np.full(blocks.shape, -7, np.int32)
        with pytest.raises(Q.NonFiniteError):
            Q.quantize(blocks, agreed, n, out=out)
        return out  # untouched, as with the numpy code

    assert np.all(both(into_out)[0] == -7)
    # with an own given nothing checks: the kernel hands the call to numpy (status REDO),
    # whose result (NaN and ±inf cast to int32) it cannot produce in C
    own = np.zeros(b, np.uint8)
    both(lambda: Q.quantize(blocks, agreed, n, own=own))


# ------------------------------------------------------------------ inconsistent arguments


@needs_kernel
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("n", [1, 3, 4, 1000])
def test_own_below_the_real_exponent_is_redone_in_numpy(n: int) -> None:
    """An own exponent given too small would make the kernel cast values beyond int32
    (undefined in C): it detects that and the numpy code produces its result."""
    blocks = np.array([[F32_MAX, -3.0e38, 1.0, -0.0], [1.5, -2.5, 0.0, 0.5]], np.float32)
    agreed = np.array([200, 128], np.uint8)
    own = np.array([1, 128], np.uint8)
    q, spy = both(lambda: Q.quantize(blocks, agreed, n, own=own))
    assert spy.calls["quantize"] == 1
    assert_identical(Q.quantize_row(blocks[0], 200, n, 1), q[0])


@needs_kernel
def test_kernel_checks_its_buffers() -> None:
    """A wrong call raises; the kernel never reads or writes outside a buffer."""
    tab = Q._tables(4)
    x = np.ones((2, 8), np.float32)
    e = np.full(2, 130, np.uint8)
    q = np.empty((2, 8), np.int32)
    ok = (x, 8, e, None, 4, tab.q_mode, tab.q_table, tab.q_regular_from, q)
    assert KERNEL.quantize(*ok) == 0
    for i, bad in [
        (1, 3),  # K does not divide the blocks
        (1, 0),
        (2, e[:1]),
        (3, e[:1]),  # own
        (6, tab.q_table[:255]),
        (6, Q._tables(3).q_table),  # float64 table for the float32 mode
        (8, q[:1]),
        (5, 7),  # mode
    ]:
        args = list(ok)
        args[i] = bad
        with pytest.raises(ValueError):
            KERNEL.quantize(*args)
    with pytest.raises((TypeError, BufferError)):
        KERNEL.quantize(*ok[:8], q.tobytes())  # read-only out
    with pytest.raises(ValueError):
        KERNEL.exponents(x, 8, np.empty(3, np.uint8))
    with pytest.raises(ValueError):
        KERNEL.dequantize(q, 8, e, 0, None, tab.d_mul64, tab.d_regular_from, x)  # no scale32
    with pytest.raises(ValueError):
        KERNEL.dequantize(q, 8, e, 2, None, tab.d_mul64, 0, x)  # float64 out too small
    # in place only where the kernel allows it: dequantize to float32 over the very sums
    d_args = (e, 0, tab.d_scale, tab.d_mul64, tab.d_regular_from)
    assert KERNEL.dequantize(q, 8, *d_args, q.view(np.float32)) == 0
    buf = np.zeros(24, np.int32)
    with pytest.raises(ValueError, match="overlaps"):
        KERNEL.dequantize(buf[8:], 8, *d_args, buf[:16].view(np.float32))
    with pytest.raises(ValueError, match="overlaps"):
        wide = np.zeros((2, 8), np.float64)
        KERNEL.dequantize(wide.view(np.int32).reshape(-1)[:16], 8, e, 2, None, tab.d_mul64, 0, wide)
    with pytest.raises(ValueError, match="overlaps"):
        KERNEL.quantize(x, 8, e, None, 4, tab.q_mode, tab.q_table, 0, x.view(np.int32))


# ------------------------------------------------------------------ fallbacks


@needs_kernel
def test_other_layouts_and_dtypes_use_the_numpy_code() -> None:
    """Strided, Fortran-order, unaligned, overlapping, other out dtypes: same results
    (strided and Fortran inputs are copied and then take the kernel)."""
    rng = np.random.default_rng(5)
    blocks = block_data(rng, 20, 64, 4, [])
    wide = np.zeros((20, 128), np.float32)
    wide[:, ::2] = blocks
    own = Q.block_exponents(blocks)
    want = Q.quantize(blocks, own, 3, own=own)
    raw = np.zeros(blocks.nbytes + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, np.float32, blocks.size, offset=1).reshape(blocks.shape)
    raw[1:] = blocks.view(np.uint8).reshape(-1)
    assert not unaligned.flags.aligned
    for x in (wide[:, ::2], np.asfortranarray(blocks), unaligned):
        assert_identical(both(lambda: Q.quantize(x, own, 3, own=own))[0], want)  # noqa: B023
        assert_identical(both(lambda: Q.block_exponents(x))[0], own)  # noqa: B023
    for dtype in (">i4", np.int64, np.float64):
        out = np.empty(blocks.shape, dtype)
        _, spy = both(lambda: Q.quantize(blocks, own, 3, own=own, out=out))  # noqa: B023
        assert spy.calls["quantize"] == 0
        assert np.array_equal(out, want)
    out = np.empty((blocks.shape[1], blocks.shape[0]), np.int32).T  # not C-contiguous
    _, spy = both(lambda: Q.quantize(blocks, own, 3, own=own, out=out))
    assert spy.calls["quantize"] == 0 and np.array_equal(out, want)

    def in_place() -> np.ndarray:
        x = blocks.copy()
        Q.quantize(x, own, 3, own=own, out=x.view(np.int32))  # out overlaps the input
        return x.view(np.int32)

    got, spy = both(in_place)
    assert spy.calls["quantize"] == 1  # of a copy of the input
    assert_identical(got, want)
    sums = want * 2
    d = Q.dequantize(sums, own, 3)
    assert_identical(both(lambda: Q.dequantize(np.asfortranarray(sums), own, 3))[0], d)
    both(lambda: Q.dequantize(sums.astype(">i4"), own, 3))  # the same TypeError
    _, spy = both(lambda: Q.dequantize(sums, own, 3, out=np.empty(sums.shape, np.float64)))
    assert spy.calls["dequantize"] == 0  # dtype float32 into a float64 out: numpy's affair

    def shifted() -> np.ndarray:
        """out overlaps the sums one row off: the numpy code, on a copy of the sums."""
        buf = np.zeros(sums.size + sums.shape[1], np.int32)
        s = buf[sums.shape[1] :].reshape(sums.shape)
        s[:] = sums
        out = buf[: sums.size].view(np.float32).reshape(sums.shape)
        Q.dequantize(s, own, 3, out=out)
        return out.copy()

    got, spy = both(shifted)
    assert spy.calls["dequantize"] == 0
    assert_identical(got, d)


def test_missing_extension_falls_back_to_numpy(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A copy of quantize.py imported while the extension cannot be: it says so in a debug
    log and computes the same results with numpy alone."""
    monkeypatch.setitem(sys.modules, "p4reduce.host._quantize_c", None)  # import fails
    monkeypatch.delattr(host_pkg, "_quantize_c", raising=False)
    name = "p4reduce.host._quantize_without_kernel"
    spec = importlib.util.spec_from_file_location(name, Q.__file__)
    assert spec is not None and spec.loader is not None
    plain = importlib.util.module_from_spec(spec)
    with caplog.at_level(logging.DEBUG, logger=name):
        spec.loader.exec_module(plain)
    assert plain._C is None
    assert "compiled quantize kernel unavailable" in caplog.text
    rng = np.random.default_rng(9)
    for n in (3, 4):
        blocks = block_data(rng, 30, 64, n, [])
        own = plain.block_exponents(blocks)
        assert_identical(own, Q.block_exponents(blocks))
        agreed = np.minimum(own.astype(np.int64) + 1, 255).astype(np.uint8)
        q = plain.quantize(blocks, agreed, n)
        assert_identical(q, Q.quantize(blocks, agreed, n))
        assert_identical(plain.dequantize(q, agreed, n), Q.dequantize(q, agreed, n))
    bad = np.ones((2, 64), np.float32)
    bad[1, 5] = np.nan
    with pytest.raises(plain.NonFiniteError) as ei:
        plain.quantize(bad, np.full(2, 130), 4)
    assert (ei.value.count, ei.value.first) == (1, 69)
