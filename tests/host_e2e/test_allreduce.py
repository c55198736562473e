"""AllreduceSession end to end: workers (threads here) join through ``p4reduce-ctl serve``
and sum arrays through ``p4reduce-switch`` running dense.p4 or sparse.p4 behind the
loopback UDP adapter. Results are checked against numpy: int32 exactly (wrapping), float32
within docs/protocol.md's bound plus half an ulp of the result."""

from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import Jobs
from p4reduce.controller.client import RegistrationError
from p4reduce.host import (
    AllreduceSession,
    AllreduceTimeout,
    RetryPolicy,
    SessionFailed,
    decide_auto,
)
from p4reduce.host.quantize import NonFiniteError
from p4reduce.host.wire import MSG_DENSE, MSG_SPARSE
from stack import K, _bound, check, close_all, make_tensor, on_all, reference

SIZES = [1, K - 1, K, K + 1]
DTYPES = [np.float32, np.int32]


def run_all(sessions: list[AllreduceSession], xs: list[np.ndarray], **kw) -> list[np.ndarray]:
    return on_all(sessions, lambda s, r: s.allreduce(xs[r], **kw))


def tensors(seed: int, n: int, m: int, dtype: type, density: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [make_tensor(rng, m, dtype, density) for _ in range(n)]


def same_sets(sessions: list[AllreduceSession]) -> np.ndarray:
    sets = [s.session.sets for s in sessions]
    for other in sets[1:]:
        np.testing.assert_array_equal(other, sets[0])
    return sets[0]


# ------------------------------------------------------------------ sizes and worker counts


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_dense_sizes_and_dtypes(dense: Jobs, n: int) -> None:
    """Consecutive calls on one job: M in {1, K−1, K, K+1, 1000} (1000: 16 blocks over 4
    slots, four uses per slot), both dtypes, then empty and 0-d tensors; sets alternate
    across calls in step."""
    sessions = dense.join(n, slots=4)
    calls = 0
    for m in [*SIZES, 1000]:
        for dtype in DTYPES:
            xs = tensors(m * 7 + n, n, m, dtype)
            for r in run_all(sessions, xs):
                check(r, xs)
            calls += 1
    # an empty tensor and a 0-d one: shapes kept, the workers stay in step
    for shape in [(0,), (), (3, 0)]:
        xs = [np.full(shape, r + 1, dtype=np.float32) for r in range(n)]
        for r in run_all(sessions, xs):
            assert r.shape == shape and r.dtype == np.float32
            check(r, xs)
        calls += 1
    assert all(s.stats.calls == calls for s in sessions)
    same_sets(sessions)
    # mode="auto" on the dense program is dense, with no agreement round
    xs = tensors(99, n, 1000, np.float32)
    for r in run_all(sessions, xs, mode="auto"):
        check(r, xs)
    assert {s.last_mode for s in sessions} == {"dense"}
    assert sessions[0].last_stats.packets_sent == 16 + 4  # blocks + priming, nothing else


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_sparse_densities(sparse: Jobs, n: int) -> None:
    """Sparse messages at block densities 1 %, 10 %, 100 % (and all-zero tensors, which
    the small sizes at 1 % mostly are), every size, both dtypes, consecutive calls."""
    sessions = sparse.join(n, slots=8)
    for density in (0.01, 0.1, 1.0):
        for m in [*SIZES, 3000]:
            for dtype in DTYPES:
                xs = tensors(int(density * 100) + m + n, n, m, dtype, density)
                for r in run_all(sessions, xs, mode="sparse"):
                    check(r, xs, sparse_slots=8)
                assert {s.last_mode for s in sessions} == {"sparse"}
    same_sets(sessions)


def test_sparse_moves_only_the_union(sparse: Jobs) -> None:
    """A block non-zero on no worker never travels: 2 workers, disjoint 2 % supports."""
    sessions = sparse.join(2, slots=8)
    nb = 800
    xs = [np.zeros(nb * K, dtype=np.int32) for _ in range(2)]
    xs[0][: 8 * K] = 1  # blocks 0..7 on rank 0
    xs[1][100 * K : 108 * K] = 2  # blocks 100..107 on rank 1
    for r in run_all(sessions, xs, mode="sparse"):
        check(r, xs)
    # per worker: a priming packet per slot, then the 16 blocks of the union
    assert [s.last_stats.packets_sent for s in sessions] == [8 + 16, 8 + 16]


@pytest.mark.parametrize(
    "program, n, dtype, mode, density",
    [
        ("dense", 2, np.float32, "dense", 1.0),
        ("dense", 4, np.float32, "dense", 1.0),
        ("sparse", 2, np.float32, "sparse", 0.01),
        ("sparse", 2, np.int32, "sparse", 0.01),
        ("sparse", 4, np.float32, "sparse", 0.1),
        ("sparse", 2, np.float32, "auto", 0.01),
        ("sparse", 2, np.int32, "auto", 1.0),
    ],
)
def test_million_elements(
    request: pytest.FixtureRequest, program: str, n: int, dtype: type, mode: str, density: float
) -> None:
    """M = 1,000,003 (15,626 blocks, the last one 3 elements long), 64 slots. Prints the
    goodput (docs/host.md quotes it); no timing is asserted."""
    jobs: Jobs = request.getfixturevalue(program)
    sessions = jobs.join(n)
    xs = tensors(1_000_003 + n, n, 1_000_003, dtype, density)
    results = run_all(sessions, xs, mode=mode)
    used = sessions[0].last_mode
    assert {s.last_mode for s in sessions} == {used}
    for r in results:
        check(r, xs, sparse_slots=64 if used == "sparse" else None)
    if mode == "auto":
        assert used == ("sparse" if density < 0.5 else "dense")
    st = sessions[0].last_stats
    print(
        f"\n[figure] {program}.p4 {mode}->{used} {np.dtype(dtype).name} n={n} M=1,000,003 "
        f"density={density:g}: {st.seconds:.2f} s, {st.goodput_gbps() * 1000:.1f} Mbit/s goodput, "
        f"{st.packets_sent} packets sent by rank 0, {st.retransmissions} retransmissions"
    )


# ------------------------------------------------------------------ loss


@pytest.mark.parametrize("n, m", [(3, 20_000), (8, 3_000)])
def test_five_percent_loss_both_ways(sparse: Jobs, n: int, m: int) -> None:
    """5 % of the aggregation packets dropped on arrival and of the results on departure,
    on every worker's port: int32 still exact, float32 within the bound, dense and sparse
    messages (the sparse program takes both), consecutive calls."""
    sparse.stack.set_loss(0.05, range(n))
    sessions = sparse.join(n, slots=16, retry=RetryPolicy(initial_timeout=0.05, max_timeout=0.4))
    retransmissions = 0
    for mode, density in (("dense", 1.0), ("sparse", 0.1)):
        for dtype in DTYPES:
            xs = tensors(5 + len(mode), n, m, dtype, density)
            for r in run_all(sessions, xs, mode=mode):
                check(r, xs, sparse_slots=16 if mode == "sparse" else None)
            retransmissions += sum(s.last_stats.retransmissions for s in sessions)
    assert retransmissions > 0
    same_sets(sessions)
    job = sessions[0].job_id
    stats = {s["job_id"]: s for s in sparse.stack.ctl("stats")["jobs"]}[job]
    assert stats["drops"]["loss_in"] > 0 and stats["drops"]["loss_out"] > 0


def test_two_jobs_at_once_stay_apart(sparse: Jobs) -> None:
    """Two jobs on one switch at the same time, each with its own slots and group: one
    dense float32, one sparse int32; neither sees the other's sums."""
    a = sparse.join(2, slots=8)
    b = sparse.join(3, slots=8, first=2)
    assert a[0].assignment.slot_base != b[0].assignment.slot_base
    xa = tensors(31, 2, 4000, np.float32)
    xb = tensors(32, 3, 4000, np.int32, 0.2)

    def work(s: AllreduceSession, i: int) -> np.ndarray:
        if i < 2:
            return s.allreduce(xa[i])
        return s.allreduce(xb[i - 2], mode="sparse")

    results = on_all([*a, *b], work)
    for r in results[:2]:
        check(r, xa)
    for r in results[2:]:
        check(r, xb)


# ------------------------------------------------------------------ API features


def test_avg_and_in_place(dense: Jobs) -> None:
    n = 3
    sessions = dense.join(n, slots=8)
    xs = tensors(3, n, 5000, np.float32)
    originals = [x.copy() for x in xs]
    results = on_all(sessions, lambda s, r: s.allreduce(xs[r], op="avg", out=xs[r]))
    tol = _bound(originals, K, None) / n
    exact = reference(originals) / n
    for r, x in zip(results, xs, strict=True):
        assert r is x  # written in place, returned
        err = np.abs(x.astype(np.float64) - exact)
        assert (err <= tol + 1.5 * np.spacing(np.abs(x)).astype(np.float64)).all()
    # into another array of the input's shape, 2-D
    ys = [x.reshape(50, 100) for x in tensors(4, n, 5000, np.int32)]
    outs = [np.empty_like(y) for y in ys]
    results = on_all(sessions, lambda s, r: s.allreduce(ys[r], out=outs[r]))
    for r, o in zip(results, outs, strict=True):
        assert r is o
        check(o, ys)


def test_async_calls_overlap_and_keep_order(dense: Jobs) -> None:
    """Several calls in flight per worker (futures), mixed dtypes and sizes, an in-place
    one, then a synchronous call and a barrier, which queue behind them."""
    n = 3
    sessions = dense.join(n, slots=8)
    inputs = [tensors(10 + i, n, m, dt) for i, (m, dt) in enumerate(
        [(4000, np.float32), (K + 1, np.int32), (2500, np.float32), (1, np.int32)]
    )]  # fmt: skip
    copies = [[x.copy() for x in xs] for xs in inputs]

    def worker(s: AllreduceSession, r: int) -> list[np.ndarray]:
        futures = [s.allreduce_async(xs[r]) for xs in inputs[:3]]
        futures.append(s.allreduce_async(inputs[3][r], out=inputs[3][r]))
        last = s.allreduce(inputs[0][r])  # after the four queued calls
        s.barrier("after-async")
        return [f.result(timeout=60) for f in futures] + [last]

    for r, results in enumerate(on_all(sessions, worker)):
        for res, xs in zip(results[:4], copies, strict=True):
            check(res, xs)
        check(results[4], copies[0])
        assert results[3] is inputs[3][r]
        assert sessions[r].stats.calls == 5


def test_auto_mode_agrees_across_workers(sparse: Jobs) -> None:
    """mode="auto" on the sparse program: every worker takes the same decision although
    their local densities differ (an agreement round counts the union of non-zero
    blocks); tiny tensors go dense with no agreement round."""
    n = 4
    sessions = sparse.join(n, slots=8)
    for s in sessions:
        s.auto_recheck = 1  # a census on every call: each case decides from its own union
    m = 200 * K

    def dens(ds: list[float], dtype: type, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [make_tensor(rng, m, dtype, d) for d in ds]

    cases = [
        (dens([0.05, 0.0, 0.0, 0.0], np.float32, 1), "sparse"),  # union 5 %
        (dens([1.0, 0.0, 0.0, 0.0], np.float32, 2), "dense"),  # union 100 % (rank 0)
        (dens([0.01, 0.02, 0.01, 0.02], np.int32, 3), "sparse"),
        (dens([0.3, 0.3, 0.3, 0.3], np.int32, 4), "sparse"),  # union about 76 %: fewer packets
        (dens([0.7, 0.7, 0.7, 0.7], np.int32, 4), "dense"),  # union about 99 %
        (dens([0.5, 0.5, 0.5, 0.5], np.float32, 4), "dense"),  # float: saves under 20 %
        (dens([0.0] * 4, np.float32, 5), "sparse"),  # all zero: only the priming
    ]
    for xs, expected in cases:
        union = int(np.count_nonzero(np.any([x.reshape(-1, K) != 0 for x in xs], axis=(0, 2))))
        msg = decide_auto(union, 200, 8, xs[0].dtype == np.float32)
        assert msg == (MSG_SPARSE if expected == "sparse" else MSG_DENSE), (union, expected)
        for r in run_all(sessions, xs, mode="auto"):
            check(r, xs, sparse_slots=8 if expected == "sparse" else None)
        assert [s.last_mode for s in sessions] == [expected] * n
    # 2 rounds of slots or fewer: dense, no agreement round
    xs = dens([0.01] * 4, np.float32, 6)
    xs = [x[: 16 * K] for x in xs]
    for r in run_all(sessions, xs, mode="auto"):
        check(r, xs)
    assert [s.last_mode for s in sessions] == ["dense"] * n
    assert sessions[0].last_stats.packets_sent == 16 + 8


def test_auto_mode_caches_its_decision_per_shape(sparse: Jobs) -> None:
    """mode="auto" runs its census only for the first call of a shape and every
    auto_recheck-th call after it; in between, the union seen in the previous result (the
    same on every worker) decides, so a density change is followed one call later, and
    every worker always takes the same path. A recovery round clears the cache."""
    n, slots = 3, 8
    sessions = sparse.join(n, slots=slots)
    for s in sessions:
        s.auto_recheck = 4
    m = 200 * K  # 200 blocks
    rng = np.random.default_rng(7)
    low = [make_tensor(rng, m, np.float32, d) for d in (0.02, 0.0, 0.01)]
    full = [make_tensor(rng, m, np.float32, 1.0) for _ in range(n)]
    sparse_packets = min(slots, 200)  # priming; + the union
    seq = [(low, "sparse"), (low, "sparse"), (full, "sparse"), (full, "dense"), (low, "sparse")]
    censuses = [1, 1, 1, 1, 2]  # the 5th call is the 4th after the census: a new census
    for i, ((xs, expected), want_census) in enumerate(zip(seq, censuses, strict=True)):
        for r in run_all(sessions, xs, mode="auto"):
            check(r, xs, sparse_slots=slots if expected == "sparse" else None)
        assert [s.last_mode for s in sessions] == [expected] * n, i
        assert [s.censuses for s in sessions] == [want_census] * n, i
    # a cached call sends only its data packets: here sparse on the low-density tensors
    for r in run_all(sessions, low, mode="auto"):
        check(r, low, sparse_slots=slots)
    union = int(np.count_nonzero(np.any([x.reshape(-1, K) != 0 for x in low], axis=(0, 2))))
    st = sessions[0].last_stats
    assert st.packets_sent - st.retransmissions == sparse_packets + union
    assert sessions[0].censuses == 2
    # another shape has its own entry: a census first
    short = [x[: 100 * K].reshape(100, K) for x in low]
    for r in run_all(sessions, short, mode="auto"):
        check(r, short, sparse_slots=slots)
    assert [s.censuses for s in sessions] == [3] * n
    # after a recovery round (every worker) the cache is empty: a census again
    on_all(sessions, lambda s, r: s.recover())
    run_all(sessions, low, mode="auto")
    assert [s.censuses for s in sessions] == [4] * n
    with pytest.raises(ValueError, match="at least 1"):
        sessions[0].auto_recheck = 0


def test_argument_errors_send_nothing(dense: Jobs, sparse: Jobs) -> None:
    """Sessions in the strict non-finite mode (by default NaN/±Inf propagate, as in
    test_nonfinite.py)."""
    sessions = dense.join(2, slots=4, nonfinite="raise")
    s = sessions[0]
    x = np.ones(100, dtype=np.float32)
    before = s.transport_counters["sent"]
    bad = x.copy()
    bad[7] = np.nan
    with pytest.raises(NonFiniteError, match="index 7|7"):
        s.allreduce(bad)
    with pytest.raises(ValueError):
        s.allreduce(np.array([1.0, np.inf], dtype=np.float32), mode="auto")
    with pytest.raises(TypeError, match="float64"):
        s.allreduce(np.ones(3))
    with pytest.raises(TypeError, match="float64"):
        s.allreduce_async(np.ones(3))
    with pytest.raises(ValueError, match="dense program"):
        s.allreduce(x, mode="sparse")
    with pytest.raises(ValueError, match="op"):
        s.allreduce(x, op="max")
    with pytest.raises(ValueError, match="mode"):
        s.allreduce(x, mode="fast")
    with pytest.raises(ValueError, match="out"):
        s.allreduce(x, out=np.empty(99, dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        s.allreduce(x, out=np.empty(100, dtype=np.int32))
    with pytest.raises(TypeError, match="avg"):
        s.allreduce(np.ones(3, dtype=np.int32), op="avg")
    with pytest.raises(TypeError, match="float64"):
        s.allreduce(np.ones(3, dtype=np.float64))
    with pytest.raises(TypeError, match="uint8"):
        s.allreduce(np.ones(3, dtype=np.uint8))
    # more elements than the block field can number (a zero-stride view: no memory)
    huge = np.broadcast_to(np.float32(1), (1 << 32, 64))
    with pytest.raises(ValueError, match="block field allows"):
        s.allreduce(huge)
    with pytest.raises(ValueError, match="read-only"):
        s.allreduce(x, out=np.broadcast_to(np.float32(0), x.shape))
    with pytest.raises(NonFiniteError):
        s.allreduce(np.array([1, np.inf], dtype=np.float16))
    assert s.transport_counters["sent"] == before
    assert s.stats.calls == 0
    # nothing was used up: both workers are still in step
    xs = tensors(1, 2, 100, np.float32)
    for r in run_all(sessions, xs):
        check(r, xs)
    # NaN under mode="auto" is refused before the agreement round
    sp = sparse.join(1, slots=1, nonfinite="raise")[0]
    big = np.zeros(10 * K, dtype=np.float32)
    big[-1] = np.inf
    with pytest.raises(NonFiniteError):
        sp.allreduce(big, mode="auto")
    assert sp.transport_counters["sent"] == 0


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_both_engines_end_to_end(dense: Jobs, sparse: Jobs, program: str) -> None:
    """Sessions run on the native core by default (every other test here); the Python
    core on request, with the same sums within the same bounds."""
    jobs = dense if program == "dense" else sparse
    natives = jobs.join(3, slots=4)
    assert {s.engine for s in natives} == {"native"}
    close_all(natives)
    pys = jobs.join(3, slots=4, engine="python")
    assert {s.engine for s in pys} == {"python"}
    mode = "sparse" if program == "sparse" else "dense"
    for dtype in (np.float32, np.int32):
        xs = tensors(31, 3, 3000, dtype)
        for g in on_all(pys, lambda s, r, xs=xs: s.allreduce(xs[r], mode=mode)):
            check(g, xs, sparse_slots=4 if mode == "sparse" else None)


def test_float16_travels_as_float32_and_comes_back_rounded(dense: Jobs) -> None:
    """float16 arrays: the same packets as their float32 values (each float16 is one), the
    result the float32 one rounded to float16 once; non-contiguous and read-only inputs are
    only read; avg and out= work alike."""
    sessions = dense.join(3, slots=4)
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal(3000) * 100).astype(np.float16) for _ in range(3)]
    views = [np.repeat(x, 2)[::2] for x in xs]  # non-contiguous, the same values
    for v in views:
        v.flags.writeable = False
    got = on_all(sessions, lambda s, r: s.allreduce(views[r]))
    want = on_all(sessions, lambda s, r: s.allreduce(xs[r].astype(np.float32)))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float16 and g.shape == (3000,)
        assert np.array_equal(g, w.astype(np.float16))
        check(w, [x.astype(np.float32) for x in xs])  # so g is within that + half a float16 ulp
    outs = [np.empty(3000, dtype=np.float16) for _ in range(3)]
    avg = on_all(sessions, lambda s, r: s.allreduce(xs[r], op="avg", out=outs[r]))
    for o, a in zip(outs, avg, strict=True):
        assert a is o
        assert np.array_equal(o, (want[0] / np.float32(3)).astype(np.float16))


def test_leave_at_close_deletes_the_job(dense: Jobs) -> None:
    sessions = dense.join(3, slots=2)
    job = sessions[0].job_id
    xs = tensors(8, 3, 300, np.int32)
    for r in run_all(sessions, xs):
        check(r, xs)
    assert job in dense.stack.job_ids()
    for s in sessions:
        s.close()
        s.close()  # idempotent
    assert [s.left["deleted"] for s in sessions] == [False, False, True]
    assert job not in dense.stack.job_ids()
    with pytest.raises(RuntimeError, match="closed"):
        sessions[0].allreduce(xs[0])


# ------------------------------------------------------------------ failures


def test_silent_worker_timeout_then_resume(dense: Jobs) -> None:
    """Rank 1 stays away: rank 0 fails within its give-up bound naming the stuck slots;
    new calls are refused until the failed one is resumed; once rank 1 runs the same call
    and rank 0 resumes, both get the exact sum and the next call works."""
    give_up = 1.0
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=give_up)
    s0, s1 = dense.join(2, slots=4, retry=retry, auto_recover=False)
    xs = tensors(21, 2, 1000, np.int32)
    t = time.monotonic()
    with pytest.raises(AllreduceTimeout) as info:
        s0.allreduce(xs[0])
    waited = time.monotonic() - t
    assert give_up <= waited < give_up + 1.0
    err = info.value
    assert isinstance(err, TimeoutError)
    assert err.stuck_slots == [0, 1, 2, 3] and "slot 0" in str(err)
    # the switch's bitmaps, read through the registration service, name the silent rank
    assert err.missing_ranks == [1]
    assert "ranks [1] have not contributed" in str(err)
    with pytest.raises(SessionFailed, match="resume"):
        s0.allreduce(xs[0])
    both = on_all([s0, s1], lambda s, r: s.resume() if r == 0 else s.allreduce(xs[1]))
    for r in both:
        check(r, xs)
    ys = tensors(22, 2, 1000, np.float32)
    for r in run_all([s0, s1], ys):
        check(r, ys)
    same_sets([s0, s1])


def test_timeout_then_the_next_call_recovers(dense: Jobs) -> None:
    """Rank 1 is away while rank 0's call fails, leaving rank 0's contributions in the
    slots. The next call recovers by itself: rank 0 waits in the recovery round until rank
    1 (back, its own state intact) asks too; the controller clears the slots and both go on
    from the same call number, so the stale halves are not added: the sums are exact, and
    later calls work."""
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=0.5)
    s0, s1 = dense.join(2, slots=4, retry=retry)
    xs = tensors(23, 2, 1000, np.int32)
    with pytest.raises(AllreduceTimeout, match="recovers"):
        s0.allreduce(xs[0] + 1)  # what it leaves in the slots must not reach the next sum
    assert s0.session.next_call == 1 and s1.session.next_call == 0

    def after(s: AllreduceSession, r: int) -> np.ndarray:
        if r == 1:
            s.recover()  # a worker whose own calls did not fail joins the round explicitly
        return s.allreduce(xs[r])

    for r in on_all([s0, s1], after):
        check(r, xs)
    assert s0.recoveries == s1.recoveries == 1
    assert s0.session.next_call == s1.session.next_call == 2  # from max(1, 0) = 1
    for r in run_all([s0, s1], ys := tensors(24, 2, 1000, np.float32)):
        check(r, ys)
    same_sets([s0, s1])


