"""The native I/O loop on the UDP adapter: real sockets on 127.0.0.1, the C test handler
(test_handler.c) as the pipeline. The frames the handler sees are compared byte for byte with
what switch/ports/udp.py would have built, and every drop is counted under its reason."""

from __future__ import annotations

import ctypes
import random
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from p4reduce.switch.native import ioloop
from p4reduce.switch.ports import ipudp
from p4reduce.switch.ports.udp import DEFAULT_SWITCH_MAC, UdpAdapter

CPU = 64
pytestmark = pytest.mark.timeout(60)


def wait_until(check: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Poll an asynchronous effect; the bound only turns a hang into a failure."""
    end = time.monotonic() + limit
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.002)


@dataclass
class Rig:
    adapter: UdpAdapter
    peers: dict[int, socket.socket]
    loop: ioloop.NativeIoLoop

    def send(self, port: int, payload: bytes) -> None:
        self.peers[port].sendto(payload, self.adapter.listen)

    def recv(self, port: int) -> bytes:
        data, addr = self.peers[port].recvfrom(65536)
        assert addr == self.adapter.listen
        return data

    def quiet(self, port: int) -> bool:
        return not select.select([self.peers[port]], [], [], 0.05)[0]

    def endpoints(self, port: int) -> ipudp.Endpoints:
        peer = self.peers[port].getsockname()
        return ipudp.Endpoints(
            DEFAULT_SWITCH_MAC, ipudp.port_mac(port), peer[0], self.adapter.listen[0],
            peer[1], self.adapter.listen[1],
        )  # fmt: skip

    def cpu_frames(self, count: int) -> list[tuple[int, bytes]]:
        got: list[tuple[int, bytes]] = []
        end = time.monotonic() + 20
        while len(got) < count and time.monotonic() < end:
            select.select([self.loop.cpu_fileno()], [], [], 0.5)
            got += self.loop.drain_cpu()
        return got


@pytest.fixture
def rig(lib, handler) -> Iterator[Rig]:
    peers = {}
    for n in (1, 2, 3):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(10)
        peers[n] = s
    adapter = UdpAdapter(("127.0.0.1", 0), {n: s.getsockname() for n, s in peers.items()})
    loop = ioloop.NativeIoLoop(adapter.ports, cpu_port=CPU, lib=lib)
    handler.ctx.cpu_port = CPU
    loop.set_handler(handler.fn, handler.ctx_address, keepalive=handler)
    loop.start()
    try:
        yield Rig(adapter, peers, loop)
    finally:
        loop.close()
        adapter.close()
        for s in peers.values():
            s.close()


def test_reflect_and_counters(rig: Rig) -> None:
    for i in range(10):
        rig.send(1, b"R" + bytes([i]) * i)
        assert rig.recv(1) == b"R" + bytes([i]) * i
    wait_until(lambda: rig.loop.port_counters(1).tx_frames == 10, "10 frames sent")
    c = rig.loop.port_counters(1)
    assert (c.rx_frames, c.tx_frames, c.rx_dropped, c.tx_dropped) == (10, 10, {}, {})
    assert rig.loop.stats().handled == 10


def test_multicast_reaches_every_member(rig: Rig, handler) -> None:
    handler.group([1, 2, 3])
    for i in range(50):
        rig.send(2, b"M%d" % i)
    for n in (1, 2, 3):
        assert [rig.recv(n) for _ in range(50)] == [b"M%d" % i for i in range(50)]


def test_frames_the_handler_sees_are_the_python_adapters(rig: Rig) -> None:
    """Every frame handed to the pipeline equals ipudp.build_frame's, identification counter
    included (one counter for the adapter, +1 per accepted datagram, whichever port)."""
    rng = random.Random(3)
    sent = []
    for _ in range(60):
        port = rng.choice([1, 2, 3])
        payload = b"C" + rng.randbytes(rng.randrange(0, 1500))
        rig.send(port, payload)
        sent.append((port, payload))
        # one at a time, so the order across peers is the order of arrival
        count = len(sent)
        wait_until(lambda: rig.loop.stats().cpu_queued == count, "frame queued")  # noqa: B023
    got = rig.cpu_frames(len(sent))
    expected = [
        (CPU, ipudp.build_frame(payload, rig.endpoints(port), ip_id))
        for ip_id, (port, payload) in enumerate(sent)
    ]
    assert got == expected


def test_oversize_and_unknown_senders_are_counted(rig: Rig) -> None:
    rig.send(1, b"D" + b"x" * (16342 - 1))  # the largest payload a frame may carry
    rig.send(1, b"D" + b"x" * 16342)  # one byte more
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        stranger.sendto(b"R", rig.adapter.listen)
        stranger.sendto(b"R", rig.adapter.listen)
    finally:
        stranger.close()
    wait_until(
        lambda: rig.loop.adapter_counters().rx_dropped["unknown_sender"] == 2, "strangers counted"
    )
    wait_until(lambda: rig.loop.port_counters(1).rx_dropped["oversize"] == 1, "oversize counted")
    assert rig.loop.port_counters(1).rx_frames == 1


def test_drops_on_the_way_out(rig: Rig) -> None:
    rig.send(1, b"T-runt-ish")  # the handler emits 20 bytes: no IPv4 header
    rig.send(1, b"N")  # to a port nobody owns
    rig.send(1, b"F")  # a runtime fault
    wait_until(lambda: rig.loop.stats().handled == 3, "three frames handled")
    assert rig.loop.port_counters(1).tx_dropped == {"malformed": 1}
    stats = rig.loop.stats()
    assert (stats.no_such_port, stats.handler_failed) == (1, 1)


def test_transmit_and_inject_from_python(rig: Rig) -> None:
    frame = ipudp.build_frame(b"Rpacket-out", rig.endpoints(3), 9)
    assert rig.loop.inject(3, frame)  # through the handler: reflected out of port 3
    assert rig.recv(3) == b"Rpacket-out"
    assert rig.loop.transmit(2, ipudp.build_frame(b"straight", rig.endpoints(2), 1))
    assert rig.recv(2) == b"straight"
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28
    assert rig.loop.transmit(2, arp)
    wait_until(lambda: rig.loop.port_counters(2).tx_dropped == {"not_ipv4": 1}, "ARP dropped")
    with pytest.raises(ctypes.ArgumentError):
        rig.loop.inject(3, "not bytes")  # type: ignore[arg-type]
    assert not rig.loop.inject(3, b"x" * 16385)  # refused, not truncated


def test_no_handler_drops_and_counts(rig: Rig) -> None:
    rig.loop.set_handler(None, None)
    rig.send(1, b"R")
    wait_until(lambda: rig.loop.stats().no_handler == 1, "dropped without a pipeline")
    assert rig.quiet(1)


def test_handler_swaps_while_frames_flow(rig: Rig, handler, handler_so) -> None:
    """set_handler returns only when the old handler is out of use; frames never see a torn
    (fn, ctx) pair. Two contexts alternate while a peer floods the loop."""
    from tests.native.conftest import TestCtx  # noqa: PLC0415 - same structure, second ctx

    other = TestCtx()
    handler.ctx.cpu_port = other.cpu_port = CPU
    stop = threading.Event()

    def flood() -> None:
        while not stop.is_set():
            rig.send(1, b"D")

    t = threading.Thread(target=flood)
    t.start()
    try:
        for i in range(200):
            ctx = other if i % 2 else handler.ctx
            rig.loop.set_handler(handler.fn, ctypes.addressof(ctx), keepalive=(handler, other))
    finally:
        stop.set()
        t.join()
    rx = rig.loop.port_counters(1).rx_frames
    wait_until(lambda: rig.loop.stats().handled == rig.loop.port_counters(1).rx_frames, "drained")
    assert handler.ctx.calls + other.calls == rig.loop.stats().handled >= rx


def test_a_python_handler_through_ctypes(lib) -> None:
    """The loop also drives a handler written in Python (a ctypes callback takes the GIL):
    the switch's fallback when a pipeline has no native handler."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.settimeout(10)
    seen = []

    @ioloop.HANDLER_FN
    def py_handler(ctx, in_port, frame, length, emit, emit_ctx):
        data = ctypes.string_at(frame, length)
        seen.append((in_port, data))
        out = (ctypes.c_uint8 * length).from_buffer_copy(data)
        emit(emit_ctx, in_port, out, length)
        return 0

    with UdpAdapter(("127.0.0.1", 0), {5: peer.getsockname()}) as adapter:
        with ioloop.NativeIoLoop(adapter.ports, lib=lib) as loop:
            fn = ctypes.cast(py_handler, ctypes.c_void_p).value
            loop.set_handler(fn, None, keepalive=py_handler)
            loop.start()
            peer.sendto(b"from python", adapter.listen)
            assert peer.recvfrom(100)[0] == b"from python"
            loop.stop()
    peer.close()
    assert seen and seen[0][0] == 5 and seen[0][1].endswith(b"from python")


def test_stop_is_prompt_and_idempotent(lib) -> None:
    with UdpAdapter(("127.0.0.1", 0), {1: ("127.0.0.1", 1)}) as adapter:
        loop = ioloop.NativeIoLoop(adapter.ports, lib=lib)
        loop.start()
        with pytest.raises(RuntimeError):
            loop.start()
        loop.stop()
        loop.stop()
        loop.close()
        loop.close()
        with pytest.raises(RuntimeError, match="closed"):
            loop.stats()


def test_merge_counters_into_the_ports(rig: Rig) -> None:
    rig.send(1, b"R")
    assert rig.recv(1) == b"R"
    wait_until(lambda: rig.loop.port_counters(1).tx_frames == 1, "sent")
    rig.loop.stop()
    rig.loop.merge_counters()
    assert (rig.adapter.ports[1].rx_frames, rig.adapter.ports[1].tx_frames) == (1, 1)
