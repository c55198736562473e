"""A one-worker switch stand-in: every aggregation packet comes straight back as its own
result (with n = 1 the first contribution completes the slot: same lanes, same exponent,
``next`` the sender's own). Used to test and time the host's transport and runner without
the switch's cost. Optionally drops every d-th packet, to exercise retransmission.

Run as a process (``python reflector.py PORT``, prints ``ready HOST:PORT``) or as a thread
(``Reflector``)."""

from __future__ import annotations

import selectors
import socket
import sys
import threading

FLAG_RESULT, FLAG_END = 0x1, 0x8
NEXT_END = b"\xff\xff\xff\xff"


def answer(data: bytes) -> bytes:
    b0 = data[0]
    flags = b0 | FLAG_RESULT
    if b0 >> 4 == 2 and data[16:20] == NEXT_END:
        flags |= FLAG_END
    return bytes([flags]) + data[1:]


class Reflector:
    def __init__(self, drop_every: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()
        self.drop_every = drop_every
        self.received = 0
        self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.run, name="reflector", daemon=True)

    def start(self) -> Reflector:
        self._thread.start()
        return self

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        recvfrom, sendto = self.sock.recvfrom, self.sock.sendto
        d = self.drop_every
        try:
            while not self._stop.is_set():
                if not sel.select(0.1):
                    continue
                while True:
                    try:
                        data, peer = recvfrom(65536)
                    except BlockingIOError:
                        break
                    self.received += 1
                    if d and self.received % d == 0:
                        self.dropped += 1
                        continue
                    try:
                        sendto(answer(data), peer)
                    except OSError:
                        pass
        finally:
            sel.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.sock.close()


if __name__ == "__main__":
    r = Reflector(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(f"ready {r.address[0]}:{r.address[1]}", flush=True)
    try:
        r.run()
    except KeyboardInterrupt:
        pass
