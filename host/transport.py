"""A UDP transport for the protocol core: one non-blocking socket towards the switch.

The socket sends the core's ``Send`` payloads to the switch's aggregation address and hands
back the datagrams that arrive, in batches. It never loses a packet silently:

- a send the kernel refuses because the buffer is full (EAGAIN/ENOBUFS) is **queued**, and
  every later send queues behind it until ``flush`` empties the queue (the runner waits for
  the socket to be writable). The order matters: the switch needs one worker's packets in
  the order they were sent (docs/protocol.md, "Shadow sets"), so a queued packet is never
  overtaken;
- an ICMP error from an earlier datagram (``ECONNREFUSED``: nothing listens at the switch's
  address) is reported by Linux on the next send, which then did not go out: it is counted
  and the send retried once;
- any other send error is counted (by errno name) and the packet dropped, exactly like a
  packet lost on the network: the core's timer resends it.

The socket is connected to the switch's address, so the kernel delivers only datagrams from
the switch and ``send`` needs no address. It can be bound here or passed in already bound
(an orchestrator binds it first, registers its port, and hands it, or its file descriptor,
to the worker process).
"""

from __future__ import annotations

import errno
import socket
from collections import Counter, deque
from dataclasses import dataclass, field

BUFFER_BYTES = 8 << 20  # asked for both directions; whatever the kernel grants is kept
RECV_BYTES = 65536  # a datagram is read whole (results are 24 + 4K bytes)
RECV_BATCH = 256  # datagrams per recv_many call at most

_WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS)


@dataclass
class TransportCounters:
    """What the socket did. ``queued`` counts sends that found the kernel buffer full (or
    a queue already waiting) and went out later, in order, from the queue."""

    sent: int = 0  # datagrams handed to the kernel
    bytes_sent: int = 0
    received: int = 0  # datagrams read
    bytes_received: int = 0
    queued: int = 0  # sends delayed by a full buffer (sent later from the queue)
    dropped: int = 0  # sends that failed for good (counted in errors): the timer resends
    errors: Counter[str] = field(default_factory=Counter)  # by errno name, sends and receives

    def snapshot(self) -> dict[str, object]:
        return {
            "sent": self.sent,
            "bytes_sent": self.bytes_sent,
            "received": self.received,
            "bytes_received": self.bytes_received,
            "queued": self.queued,
            "dropped": self.dropped,
            "errors": dict(self.errors),
        }


def _errname(code: int | None) -> str:
    return errno.errorcode.get(code or 0, f"errno {code}")


def set_buffers(sock: socket.socket, size: int = BUFFER_BYTES) -> tuple[int, int]:
    """Ask for ``size`` bytes of receive and send buffer, halving until the kernel takes
    it (root may exceed ``net.core.rmem_max`` with the FORCE options). Returns what the
    kernel reports (Linux reports twice the usable size)."""
    for opt, force in (
        (socket.SO_RCVBUF, getattr(socket, "SO_RCVBUFFORCE", None)),
        (socket.SO_SNDBUF, getattr(socket, "SO_SNDBUFFORCE", None)),
    ):
        want = size
        while want >= 65536:
            try:
                if force is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, force, want)
                        break
                    except PermissionError:
                        pass
                sock.setsockopt(socket.SOL_SOCKET, opt, want)
                break
            except OSError:
                want //= 2
    return (
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
    )


