"""The native I/O loop on a raw port: a veth pair with a random name (deleted in a finally),
the loop on one end, a packet socket on the other. Skipped without root or ``ip``."""

from __future__ import annotations

import os
import random
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from p4reduce.switch.native import ioloop
from p4reduce.switch.ports.raw import RawSocketPort, have_raw_socket_privilege

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        shutil.which("ip") is None or not have_raw_socket_privilege(),
        reason="needs root (CAP_NET_RAW, CAP_NET_ADMIN) and the ip command to make a veth pair",
    ),
]
ETHERTYPE = b"\x88\xb5"  # IEEE local experimental: the kernel sends no such frames itself


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def veth() -> Iterator[tuple[str, str]]:
    tag = os.urandom(3).hex()
    a, b = f"p4rA{tag}", f"p4rB{tag}"
    _ip("link", "add", a, "type", "veth", "peer", "name", b)
    try:
        for name in (a, b):
            _ip("link", "set", name, "mtu", "9000", "up")
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def _frame(rng: random.Random, size: int, command: bytes) -> bytes:
    body = rng.randbytes(max(0, size - 14))
    frame = b"\x02\x00\x00\x00\x00\x0b" + b"\x02\x00\x00\x00\x00\x0a" + ETHERTYPE + body
    return frame[:42] + command + frame[43:] if size > 42 else frame


def _receive(sock: socket.socket, count: int) -> list[bytes]:
    got: list[bytes] = []
    end = time.monotonic() + 20
    while len(got) < count and time.monotonic() < end:
        if select.select([sock], [], [], 0.5)[0]:
            data, addr = sock.recvfrom(65536)
            if data[12:14] == ETHERTYPE and addr[2] != socket.PACKET_OUTGOING:
                got.append(data)
    return got


def test_raw_port_reflects_byte_for_byte(lib, handler, veth) -> None:
    a, b = veth
    rng = random.Random(5)
    port = RawSocketPort(7, a)
    peer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    peer.bind((b, 0x88B5))
    loop = ioloop.NativeIoLoop({7: port}, lib=lib)
    try:
        loop.set_handler(handler.fn, handler.ctx_address, keepalive=handler)
        loop.start()
        frames = [_frame(rng, size, b"R") for size in (60, 64, 100, 1500, 4158, 8000)]
        for f in frames:
            peer.send(f)
        assert _receive(peer, len(frames)) == frames
        # over the interface MTU on the way out: counted, not raised
        assert loop.transmit(7, _frame(rng, 9100, b"R"))
        end = time.monotonic() + 20
        while not loop.port_counters(7).tx_dropped and time.monotonic() < end:
            time.sleep(0.01)
        counters = loop.port_counters(7)
        assert counters.tx_dropped == {"mtu_exceeded": 1}
        assert counters.errors == {"EMSGSIZE": 1}
        # plus whatever the kernel sent meanwhile (IPv6 neighbour discovery): all reflected
        assert counters.tx_frames == counters.rx_frames >= len(frames)
    finally:
        loop.close()
        port.close()
        peer.close()


def test_raw_port_counts_oversize_frames(lib, handler, veth) -> None:
    a, b = veth
    for name in (a, b):
        _ip("link", "set", name, "mtu", "20000")
    port = RawSocketPort(3, a)
    peer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    peer.bind((b, 0))
    loop = ioloop.NativeIoLoop({3: port}, lib=lib)
    try:
        loop.set_handler(handler.fn, handler.ctx_address, keepalive=handler)
        loop.start()
        rng = random.Random(1)
        peer.send(_frame(rng, 16385, b"D"))
        peer.send(_frame(rng, 16384, b"D"))
        end = time.monotonic() + 20
        while loop.port_counters(3).rx_dropped.get("oversize", 0) < 1 and time.monotonic() < end:
            time.sleep(0.01)
        assert loop.port_counters(3).rx_dropped == {"oversize": 1}
    finally:
        loop.close()
        port.close()
        peer.close()
