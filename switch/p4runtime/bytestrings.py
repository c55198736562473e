"""P4Runtime bytestrings (the P4Runtime specification, 'Bytestrings'; docs/p4runtime.md).

Replies use the canonical form: the shortest big-endian encoding (one zero byte for 0; for a
signed value the shortest two's complement). Requests may also be zero-padded (sign-extended
for signed values); what is checked is the *value* against the bit width. An empty string or
a value that does not fit gives OUT_OF_RANGE.
"""

from __future__ import annotations

from .errors import out_of_range


def encode(value: int, signed: bool = False) -> bytes:
    """The canonical bytestring of ``value`` (the shortest two's complement when ``signed``)."""
    if signed:
        n = max(1, (value.bit_length() + 8) // 8)  # room for the sign bit
        return value.to_bytes(n, "big", signed=True)
    if value <= 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def encode_padded(value: int, width: int) -> bytes:
    """``value`` in exactly ceil(width/8) bytes (two's complement when negative)."""
    n = max(1, (width + 7) // 8)
    return (value & ((1 << (n * 8)) - 1)).to_bytes(n, "big")


def decode(data: bytes, width: int, what: str = "value", signed: bool = False) -> int:
    """The value of a bytestring for a field of ``width`` bits; OUT_OF_RANGE if it does not fit.

    Unsigned fields: any number of leading zero bytes is accepted. Signed fields: the string is
    read as two's complement (so sign extension is accepted) and must fit in ``width`` bits;
    the value returned is the signed value.
    """
    if not data:
        raise out_of_range(f"{what}: empty bytestring")
    if width <= 0:  # a string-typed field (@p4runtime_translation to string): any bytes
        return int.from_bytes(data, "big")
    if signed:
        v = int.from_bytes(data, "big", signed=True)
        if not -(1 << (width - 1)) <= v < (1 << (width - 1)):
            raise out_of_range(f"{what}: {v} does not fit in int<{width}>")
        return v
    v = int.from_bytes(data, "big")
    if v >> width:
        raise out_of_range(f"{what}: 0x{data.hex()} does not fit in {width} bits")
    return v
