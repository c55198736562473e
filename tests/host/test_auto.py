"""host/auto.py without a network: the census vector sums to the union, the result's union,
and the per-shape decision cache (census on the first call and every ``recheck``-th)."""

from __future__ import annotations

import numpy as np
import pytest
from p4reduce.host import wire
from p4reduce.host.auto import (
    AutoCache,
    census_union,
    census_vector,
    decide_auto,
    result_union,
)

SPARSE, DENSE = wire.MSG_SPARSE, wire.MSG_DENSE


@pytest.mark.parametrize("blocks", [1, 4, 5, 6, 203])
def test_census_sums_give_the_union(blocks: int) -> None:
    rng = np.random.default_rng(blocks)
    maps = [rng.random(blocks) < p for p in (0.1, 0.0, 0.5)] + [np.ones(blocks, dtype=bool)] * 29
    sums = np.sum([census_vector(m) for m in maps], axis=0, dtype=np.int64).astype(np.int32)
    assert census_vector(maps[0]).size == -(-blocks // 5)
    # 32 workers, every block non-zero on at least 29: no field carries into the next
    assert census_union(sums, blocks) == blocks
    few = np.sum([census_vector(m) for m in maps[:3]], axis=0).astype(np.int32)
    assert census_union(few, blocks) == int(np.count_nonzero(np.any(maps[:3], axis=0)))


def test_result_union_counts_non_zero_blocks() -> None:
    r = np.zeros(10 * 64 + 3, dtype=np.float32)
    r[5] = 1.0
    r[3 * 64] = -2.0
    r[-1] = 1e-30  # the short last block
    assert result_union(r, 64) == 3
    assert result_union(np.zeros(0, dtype=np.int32), 64) == 0
    with pytest.raises(TypeError, match="float64"):
        result_union(np.zeros(8), 4)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("size", [1, 63, 64, 65, 64 * 7, 64 * 7 + 5])
def test_result_union_is_any_non_zero_per_block(dtype: type, size: int) -> None:
    """The bit-pattern OR against its definition, ``(block != 0).any()``, on values that
    tell them apart: -0.0 (zero), NaN, ±Inf, denormals, int32 with only the top bit."""
    rng = np.random.default_rng(size)
    if dtype is np.float32:
        pool = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1.0], np.float32)
    else:
        pool = np.array([0, -(2**31), 1, -1, 2**30], np.int32)
    for density in (0.0, 0.01, 0.2, 1.0):
        r = np.zeros(size, dtype=dtype)
        hit = rng.random(size) < density
        r[hit] = rng.choice(pool, int(hit.sum()))
        if dtype is np.float32:
            r[~hit & (rng.random(size) < 0.5)] = -0.0
        padded = np.zeros(-(-size // 64) * 64, dtype=dtype)
        padded[:size] = r
        expected = int(np.count_nonzero((padded.reshape(-1, 64) != 0).any(axis=1)))
        assert result_union(r, 64) == expected
        assert result_union(r.reshape(1, -1)[:, ::-1][:, ::-1], 64) == expected  # a view


def test_cache_runs_a_census_first_and_every_recheck_calls() -> None:
    cache = AutoCache(recheck=3)
    a, b = ((100,), "<f4"), ((100,), "<i4")
    assert cache.decision(a) is None  # first call: census
    cache.learn(a, SPARSE, census=True)
    assert cache.decision(a) == SPARSE and cache.decision(b) is None
    cache.learn(a, DENSE, census=False)  # the previous result changed the decision
    assert cache.decision(a) == DENSE
    cache.learn(a, DENSE, census=False)
    assert cache.decision(a) is None  # the 4th call is the 3rd after the census
    cache.learn(a, SPARSE, census=True)
    assert cache.decision(a) == SPARSE
    cache.learn(b, SPARSE, census=False)  # a key without a census is not created
    assert cache.decision(b) is None and len(cache) == 1
    cache.clear()
    assert cache.decision(a) is None and len(cache) == 0
    with pytest.raises(ValueError, match="at least 1"):
        AutoCache(recheck=0)


def test_every_call_a_census_with_recheck_1() -> None:
    cache = AutoCache(recheck=1)
    cache.learn(((8,), "<f4"), SPARSE, census=True)
    assert cache.decision(((8,), "<f4")) is None


def test_decide_auto_counts_packets() -> None:
    # float32: sparse only with a 20 % saving; int32: sparse when fewer packets
    assert decide_auto(0, 1000, 64, True) == SPARSE
    assert decide_auto(1000, 1000, 64, True) == DENSE
    assert decide_auto(900, 1000, 64, False) == SPARSE
    assert decide_auto(940, 1000, 64, False) == DENSE


def test_the_oldest_shape_is_forgotten_first() -> None:
    from p4reduce.host.auto import _CACHE_SHAPES

    cache = AutoCache()
    keys = [((m,), "<f4") for m in range(_CACHE_SHAPES + 1)]
    for k in keys:
        cache.learn(k, SPARSE, census=True)
    assert len(cache) == _CACHE_SHAPES
    assert cache.decision(keys[0]) is None and cache.decision(keys[-1]) == SPARSE
