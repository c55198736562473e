"""Several native driver threads per call (``threads=``, docs/host.md, "Several driver
threads") end to end through ``p4reduce-switch``: every call with threads = 1, 2 and 3
gives the same bytes (int32 exactly; float32 too, since the switch's integer sum and the
dequantization are deterministic), within the bound of numpy's sum; under loss both ways;
with NaN/±Inf blocks; and a silent rank is reported naming every stuck slot, then the
resumed call completes. Small sizes: a few thousand elements over 8 slots."""

from __future__ import annotations

import random
import selectors
import time
from collections.abc import Callable

import numpy as np
import pytest
from conftest import Jobs
from p4reduce.host import AllreduceSession, AllreduceTimeout, RetryPolicy, UdpTransport, run_call
from p4reduce.host.protocol import Done, Failed, ProtocolError, Session, SessionBusy, native
from p4reduce.host.quantize import to_blocks
from p4reduce.host.wire import MSG_DENSE, MSG_SPARSE
from reflector import Reflector, answer
from stack import K, check, on_all

_engine_c = native._C

pytestmark = pytest.mark.skipif(not native.available(), reason="the native core is not built")

THREADS = (1, 2, 3)
SLOTS = 8


def tensors(seed: int, n: int, m: int, dtype: type, density: float = 1.0) -> list[np.ndarray]:
    """n tensors of m elements, each block non-zero with probability ``density``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        if dtype == np.int32:
            x = rng.integers(-(2**20), 2**20, m, dtype=np.int32)
        else:
            x = (rng.standard_normal(m) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
        nb = -(-m // K)
        zero = np.repeat(rng.random(nb) >= density, K)[:m]
        x[zero] = 0
        out.append(x)
    return out


def same_bytes(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), "the results of two thread counts differ"


def run_calls(
    sessions: list[AllreduceSession], calls: list[tuple[list[np.ndarray], str]]
) -> list[list[np.ndarray]]:
    """Every call in order on all ranks; the results per call, by rank."""
    return [
        on_all(sessions, lambda s, r, xs=xs, mode=mode: s.allreduce(xs[r], mode=mode))
        for xs, mode in calls
    ]


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_every_thread_count_gives_the_same_bytes(dense: Jobs, sparse: Jobs, program: str) -> None:
    """Consecutive calls (sizes 1 .. 5000, both dtypes; sparse at 10 % and 100 % block
    density) on jobs run with 1, 2 and 3 driver threads per rank: identical results, each
    within the bound of numpy's sum, the sets in step."""
    jobs = dense if program == "dense" else sparse
    n = 2
    calls = []
    for i, m in enumerate([1, K + 1, 1000, 5000]):
        for dtype in (np.float32, np.int32):
            if program == "dense":
                calls.append((tensors(i * 2 + 1, n, m, dtype), "dense"))
            else:
                for density in (0.1, 1.0):
                    calls.append(
                        (tensors(i * 4 + int(density * 10), n, m, dtype, density), "sparse")
                    )
    by_threads = {}
    for threads in THREADS:
        sessions = jobs.join(n, slots=SLOTS, threads=threads)
        by_threads[threads] = run_calls(sessions, calls)
        sets = [s.session.sets for s in sessions]
        np.testing.assert_array_equal(sets[0], sets[1])
        assert all(s.session.threads == threads for s in sessions)
    for c, (xs, mode) in enumerate(calls):
        for threads in THREADS:
            for res in by_threads[threads][c]:
                check(res, xs, sparse_slots=SLOTS if mode == "sparse" else None)
                same_bytes(res, by_threads[1][c][0])


