"""Data-parallel training on scikit-learn's digits images with n simulated workers in one
process: what ``examples/train_digits.py`` does over the switch, with the collective an
exact float32 sum, so that every selection rule, ratio and worker count can be trained in
well under a second each.

The model, data, split, batch, learning rate and warm-up are the example's: an MLP with
``depth`` hidden layers of ``hidden`` ReLU units, torch's default initialisation, plain SGD
at lr 1.0, 32 samples per worker per step, every worker's shard of a fresh permutation per
epoch, the gradient laid out as a DDP bucket (parameters in reverse order, weights row-major
(out, in)). Gradients are computed in float64 and rounded to float32, as a worker's bucket
is; ``BlockTopK`` sees exactly what the hook gives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from p4reduce.host.compress import BlockTopK, TopKConfig
from p4reduce.host.quantize import block_count

K = 64
BATCH = 32
LR = 1.0


@dataclass(frozen=True)
class Digits:
    xtr: np.ndarray
    xte: np.ndarray
    ytr: np.ndarray
    yte: np.ndarray


def load() -> Digits:
    """The example's split: images scaled to [0, 1], 80/20, stratified, fixed."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(
        x, d.target, test_size=0.2, random_state=0, stratify=d.target
    )
    return Digits(xtr, xte, ytr, yte)


