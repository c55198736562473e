"""Statements: blocks, assignments, switch, returns, l-values, assignability."""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .check_base import (
    Context,
    fail,
)
from .check_tables import TableChecker
from .symbols import Scope, Sym


class StmtsMixin:
    """Checker methods for statements (mixed into Checker)."""

    # ================================================================= statements
    def block(self, b: A.Block, scope: Scope, ctx: Context, new_scope: bool = True) -> None:
        inner = Scope(scope, "block") if new_scope else scope
        for s in b.stmts:
            self.statement(s, inner, ctx)

    def statement(self, s: A.Stmt, scope: Scope, ctx: Context) -> None:
        if isinstance(s, A.Decl):
            if isinstance(s, A.Instance):
                # p4c's ValidateParsedProgram: instances belong among a block's locals
                where = {
                    "control": "in a control 'apply' block",
                    "parser": "in a parser state",
                    "action": "in an action",
                }.get(ctx.kind, "here")
                raise fail(s.pos, f"{s.name}: instances cannot be declared {where}")
            self.declaration(s, scope, ctx)
        elif isinstance(s, A.Assign):
            self.assign(s, scope, ctx)
        elif isinstance(s, A.CallStmt):
            self.expr(s.call, scope, ctx, statement=True)
        elif isinstance(s, A.Block):
            self.block(s, scope, ctx)
        elif isinstance(s, A.If):
            ct = self.expr(s.cond, scope, ctx, expected=T.BOOL)
            if ct is not T.BOOL:
                raise fail(s.cond.pos, f"condition must be a bool, not {ct}")
            self.statement_in_scope(s.then, scope, ctx)
            if s.other is not None:
                self.statement_in_scope(s.other, scope, ctx)
        elif isinstance(s, A.Switch):
            self.switch(s, scope, ctx)
        elif isinstance(s, A.Exit):
            if ctx.kind in ("parser", "function"):
                raise fail(s.pos, f"exit statement is not allowed in a {ctx.kind}")
        elif isinstance(s, A.Return):
            self.return_stmt(s, scope, ctx)
        elif isinstance(s, (A.Break, A.Continue)):
            if not ctx.in_loop:
                word = "break" if isinstance(s, A.Break) else "continue"
                raise fail(s.pos, f"{word} statement outside of a loop")
        elif isinstance(s, A.For):
            inner = Scope(scope, "block")
            for st in s.init:
                self.statement(st, inner, ctx)
            if s.cond is not None:
                ct = self.expr(s.cond, inner, ctx, expected=T.BOOL)
                if ct is not T.BOOL:
                    raise fail(s.cond.pos, f"loop condition must be a bool, not {ct}")
            for st in s.update:
                self.statement(st, inner, ctx)
            self.loop_body(s.body, inner, ctx)
        elif isinstance(s, A.ForIn):
            inner = Scope(scope, "block")
            ct = self.expr(s.collection, inner, ctx)
            if isinstance(ct, T.StackT):
                et = ct.elem
            elif isinstance(ct, T.TupleT) and ct.elems:
                et = ct.elems[0]
            elif isinstance(s.collection, A.Range):
                et = s.collection.type
            else:
                raise fail(s.collection.pos, f"cannot iterate over a value of type {ct}")
            if s.var_type is not None:
                vt = self.resolve_type(s.var_type, scope)
                self.require_assignable(vt, et, s.collection, "loop variable")
                et = vt
            s.resolved_type = et
            self.define(inner, Sym("var", s.var, s.pos, et, s, direction="inout"))
            self.loop_body(s.body, inner, ctx)
        elif isinstance(s, A.Empty):
            pass
        else:
            raise fail(s.pos, f"unsupported statement {type(s).__name__}")

    def loop_body(self, body: A.Stmt, scope: Scope, ctx: Context) -> None:
        was = ctx.in_loop
        ctx.in_loop = True
        try:
            self.statement_in_scope(body, scope, ctx)
        finally:
            ctx.in_loop = was

    def statement_in_scope(self, s: A.Stmt, scope: Scope, ctx: Context) -> None:
        self.statement(s, Scope(scope, "block") if not isinstance(s, A.Block) else scope, ctx)

    def return_stmt(self, s: A.Return, scope: Scope, ctx: Context) -> None:
        if ctx.kind == "function":
            rt = ctx.return_type or T.VOID
            if s.value is None:
                if rt is not T.VOID:
                    raise fail(s.pos, f"return statement needs a value of type {rt}")
                return
            if rt is T.VOID:
                raise fail(s.value.pos, "return with a value in a function returning void")
            vt = self.expr(s.value, scope, ctx, expected=rt)
            self.require_assignable(rt, vt, s.value, "return value")
            return
        if ctx.kind == "parser":
            raise fail(s.pos, "return statement is not allowed in a parser")
        if s.value is not None:
            raise fail(
                s.value.pos,
                f"return with a value is not allowed in a{'n' if ctx.kind == 'action' else ''} {ctx.kind}",
            )

    def assign(self, s: A.Assign, scope: Scope, ctx: Context) -> None:
        lt = self.expr(s.lhs, scope, ctx)
        self.require_lvalue(s.lhs, scope, "assignment target")
        rt = self.expr(s.rhs, scope, ctx, expected=lt)
        self.require_assignable(lt, rt, s.rhs, "assignment")

    def switch(self, s: A.Switch, scope: Scope, ctx: Context) -> None:
        if ctx.kind in ("action", "function", "parser"):
            raise fail(
                s.pos,
                f"switch statements are not allowed in a{'n' if ctx.kind == 'action' else ''} {ctx.kind}",
            )
        et = self.expr(s.expr, scope, ctx)
        seen: set[Any] = set()
        if isinstance(et, T.ActionRunT):
            table = et.table
            names = {
                self.action_ref_name(r.expr) for r in TableChecker.prop(table, "actions") or []
            }
            for case in s.cases:
                if isinstance(case.label, A.Default):
                    key: Any = "default"
                else:
                    if not isinstance(case.label, A.Name):
                        raise fail(case.label.pos, "switch label must be an action name")
                    key = case.label.name
                    if key not in names:
                        raise fail(case.label.pos, f"{key}: not an action of table {table.name}")
                if key in seen:
                    raise fail(case.label.pos, f"{key}: duplicate switch label")
                seen.add(key)
        else:
            b = T.strip_newtype(et)
            if not (isinstance(b, (T.Bits, T.EnumT)) or b is T.ERROR):
                raise fail(
                    s.expr.pos,
                    f"switch expression must be a table's action_run, a bit<>/int<> or an enum value, not {et}",
                )
            for case in s.cases:
                if isinstance(case.label, A.Default):
                    key = "default"
                else:
                    lt = self.expr(case.label, scope, ctx, expected=et)
                    self.require_assignable(et, lt, case.label, "switch label")
                    key = self.const_value(case.label, scope)
                    if key is None:
                        if isinstance(case.label, A.Member) and isinstance(lt, T.EnumT):
                            key = case.label.name
                        else:
                            raise fail(
                                case.label.pos, "switch label must be a compile-time constant"
                            )
                if key in seen:
                    raise fail(case.label.pos, "duplicate switch label")
                seen.add(key)
        for i, case in enumerate(s.cases):
            if isinstance(case.label, A.Default) and i != len(s.cases) - 1:
                raise fail(case.pos, "default label must be the last switch label")
            if case.body is not None:
                self.block(case.body, scope, ctx)
        if s.cases and s.cases[-1].body is None:
            raise fail(
                s.cases[-1].pos, "the last switch label must have a body (fall-through to nothing)"
            )

    @staticmethod
    def action_ref_name(e: A.Expr) -> str:
        if isinstance(e, A.Call):
            e = e.func
        if isinstance(e, A.Name):
            return e.name
        return "?"

    # ================================================================= l-values and assignability
    def require_lvalue(self, e: A.Expr, scope: Scope, what: str) -> None:
        problem = self.lvalue_problem(e, scope)
        if problem:
            raise fail(e.pos, f"{what}: {problem}")

    def lvalue_problem(self, e: A.Expr, scope: Scope) -> str | None:
        if isinstance(e, A.Name):
            sym = (self.globals if e.dot else scope).lookup(e.name)
            if sym is None:
                return f"{e.name} not found"
            if sym.kind == "param" and sym.direction == "in":
                return f"{e.name} is an 'in' parameter and cannot be written (read-only)"
            if sym.kind == "param" and sym.direction == "":
                if isinstance(T.strip_newtype(sym.type), (T.ExternT, T.BlockT)):
                    return f"{e.name} cannot be assigned"
                return f"{e.name} is a directionless parameter and cannot be written (read-only)"
            if not sym.writable:
                return f"{e.name} is not an l-value (it is a {sym.kind}; read-only)"
            return None
        if isinstance(e, A.Member):
            bt = T.strip_newtype(e.expr.type) if e.expr.type is not None else None
            if isinstance(bt, T.StructT) and e.name in bt.fields:
                return self.lvalue_problem(e.expr, scope)
            if isinstance(bt, T.StackT) and e.name in ("next", "last"):
                return self.lvalue_problem(e.expr, scope)
            return f"{self.describe(e)} is not an l-value"
        if isinstance(e, A.Index):
            return self.lvalue_problem(e.expr, scope)
        if isinstance(e, A.Slice):
            return self.lvalue_problem(e.expr, scope)
        if isinstance(e, A.DontCare):
            return None
        return f"{self.describe(e)} is not an l-value"

    def describe(self, e: A.Expr) -> str:
        if isinstance(e, A.Name):
            return e.name
        if isinstance(e, A.Member):
            return f"{self.describe(e.expr)}.{e.name}"
        if isinstance(e, A.Index):
            return f"{self.describe(e.expr)}[...]"
        if isinstance(e, A.IntLit):
            return e.text or str(e.value)
        if isinstance(e, A.Call):
            return f"{self.describe(e.func)}(...)"
        return "expression"

    def assignable(self, dst: T.Type, src: T.Type) -> bool:
        if dst is src or dst == src:
            return True
        if isinstance(dst, T.TypeVar) or isinstance(src, T.TypeVar):
            return True
        if src is T.DONTCARE or dst is T.DONTCARE:
            return True
        if isinstance(src, T.InfInt):
            return isinstance(dst, (T.Bits, T.InfInt))
        if isinstance(src, T.EnumT) and src.underlying is not None and dst == src.underlying:
            # P4_16 casts a serializable enum implicitly to its underlying type (and only
            # that way round): `bit<16> t = E.A;`, keysets, keys, entries, arguments.
            return True
        if isinstance(dst, T.StructT) and isinstance(src, T.TupleT) and src.is_list_expr:
            ftypes = list(dst.fields.values())
            return len(ftypes) == len(src.elems) and all(
                self.assignable(a, b) for a, b in zip(ftypes, src.elems, strict=True)
            )
        if isinstance(dst, T.StructT) and isinstance(src, T.StructT) and src.anonymous:
            if set(dst.fields) != set(src.fields):
                return False
            return all(self.assignable(dst.fields[k], src.fields[k]) for k in dst.fields)
        if isinstance(dst, T.StructT) and isinstance(src, T.StructT):
            return dst.decl is src.decl and dst.name == src.name
        if isinstance(dst, T.TupleT) and isinstance(src, T.TupleT):
            return len(dst.elems) == len(src.elems) and all(
                self.assignable(a, b) for a, b in zip(dst.elems, src.elems, strict=True)
            )
        if isinstance(dst, T.StackT) and isinstance(src, T.StackT):
            return dst.size == src.size and self.assignable(dst.elem, src.elem)
        if isinstance(dst, T.StackT) and isinstance(src, T.TupleT) and src.is_list_expr:
            return len(src.elems) == dst.size and all(
                self.assignable(dst.elem, e) for e in src.elems
            )
        if isinstance(dst, T.ExternT) and isinstance(src, T.ExternT):
            return dst.decl is src.decl
        if isinstance(dst, T.BlockT) and isinstance(src, T.BlockT):
            return True  # checked structurally by bind_block
        return False

    def require_assignable(self, dst: T.Type, src: T.Type, e: A.Expr, what: str) -> None:
        if not self.assignable(dst, src) and not self.int_to_newtype(dst, src, what):
            raise fail(e.pos, f"{what}: cannot convert {src} to {dst} (type mismatch)")
        if isinstance(src, T.InfInt) and isinstance(T.strip_newtype(dst), T.Bits):
            self.retype_literal(e, T.strip_newtype(dst))

    @staticmethod
    def int_to_newtype(dst: T.Type, src: T.Type, what: str) -> bool:
        """p4c 1.2.5 gives an integer literal a `type` over bit<W> in an assignment or an
        initializer (`Tag_t t = 5;`), not as an argument or a comparison operand (checked
        with p4c-bm2-ss by bench/p4c_diff.py)."""
        return (
            what in ("assignment", "initializer", "constant initializer")
            and isinstance(src, T.InfInt)
            and isinstance(dst, T.NewType)
            and isinstance(T.strip_newtype(dst), T.Bits)
        )

    def retype_literal(self, e: A.Expr, t: T.Type) -> None:
        """Give an untyped integer expression the type it is used at (no width change later)."""
        if isinstance(e.type, T.InfInt):
            e.type = t
            if isinstance(e, A.Binary) and e.op not in ("<<", ">>"):
                self.retype_literal(e.left, t)
                self.retype_literal(e.right, t)
            elif isinstance(e, A.Binary):
                self.retype_literal(e.left, t)
            elif isinstance(e, A.Unary):
                self.retype_literal(e.expr, t)
            elif isinstance(e, A.Mux):
                self.retype_literal(e.then, t)
                self.retype_literal(e.other, t)
