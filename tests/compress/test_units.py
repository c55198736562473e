"""Units of p4reduce.host.compress: selection, error feedback, the tail's agreement, the
policies and the cost model, with n simulated workers whose collective is an exact sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from p4reduce.host.compress import (
    AdaptiveRatio,
    BlockTopK,
    CostModel,
    ErrorFeedback,
    FixedRatio,
    StepReport,
    TopKConfig,
    block_energy,
    keep_count,
    ranges_to_blocks,
    select,
    volumes,
)
from p4reduce.host.compress.topk import blocks_of, expand
from p4reduce.host.quantize import NonFiniteError

K = 64


def floats(seed: int, size: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(size) * scale).astype(np.float32)


# ---------------------------------------------------------------- selection


def test_block_energy_pads_the_last_block() -> None:
    x = np.arange(1, 131, dtype=np.float32)  # 2 full blocks and 2 elements
    e = block_energy(x, K)
    assert e.shape == (3,)
    assert e[2] == 129.0**2 + 130.0**2
    assert e[0] == float(np.sum(np.arange(1, 65, dtype=np.float64) ** 2))


def test_select_takes_the_largest_and_breaks_ties_by_index() -> None:
    e = np.array([1.0, 5.0, 5.0, 0.0, 3.0])
    assert select(e, 2).tolist() == [False, True, True, False, False]
    assert select(e, 1).tolist() == [False, True, False, False, False]
    always = np.array([True, False, False, False, False])
    assert select(e, 1, always).tolist() == [True, True, False, False, False]
    assert select(e, 10).all()


def test_keep_count_bounds() -> None:
    assert keep_count(0.01, 151) == 2
    assert keep_count(0.0001, 151) == 1
    assert keep_count(1.0, 151) == 151
    with pytest.raises(ValueError, match="ratio"):
        keep_count(0.0, 10)


def test_ranges_to_blocks() -> None:
    m = ranges_to_blocks([(0, 10), (130, 200)], K, 5)
    assert m.tolist() == [True, False, True, True, False]
    with pytest.raises(ValueError, match="range"):
        ranges_to_blocks([(5, 2)], K, 5)


# ---------------------------------------------------------------- error feedback


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    size=st.integers(1, 700),
    ratio=st.floats(0.01, 1.0),
    steps=st.integers(1, 4),
)
def test_error_feedback_conserves_the_gradient(
    seed: int, size: int, ratio: float, steps: int
) -> None:
    """sent + residual == gradient + old residual, bit for bit, every step; and summed over
    the steps, sent + final residual == the sum of the gradients (up to float addition)."""
    ef = ErrorFeedback()
    total_sent = np.zeros(size, dtype=np.float64)
    total_grad = np.zeros(size, dtype=np.float64)
    for s in range(steps):
        g = floats(seed + s, size)
        acc = ef.accumulate(g)
        mask = select(block_energy(acc, K), keep_count(ratio, -(-size // K)))
        sent, rest = ef.split(acc, expand(mask, K, size))
        assert np.array_equal(sent + rest, acc)  # exact: one side of each element is 0.0
        assert np.array_equal(ef.residual, rest)
        total_sent += sent
        total_grad += g
    np.testing.assert_allclose(total_sent + ef.residual, total_grad, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), size=st.integers(1, 500))
def test_error_feedback_is_exact_in_the_integer_domain(seed: int, size: int) -> None:
    ef = ErrorFeedback()
    rng = np.random.default_rng(seed)
    grads = [rng.integers(-1000, 1000, size).astype(np.int32) for _ in range(3)]
    sent_total = np.zeros(size, dtype=np.int64)
    for g in grads:
        acc = ef.accumulate(g)
        mask = select(block_energy(acc, K), 1)
        sent, rest = ef.split(acc, expand(mask, K, size))
        assert np.array_equal(sent + rest, acc)
        sent_total += sent
    assert np.array_equal(sent_total + ef.residual, np.sum(grads, axis=0, dtype=np.int64))


def test_without_error_feedback_nothing_is_kept() -> None:
    ef = ErrorFeedback(enabled=False)
    g = floats(1, 200)
    acc = ef.accumulate(g)
    ef.split(acc, np.zeros(200, dtype=bool))
    assert ef.residual is None
    assert np.array_equal(ef.accumulate(g), g)


# ---------------------------------------------------------------- BlockTopK, n simulated workers


def simulate(cfg: TopKConfig, grads_per_step: list[list[np.ndarray]], n: int, **kw: object):
    """Run BlockTopK on n workers whose collective is the exact float32 sum of payloads
    (switch paths) or of the allgathered pairs; returns per step every worker's plan and
    mean."""
    tks = [BlockTopK(cfg, n=n, k=K, slots=4, **kw) for _ in range(n)]  # type: ignore[arg-type]
    out = []
    for grads in grads_per_step:
        plans = [tk.prepare("w", g) for tk, g in zip(tks, grads, strict=True)]
        if plans[0].energies is not None:  # agreed selection: the energies' collective
            energies = np.sum([p.energies for p in plans], axis=0, dtype=np.float32)
            plans = [tk.agree(p, energies.copy()) for tk, p in zip(tks, plans, strict=True)]
        assert len({p.path for p in plans}) == 1, "every worker picks the same path"
        if plans[0].path == "allgather":
            gathered = np.stack([tk.pack(p) for tk, p in zip(tks, plans, strict=True)])
            sums = [tk.unpack_sum(p, gathered) for tk, p in zip(tks, plans, strict=True)]
        else:
            total = np.sum([p.payload for p in plans], axis=0, dtype=np.float32)
            sums = [total.copy() for _ in plans]
        means = [tk.complete(p, s, 0.01) for tk, p, s in zip(tks, plans, sums, strict=True)]
        out.append((plans, means, tks))
    return out


def test_agreed_selection_is_identical_on_every_rank() -> None:
    n, size = 4, 1000
    steps = [[floats(100 * s + r, size) for r in range(n)] for s in range(6)]
    res = simulate(
        TopKConfig(ratio=0.1, selection="agreed", warmup_steps=1, mode="sparse"), steps, n
    )
    for plans, means, _ in res[1:]:
        assert plans[0].compressed
        for p in plans[1:]:
            assert np.array_equal(p.mask, plans[0].mask)
        for m in means[1:]:
            assert np.array_equal(m, means[0])
        # exactly the chosen blocks travel: the union is the chosen set
        union = np.logical_or.reduce([p.mask for p in plans])
        assert union.sum() == plans[0].mask.sum() == keep_count(0.1, 16)


def test_agreed_selection_sends_the_largest_blocks_of_this_steps_accumulators() -> None:
    """The property whose loss made agreed selection not train (issue 36): the blocks an
    agreed step sends are the ``keep`` blocks of largest energy of *this* step's
    accumulators (summed over the workers), so each step sends at least keep/B of their
    energy (top-k's contraction, on which error feedback's convergence rests). Each step
    here puts its gradient in a different block, far larger than the rest: selected from
    the previous step's energies, the hot block would travel one step late, after the
    residual it left had been sent as a full stale block."""
    n, nb, keep_ratio = 3, 20, 0.1
    size = nb * K
    keep = keep_count(keep_ratio, nb)
    steps = []
    for s in range(8):
        grads = [floats(50 * s + r, size, 0.01) for r in range(n)]
        for r, g in enumerate(grads):
            g[(s % nb) * K : (s % nb + 1) * K] += 10.0 + r  # this step's hot block
        steps.append(grads)
    cfg = TopKConfig(ratio=keep_ratio, selection="agreed", warmup_steps=1, mode="sparse")
    tks = [BlockTopK(cfg, n=n, k=K, slots=4) for _ in range(n)]
    for s, grads in enumerate(steps):
        before = [tk.states["w"].feedback.residual if "w" in tk.states else None for tk in tks]
        accs = [g if b is None else g + b for g, b in zip(grads, before, strict=True)]
        plans = [tk.prepare("w", g) for tk, g in zip(tks, grads, strict=True)]
        if s == 0:
            assert plans[0].energies is None and not plans[0].compressed  # warm-up
        else:
            assert getattr(plans[0], "energies", None) is not None, "no energies to agree on"
            energies = np.sum([p.energies for p in plans], axis=0, dtype=np.float32)
            plans = [tk.agree(p, energies.copy()) for tk, p in zip(tks, plans, strict=True)]
            summed = np.sum([block_energy(a, K) for a in accs], axis=0)
            want = select(summed, keep)
            assert plans[0].mask[s % nb], f"step {s}: its hot block waits"
            for p in plans:
                assert np.array_equal(p.mask, want), s
            assert summed[want].sum() >= keep / nb * summed.sum()  # the contraction
        total = np.sum([p.payload for p in plans], axis=0, dtype=np.float32)
        for tk, p in zip(tks, plans, strict=True):
            tk.complete(p, total.copy(), 0.0)
        kept = tks[0].states["w"].reports[-1].kept if s else 1.0
        assert kept >= keep / nb, (s, kept)


def test_agree_checks_its_input() -> None:
    tk = BlockTopK(TopKConfig(selection="agreed", warmup_steps=0), n=2, k=K, slots=4)
    plan = tk.prepare(0, floats(1, 5 * K))
    assert plan.energies is not None and plan.energies.shape == (5,)
    with pytest.raises(ValueError, match="agree\\(\\) before"):
        tk.complete(plan, np.zeros(5 * K + 4, dtype=np.float32))
    with pytest.raises(ValueError, match="summed energies"):
        tk.agree(plan, np.zeros(4, dtype=np.float32))
    tk.agree(plan, plan.energies * 2)
    with pytest.raises(ValueError, match="no energies"):
        tk.agree(plan, np.zeros(5, dtype=np.float32))
    local = BlockTopK(TopKConfig(warmup_steps=0), n=2, k=K, slots=4)
    assert local.prepare(0, floats(1, 5 * K)).energies is None


def test_local_selection_sends_the_union_and_the_mean_of_what_was_sent() -> None:
    n, size = 3, 2000
    steps = [[floats(10 * s + r, size) for r in range(n)] for s in range(3)]
    res = simulate(TopKConfig(ratio=0.05, warmup_steps=1, mode="sparse"), steps, n)
    plans, means, _ = res[0]
    assert not plans[0].compressed and plans[0].path == "dense"
    np.testing.assert_allclose(means[0], np.mean(steps[0], axis=0), rtol=1e-5, atol=1e-6)
    plans, means, tks = res[1]
    assert plans[0].compressed and plans[0].path == "sparse"
    expect = np.sum([p.payload[:size] for p in plans], axis=0, dtype=np.float32) / np.float32(n)
    assert np.array_equal(means[0], expect)
    for p in plans:
        assert p.mask.sum() == keep_count(0.05, 32)


def test_the_allgather_path_gives_the_same_mean_as_the_switch_paths() -> None:
    n, size = 4, 900
    steps = [[floats(7 * s + r, size) for r in range(n)] for s in range(3)]
    a = simulate(TopKConfig(ratio=0.1, warmup_steps=1, mode="allgather"), steps, n)
    b = simulate(TopKConfig(ratio=0.1, warmup_steps=1, mode="sparse"), steps, n)
    assert a[2][0][0].path == "allgather" and b[2][0][0].path == "sparse"
    for (_, ma, _), (_, mb, _) in zip(a, b, strict=True):
        np.testing.assert_allclose(ma[0], mb[0], rtol=1e-6, atol=1e-7)


def test_unpack_rejects_bad_indices() -> None:
    tk = BlockTopK(TopKConfig(ratio=0.5, warmup_steps=0, mode="allgather"), n=2, k=K, slots=4)
    plan = tk.prepare(0, floats(1, 300))
    msg = tk.pack(plan)
    bad = msg.copy()
    bad[0] = 99.0
    with pytest.raises(ValueError, match="outside"):
        tk.unpack_sum(plan, np.stack([msg, bad]))
    with pytest.raises(ValueError, match="shape"):
        tk.unpack_sum(plan, msg[None, :])


def test_dense_layers_are_always_sent_and_keep_no_residual() -> None:
    tk = BlockTopK(TopKConfig(ratio=0.05, warmup_steps=0, mode="sparse"), n=1, k=K, slots=4)
    g = floats(3, 64 * 20)
    always = ranges_to_blocks([(0, 64), (64 * 19, 64 * 20)], K, 20)
    plan = tk.prepare(0, g, always)
    assert plan.mask[0] and plan.mask[19] and plan.mask.sum() == 3
    res = tk.states[0].feedback.residual
    assert not res[:64].any() and not res[-64:].any()


def test_prepare_checks_its_input() -> None:
    tk = BlockTopK(TopKConfig(), n=2, k=K, slots=4)
    with pytest.raises(TypeError, match="float32"):
        tk.prepare(0, np.zeros(10, dtype=np.float64))
    bad = np.zeros(10, dtype=np.float32)
    bad[3] = np.nan
    strict = BlockTopK(TopKConfig(), n=2, k=K, slots=4, nonfinite="raise")
    with pytest.raises(NonFiniteError, match="flat index 3"):
        strict.prepare(0, bad)
    assert 0 not in strict.states  # nothing kept
    with pytest.raises(ValueError, match="nonfinite"):
        BlockTopK(TopKConfig(), n=2, k=K, slots=4, nonfinite="ignore")
    with pytest.raises(ValueError, match="not available"):
        BlockTopK(TopKConfig(mode="sparse"), n=2, k=K, slots=4, paths=("dense",))


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="ratio"):
        TopKConfig(ratio=0.0)
    with pytest.raises(ValueError, match="selection"):
        TopKConfig(selection="global")
    with pytest.raises(ValueError, match="mode"):
        TopKConfig(mode="gloo")
    with pytest.raises(TypeError, match="policy"):
        TopKConfig(policy=object())  # type: ignore[arg-type]


def test_a_new_bucket_size_starts_a_new_state() -> None:
    tk = BlockTopK(TopKConfig(warmup_steps=1), n=1, k=K, slots=4)
    p = tk.prepare(0, floats(1, 500))
    tk.complete(p, p.payload.copy())
    assert tk.states[0].step == 1
    tk.prepare(0, floats(1, 300))
    assert tk.states[0].step == 0 and tk.states[0].size == 300


# ---------------------------------------------------------------- the policy


def report(kept: float, comm: float | None = None, dense: float | None = None) -> StepReport:
    return StepReport(step=0, ratio=0.0, kept=kept, comm_seconds=comm, dense_seconds=dense)


def test_adaptive_ratio_grows_when_it_loses_too_much_and_shrinks_when_it_keeps_a_lot() -> None:
    p = AdaptiveRatio(ratio=0.05, beta=0.0)
    assert p.update(report(0.05)) == pytest.approx(0.05 * p.grow)
    q = AdaptiveRatio(ratio=0.05, beta=0.0)
    assert q.update(report(0.9)) == pytest.approx(0.05 * q.shrink)
    r = AdaptiveRatio(ratio=0.05, beta=0.0)
    assert r.update(report(0.25)) == 0.05  # inside the band


def test_adaptive_ratio_does_not_grow_past_the_time_budget_and_stays_clamped() -> None:
    p = AdaptiveRatio(ratio=0.05, beta=0.0, time_budget=0.5)
    assert p.update(report(0.0, comm=0.6, dense=1.0)) == 0.05
    assert p.update(report(0.0, comm=0.4, dense=1.0)) > 0.05
    lo = AdaptiveRatio(ratio=0.01, min_ratio=0.01, beta=0.0)
    for _ in range(50):
        lo.update(report(1.0))
    assert lo.ratio == 0.01
    with pytest.raises(ValueError):
        AdaptiveRatio(min_ratio=0.5, max_ratio=0.1)


def test_a_replacement_policy_drives_the_ratio() -> None:
    class Halving:
        ratio = 0.5

        def update(self, r: StepReport) -> float:
            self.ratio = max(self.ratio / 2, 1 / 64)
            return self.ratio

    n, size = 2, 64 * 64
    steps = [[floats(s * 3 + r, size) for r in range(n)] for s in range(4)]
    res = simulate(TopKConfig(warmup_steps=1, mode="sparse", policy=Halving()), steps, n)
    assert [p[0].ratio for p, _, _ in res] == [1.0, 0.5, 0.25, 0.125]
    assert [p[0].mask.sum() for p, _, _ in res] == [64, 32, 16, 8]
    assert FixedRatio(0.1).update(report(0.0)) == 0.1


def test_every_worker_sees_the_same_kept_fraction() -> None:
    n, size = 4, 3000
    steps = [[floats(5 * s + r, size, scale=r + 1) for r in range(n)] for s in range(4)]
    res = simulate(TopKConfig(ratio=0.05, warmup_steps=1, mode="sparse"), steps, n)
    tks = res[-1][2]
    kept = [[r.kept for r in tk.states["w"].reports] for tk in tks]
    assert all(k == kept[0] for k in kept) and len(kept[0]) == 3
    assert all(0 < k < 1 for k in kept[0])


# ---------------------------------------------------------------- the cost model


def test_cost_model_measures_every_path_then_picks_the_cheaper() -> None:
    cm = CostModel(refresh=0)
    vols = volumes(blocks=100, slots=8, union=10, selected=5, n=4, k=K)
    assert vols == {"dense": 108.0, "sparse": 18.0, "allgather": 4 * 5 * 65 * 4.0}
    picks = []
    for _ in range(3):
        p = cm.choose(vols)
        picks.append(p)
        cm.observe(p, vols[p], {"dense": 1.0, "sparse": 0.5, "allgather": 0.2}[p])
    assert picks == ["dense", "sparse", "allgather"]
    assert cm.choose(vols) == "allgather"
    # a slow gloo network: per byte ten times the price
    slow = CostModel(refresh=0)
    for p, t in {"dense": 1.0, "sparse": 0.5, "allgather": 2.0}.items():
        slow.observe(p, vols[p], t)
    assert slow.choose(vols) == "sparse"
    assert slow.choose(vols, allowed=("dense", "allgather")) == "dense"


def test_cost_model_fits_a_fixed_part_and_a_rate() -> None:
    cm = CostModel()
    for v in (10.0, 20.0, 40.0):
        cm.observe("sparse", v, 0.1 + 0.01 * v)
    assert cm.predict("sparse", 100.0) == pytest.approx(1.1)
    assert cm.predict("dense", 100.0) is None
    # the fixed cost decides: the same volume is cheaper on the path with less overhead
    cm.observe("dense", 50.0, 0.3)
    assert cm.predict("dense", 50.0) == pytest.approx(0.3)


def test_cost_model_refreshes_a_stale_path() -> None:
    cm = CostModel(paths=("dense", "sparse"), refresh=3)
    vols = {"dense": 100.0, "sparse": 10.0, "allgather": 0.0}
    cm.observe("dense", 100.0, 10.0)
    cm.observe("sparse", 10.0, 0.1)
    picks = []
    for _ in range(5):
        p = cm.choose(vols)
        picks.append(p)
        cm.observe(p, vols[p], 0.1 if p == "sparse" else 10.0)
    assert picks.count("dense") == 1 and picks[-1] == "sparse"


def test_the_auto_mode_choice_is_the_same_on_every_worker() -> None:
    n, size = 4, 4000
    steps = [[floats(11 * s + r, size) for r in range(n)] for s in range(8)]
    res = simulate(TopKConfig(ratio=0.02, warmup_steps=2, mode="auto"), steps, n)
    paths = [plans[0].path for plans, _, _ in res]
    # warm-up dense, then each unmeasured path once (sparse, allgather), then the model
    assert paths[:4] == ["dense", "dense", "sparse", "allgather"]
    # simulate() asserts every worker picked the same path at every step


# ---------------------------------------------------------------- NaN and ±Inf


NB_NF = 20  # blocks per tensor in the non-finite tests (the last one short)


def nonfinite_steps(n: int) -> tuple[list[list[np.ndarray]], dict[int, str]]:
    """Three steps of n workers' gradients, the second with NaN/±Inf in some blocks, and
    the kind each of those blocks must come back as (the uncompressed path's rule: NaN
    for a NaN or both infinities, else the one infinity)."""
    size = NB_NF * K - 7
    steps = [[floats(50 * s + r, size) for r in range(n)] for s in range(3)]
    g = steps[1]
    g[0][2 * K + 1] = np.nan  # block 2: NaN on rank 0
    g[0][5 * K] = np.inf  # block 5: +Inf on rank 0, -Inf on rank 1: NaN
    g[1][5 * K + 3] = -np.inf
    g[1][8 * K + 2] = np.inf  # block 8: +Inf on ranks 1 and 2
    g[n - 1][8 * K + 9] = np.inf
    g[n - 1][(NB_NF - 1) * K + 1] = -np.inf  # the short last block: -Inf
    return steps, {2: "nan", 5: "nan", 8: "+inf", NB_NF - 1: "-inf"}


def check_kinds(mean: np.ndarray, kinds: dict[int, str]) -> None:
    blocks = blocks_of(mean, K)
    size = mean.size
    for b in range(NB_NF):
        row = blocks[b][: min(K, size - b * K)]
        kind = kinds.get(b)
        if kind is None:
            assert np.isfinite(row).all(), b
        elif kind == "nan":
            assert np.isnan(row).all(), b
        else:
            assert (row == (np.inf if kind == "+inf" else -np.inf)).all(), (b, row)


@pytest.mark.parametrize("mode", ["dense", "sparse", "allgather"])
@pytest.mark.parametrize("selection", ["local", "agreed"])
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_nonfinite_blocks_come_back_whole_on_every_worker(mode: str, selection: str) -> None:
    """Each block that holds NaN/±Inf on some worker comes back whole as NaN or the
    infinity on every worker, whatever the selection and the path; the step is void for
    the compressor (residual, policy and agreed energies as before it), and the next
    finite step goes on as if it had not happened."""
    n = 3
    steps, kinds = nonfinite_steps(n)
    cfg = TopKConfig(ratio=0.25, selection=selection, warmup_steps=1, mode=mode)
    ref = simulate(cfg, [steps[0], steps[2]], n)  # the same run without the bad step
    got = simulate(cfg, steps, n)
    plans, means, tks = got[1]
    assert plans[0].path == mode and plans[0].compressed
    assert [p.nonfinite for p in plans] == [2, 2, 2]
    for m in means:
        check_kinds(m, kinds)
    for tk, rtk in zip(tks, ref[1][2], strict=True):
        st, rst = tk.states["w"], rtk.states["w"]
        assert st.nonfinite_steps == 1 and rst.nonfinite_steps == 0
        assert np.isfinite(st.feedback.residual).all()
        assert len(st.reports) == len(rst.reports)  # the void step fed no policy
    # the step after: exactly what the run without the bad step gives
    for m, rm in zip(got[2][1], ref[1][1], strict=True):
        assert np.array_equal(m, rm)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_nonfinite_during_warmup_and_on_one_worker_only() -> None:
    n = 2
    size = 6 * K
    g = [floats(r, size) for r in range(n)]
    g[1][4 * K + 7] = -np.inf
    res = simulate(TopKConfig(warmup_steps=2, mode="sparse"), [g], n)
    plans, means, tks = res[0]
    assert not plans[0].compressed and plans[0].path == "dense"
    for m in means:
        assert (m[4 * K : 5 * K] == -np.inf).all()
        assert np.isfinite(m[: 4 * K]).all() and np.isfinite(m[5 * K :]).all()
        np.testing.assert_allclose(m[: 4 * K], np.mean(g, axis=0)[: 4 * K], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_allgather_overflow_makes_the_whole_tensor_nan_on_every_worker() -> None:
    """The allgather message holds the same number of blocks on every worker; a worker
    with more non-finite blocks than that raises the tail's flag and every worker's
    whole result is NaN (the blocks are unknown to the others)."""
    n = 2
    size = 10 * K
    steps = [[floats(10 * s + r, size) for r in range(n)] for s in range(2)]
    for b in (1, 4, 7):  # three non-finite blocks; the message holds ceil(0.1·10) = 1
        steps[1][0][b * K] = np.inf
    res = simulate(TopKConfig(ratio=0.1, warmup_steps=1, mode="allgather"), steps, n)
    plans, means, tks = res[1]
    assert plans[0].selected == plans[1].selected == 1
    for m in means:
        assert np.isnan(m).all()
    for tk in tks:
        assert tk.states["w"].nonfinite_steps == 1
        assert np.isfinite(tk.states["w"].feedback.residual).all()
    # one non-finite block fits: it displaces the selected one and comes back exact
    steps[1][0][[4 * K, 7 * K]] = 1.0
    res = simulate(TopKConfig(ratio=0.1, warmup_steps=1, mode="allgather"), steps, n)
    for m in res[1][1]:
        assert (m[K : 2 * K] == np.inf).all()
        assert np.isfinite(m[:K]).all() and np.isfinite(m[2 * K :]).all()
