"""ValueSetEntry: the members of a parser value set (MODIFY replaces them all).

Each member is a list of FieldMatch, one per value-set field at most: exact, ternary or lpm
(as P4Info declares the field; an omitted ternary/lpm field matches anything). Members are
kept by the interpreter as (value, mask) pairs and read back in the field's own kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from ..interp.matches import Exact, Lpm, Ternary
from . import bytestrings
from .entity_common import lookup, modify_only
from .entity_tables import decode_field
from .errors import invalid, resource_exhausted, unimplemented
from .schema import EXACT, LPM, TERNARY, ValueSetInfo
from .state import PipelineState


def _member(info: ValueSetInfo, msg: Any) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int] | None] = [None] * len(info.fields)
    owner = f"value set {info.name}"
    for fm in msg.match:
        f = info.fields_by_id.get(fm.field_id)
        if f is None:
            raise invalid(f"{owner}: no field with id {fm.field_id}")
        if pairs[f.index] is not None:
            raise invalid(f"{owner}: field {f.name} given twice in a member")
        m = decode_field(f, fm, owner)
        full = (1 << f.bitwidth) - 1
        if isinstance(m, Exact):
            pairs[f.index] = (m.value, full)
        elif isinstance(m, Ternary):
            pairs[f.index] = (m.value, m.mask)
        elif isinstance(m, Lpm):
            mask = ((1 << m.prefix_len) - 1) << (f.bitwidth - m.prefix_len)
            pairs[f.index] = (m.value, mask)
        else:
            raise unimplemented(f"{owner}: {type(m).__name__} members are not supported")
    out = []
    for f, p in zip(info.fields, pairs, strict=True):
        if p is None:
            if f.match_type == EXACT:
                raise invalid(f"{owner}: exact field {f.name} missing in a member")
            p = (0, 0)
        out.append(p)
    return out


def write(state: PipelineState, update_type: int, msg: Any) -> None:
    info = lookup(state.schema.value_sets, msg.value_set_id, "value set")
    modify_only(update_type, "value set")
    vs = state.pipeline.value_sets[info.name]
    owner = f"value set {info.name}"
    if [f.bitwidth for f in info.fields] != list(vs.widths):
        raise unimplemented(f"{owner}: its P4Info fields do not describe the program's value set")
    members = [_member(info, m) for m in msg.members]
    if len(members) > vs.size:
        raise resource_exhausted(f"{owner}: {len(members)} members given, size {vs.size}")
    vs.clear()
    for m in members:
        vs.add(m)


def _encode_member(info: ValueSetInfo, member: tuple[tuple[int, int], ...]) -> Any:
    out = p4runtime_pb2.ValueSetMember()
    for f, (v, m) in zip(info.fields, member, strict=True):
        full = (1 << f.bitwidth) - 1
        fm = p4runtime_pb2.FieldMatch(field_id=f.id)
        if f.match_type == EXACT or m == full and f.match_type not in (TERNARY, LPM):
            fm.exact.value = bytestrings.encode(v)
        elif m == 0:
            continue
        elif f.match_type == LPM:
            fm.lpm.value = bytestrings.encode(v)
            fm.lpm.prefix_len = bin(m).count("1")
        else:
            fm.ternary.value = bytestrings.encode(v)
            fm.ternary.mask = bytestrings.encode(m)
        out.match.append(fm)
    return out


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    if msg.value_set_id == 0:
        infos = list(state.schema.value_sets.values())
    else:
        infos = [lookup(state.schema.value_sets, msg.value_set_id, "value set")]
    for info in infos:
        vs = state.pipeline.value_sets[info.name]
        out = p4runtime_pb2.ValueSetEntry(value_set_id=info.id)
        if [f.bitwidth for f in info.fields] == list(vs.widths):
            for member in vs.members:
                out.members.append(_encode_member(info, member))
        yield p4runtime_pb2.Entity(value_set_entry=out)
