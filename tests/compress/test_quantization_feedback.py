"""The switch's quantization error fed back (issue 36): each worker adds what the switch
rounded off its own blocks (from its input and the call's agreed exponents) to its
residual, so the sum of the applied means tracks the sum of the true means within a bound
that does not grow with the number of steps; without the feedback the error grows with
every step. The switch here is the protocol's arithmetic itself (agreed exponent = the
workers' maximum, int32 sums, one float32 dequantization: host/quantize.py)."""

from __future__ import annotations

import numpy as np
import pytest
from p4reduce.host.compress import BlockTopK, TopKConfig
from p4reduce.host.compress.quantfb import quantization_error
from p4reduce.host.compress.topk import blocks_of
from p4reduce.host.quantize import block_exponents, bound, dequantize, quantize

K = 64


def switch_sum(payloads: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """What the dense program gives: (the float32 sum, the agreed exponent per block)."""
    blocks = [blocks_of(p, K) for p in payloads]
    agreed = np.max([block_exponents(b) for b in blocks], axis=0).astype(np.uint8)
    total = np.sum([quantize(b, agreed, n) for b in blocks], axis=0, dtype=np.int64)
    out = dequantize(total.astype(np.int32), agreed, n)
    return out.ravel()[: payloads[0].size], agreed


def constant_gradients(n: int, size: int) -> list[np.ndarray]:
    """Per worker a constant gradient: one 1.0 per block (the block's exponent, so its
    quantum is n · 2^-30) and small values of every magnitude down to far below it."""
    rng = np.random.default_rng(7)
    grads = []
    for _ in range(n):
        g = (rng.uniform(-1, 1, size) * 10.0 ** rng.integers(-11, -6, size)).astype(np.float32)
        g[::K] = 1.0
        grads.append(g)
    return grads


def run(steps: int, feedback: bool, n: int = 2, size: int = 3 * K) -> np.ndarray:
    """|Σ applied means − Σ true means| per element after ``steps`` steps."""
    cfg = TopKConfig(ratio=1.0, warmup_steps=0, mode="dense", quantization_feedback=feedback)
    tks = [BlockTopK(cfg, n=n, k=K, slots=4) for _ in range(n)]
    grads = constant_gradients(n, size)
    true = np.sum(grads, axis=0, dtype=np.float64) / n
    applied = np.zeros(size)
    for _ in range(steps):
        plans = [tk.prepare(0, g) for tk, g in zip(tks, grads, strict=True)]
        summed, agreed = switch_sum([p.payload for p in plans], n)
        means = [
            tk.complete(p, summed.copy(), 0.0, agreed) for tk, p in zip(tks, plans, strict=True)
        ]
        applied += means[0][:size]
    return np.abs(applied - steps * true)


def test_the_accumulated_quantization_error_stays_bounded() -> None:
    n = 2
    quantum = float(bound(n, 128)) * 2 / n  # the step of one worker's q at E = 128: n · 2^-30
    err100, err500 = run(100, True), run(500, True)
    # each worker's residual holds less than its half quantum: the sum is off by < n of them
    assert err500.max() <= n * quantum, err500.max() / quantum
    assert err500.max() <= 2 * err100.max() + quantum  # does not grow with the steps
    base100, base500 = run(100, False), run(500, False)
    assert base500.max() > 4 * base100.max() > 0  # grows linearly without the feedback
    assert base500.max() > 50 * n * quantum  # about 200 quanta after 500 steps


def test_quantization_error_is_what_the_switch_rounds_away() -> None:
    rng = np.random.default_rng(3)
    n = 4
    xs = [(rng.standard_normal((5, K)) * 10.0 ** rng.integers(-12, 2, (5, K))).astype(np.float32)
          for _ in range(n)]  # fmt: skip
    agreed = np.max([block_exponents(x) for x in xs], axis=0).astype(np.uint8)
    exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
    total = np.sum([quantize(x, agreed, n) for x in xs], axis=0, dtype=np.int64)
    got = dequantize(total.astype(np.int32), agreed, n, dtype=np.float64)
    errs = np.sum([quantization_error(x, agreed, n).astype(np.float64) for x in xs], axis=0)
    # the workers' own errors add up to the switch's, up to their float32 rounding
    np.testing.assert_allclose(got + errs, exact, rtol=0, atol=1e-6 * np.abs(errs).max())
    assert np.abs(errs).max() > 0


def test_quantization_error_checks_its_input() -> None:
    with pytest.raises(ValueError, match="exponents"):
        quantization_error(np.zeros((2, K), np.float32), np.zeros(3, np.uint8), 2)
    assert quantization_error(np.zeros((0, K), np.float32), np.zeros(0, np.uint8), 2).shape == (
        0,
        K,
    )


def test_complete_checks_the_exponents() -> None:
    tk = BlockTopK(TopKConfig(ratio=1.0, warmup_steps=0, mode="dense"), n=1, k=K, slots=2)
    plan = tk.prepare(0, np.ones(K, np.float32))
    with pytest.raises(ValueError, match="exponents"):
        tk.complete(plan, plan.payload.copy(), 0.0, np.zeros(7, np.uint8))
