"""NaN and ±Inf end to end (docs/protocol.md, "Non-finite values"): two workers through
``p4reduce-switch`` running sparse.p4 (which takes dense messages too), once per switch
engine (the generated native one and the Python interpreter), with the native and the
Python host core. One rank has NaN/±Inf in some blocks; every rank gets those blocks back
whole as NaN or the infinity, in the same call, and every other block within the bound.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import Jobs, start_stack
from p4reduce.host.quantize import NonFiniteError, to_blocks
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.native.probe import native_engine_for
from stack import K, Stack, check, on_all

ROOT = Path(__file__).resolve().parents[2]
NB = 12  # blocks per tensor; slots = 4, so sparse classes hold 3 blocks each


@pytest.fixture(scope="module", params=["native", "python"])
def engine_stack(request: pytest.FixtureRequest, builds) -> Iterator[Stack]:  # noqa: ANN001
    engine = request.param
    if engine == "native":  # the native engine must take the program, not fall back
        opts = CompileOptions(include_dirs=[ROOT / "p4src" / "include"])
        assert native_engine_for(ROOT / "p4src" / "sparse.p4", opts) is None
    pool = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    try:
        for s in pool:
            s.bind(("127.0.0.1", 0))
        stack = start_stack(builds, "sparse", pool, switch_args=["--engine", engine])
        try:
            yield stack
        finally:
            stack.stop()
    finally:
        for s in pool:
            s.close()


def inputs(dtype: type = np.float32) -> tuple[list[np.ndarray], dict[int, str]]:
    """Two tensors of NB blocks (the last one short) and the expected kind of each
    non-finite block of the result."""
    rng = np.random.default_rng(5)
    m = NB * K - 3
    xs = [(rng.standard_normal(m) * 4).astype(dtype) for _ in range(2)]
    xs[0][1 * K + 5] = np.nan  # block 1: NaN on rank 0
    xs[0][3 * K] = np.inf  # block 3: +Inf on rank 0 and -Inf on rank 1: NaN
    xs[1][3 * K + 9] = -np.inf
    xs[1][6 * K + 2] = np.inf  # block 6: +Inf on rank 1 (twice)
    xs[1][6 * K + 3] = np.inf
    for x in xs:  # block 9: zero on both ranks, but -Inf on rank 0 (sparse must send it)
        x[9 * K : 10 * K] = 0
    xs[0][9 * K + 1] = -np.inf
    xs[0][11 * K + 1] = np.nan  # the last, short block
    return xs, {1: "nan", 3: "nan", 6: "+inf", 9: "-inf", 11: "nan"}


def check_result(r: np.ndarray, xs: list[np.ndarray], kinds: dict[int, str], slots) -> None:  # noqa: ANN001
    m = xs[0].size
    blocks = to_blocks(r, K)
    for b in range(NB):
        row = blocks[b][: min(K, m - b * K)]
        kind = kinds.get(b)
        if kind == "nan":
            assert np.isnan(row).all(), (b, row)
        elif kind is not None:
            assert (row == (np.inf if kind == "+inf" else -np.inf)).all(), (b, row)
    # every other block within the bound: the non-finite blocks count as zeros on the
    # ranks that had them (their exponent is 0), and are compared against those zeros
    finite = [to_blocks(x.astype(np.float32), K).copy() for x in xs]
    for f in finite:
        f[~np.isfinite(f).all(axis=1)] = 0
    fx = [f.reshape(-1)[:m] for f in finite]
    got = r.astype(np.float32)
    bad = np.repeat(np.isin(np.arange(NB), list(kinds)), K)[:m]
    got[bad] = np.sum([f.astype(np.float64) for f in fx], axis=0)[bad]
    if r.dtype == np.float16:  # rounded once to float16 from the float32 sum
        exact = np.sum([f.astype(np.float64) for f in fx], axis=0)
        np.testing.assert_allclose(got, exact, rtol=2**-10, atol=2**-10)
    else:
        check(got, fx, sparse_slots=slots)


@pytest.mark.parametrize("host_engine", ["native", "python"])
def test_nonfinite_blocks_reach_every_rank(engine_stack: Stack, host_engine: str) -> None:
    jobs = Jobs(engine_stack)
    try:
        sessions = jobs.join(2, slots=4, engine=host_engine)
        xs, kinds = inputs()
        for mode, slots in (("dense", None), ("sparse", 4)):
            results = on_all(sessions, lambda s, r, mode=mode: s.allreduce(xs[r], mode=mode))
            for res in results:
                check_result(res, xs, kinds, slots)
        # float16 travels as float32: its NaN/±Inf too
        hs, kinds = inputs(np.float16)
        for res in on_all(sessions, lambda s, r: s.allreduce(hs[r])):
            assert res.dtype == np.float16
            check_result(res, hs, kinds, None)
        # the strict mode refuses before anything is sent
        strict = jobs.join(1, slots=4, engine=host_engine, nonfinite="raise")[0]
        with pytest.raises(NonFiniteError, match="non-finite"):
            strict.allreduce(xs[0])
        assert strict.transport_counters["sent"] == 0
    finally:
        jobs.close()