class UdpTransport:
    """A non-blocking UDP socket connected to the switch's aggregation address.

    ``sock``: an existing UDP socket (bound or not; it is bound to ``bind`` when not), or
    None to create one bound to ``bind``. ``fd``: a file descriptor of such a socket
    (inherited from an orchestrator) instead. The transport owns the socket from then on:
    ``close`` closes it.
    """

    def __init__(
        self,
        remote: tuple[str, int],
        *,
        sock: socket.socket | None = None,
        fd: int | None = None,
        bind: tuple[str, int] = ("127.0.0.1", 0),
        buffer_bytes: int = BUFFER_BYTES,
    ) -> None:
        if sock is not None and fd is not None:
            raise ValueError("pass a socket or a file descriptor, not both")
        if fd is not None:
            sock = socket.socket(fileno=fd)
        own = sock is None
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if sock.family != socket.AF_INET or sock.type != socket.SOCK_DGRAM:
                raise ValueError(f"an IPv4 UDP socket is needed, not {sock!r}")
            self.buffers = set_buffers(sock, buffer_bytes)
            if sock.getsockname()[1] == 0:
                try:
                    sock.bind(bind)
                except OSError as exc:
                    raise OSError(
                        exc.errno, f"cannot bind UDP {bind[0]}:{bind[1]}: {exc}"
                    ) from None
            sock.connect(remote)
            sock.setblocking(False)
        except BaseException:
            if own:
                sock.close()
            raise
        self.sock = sock
        self.remote = remote
        self.local: tuple[str, int] = sock.getsockname()
        self.counters = TransportCounters()
        self._queue: deque[bytes] = deque()
        self._send = sock.send
        self._recv = sock.recv
        self._fileno = sock.fileno()

    def fileno(self) -> int:
        return self._fileno

    @property
    def pending(self) -> int:
        """Datagrams queued behind a full send buffer (``flush`` sends them)."""
        return len(self._queue)

    @property
    def closed(self) -> bool:
        return self.sock.fileno() == -1

    def send(self, data: bytes) -> None:
        """Send one datagram now, or queue it (in order) when the buffer is full."""
        if self._queue:
            self._queue.append(data)
            self.counters.queued += 1
            return
        try:
            self._send(data)
        except OSError as exc:
            self._send_failed(data, exc)
            return
        c = self.counters
        c.sent += 1
        c.bytes_sent += len(data)

    def send_many(self, datagrams: list[bytes]) -> None:
        for d in datagrams:
            self.send(d)

    def flush(self) -> int:
        """Send queued datagrams until the queue is empty or the buffer full again.
        Returns how many are still queued."""
        q = self._queue
        c = self.counters
        while q:
            data = q[0]
            try:
                self._send(data)
            except OSError as exc:
                if exc.errno in _WOULD_BLOCK:
                    break
                q.popleft()
                if not self._retry_refused(data, exc):
                    self._drop(exc)
                continue
            q.popleft()
            c.sent += 1
            c.bytes_sent += len(data)
        return len(q)

    def _send_failed(self, data: bytes, exc: OSError) -> None:
        if exc.errno in _WOULD_BLOCK:
            self._queue.append(data)
            self.counters.queued += 1
        elif not self._retry_refused(data, exc):
            self._drop(exc)

    def _retry_refused(self, data: bytes, exc: OSError) -> bool:
        """An ICMP error of an earlier datagram surfaced on this send, which did not go
        out: count it and try once more. True when the datagram is now sent, or back at
        the head of the queue (its place in the order) because the buffer is full."""
        if exc.errno != errno.ECONNREFUSED:
            return False
        c = self.counters
        c.errors[_errname(exc.errno)] += 1
        try:
            self._send(data)
        except OSError as again:
            if again.errno in _WOULD_BLOCK:
                if not self._queue:
                    c.queued += 1
                self._queue.appendleft(data)
                return True
            self._drop(again)
            return True
        c.sent += 1
        c.bytes_sent += len(data)
        return True

    def _drop(self, exc: OSError) -> None:
        self.counters.dropped += 1
        self.counters.errors[_errname(exc.errno)] += 1

    def recv_many(self, limit: int = RECV_BATCH) -> list[bytes]:
        """Every datagram ready now, up to ``limit``; never blocks."""
        out: list[bytes] = []
        recv = self._recv
        c = self.counters
        n = 0
        while n < limit:
            try:
                data = recv(RECV_BYTES)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            except OSError as exc:
                # ECONNREFUSED and the like: an ICMP error about an earlier send.
                c.errors[_errname(exc.errno)] += 1
                n += 1
                continue
            out.append(data)
            n += 1
        c.received += len(out)
        c.bytes_received += sum(map(len, out))
        return out

    def discard(self) -> int:
        """Drop queued sends and every datagram waiting to be read (a session reset:
        they belong to calls that are forgotten). Returns how many were dropped."""
        dropped = len(self._queue)
        self._queue.clear()
        while True:
            got = self.recv_many()
            if not got:
                return dropped
            dropped += len(got)

    def close(self) -> None:
        """Close the socket (idempotent). Queued datagrams are discarded."""
        self._queue.clear()
        self.sock.close()

    def __enter__(self) -> UdpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        lip, lport = self.local[:2]
        rip, rport = self.remote
        return f"UdpTransport({lip}:{lport} -> {rip}:{rport})"
