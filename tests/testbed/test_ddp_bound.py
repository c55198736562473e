"""The tolerance ``p4reduce demo`` checks (testbed/ddp_bound.py): its per-step part holds for
p4reduce's arithmetic (host.quantize, as the switch sums) against float32 summation in any
order, and the sum over steps is what docs/demo.md states."""

from __future__ import annotations

import numpy as np
import pytest
from p4reduce.host import quantize as Q
from p4reduce.testbed.ddp_bound import U, allreduce_gap, gamma, param_tolerance, ulp


def p4reduce_sum(xs: list[np.ndarray], k: int = 64) -> np.ndarray:
    """What the switch returns: block exponents agreed over the workers, quantized int32
    contributions added with wrap-around, dequantized to float32."""
    n = len(xs)
    blocks = [Q.to_blocks(x, k) for x in xs]
    e = Q.block_exponents(np.maximum.reduce([np.abs(b) for b in blocks]))
    acc = np.zeros(blocks[0].shape, dtype=np.int64)
    for b in blocks:
        acc += Q.quantize(b, e, n)
    return Q.dequantize(acc.astype(np.int32), e, n).reshape(-1)[: xs[0].size]


def float32_sum(xs: list[np.ndarray], order: list[int]) -> np.ndarray:
    s = xs[order[0]].astype(np.float32).copy()
    for i in order[1:]:
        s = (s + xs[i]).astype(np.float32)
    return s


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_allreduce_gap_covers_both_sums(n: int) -> None:
    rng = np.random.default_rng(n)
    for trial in range(20):
        scale = 10.0 ** rng.uniform(-6, 2)
        m = int(rng.integers(1, 3000))
        # per-block magnitudes vary a lot, as gradients do
        xs = [
            (rng.standard_normal(m) * scale * rng.uniform(0, 1, m) ** 3).astype(np.float32)
            for _ in range(n)
        ]
        g = max(float(np.abs(x).max()) for x in xs)
        p4 = p4reduce_sum(xs).astype(np.float64)
        order = list(rng.permutation(n))
        gl = float32_sum(xs, order).astype(np.float64)
        gap = float(np.abs(p4 - gl).max())
        assert gap <= allreduce_gap(n) * g, (n, trial, gap, allreduce_gap(n) * g)


def test_gap_terms() -> None:
    # n = 4: quantization 16 · 2^-31, p4reduce rounding 4u, gloo 4 · γ(3); no division term
    c = allreduce_gap(4)
    assert c == pytest.approx(16 * 2.0**-31 + 4 * U * (1 + U) + 4 * gamma(3), rel=1e-12)
    # n = 3 is not a power of two: DDP's x · fl(1/3) and a hook's x / 3 may differ
    assert allreduce_gap(3) == pytest.approx(9 * 2.0**-31 + 3 * U * (1 + U) + 3 * gamma(2) + 9 * U)
    assert ulp(1.0) == 2.0**-23 and ulp(0.75) == 2.0**-24 and ulp(0.0) == 2.0**-149


def test_param_tolerance_sums_the_steps() -> None:
    t = param_tolerance(4, 0.1, [0.01, 0.02], [0.5, 0.5])
    grads = 0.1 * (allreduce_gap(4) + 8 * U) * (1 + U) * 0.03
    assert t.from_gradients == pytest.approx(grads)
    assert t.from_updates == 2 * ulp(0.5)
    assert t.tolerance == pytest.approx(grads + 2 * ulp(0.5))
    with pytest.raises(ValueError):
        param_tolerance(4, 0.1, [0.01], [0.5, 0.5])
