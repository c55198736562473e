"""Shared pieces of the checker: contexts, the result type and the pseudo-types of names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ast as A
from . import types as T
from .errors import CompileError, CompileWarning, SourcePos
from .symbols import Scope

ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
COMPARE = {"<", ">", "<=", ">="}
EQUALITY = {"==", "!="}


@dataclass
class Context:
    """Where a statement or expression is being checked."""

    kind: str  # global | parser | control | action | function | extern
    block: Any = None  # the enclosing ParserDecl/ControlDecl
    return_type: T.Type | None = None
    in_loop: bool = False


@dataclass
class CheckedProgram:
    program: A.Program
    scope: Scope
    main: A.Instance | None = None
    match_kinds: list[str] = field(default_factory=list)
    error_members: list[str] = field(default_factory=list)
    # digests.assign_digest_names' result, kept: the names it stores on the call nodes do not
    # change, and every pipeline built from this program asks again (test suites build many)
    digest_sites: list[Any] | None = None
    # p4c-style warnings (declarations that shadow others), in the order they were found
    warnings: list[CompileWarning] = field(default_factory=list)


def fail(pos: SourcePos, message: str) -> CompileError:
    return CompileError(pos, message)


class TypeValue(T.Type):
    """The 'type' of a name that denotes a type (used for E.member, error.X, T.minSizeInBits)."""

    def __init__(self, t: T.Type) -> None:
        self.type = t

    def __str__(self) -> str:
        return f"type {self.type}"


class BuiltinMethod(T.Type):
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.target = target

    def __str__(self) -> str:
        return f"method {self.name}"


class MethodRef(T.Type):
    def __init__(self, name: str, extern: T.ExternT, methods: list[A.MethodProto]) -> None:
        self.name = name
        self.extern = extern
        self.methods = methods

    def __str__(self) -> str:
        return f"method {self.extern.name}.{self.name}"