def test_loss_both_ways_same_bytes(sparse: Jobs) -> None:
    """5 % of the packets lost on the way in and the results on the way out: two threads
    retransmit their own slots and give the bytes one thread gives without loss."""
    n, m = 2, 6000
    calls = [(tensors(40 + i, n, m, dt, d), mode)
             for i, (dt, d, mode) in enumerate([(np.float32, 1.0, "dense"), (np.int32, 1.0, "dense"),
                                                (np.float32, 0.3, "sparse")])]  # fmt: skip
    clean = run_calls(sparse.join(n, slots=SLOTS, threads=1), calls)
    sparse.stack.set_loss(0.05, range(n))
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.4, give_up_after=20.0)
    sessions = sparse.join(n, slots=SLOTS, threads=2, retry=retry)
    lossy = []
    retransmissions = 0
    for call in calls:
        lossy += run_calls(sessions, [call])
        retransmissions += sum(s.last_stats.retransmissions for s in sessions)
    assert retransmissions > 0
    for c in range(len(calls)):
        for res in lossy[c]:
            same_bytes(res, clean[c][0])


def test_nonfinite_blocks_with_two_threads(sparse: Jobs) -> None:
    """NaN/±Inf on one rank in blocks of slots owned by each thread: the whole block comes
    back NaN or the infinity on both ranks, with the bytes one thread gives."""
    n, m = 2, 12 * K - 3
    rng = np.random.default_rng(3)
    xs = [(rng.standard_normal(m) * 4).astype(np.float32) for _ in range(n)]
    xs[0][1 * K + 5] = np.nan  # slot 1: thread 0's
    xs[0][6 * K] = np.inf  # slot 6: thread 1's; -Inf there on rank 1: NaN
    xs[1][6 * K + 9] = -np.inf
    xs[1][11 * K + 1] = np.inf  # slot 3, the last, short block
    got = {}
    for threads in (1, 2):
        sessions = sparse.join(n, slots=SLOTS, threads=threads)
        got[threads] = run_calls(sessions, [(xs, "dense"), (xs, "sparse")])
    for c in range(2):
        for res in got[2][c]:
            same_bytes(res, got[1][c][0])
            blocks = to_blocks(res, K)
            assert np.isnan(blocks[1]).all() and np.isnan(blocks[6]).all()
            assert (blocks[11][: m - 11 * K] == np.inf).all()
            assert np.isfinite(np.delete(blocks, [1, 6, 11], axis=0)).all()


def test_silent_rank_names_every_stuck_slot_then_resume(dense: Jobs) -> None:
    """Rank 1 stays away: rank 0, two threads, fails within its give-up bound naming the
    stuck slots of both threads; once rank 1 runs the call and rank 0 resumes, both get
    the exact sum, and the next call works."""
    give_up = 1.0
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=give_up)
    s0, s1 = dense.join(2, slots=4, retry=retry, auto_recover=False, threads=2)
    xs = tensors(21, 2, 1000, np.int32)
    t = time.monotonic()
    with pytest.raises(AllreduceTimeout) as info:
        s0.allreduce(xs[0])
    waited = time.monotonic() - t
    assert give_up <= waited < give_up + 5.0  # loose: a hang is the failure
    err = info.value
    assert err.stuck_slots == [0, 1, 2, 3] and "slot 0" in str(err)
    assert err.missing_ranks == [1]
    both = on_all([s0, s1], lambda s, r: s.resume() if r == 0 else s.allreduce(xs[1]))
    for res in both:
        check(res, xs)
    ys = tensors(22, 2, 1000, np.float32)
    for res in on_all([s0, s1], lambda s, r: s.allreduce(ys[r])):
        check(res, ys)


# ------------------------------------------------------------------ the driver alone

KEY = 0x5EC2E7


