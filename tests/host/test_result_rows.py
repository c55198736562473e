"""Where a call's results land (Call._result_rows, docs/host.md "Buffers"): each row is final
when its result is stored (dequantized, or NaN/±Inf), into the caller's ``out`` when it can
hold the rows, else into a pooled array. Both cores, both programs, both dtypes: the result
with ``out`` is bit for bit the result without it, and it is ``out`` itself exactly when
``out`` holds whole blocks."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from agg_model import ModelSwitch
from p4reduce.host import wire
from p4reduce.host.protocol import Done, Send, Session
from test_protocol_properties import make_tensor

JOB = 42
KEY = 0x0BADCAFE
K = 16
SLOTS = 4


def lockstep(sessions: list[Session], tensors: list[np.ndarray], outs: list[np.ndarray | None]):
    """One call on every session through the model switch, loss-free; the calls."""
    n = len(sessions)
    switch = ModelSwitch(n=n, k=K, job_id=JOB, slots=SLOTS, msg_type=sessions[0].msg_type, key=KEY)
    calls = [s.allreduce(t, out=o) for s, t, o in zip(sessions, tensors, outs, strict=True)]
    up: deque[tuple[int, bytes]] = deque()
    done = [False] * n

    def act(r: int, actions: list) -> None:
        for a in actions:
            if isinstance(a, Send):
                up.append((r, a.data))
            elif isinstance(a, Done):
                done[r] = True

    for r, c in enumerate(calls):
        act(r, c.start(0.0))
    while up:
        r, data = up.popleft()
        for to, res in switch.receive(r, data):
            act(to, calls[to].on_packet(res, 0.0))
    assert all(done)
    return calls


def sessions(engine: str, n: int, msg_type: int) -> list[Session]:
    return [
        Session(
            rank=r, n=n, job_id=JOB, job_key=KEY, slots=SLOTS, k=K, msg_type=msg_type, engine=engine
        )  # fmt: skip
        for r in range(n)
    ]


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("m", [11 * K, 11 * K - 5])
@pytest.mark.parametrize("n", [2, 3])  # float32: 2 takes the float32 dequantization, 3 float64
def test_results_land_in_out_bit_for_bit(msg_type: int, dtype: type, m: int, n: int) -> None:
    from p4reduce.host.protocol import native

    engines = ["python", "native"] if native.available() else ["python"]
    rng = np.random.default_rng(m + n + int(msg_type))
    xs = [make_tensor(rng, m, K, dtype, 0.6, 0.02) for _ in range(n)]
    # the Python core without out is the reference for every other run
    ref = [c.result.tobytes() for c in lockstep(sessions("python", n, msg_type), xs, [None] * n)]
    whole = m % K == 0
    for engine in engines:
        plain = lockstep(sessions(engine, n, msg_type), xs, [None] * n)
        outs = [np.full(m, 7, dtype=dtype) for _ in range(n)]
        landed = lockstep(sessions(engine, n, msg_type), xs, outs)  # type: ignore[arg-type]
        for r in range(n):
            assert plain[r].result.tobytes() == ref[r], f"{engine} rank {r}"
            got = landed[r].result
            assert got.tobytes() == ref[r], f"{engine} rank {r}, into out"
            assert landed[r].into_out == whole
            assert np.shares_memory(got, outs[r]) == whole
            if not whole:
                assert (outs[r] == 7).all()  # untouched: the caller copies the result


def test_rows_in_out_never_go_to_the_pool() -> None:
    (s,) = sessions("python", 1, wire.MSG_DENSE)
    x = np.arange(4 * K, dtype=np.float32)
    out = np.empty_like(x)
    (call,) = lockstep([s], [x], [out])
    call.release(None)
    assert s.buffers.bytes == x.nbytes  # the input copy only, not out's rows
    (call,) = lockstep([s], [x], [None])
    call.release(None)
    assert s.buffers.bytes == 2 * x.nbytes  # the copy and the pooled rows
