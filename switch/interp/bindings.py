"""What names stand for while the builder generates code: storage, objects, blocks.

``Env`` maps declarations (by identity) to these bindings, chained from a block instance's
scope to the global one, so each instance of a control gets its own tables and locals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from .exprs import CodegenError, ConstBinding
from .externs import ValueSet
from .layout import Layout
from .tables import Table

MISSING = object()


@dataclass
class ExternB:
    name: str  # the object's name in the generated module
    type: T.ExternT
    obj: Any


@dataclass
class TableB:
    name: str
    table: Table
    decl: A.TableDecl


@dataclass
class BlockB:
    fn: str
    decl: Any
    params: list[tuple[A.Param, Layout | None]]
    prefix: str


@dataclass
class DeferredBlockB:
    """A sub-control instance applied exactly once, generated at its apply call.

    Generated there, its ``in``/``inout`` parameters can be bound to the caller's own storage
    (no copy-in/copy-out; see ``ProgramBuilder.apply_deferred``)."""

    instance: Any  # the instance declaration
    decl: Any  # the control's declaration
    prefix: str
    tbind: dict[str, Any]
    ctor_args: list[Any]
    env: Any  # the declaring scope (Env), where its constructor arguments are evaluated too


@dataclass
class ValueSetB:
    name: str
    obj: ValueSet


class PacketB:
    """packet_in / packet_out parameters: the generated code uses ``P`` for both."""


class Env:
    """Bindings of declarations (by identity) to storage and objects, chained to the parent."""

    def __init__(self, parent: Env | None = None) -> None:
        self.parent = parent
        self.map: dict[int, Any] = {}

    def bind(self, decl: Any, binding: Any) -> None:
        self.map[id(decl)] = binding

    def get(self, decl: Any) -> Any:
        env: Env | None = self
        while env is not None:
            b = env.map.get(id(decl))
            if b is not None:
                return b
            env = env.parent
        return None

    def get_named(self, key: str) -> Any:
        env: Env | None = self
        while env is not None:
            if key in env.map:
                return env.map[key]
            env = env.parent
        return None

    def lookup(self, e: A.Name, default: Any = MISSING) -> Any:
        sym = getattr(e, "sym", None)
        if sym is not None:
            b = self.get(sym.decl) if sym.decl is not None else None
            if b is not None:
                return b
            if sym.kind == "const":
                expr = sym.decl.value if isinstance(sym.decl, A.ConstDecl) else None
                return ConstBinding(sym.value, sym.type, expr)
        if default is not MISSING:
            return default
        what = e.name if isinstance(e, A.Name) else type(e).__name__
        raise CodegenError(e.pos, f"{what}: not available at run time")


@dataclass
class DirectCounterB:
    name: str
    unit: str
