"""The native core's lane loops (host/_engine/lanes.c: quantizing a block into big-endian
lanes, storing a result's lanes into the sums) in both compiled copies, AVX2 and
baseline, against the numpy code (``quantize.quantize_row``) bit for bit, and the
differential test of the whole core (test_native_core.py) run on each copy.

The module loads with the AVX2 copy on a CPU that has it; ``use_avx2(False)`` switches to
the baseline copy (SSE2 on x86), which rounds with the float64 trick instead of rint.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.host import quantize as Q
from p4reduce.host import wire
from p4reduce.host.protocol import native
from test_native_core import test_extreme_values_and_clamps_quantize_alike as extreme_twins
from test_native_core import twin_job

pytestmark = pytest.mark.skipif(not native.available(), reason="native core not built")
E = native._C
F32_MAX = float(np.finfo(np.float32).max)
TINY = float(np.finfo(np.float32).smallest_subnormal)
MIN_NORMAL = float(np.finfo(np.float32).tiny)
# the protocol's n (1 .. 32: float32 multiply for powers of two, float64 multiply
# otherwise) and 49 and 99, whose reciprocal is too inexact (float64 division)
NS = st.one_of(st.integers(1, 32), st.sampled_from([49, 99]))


@pytest.fixture(autouse=True, params=["avx2", "baseline"])
def lane_copy(request: pytest.FixtureRequest) -> Iterator[str]:
    avx2 = request.param == "avx2"
    if E.use_avx2(avx2) != avx2:
        pytest.skip("the CPU has no AVX2")
    yield request.param
    E.use_avx2(True)


SPECIAL = st.sampled_from(
    [0.0, -0.0, TINY, -TINY, MIN_NORMAL, -MIN_NORMAL, F32_MAX, -F32_MAX, 0.5, -0.5, 1.5, 2.5,
     -2.5, 1.0, 3.0]
)  # fmt: skip


@st.composite
def blocks(draw: st.DrawFn) -> tuple[np.ndarray, int, int]:
    k = draw(st.sampled_from([1, 3, 7, 8, 9, 16, 31, 64, 65, 256, 1024]))
    scale = draw(st.integers(-149, 127))
    values = st.one_of(
        st.floats(width=32, allow_nan=False, allow_infinity=False),
        st.floats(-4.0, 4.0, width=32).map(lambda v: v * 2.0**scale),
        SPECIAL,
    )
    # up to 40 drawn values, repeated over the K lanes (vector bodies and tails alike)
    xs = draw(st.lists(values, min_size=1, max_size=min(k, 40)))
    with np.errstate(over="ignore"):
        x = np.resize(np.array(xs, dtype=np.float64).astype(np.float32), k)
    x[~np.isfinite(x)] = 0
    n = draw(NS)
    own = int(Q.block_exponents(x.reshape(1, -1))[0])
    # agreed exponents: equal to the block's own (the common case), above it (a peer's
    # larger block, down to the irregular scales and to lanes that round to 0), below it
    # (the clamped reference path), and the ends of the range
    agreed = draw(
        st.one_of(
            st.just(own),
            st.integers(own, min(255, own + 40)),
            st.integers(max(0, own - 5), own),
            st.sampled_from([0, 1, 2, 30, 31, 254, 255]),
        )
    )
    return x, n, agreed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks())
def test_quantize_lanes_are_numpys_bit_for_bit(case: tuple[np.ndarray, int, int]) -> None:
    x, n, agreed = case
    own = int(Q.block_exponents(x.reshape(1, -1))[0])
    tab = Q._tables(n)
    want = Q.quantize_row(x, agreed, n, own).astype(">i4").tobytes()
    got = E.quantize_lanes(x.tobytes(), agreed, n, own, tab.q_mode, tab.q_table,
                           tab.q_regular_from)  # fmt: skip
    assert got == want, (n, agreed, own, x)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 16, 32, 49])
def test_quantize_lanes_edges(n: int) -> None:
    """Ties at every K position (the vector loops' tails included), ±0, denormals, the
    float32 maximum, and agreed exponents at the edges of the regular range."""
    tab = Q._tables(n)
    for k in (1, 7, 8, 9, 64, 65):
        for base in ([0.5, 1.5, 2.5, -0.5, -2.5], [-0.0, 0.0, TINY, -TINY], [F32_MAX, -F32_MAX]):
            x = np.resize(np.array(base, dtype=np.float32), k)
            own = int(Q.block_exponents(x.reshape(1, -1))[0])
            reg = tab.q_regular_from
            for agreed in {own, min(255, own + 1), max(0, own - 1), max(0, reg - 1), reg, 255}:
                want = Q.quantize_row(x, agreed, n, own).astype(">i4").tobytes()
                got = E.quantize_lanes(x.tobytes(), agreed, n, own, tab.q_mode, tab.q_table,
                                       reg)  # fmt: skip
                assert got == want, (k, base, agreed, own)


def test_quantize_lanes_rejects_bad_arguments() -> None:
    tab = Q._tables(2)
    with pytest.raises(ValueError, match="out of range"):
        E.quantize_lanes(b"\0" * 6, 1, 2, 1, tab.q_mode, tab.q_table, 0)
    with pytest.raises(ValueError, match="out of range"):
        E.quantize_lanes(b"\0" * 8, 256, 2, 1, tab.q_mode, tab.q_table, 0)
    with pytest.raises(ValueError, match="out of range"):
        E.quantize_lanes(b"\0" * 8, 1, 2, 1, tab.q_mode, b"\0" * 12, 0)


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_whole_core_on_this_copy(msg_type: int) -> None:
    """The differential test of the core (both cores, the same events, identical actions;
    every result's lanes stored by this copy) and its extreme values, on this copy."""
    for k, n, seed in ((8, 3, 1), (64, 2, 2), (9, 5, 3)):
        twin_job(n=n, k=k, slots=5, msg_type=msg_type, dtype=np.float32,
                 sizes=[1, k * 23 + 1], density=0.5, loss=0.1, dup=0.1, garble=0.2,
                 seed=seed)  # fmt: skip
    extreme_twins(msg_type, 3)
