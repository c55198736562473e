"""The native protocol core (host/_engine/) against the Python core, the specification.

- Differential: both cores of every worker get the same events (from the simulator, over
  a lossy, duplicating, reordering network and the model switch, with garbled results
  mixed in) and must return identical actions, states, sets, deadlines and counters.
- Failure and resume: a silent worker, timeouts naming the same slots, resume, the same
  results.
- Fuzz: random datagrams and mutated results into a running call of each core: counted
  (malformed, foreign, stale or duplicate) and dropped alike, the result unchanged.
- The same fuzz and simulation under -fsanitize=address,undefined, in a subprocess.
The property tests (test_protocol_properties.py) also drive the native core alone.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sanitized
from agg_model import ModelSwitch
from agg_ref import reference
from agg_sim import Sim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.host import wire
from p4reduce.host.protocol import CallTimeout, Failed, RetryPolicy, Session
from test_protocol_properties import make_tensor
from twin import TwinSession, same_actions

JOB = 42
KEY = 0x0BADCAFE  # the job key every packet carries
RETRY = RetryPolicy(initial_timeout=0.005, multiplier=2.0, max_timeout=0.04, give_up_after=1e9)
ROOT = Path(__file__).resolve().parents[2]


def twin_job(
    *,
    n: int,
    k: int,
    slots: int,
    msg_type: int,
    dtype: type,
    sizes: list[int],
    density: float,
    loss: float,
    dup: float,
    garble: float,
    seed: int,
    nonfinite: float = 0.0,
) -> None:
    rng = np.random.default_rng(seed)
    calls = [[make_tensor(rng, m, k, dtype, density, nonfinite) for _ in range(n)] for m in sizes]
    switch = ModelSwitch(n=n, k=k, job_id=JOB, slots=slots, msg_type=msg_type, key=KEY)
    twins = [
        TwinSession(
            rank=r,
            n=n,
            job_id=JOB,
            job_key=KEY,
            slots=slots,
            k=k,
            msg_type=msg_type,
            retry=RETRY,
            garble=garble,
            seed=seed + r,
        )  # fmt: skip
        for r in range(n)
    ]
    sim = Sim(switch, twins, seed=seed, loss_up=loss, loss_down=loss, dup=dup)  # type: ignore[arg-type]
    for r in range(n):
        sim.enqueue(r, [c[r] for c in calls])
    sim.run(until=1e6)
    sparse = msg_type == wire.MSG_SPARSE
    for c, tensors in enumerate(calls):
        ref = reference(tensors, k, slots, sparse)
        for r in range(n):
            o = sim.workers[r].outcomes[c]
            assert o.done, o.error
            assert np.array_equal(o.result, ref, equal_nan=True), f"call {c}, worker {r}"


@st.composite
def twin_params(draw) -> dict:
    k = draw(st.sampled_from([8, 64]))
    size = st.sampled_from([1, k - 1, k, k + 1, draw(st.integers(2 * k, 60 * k))])
    return dict(
        n=draw(st.integers(1, 6)),
        k=k,
        slots=draw(st.sampled_from([1, 2, 3, 5, 8, 64])),
        msg_type=draw(st.sampled_from([wire.MSG_DENSE, wire.MSG_SPARSE])),
        dtype=draw(st.sampled_from([np.float32, np.int32])),
        sizes=draw(st.lists(size, min_size=1, max_size=3)),
        density=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        loss=draw(st.sampled_from([0.0, 0.1, 0.3])),
        dup=draw(st.sampled_from([0.0, 0.1])),
        garble=draw(st.sampled_from([0.0, 0.2])),
        seed=draw(st.integers(0, 2**31 - 1)),
        # NaN/±Inf in float32 blocks: the nonfinite bits in packets and results
        nonfinite=draw(st.sampled_from([0.0, 0.0, 0.01, 0.2])),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(twin_params())
def test_both_cores_take_the_same_actions(p: dict) -> None:
    twin_job(**p)


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
@pytest.mark.parametrize("n", [3, 5])
def test_extreme_values_and_clamps_quantize_alike(msg_type: int, n: int) -> None:
    """Values near the float32 maximum, denormals, ±0, exact ties, and blocks whose agreed
    exponent is far above their own (tiny next to a peer's huge block): every quantize
    path of quantize_row (float32 multiply, float64 multiply, the reference path)."""
    rng = np.random.default_rng(n)
    k, m = 8, 8 * 40
    xs = []
    for _ in range(n):
        x = (rng.standard_normal(m) * np.exp2(rng.integers(-140, 120, m))).astype(np.float32)
        x[rng.random(m) < 0.1] = np.float32(3.4e38) * rng.choice([-1, 1])
        x[rng.random(m) < 0.1] = np.float32(1e-45)
        x[rng.random(m) < 0.1] = -0.0
        x[rng.random(m) < 0.05] = np.float32(0.5)
        xs.append(x.astype(np.float32))
    switch = ModelSwitch(n=n, k=k, job_id=JOB, slots=5, msg_type=msg_type, key=KEY)
    twins = [
        TwinSession(
            rank=r, n=n, job_id=JOB, job_key=KEY, slots=5, k=k, msg_type=msg_type, retry=RETRY
        )
        for r in range(n)
    ]
    sim = Sim(switch, twins, seed=n, loss_up=0.1, loss_down=0.1, dup=0.1)  # type: ignore[arg-type]
    for r in range(n):
        sim.enqueue(r, [xs[r]])
    sim.run(until=1e6)
    for w in sim.workers:
        assert w.outcomes[0].done


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_timeouts_and_resume_alike(msg_type: int) -> None:
    """Worker 1 is silent: the others' calls fail with the same CallTimeout (same stuck
    slots, same message) in both cores; once it speaks again, resume finishes alike."""
    pol = RetryPolicy(initial_timeout=0.01, multiplier=2.0, max_timeout=0.08, give_up_after=0.5)
    n, k, slots = 3, 8, 4
    rng = np.random.default_rng(7)
    xs = [make_tensor(rng, 300, k, np.float32, 0.7) for _ in range(n)]
    switch = ModelSwitch(n=n, k=k, job_id=JOB, slots=slots, msg_type=msg_type, key=KEY)
    twins = [
        TwinSession(
            rank=r, n=n, job_id=JOB, job_key=KEY, slots=slots, k=k, msg_type=msg_type, retry=pol
        )
        for r in range(n)
    ]
    sim = Sim(switch, twins, seed=1, loss_up=0.05, loss_down=0.05)  # type: ignore[arg-type]
    sim.workers[1].silent = True
    for r in range(n):
        sim.enqueue(r, [xs[r]])
    sim.run(until=5.0)
    for r in range(n):
        o = sim.workers[r].outcomes
        assert len(o) == 1 and not o[0].done and isinstance(o[0].error, CallTimeout)
    assert not sim.workers[1].outcomes[0].done  # it heard nothing either
    sim.workers[1].silent = False
    for r in range(n):
        sim.resume(r)
    sim.run(until=1e6)
    ref = reference(xs, k, slots, msg_type == wire.MSG_SPARSE)
    for r in range(n):
        done = [o for o in sim.workers[r].outcomes if o.done]
        assert len(done) == 1 and np.array_equal(done[0].result, ref)


def _fuzz(seed: int, rounds: int) -> None:
    """Random datagrams and mutated results into running calls of both cores."""
    rng = random.Random(seed)
    for i in range(rounds):
        msg_type = rng.choice([wire.MSG_DENSE, wire.MSG_SPARSE])
        dtype = rng.choice([np.float32, np.int32])
        k = rng.choice([8, 64])
        kw = dict(
            rank=0,
            n=1,
            job_id=JOB,
            job_key=KEY,
            slots=rng.choice([1, 3, 8]),
            k=k,
            msg_type=msg_type,
        )
        kw["retry"] = RETRY
        twin = TwinSession(garble=1.0, seed=seed * 1000 + i, **kw)  # type: ignore[arg-type]
        nf = rng.choice([0.0, 0.05])  # NaN/±Inf in some float32 blocks
        x = make_tensor(np.random.default_rng(i), rng.randrange(1, 20 * k), k, dtype, 0.5, nf)
        call = twin.allreduce(x)
        acts = call.start(0.0)
        now = 0.0
        # answer each packet as a one-worker switch would, garbled copies first (twin)
        switch = ModelSwitch(n=1, k=k, job_id=JOB, slots=kw["slots"], msg_type=msg_type, key=KEY)
        pending = [a.data for a in acts if hasattr(a, "data")]
        while pending:
            now += 0.001
            data = pending.pop(0)
            for _, res in switch.receive(0, data):
                for a in call.on_packet(res, now):
                    if hasattr(a, "data"):
                        pending.append(a.data)
            for _ in range(rng.randrange(3)):
                junk = rng.randbytes(rng.randrange(0, 300))
                assert call.on_packet(junk, now) == []
        assert call.state == "done"
        ref = reference([x], k, kw["slots"], msg_type == wire.MSG_SPARSE)
        assert np.array_equal(call.result, ref, equal_nan=True)


def test_fuzzed_results_are_counted_and_dropped_alike() -> None:
    _fuzz(seed=1, rounds=60)


def test_a_call_that_never_started_counts_packets_as_late() -> None:
    py = Session(rank=0, n=2, job_id=JOB, job_key=KEY, slots=2, engine="python")
    nat = Session(rank=0, n=2, job_id=JOB, job_key=KEY, slots=2, engine="native")
    a, b = py.allreduce(np.ones(10, np.float32)), nat.allreduce(np.ones(10, np.float32))
    data = wire.header_bytes(
        1, wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD, 0, JOB, 0, 0, 0, 0, 0, 0, KEY
    )
    same_actions(a.on_packet(data, 0.0), b.on_packet(data, 0.0), "before start")
    assert a.stats.as_dict() == b.stats.as_dict() and a.stats.late == 1
    same_actions(a.start(1.0), b.start(1.0), "start")
    with pytest.raises(RuntimeError, match="already started"):
        b.start(2.0)
    with pytest.raises(RuntimeError, match="only a failed call resumes"):
        b.resume(2.0)


def test_a_protocol_error_breaks_both_alike() -> None:
    """A result naming a next block outside the slot's class (sparse) or an exponent past
    the end (dense): the same ProtocolError from both."""
    for msg_type in (wire.MSG_DENSE, wire.MSG_SPARSE):
        calls = []
        for engine in ("python", "native"):
            s = Session(
                rank=0,
                n=1,
                job_id=JOB,
                job_key=KEY,
                slots=2,
                k=8,
                msg_type=msg_type,
                engine=engine,
            )
            c = s.allreduce(np.ones(16, np.float32))
            c.start(0.0)
            calls.append(c)
        nxt = 7 if msg_type == wire.MSG_SPARSE else 0
        flags = wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD
        res = wire.header_bytes(msg_type, flags, 0, JOB, 0, 0, 130, 0, 0, nxt, KEY)
        a, b = (c.on_packet(res, 0.1) for c in calls)
        same_actions(a, b, "priming result")
        if msg_type == wire.MSG_DENSE:  # the last block of slot 0 is block 0: exponent past the end
            res = wire.header_bytes(msg_type, wire.FLAG_RESULT, 0, JOB, 1, 0, 5, 0, 0, 0, KEY)
            res += bytes(32)
            a, b = (c.on_packet(res, 0.2) for c in calls)
            same_actions(a, b, "dense result")
        assert isinstance(a[-1], Failed) and "disagree" in str(a[-1].error)
        assert calls[0].state == calls[1].state == "broken"


# ------------------------------------------------------------------ sanitizers

_ASAN_SCRIPT = sanitized.LOAD_ENGINE + textwrap.dedent(
    """
    sys.path[:0] = sys.argv[2:4]
    import test_native_core as t
    t._fuzz(seed=2, rounds=25)
    t.twin_job(n=3, k=8, slots=3, msg_type=1, dtype=t.np.float32, sizes=[200, 9], density=0.6,
               loss=0.2, dup=0.1, garble=0.2, seed=5)
    t.twin_job(n=3, k=8, slots=3, msg_type=2, dtype=t.np.int32, sizes=[200, 9], density=0.3,
               loss=0.2, dup=0.1, garble=0.2, seed=6)
    for msg_type in (1, 2):  # NaN/±Inf: the nonfinite bits both ways
        t.twin_job(n=3, k=8, slots=3, msg_type=msg_type, dtype=t.np.float32, sizes=[200],
                   density=0.5, loss=0.2, dup=0.1, garble=0.2, seed=7, nonfinite=0.05)
    # the native driver (recvmmsg/sendmmsg, the GIL released) against a lossy reflector
    sys.path.insert(0, sys.argv[4])
    from reflector import Reflector
    from p4reduce.host import UdpTransport, run_call
    from p4reduce.host.protocol import Done, RetryPolicy, Session
    r = Reflector(drop_every=5).start()
    retry = RetryPolicy(initial_timeout=0.01, max_timeout=0.05, give_up_after=30)
    for msg_type in (1, 2):
        for threads in (1, 2, 3):  # one driver thread, and several over slot ranges
            for dtype in (t.np.int32, t.np.float32):
                ses = Session(rank=0, n=1, job_id=9, job_key=7, slots=8, msg_type=msg_type,
                              retry=retry, engine="native", threads=threads)
                x = (t.np.arange(30_000) % 977 - 400).astype(dtype)
                with UdpTransport(r.address) as tr:
                    end = run_call(ses.allreduce(x), tr)
                assert isinstance(end, Done) and t.np.array_equal(end.result, x)
    r.stop()
    # several threads: a timeout (nothing answers), then resume against a reflector
    from p4reduce.host.protocol import Failed
    quick = RetryPolicy(initial_timeout=0.01, max_timeout=0.02, give_up_after=0.1)
    ses = Session(rank=0, n=1, job_id=9, job_key=7, slots=8, retry=quick, engine="native",
                  threads=2)
    x = t.np.arange(3_000, dtype=t.np.float32)
    r = Reflector().start()
    import socket
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    with UdpTransport(silent.getsockname()) as tr:
        call = ses.allreduce(x)
        assert isinstance(run_call(call, tr), Failed)
    with UdpTransport(r.address) as tr:
        end = run_call(call, tr, resume=True)
    assert isinstance(end, Done) and t.np.array_equal(end.result, x)
    silent.close()
    r.stop()
    print("sanitized run ok")
    """
)


@pytest.mark.timeout(600)
def test_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    built = sanitized.asan_engine(tmp_path)
    if built is None:
        pytest.skip("no C compiler with libasan on this machine")
    so, env = built
    here = str(Path(__file__).parent)
    e2e = str(Path(__file__).parents[1] / "host_e2e")
    done = sanitized.run_child(_ASAN_SCRIPT, [str(so), here, str(ROOT), e2e], env, 500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "sanitized run ok" in done.stdout


_TSAN_SCRIPT = sanitized.LOAD_ENGINE + textwrap.dedent(
    """
    sys.path.insert(0, sys.argv[2])
    import numpy as np
    from reflector import Reflector
    from p4reduce.host import UdpTransport
    from p4reduce.host.protocol import Done, RetryPolicy, Session
    retry = RetryPolicy(initial_timeout=0.01, max_timeout=0.05, give_up_after=30)
    for drop in (0, 5):
        r = Reflector(drop_every=drop).start()
        for msg_type in (1, 2):
            for threads in (2, 4):
                ses = Session(rank=0, n=1, job_id=9, job_key=7, slots=8, msg_type=msg_type,
                              retry=retry, engine="native", threads=threads)
                x = (np.arange(20_000) % 977 - 400).astype(np.float32)
                with UdpTransport(r.address) as tr:
                    call = ses.allreduce(x)
                    mode = 0
                    while True:  # short runs: threads start, stop and hand over often
                        end, _ = call.run_native(tr.fileno(), mode, 0.002)
                        mode = 2
                        if end is not None:
                            break
                assert isinstance(end, Done) and np.array_equal(end.result, x)
        r.stop()
    print("tsan run ok")
    """
)


@pytest.mark.timeout(300)
def test_threaded_driver_under_thread_sanitizer(tmp_path: Path) -> None:
    """The driver with several threads (threads.c) built with -fsanitize=thread: no data
    race between the threads sharing a call (disjoint slots, the inboxes, the stop flags),
    against a lossy reflector, with runs ending on their budget every 2 ms."""
    tsan = sanitized.runtime("libtsan.so")
    if tsan is None:
        pytest.skip("no C compiler with libtsan on this machine")
    so = sanitized.build_engine(tmp_path / "_engine_c_tsan.so", ["-fsanitize=thread"], 200)
    env = {
        "LD_PRELOAD": tsan,
        "TSAN_OPTIONS": "halt_on_error=1:exitcode=66:report_signal_unsafe=0",
        "PYTHONMALLOC": "malloc",
    }
    e2e = str(Path(__file__).parents[1] / "host_e2e")
    done = sanitized.run_child(_TSAN_SCRIPT, [str(so), e2e], env, 200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "tsan run ok" in done.stdout and "ThreadSanitizer" not in done.stderr


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_nonfinite_bits_travel_alike(msg_type: int) -> None:
    """NaN, +Inf and -Inf in some workers' blocks (zero blocks of the others too): both
    cores send the same bits, take the same OR from the results and fill the same blocks
    with NaN or the infinity; the strict mode raises in both before anything is sent."""
    n, k, slots = 3, 8, 3
    xs = [np.zeros(100, np.float32) for _ in range(n)]
    for r, x in enumerate(xs):
        x[r::7] = r + 1.5
    xs[0][3] = np.nan  # block 0: NaN
    xs[1][9] = np.inf  # block 1: +Inf only
    xs[2][17] = -np.inf  # block 2: +Inf and -Inf -> NaN
    xs[0][18] = np.inf
    xs[2][40] = -np.inf  # block 5: -Inf only
    xs[1][90] = np.inf  # block 11: +Inf
    switch = ModelSwitch(n=n, k=k, job_id=JOB, slots=slots, msg_type=msg_type, key=KEY)
    twins = [
        TwinSession(
            rank=r, n=n, job_id=JOB, job_key=KEY, slots=slots, k=k, msg_type=msg_type, retry=RETRY
        )
        for r in range(n)
    ]
    sim = Sim(switch, twins, seed=3, loss_up=0.2, loss_down=0.2, dup=0.1)  # type: ignore[arg-type]
    for r in range(n):
        sim.enqueue(r, [xs[r]])
    sim.run(until=1e6)
    ref = reference(xs, k, slots, msg_type == wire.MSG_SPARSE)
    assert np.isnan(ref[0:8]).all() and (ref[8:16] == np.inf).all()
    assert np.isnan(ref[16:24]).all() and (ref[40:48] == -np.inf).all()
    assert np.isfinite(ref[24:40]).all() and np.isfinite(ref[48:88]).all()
    assert (ref[88:96] == np.inf).all() and np.isfinite(ref[96:]).all()
    for w in sim.workers:
        assert w.outcomes[0].done and np.array_equal(w.outcomes[0].result, ref, equal_nan=True)
    for engine in ("python", "native"):
        strict = Session(
            rank=0, n=n, job_id=JOB, job_key=KEY, slots=2, engine=engine, nonfinite="raise"
        )
        with pytest.raises(ValueError, match="non-finite"):
            strict.allreduce(xs[0])
        assert strict.next_call == 0 and strict.current is None
