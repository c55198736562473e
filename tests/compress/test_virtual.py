"""The property that broke agreed selection at lr 1.0 (issue 36), on a quadratic: with
top-k error feedback a block is applied only every ~B/keep steps, with everything it
gathered meanwhile; a gradient taken at the weights, which lag error feedback's virtual
iterate (weights − lr · residual) by what waits in the residual, keeps pushing a waiting
block the same way, and its late application overshoots: at lr · curvature = 1 (where
dense SGD converges in one step) the loss grows. Taken at the virtual iterate, the
gradient of a waiting block is that of the point it will reach, and the loss falls as
dense SGD's does."""

from __future__ import annotations

import numpy as np
import pytest
from p4reduce.host.compress import BlockTopK, TopKConfig

K, BLOCKS = 4, 8


def loss_after(steps: int, virtual: bool, n: int = 2, lr: float = 1.0) -> tuple[float, float]:
    """(initial, final) loss of f(x) = ½ Σ h x², h = 1, trained by n workers whose
    gradients are h · (the point) with top-k keeping 1 block of 8, agreed selection."""
    cfg = TopKConfig(ratio=1 / BLOCKS, selection="agreed", warmup_steps=0, mode="dense")
    tks = [BlockTopK(cfg, n=n, k=K, slots=2) for _ in range(n)]
    x = np.random.default_rng(0).uniform(0.5, 1.0, K * BLOCKS).astype(np.float32)
    first = float(0.5 * np.sum(x.astype(np.float64) ** 2))
    for _ in range(steps):
        grads = []
        for tk in tks:
            res = tk.states[0].feedback.residual if tk.states else None
            at = x if not virtual or res is None else x - np.float32(lr) * res
            grads.append(at.astype(np.float32))  # h = 1: the gradient is the point
        plans = [tk.prepare(0, g) for tk, g in zip(tks, grads, strict=True)]
        energies = np.sum([p.energies for p in plans], axis=0, dtype=np.float32)
        plans = [tk.agree(p, energies.copy()) for tk, p in zip(tks, plans, strict=True)]
        total = np.sum([p.payload for p in plans], axis=0, dtype=np.float32)
        means = [tk.complete(p, total.copy(), 0.0) for tk, p in zip(tks, plans, strict=True)]
        x = (x - np.float32(lr) * means[0]).astype(np.float32)
    return first, float(0.5 * np.sum(x.astype(np.float64) ** 2))


@pytest.mark.parametrize("n", [1, 2, 4])
def test_at_the_virtual_iterate_top_k_converges_where_dense_converges(n: int) -> None:
    first, last = loss_after(40, virtual=True, n=n)
    assert last <= 1e-6 * first, (first, last)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_at_the_weights_the_delayed_blocks_overshoot(n: int) -> None:
    first, last = loss_after(40, virtual=False, n=n)
    assert last > first, (first, last)  # it diverges: each block comes back ~8 times too big


def test_hook_state_virtual_shifts_the_bucket_parameters_and_restores_them() -> None:
    torch = pytest.importorskip("torch")
    from p4reduce.host.torch.compress import TopKHookState

    topk = BlockTopK(TopKConfig(warmup_steps=0, mode="dense"), n=2, k=K, slots=2)
    state = TopKHookState(topk, None, None)  # type: ignore[arg-type]  # no job needed here
    w = torch.nn.Parameter(torch.randn(3, 5))
    b = torch.nn.Parameter(torch.randn(3))
    untouched = torch.nn.Parameter(torch.randn(2))
    before = [p.detach().clone() for p in (w, b, untouched)]
    topk.prepare(0, np.zeros(18, dtype=np.float32))  # bucket 0: b at 0, w at 3
    res = np.arange(18, dtype=np.float32) / 10
    topk.states[0].feedback.residual = res
    state._layout[0] = [(b, 0), (w, 3)]
    with state.virtual(0.5):
        assert torch.equal(b.data, before[1] - 0.5 * torch.from_numpy(res[:3]))
        assert torch.equal(w.data, before[0] - 0.5 * torch.from_numpy(res[3:]).view(3, 5))
        assert torch.equal(untouched.data, before[2])
    for p, old in zip((w, b, untouched), before, strict=True):
        assert torch.equal(p.data, old)  # bit for bit
    with pytest.raises(RuntimeError, match="inside"), state.virtual(0.5):
        raise RuntimeError("inside")
    assert torch.equal(w.data, before[0]) and torch.equal(b.data, before[1])
    with pytest.raises(ValueError, match="lr"), state.virtual(0.0):
        pass
