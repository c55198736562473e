"""An index of a P4Info message: ids to names and shapes (the P4Runtime specification's
P4Info; docs/p4runtime.md). The one index the switch's P4Runtime server
(``switch/p4runtime/schema.py``, which adds the checks against a loaded program and turns
``P4InfoError`` into INVALID_ARGUMENT) and the controller (``controller/p4info.py``, which
adds lookups by name and alias and entry builders) both read P4Info through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4reduce.proto import p4info_pb2


class P4InfoError(ValueError):
    """A P4Info that breaks its rules (an id used twice or 0, a missing name, an unknown
    match kind or reference): one line."""


MatchType = p4info_pb2.MatchField.MatchType
EXACT, LPM, TERNARY, RANGE, OPTIONAL = (
    MatchType.EXACT,
    MatchType.LPM,
    MatchType.TERNARY,
    MatchType.RANGE,
    MatchType.OPTIONAL,
)
KIND_OF = {EXACT: "exact", LPM: "lpm", TERNARY: "ternary", RANGE: "range", OPTIONAL: "optional"}
SCOPE = p4info_pb2.ActionRef.Scope
COUNTER_UNIT = p4info_pb2.CounterSpec.Unit
METER_UNIT = p4info_pb2.MeterSpec.Unit


@dataclass
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int
    index: int  # position among the table's keys (= Table.keys index)


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int
    index: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: list[ParamInfo]
    params_by_id: dict[int, ParamInfo]


@dataclass
class TableInfo:
    id: int
    name: str
    fields: list[FieldInfo]
    fields_by_id: dict[int, FieldInfo]
    actions: dict[int, int]  # action id -> ActionRef scope
    const_default_action_id: int
    implementation_id: int
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    is_const_table: bool = False
    size: int = 0
    idle_timeout: bool = False

    @property
    def needs_priority(self) -> bool:
        return any(f.match_type in (TERNARY, RANGE, OPTIONAL) for f in self.fields)


@dataclass
class ProfileInfo:
    id: int
    name: str
    table_ids: list[int]
    with_selector: bool
    size: int
    max_group_size: int


@dataclass
class CounterInfo:
    id: int
    name: str
    unit: int
    size: int = 0  # indexed counters
    table_id: int = 0  # direct counters


@dataclass
class MeterInfo:
    id: int
    name: str
    unit: int
    size: int = 0
    table_id: int = 0


@dataclass
class RegisterInfo:
    id: int
    name: str
    size: int
    type_spec: Any  # p4types P4DataTypeSpec


@dataclass
class ValueSetInfo:
    id: int
    name: str
    size: int
    fields: list[FieldInfo]
    fields_by_id: dict[int, FieldInfo]


@dataclass
class DigestInfo:
    id: int
    name: str
    type_spec: Any


@dataclass
class ControllerHeader:
    id: int
    name: str
    fields: list[tuple[int, str, int]]  # (id, name, bitwidth) in P4Info order
    by_id: dict[int, tuple[int, str, int]] = field(default_factory=dict)

    @property
    def bits(self) -> int:
        return sum(w for _, _, w in self.fields)

    @property
    def nbytes(self) -> int:
        return (self.bits + 7) // 8


class P4InfoIndex:
    """The objects of one P4Info by id (and the most used by name), checked as they are read:
    ids unique and non-zero, names present, match kinds known, references resolved. Raises
    P4InfoError (one line) for a P4Info that breaks these rules."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.tables: dict[int, TableInfo] = {}
        self.actions: dict[int, ActionInfo] = {}
        self.profiles: dict[int, ProfileInfo] = {}
        self.counters: dict[int, CounterInfo] = {}
        self.direct_counters: dict[int, CounterInfo] = {}
        self.meters: dict[int, MeterInfo] = {}
        self.direct_meters: dict[int, MeterInfo] = {}
        self.registers: dict[int, RegisterInfo] = {}
        self.value_sets: dict[int, ValueSetInfo] = {}
        self.digests: dict[int, DigestInfo] = {}
        self.packet_in: ControllerHeader | None = None
        self.packet_out: ControllerHeader | None = None
        self.type_info = p4info.type_info
        self._ids: set[int] = set()
        self.aliases: dict[int, str] = {}  # id -> the preamble's alias (short name), if any
        self._build(p4info)
        self.action_by_name = {a.name: a for a in self.actions.values()}
        self.table_by_name = {t.name: t for t in self.tables.values()}
        self.digest_by_name = {d.name: d for d in self.digests.values()}
        self.profile_by_name = {p.name: p for p in self.profiles.values()}

    # ------------------------------------------------------------------ building
    def _claim(self, preamble: Any, what: str) -> tuple[int, str]:
        pid, name = preamble.id, preamble.name
        if pid == 0:
            raise P4InfoError(f"P4Info: {what} {name!r} has id 0")
        if pid in self._ids:
            raise P4InfoError(f"P4Info: id {pid} is used twice ({what} {name!r})")
        if not name:
            raise P4InfoError(f"P4Info: {what} {pid} has no name")
        self._ids.add(pid)
        if preamble.alias:
            self.aliases[pid] = preamble.alias
        return pid, name

    @staticmethod
    def _fields(match_fields: Any, owner: str) -> tuple[list[FieldInfo], dict[int, FieldInfo]]:
        fields, by_id = [], {}
        for i, mf in enumerate(match_fields):
            if mf.id in by_id:
                raise P4InfoError(f"P4Info: {owner}: match field id {mf.id} is used twice")
            mt = mf.match_type
            if mf.HasField("other_match_type") or mt not in KIND_OF:
                raise P4InfoError(
                    f"P4Info: {owner}: match field {mf.name!r} has an unsupported kind"
                )
            fi = FieldInfo(mf.id, mf.name, mf.bitwidth, mt, i)
            fields.append(fi)
            by_id[mf.id] = fi
        return fields, by_id

    def _build(self, p4info: p4info_pb2.P4Info) -> None:
        for a in p4info.actions:
            pid, name = self._claim(a.preamble, "action")
            params = [ParamInfo(p.id, p.name, p.bitwidth, i) for i, p in enumerate(a.params)]
            by_id = {p.id: p for p in params}
            if len(by_id) != len(params):
                raise P4InfoError(f"P4Info: action {name}: a parameter id is used twice")
            self.actions[pid] = ActionInfo(pid, name, params, by_id)
        for t in p4info.tables:
            pid, name = self._claim(t.preamble, "table")
            fields, by_id = self._fields(t.match_fields, f"table {name}")
            refs = {r.id: r.scope for r in t.action_refs}
            for aid in refs:
                if aid not in self.actions:
                    raise P4InfoError(f"P4Info: table {name} refers to unknown action id {aid}")
            self.tables[pid] = TableInfo(
                pid,
                name,
                fields,
                by_id,
                refs,
                t.const_default_action_id,
                t.implementation_id,
                is_const_table=t.is_const_table,
                size=t.size,
                idle_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL,
            )
        for p in p4info.action_profiles:
            pid, name = self._claim(p.preamble, "action profile")
            self.profiles[pid] = ProfileInfo(
                pid, name, list(p.table_ids), p.with_selector, p.size, p.max_group_size
            )
        for c in p4info.counters:
            pid, name = self._claim(c.preamble, "counter")
            self.counters[pid] = CounterInfo(pid, name, c.spec.unit, size=c.size)
        for c in p4info.direct_counters:
            pid, name = self._claim(c.preamble, "direct counter")
            self.direct_counters[pid] = CounterInfo(
                pid, name, c.spec.unit, table_id=c.direct_table_id
            )
        for m in p4info.meters:
            pid, name = self._claim(m.preamble, "meter")
            self.meters[pid] = MeterInfo(pid, name, m.spec.unit, size=m.size)
        for m in p4info.direct_meters:
            pid, name = self._claim(m.preamble, "direct meter")
            self.direct_meters[pid] = MeterInfo(pid, name, m.spec.unit, table_id=m.direct_table_id)
        for r in p4info.registers:
            pid, name = self._claim(r.preamble, "register")
            self.registers[pid] = RegisterInfo(pid, name, r.size, r.type_spec)
        for v in p4info.value_sets:
            pid, name = self._claim(v.preamble, "value set")
            fields, by_id = self._fields(v.match, f"value set {name}")
            self.value_sets[pid] = ValueSetInfo(pid, name, v.size, fields, by_id)
        for d in p4info.digests:
            pid, name = self._claim(d.preamble, "digest")
            self.digests[pid] = DigestInfo(pid, name, d.type_spec)
        for h in p4info.controller_packet_metadata:
            pid, name = self._claim(h.preamble, "controller header")
            fields = [(m.id, m.name, m.bitwidth) for m in h.metadata]
            hdr = ControllerHeader(pid, name, fields, {f[0]: f for f in fields})
            if name == "packet_in":
                self.packet_in = hdr
            elif name == "packet_out":
                self.packet_out = hdr
        for t_msg in p4info.tables:
            t = self.tables[t_msg.preamble.id]
            for rid in t_msg.direct_resource_ids:
                if rid in self.direct_counters:
                    t.direct_counter_id = rid
                elif rid in self.direct_meters:
                    t.direct_meter_id = rid
            if t.implementation_id and t.implementation_id not in self.profiles:
                raise P4InfoError(f"P4Info: table {t.name}: unknown implementation id")