@pytest.mark.parametrize("msg_type", [MSG_DENSE, MSG_SPARSE])
def test_driver_threads_against_a_lossy_reflector(msg_type: int) -> None:
    """One rank against a reflector that drops every 5th packet: with 1, 2, 4 and 16
    threads (16 slots: one each) both dtypes come back exact, and every thread count sends
    the same first transmissions."""
    retry = RetryPolicy(initial_timeout=0.01, max_timeout=0.05, give_up_after=20.0)
    refl = Reflector(drop_every=5).start()
    try:
        firsts = set()
        for threads in (1, 2, 4, 16):
            for dtype in (np.float32, np.int32):
                ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=16, msg_type=msg_type,
                              retry=retry, engine="native", threads=threads)  # fmt: skip
                x = (np.arange(9_000) % 997 - 300).astype(dtype)
                x[2000:4000] = 0  # zero blocks: header-only, skipped by sparse
                with UdpTransport(refl.address) as tr:
                    call = ses.allreduce(x)
                    end = run_call(call, tr)
                assert isinstance(end, Done), end
                assert np.array_equal(end.result, x)
                assert (call._group is None) == (threads == 1)
                firsts.add((dtype, end.stats.packets_sent - end.stats.retransmissions))
                assert tr.counters.received == end.stats.packets_received
        assert len(firsts) == 2  # one count per dtype, whatever the threads
    finally:
        refl.stop()


def test_more_threads_than_slots_use_one_per_slot() -> None:
    """threads beyond the call's active slots: one core per slot; a one-slot call runs on
    one core (no group)."""
    refl = Reflector().start()
    try:
        ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=3, engine="native", threads=8)
        with UdpTransport(refl.address) as tr:
            call = ses.allreduce(np.ones(3 * K, dtype=np.float32))
            assert isinstance(run_call(call, tr), Done)
            assert call._group is not None and len(call._group) == 3
            one = ses.allreduce(np.ones(5, dtype=np.float32))
            assert isinstance(run_call(one, tr), Done) and one._group is None
    finally:
        refl.stop()


def test_thread_count_and_group_errors() -> None:
    for bad in (0, 65, 1.5, "2"):
        with pytest.raises(ValueError, match="threads"):
            Session(rank=0, n=1, job_id=9, job_key=KEY, slots=4, engine="native", threads=bad)  # type: ignore[arg-type]
    ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=4, engine="native", threads=2)
    call = ses.allreduce(np.ones(4 * K, dtype=np.float32))
    g = call._the_group(2)
    assert g is not None and [(c.state) for c in g] == [0, 0]
    with pytest.raises(RuntimeError, match="2 driver threads"):
        call.on_timer(0.0)  # a group is driven by the native driver only
    with pytest.raises(ValueError, match="slot ranges"):
        _engine_c.run_group((g[1], g[0]), 0, 0, 0.1)
    with pytest.raises(TypeError, match="Core"):
        _engine_c.run_group((g[0], "x"), 0, 0, 0.1)
    with pytest.raises(RuntimeError, match="not in that state"):
        _engine_c.run_group(g, 0, 2, 0.1)


def test_runs_ending_on_their_budget_lose_no_result() -> None:
    """The driver hands back every ``budget`` seconds (the runner's cancel look); with a
    tiny budget almost every run ends while results are in flight, some already routed to
    a thread that has returned. None may be lost: with a 5 s retransmission timeout a lost
    one would show as a retransmission."""
    retry = RetryPolicy(initial_timeout=5.0, max_timeout=5.0, give_up_after=30.0)
    refl = Reflector().start()
    try:
        for msg_type in (MSG_DENSE, MSG_SPARSE):
            ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=16, msg_type=msg_type,
                          retry=retry, engine="native", threads=3)  # fmt: skip
            x = (np.arange(20_000) % 301 - 150).astype(np.float32)
            with UdpTransport(refl.address) as tr:
                call = ses.allreduce(x)
                mode, runs = 0, 0
                while True:
                    end, _ = call.run_native(tr.fileno(), mode, 0.0005)
                    mode, runs = 2, runs + 1
                    if end is not None:
                        break
            assert isinstance(end, Done) and np.array_equal(end.result, x)
            assert end.stats.retransmissions == 0 and runs > 1
    finally:
        refl.stop()


