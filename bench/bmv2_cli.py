"""P4Runtime writes as simple_switch_CLI commands, for the BMv2 builds that have no P4Runtime
server (``simple_switch_perf``, and ``simple_switch`` configured over thrift).

The controller's entry builders (``controller.jobs.install``, ``controller.static_config.install``)
write to a ``Connection``; ``Recorder`` stands in for one and keeps the updates, so the very
entities the embedded switch receives over P4Runtime are what ``commands`` turns into CLI
lines: nothing about a job is written down twice. Used by bench/sidebyside.py.

Supported: INSERT of table entries (exact, lpm, ternary, range; a default entry becomes
``table_set_default``), multicast groups (a node per replica instance, associated with the
group) and MODIFY of register cells. Anything else is a ``ValueError`` naming it: a fresh
switch needs nothing else, and guessing at deletes or entry handles would be wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from p4reduce.controller.p4info import Schema
from p4reduce.controller.p4rt import INSERT, MODIFY

from p4reduce.proto import p4info_pb2, p4runtime_pb2


@dataclass
class Recorder:
    """A ``Connection`` for the controller's install functions that writes nothing: it keeps
    each (update type, entity) pair, in order."""

    updates: list[tuple[int, Any]] = field(default_factory=list)

    def write(self, updates: Iterable[tuple[int, Any]], what: str = "write") -> None:
        self.updates.extend(updates)


def _value(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _match(schema: Schema, te: Any) -> tuple[list[str], bool]:
    """The CLI match fields of a table entry, in the table's key order (a ternary or range
    field the entry leaves out is a wildcard), and whether the table needs a priority."""
    table = schema.tables_by_id[te.table_id]
    given = {fm.field_id: fm for fm in te.match}
    out: list[str] = []
    prioritised = False
    for name, (fid, width, kind) in table.fields.items():
        fm = given.get(fid)
        if kind == p4info_pb2.MatchField.EXACT:
            if fm is None:
                raise ValueError(f"{table.name}: exact field {name} missing")
            out.append(str(_value(fm.exact.value)))
        elif kind == p4info_pb2.MatchField.LPM:
            # value/len: p4c's STF runner is what chokes on 0xVAL/LEN, not the CLI
            out.append(f"{_value(fm.lpm.value)}/{fm.lpm.prefix_len}" if fm else "0/0")
        elif kind == p4info_pb2.MatchField.TERNARY:
            prioritised = True
            out.append(f"{_value(fm.ternary.value)}&&&{_value(fm.ternary.mask)}" if fm else "0&&&0")
        elif kind == p4info_pb2.MatchField.RANGE:
            prioritised = True
            lo, hi = (_value(fm.range.low), _value(fm.range.high)) if fm else (0, (1 << width) - 1)
            out.append(f"{lo}->{hi}")
        else:
            raise ValueError(f"{table.name}: match kind of field {name} has no CLI form here")
    return out, prioritised


def _action(schema: Schema, te: Any) -> tuple[str, list[str]]:
    """The action's name and its parameters in declaration order (the CLI's order)."""
    table = schema.tables_by_id[te.table_id].name
    if not te.action.HasField("action"):
        raise ValueError(f"{table}: only direct actions have a CLI form here")
    action = schema.actions_by_id[te.action.action.action_id]
    given = {p.param_id: _value(p.value) for p in te.action.action.params}
    missing = [n for n, (pid, _) in action.params.items() if pid not in given]
    if missing:
        raise ValueError(f"{table}: action {action.name} without {', '.join(missing)}")
    return action.name, [str(given[pid]) for pid, _ in action.params.values()]


def _table_entry(schema: Schema, kind: int, te: Any) -> list[str]:
    table = schema.tables_by_id[te.table_id].name
    name, params = _action(schema, te)
    if te.is_default_action:
        return [" ".join(["table_set_default", table, name, *params])]
    if kind != INSERT:
        raise ValueError(f"{table}: only inserts of entries have a CLI form here")
    match, prioritised = _match(schema, te)
    priority = [str(te.priority)] if prioritised else []
    return [" ".join(["table_add", table, name, *match, "=>", *params, *priority])]


def _multicast(group: Any, handles: list[int]) -> list[str]:
    """A group, then one node per replica instance (its ports together), each associated.
    BMv2 numbers nodes 0, 1, ... in creation order on a fresh switch; ``handles`` carries
    the next number across groups."""
    out = [f"mc_mgrp_create {group.multicast_group_id}"]
    ports: dict[int, list[int]] = {}
    for r in group.replicas:
        port = _value(r.port) if r.WhichOneof("port_kind") == "port" else r.egress_port
        ports.setdefault(r.instance, []).append(port)
    for rid, plist in ports.items():
        handle = handles[0]
        handles[0] += 1
        out.append(f"mc_node_create {rid} {' '.join(map(str, plist))}")
        out.append(f"mc_node_associate {group.multicast_group_id} {handle}")
    return out


def commands(schema: Schema, updates: Sequence[tuple[int, Any]]) -> list[str]:
    """simple_switch_CLI lines that put ``updates`` on a freshly started BMv2 switch."""
    out: list[str] = []
    handles = [0]
    for kind, ent in updates:
        if isinstance(ent, p4runtime_pb2.Entity):
            ent = getattr(ent, ent.WhichOneof("entity"))
        if isinstance(ent, p4runtime_pb2.TableEntry):
            out += _table_entry(schema, kind, ent)
        elif isinstance(ent, p4runtime_pb2.PacketReplicationEngineEntry):
            if kind != INSERT or ent.WhichOneof("type") != "multicast_group_entry":
                raise ValueError("only inserts of multicast groups have a CLI form here")
            out += _multicast(ent.multicast_group_entry, handles)
        elif isinstance(ent, p4runtime_pb2.RegisterEntry) and kind in (INSERT, MODIFY):
            name = next(n for n, r in schema.registers.items() if r.id == ent.register_id)
            if not ent.HasField("index"):
                raise ValueError(f"register {name}: a write of every cell has no CLI form here")
            out.append(f"register_write {name} {ent.index.index} {_value(ent.data.bitstring)}")
        else:
            raise ValueError(f"{type(ent).__name__} (update type {kind}) has no CLI form here")
    return out


def errors(cli_output: str) -> list[str]:
    """The lines of simple_switch_CLI's output that report a failed command (it exits 0
    whatever happened, so its words are all there is)."""
    bad = ("Error", "Invalid", "error:", "Exception")
    return [line.strip() for line in cli_output.splitlines() if any(b in line for b in bad)]
