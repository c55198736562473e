"""The UDP transport and the runner, without the switch: a reflector thread answers every
packet as a one-worker switch would."""

from __future__ import annotations

import errno
import select
import socket
from collections.abc import Iterator

import numpy as np
import pytest
from p4reduce.host import RetryPolicy, UdpTransport, run_call
from p4reduce.host.protocol import Done, Failed, Session
from p4reduce.host.wire import MSG_DENSE, MSG_SPARSE
from reflector import Reflector

from p4reduce.free_port import free_port

KEY = 0x5EC2E7  # the job key every packet carries


@pytest.fixture
def reflector() -> Iterator[Reflector]:
    r = Reflector().start()
    try:
        yield r
    finally:
        r.stop()


def test_binds_and_asks_for_large_buffers() -> None:
    with UdpTransport(("127.0.0.1", free_port("udp"))) as t:
        assert t.local[0] == "127.0.0.1" and t.local[1] > 0
        rcv, snd = t.buffers
        assert rcv >= 1 << 20 and snd >= 1 << 20  # Linux reports twice what it grants
        assert t.sock.gettimeout() == 0.0
    assert t.closed


def test_wraps_a_bound_socket_or_its_descriptor(reflector: Reflector) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    with UdpTransport(reflector.address, fd=s.detach()) as t:
        assert t.local == ("127.0.0.1", port)
        t.send(b"\x10" + bytes(19))
        assert select.select([t], [], [], 5.0)[0]
        got = t.recv_many()
        assert got == [b"\x11" + bytes(19)]
    with pytest.raises(ValueError, match="UDP"):
        UdpTransport(reflector.address, sock=socket.socket(socket.AF_INET, socket.SOCK_STREAM))


def test_full_buffer_queues_in_order() -> None:
    """EAGAIN: the datagram waits in the queue and every later one behind it."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sent: list[bytes] = []
    full = [True]

    def fake_send(data: bytes) -> int:
        if full[0]:
            raise BlockingIOError(errno.EAGAIN, "full")
        sent.append(data)
        return len(data)

    with UdpTransport(sink.getsockname()) as t:
        t._send = fake_send
        t.send(b"a")
        full[0] = False
        t.send(b"b")  # the buffer has room again, but b must not overtake a
        assert sent == [] and t.pending == 2 and t.counters.queued == 2
        assert t.flush() == 0
        assert sent == [b"a", b"b"] and t.counters.sent == 2
        t.send(b"c")
        assert sent == [b"a", b"b", b"c"] and t.pending == 0
    sink.close()


def test_other_send_errors_are_counted_not_raised() -> None:
    def refuse(data: bytes) -> int:
        raise OSError(errno.ENETUNREACH, "unreachable")

    with UdpTransport(("127.0.0.1", free_port("udp"))) as t:
        t._send = refuse
        t.send(b"x")
        assert t.counters.dropped == 1 and t.counters.errors["ENETUNREACH"] == 1
        assert t.pending == 0


def test_icmp_refusal_is_counted_and_the_send_retried() -> None:
    """Nothing listens: Linux reports the ICMP error of one datagram on a later call."""
    with UdpTransport(("127.0.0.1", free_port("udp"))) as t:
        for _ in range(20):
            t.send(b"y" * 20)
            t.recv_many()
        assert t.counters.errors["ECONNREFUSED"] > 0
        assert t.counters.dropped == 0


ENGINES = ["native", "python"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("msg_type", [MSG_DENSE, MSG_SPARSE])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_runner_drives_a_call_to_the_end(
    reflector: Reflector, msg_type: int, dtype: type, engine: str
) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(10_000) * 100).astype(dtype)
    ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=16, msg_type=msg_type, engine=engine)
    with UdpTransport(reflector.address) as t:
        for _ in range(3):  # consecutive calls
            end = run_call(ses.allreduce(x), t)
            assert isinstance(end, Done)
            if dtype == np.int32:
                np.testing.assert_array_equal(end.result, x)
            else:
                np.testing.assert_allclose(end.result, x, rtol=0, atol=1e-4)


@pytest.mark.parametrize("engine", ENGINES)
def test_runner_retransmits_lost_packets(engine: str) -> None:
    r = Reflector(drop_every=7).start()
    try:
        x = np.arange(20_000, dtype=np.int32)
        retry = RetryPolicy(initial_timeout=0.01, max_timeout=0.05, give_up_after=10)
        ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=8, retry=retry, engine=engine)
        with UdpTransport(r.address) as t:
            end = run_call(ses.allreduce(x), t)
        assert isinstance(end, Done)
        np.testing.assert_array_equal(end.result, x)
        assert end.stats.retransmissions >= r.dropped > 0
    finally:
        r.stop()


@pytest.mark.parametrize("engine", ENGINES)
def test_runner_gives_up_in_time(engine: str) -> None:
    retry = RetryPolicy(initial_timeout=0.01, max_timeout=0.05, give_up_after=0.3)
    ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=4, retry=retry, engine=engine)
    with UdpTransport(("127.0.0.1", free_port("udp"))) as t:
        end = run_call(ses.allreduce(np.ones(100, dtype=np.int32)), t)
        # nothing listens: the kernel's ICMP refusals are counted, by either loop
        assert t.counters.errors["ECONNREFUSED"] > 0
    assert isinstance(end, Failed) and isinstance(end.error, TimeoutError)
    assert [s.slot for s in end.error.stuck] == [0, 1]


def test_the_native_loop_releases_the_gil(reflector: Reflector) -> None:
    """A whole native call in one C run: the reflector is a Python thread of this
    process, so it can answer only because the loop runs without the GIL; another Python
    thread keeps counting meanwhile."""
    import threading

    ses = Session(rank=0, n=1, job_id=9, job_key=KEY, slots=64, engine="native")
    x = np.ones(50_000, dtype=np.float32)
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    th = threading.Thread(target=count)
    th.start()
    try:
        with UdpTransport(reflector.address) as t:
            call = ses.allreduce(x)
            before = ticks
            end, io = call.run_native(t.fileno(), 0, 60.0)  # returns only at the end
            during = ticks - before
    finally:
        stop.set()
        th.join()
    assert isinstance(end, Done) and np.array_equal(end.result, x)
    assert io[0] == end.stats.packets_sent and io[2] == end.stats.packets_received
    assert during > 0
