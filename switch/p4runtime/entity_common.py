"""Helpers the entity codecs share: update types, lookups by id, action decoding."""

from __future__ import annotations

from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import bytestrings
from .errors import invalid, not_found, out_of_range
from .schema import SCOPE, ActionInfo

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
UPDATE_NAMES = {INSERT: "INSERT", MODIFY: "MODIFY", DELETE: "DELETE"}


def lookup(table: dict[int, Any], obj_id: int, what: str) -> Any:
    """The P4Info object ``obj_id`` of a kind; INVALID_ARGUMENT for 0, NOT_FOUND if unknown."""
    if obj_id == 0:
        raise invalid(f"{what} id 0 is not valid here")
    info = table.get(obj_id)
    if info is None:
        raise not_found(f"no {what} with id {obj_id}")
    return info


def modify_only(update_type: int, what: str) -> None:
    if update_type != MODIFY:
        name = UPDATE_NAMES.get(update_type, "UNSPECIFIED")
        raise invalid(f"{what} entries can only be modified, not {name}")


def decode_action(
    schema: Any, msg: Any, allowed: dict[int, int], owner: str, default: bool = False
) -> tuple[ActionInfo, list[int]]:
    """(action, argument values) of a p4.v1.Action allowed by ``allowed`` (id -> scope)."""
    info = schema.actions.get(msg.action_id)
    if info is None:
        raise not_found(f"{owner}: no action with id {msg.action_id}")
    scope = allowed.get(msg.action_id)
    if scope is None:
        raise invalid(f"{owner}: action {info.name} is not one of its actions")
    if default and scope == SCOPE.TABLE_ONLY:
        raise invalid(f"{owner}: action {info.name} cannot be the default action (@tableonly)")
    if not default and scope == SCOPE.DEFAULT_ONLY:
        raise invalid(f"{owner}: action {info.name} can only be the default action (@defaultonly)")
    values: list[int | None] = [None] * len(info.params)
    for p in msg.params:
        pinfo = info.params_by_id.get(p.param_id)
        if pinfo is None:
            raise invalid(f"{owner}: action {info.name} has no parameter with id {p.param_id}")
        if values[pinfo.index] is not None:
            raise invalid(f"{owner}: action {info.name}: parameter {pinfo.name} given twice")
        values[pinfo.index] = bytestrings.decode(
            p.value, pinfo.bitwidth, f"{owner}: action {info.name} parameter {pinfo.name}"
        )
    missing = [info.params[i].name for i, v in enumerate(values) if v is None]
    if missing:
        raise invalid(f"{owner}: action {info.name}: missing parameter(s) {', '.join(missing)}")
    return info, [v for v in values if v is not None]


def encode_action(schema: Any, name: str, args: tuple[int, ...] | list[int], out: Any) -> bool:
    """Fill a p4.v1.Action; False when the action is not in the P4Info."""
    info = schema.action_by_name.get(name)
    if info is None:
        return False
    out.action_id = info.id
    for pinfo, v in zip(info.params, args, strict=False):
        p = out.params.add()
        p.param_id = pinfo.id
        p.value = bytestrings.encode(v)
    return True


def indexes(msg: Any, size: int, owner: str) -> Any:
    """The cells an indexed-extern entry names: its index, or all of them when it has none."""
    if not msg.HasField("index"):
        return range(size)
    idx = msg.index.index
    if not 0 <= idx < size:
        raise out_of_range(f"{owner}: index {idx} is out of range (size {size})")
    return [idx]


def read_targets(objects: dict[int, Any], obj_id: int, what: str, msg: Any) -> list[Any]:
    """The objects a read names: id 0 is all of them (and then no index may be given)."""
    if obj_id == 0:
        if msg.HasField("index"):
            raise invalid(f"a read of all {what}s ({what} id 0) takes no index")
        return list(objects.values())
    return [lookup(objects, obj_id, what)]
