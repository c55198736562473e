"""Constant folding of structured annotation elements (``@a[1 == 2, 5 + 6, k = "v"]``).

p4c folds the expressions in a structured annotation before it writes them into P4Info, so
``@MixedExprList[1, true, 1 == 2, 5 + 6]`` becomes ``[1, true, false, 11]``. The annotation is
kept as text until P4Info is written; this module re-reads one element with the ordinary lexer
and expression parser and folds literals and operators over them. Anything else (a name, a
call) is not a literal expression and the caller keeps the element's text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from . import ast as A
from .errors import CompileError
from .lexer import tokenize
from .parser import Parser

Value = int | bool | str

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
}
_COMPARE: dict[str, Callable[[object, object], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def fold_annotation_expression(text: str) -> Value | None:
    """The literal value of ``text``, or None when it is not a foldable literal expression."""
    try:
        tokens = tokenize(text, "<annotation>")
        parser = Parser(tokens)
        expr = parser.expression()
        if parser.tok.kind != "eof":
            return None
        return _fold(expr)
    except (CompileError, RecursionError):
        return None


def _fold(e: A.Expr) -> Value | None:
    if isinstance(e, A.BoolLit):
        return e.value
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.StringLit):
        return e.value
    if isinstance(e, A.Unary):
        v = _fold(e.expr)
        if e.op == "!" and isinstance(v, bool):
            return not v
        if _is_int(v) and e.op in ("-", "~"):
            return -v if e.op == "-" else ~v
        return None
    if isinstance(e, A.Binary):
        left, right = _fold(e.left), _fold(e.right)
        if left is None or right is None:
            return None
        if e.op in _COMPARE and type(left) is type(right):
            return _COMPARE[e.op](left, right)
        if e.op in ("&&", "||") and isinstance(left, bool) and isinstance(right, bool):
            return (left and right) if e.op == "&&" else (left or right)
        if _is_int(left) and _is_int(right):
            if e.op in _INT_OPS and not (e.op in ("<<", ">>") and right < 0):
                return _INT_OPS[e.op](left, right)
            if e.op in ("/", "%") and right > 0 and left >= 0:
                return left // right if e.op == "/" else left % right
        return None
    return None


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
