"""The benchmarks' kernel floor over UDP GSO/GRO (bench/c/reflector.c -g, bench/floor.py):
the same datagrams come back as from the per-datagram reflector, and the batched client
counts every result of a run through either."""

from __future__ import annotations

import select

import pytest

from tests.native.conftest import load_bench_floor
from tests.native.udp_gso import SOL_UDP, UDP_GRO, send_segmented, split_gro

pytestmark = pytest.mark.timeout(120)


floor = load_bench_floor()


@pytest.fixture(autouse=True)
def _needs() -> None:
    try:
        floor.build()
    except floor.FloorUnavailable as e:
        pytest.skip(str(e))
    if not floor.gso_available():
        pytest.skip("no UDP GSO/GRO on this kernel")


def _exchange(gso: bool, burst: list[bytes]) -> list[bytes]:
    """One worker sends ``burst`` as one segmented send; what the reflector returns, split."""
    (sock,) = floor.worker_sockets(1)
    sock.setsockopt(SOL_UDP, UDP_GRO, 1)
    try:
        with floor.reflector([sock.getsockname()], gso=gso) as addr:
            send_segmented(sock, burst, addr)
            out: list[bytes] = []
            while len(out) < len(burst) and select.select([sock], [], [], 10)[0]:
                data, anc, _, _ = sock.recvmsg(65536, 64)
                out += split_gro(data, anc)
            return out
    finally:
        sock.close()


def test_both_reflectors_return_the_same_datagrams() -> None:
    packets = floor.dense_packets(1, 1, 8, 64)[0]
    burst = packets + [packets[0][:30]]  # a shorter last one
    plain, fast = _exchange(False, burst), _exchange(True, burst)
    assert plain == fast and len(plain) == len(burst)
    assert all(p[0] & 0x1 for p in plain)  # marked as results


@pytest.mark.parametrize("gso", [False, True])
def test_the_client_counts_every_result(gso: bool) -> None:
    socks = floor.worker_sockets(2)
    try:
        with floor.reflector([s.getsockname() for s in socks], gso=gso) as addr:
            packets = floor.dense_packets(2, 1, 16, 256)
            done = floor.run_client(addr, socks, packets, 500, 16, gso=gso)
    finally:
        for s in socks:
            s.close()
    assert done["packets_in"] == 1000 and done["results"] == 1000
