"""P4Data values (p4data.proto) from and to the interpreter's values, guided by P4Info types.

The interpreter hands out a digest as the flat tuple of its leaves (a header's leaves are its
validity bit then its fields; docs/interpreter.md) and keeps registers as plain integers.
``encode_leaves`` rebuilds the structured P4Data of a P4Info type spec from such leaves;
``scalar_spec``/``decode_scalar``/``encode_scalar`` handle the one-value types of registers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4data_pb2

from . import bytestrings
from .errors import invalid, unimplemented


def _resolve(spec: Any, type_info: Any) -> Any:
    """Follow ``new_type`` (type) declarations to the type they stand for."""
    for _ in range(32):
        if spec.WhichOneof("type_spec") != "new_type":
            return spec
        nt = type_info.new_types.get(spec.new_type.name)
        if nt is None or nt.WhichOneof("representation") != "original_type":
            return spec  # a translated type: left as it is
        spec = nt.original_type
    return spec


def scalar_spec(spec: Any, type_info: Any) -> tuple[str, int, bool]:
    """(kind, width, signed) of a one-value type: kind 'bits' or 'bool'; UNIMPLEMENTED else."""
    spec = _resolve(spec, type_info)
    kind = spec.WhichOneof("type_spec")
    if kind == "bool":
        return "bool", 1, False
    if kind == "bitstring":
        bs = spec.bitstring
        which = bs.WhichOneof("type_spec")
        if which == "bit":
            return "bits", bs.bit.bitwidth, False
        if which == "int":
            return "bits", bs.int.bitwidth, True
    if kind == "serializable_enum":
        se = type_info.serializable_enums.get(spec.serializable_enum.name)
        if se is not None:
            return "bits", se.underlying_type.bitwidth, False
    raise unimplemented(f"P4Data of type {kind} is not supported here")


def decode_scalar(data: Any, kind: str, width: int, signed: bool, what: str) -> int:
    """The integer (register cell value) of a P4Data; signed values may come back negative."""
    which = data.WhichOneof("data")
    if kind == "bool":
        if which != "bool":
            raise invalid(f"{what}: expected a bool P4Data, got {which}")
        return int(data.bool)
    if which != "bitstring":
        raise invalid(f"{what}: expected a bitstring P4Data, got {which}")
    return bytestrings.decode(data.bitstring, width, what, signed)


def encode_scalar(value: int, kind: str, width: int, signed: bool) -> Any:
    out = p4data_pb2.P4Data()
    if kind == "bool":
        out.bool = bool(value)
    else:
        if signed and value >> (width - 1):
            value -= 1 << width  # the unsigned bit pattern back to its signed value
        out.bitstring = bytestrings.encode(value, signed)
    return out


def encode_leaves(spec: Any, type_info: Any, leaves: tuple[Any, ...], errors: list[str]) -> Any:
    """P4Data of a value of type ``spec`` whose leaves are ``leaves`` (interpreter order)."""
    it = iter(leaves)
    out = p4data_pb2.P4Data()
    _encode(spec, type_info, it, out, errors)
    return out


def _int_leaf(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, tuple):  # varbit (width, value)
        return int(v[1])
    return int(v)


def _encode(spec: Any, type_info: Any, it: Iterator[Any], out: Any, errors: list[str]) -> None:
    spec = _resolve(spec, type_info)
    kind = spec.WhichOneof("type_spec")
    if kind == "bitstring":
        bs = spec.bitstring
        which = bs.WhichOneof("type_spec")
        v = next(it, 0)
        if which == "varbit":
            width, value = v if isinstance(v, tuple) else (0, int(v))
            out.varbit.bitstring = bytestrings.encode(value)
            out.varbit.bitwidth = width
        elif which == "int":
            value = _int_leaf(v)
            w = bs.int.bitwidth
            if value >> (w - 1) and value > 0:
                value -= 1 << w
            out.bitstring = bytestrings.encode(value, signed=True)
        else:
            out.bitstring = bytestrings.encode(_int_leaf(v))
    elif kind == "bool":
        out.bool = bool(next(it, False))
    elif kind == "struct":
        st = type_info.structs.get(spec.struct.name)
        for m in st.members if st is not None else ():
            _encode(m.type_spec, type_info, it, out.struct.members.add(), errors)
    elif kind == "tuple":
        for m in spec.tuple.members:
            _encode(m, type_info, it, out.tuple.members.add(), errors)
    elif kind == "header":
        h = type_info.headers.get(spec.header.name)
        out.header.is_valid = bool(next(it, False))
        for _m in h.members if h is not None else ():
            v = _int_leaf(next(it, 0))
            out.header.bitstrings.append(bytestrings.encode(v))
        if not out.header.is_valid:
            del out.header.bitstrings[:]
    elif kind == "serializable_enum":
        out.bitstring = bytestrings.encode(_int_leaf(next(it, 0)))
    elif kind == "enum":
        e = type_info.enums.get(spec.enum.name)
        idx = _int_leaf(next(it, 0))
        members = list(e.members) if e is not None else []
        out.enum = members[idx].name if 0 <= idx < len(members) else str(idx)
    elif kind == "error":
        idx = _int_leaf(next(it, 0))
        out.error = errors[idx] if 0 <= idx < len(errors) else str(idx)
    else:  # header unions, stacks: not produced by digests in practice
        raise unimplemented(f"P4Data of type {kind} is not supported")
