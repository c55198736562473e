"""Recursive-descent parser for P4_16 (the spec grammar, with p4c's operator precedence).

P4's grammar needs to know which identifiers name types (``T x;`` declares, ``x(y);`` calls,
``(T) e`` casts). Like p4c's lexer feedback, the parser keeps a scope stack recording which
names are types; declaring a variable with a type's name hides the type in that scope.
We chose recursive descent over a table-driven parser for this feedback and for precise
``FILE(LINE): error:`` messages (see docs/frontend.md).
"""

from __future__ import annotations

from . import ast as A
from .lexer import tokenize
from .parse_base import (
    BINARY_PRECEDENCE,
    COMPOUND,
    MAX_DEPTH,
    SOFT_NAMES,
    TYPE_KEYWORDS,
    ParserBase,
)
from .parse_decls import DeclsMixin
from .parse_exprs import ExprsMixin
from .parse_parsers import ParsersMixin
from .parse_stmts import StmtsMixin
from .parse_tables import TablesMixin
from .parse_types import TypesMixin

__all__ = [
    "BINARY_PRECEDENCE",
    "COMPOUND",
    "MAX_DEPTH",
    "SOFT_NAMES",
    "TYPE_KEYWORDS",
    "Parser",
    "ParserBase",
    "parse",
]


class Parser(DeclsMixin, ParsersMixin, TablesMixin, TypesMixin, StmtsMixin, ExprsMixin):
    """The parser; its methods live in one mixin per concern (parse_*.py)."""

    # ------------------------------------------------------------------ program
    def parse_program(self) -> A.Program:
        decls: list[A.Decl] = []
        start = self.tok.pos
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            d = self.declaration()
            decls.extend(self.pending_decls)
            self.pending_decls.clear()
            decls.append(d)
        return A.Program(start, decls)


def parse(text: str, filename: str) -> A.Program:
    """Parse preprocessed text (with ``#line`` markers) into a Program."""
    tokens = tokenize(text, filename)
    return Parser(tokens).parse_program()
