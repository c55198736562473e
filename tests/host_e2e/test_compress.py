"""Block top-k (p4reduce.host.compress) on AllreduceSession through the sparse program:
workers are threads, each with its own BlockTopK; the switch sums what they selected."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import Jobs
from p4reduce.host.compress import TopKConfig, allreduce_topk, for_session
from p4reduce.host.quantize import NonFiniteError, block_count, block_exponents, to_blocks
from stack import K, on_all


class ThreadAllgather:
    """An allgather among the worker threads (the allgather path's collective)."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n, timeout=30)
        self.slots: list[np.ndarray | None] = [None] * n

    def __call__(self, rank: int, msg: np.ndarray) -> np.ndarray:
        self.slots[rank] = msg.copy()
        self.barrier.wait()
        out = np.stack(self.slots)  # type: ignore[arg-type]
        self.barrier.wait()  # nobody overwrites a slot before everyone has read
        return out


def grads(step: int, rank: int, size: int) -> np.ndarray:
    return np.random.default_rng(1000 * step + rank).standard_normal(size).astype(np.float32)


def test_topk_through_the_switch_local_agreed_and_allgather(sparse: Jobs) -> None:
    n, size, slots, steps = 3, 40 * K + 5, 4, 5
    sessions = sparse.join(n, slots=slots)
    gather = ThreadAllgather(n)
    for selection, mode in (("local", "sparse"), ("agreed", "sparse"), ("local", "allgather")):
        cfg = TopKConfig(ratio=0.1, selection=selection, warmup_steps=1, mode=mode)
        tks = [for_session(s, cfg, allgather=True) for s in sessions]
        for step in range(steps):
            xs = [grads(step, r, size) for r in range(n)]

            def work(s, r, xs=xs, tks=tks):  # noqa: ANN001, ANN202
                mean = allreduce_topk(
                    s, tks[r], xs[r], key="g", allgather=lambda msg, r=r: gather(r, msg)
                )
                st = s.last_stats
                # distinct packets: a loaded machine may retransmit some
                return mean, st.packets_sent - st.retransmissions

            res = on_all(sessions, work)
            means = [m for m, _ in res]
            for m in means[1:]:
                assert np.array_equal(m, means[0]), (selection, mode, step)
            st = [tk.states["g"] for tk in tks]
            assert len({s.paths[-1] for s in st}) == 1
            path = st[0].paths[-1]
            assert path == ("dense" if step == 0 else mode)
            # what was sent: the accumulators minus the new residuals
            if step == 0:
                np.testing.assert_allclose(means[0], np.mean(xs, axis=0), atol=1e-5)
            if path == "sparse":
                # one priming packet per slot, then the union of the selected blocks and
                # the telemetry tail's block
                union = st[0].union
                assert [p for _, p in res] == [slots + union + 1] * n, (selection, step)
                if selection == "agreed":
                    assert union == int(np.ceil(0.1 * 41))
        assert all(tk.states["g"].step == steps for tk in tks)


def test_error_feedback_sends_everything_eventually(sparse: Jobs) -> None:
    """With one gradient and then zeros, the sum of the means over the steps converges to
    the mean of that gradient: what was not sent is sent later (up to the switch's
    quantization)."""
    n, size = 2, 16 * K
    sessions = sparse.join(n, slots=4)
    cfg = TopKConfig(ratio=0.25, warmup_steps=0, mode="sparse")
    tks = [for_session(s, cfg) for s in sessions]
    first = [grads(0, r, size) for r in range(n)]
    total = np.zeros(size, dtype=np.float64)
    for step in range(4):
        xs = first if step == 0 else [np.zeros(size, dtype=np.float32)] * n
        means = on_all(sessions, lambda s, r, xs=xs: allreduce_topk(s, tks[r], xs[r]))
        total += means[0]
    np.testing.assert_allclose(total, np.mean(first, axis=0), atol=1e-5)
    # everything went: what is left is the switch's quantization error, fed back (issue 36)
    assert all(np.abs(tk.states[0].feedback.residual).max() < 1e-6 for tk in tks)


def test_allreduce_gives_the_agreed_exponents(sparse: Jobs) -> None:
    """``exponents=``: the exponent each block was quantized with (the workers' maximum per
    block on the dense path, per class of blocks on the sparse one), which the compressor's
    quantization feedback needs (issue 36)."""
    n, slots, size = 2, 4, 10 * K + 5
    sessions = sparse.join(n, slots=slots)
    xs = [grads(0, r, size) * np.float32(4.0**r) for r in range(n)]
    xs[0][3 * K : 4 * K] = 0.0  # a block only rank 1 sends (sparse)
    xs[1][3 * K : 4 * K] = 0.0  # ... and one nobody sends: exponent 0 on both paths
    own = np.array([block_exponents(to_blocks(x, K)) for x in xs])
    for mode in ("dense", "sparse"):
        exps = [np.full(block_count(size, K), 99, dtype=np.uint8) for _ in range(n)]
        on_all(sessions, lambda s, r, m=mode, e=exps: s.allreduce(xs[r], mode=m, exponents=e[r]))
        want = own.max(axis=0)
        if mode == "sparse":
            cls = [want[c::slots].max() for c in range(slots)]
            want = np.array([cls[b % slots] if want[b] else 0 for b in range(want.size)])
        for e in exps:
            np.testing.assert_array_equal(e[want != 0], want[want != 0])
            assert e[3] == 0 or mode == "sparse"
    with pytest.raises(ValueError, match="writeable"):
        sessions[0].allreduce(xs[0], exponents=np.zeros(3, dtype=np.uint8))


def test_nonfinite_gradients_propagate_through_the_switch_and_strict_mode_refuses(
    sparse: Jobs,
) -> None:
    """NaN/±Inf in one worker's gradient (blocks the top-k would not pick) come back as
    whole non-finite blocks on every worker through the switch, dense and sparse paths
    alike, in the same call; the compressor keeps a clean residual and the next step is
    finite. A session with ``nonfinite="raise"`` refuses the gradient before sending."""
    n, size = 2, 12 * K
    sessions = sparse.join(n, slots=4)
    for mode in ("sparse", "dense"):
        cfg = TopKConfig(ratio=0.1, warmup_steps=0, mode=mode)
        tks = [for_session(s, cfg) for s in sessions]
        xs = [grads(0, r, size) * np.float32(1e-3) for r in range(n)]
        xs[1][[3 * K + 1, 7 * K + 2]] = [np.nan, np.inf]  # tiny blocks, never selected
        xs[0][7 * K + 5] = np.inf
        means = on_all(sessions, lambda s, r, xs=xs, tks=tks: allreduce_topk(s, tks[r], xs[r]))
        for m in means:
            assert np.isnan(m[3 * K : 4 * K]).all(), mode
            assert (m[7 * K : 8 * K] == np.inf).all(), mode
            rest = np.delete(m, np.r_[3 * K : 4 * K, 7 * K : 8 * K])
            assert np.isfinite(rest).all(), mode
        for tk in tks:
            assert tk.states[0].nonfinite_steps == 1
            assert tk.states[0].feedback.residual is None  # void: as before the step
        nxt = [grads(1, r, size) for r in range(n)]
        means = on_all(sessions, lambda s, r, xs=nxt, tks=tks: allreduce_topk(s, tks[r], xs[r]))
        assert all(np.isfinite(m).all() for m in means), mode
    strict = sparse.join(n, slots=4, first=n, nonfinite="raise")
    tk = for_session(strict[0], TopKConfig(warmup_steps=0, mode="sparse"))
    bad = grads(2, 0, size)
    bad[5] = np.nan
    with pytest.raises(NonFiniteError, match="flat index 5"):
        allreduce_topk(strict[0], tk, bad)
    assert strict[0].stats.calls == 0  # nothing was sent
