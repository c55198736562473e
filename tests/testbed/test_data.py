"""The pure parts of ``p4reduce check``: test tensors, reference sums and the bound check,
against an aggregation simulated with the host's own quantization (no processes)."""

from __future__ import annotations

import numpy as np
import pytest
from p4reduce.host import quantize
from p4reduce.testbed.data import Checker, agreed_exponents, compare, rank_data, reference


def simulate(arrays: list[np.ndarray], k: int, mode: str, slots: int) -> np.ndarray:
    """What the workers compute: quantize with the agreed exponents, add as int32 (wrapping),
    dequantize; float32, the inputs' shape."""
    n = len(arrays)
    e = agreed_exponents(arrays, k, mode, slots)
    total = np.zeros((e.size, k), dtype=np.int64)
    for a in arrays:
        blocks = quantize.to_blocks(a, k)
        total += quantize.quantize(blocks, e, n, own=quantize.block_exponents(blocks))
    sums = total.astype(np.int32)
    return quantize.dequantize(sums, e, n).reshape(-1)[: arrays[0].size]


def test_rank_data_is_deterministic_and_differs_by_rank() -> None:
    a = rank_data(5, 0, 1000, "float32")
    assert a.dtype == np.float32 and a.shape == (1000,)
    assert np.array_equal(a, rank_data(5, 0, 1000, "float32"))
    assert not np.array_equal(a, rank_data(5, 1, 1000, "float32"))
    assert not np.array_equal(a, rank_data(6, 0, 1000, "float32"))
    i = rank_data(5, 0, 1000, "int32")
    assert i.dtype == np.int32 and np.abs(i.astype(np.int64)).max() > 2**30
    with pytest.raises(ValueError):
        rank_data(0, 0, 10, "float64")


@pytest.mark.parametrize("density", [0.0, 0.01, 0.1, 0.5, 1.0])
def test_density_zeroes_whole_blocks(density: float) -> None:
    k, m = 64, 64 * 200 + 17
    x = rank_data(1, 2, m, "float32", density, k)
    nonzero = np.any(quantize.to_blocks(x, k) != 0, axis=1)
    b = nonzero.size
    expect = 0 if density == 0 else min(b, max(1, round(density * b)))
    assert int(nonzero.sum()) == expect
    blocks = quantize.to_blocks(x, k)
    assert np.all(np.all(blocks[nonzero] != 0, axis=1)[:-1])  # kept blocks are whole


def test_int32_reference_wraps_like_int32() -> None:
    big = np.array([2**31 - 1, -(2**31), 5], dtype=np.int32)
    ref = reference([big, big])
    assert ref.dtype == np.int32
    assert ref.tolist() == [-2, 0, 10]
    assert compare(ref, [big, big]).ok
    wrong = ref.copy()
    wrong[1] += 1
    c = compare(wrong, [big, big])
    assert not c.ok and c.mismatches == 1 and c.max_abs_error == 1


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_simulated_aggregation_is_within_the_bound(n: int, mode: str) -> None:
    k, slots, m = 64, 4, 64 * 37 + 5
    arrays = [rank_data(3, r, m, "float32", 0.3 if mode == "sparse" else 1.0, k) for r in range(n)]
    result = simulate(arrays, k, mode, slots)
    c = compare(result, arrays, k=k, mode=mode, slots=slots)
    assert c.ok, c
    assert c.max_abs_error <= c.bound
    assert c.bound > 0


def test_an_error_beyond_the_bound_is_caught() -> None:
    k, m, n = 64, 640, 3
    arrays = [rank_data(9, r, m, "float32") for r in range(n)]
    result = simulate(arrays, k, "dense", 64)
    checker = Checker(arrays, k=k, mode="dense", slots=64)
    assert checker.check(result).ok
    bad = result.copy()
    e = agreed_exponents(arrays, k, "dense", 64)
    bad[100] += np.float32(4 * quantize.bound(n, int(e[100 // k])) + 1e-6)
    c = checker.check(bad)
    assert not c.ok and c.mismatches == 1
    with pytest.raises(ValueError):
        checker.check(result[:-1])


def test_sparse_uses_the_class_exponent() -> None:
    k, slots = 4, 2
    # block 0 small, block 2 (same class as 0 for S = 2) large: class 0 takes the large one
    x = np.zeros(16, dtype=np.float32)
    x[0:4] = 0.001
    x[8:12] = 1000.0
    dense = agreed_exponents([x], k, "dense", slots)
    sparse = agreed_exponents([x], k, "sparse", slots)
    assert dense[0] < dense[2] and sparse[0] == sparse[2] == dense[2]
    assert sparse[1] == sparse[3] == 0
