"""Write and Read dispatch: one codec module per entity kind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from . import (
    entity_counters,
    entity_digests,
    entity_meters,
    entity_pre,
    entity_profiles,
    entity_registers,
    entity_tables,
    entity_value_sets,
)
from .entity_common import UPDATE_NAMES
from .errors import invalid, unimplemented
from .state import PipelineState

Writer = Callable[[PipelineState, int, Any], None]
Reader = Callable[[PipelineState, Any], Iterator[Any]]

WRITERS: dict[str, Writer] = {
    "table_entry": entity_tables.write,
    "action_profile_member": entity_profiles.write_member,
    "action_profile_group": entity_profiles.write_group,
    "meter_entry": entity_meters.write,
    "direct_meter_entry": entity_meters.write_direct,
    "counter_entry": entity_counters.write,
    "direct_counter_entry": entity_counters.write_direct,
    "packet_replication_engine_entry": entity_pre.write,
    "value_set_entry": entity_value_sets.write,
    "register_entry": entity_registers.write,
    "digest_entry": entity_digests.write,
}

READERS: dict[str, Reader] = {
    "table_entry": entity_tables.read,
    "action_profile_member": entity_profiles.read_member,
    "action_profile_group": entity_profiles.read_group,
    "meter_entry": entity_meters.read,
    "direct_meter_entry": entity_meters.read_direct,
    "counter_entry": entity_counters.read,
    "direct_counter_entry": entity_counters.read_direct,
    "packet_replication_engine_entry": entity_pre.read,
    "value_set_entry": entity_value_sets.read,
    "register_entry": entity_registers.read,
    "digest_entry": entity_digests.read,
}


def _kind(entity: Any) -> str:
    which = entity.WhichOneof("entity")
    if which is None:
        raise invalid("empty entity")
    if which == "extern_entry":
        raise unimplemented("extern entries are not supported (v1model has no such externs)")
    return which


def write(state: PipelineState, update: Any) -> None:
    """Apply one p4.v1.Update (raises P4RTError)."""
    if update.type not in UPDATE_NAMES:
        raise invalid("update type UNSPECIFIED")
    kind = _kind(update.entity)
    WRITERS[kind](state, update.type, getattr(update.entity, kind))


def read(state: PipelineState, entity: Any) -> list[Any]:
    """The entities a (possibly wildcard) read entity names (raises P4RTError)."""
    kind = _kind(entity)
    return list(READERS[kind](state, getattr(entity, kind)))
