"""TableEntry: match-action table entries and default actions.

Match fields follow the P4Runtime rules: exact fields are required; for lpm, ternary, range
and optional fields an omitted field is the don't-care value, and an explicit don't-care
encoding (prefix length 0, mask 0, the full range) is refused with INVALID_ARGUMENT, as are
values with bits outside their prefix or mask. Priorities: tables with a ternary, range or
optional field need a priority > 0 (the highest wins), other tables need 0.

Entries a program declares (``entries = {...}``) have no P4Runtime priority of their own: the
interpreter ranks them below every runtime entry, earlier first. They are reported with
priority ``INITIAL_BASE - k`` for the k-th of them (1-based, or its ``@priority``), which keeps
their order; a Write naming that priority addresses them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from ..interp.externs import ExternError
from ..interp.matches import Exact, Lpm, Match, Optional, Range, Ternary
from ..interp.tables import Table, TableEntry, TableError
from . import bytestrings
from .entity_common import DELETE, INSERT, MODIFY, decode_action, encode_action, lookup
from .errors import (
    already_exists,
    invalid,
    not_found,
    permission_denied,
    resource_exhausted,
    unimplemented,
)
from .schema import EXACT, LPM, OPTIONAL, RANGE, TERNARY, FieldInfo, TableInfo
from .state import PipelineState

INITIAL_BASE = 1 << 24


# ---------------------------------------------------------------------- match fields
def _prefix_mask(width: int, plen: int) -> int:
    return ((1 << plen) - 1) << (width - plen)


def decode_field(f: FieldInfo, fm: Any, owner: str) -> Match:
    """One FieldMatch of field ``f`` as an interpreter match (validated)."""
    which = fm.WhichOneof("field_match_type")
    w = f.bitwidth
    full = (1 << w) - 1
    what = f"{owner}: match field {f.name}"
    if f.match_type == EXACT and which == "exact":
        return Exact(bytestrings.decode(fm.exact.value, w, what))
    if f.match_type == LPM and which == "lpm":
        v = bytestrings.decode(fm.lpm.value, w, what)
        plen = fm.lpm.prefix_len
        if plen == 0:
            raise invalid(f"{what}: prefix length 0 is the don't-care value: omit the field")
        if not 0 < plen <= w:
            raise invalid(f"{what}: prefix length {plen} is not in 1..{w}")
        if v & ~_prefix_mask(w, plen) & full:
            raise invalid(f"{what}: value has bits set beyond the prefix length {plen}")
        return Lpm(v, plen)
    if f.match_type == TERNARY and which == "ternary":
        v = bytestrings.decode(fm.ternary.value, w, what)
        m = bytestrings.decode(fm.ternary.mask, w, what + " mask")
        if m == 0:
            raise invalid(f"{what}: mask 0 is the don't-care value: omit the field")
        if v & ~m:
            raise invalid(f"{what}: value has bits set outside the mask")
        return Ternary(v, m)
    if f.match_type == RANGE and which == "range":
        lo = bytestrings.decode(fm.range.low, w, what + " low")
        hi = bytestrings.decode(fm.range.high, w, what + " high")
        if lo > hi:
            raise invalid(f"{what}: range low {lo} is above high {hi}")
        if lo == 0 and hi == full:
            raise invalid(f"{what}: the full range is the don't-care value: omit the field")
        return Range(lo, hi)
    if f.match_type == OPTIONAL and which == "optional":
        return Optional(bytestrings.decode(fm.optional.value, w, what))
    if which is None:
        raise invalid(f"{what}: no match value")
    raise invalid(f"{what}: a {which} match given for a field of another kind")


def dont_care(f: FieldInfo) -> Match:
    if f.match_type == LPM:
        return Lpm(0, 0)
    if f.match_type == TERNARY:
        return Ternary(0, 0)
    if f.match_type == RANGE:
        return Range(0, (1 << f.bitwidth) - 1)
    return Optional(None)


def decode_matches(t: TableInfo, field_matches: Any, partial: bool) -> dict[int, Match]:
    """Key index -> match for the given fields; with ``partial`` False all keys are filled."""
    out: dict[int, Match] = {}
    owner = f"table {t.name}"
    for fm in field_matches:
        f = t.fields_by_id.get(fm.field_id)
        if f is None:
            raise invalid(f"{owner}: no match field with id {fm.field_id}")
        if f.index in out:
            raise invalid(f"{owner}: match field {f.name} given twice")
        out[f.index] = decode_field(f, fm, owner)
    if not partial:
        for f in t.fields:
            if f.index not in out:
                if f.match_type == EXACT:
                    raise invalid(f"{owner}: exact match field {f.name} is missing")
                out[f.index] = dont_care(f)
    return out


def encode_field(f: FieldInfo, m: Match) -> Any | None:
    """The FieldMatch of a stored match; None for a don't-care value (omitted)."""
    fm = p4runtime_pb2.FieldMatch(field_id=f.id)
    if isinstance(m, Exact):
        fm.exact.value = bytestrings.encode(m.value)
    elif isinstance(m, Lpm):
        if m.prefix_len == 0:
            return None
        fm.lpm.value = bytestrings.encode(m.value)
        fm.lpm.prefix_len = m.prefix_len
    elif isinstance(m, Ternary):
        if m.mask == 0:
            return None
        fm.ternary.value = bytestrings.encode(m.value)
        fm.ternary.mask = bytestrings.encode(m.mask)
    elif isinstance(m, Range):
        if m.low == 0 and m.high == (1 << f.bitwidth) - 1:
            return None
        fm.range.low = bytestrings.encode(m.low)
        fm.range.high = bytestrings.encode(m.high)
    elif isinstance(m, Optional):
        if m.value is None:
            return None
        fm.optional.value = bytestrings.encode(m.value)
    return fm