def test_recovery_round_times_out_naming_the_absent_rank(dense: Jobs) -> None:
    """Nobody else comes to the recovery round: it fails within its timeout naming rank
    1, and the session stays failed (the next call tries again)."""
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=0.3)
    s0, s1 = dense.join(2, slots=4, retry=retry)
    xs = tensors(25, 2, 300, np.int32)
    with pytest.raises(AllreduceTimeout):
        s0.allreduce(xs[0])
    with pytest.raises(RegistrationError, match=r"recovery waiting for ranks 1"):
        s0.recover(timeout=0.3)
    assert s0._failure() is not None
    # the absent rank comes back: both recover and the job works again
    for r in on_all([s0, s1], lambda s, r: (s.recover(), s.allreduce(xs[r]))[1]):
        check(r, xs)


def test_async_failure_then_resume_through_auto(sparse: Jobs) -> None:
    """The failed call is the agreement round of an async mode="auto" call: its future
    raises AllreduceTimeout, the call queued behind it SessionFailed; resume() (queued on
    the session's thread) finishes the agreement and the sparse call after it."""
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=1.0)
    s0, s1 = sparse.join(2, slots=4, retry=retry, auto_recover=False)
    xs = tensors(41, 2, 100 * K, np.float32, 0.02)
    ys = tensors(42, 2, 300, np.int32)
    f1 = s0.allreduce_async(xs[0], mode="auto")
    f2 = s0.allreduce_async(ys[0])
    with pytest.raises(AllreduceTimeout):
        f1.result(timeout=30)
    with pytest.raises(SessionFailed):
        f2.result(timeout=30)
    both = on_all([s0, s1], lambda s, r: s.resume() if r == 0 else s.allreduce(xs[1], mode="auto"))
    assert s0.last_mode == s1.last_mode == "sparse"
    for r in both:
        check(r, xs, sparse_slots=4)
    for r in run_all([s0, s1], ys):
        check(r, ys)
    assert s0.stats.calls == s1.stats.calls == 2


