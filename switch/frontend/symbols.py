"""Symbols and lexical scopes used by the checker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import SourcePos
from .types import Type


@dataclass(eq=False)
class Sym:
    kind: str  # type | var | param | const | action | function | extern_function | instance
    #            | table | state | value_set | enum_member
    name: str
    pos: SourcePos
    type: Type | None = None
    decl: Any = None
    direction: str = ""  # for params: in | out | inout | "" ; for vars "inout"
    value: Any = None  # folded value of a constant
    overloads: list[Any] = field(default_factory=list)  # for functions and extern functions

    @property
    def writable(self) -> bool:
        if self.kind == "var":
            return True
        if self.kind == "param":
            return self.direction in ("out", "inout")
        return False


class Scope:
    def __init__(self, parent: Scope | None = None, kind: str = "block") -> None:
        self.parent = parent
        self.kind = kind
        self.names: dict[str, Sym] = {}

    def lookup(self, name: str) -> Sym | None:
        scope: Scope | None = self
        while scope is not None:
            sym = scope.names.get(name)
            if sym is not None:
                return sym
            scope = scope.parent
        return None

    def root(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope
