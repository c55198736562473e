"""The switch's index of a P4Info message, checked against a pipeline.

P4Runtime messages name everything by P4Info id; the interpreter names everything by the
control-plane names P4Info uses (docs/interpreter.md). ``Schema`` maps one to the other
(``p4reduce.p4info_index``, the index the controller reads P4Info through too) and
``Schema.check_pipeline`` verifies that a pushed P4Info describes the pushed program (every
object exists, with the same match fields, parameters, widths and sizes).
"""

from __future__ import annotations

from typing import Any

from p4reduce.p4info_index import (
    COUNTER_UNIT,
    EXACT,
    KIND_OF,
    LPM,
    METER_UNIT,
    OPTIONAL,
    RANGE,
    SCOPE,
    TERNARY,
    ActionInfo,
    ControllerHeader,
    CounterInfo,
    DigestInfo,
    FieldInfo,
    MatchType,
    MeterInfo,
    P4InfoError,
    P4InfoIndex,
    ParamInfo,
    ProfileInfo,
    RegisterInfo,
    TableInfo,
    ValueSetInfo,
)
from p4reduce.proto import p4info_pb2

from .errors import invalid

__all__ = [
    "ActionInfo",
    "COUNTER_UNIT",
    "ControllerHeader",
    "CounterInfo",
    "DigestInfo",
    "EXACT",
    "FieldInfo",
    "KIND_OF",
    "LPM",
    "METER_UNIT",
    "MatchType",
    "MeterInfo",
    "OPTIONAL",
    "P4InfoError",
    "P4InfoIndex",
    "ParamInfo",
    "ProfileInfo",
    "RANGE",
    "RegisterInfo",
    "SCOPE",
    "Schema",
    "TERNARY",
    "TableInfo",
    "ValueSetInfo",
]


class Schema(P4InfoIndex):
    """The P4Info index with the switch's errors (INVALID_ARGUMENT) and its checks against
    the program a pipeline loads."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        try:
            super().__init__(p4info)
        except P4InfoError as err:
            raise invalid(str(err)) from None

    # ------------------------------------------------------------------ checks against a pipeline
    def check_pipeline(self, pipeline: Any) -> None:
        """INVALID_ARGUMENT unless every P4Info object exists in ``pipeline`` with its shape."""
        for t in self.tables.values():
            table = pipeline.tables.get(t.name)
            if table is None:
                raise invalid(f"P4Info table {t.name} is not in the device config's program")
            if len(table.keys) != len(t.fields):
                raise invalid(
                    f"table {t.name}: P4Info has {len(t.fields)} match fields, "
                    f"the program {len(table.keys)}"
                )
            for f, k in zip(t.fields, table.keys, strict=True):
                if f.bitwidth != k.width or KIND_OF[f.match_type] != k.match_kind:
                    raise invalid(
                        f"table {t.name}: match field {f.name} is {KIND_OF[f.match_type]} "
                        f"bit<{f.bitwidth}> in P4Info but {k.match_kind} bit<{k.width}> "
                        "in the program"
                    )
            for aid in t.actions:
                a = self.actions[aid]
                spec = table.actions.get(a.name)
                if spec is None:
                    raise invalid(f"table {t.name}: action {a.name} is not an action of the table")
                widths = [w for _, w in spec.params]
                if widths != [p.bitwidth for p in a.params]:
                    raise invalid(f"action {a.name}: parameters differ from the program's")
            if t.implementation_id:
                prof = self.profiles[t.implementation_id]
                if table.profile is None or table.profile.name != prof.name:
                    raise invalid(f"table {t.name}: implementation differs from the program's")
        checks: list[tuple[dict[int, Any], dict[str, Any], str]] = [
            (self.profiles, pipeline.profiles, "action profile"),
            (self.counters, pipeline.counters, "counter"),
            (self.direct_counters, pipeline.direct_counters, "direct counter"),
            (self.meters, pipeline.meters, "meter"),
            (self.direct_meters, pipeline.direct_meters, "direct meter"),
            (self.registers, pipeline.registers, "register"),
            (self.value_sets, pipeline.value_sets, "value set"),
        ]
        for infos, objs, what in checks:
            for info in infos.values():
                if info.name not in objs:
                    raise invalid(
                        f"P4Info {what} {info.name} is not in the device config's program"
                    )
        for c in self.counters.values():
            if pipeline.counters[c.name].size != c.size:
                raise invalid(f"counter {c.name}: size differs from the program's")
        for m in self.meters.values():
            if pipeline.meters[m.name].size != m.size:
                raise invalid(f"meter {m.name}: size differs from the program's")
        for r in self.registers.values():
            reg = pipeline.registers[r.name]
            if reg.size != r.size:
                raise invalid(f"register {r.name}: size differs from the program's")
        for dc in self.direct_counters.values():
            if pipeline.direct_counters[dc.name].name != self._table_name(dc.table_id):
                raise invalid(f"direct counter {dc.name}: attached to another table")
        for dm in self.direct_meters.values():
            if pipeline.direct_meters[dm.name].name != self._table_name(dm.table_id):
                raise invalid(f"direct meter {dm.name}: attached to another table")
        for hdr in (self.packet_in, self.packet_out):
            # packet I/O packs the P4Info metadata widths: they must add up to the header the
            # program emits or extracts, or every packet would be cut in the wrong place
            width = getattr(pipeline, "controller_headers", {}).get(hdr.name) if hdr else None
            if hdr is not None and width is not None and width != hdr.bits:
                raise invalid(
                    f"controller header {hdr.name}: the P4Info metadata total {hdr.bits} bits, "
                    f"the program's header {width} bits (P4Runtime translation of its fields "
                    "or @hidden fields are not supported by this switch)"
                )

    def _table_name(self, table_id: int) -> str:
        t = self.tables.get(table_id)
        return t.name if t is not None else f"<table {table_id}>"
