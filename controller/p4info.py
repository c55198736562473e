"""Names to ids from a P4Info, and P4Runtime bytestrings (``p4reduce.bytestrings``, the
switch's codec too): values go out canonical (the shortest big-endian form, one zero byte for
0), which both the embedded switch and simple_switch_grpc accept, and come back decoded from
any width.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4reduce import bytestrings
from p4reduce.p4info_index import P4InfoError, P4InfoIndex
from p4reduce.proto import p4info_pb2, p4runtime_pb2

from .errors import ControllerError, InvalidArgument


def encode(value: int, bitwidth: int, what: str = "value") -> bytes:
    """The canonical bytestring of an unsigned ``value`` that must fit ``bitwidth`` bits
    (``p4reduce.bytestrings``, the switch's codec too)."""
    try:
        return bytestrings.encode_checked(value, bitwidth, what)
    except bytestrings.BytestringError as err:
        raise InvalidArgument(str(err)) from None


decode = bytestrings.value  # a reply's value, any width


@dataclass
class Table:
    name: str
    id: int
    fields: dict[str, tuple[int, int, int]]  # name -> (id, bitwidth, match type)
    size: int


@dataclass
class Action:
    name: str
    id: int
    params: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (id, bitwidth)


@dataclass
class Array:
    """A counter or register array."""

    name: str
    id: int
    size: int
    bitwidth: int = 0


@dataclass
class Decoded:
    """A table entry in names: ``match`` maps field names to values (lpm: (value, prefix))."""

    table: str
    match: dict[str, Any]
    action: str
    params: dict[str, int]


class Schema:
    """Lookups over one P4Info by name: objects are found by full name or by alias. Built on
    ``p4reduce.p4info_index``, the index the switch's P4Runtime server uses."""

    def __init__(self, p4info: Any) -> None:
        self.p4info = p4info
        try:
            index = P4InfoIndex(p4info)  # the switch's index too: the same rules, one reader
        except P4InfoError as err:
            raise ControllerError(str(err)) from None
        self.index = index
        self.tables: dict[str, Table] = {}
        self.tables_by_id: dict[int, Table] = {}
        self.actions: dict[str, Action] = {}
        self.actions_by_id: dict[int, Action] = {}
        self.registers: dict[str, Array] = {}
        self.counters: dict[str, Array] = {}
        alias = index.aliases.get
        for t in index.tables.values():
            fields = {f.name: (f.id, f.bitwidth, f.match_type) for f in t.fields}
            tab = Table(t.name, t.id, fields, t.size)
            self._index(self.tables, tab.name, alias(t.id), tab)
            self.tables_by_id[tab.id] = tab
        for a in index.actions.values():
            act = Action(a.name, a.id, {p.name: (p.id, p.bitwidth) for p in a.params})
            self._index(self.actions, act.name, alias(a.id), act)
            self.actions_by_id[act.id] = act
        for r in index.registers.values():
            spec = r.type_spec
            width = spec.bitstring.bit.bitwidth if spec.HasField("bitstring") else 0
            self._index(self.registers, r.name, alias(r.id), Array(r.name, r.id, r.size, width))
        for c in index.counters.values():
            self._index(self.counters, c.name, alias(c.id), Array(c.name, c.id, c.size))

    @staticmethod
    def _index(where: dict[str, Any], name: str, alias: str | None, obj: Any) -> None:
        where[name] = obj
        if alias and alias not in where:
            where[alias] = obj

    @classmethod
    def from_text(cls, text: str) -> Schema:
        from google.protobuf import text_format

        return cls(text_format.Parse(text, p4info_pb2.P4Info()))

    # ------------------------------------------------------------------ lookups
    def _get(self, where: dict[str, Any], name: str, kind: str) -> Any:
        try:
            return where[name]
        except KeyError:
            raise ControllerError(
                f"the switch's pipeline has no {kind} {name} (is it a p4reduce program? run "
                "p4reduce-ctl push)"
            ) from None

    def table(self, name: str) -> Table:
        return self._get(self.tables, name, "table")

    def action(self, name: str) -> Action:
        return self._get(self.actions, name, "action")

    def register(self, name: str) -> Array:
        return self._get(self.registers, name, "register")

    def counter(self, name: str) -> Array:
        return self._get(self.counters, name, "counter")

    def has_register(self, name: str) -> bool:
        return name in self.registers

    # ------------------------------------------------------------------ table entries
    def table_entry(
        self,
        table: str,
        match: dict[str, Any],
        action: str | None = None,
        params: dict[str, int] | None = None,
        priority: int = 0,
    ) -> Any:
        """A TableEntry from names. ``match`` values are ints (exact) or (value, prefix) for lpm."""
        t = self.table(table)
        te = p4runtime_pb2.TableEntry(table_id=t.id, priority=priority)
        for fname, value in match.items():
            fid, width, mtype = t.fields[fname]
            fm = te.match.add(field_id=fid)
            if mtype == p4info_pb2.MatchField.LPM:
                v, plen = value
                fm.lpm.value = encode(v, width, fname)
                fm.lpm.prefix_len = plen
            else:
                fm.exact.value = encode(value, width, fname)
        if action is not None:
            a = self.action(action)
            te.action.action.action_id = a.id
            for pname, value in (params or {}).items():
                pid, width = a.params[pname]
                te.action.action.params.add(param_id=pid, value=encode(value, width, pname))
        return te

    def decode_entry(self, te: Any) -> Decoded:
        t = self.tables_by_id[te.table_id]
        names = {fid: name for name, (fid, _, _) in t.fields.items()}
        match: dict[str, Any] = {}
        for fm in te.match:
            kind = fm.WhichOneof("field_match_type")
            if kind == "lpm":
                match[names[fm.field_id]] = (decode(fm.lpm.value), fm.lpm.prefix_len)
            else:
                match[names[fm.field_id]] = decode(getattr(fm, kind).value)
        action, params = "", {}
        if te.action.HasField("action"):
            a = self.actions_by_id[te.action.action.action_id]
            pnames = {pid: name for name, (pid, _) in a.params.items()}
            action = a.name
            params = {pnames[p.param_id]: decode(p.value) for p in te.action.action.params}
        return Decoded(t.name, match, action, params)

    # ------------------------------------------------------------------ registers, counters
    def register_entry(self, name: str, index: int | None, value: int | None = None) -> Any:
        reg = self.register(name)
        msg = p4runtime_pb2.RegisterEntry(register_id=reg.id)
        if index is not None:
            msg.index.index = index
        if value is not None:
            msg.data.bitstring = encode(value, reg.bitwidth or 64, name)
        return msg

    def counter_entry(self, name: str, index: int | None = None, zero: bool = False) -> Any:
        ctr = self.counter(name)
        msg = p4runtime_pb2.CounterEntry(counter_id=ctr.id)
        if index is not None:
            msg.index.index = index
        if zero:
            msg.data.SetInParent()
        return msg