# ------------------------------------------------------------------ reused buffers


def test_calls_reuse_buffers_without_touching_returned_results(dense: Jobs) -> None:
    """With ``out=`` a call's tensor-sized arrays go back to the session's pool and the
    next call of that shape takes them (host/protocol/buffers.py); a result returned to
    the caller (no ``out``) is never reused, so it stays as it was after later calls."""
    n, m = 2, 3 * K + 5
    sessions = dense.join(n, slots=2)
    xs = tensors(5, n, m, np.float32)
    outs = [np.empty(m, np.float32) for _ in range(n)]
    for r in on_all(sessions, lambda s, i: s.allreduce(xs[i], out=outs[i])):
        check(r, xs)
    pools = [s.session.buffers for s in sessions]
    assert all(p.bytes > 0 for p in pools)  # the input copy and the sums came back
    kept = run_all(sessions, xs)  # no out: the results are the calls' own sums
    for r in kept:
        check(r, xs)
    before = [r.copy() for r in kept]
    ys = tensors(6, n, m, np.float32)
    for _ in range(2):
        for r in on_all(sessions, lambda s, i: s.allreduce(ys[i], out=outs[i])):
            check(r, ys)
    for r, b in zip(kept, before, strict=True):
        np.testing.assert_array_equal(r, b)
    close_all(sessions)


def test_results_land_in_a_separate_out_and_a_failed_in_place_call_keeps_its_input(
    dense: Jobs,
) -> None:
    """An ``out`` of whole blocks that is not the input gets the rows as they arrive
    (no copy at the end), bit for bit what a call without ``out`` returns; ``out=x`` goes
    through the pool, so a call that fails leaves ``x`` as it was."""
    n, m = 2, 8 * K
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=1.0)
    sessions = dense.join(n, slots=4, retry=retry, auto_recover=False)
    for dtype in (np.float32, np.int32):
        xs = tensors(7, n, m, dtype)
        plain = run_all(sessions, xs)
        outs = [np.empty(m, dtype) for _ in range(n)]
        landed = on_all(sessions, lambda s, i, xs=xs, outs=outs: s.allreduce(xs[i], out=outs[i]))
        for r, o, p in zip(landed, outs, plain, strict=True):
            assert r is o and o.tobytes() == p.tobytes()
    x = tensors(8, 1, m, np.float32)[0]
    before = x.copy()
    with pytest.raises(AllreduceTimeout):
        sessions[0].allreduce(x, out=x)  # rank 1 never comes
    np.testing.assert_array_equal(x, before)
    close_all(sessions)