# ---------------------------------------------------------------------- priorities
def reported_priority(t: TableInfo, internal: int) -> int:
    if not t.needs_priority:
        return 0
    return internal if internal > 0 else INITIAL_BASE + internal


def check_priority(t: TableInfo, priority: int) -> None:
    if t.needs_priority:
        if priority <= 0:
            raise invalid(f"table {t.name}: entries need a priority > 0 (got {priority})")
    elif priority != 0:
        raise invalid(f"table {t.name}: entries of this table take no priority (got {priority})")


def find(
    table: Table, t: TableInfo, matches: tuple[Match, ...], priority: int
) -> TableEntry | None:
    if not t.needs_priority:
        return table.find(matches, 0)
    e = table.find(matches, priority)
    if e is None and 0 < priority < INITIAL_BASE:
        e = table.find(matches, priority - INITIAL_BASE)
        if e is not None and e.priority > 0:
            e = None
    return e


# ---------------------------------------------------------------------- resolving
def table_of(state: PipelineState, table_id: int) -> tuple[TableInfo, Table]:
    t = lookup(state.schema.tables, table_id, "table")
    return t, state.pipeline.tables[t.name]


def locate(state: PipelineState, te: Any) -> tuple[TableInfo, Table, TableEntry]:
    """The stored entry a TableEntry message names (match and priority); NOT_FOUND if none."""
    t, table = table_of(state, te.table_id)
    if te.is_default_action:
        raise unimplemented(f"table {t.name}: direct resources of the default entry")
    matches = decode_matches(t, te.match, partial=False)
    check_priority(t, te.priority)
    key = tuple(matches[i] for i in range(len(t.fields)))
    entry = find(table, t, key, te.priority)
    if entry is None:
        raise not_found(f"table {t.name}: no entry with this match and priority")
    return t, table, entry


def select(state: PipelineState, te: Any) -> Iterator[tuple[TableInfo, Table, TableEntry]]:
    """The entries a (possibly wildcard) TableEntry read names, in table order."""
    if te.is_default_action:
        raise unimplemented("direct resources of the default entry")
    if te.table_id == 0:
        if te.match or te.priority:
            raise invalid("a read of all tables (table id 0) takes no match or priority")
        tables = list(state.schema.tables.values())
        filters: dict[int, Match] = {}
    else:
        t, _ = table_of(state, te.table_id)
        tables = [t]
        filters = decode_matches(t, te.match, partial=True)
    for t in tables:
        table = state.pipeline.tables[t.name]
        for e in table.entries:
            if te.priority and reported_priority(t, e.priority) != te.priority:
                continue
            if any(e.matches[i] != m for i, m in filters.items()):
                continue
            yield t, table, e


