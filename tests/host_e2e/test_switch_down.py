"""No switch: a call fails with a TimeoutError within the retry policy's bound, naming the
stuck slots, whether the switch never ran or dies in the middle of a job."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import Builds, start_stack
from p4reduce.controller import Assignment
from p4reduce.controller.client import Timeouts
from p4reduce.host import AllreduceSession, AllreduceTimeout, RetryPolicy
from stack import Stack, check, make_tensor, on_all

from p4reduce.free_port import free_port

GIVE_UP = 1.0
RETRY = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=GIVE_UP)


def test_switch_never_started() -> None:
    """An assignment pointing at an address where nothing listens (no registration
    service either): the kernel's ICMP errors are counted, the call fails in time."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    a = Assignment(
        job_id=3, job_index=1, rank=0, n=2, slot_base=0, slot_count=4, k=64,
        program="dense", switch_ip="127.0.0.1", switch_mac=None, agg_port=free_port("udp"),
        mgid=257, job_key=0x5EC2E7, timeouts=Timeouts(200, 3200, 30),
        members=[{"rank": 0, "ip": "127.0.0.1", "udp_port": port}],
    )  # fmt: skip
    with AllreduceSession(a, sock, retry=RETRY) as s:
        t = time.monotonic()
        with pytest.raises(AllreduceTimeout) as info:
            s.allreduce(np.ones(1000, dtype=np.float32))
        waited = time.monotonic() - t
        assert GIVE_UP <= waited < GIVE_UP + 1.0
        err = info.value
        assert isinstance(err, TimeoutError)
        assert err.stuck_slots == [0, 1, 2, 3]
        assert err.stuck_blocks == [0, 1, 2, 3]
        msg = str(err)
        assert "slot 0 (set 0, priming of block 0" in msg and "Nothing came back" in msg
        assert f"127.0.0.1:{a.agg_port}" in msg
        assert s.transport_counters["errors"].get("ECONNREFUSED", 0) > 0
    assert sock.fileno() == -1  # the session closed it


def test_default_retry_comes_from_the_assignment() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    a = Assignment(
        job_id=3, job_index=1, rank=0, n=1, slot_base=0, slot_count=4, k=64,
        program="dense", switch_ip="127.0.0.1", switch_mac=None, agg_port=free_port("udp"),
        mgid=257, job_key=0x5EC2E7, timeouts=Timeouts(100, 400, 4),
        members=[{"rank": 0, "ip": "127.0.0.1", "udp_port": sock.getsockname()[1]}],
    )  # fmt: skip
    with AllreduceSession(a, sock) as s:
        r = s.retry
        assert (r.initial_timeout, r.max_timeout, r.max_attempts) == (0.1, 0.4, 5)
        assert r.give_up_after == pytest.approx(0.1 + 0.2 + 0.4 + 0.4 + 0.4)
        with pytest.raises(AllreduceTimeout):
            s.allreduce(np.ones(10, dtype=np.int32))
        assert s.last_stats.calls == 0  # a failed call is not a completed one


@pytest.fixture
def own_stack(builds: Builds) -> Iterator[Stack]:
    pool = []
    stack = None
    try:
        for _ in range(2):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            pool.append(s)
            s.bind(("127.0.0.1", 0))
        stack = start_stack(builds, "dense", pool)
        yield stack
    finally:
        if stack is not None:
            for p in (stack.serve, stack.switch):
                if p is not None:
                    p.kill()
        for s in pool:
            s.close()


def test_switch_killed_mid_job(own_stack: Stack) -> None:
    sessions = own_stack.join(2, slots=4, retry=RETRY)
    try:
        rng = np.random.default_rng(1)
        xs = [make_tensor(rng, 2000, np.float32) for _ in range(2)]
        for r in on_all(sessions, lambda s, r: s.allreduce(xs[r])):
            check(r, xs)
        assert own_stack.switch is not None
        own_stack.switch.kill()
        t = time.monotonic()
        errors = on_all(sessions, lambda s, r: _expect_timeout(s, xs[r]))
        waited = time.monotonic() - t
        # the call times out after GIVE_UP; the transparent retry (docs/host.md) waits
        # GIVE_UP more for the switch to come back with the job, then the call fails
        assert 2 * GIVE_UP <= waited < 2 * GIVE_UP + 2.5
        assert all(s.retried == 0 for s in sessions)
        for err in errors:
            assert err.stuck_slots == [0, 1, 2, 3]
            assert "4 of 4 slots got no result" in str(err)
    finally:
        for s in sessions:
            s.close()
    # The service takes rank 0's leave; the last leave must delete the job from the
    # switch, which is gone: close() keeps that error instead of raising it.
    assert sessions[0].left is not None and sessions[0].left["deleted"] is False
    assert sessions[1].left is None and "unreachable" in str(sessions[1].leave_error)


def _expect_timeout(s: AllreduceSession, x: np.ndarray) -> AllreduceTimeout:
    with pytest.raises(AllreduceTimeout) as info:
        s.allreduce(x)
    return info.value


def test_join_needs_a_job_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """No secret given and none in the environment: a one-line ValueError before anything
    is sent (docs/controller.md, "Credentials"); the socket it bound is closed again."""
    monkeypatch.delenv("P4REDUCE_JOB_SECRET", raising=False)
    with pytest.raises(ValueError, match="job 3: no job secret: pass secret=") as e:
        AllreduceSession.join("http://127.0.0.1:1", 3, 0, 1)
    assert "\n" not in str(e.value)
