"""Drive one protocol call over a transport until it is done or failed.

A call of the native core (``protocol.native``) on a ``UdpTransport`` runs in the core's
own C loop instead (``_run_native``): the same steps with ``recvmmsg``/``sendmmsg``
batches, without the GIL. Otherwise: the protocol core (``p4reduce.host.protocol``) is a
pure state machine; this is the loop around it: wait until the socket is readable or the core's next deadline comes (or the
socket is writable again while sends are queued), feed ``on_packet`` / ``on_timer`` with
``time.monotonic()``, and carry out the ``Send`` actions. Every datagram ready is read in
one batch, and the clock is read once per batch, so a burst of results costs one
``select`` and one clock read.
"""

from __future__ import annotations

import errno
import select
import threading
import time
from collections.abc import Callable
from typing import Protocol

from .protocol import Call, Done, Failed, Send, SetTimer, native
from .protocol.events import Action
from .transport import UdpTransport

POLL_CAP = 0.25  # seconds: the longest wait between looks at the cancel flag


class Transport(Protocol):
    pending: int

    def fileno(self) -> int: ...
    def send(self, data: bytes) -> None: ...
    def flush(self) -> int: ...
    def recv_many(self, limit: int = ...) -> list[bytes]: ...


class Cancelled(RuntimeError):
    """The call was stopped from outside (the session is closing)."""


def run_call(
    call: Call,
    transport: Transport,
    *,
    resume: bool = False,
    cancel: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Done | Failed:
    """Start (or, with ``resume``, resume) ``call`` and drive it to its end.

    Returns the core's ``Done`` or ``Failed`` action. With ``cancel`` set from another
    thread, raises ``Cancelled`` within ``POLL_CAP`` seconds; the call is then left as it
    was (running; the session must be reset before it is used again)."""
    if isinstance(call, native.Native) and isinstance(transport, UdpTransport):
        if transport.pending and getattr(call.session, "threads", 1) > 1:  # type: ignore[attr-defined]
            # a call split over driver threads runs in the native driver only: what an
            # earlier call left queued goes out first, in order
            _drain(transport, cancel)
        if not transport.pending:
            return _run_native(call, transport, resume, cancel)
    fd = transport.fileno()
    send = transport.send
    recv_many = transport.recv_many
    on_packet = call.on_packet
    deadline: float | None = None
    end: Done | Failed | None = None
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    writing = False

    def apply(actions: list[Action]) -> None:
        nonlocal deadline, end
        for a in actions:
            if type(a) is Send:
                send(a.data)
            elif type(a) is SetTimer:
                deadline = a.deadline
            else:
                end = a  # type: ignore[assignment]

    now = clock()
    apply(call.resume(now) if resume else call.start(now))
    while end is None:
        if transport.pending:
            if transport.flush() and not writing:
                poller.modify(fd, select.POLLIN | select.POLLOUT)
                writing = True
        if writing and not transport.pending:
            poller.modify(fd, select.POLLIN)
            writing = False
        if deadline is None:
            wait = POLL_CAP
        else:
            wait = min(max(deadline - clock(), 0.0), POLL_CAP)
        events = poller.poll(wait * 1000.0)
        if events:
            datagrams = recv_many()
            if datagrams:
                now = clock()
                for data in datagrams:
                    acts = on_packet(data, now)
                    if acts:
                        apply(acts)
                        if end is not None:
                            break
                if end is not None:
                    break
        if deadline is not None:
            now = clock()
            if now >= deadline:
                apply(call.on_timer(now))
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"call {call.call_id} cancelled: the session is closing")
    if transport.pending:
        transport.flush()  # best effort; the rest goes out before the next call's packets
    return end


def _drain(transport: UdpTransport, cancel: threading.Event | None) -> None:
    """Send what the transport has queued, waiting for the socket to be writable."""
    poller = select.poll()
    poller.register(transport.fileno(), select.POLLOUT)
    while transport.flush():
        poller.poll(POLL_CAP * 1000.0)
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled while sending the queue: the session is closing")


def _run_native(
    call: native.Native, transport: UdpTransport, resume: bool, cancel: threading.Event | None
) -> Done | Failed:
    """The native core's own loop (``Core.run``: poll, recvmmsg, the core, sendmmsg, timers,
    with the GIL released), handed back every POLL_CAP seconds for the cancel flag."""
    fd = transport.fileno()
    mode = 1 if resume else 0
    counters = transport.counters
    while True:
        end, io = call.run_native(fd, mode, POLL_CAP)
        mode = 2
        sent, bytes_sent, received, bytes_received, queued, dropped, errors = io
        counters.sent += sent
        counters.bytes_sent += bytes_sent
        counters.received += received
        counters.bytes_received += bytes_received
        counters.queued += queued
        counters.dropped += dropped
        for code, count in errors:
            counters.errors[errno.errorcode.get(code, f"errno {code}")] += count
        if end is not None:
            return end  # type: ignore[return-value]
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"call {call.call_id} cancelled: the session is closing")  # type: ignore[attr-defined]