# ---------------------------------------------------------------------- write
def _table_action(
    state: PipelineState, t: TableInfo, table: Table, te: Any
) -> tuple[str, list[int], int | None, int | None]:
    """(action, args, member, group) of an entry's TableAction."""
    which = te.action.WhichOneof("type")
    owner = f"table {t.name}"
    if which is None:
        raise invalid(f"{owner}: the entry has no action")
    if which == "action_profile_action_set":
        raise unimplemented(f"{owner}: one-shot action profile programming is not supported")
    profile = table.profile
    if which == "action":
        if t.implementation_id:
            raise invalid(f"{owner}: the table has an action profile; give a member or group")
        info, args = decode_action(state.schema, te.action.action, t.actions, owner)
        return info.name, args, None, None
    if not t.implementation_id or profile is None:
        raise invalid(f"{owner}: the table has no action profile; give a direct action")
    if which == "action_profile_member_id":
        mid = te.action.action_profile_member_id
        if mid not in profile.members:
            raise not_found(f"{owner}: action profile {profile.name} has no member {mid}")
        return "", [], mid, None
    gid = te.action.action_profile_group_id
    if profile.selector_algo is None:
        raise invalid(f"{owner}: action profile {profile.name} has no selector; groups need one")
    if gid not in profile.groups:
        raise not_found(f"{owner}: action profile {profile.name} has no group {gid}")
    return "", [], None, gid


def _set_resources(state: PipelineState, t: TableInfo, entry: TableEntry, te: Any) -> None:
    from .entity_meters import decode_config

    if te.HasField("counter_data"):
        if not t.direct_counter_id:
            raise invalid(f"table {t.name} has no direct counter; counter_data given")
        entry.packets = te.counter_data.packet_count
        entry.bytes = te.counter_data.byte_count
    if te.HasField("meter_config"):
        if not t.direct_meter_id or entry.meter is None:
            raise invalid(f"table {t.name} has no direct meter; meter_config given")
        rates = decode_config(te.meter_config, f"table {t.name}")
        entry.meter.array[0].set_rates(rates)


def _check_resources(t: TableInfo, te: Any) -> None:
    """Validate counter_data/meter_config before anything changes."""
    from .entity_meters import decode_config

    if te.HasField("counter_data"):
        if not t.direct_counter_id:
            raise invalid(f"table {t.name} has no direct counter; counter_data given")
        if te.counter_data.packet_count < 0 or te.counter_data.byte_count < 0:
            raise invalid(f"table {t.name}: counter values cannot be negative")
    if te.HasField("meter_config"):
        if not t.direct_meter_id:
            raise invalid(f"table {t.name} has no direct meter; meter_config given")
        decode_config(te.meter_config, f"table {t.name}")
    if te.idle_timeout_ns:
        if not t.idle_timeout:
            raise invalid(f"table {t.name} does not support idle timeouts")
        raise unimplemented("idle timeouts are not supported")


def write(state: PipelineState, update_type: int, te: Any) -> None:
    t, table = table_of(state, te.table_id)
    if te.is_default_action:
        _write_default(state, update_type, t, table, te)
        return
    if t.is_const_table or table.has_const_entries:
        raise permission_denied(f"table {t.name} has const entries and cannot be changed")
    matches = decode_matches(t, te.match, partial=False)
    key = tuple(matches[i] for i in range(len(t.fields)))
    check_priority(t, te.priority)
    existing = find(table, t, key, te.priority)
    try:
        if update_type == INSERT:
            if existing is not None:
                raise already_exists(f"table {t.name}: an entry with this match already exists")
            if len(table.entries) >= table.size:
                raise resource_exhausted(f"table {t.name} is full ({table.size} entries)")
            action, args, member, group = _table_action(state, t, table, te)
            _check_resources(t, te)
            entry = table.add_entry(
                list(key), action, args, te.priority, member=member, group=group
            )
            _set_resources(state, t, entry, te)
            _set_metadata(state, entry, te)
        elif update_type == MODIFY:
            if existing is None:
                raise not_found(f"table {t.name}: no entry with this match and priority")
            if existing.is_const:
                raise permission_denied(f"table {t.name}: const entries cannot be modified")
            action, args, member, group = _table_action(state, t, table, te)
            _check_resources(t, te)
            table.modify_entry(list(key), existing.priority, action, args, member, group)
            _set_resources(state, t, existing, te)
            _set_metadata(state, existing, te)
        elif update_type == DELETE:
            if existing is None:
                raise not_found(f"table {t.name}: no entry with this match and priority")
            if existing.is_const:
                raise permission_denied(f"table {t.name}: const entries cannot be deleted")
            table.delete_entry(list(key), existing.priority)
            state.entry_metadata.pop(existing, None)
        else:
            raise invalid("update type UNSPECIFIED")
    except (TableError, ExternError) as exc:
        raise invalid(str(exc)) from None


