"""Storage layout: every P4 value the program keeps lives in one flat list of slots.

Each scalar (bit/int field, bool, error, enum, varbit, a header's validity) gets a slot; a
struct, header, union, stack or tuple is a tree of slots. The generated code reads and
writes ``S[slot]`` directly, so a packet's whole state is one Python list that is copied
fresh from ``Storage.init`` on arrival. Locals get slots too: like p4c's BMv2 back end, they
are zeroed once per packet, not each time their declaration runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..frontend import types as T


class Layout:
    """A value's place in storage; ``slots()`` lists its leaves' slots in value order."""

    def slots(self) -> list[int]:
        return []


@dataclass(eq=False)
class Scalar(Layout):
    slot: int
    type: T.Type

    def slots(self) -> list[int]:
        return [self.slot]


@dataclass(eq=False)
class PyLocal(Layout):
    """A scalar held in a Python local variable of the generated function (action arguments)."""

    name: str
    type: T.Type

    def slots(self) -> list[int]:
        raise TypeError("a Python local has no slot")


@dataclass(eq=False)
class HeaderL(Layout):
    type: T.StructT
    valid: int
    # every scalar field in wire order; a struct-typed field `p { a; b; }` is flattened into
    # "p.a", "p.b" (as p4c's FlattenHeaders does), so extract, emit and sizes see bits only
    fields: dict[str, Scalar]
    union: UnionL | None = None  # set when the header is a member of a header union
    # struct-typed fields as views over those scalars (`hdr.h.p` as a value, `hdr.h.p.a`)
    structs: dict[str, StructL] = field(default_factory=dict)

    def slots(self) -> list[int]:
        return [self.valid] + [f.slot for f in self.fields.values()]


@dataclass(eq=False)
class StructL(Layout):
    type: T.StructT
    fields: dict[str, Layout]

    def slots(self) -> list[int]:
        return [s for f in self.fields.values() for s in f.slots()]


@dataclass(eq=False)
class UnionL(Layout):
    type: T.StructT
    members: dict[str, HeaderL]

    def slots(self) -> list[int]:
        return [s for m in self.members.values() for s in m.slots()]


@dataclass(eq=False)
class StackL(Layout):
    type: T.StackT
    elems: list[Layout]  # HeaderL or UnionL
    next_index: int  # slot of the stack's nextIndex
    # where out-of-range run-time indexes go (p4c rewrites hs[i] into a chain of ifs whose
    # fallback is a temporary: reads see an invalid header, writes are lost)
    scratch: Layout | None = None

    def slots(self) -> list[int]:
        return [s for e in self.elems for s in e.slots()] + [self.next_index]


@dataclass(eq=False)
class TupleL(Layout):
    elems: list[Layout]

    def slots(self) -> list[int]:
        return [s for e in self.elems for s in e.slots()]


def zero_of(t: T.Type) -> Any:
    """The value a slot of type ``t`` holds on arrival (BMv2 zeroes everything)."""
    b = T.strip_newtype(t)
    if b is T.BOOL:
        return False
    if isinstance(b, T.Varbit):
        return (0, 0)  # (current width in bits, value)
    return 0


@dataclass
class Storage:
    """Allocates slots; remembers each slot's initial value and whether it is metadata."""

    init: list[Any] = field(default_factory=list)
    header_slots: set[int] = field(default_factory=set)
    names: list[str] = field(default_factory=list)  # for traces and debugging
    owner: dict[int, HeaderL] = field(default_factory=dict)  # field slot -> its header
    signed: set[int] = field(default_factory=set)  # slots of int<W> values (the native engine)
    # bit<W>/int<W> slots: W; varbit slots: the maximum width (the native engine's storage)
    widths: dict[int, int] = field(default_factory=dict)

    def new_slot(self, value: Any, name: str, in_header: bool) -> int:
        self.init.append(value)
        self.names.append(name)
        slot = len(self.init) - 1
        if in_header:
            self.header_slots.add(slot)
        return slot

    def alloc(self, t: T.Type, name: str, in_header: bool = False) -> Layout:
        b = T.strip_newtype(t)
        if isinstance(b, T.StructT) and b.kind == "header":
            valid = self.new_slot(False, f"{name}.$valid$", True)
            fields: dict[str, Scalar] = {}
            structs: dict[str, StructL] = {}
            for f, ft in b.fields.items():
                fb = T.strip_newtype(ft)
                if isinstance(fb, T.StructT) and fb.kind == "struct":
                    structs[f] = self.header_struct(fb, f, name, fields)
                else:
                    fields[f] = self.scalar(ft, f"{name}.{f}", True)
            header = HeaderL(b, valid, fields, structs=structs)
            for f in fields.values():
                self.owner[f.slot] = header
            return header
        if isinstance(b, T.StructT) and b.kind == "header_union":
            union = UnionL(b, {})
            for f, ft in b.fields.items():
                member = self.alloc(ft, f"{name}.{f}", True)
                assert isinstance(member, HeaderL)
                member.union = union
                union.members[f] = member
            return union
        if isinstance(b, T.StructT):
            return StructL(
                b, {f: self.alloc(ft, f"{name}.{f}", in_header) for f, ft in b.fields.items()}
            )
        if isinstance(b, T.StackT):
            elems = [self.alloc(b.elem, f"{name}[{i}]", True) for i in range(b.size)]
            return StackL(b, elems, self.new_slot(0, f"{name}.nextIndex", True))
        if isinstance(b, T.TupleT):
            return TupleL([self.alloc(e, f"{name}[{i}]", in_header) for i, e in enumerate(b.elems)])
        return self.scalar(t, name, in_header)

    def header_struct(
        self, t: T.StructT, path: str, header: str, fields: dict[str, Scalar]
    ) -> StructL:
        """A struct-typed header field: its scalars go into ``fields`` as "path.sub" (in
        order, so the header's wire layout is unchanged) and the StructL returned views them."""
        subs: dict[str, Layout] = {}
        for f, ft in t.fields.items():
            fb = T.strip_newtype(ft)
            if isinstance(fb, T.StructT) and fb.kind == "struct":
                subs[f] = self.header_struct(fb, f"{path}.{f}", header, fields)
            else:
                leaf = self.scalar(ft, f"{header}.{path}.{f}", True)
                fields[f"{path}.{f}"] = leaf
                subs[f] = leaf
        return StructL(t, subs)

    def scalar(self, t: T.Type, name: str, in_header: bool) -> Scalar:
        slot = self.new_slot(zero_of(t), name, in_header)
        b = T.strip_newtype(t)
        if isinstance(b, T.EnumT) and b.underlying is not None:
            b = b.underlying
        if isinstance(b, T.Bits) and b.signed:
            self.signed.add(slot)
        if isinstance(b, (T.Bits, T.Varbit)):
            self.widths[slot] = b.width
        return Scalar(slot, t)

    def metadata_slots(self) -> list[int]:
        return [i for i in range(len(self.init)) if i not in self.header_slots]


def leaf_types(t: T.Type) -> list[T.Type]:
    """The types of a value's leaves, in the order ``Layout.slots`` lists them."""
    b = T.strip_newtype(t)
    if isinstance(b, T.StructT) and b.kind == "header":
        return [T.BOOL] + [x for ft in b.fields.values() for x in leaf_types(ft)]
    if isinstance(b, T.StructT):
        return [x for ft in b.fields.values() for x in leaf_types(ft)]
    if isinstance(b, T.StackT):
        return [x for _ in range(b.size) for x in leaf_types(b.elem)] + [T.Bits(32)]
    if isinstance(b, T.TupleT):
        return [x for e in b.elems for x in leaf_types(e)]
    return [t]


def is_aggregate(t: T.Type) -> bool:
    return isinstance(T.strip_newtype(t), (T.StructT, T.StackT, T.TupleT))
