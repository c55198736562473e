"""p4reduce.host.wire against docs/protocol.md, "Frame layout", and constants.p4."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from p4reduce.host import wire
from p4reduce.host.wire import AggHeader, WireError

ROOT = Path(__file__).resolve().parents[2]
K = 64


def hdr(**kw) -> AggHeader:
    base = dict(
        msg_type=wire.MSG_DENSE,
        flags=0,
        rank=3,
        job_id=0x1234,
        set=1,
        slot=5,
        exponent=130,
        packet_id=0xDEADBEEF,
        block=0x01020304,
        next=0,
        key=0xA50F1E2D,
    )
    base.update(kw)
    return AggHeader(**base)


def test_constants_mirror_constants_p4() -> None:
    text = (ROOT / "p4src/include/constants.p4").read_text()
    consts = {
        m.group(1): int(m.group(2), 0)
        for m in re.finditer(r"const\s+bit<\d+>\s+(\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;", text)
    }
    defines = {
        m.group(1): int(m.group(2), 0)
        for m in re.finditer(r"#define\s+(\w+)\s+(0x[0-9A-Fa-f]+|\d+)\b", text)
    }
    assert consts["MSG_DENSE"] == wire.MSG_DENSE
    assert consts["MSG_SPARSE"] == wire.MSG_SPARSE
    assert consts["FLAG_RESULT"] == wire.FLAG_RESULT
    assert consts["FLAG_NO_PAYLOAD"] == wire.FLAG_NO_PAYLOAD
    assert consts["FLAG_RETRANSMIT"] == wire.FLAG_RETRANSMIT
    assert consts["FLAG_END"] == wire.FLAG_END
    assert consts["NEXT_END"] == wire.NEXT_END
    assert defines["AGG_UDP_PORT"] == wire.AGG_PORT
    assert defines["AGG_HEADER_BYTES"] == wire.HEADER_BYTES
    assert defines["K"] == wire.K_DEFAULT
    assert defines["POOL_SLOTS"] == wire.POOL_SLOTS
    assert defines["MAX_WORKERS"] == wire.MAX_WORKERS


def test_header_bytes_follow_the_table() -> None:
    h = hdr(flags=wire.FLAG_NO_PAYLOAD, next=wire.NEXT_END, msg_type=wire.MSG_SPARSE)
    b = wire.pack_header(h)
    assert len(b) == 24
    assert b[0] == 0x22  # msgType 2 in the high nibble, FLAG_NO_PAYLOAD in the low
    assert b[1] == 3
    assert b[2:4] == b"\x12\x34"
    assert b[4:6] == b"\x80\x05"  # set bit 15, slot 5
    assert b[6] == 130 and b[7] == 0
    assert b[8:12] == b"\xde\xad\xbe\xef"
    assert b[12:16] == b"\x01\x02\x03\x04"
    assert b[16:20] == b"\xff\xff\xff\xff"
    assert b[20:24] == b"\xa5\x0f\x1e\x2d"  # the job key
    assert wire.unpack_header(b) == h
    assert (
        wire.header_bytes(
            2, 2, 3, 0x1234, 1, 5, 130, 0xDEADBEEF, 0x01020304, wire.NEXT_END, 0xA50F1E2D
        )
        == b
    )


@settings(max_examples=60, deadline=None)
@given(
    msg_type=st.integers(0, 15),
    flags=st.integers(0, 15),
    rank=st.integers(0, 255),
    job_id=st.integers(0, 0xFFFF),
    set_=st.integers(0, 1),
    slot=st.integers(0, 0x7FFF),
    exponent=st.integers(0, 255),
    nonfinite=st.integers(0, 255),
    packet_id=st.integers(0, 2**32 - 1),
    block=st.integers(0, 2**32 - 1),
    next_=st.integers(0, 2**32 - 1),
    key=st.integers(0, 2**32 - 1),
)
def test_header_round_trip(
    msg_type, flags, rank, job_id, set_, slot, exponent, nonfinite, packet_id, block, next_, key
) -> None:
    h = AggHeader(
        msg_type, flags, rank, job_id, set_, slot, exponent, packet_id, block, next_, nonfinite, key
    )
    assert wire.unpack_header(wire.pack_header(h)) == h


@pytest.mark.parametrize(
    "field,value",
    [
        ("msg_type", 16),
        ("flags", 16),
        ("rank", 256),
        ("job_id", 65536),
        ("set", 2),
        ("slot", 0x8000),
        ("exponent", 256),
        ("packet_id", 2**32),
        ("block", -1),
        ("next", 2**32),
        ("key", 2**32),
        ("key", -1),
    ],
)
def test_pack_header_rejects_fields_too_wide(field: str, value: int) -> None:
    with pytest.raises(WireError, match=field.split("_")[0]):
        wire.pack_header(hdr(**{field: value}))


def test_payload_is_big_endian_int32() -> None:
    v = np.array([1, -1, 2**31 - 1, -(2**31)] + [0] * (K - 4), dtype=np.int32)
    data = wire.encode(hdr(), v, K)
    assert len(data) == 24 + 4 * K
    assert data[24:40] == bytes.fromhex("00000001ffffffff7fffffff80000000")
    p = wire.decode(data, K)
    assert p.header == hdr()
    assert p.payload.dtype == np.int32 and p.payload.dtype.isnative
    assert np.array_equal(p.payload, v)


def test_header_only_packets() -> None:
    h = hdr(flags=wire.FLAG_NO_PAYLOAD)
    data = wire.encode(h, None, K)
    assert data == wire.pack_header(h)
    assert wire.decode(data, K).payload is None
    with pytest.raises(WireError, match="without FLAG_NO_PAYLOAD"):
        wire.encode(hdr(), None, K)
    with pytest.raises(WireError, match="FLAG_NO_PAYLOAD set"):
        wire.encode(h, np.zeros(K, np.int32), K)
    with pytest.raises(WireError, match="shape"):
        wire.encode(hdr(), np.zeros(K - 1, np.int32), K)
    with pytest.raises(WireError, match="int32"):
        wire.encode(hdr(), np.zeros(K, np.int64), K)


@pytest.mark.parametrize("length", [0, 20, 23, 25, 24 + 4 * K - 1, 24 + 4 * K + 1, 24 + 4 * 256])
def test_decode_rejects_wrong_lengths(length: int) -> None:
    data = (wire.pack_header(hdr(flags=wire.FLAG_RESULT)) + bytes(4 * 256 + 4))[:length]
    with pytest.raises(WireError):
        wire.decode_result(data, K)


def test_header_only_flag_with_payload_bytes_is_rejected() -> None:
    data = wire.pack_header(hdr(flags=wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD)) + bytes(4 * K)
    with pytest.raises(WireError, match="with FLAG_NO_PAYLOAD"):
        wire.decode_result(data, K)


def test_decode_result_is_strict_about_flags() -> None:
    ok = wire.pack_header(hdr(flags=wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD))
    assert wire.decode_result(ok, K).header.is_result
    with pytest.raises(WireError, match="FLAG_RESULT"):
        wire.decode_result(wire.pack_header(hdr(flags=wire.FLAG_NO_PAYLOAD)), K)
    with pytest.raises(WireError, match="msgType"):
        wire.decode_result(
            wire.pack_header(hdr(msg_type=3, flags=wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD)), K
        )
    with pytest.raises(WireError, match="dense result with FLAG_END"):
        wire.decode_result(
            wire.pack_header(hdr(flags=wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD | wire.FLAG_END)), K
        )
    sparse = dict(msg_type=wire.MSG_SPARSE)
    end = wire.FLAG_RESULT | wire.FLAG_NO_PAYLOAD | wire.FLAG_END
    assert wire.decode_result(wire.pack_header(hdr(**sparse, flags=end, next=wire.NEXT_END)), K)
    with pytest.raises(WireError, match="FLAG_END set"):
        wire.decode_result(wire.pack_header(hdr(**sparse, flags=end, next=7)), K)
    with pytest.raises(WireError, match="FLAG_END clear"):
        wire.decode_result(
            wire.pack_header(hdr(**sparse, flags=end & ~wire.FLAG_END, next=wire.NEXT_END)),
            K,
        )


def test_decode_request_rejects_result_side_flags() -> None:
    for f in (wire.FLAG_RESULT, wire.FLAG_RETRANSMIT, wire.FLAG_END):
        with pytest.raises(WireError, match="result-side"):
            wire.decode_request(wire.pack_header(hdr(flags=f | wire.FLAG_NO_PAYLOAD)), K)
    assert wire.decode_request(wire.pack_header(hdr(flags=wire.FLAG_NO_PAYLOAD)), K)


def test_k256_packets() -> None:
    v = np.arange(256, dtype=np.int32) - 128
    data = wire.encode(hdr(), v, 256)
    assert len(data) == 24 + 1024
    assert np.array_equal(wire.decode(data, 256).payload, v)
    with pytest.raises(WireError):
        wire.decode(data, 64)
