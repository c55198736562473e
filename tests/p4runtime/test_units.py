"""Unit tests of the server's building blocks: bytestrings, packet-in/out packing, P4Info."""

from __future__ import annotations

import grpc
import pytest
from p4reduce.switch.p4runtime import Device, P4RTError
from p4reduce.switch.p4runtime.bytestrings import decode, encode
from p4reduce.switch.p4runtime.packetio import pack_packet_out, unpack_packet_in
from p4reduce.switch.p4runtime.schema import ControllerHeader, Schema

from p4reduce.proto import p4info_pb2
from p4reduce.proto import p4runtime_pb2 as p4rt


def test_canonical_encoding() -> None:
    assert encode(0) == b"\x00"
    assert encode(5) == b"\x05"
    assert encode(256) == b"\x01\x00"
    assert encode(-1, signed=True) == b"\xff"
    assert encode(127, signed=True) == b"\x7f"
    assert encode(128, signed=True) == b"\x00\x80"
    assert encode(-129, signed=True) == b"\xff\x7f"


def test_decoding_checks_the_value_not_the_length() -> None:
    assert decode(b"\x00\x00\x01\xff", 9) == 511
    assert decode(b"\xff\xff\xfe", 8, signed=True) == -2
    for data, width, signed in [(b"\x02\x00", 9, False), (b"", 8, False), (b"\x80", 7, True)]:
        with pytest.raises(P4RTError) as info:
            decode(data, width, signed=signed)
        assert info.value.code == grpc.StatusCode.OUT_OF_RANGE


def test_controller_header_packing_is_msb_first_and_padded() -> None:
    hdr = ControllerHeader(1, "packet_out", [(1, "a", 9), (2, "b", 3)])
    hdr.by_id = {f[0]: f for f in hdr.fields}
    msg = p4rt.PacketOut(payload=b"xyz")
    msg.metadata.add(metadata_id=1, value=b"\x01\x01")  # 257
    msg.metadata.add(metadata_id=2, value=b"\x05")
    data = pack_packet_out(hdr, msg)
    # 257 = 1_0000_0001, then 101, then 4 pad bits: 1000 0000 | 1101 0000
    assert data == bytes([0b10000000, 0b11010000]) + b"xyz"
    pin = unpack_packet_in(hdr, data)
    assert pin.payload == b"xyz"
    assert [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x01\x01"), (2, b"\x05")]
    msg.metadata[1].value = b"\x08"  # 8 does not fit 3 bits
    with pytest.raises(P4RTError):
        pack_packet_out(hdr, msg)
    with pytest.raises(P4RTError):
        unpack_packet_in(hdr, b"\x00")


def test_schema_refuses_duplicate_ids() -> None:
    info = p4info_pb2.P4Info()
    for name in ("a", "b"):
        a = info.actions.add()
        a.preamble.id, a.preamble.name = 0x01000001, name
    with pytest.raises(P4RTError) as exc:
        Schema(info)
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_device_without_pipeline_or_cpu_port() -> None:
    d = Device(1)
    assert d.inject(1, b"\x00" * 20) == []
    with pytest.raises(P4RTError) as info:
        d.packet_out(p4rt.PacketOut(payload=b"x"))
    assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(ValueError):
        Device(1, cpu_port=511)


def test_device_load_file(compiled) -> None:  # type: ignore[no-untyped-def]
    sent: list[tuple[int, bytes]] = []
    d = Device(1, transmit=lambda p, f: sent.append((p, f)))
    d.load_file(compiled.json_path, compiled.p4info_path)
    assert d.p4info == compiled.p4info
    frame = bytes(6) + bytes(5) + b"\x09\x12\x34" + b"data"
    assert d.inject(1, frame) == [(0, frame)] == sent
    d2 = Device(1)
    d2.load(compiled.device_config)  # the P4Info embedded in the device config
    assert d2.p4info == compiled.p4info
