"""Packet-in/out encoding (the P4Runtime specification, 'Packet I/O'; docs/p4runtime.md).

Packet-out: the ``packet_out`` controller header's fields, bit-packed in P4Info order (most
significant bit first) into ceil(total width / 8) bytes, are prepended to the payload, which is
then injected on the CPU port. Packet-in: a packet the program sends to the CPU port loses its
first ceil(total width / 8) bytes, decoded the same way into the ``packet_in`` metadata.
"""

from __future__ import annotations

from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .schema import ControllerHeader


def pack_packet_out(header: ControllerHeader | None, msg: Any) -> bytes:
    """The bytes injected for a PacketOut: header (missing metadata read as 0) + payload."""
    if header is None:
        if msg.metadata:
            raise invalid("the P4Info has no packet_out controller header; metadata given")
        return bytes(msg.payload)
    values: dict[int, int] = {}
    for md in msg.metadata:
        f = header.by_id.get(md.metadata_id)
        if f is None:
            raise invalid(f"packet_out has no metadata with id {md.metadata_id}")
        if md.metadata_id in values:
            raise invalid(f"packet_out metadata {f[1]} given twice")
        values[md.metadata_id] = bytestrings.decode(md.value, f[2], f"packet_out metadata {f[1]}")
    acc = 0
    for fid, _, width in header.fields:
        acc = (acc << width) | values.get(fid, 0)
    n = header.nbytes
    acc <<= n * 8 - header.bits
    return acc.to_bytes(n, "big") + bytes(msg.payload)


def unpack_packet_in(header: ControllerHeader | None, frame: bytes) -> Any:
    """The PacketIn message of a frame sent to the CPU port (P4RTError if it is too short)."""
    msg = p4runtime_pb2.PacketIn()
    if header is None:
        msg.payload = frame
        return msg
    n = header.nbytes
    if len(frame) < n:
        raise invalid(f"packet to the CPU port is shorter than the packet_in header ({n} bytes)")
    acc = int.from_bytes(frame[:n], "big") >> (n * 8 - header.bits)
    shift = header.bits
    for fid, _, width in header.fields:
        shift -= width
        md = msg.metadata.add()
        md.metadata_id = fid
        md.value = bytestrings.encode((acc >> shift) & ((1 << width) - 1))
    msg.payload = frame[n:]
    return msg
