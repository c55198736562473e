"""The native driver's two UDP paths (host/_engine/udpio.h): with UDP GSO/GRO (segmented
sends, super-datagrams split on receipt) and per datagram. Same inputs through both paths
against a one-worker reflector that itself receives with GRO and answers with segmented
sends: the results are the same bytes, the datagrams the reflector saw are the same set,
and in the offload path the driver did send segmented messages and had GRO on."""

from __future__ import annotations

import selectors
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from p4reduce.host import UdpTransport, run_call
from p4reduce.host.protocol import Done, RetryPolicy, Session
from p4reduce.host.protocol.native import available

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "host_e2e"))
from reflector import answer  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="native core not built")

SOL_UDP, UDP_SEGMENT, UDP_GRO = 17, 103, 104


class OffloadReflector:
    """Answers every datagram as a one-worker switch (reflector.answer), reading with UDP_GRO
    and answering each batch of one length as one UDP_SEGMENT send. Records every datagram
    it saw, how many arrived coalesced, and whether the driver's socket had GRO on."""

    def __init__(self, driver_fd: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.setsockopt(SOL_UDP, UDP_GRO, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()
        self.driver = socket.socket(fileno=driver_fd)  # detached below, never closed here
        self.seen: list[bytes] = []
        self.coalesced = 0  # super-datagrams read (the driver's segmented sends)
        self.driver_gro: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                if not sel.select(0.05):
                    continue
                while True:
                    try:
                        data, anc, _, peer = self.sock.recvmsg(65536, 64)
                    except BlockingIOError:
                        break
                    self.driver_gro.add(self.driver.getsockopt(SOL_UDP, UDP_GRO))
                    seg = len(data) or 1
                    for level, kind, value in anc:
                        if (level, kind) == (SOL_UDP, UDP_GRO):
                            seg = struct.unpack("i", value)[0]
                    parts = [data[i : i + seg] for i in range(0, len(data), seg)] or [b""]
                    self.coalesced += len(parts) > 1
                    self.seen.extend(parts)
                    answers = [answer(p) for p in parts]
                    if len(answers) > 1 and len({len(a) for a in answers}) == 1:
                        gso = [(SOL_UDP, UDP_SEGMENT, struct.pack("H", len(answers[0])))]
                        self.sock.sendmsg(answers, gso, 0, peer)
                    else:
                        for a in answers:
                            self.sock.sendto(a, peer)
        finally:
            sel.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.driver.detach()
        self.sock.close()


@pytest.fixture
def offload_setting() -> Iterator[None]:
    from p4reduce.host import _engine_c

    before = _engine_c.udp_offload()
    yield
    _engine_c.udp_offload(before)


def _run(x: np.ndarray, offload: bool, threads: int, msg_type: int) -> tuple[bytes, set, int, set]:
    from p4reduce.host import _engine_c

    _engine_c.udp_offload(offload)
    retry = RetryPolicy(initial_timeout=0.5, max_timeout=1.0, give_up_after=30)
    ses = Session(rank=0, n=1, job_id=9, job_key=7, slots=32, k=256, msg_type=msg_type,
                  retry=retry, engine="native", threads=threads)  # fmt: skip
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    r = OffloadReflector(sock.fileno())
    tr = UdpTransport(r.address, sock=sock)
    try:
        end = run_call(ses.allreduce(x), tr)
    finally:
        r.stop()
        tr.close()
    assert isinstance(end, Done), end
    return end.result.tobytes(), set(r.seen), r.coalesced, r.driver_gro


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("msg_type", [1, 2])
def test_both_paths_give_the_same_bytes(offload_setting: None, threads: int, msg_type: int) -> None:
    x = (np.arange(200_003) % 977 - 400).astype(np.float32) * np.float32(0.25)
    plain, plain_seen, plain_coalesced, plain_gro = _run(x, False, threads, msg_type)
    fast, fast_seen, fast_coalesced, fast_gro = _run(x, True, threads, msg_type)
    assert plain == fast == x.tobytes()
    assert plain_seen == fast_seen  # the same datagrams reached the "switch"
    assert plain_coalesced == 0 and plain_gro == {0}
    assert fast_coalesced > 0  # the driver sent segmented messages
    assert fast_gro == {1}  # and received with GRO on (the answers were segmented)


def test_the_setting_reads_and_sets(offload_setting: None) -> None:
    from p4reduce.host import _engine_c

    _engine_c.udp_offload(False)
    assert _engine_c.udp_offload() is False
    assert _engine_c.udp_offload(True) is False
    assert _engine_c.udp_offload(None) is True
