"""Property tests: n sessions through the model switch over a lossy, duplicating and
reordering network (agg_sim), dense and sparse, float32 and int32, several calls in a row.

Every run must finish, every worker must get exactly the reference result (which also
equals the loss-free run's: the reference is what a loss-free run computes, and a double
count or a missed contribution would change it), and the packets each worker sent for the
first time must be exactly those of a loss-free call.
"""

from __future__ import annotations

import numpy as np
import pytest
from agg_model import ModelSwitch
from agg_ref import first_transmissions, reference
from agg_sim import Sim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.host import wire
from p4reduce.host.protocol import RetryPolicy, Session

JOB = 42
KEY = 0x0BADCAFE  # the job key every packet carries
RETRY = RetryPolicy(initial_timeout=0.005, multiplier=2.0, max_timeout=0.04, give_up_after=1e9)


def make_tensor(
    rng: np.random.Generator, m: int, k: int, dtype: type, density: float, nonfinite: float = 0.0
) -> np.ndarray:
    b = -(-m // k)
    if dtype == np.int32:
        x = rng.integers(-(2**31), 2**31, m, dtype=np.int64).astype(np.int32)
        if rng.random() < 0.3:  # extremes, so the sums wrap
            x[rng.random(m) < 0.5] = np.int32(2**31 - 1)
            x[rng.random(m) < 0.3] = np.int32(-(2**31))
    else:
        scale = np.exp2(rng.integers(-30, 30, b)).repeat(k)[:m]
        x = (rng.standard_normal(m) * scale).astype(np.float32)
    keep = (rng.random(b) < density).repeat(k)[:m]  # zero blocks
    x[~keep] = 0
    if nonfinite and dtype == np.float32:  # NaN/±Inf at random places, zero blocks too
        bad = np.flatnonzero(rng.random(m) < nonfinite)
        x[bad] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype=np.float32), bad.size)
    return x


def run_job(
    *,
    n: int,
    k: int,
    slots: int,
    msg_type: int,
    dtype: type,
    sizes: list[int],
    density: float,
    loss_up: float,
    loss_down: float,
    dup: float,
    seed: int,
    engine: str = "python",
    nonfinite: float = 0.0,
) -> None:
    rng = np.random.default_rng(seed)
    calls = [[make_tensor(rng, m, k, dtype, density, nonfinite) for _ in range(n)] for m in sizes]
    switch = ModelSwitch(n=n, k=k, job_id=JOB, slots=slots, msg_type=msg_type, key=KEY)
    sessions = [
        Session(
            rank=r,
            n=n,
            job_id=JOB,
            job_key=KEY,
            slots=slots,
            k=k,
            msg_type=msg_type,
            retry=RETRY,
            engine=engine,
        )  # fmt: skip
        for r in range(n)
    ]
    sim = Sim(switch, sessions, seed=seed, loss_up=loss_up, loss_down=loss_down, dup=dup)
    for r in range(n):
        sim.enqueue(r, [c[r] for c in calls])
    sim.run(until=1e6)
    sparse = msg_type == wire.MSG_SPARSE
    for c, tensors in enumerate(calls):
        ref = reference(tensors, k, slots, sparse)
        first = first_transmissions(tensors, k, slots, sparse)
        for r in range(n):
            outs = sim.workers[r].outcomes
            assert len(outs) == len(calls), f"worker {r} finished {len(outs)} of {len(calls)}"
            o = outs[c]
            assert o.done, o.error
            assert o.call_id == c
            assert o.result.dtype == dtype and o.result.shape == tensors[r].shape
            assert np.array_equal(o.result, ref, equal_nan=True), f"call {c}, worker {r}"
            assert o.stats.packets_sent - o.stats.retransmissions == first
            assert o.stats.malformed == 0 and o.stats.foreign == 0
    for s in sessions:  # every worker ends at the same set per slot
        assert np.array_equal(s.sets, sessions[0].sets)
    # the switch never saw anything it had to call malformed, foreign or out of range
    bad = {"malformed", "unknown_sender", "wrong_rank", "slot_range"}
    assert not bad & {name for name, v in switch.counters.items() if v}


K_SMALL = 8
ENGINES = ["python", "native"]  # the Python core is the specification; the C one must agree


@st.composite
def job(draw) -> dict:
    k = draw(st.sampled_from([K_SMALL, 64]))
    size = st.sampled_from([1, k - 1, k, k + 1, draw(st.integers(2 * k, 80 * k))])
    lossy = draw(st.booleans())
    return dict(
        n=draw(st.integers(1, 8)),
        k=k,
        slots=draw(st.sampled_from([1, 2, 3, 5, 8, 64])),
        sizes=draw(st.lists(size, min_size=1, max_size=3)),
        density=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        loss_up=draw(st.floats(0.0, 0.3)) if lossy else 0.0,
        loss_down=draw(st.floats(0.0, 0.3)) if lossy else 0.0,
        dup=draw(st.floats(0.0, 0.2)) if lossy else 0.0,
        seed=draw(st.integers(0, 2**31 - 1)),
    )


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(job())
def test_dense_float32(engine: str, p: dict) -> None:
    run_job(msg_type=wire.MSG_DENSE, dtype=np.float32, engine=engine, **p)


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(job())
def test_dense_int32(engine: str, p: dict) -> None:
    run_job(msg_type=wire.MSG_DENSE, dtype=np.int32, engine=engine, **p)


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(job())
def test_sparse_float32(engine: str, p: dict) -> None:
    run_job(msg_type=wire.MSG_SPARSE, dtype=np.float32, engine=engine, **p)


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(job())
def test_sparse_int32(engine: str, p: dict) -> None:
    run_job(msg_type=wire.MSG_SPARSE, dtype=np.int32, engine=engine, **p)


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("density", [0.3, 1.0])
@pytest.mark.parametrize("engine", ENGINES)
def test_eight_workers_thousands_of_elements(
    msg_type: int, dtype: type, density: float, engine: str
) -> None:
    run_job(
        engine=engine,
        n=8,
        k=64,
        slots=7,
        msg_type=msg_type,
        dtype=dtype,
        sizes=[3000, 1, 4097, 64],
        density=density,
        loss_up=0.15,
        loss_down=0.15,
        dup=0.1,
        seed=11,
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_heavy_loss_still_completes(engine: str) -> None:
    """Half of everything lost both ways, duplicates, 8 workers, 3 calls."""
    for msg_type in (wire.MSG_DENSE, wire.MSG_SPARSE):
        run_job(
            engine=engine,
            n=8,
            k=K_SMALL,
            slots=4,
            msg_type=msg_type,
            dtype=np.float32,
            sizes=[200, 37, 200],
            density=0.5,
            loss_up=0.5,
            loss_down=0.5,
            dup=0.2,
            seed=3,
        )


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=job(), rate=st.sampled_from([0.002, 0.02, 0.2]))
def test_nonfinite_float32(msg_type: int, engine: str, p: dict, rate: float) -> None:
    """NaN/±Inf in some workers' blocks (zero blocks too, so sparse must send them): every
    worker gets each such block back as NaN or the infinity, the other blocks exact, within
    the call, through loss, duplication and reordering."""
    run_job(msg_type=msg_type, dtype=np.float32, engine=engine, nonfinite=rate, **p)