@dataclass
class Mlp:
    """Weights (out, in) and biases per layer, float32 like torch's."""

    ws: list[np.ndarray]
    bs: list[np.ndarray]

    @classmethod
    def create(cls, depth: int, hidden: int, seed: int) -> Mlp:
        rng = np.random.default_rng(seed)
        dims = [64] + [hidden] * depth + [10]
        ws, bs = [], []
        for i, o in zip(dims[:-1], dims[1:], strict=True):
            lim = 1.0 / np.sqrt(i)  # torch.nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in))
            ws.append(rng.uniform(-lim, lim, (o, i)).astype(np.float32))
            bs.append(rng.uniform(-lim, lim, o).astype(np.float32))
        return cls(ws, bs)

    def params(self) -> list[np.ndarray]:
        """DDP's bucket order: the parameters in reverse order of registration."""
        return [p for w, b in zip(self.ws, self.bs, strict=True) for p in (w, b)][::-1]

    def edge_ranges(self) -> list[tuple[int, int]]:
        """Element ranges of the first and last layers in the bucket (``edge_layers``)."""
        ranges, off = [], 0
        last = len(self.ws) - 1
        # bucket order: b_last, w_last, ..., b_0, w_0; layer index of each
        owners = [i for i in range(last, -1, -1) for _ in (0, 1)]
        for p, layer in zip(self.params(), owners, strict=True):
            if layer in (0, last):
                ranges.append((off, off + p.size))
            off += p.size
        return ranges

    def grad(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Flat float32 gradient of the mean cross entropy, in bucket order."""
        acts = [x.astype(np.float64)]
        for w, b in zip(self.ws[:-1], self.bs[:-1], strict=True):
            acts.append(np.maximum(acts[-1] @ w.T.astype(np.float64) + b, 0.0))
        logits = acts[-1] @ self.ws[-1].T.astype(np.float64) + self.bs[-1]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1.0
        delta = p / len(y)
        gw: list[np.ndarray] = [np.empty(0)] * len(self.ws)
        gb: list[np.ndarray] = [np.empty(0)] * len(self.ws)
        for i in range(len(self.ws) - 1, -1, -1):
            gw[i] = delta.T @ acts[i]
            gb[i] = delta.sum(axis=0)
            if i:
                delta = (delta @ self.ws[i].astype(np.float64)) * (acts[i] > 0)
        flat = [g for w, b in zip(gw, gb, strict=True) for g in (w, b)][::-1]
        return np.concatenate([g.ravel() for g in flat]).astype(np.float32)

    def shifted(self, flat: np.ndarray, lr: float) -> Mlp:
        """A copy with ``lr · flat`` (bucket order) taken off the weights: error feedback's
        virtual iterate when ``flat`` is the residual (``TopKHookState.virtual``)."""
        out = Mlp([w.copy() for w in self.ws], [b.copy() for b in self.bs])
        out.step(flat, lr)
        return out

    def step(self, mean: np.ndarray, lr: float = LR) -> None:
        off = 0
        for p in self.params():
            p -= np.float32(lr) * mean[off : off + p.size].reshape(p.shape)
            off += p.size

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        h = x
        for w, b in zip(self.ws[:-1], self.bs[:-1], strict=True):
            h = np.maximum(h @ w.T + b, 0.0)
        return float(((h @ self.ws[-1].T + self.bs[-1]).argmax(1) == y).mean())


@dataclass
class Run:
    accuracy: float
    steps: int
    sent_blocks: list[int] = field(default_factory=list)
    """Per compressed step: the blocks that travelled (the union of the workers' masks)."""
    blocks: int = 0
    kept: list[float] = field(default_factory=list)
    """Per compressed step: the fraction of the accumulators' energy sent."""


def train(
    data: Digits,
    *,
    n: int,
    config: TopKConfig | None,
    epochs: int = 15,
    depth: int = 1,
    hidden: int = 128,
    edges: bool = False,
    seed: int = 0,
    lr: float = LR,
    topk_class: Any = BlockTopK,
    virtual: bool = True,
) -> Run:
    """Train; ``config`` None: dense (the plain mean of the workers' gradients).
    ``virtual``: each worker's gradient at the weights minus lr × its residual, as the
    example takes it (``TopKHookState.virtual``); False: at the weights themselves."""
    model = Mlp.create(depth, hidden, seed)
    size = sum(p.size for p in model.params())
    nb = block_count(size, K)
    always = None
    if edges:
        always = np.zeros(nb, dtype=bool)
        for a, b in model.edge_ranges():
            always[a // K : -(-b // K)] = True
    tks = [] if config is None else [topk_class(config, n=n, k=K, slots=8) for _ in range(n)]
    rng = np.random.default_rng(seed)
    run = Run(0.0, 0, blocks=nb)
    for _ in range(epochs):
        shards = np.array_split(rng.permutation(len(data.xtr)), n)
        for s in range(min(len(sh) for sh in shards) // BATCH):
            grads = []
            for r in range(n):
                idx = shards[r][s * BATCH : (s + 1) * BATCH]
                res = tks[r].states[0].feedback.residual if tks and tks[r].states else None
                at = model if not virtual or res is None else model.shifted(res, lr)
                grads.append(at.grad(data.xtr[idx], data.ytr[idx]))
            if not tks:
                mean = (np.sum(grads, axis=0, dtype=np.float32) / np.float32(n)).astype(np.float32)
            else:
                mean = collective(tks, grads, always, run)
            model.step(mean, lr)
            run.steps += 1
    run.accuracy = model.accuracy(data.xte, data.yte)
    return run


def collective(
    tks: list[Any], grads: list[np.ndarray], always: np.ndarray | None, run: Run
) -> np.ndarray:
    """One compressed step on every worker; the switch's sum is an exact float32 sum."""
    plans = [tk.prepare(0, g, always) for tk, g in zip(tks, grads, strict=True)]
    if getattr(plans[0], "energies", None) is not None:
        energies = np.sum([p.energies for p in plans], axis=0, dtype=np.float32)
        plans = [tk.agree(p, energies.copy()) for tk, p in zip(tks, plans, strict=True)]
    total = np.sum([p.payload for p in plans], axis=0, dtype=np.float32)
    means = [tk.complete(p, total.copy(), 0.0) for tk, p in zip(tks, plans, strict=True)]
    if plans[0].compressed:
        run.sent_blocks.append(int(np.logical_or.reduce([p.mask for p in plans]).sum()))
        t = total[plans[0].blocks * K :].astype(np.float64)
        run.kept.append(float(t[0] / t[1]) if t[1] > 0 else 1.0)
    for m in means[1:]:
        assert np.array_equal(m, means[0]), "every worker must get the same mean"
    return means[0]
