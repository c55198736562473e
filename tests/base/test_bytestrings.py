"""One P4Runtime bytestring codec (p4reduce.bytestrings) for the switch's server and the
controller: what one side writes the other reads back, and a value that does not fit is
refused by both, each in its own error type with the same line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from p4reduce.controller import p4info as controller_codec
from p4reduce.controller.errors import InvalidArgument
from p4reduce.switch.p4runtime import bytestrings as switch_codec
from p4reduce.switch.p4runtime.errors import P4RTError

from p4reduce import bytestrings


@given(width=st.integers(1, 130), data=st.data())
def test_what_the_controller_writes_the_switch_reads(width: int, data: st.DataObject) -> None:
    v = data.draw(st.integers(0, (1 << width) - 1))
    wire = controller_codec.encode(v, width)
    assert wire == switch_codec.encode(v) == bytestrings.encode(v)  # canonical on both sides
    assert switch_codec.decode(wire, width) == v
    padded = switch_codec.encode_padded(v, width)
    assert switch_codec.decode(padded, width) == controller_codec.decode(padded) == v


@given(width=st.integers(1, 70), data=st.data())
def test_signed_values_round_trip(width: int, data: st.DataObject) -> None:
    v = data.draw(st.integers(-(1 << (width - 1)), (1 << (width - 1)) - 1))
    assert bytestrings.decode(bytestrings.encode(v, signed=True), width, signed=True) == v
    assert bytestrings.decode(bytestrings.encode_padded(v, width), width, signed=True) == v


def test_a_value_that_does_not_fit_is_refused_on_both_sides() -> None:
    with pytest.raises(InvalidArgument, match=r"^slot 256 does not fit in 8 bits$"):
        controller_codec.encode(256, 8, "slot")
    with pytest.raises(InvalidArgument, match=r"^slot -1 does not fit in 8 bits$"):
        controller_codec.encode(-1, 8, "slot")
    with pytest.raises(P4RTError) as info:
        switch_codec.decode(b"\x01\x00", 8, "slot")
    assert "OUT_OF_RANGE" in repr(info.value.code) and "slot: 0x0100 does not fit in 8 bits" in str(
        info.value
    )
    with pytest.raises(P4RTError, match="empty bytestring"):
        switch_codec.decode(b"", 8)
    assert controller_codec.decode(b"") == 0  # replies: the lenient reader
