"""RegisterEntry (not in simple_switch_grpc; PI issue #376): read and modify register cells.

Cells hold ``bit<W>``, ``int<W>``, ``bool`` or serializable-enum values, exchanged as P4Data
(``bitstring`` canonical on the way out; padded or sign-extended accepted on the way in).
An omitted index means every cell, for reads and for writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import p4data
from .entity_common import indexes, lookup, modify_only, read_targets
from .errors import P4RTError, invalid
from .state import PipelineState


def write(state: PipelineState, update_type: int, msg: Any) -> None:
    info = lookup(state.schema.registers, msg.register_id, "register")
    modify_only(update_type, "register")
    reg = state.pipeline.registers[info.name]
    owner = f"register {info.name}"
    if not msg.HasField("data"):
        raise invalid(f"{owner}: no data given")
    kind, width, signed = p4data.scalar_spec(info.type_spec, state.schema.type_info)
    value = p4data.decode_scalar(msg.data, kind, width, signed, owner)
    targets = list(indexes(msg, reg.size, owner))
    fill = getattr(reg, "cp_fill", None)  # the native engine's: one call for many cells
    if fill is not None:
        fill(targets, value)
        return
    for i in targets:
        reg.cp_write(i, value)


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    infos = read_targets(state.schema.registers, msg.register_id, "register", msg)
    for info in infos:
        reg = state.pipeline.registers[info.name]
        try:
            kind, width, signed = p4data.scalar_spec(info.type_spec, state.schema.type_info)
        except P4RTError:
            if msg.register_id == 0:
                continue  # a wildcard read skips registers of types it cannot express
            raise
        for i in indexes(msg, reg.size, f"register {info.name}"):
            out = p4runtime_pb2.RegisterEntry(register_id=info.id)
            out.index.index = i
            out.data.CopyFrom(p4data.encode_scalar(reg.cp_read(i), kind, width, signed))
            yield p4runtime_pb2.Entity(register_entry=out)
