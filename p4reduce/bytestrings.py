"""P4Runtime bytestrings (the P4Runtime specification, "Bytestrings"; docs/p4runtime.md): the
one codec of the switch's P4Runtime server and the controller's client.

Values go out canonical: the shortest big-endian encoding (one zero byte for 0; for a signed
value the shortest two's complement), which the embedded switch and simple_switch_grpc both
accept. Values come in at any width: zero-padded (sign-extended for signed values) strings
are read by value, and what is checked is the value against the field's bit width.
Errors are ``BytestringError`` (a ValueError) with one line; each side turns it into its own
error (the switch's OUT_OF_RANGE status, the controller's InvalidArgument).
"""

from __future__ import annotations


class BytestringError(ValueError):
    """An empty bytestring, or a value that does not fit its field."""


def encode(value: int, signed: bool = False) -> bytes:
    """The canonical bytestring of ``value`` (the shortest two's complement when ``signed``;
    an unsigned value below 0 encodes as 0, as the switch's replies always did)."""
    if signed:
        n = max(1, (value.bit_length() + 8) // 8)  # room for the sign bit
        return value.to_bytes(n, "big", signed=True)
    if value <= 0:
        return b"\x00"
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def encode_checked(value: int, width: int, what: str = "value") -> bytes:
    """The canonical bytestring of an unsigned ``value`` that must fit ``width`` bits."""
    if value < 0 or value >> width:
        raise BytestringError(f"{what} {value} does not fit in {width} bits")
    return encode(value)


def encode_padded(value: int, width: int) -> bytes:
    """``value`` in exactly ceil(width/8) bytes (two's complement when negative)."""
    n = max(1, (width + 7) // 8)
    return (value & ((1 << (n * 8)) - 1)).to_bytes(n, "big")


def value(data: bytes) -> int:
    """The unsigned value of a bytestring of any length (b"" reads 0): for replies, whose
    widths the reader already trusts."""
    return int.from_bytes(data, "big")


def decode(data: bytes, width: int, what: str = "value", signed: bool = False) -> int:
    """The value of a bytestring for a field of ``width`` bits; BytestringError if it is empty
    or does not fit.

    Unsigned fields: any number of leading zero bytes is accepted. Signed fields: the string is
    read as two's complement (so sign extension is accepted) and must fit in ``width`` bits;
    the value returned is the signed value. ``width`` <= 0: a string-typed field
    (@p4runtime_translation to string), any bytes.
    """
    if not data:
        raise BytestringError(f"{what}: empty bytestring")
    if width <= 0:
        return int.from_bytes(data, "big")
    if signed:
        v = int.from_bytes(data, "big", signed=True)
        if not -(1 << (width - 1)) <= v < (1 << (width - 1)):
            raise BytestringError(f"{what}: {v} does not fit in int<{width}>")
        return v
    v = int.from_bytes(data, "big")
    if v >> width:
        raise BytestringError(f"{what}: 0x{data.hex()} does not fit in {width} bits")
    return v
