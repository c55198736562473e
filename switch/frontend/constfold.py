"""Constant folding: P4's compile-time evaluation of expressions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ast as A
from . import types as T
from .check_base import (
    BuiltinMethod,
    TypeValue,
)
from .symbols import Scope

if TYPE_CHECKING:
    from .checker import Checker


class ConstFolder:
    """Evaluates expressions whose value is known at compile time (P4's constant folding)."""

    def __init__(self, checker: Checker, scope: Scope) -> None:
        self.c = checker
        self.scope = scope

    def fold(self, e: A.Expr) -> Any:
        m = getattr(self, "f_" + type(e).__name__, None)
        if m is None:
            return None
        v = m(e)
        if isinstance(v, int) and not isinstance(v, bool) and e.type is not None:
            v = self.c.wrap(v, e.type)
        return v

    def f_IntLit(self, e: A.IntLit) -> Any:
        return e.value

    def f_BoolLit(self, e: A.BoolLit) -> Any:
        return e.value

    def f_Name(self, e: A.Name) -> Any:
        sym = getattr(e, "sym", None)
        if sym is None and self.scope is not None:
            sym = (self.c.globals if e.dot else self.scope).lookup(e.name)
        if sym is not None and sym.kind == "const":
            return sym.value
        return None

    def f_Member(self, e: A.Member) -> Any:
        t = e.expr.type
        if isinstance(t, TypeValue) and isinstance(t.type, T.EnumT):
            et = t.type
            return et.values.get(e.name) if et.underlying is not None else None
        return None

    def f_Unary(self, e: A.Unary) -> Any:
        v = self.fold(e.expr)
        if v is None:
            return None
        if e.op == "!":
            return not v if isinstance(v, bool) else None
        if isinstance(v, bool):
            return None
        if e.op == "-":
            return -v
        if e.op == "~":
            return ~v  # fold() wraps the result to the expression's width
        return None

    def f_Binary(self, e: A.Binary) -> Any:
        a = self.fold(e.left)
        if a is None:
            return None
        b = self.fold(e.right)
        if b is None:
            return None
        op = e.op
        if op == "&&":
            return a and b
        if op == "||":
            return a or b
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if isinstance(a, bool) or isinstance(b, bool):
            return None
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        if op == ">=":
            return a >= b
        t = T.strip_newtype(e.type) if e.type is not None else None
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return None if b == 0 else a // b
        if op == "%":
            return None if b == 0 else a % b
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        if op == "^":
            return a ^ b
        if op == "<<":
            return a << b if b < 4096 else 0
        if op == ">>":
            return a >> b
        if op == "++":
            rt = T.strip_newtype(e.right.type)
            if isinstance(rt, T.Bits):
                return (a << rt.width) | (b & ((1 << rt.width) - 1))
            return None
        if op in ("|+|", "|-|") and isinstance(t, T.Bits):
            r = a + b if op == "|+|" else a - b
            lo, hi = (
                (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1)
                if t.signed
                else (0, (1 << t.width) - 1)
            )
            return max(lo, min(hi, r))
        return None

    def f_Mux(self, e: A.Mux) -> Any:
        c = self.fold(e.cond)
        if not isinstance(c, bool):
            return None
        return self.fold(e.then if c else e.other)

    def f_Cast(self, e: A.Cast) -> Any:
        v = self.fold(e.expr)
        if v is None:
            return None
        t = T.strip_newtype(e.type)
        if t is T.BOOL:
            return bool(v)
        if isinstance(v, bool):
            return int(v)
        if isinstance(t, T.Bits):
            return self.c.wrap(v, t)
        if isinstance(t, T.EnumT):
            return None
        return v

    def f_Slice(self, e: A.Slice) -> Any:
        v = self.fold(e.expr)
        if v is None or isinstance(v, bool) or not hasattr(e, "hi_value"):
            return None
        return (v >> e.lo_value) & ((1 << (e.hi_value - e.lo_value + 1)) - 1)

    def f_Call(self, e: A.Call) -> Any:
        if isinstance(e.func, A.Name) and e.func.name == "static_assert":
            return True  # the checker already proved it (a false one is an error)
        if isinstance(e.func, A.Member) and e.func.name in (
            "minSizeInBits",
            "minSizeInBytes",
            "maxSizeInBits",
            "maxSizeInBytes",
        ):
            ft = e.func.type
            if isinstance(ft, BuiltinMethod):
                w = (
                    T.width_of(ft.target)
                    if not isinstance(ft.target, T.StructT)
                    else self.min_bits(ft.target, e.func.name.startswith("max"))
                )
                if w is None:
                    return None
                return w if e.func.name.endswith("Bits") else (w + 7) // 8
        return None

    def min_bits(self, st: T.StructT, maximum: bool) -> int | None:
        total = 0
        for ft in st.fields.values():
            b = T.strip_newtype(ft)
            if isinstance(b, T.Varbit):
                total += b.width if maximum else 0
            elif isinstance(b, T.StructT):
                w = self.min_bits(b, maximum)
                if w is None:
                    return None
                total += w
            else:
                w = T.width_of(b)
                if w is None:
                    return None
                total += w
        return total
