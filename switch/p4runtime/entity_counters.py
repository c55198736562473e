"""CounterEntry and DirectCounterEntry (modify-only; an omitted index means every cell)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import entity_tables
from .entity_common import indexes, lookup, modify_only, read_targets
from .errors import invalid
from .schema import COUNTER_UNIT
from .state import PipelineState


def _data(unit: int, packets: int, nbytes: int) -> Any:
    d = p4runtime_pb2.CounterData()
    if unit in (COUNTER_UNIT.PACKETS, COUNTER_UNIT.BOTH, COUNTER_UNIT.UNSPECIFIED):
        d.packet_count = packets
    if unit in (COUNTER_UNIT.BYTES, COUNTER_UNIT.BOTH, COUNTER_UNIT.UNSPECIFIED):
        d.byte_count = nbytes
    return d


def _values(msg: Any, owner: str) -> tuple[int, int]:
    if not msg.HasField("data"):
        return 0, 0
    if msg.data.packet_count < 0 or msg.data.byte_count < 0:
        raise invalid(f"{owner}: counter values cannot be negative")
    return msg.data.packet_count, msg.data.byte_count


def write(state: PipelineState, update_type: int, msg: Any) -> None:
    info = lookup(state.schema.counters, msg.counter_id, "counter")
    modify_only(update_type, "counter")
    counter = state.pipeline.counters[info.name]
    owner = f"counter {info.name}"
    packets, nbytes = _values(msg, owner)
    for i in indexes(msg, counter.size, owner):
        counter.cp_write(i, packets, nbytes)


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    infos = read_targets(state.schema.counters, msg.counter_id, "counter", msg)
    for info in infos:
        counter = state.pipeline.counters[info.name]
        for i in indexes(msg, counter.size, f"counter {info.name}"):
            out = p4runtime_pb2.CounterEntry(counter_id=info.id)
            out.index.index = i
            out.data.CopyFrom(_data(info.unit, counter.packets[i], counter.bytes[i]))
            yield p4runtime_pb2.Entity(counter_entry=out)


def _counter_table(state: PipelineState, table_id: int) -> Any:
    t = entity_tables.table_of(state, table_id)[0]
    if not t.direct_counter_id:
        raise invalid(f"table {t.name} has no direct counter")
    return state.schema.direct_counters[t.direct_counter_id]


def write_direct(state: PipelineState, update_type: int, msg: Any) -> None:
    modify_only(update_type, "direct counter")
    info = _counter_table(state, msg.table_entry.table_id)
    _, _, entry = entity_tables.locate(state, msg.table_entry)
    entry.packets, entry.bytes = _values(msg, f"direct counter {info.name}")


def read_direct(state: PipelineState, msg: Any) -> Iterator[Any]:
    te = msg.table_entry
    if te.table_id == 0:
        if te.match or te.priority:
            raise invalid("a direct counter read of all tables takes no match or priority")
        ids = [t.id for t in state.schema.tables.values() if t.direct_counter_id]
    else:
        _counter_table(state, te.table_id)
        ids = [te.table_id]
    for tid in ids:
        sel = p4runtime_pb2.TableEntry()
        sel.CopyFrom(te)
        sel.table_id = tid
        info = _counter_table(state, tid)
        for t, _, entry in list(entity_tables.select(state, sel)):
            out = p4runtime_pb2.DirectCounterEntry()
            out.table_entry.CopyFrom(entity_tables.encode_entry(state, t, entry))
            out.table_entry.ClearField("action")
            out.data.CopyFrom(_data(info.unit, entry.packets, entry.bytes))
            yield p4runtime_pb2.Entity(direct_counter_entry=out)
