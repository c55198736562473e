"""p4c's control-plane naming: ``@name`` (relative or absolute), ``@id``, annotation
texts as P4Info writes them, qualified names and the names of table keys."""

from __future__ import annotations

from typing import Any

from . import ast as A
from .errors import CompileError


def annotation_texts(annos: list[A.Annotation]) -> list[str]:
    out = []
    for a in annos:
        if a.structured:
            out.append(f"{a.name}[{a.body}]")
        elif not a.body:  # p4c prints `@a()` as `@a`
            out.append(a.name)
        else:
            out.append(f"{a.name}({a.body})")
    return out


def name_annotation(annos: list[A.Annotation]) -> str | None:
    for a in annos:
        if a.name == "name" and a.args and isinstance(a.args[0], A.StringLit):
            return a.args[0].value
    return None


def id_annotation(annos: list[A.Annotation]) -> int | None:
    for a in annos:
        if a.name == "id":
            if not a.args or not isinstance(a.args[0], A.IntLit):
                raise CompileError(a.pos, "@id needs one integer argument")
            return a.args[0].value
    return None


def qualify(prefix: str, decl: Any) -> str:
    """The control-plane name of a declaration under ``prefix`` (p4c's @name rules)."""
    given = name_annotation(decl.annotations)
    if given is not None:
        if given.startswith("."):
            return given[1:]
        return f"{prefix}.{given}" if prefix else given
    return f"{prefix}.{decl.name}" if prefix else decl.name


def expr_text(e: A.Expr) -> str:
    """A key expression printed the way p4c names match fields."""
    if isinstance(e, A.Name):
        return ("." if e.dot else "") + e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Call):
        if isinstance(e.func, A.Member) and e.func.name == "isValid" and not e.args:
            return f"{expr_text(e.func.expr)}.$valid$"
        return f"{expr_text(e.func)}()" if not e.args else f"{expr_text(e.func)}(...)"
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.Cast):
        return expr_text(e.expr)
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    return "key"
