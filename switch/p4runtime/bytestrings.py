"""P4Runtime bytestrings for the server (docs/p4runtime.md): ``p4reduce.bytestrings``, the
codec the controller uses too, with its errors as the OUT_OF_RANGE status the specification
asks for (an empty string, or a value that does not fit its field)."""

from __future__ import annotations

from p4reduce import bytestrings as _codec
from p4reduce.bytestrings import encode, encode_padded

from .errors import out_of_range

__all__ = ["decode", "encode", "encode_padded"]


def decode(data: bytes, width: int, what: str = "value", signed: bool = False) -> int:
    """The value of a bytestring for a field of ``width`` bits (``p4reduce.bytestrings.decode``);
    OUT_OF_RANGE if it is empty or does not fit."""
    try:
        return _codec.decode(data, width, what, signed)
    except _codec.BytestringError as err:
        raise out_of_range(str(err)) from None
