"""Semantic types computed by the checker.

Value-like types (bits, bool, tuples, stacks) compare structurally; declared types (headers,
structs, enums, externs, parsers, controls) compare by identity of their declaration.
``typedef`` is transparent; ``type`` makes a distinct NewType.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Type:
    """Base of all semantic types; ``str()`` gives the P4 spelling used in messages."""


@dataclass(frozen=True)
class Bits(Type):
    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class InfInt(Type):
    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class Varbit(Type):
    width: int

    def __str__(self) -> str:
        return f"varbit<{self.width}>"


@dataclass(frozen=True)
class Simple(Type):
    """bool, string, void, error, match_kind, _ (don't care), state."""

    name: str

    def __str__(self) -> str:
        return self.name


BOOL = Simple("bool")
STRING = Simple("string")
VOID = Simple("void")
ERROR = Simple("error")
MATCH_KIND = Simple("match_kind")
DONTCARE = Simple("_")
STATE = Simple("state")
INFINT = InfInt()


@dataclass(eq=False)
class StructT(Type):
    kind: str  # header | header_union | struct
    name: str
    fields: dict[str, Type] = field(default_factory=dict)
    decl: Any = None
    anonymous: bool = False  # the type of a `{a = ..}` initializer

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class EnumT(Type):
    name: str
    members: list[str]
    underlying: Bits | None = None
    values: dict[str, int] = field(default_factory=dict)
    decl: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class StackT(Type):
    elem: Type
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(frozen=True)
class TupleT(Type):
    elems: tuple[Type, ...]
    is_list_expr: bool = False  # the type of a `{a, b}` expression (adapts on assignment)

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(eq=False)
class NewType(Type):
    name: str
    base: Type
    decl: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class TypeVar(Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ExternT(Type):
    name: str
    decl: Any
    args: dict[str, Type] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.args:
            return f"{self.name}<{', '.join(map(str, self.args.values()))}>"
        return self.name


@dataclass(eq=False)
class BlockT(Type):
    """A parser, control or package: its declaration (with body or prototype) and bindings."""

    kind: str  # parser | control | package
    name: str
    decl: Any
    args: dict[str, Type] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class TableT(Type):
    decl: Any
    name: str = ""

    def __str__(self) -> str:
        return f"table {self.name}"


@dataclass(eq=False)
class ApplyResultT(Type):
    table: Any  # the TableDecl

    def __str__(self) -> str:
        return "apply_result"


@dataclass(eq=False)
class ActionRunT(Type):
    table: Any

    def __str__(self) -> str:
        return "action_list"


@dataclass(eq=False)
class CallableT(Type):
    """An action, function or method reference."""

    kind: str
    name: str
    target: Any

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(eq=False)
class ValueSetT(Type):
    elem: Type

    def __str__(self) -> str:
        return f"value_set<{self.elem}>"


def strip_newtype(t: Type) -> Type:
    while isinstance(t, NewType):
        t = t.base
    return t


def is_header(t: Type) -> bool:
    return isinstance(t, StructT) and t.kind == "header"


def width_of(t: Type) -> int | None:
    """Serialized width in bits, for types that have one."""
    t = strip_newtype(t)
    if isinstance(t, Bits):
        return t.width
    if t is BOOL:
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, Varbit):
        return t.width
    if isinstance(t, StructT):
        total = 0
        for ft in t.fields.values():
            w = width_of(ft)
            if w is None:
                return None
            total += w
        return total
    if isinstance(t, StackT):
        w = width_of(t.elem)
        return None if w is None else w * t.size
    return None


def to_json(t: Type | None) -> Any:
    """A compact JSON description for the IR."""
    if t is None:
        return None
    if isinstance(t, Bits):
        return {"kind": "bits", "width": t.width, "signed": t.signed}
    if isinstance(t, InfInt):
        return {"kind": "int"}
    if isinstance(t, Varbit):
        return {"kind": "varbit", "width": t.width}
    if isinstance(t, Simple):
        return {"kind": t.name}
    if isinstance(t, StructT):
        return {"kind": t.kind, "name": t.name}
    if isinstance(t, EnumT):
        return {"kind": "enum", "name": t.name}
    if isinstance(t, StackT):
        return {"kind": "stack", "elem": to_json(t.elem), "size": t.size}
    if isinstance(t, TupleT):
        return {"kind": "tuple", "elems": [to_json(e) for e in t.elems]}
    if isinstance(t, NewType):
        return {"kind": "newtype", "name": t.name, "base": to_json(t.base)}
    if isinstance(t, ExternT):
        return {
            "kind": "extern",
            "name": t.name,
            "args": {k: to_json(v) for k, v in t.args.items()},
        }
    if isinstance(t, BlockT):
        return {"kind": t.kind, "name": t.name}
    if isinstance(t, TableT):
        return {"kind": "table", "name": t.name}
    if isinstance(t, ApplyResultT):
        return {"kind": "apply_result"}
    if isinstance(t, ActionRunT):
        return {"kind": "action_run"}
    if isinstance(t, ValueSetT):
        return {"kind": "value_set", "elem": to_json(t.elem)}
    if isinstance(t, TypeVar):
        return {"kind": "typevar", "name": t.name}
    return {"kind": type(t).__name__}
