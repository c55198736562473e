"""Name resolution, type checking and constant folding (one pass, declare-before-use).

The checker walks the tree in source order, as P4 requires, with a scope per block. It
annotates every expression with its semantic type (``expr.type``), folds constants it needs
(widths, sizes, slice bounds, enum values) and raises CompileError with the position of the
first problem. Control-plane structure is collected afterwards by ``cpbuild.py``.
"""

from __future__ import annotations

from . import ast as A
from . import types as T
from .check_base import (
    ARITH,
    COMPARE,
    EQUALITY,
    BuiltinMethod,
    CheckedProgram,
    Context,
    MethodRef,
    TypeValue,
    fail,
)
from .check_calls import CallsMixin
from .check_decls import DeclsMixin
from .check_exprs import ExprsMixin
from .check_parsers import ParsersMixin
from .check_stmts import StmtsMixin
from .check_tables import TableChecker
from .constfold import ConstFolder
from .errors import CompileWarning
from .symbols import Scope

__all__ = [
    "ARITH",
    "COMPARE",
    "EQUALITY",
    "BuiltinMethod",
    "CheckedProgram",
    "Checker",
    "ConstFolder",
    "Context",
    "MethodRef",
    "TableChecker",
    "TypeValue",
    "check",
    "fail",
]


class Checker(DeclsMixin, ParsersMixin, StmtsMixin, ExprsMixin, CallsMixin):
    """The checker; its methods live in one mixin per concern (check_*.py)."""

    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.globals = Scope(None, "global")
        self.error_members: list[str] = []
        self.match_kinds: list[str] = []
        self.main: A.Instance | None = None
        # specialized generic structs, one StructT per (declaration, type arguments)
        self.struct_types: dict[tuple[int, str], T.StructT] = {}
        self.warnings: list[CompileWarning] = []

    # ================================================================= entry
    def check(self) -> CheckedProgram:
        ctx = Context("global")
        for d in self.program.decls:
            self.declaration(d, self.globals, ctx)
        # No `main` is not a front-end error (p4c's front end accepts such a program); the
        # compiler driver and the switch refuse it (errors.MissingMainError).
        return CheckedProgram(
            self.program,
            self.globals,
            self.main,
            self.match_kinds,
            self.error_members,
            warnings=self.warnings,
        )


def check(program: A.Program) -> CheckedProgram:
    return Checker(program).check()
