"""Run by test_sanitize.py in a subprocess with libasan preloaded: fuzz the C framing and drive
the loop with the AddressSanitizer/UBSan build of ioloop.c. Every input lives in a buffer of
exactly its size from the (sanitized) malloc, so one byte read past the end is reported.

    LD_PRELOAD=libasan.so python asan_fuzz.py TEST_HANDLER.so
"""

from __future__ import annotations

import ctypes
import random
import socket
import sys
import time

from p4reduce.switch.native import ioloop
from p4reduce.switch.ports import ipudp
from p4reduce.switch.ports.udp import UdpAdapter
from udp_gso import send_segmented  # this folder: sys.path[0] of a script

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def exact(data: bytes) -> int:
    """A malloc'ed copy of ``data`` with no slack after it."""
    ptr = libc.malloc(max(1, len(data)))
    ctypes.memmove(ptr, data, len(data))
    return ptr


def fuzz_framing(lib: ctypes.CDLL, rng: random.Random, rounds: int) -> None:
    u8p = ctypes.POINTER(ctypes.c_uint8)
    lib.p4r_udp_payload.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_uint32),
    ]
    lib.p4r_udp_build_frame.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + list(
        lib.p4r_udp_build_frame.argtypes[2:]
    )
    off = ctypes.c_uint32()
    ends = ipudp.Endpoints(b"\x02" * 6, b"\x04" * 6, "10.1.2.3", "10.3.2.1", 7, 9)
    for i in range(rounds):
        if i % 3:
            frame = ipudp.build_frame(rng.randbytes(rng.randrange(0, 200)), ends, i)
            frame = bytearray(frame[: rng.randrange(len(frame) + 1)])
            for _ in range(rng.randrange(0, 4)):
                if frame:
                    frame[rng.randrange(len(frame))] = rng.randrange(256)
            frame = bytes(frame)
        else:
            frame = rng.randbytes(rng.randrange(0, 64))
        ptr = exact(frame)
        n = lib.p4r_udp_payload(ptr, len(frame), ctypes.byref(off))
        if n >= 0:
            assert off.value + n <= len(frame)
        libc.free(ptr)
        # build: output of exactly 42 + len, payload in a separate exact buffer and in place
        payload = rng.randbytes(rng.randrange(0, 300))
        out = libc.malloc(42 + len(payload))
        src = exact(payload)
        args = (ends.eth_dst, ends.eth_src, 0x0A010203, 0x0A030201, 7, 9, i & 0xFFFF)
        assert lib.p4r_udp_build_frame(out, src, len(payload), *args) == 42 + len(payload)
        assert ctypes.string_at(out, 42 + len(payload)) == ipudp.build_frame(payload, ends, i)
        ctypes.memmove(out + 42, payload, len(payload))
        assert lib.p4r_udp_build_frame(out, out + 42, len(payload), *args) == 42 + len(payload)
        libc.free(src)
        libc.free(out)
    del u8p


def drive_loop(lib: ctypes.CDLL, handler_so: str, rng: random.Random, offload: bool) -> None:
    so = ctypes.CDLL(handler_so)
    fn = ctypes.cast(so.test_handler, ctypes.c_void_p).value

    class Ctx(ctypes.Structure):
        _fields_ = [
            ("cpu_port", ctypes.c_uint32),
            ("nports", ctypes.c_uint32),
            ("ports", ctypes.c_uint32 * 64),
            ("calls", ctypes.c_uint64),
        ]

    ctx = Ctx(cpu_port=64, nports=3)
    for i, p in enumerate((1, 2, 3)):
        ctx.ports[i] = p
    peers = {}
    for n in (1, 2, 3):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
        peers[n] = s
    adapter = UdpAdapter(("127.0.0.1", 0), {n: s.getsockname() for n, s in peers.items()})
    loop = ioloop.NativeIoLoop(
        adapter.ports, cpu_port=64, queue_frames=16, lib=lib, udp_offload=offload
    )
    loop.set_handler(fn, ctypes.addressof(ctx))
    loop.start()
    sent = 0
    for _ in range(3000):
        cmd = rng.choice(b"RMCNFTD")
        size = rng.choice([0, 1, 50, 1400, 16341, 16342, 16343, 30000])
        try:
            if rng.random() < 0.1 and size + 1 <= 32000:
                # a segmented send: the loop's UDP_GRO path splits it (ioloop.c rx_adapter_gro)
                count = rng.randrange(2, min(64, 65000 // (size + 1)) + 1)
                parts = [bytes([cmd]) + rng.randbytes(size) for _ in range(count)]
                parts[-1] = parts[-1][: rng.randrange(0, size + 2)]  # a shorter last one
                send_segmented(peers[rng.choice([1, 2, 3])], parts, adapter.listen)
                sent += count
            else:
                peer = peers[rng.choice([1, 2, 3])]
                peer.sendto(bytes([cmd]) + rng.randbytes(size), adapter.listen)
                sent += 1
        except OSError:  # would block, or a segmented send the kernel refuses
            pass
        if rng.random() < 0.05:
            loop.inject(rng.randrange(0, 8), rng.randbytes(rng.randrange(0, 100)))
            loop.transmit(rng.randrange(0, 8), rng.randbytes(rng.randrange(0, 100)))
        if rng.random() < 0.02:
            loop.drain_cpu()
        if rng.random() < 0.01:
            loop.set_handler(fn if rng.random() < 0.8 else None, ctypes.addressof(ctx))
        for s in peers.values():  # keep the peers' buffers from filling
            try:
                while s.recv(65536):
                    pass
            except BlockingIOError:
                pass
    time.sleep(0.2)
    stats = loop.stats()
    loop.stop()
    loop.drain_cpu()
    loop.close()  # frees whatever the CPU queue still holds
    adapter.close()
    for s in peers.values():
        s.close()
    assert stats.handled > 0, stats
    print(f"loop (offload {sorted(loop.offload)}): {sent} datagrams sent, {stats}")


def main() -> int:
    lib = ioloop.load(sanitize=True)
    if lib is None:
        print(f"cannot build the sanitized loop: {ioloop.unavailable_reason()}")
        return 2
    rng = random.Random(15)
    fuzz_framing(lib, rng, 20000)
    for offload in (True, False):  # UDP GSO/GRO where the kernel has them, and per datagram
        drive_loop(lib, sys.argv[1], rng, offload)
    print("asan-fuzz ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