class MessyReflector(Reflector):
    """The reflector with a messy way back: each result is lost, sent twice, or held back
    and sent later behind others (reordered), at random (the way up stays in order, as the
    switch needs)."""

    def __init__(
        self,
        seed: int,
        lose: float = 0.05,
        dup: float = 0.2,
        hold: float = 0.3,
        change: Callable[[bytes], bytes] = answer,
    ) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.lose, self.dup, self.hold = lose, dup, hold
        self.change = change

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        held: list[tuple[bytes, object]] = []
        rng = self.rng
        try:
            while not self._stop.is_set():
                ready = sel.select(0.002)
                while ready:
                    try:
                        data, peer = self.sock.recvfrom(65536)
                    except BlockingIOError:
                        break
                    r = rng.random()
                    if r < self.lose:
                        continue
                    out = [self.change(data)] * (2 if r < self.lose + self.dup else 1)
                    if rng.random() < self.hold:
                        held += [(a, peer) for a in out]
                        continue
                    for a in out:
                        self.sock.sendto(a, peer)
                # some held results go now, in a random order; all of them when idle
                rng.shuffle(held)
                cut = rng.randint(0, len(held)) if ready else len(held)
                batch, held = held[:cut], held[cut:]
                for a, peer in batch:
                    self.sock.sendto(a, peer)
        except OSError:
            pass
        finally:
            sel.close()


@pytest.mark.parametrize("msg_type", [MSG_DENSE, MSG_SPARSE])
def test_results_lost_duplicated_and_reordered(msg_type: int) -> None:
    """Results lost (5 %), duplicated (20 %) and held back behind later ones (30 %): with
    1, 2 and 4 threads every call is exact, with NaN/±Inf blocks too, and the duplicates
    are counted and dropped."""
    retry = RetryPolicy(initial_timeout=0.02, max_timeout=0.1, give_up_after=20.0)
    refl = MessyReflector(seed=msg_type).start()
    try:
        for threads in (1, 2, 4):
            for dtype in (np.float32, np.int32):
                ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=16, msg_type=msg_type,
                              retry=retry, engine="native", threads=threads)  # fmt: skip
                x = (np.arange(8_000) % 613 - 200).astype(dtype)
                x[3000:4000] = 0
                if dtype == np.float32:
                    x[5 * K + 3] = np.nan  # slot 5's block: NaN comes back whole
                with UdpTransport(refl.address) as tr:
                    end = run_call(ses.allreduce(x), tr)
                assert isinstance(end, Done), end
                want = x.copy()
                if dtype == np.float32:
                    want[5 * K : 6 * K] = np.nan
                np.testing.assert_array_equal(end.result, want)
                assert end.stats.duplicates > 0
    finally:
        refl.stop()


def test_a_protocol_error_in_one_thread_breaks_the_call() -> None:
    """Results announcing an exponent for a block past the end (as when the workers
    disagree on the size): the thread that meets it breaks the call, every thread stops,
    the call is broken and the session refuses the next one, as with one thread."""

    def bad_exponent(data: bytes) -> bytes:
        a = answer(data)
        return a[:6] + bytes([140]) + a[7:]  # every result: agreed exponent 140

    refl = MessyReflector(seed=1, lose=0, dup=0, hold=0, change=bad_exponent).start()
    try:
        for threads in (1, 2, 4):
            ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=8, engine="native",
                          threads=threads)  # fmt: skip
            with UdpTransport(refl.address) as tr:
                call = ses.allreduce(np.ones(20 * K, dtype=np.float32))
                end = run_call(call, tr)
            assert isinstance(end, Failed) and isinstance(end.error, ProtocolError), end
            assert "disagree on the tensor's size" in str(end.error)
            assert call.state == "broken"
            with pytest.raises(SessionBusy, match="broken"):
                ses.allreduce(np.ones(K, dtype=np.float32))
    finally:
        refl.stop()