def _set_metadata(state: PipelineState, entry: TableEntry, te: Any) -> None:
    if te.metadata or te.controller_metadata:
        state.entry_metadata[entry] = (bytes(te.metadata), te.controller_metadata)
    else:
        state.entry_metadata.pop(entry, None)


def _write_default(
    state: PipelineState, update_type: int, t: TableInfo, table: Table, te: Any
) -> None:
    owner = f"table {t.name}"
    if update_type != MODIFY:
        raise invalid(f"{owner}: the default entry can only be modified (INSERT/DELETE given)")
    if te.match or te.priority:
        raise invalid(f"{owner}: the default entry takes no match and no priority")
    if t.const_default_action_id or table.const_default:
        raise permission_denied(f"{owner}: the default action is const")
    if te.HasField("counter_data") or te.HasField("meter_config"):
        raise unimplemented(f"{owner}: direct resources of the default entry")
    which = te.action.WhichOneof("type")
    try:
        if which is None:
            table.reset_default()
        elif which == "action":
            info, args = decode_action(state.schema, te.action.action, t.actions, owner, True)
            table.set_default(info.name, args)
        else:
            raise unimplemented(f"{owner}: only a direct action can be the default action")
    except TableError as exc:
        raise invalid(str(exc)) from None


# ---------------------------------------------------------------------- read
def encode_entry(
    state: PipelineState,
    t: TableInfo,
    entry: TableEntry,
    counters: bool = False,
    meters: bool = False,
) -> Any:
    te = p4runtime_pb2.TableEntry(table_id=t.id)
    for f in t.fields:
        fm = encode_field(f, entry.matches[f.index])
        if fm is not None:
            te.match.append(fm)
    if entry.member is not None:
        te.action.action_profile_member_id = entry.member
    elif entry.group is not None:
        te.action.action_profile_group_id = entry.group
    else:
        encode_action(state.schema, entry.action, entry.args, te.action.action)
    te.priority = reported_priority(t, entry.priority)
    te.is_const = entry.is_const
    md = state.entry_metadata.get(entry)
    if md is not None:
        te.metadata, te.controller_metadata = md
    if counters and t.direct_counter_id:
        te.counter_data.packet_count = entry.packets
        te.counter_data.byte_count = entry.bytes
    if meters and t.direct_meter_id and entry.meter is not None:
        from .entity_meters import encode_config

        config = encode_config(entry.meter.array[0].get_rates())
        if config is not None:
            te.meter_config.CopyFrom(config)
    return te


def encode_default(state: PipelineState, t: TableInfo, table: Table) -> Any:
    te = p4runtime_pb2.TableEntry(table_id=t.id, is_default_action=True)
    d = table.default_entry
    encode_action(state.schema, d.action, d.args, te.action.action)
    return te


def read(state: PipelineState, te: Any) -> Iterator[Any]:
    if te.is_default_action:
        t, table = table_of(state, te.table_id)
        if te.match or te.priority:
            raise invalid(f"table {t.name}: a default entry read takes no match or priority")
        yield p4runtime_pb2.Entity(table_entry=encode_default(state, t, table))
        return
    counters = te.HasField("counter_data")
    meters = te.HasField("meter_config")
    for t, _, e in list(select(state, te)):
        yield p4runtime_pb2.Entity(table_entry=encode_entry(state, t, e, counters, meters))


__all__ = ["read", "write", "locate", "select", "encode_entry"]
