"""The syntax tree: plain dataclasses produced by the parser and annotated by later passes.

Every node has ``pos`` (original file and line). Expressions get ``type`` filled in by the
type checker; nothing else mutates the tree except where a pass documents it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import SourcePos


@dataclass(eq=False)
class Node:
    pos: SourcePos


@dataclass(eq=False)
class Annotation(Node):
    name: str
    body: str = ""  # the argument tokens as source text, without the parentheses
    args: list[Expr] | None = None  # parsed when the body is an expression list
    kv: list[tuple[str, Expr]] | None = None  # parsed when the body is key=value pairs
    structured: bool = False  # written with [...] (structured annotation)


# ----------------------------------------------------------------------------- types (syntax)


@dataclass(eq=False)
class TypeRef(Node):
    pass


@dataclass(eq=False)
class NamedType(TypeRef):
    name: str
    dot: bool = False  # `.T` names the top-level T


@dataclass(eq=False)
class BitsType(TypeRef):
    width: Expr | None  # None for plain `bit` (= bit<1>)
    signed: bool = False


@dataclass(eq=False)
class VarbitType(TypeRef):
    width: Expr


@dataclass(eq=False)
class BaseType(TypeRef):
    name: str  # int | bool | string | void | error | match_kind | _


@dataclass(eq=False)
class SpecializedType(TypeRef):
    base: NamedType
    args: list[TypeRef]


@dataclass(eq=False)
class StackType(TypeRef):
    elem: TypeRef
    size: Expr


@dataclass(eq=False)
class TupleType(TypeRef):
    args: list[TypeRef]
    kind: str = "tuple"  # tuple | list


# ----------------------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr(Node):
    # the semantic type, set by the checker (a types.Type)
    type: Any = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class IntLit(Expr):
    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class StringLit(Expr):
    value: str


@dataclass(eq=False)
class Name(Expr):
    name: str
    dot: bool = False


@dataclass(eq=False)
class Member(Expr):
    expr: Expr
    name: str


@dataclass(eq=False)
class TypeExpr(Expr):
    """A type used where an expression stands, e.g. ``bit<8>`` in ``bit<8>.minSizeInBits``."""

    typeref: TypeRef


@dataclass(eq=False)
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass(eq=False)
class Argument(Node):
    value: Expr | None  # None for `_` (don't care)
    name: str | None = None


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: list[Argument]
    type_args: list[TypeRef] = field(default_factory=list)


@dataclass(eq=False)
class Unary(Expr):
    op: str  # - ~ !
    expr: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Mux(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Cast(Expr):
    typeref: TypeRef
    expr: Expr


@dataclass(eq=False)
class StructInit(Expr):
    """``{a = 1, b = 2}`` (possibly typed: ``T {a = 1}``)."""

    fields: list[tuple[str, Expr]]
    typeref: TypeRef | None = None


@dataclass(eq=False)
class ListExpr(Expr):
    """``{1, 2}``: a list/tuple expression."""

    items: list[Expr]


@dataclass(eq=False)
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass(eq=False)
class Range(Expr):
    lo: Expr
    hi: Expr


@dataclass(eq=False)
class Default(Expr):
    """``default`` in a keyset or switch label."""


@dataclass(eq=False)
class DontCare(Expr):
    """``_``."""


@dataclass(eq=False)
class ThisExpr(Expr):
    pass


# ----------------------------------------------------------------------------- statements


@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class CallStmt(Stmt):
    call: Call


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass(eq=False)
class SwitchCase(Node):
    label: Expr  # Name (action or value), Default, or an expression
    body: Block | None  # None = fall through to the next case


@dataclass(eq=False)
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(eq=False)
class Empty(Stmt):
    pass


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class For(Stmt):
    init: list[Stmt]
    cond: Expr | None
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class ForIn(Stmt):
    var_type: TypeRef | None
    var: str
    collection: Expr
    body: Stmt


# ----------------------------------------------------------------------------- declarations


@dataclass(eq=False)
class Decl(Stmt):
    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class Param(Node):
    direction: str  # in | out | inout | "" (directionless)
    typeref: TypeRef
    name: str
    default: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class VarDecl(Decl):
    typeref: TypeRef
    init: Expr | None = None


@dataclass(eq=False)
class ConstDecl(Decl):
    typeref: TypeRef
    value: Expr


@dataclass(eq=False)
class Typedef(Decl):
    typeref: TypeRef
    newtype: bool = False  # `type` rather than `typedef`


@dataclass(eq=False)
class FieldDecl(Node):
    name: str
    typeref: TypeRef
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class StructLike(Decl):
    kind: str  # header | header_union | struct
    fields: list[FieldDecl]
    type_params: list[str] = field(default_factory=list)


@dataclass(eq=False)
class EnumDecl(Decl):
    members: list[tuple[str, Expr | None, SourcePos]]
    underlying: TypeRef | None = None


@dataclass(eq=False)
class ErrorDecl(Decl):
    members: list[tuple[str, SourcePos]]


@dataclass(eq=False)
class MatchKindDecl(Decl):
    members: list[tuple[str, SourcePos]]


@dataclass(eq=False)
class MethodProto(Decl):
    """A function or method prototype (extern functions, extern methods, constructors)."""

    return_type: TypeRef | None  # None for constructors
    type_params: list[str]
    params: list[Param]
    abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    type_params: list[str]
    methods: list[MethodProto]


@dataclass(eq=False)
class ExternFunction(Decl):
    proto: MethodProto


@dataclass(eq=False)
class TypeDeclProto(Decl):
    """``parser P<T>(...);``, ``control C(...);`` or ``package Pkg(...);``."""

    kind: str  # parser | control | package
    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class ParserState(Decl):
    stmts: list[Stmt]
    transition: Expr | None  # Name of a state, or a SelectExpr; None = reject? (p4c: missing)


@dataclass(eq=False)
class SelectCase(Node):
    keyset: Expr  # ListExpr for tuples, Default, DontCare, Mask, Range, Name (value_set) ...
    state: str
    state_pos: SourcePos | None = None


@dataclass(eq=False)
class SelectExpr(Expr):
    exprs: list[Expr]
    cases: list[SelectCase]


@dataclass(eq=False)
class ParserDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]


@dataclass(eq=False)
class ControlDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    body: Block


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list[Param]
    body: Block


@dataclass(eq=False)
class FunctionDecl(Decl):
    return_type: TypeRef
    type_params: list[str]
    params: list[Param]
    body: Block


@dataclass(eq=False)
class Instance(Decl):
    typeref: TypeRef
    args: list[Argument]
    body: list[Decl] | None = None  # abstract method implementations


@dataclass(eq=False)
class ValueSetDecl(Decl):
    elem: TypeRef
    size: Expr


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)
    match_kind_pos: SourcePos | None = None


@dataclass(eq=False)
class ActionRef(Node):
    expr: Expr  # Name or Call (with bound arguments)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class Entry(Node):
    keyset: Expr  # ListExpr for several keys
    action: Expr  # Name or Call
    priority: Expr | None = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableProperty(Node):
    name: str  # key | actions | entries | default_action | size | implementation | ...
    value: Any  # list[KeyElement] | list[ActionRef] | list[Entry] | Expr
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    properties: list[TableProperty]


@dataclass(eq=False)
class Program(Node):
    decls: list[Decl]


def iter_syntax(roots: list[Any]) -> Iterator[Node]:
    """The syntax nodes below ``roots`` in source order, following only the tree's own fields:
    not the checker's annotations (a call's ``target`` is the called declaration), and not
    type syntax, whose width expressions are compile-time constants by definition."""
    stack: list[Any] = [list(roots)]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, Node) or isinstance(node, TypeRef):
            continue
        yield node
        children = [getattr(node, f.name) for f in fields(node)]
        stack.extend(reversed([c for c in children if isinstance(c, (Node, list, tuple))]))
