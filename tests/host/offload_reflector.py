"""A one-worker switch stand-in on UDP GSO/GRO, for the tests of the native driver's two UDP
paths (test_udp_offload.py): it reads with UDP_GRO, splits, answers every datagram as
reflector.answer does (tests/host_e2e/reflector.py) and sends each batch of one length as
one UDP_SEGMENT send, so the driver receives super-datagrams when its GRO is on."""

from __future__ import annotations

import selectors
import socket
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "host_e2e"))
from reflector import answer  # noqa: E402

from tests.native.udp_gso import SOL_UDP, UDP_GRO, send_segmented, split_gro  # noqa: E402


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
        self.refused = 0  # its own segmented sends the kernel refused
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
                    parts = split_gro(data, anc)
                    self.coalesced += len(parts) > 1
                    self.seen.extend(parts)
                    answers = [answer(p) for p in parts]
                    if len(answers) > 1 and len({len(a) for a in answers}) == 1:
                        try:
                            send_segmented(self.sock, answers, peer)
                            continue
                        except OSError:  # a route that cannot segment: one by one
                            self.refused += 1
                    for a in answers:
                        self.sock.sendto(a, peer)
        finally:
            sel.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.driver.detach()
        self.sock.close()
