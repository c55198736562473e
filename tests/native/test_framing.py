"""Differential test: the UDP adapter's framing in C (ioloop.c) against switch/ports/ipudp.py,
the reference, on random payloads and random, mutated and malformed frames."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from p4reduce.switch.native import ioloop
from p4reduce.switch.ports import ipudp

ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
macs = st.binary(min_size=6, max_size=6)
ports16 = st.integers(0, 65535)
endpoints = st.builds(ipudp.Endpoints, macs, macs, ipv4, ipv4, ports16, ports16)


def _python_payload(frame: bytes) -> bytes | str:
    try:
        return ipudp.udp_payload(frame)
    except ipudp.NotUdp as why:
        return why.reason


def _c_payload(frame: bytes, lib) -> bytes | str:
    try:
        return ioloop.udp_payload(frame, lib)
    except ipudp.NotUdp as why:
        return why.reason


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=5000), ends=endpoints, ip_id=st.integers(0, 0xFFFF))
def test_build_frame_is_byte_identical(lib, payload: bytes, ends, ip_id: int) -> None:
    assert ioloop.build_frame(payload, ends, ip_id, lib) == ipudp.build_frame(payload, ends, ip_id)


def test_checksum_corner_cases(lib) -> None:
    """Odd lengths, every length around the 8-byte stride, and a UDP checksum computing to
    0 (sent as 0xFFFF) take paths random payloads rarely hit."""
    ends = ipudp.Endpoints(b"\x02" * 6, b"\x04" * 6, "10.0.0.1", "10.0.0.2", 1, 2)
    for n in range(0, 40):
        payload = bytes(range(n))
        assert ioloop.build_frame(payload, ends, n, lib) == ipudp.build_frame(payload, ends, n)
    zero_sum = None
    rng = random.Random(7)
    for _ in range(200000):
        payload = rng.randbytes(2)
        if ipudp.build_frame(payload, ends, 0)[40:42] == b"\xff\xff":
            zero_sum = payload
            break
    assert zero_sum is not None
    assert ioloop.build_frame(zero_sum, ends, 0, lib) == ipudp.build_frame(zero_sum, ends, 0)


def test_port_mac(lib) -> None:
    for n in (0, 1, 255, 256, 510):
        assert ioloop.port_mac(n, lib) == ipudp.port_mac(n)


def _valid_frame(rng: random.Random) -> bytes:
    ends = ipudp.Endpoints(rng.randbytes(6), rng.randbytes(6), "127.0.0.1", "127.0.0.2", 5, 6)
    return ipudp.build_frame(rng.randbytes(rng.randrange(0, 300)), ends, rng.randrange(65536))


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(6)
    if kind == 0 and data:  # truncate
        return bytes(data[: rng.randrange(len(data))])
    if kind == 1:  # pad (Ethernet padding or trailing junk)
        return bytes(data) + rng.randbytes(rng.randrange(1, 40))
    if kind == 2 and len(data) >= 42:  # a header field of interest
        off = rng.choice([12, 13, 14, 16, 17, 20, 21, 23, 38, 39])
        data[off] = rng.randrange(256)
        return bytes(data)
    if kind == 3 and len(data) >= 15:  # IHL with options (kept consistent or not)
        data[14] = 0x40 | rng.randrange(16)
        return bytes(data)
    if kind == 4 and len(data) >= 22:  # fragment bits
        struct.pack_into("!H", data, 20, rng.choice([0x2000, 0x0001, 0x4000, 0x1FFF, 0x8000]))
        return bytes(data)
    for _ in range(rng.randrange(1, 4)):  # random byte flips
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def test_udp_payload_matches_on_random_and_malformed_frames(lib) -> None:
    rng = random.Random(15)
    reasons = set()
    for i in range(20000):
        if i % 5 == 0:
            frame = rng.randbytes(rng.randrange(0, 80))
        else:
            frame = _valid_frame(rng)
            for _ in range(rng.randrange(0, 3)):
                frame = _mutate(frame, rng)
        expected = _python_payload(frame)
        assert _c_payload(frame, lib) == expected, frame.hex()
        reasons.add(expected if isinstance(expected, str) else "ok")
    # the generator reaches every outcome, so the comparison covers every branch
    assert reasons == {"ok", "runt", "not_ipv4", "malformed", "ip_fragment", "not_udp"}


@pytest.mark.parametrize("ihl", [5, 6, 15])
def test_udp_payload_with_ip_options(lib, ihl: int) -> None:
    payload = b"hello, options"
    udp = struct.pack("!HHHH", 1, 2, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(udp), 0, 0, 64, 17, 0,
                     b"\x01" * 4, b"\x02" * 4)  # fmt: skip
    frame = b"\0" * 12 + b"\x08\x00" + ip + b"\xaa" * (ihl * 4 - 20) + udp + b"\0" * 5
    assert _c_payload(frame, lib) == _python_payload(frame) == payload
