"""UDP GSO/GRO on a test's own sockets (linux/udp.h): one segmented send, and a read split
back into its datagrams. Shared by the tests of the native loop's offload
(test_loop_offload.py), of the benchmarks' floor (test_floor_gso.py) and of the driver's
offload (tests/host/offload_reflector.py)."""

from __future__ import annotations

import socket
import struct

SOL_UDP = socket.SOL_UDP
UDP_SEGMENT, UDP_GRO = 103, 104  # linux/udp.h (Python's socket module lacks them)


def send_segmented(sock: socket.socket, payloads: list[bytes], to: tuple[str, int]) -> None:
    """One sendmsg carrying every payload (all of one length but a shorter last one)."""
    sock.sendmsg(payloads, [(SOL_UDP, UDP_SEGMENT, struct.pack("H", len(payloads[0])))], 0, to)


def split_gro(data: bytes, ancdata: list[tuple[int, int, bytes]]) -> list[bytes]:
    """The datagrams of one read from a socket with UDP_GRO on: the kernel's segment size
    (in the ancillary data when it coalesced several) cuts ``data``; an empty datagram is
    one empty part."""
    seg = len(data) or 1
    for level, kind, value in ancdata:
        if (level, kind) == (SOL_UDP, UDP_GRO):
            seg = struct.unpack("i", value)[0]
    return [data[i : i + seg] for i in range(0, len(data), seg)] or [b""]
