"""Parser and control bodies: states, transitions, select keysets."""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .check_base import (
    Context,
    fail,
)
from .errors import CompileWarning, SourcePos
from .symbols import Scope, Sym


class ParsersMixin:
    """Checker methods for parser/control declarations (mixed into Checker)."""

    def decl_ParserDecl(self, d: A.ParserDecl, scope: Scope, ctx: Context) -> None:
        self.check_block_decl(d, scope, "parser")

    def decl_ControlDecl(self, d: A.ControlDecl, scope: Scope, ctx: Context) -> None:
        self.check_block_decl(d, scope, "control")

    def check_block_decl(self, d: Any, scope: Scope, kind: str) -> None:
        bt = T.BlockT(kind, d.name, d)
        self.define(scope, Sym("type", d.name, d.pos, bt, d))
        tscope = Scope(scope, "type")
        for tp in d.type_params:
            self.define(tscope, Sym("type", tp, d.pos, T.TypeVar(tp)))
        pscope = self.params_scope(d.params + d.ctor_params, tscope, kind)
        d.resolved_params = [(p, p.type) for p in d.params]
        ctx = Context(kind, d)
        body = Scope(pscope, kind)
        for local in d.locals:
            self.declaration(local, body, ctx)
        if kind == "parser":
            self.check_states(d, body, ctx)
        else:
            self.block(d.body, body, ctx)

    def check_states(self, d: A.ParserDecl, scope: Scope, ctx: Context) -> None:
        names: dict[str, A.ParserState] = {}
        for st in d.states:
            if st.name in names:
                raise fail(st.pos, f"{st.name}: duplicate state")
            if st.name in ("accept", "reject"):
                raise fail(st.pos, f"{st.name}: cannot redefine the built-in state")
            names[st.name] = st
            self.define(scope, Sym("state", st.name, st.pos, T.STATE, st))
        if "start" not in names:
            raise fail(d.pos, f"{d.name}: parser has no 'start' state")
        for st in d.states:
            inner = Scope(scope, "state")
            for s in st.stmts:
                self.statement(s, inner, ctx)
            if st.transition is None:
                continue
            if isinstance(st.transition, A.Name):
                self.check_state_ref(st.transition.name, st.transition.pos, names)
            else:
                self.select(st.transition, inner, ctx, names)
        reachable = self.reachable(names, "start")
        for st in d.states:
            if st.name not in reachable:
                continue  # p4c removes unreachable states before its BMv2 back end
            tr = st.transition
            targets = [(tr.name, tr.pos)] if isinstance(tr, A.Name) else []
            if isinstance(tr, A.SelectExpr):
                targets = [(c.state, c.state_pos or c.pos) for c in tr.cases]
            for name, pos in targets:
                if name == "reject":  # p4c's BMv2 back end (ParserConverter)
                    self.warnings.append(
                        CompileWarning(pos, "unsupported",
                                       "Explicit transition to reject not supported on this target")
                    )  # fmt: skip
        for st in d.states:
            if st.name in reachable and not self.may_terminate(names, st.name):
                raise fail(
                    st.pos,
                    f"{st.name}: parser {d.name} never reaches accept or reject from this "
                    "state (its transitions loop forever)",
                )

    @staticmethod
    def edges(st: A.ParserState) -> list[str]:
        if isinstance(st.transition, A.Name):
            return [st.transition.name]
        if isinstance(st.transition, A.SelectExpr):
            return [c.state for c in st.transition.cases]
        return []

    @classmethod
    def can_end(cls, st: A.ParserState) -> bool:
        """Whether the parse can end in ``st``: no transition (rejects), a select without a
        default (no match rejects), a transition to accept or reject, or any call (extract,
        advance, verify and sub-parsers can reject)."""
        if st.transition is None or any(not isinstance(s, (A.Assign, A.Decl)) for s in st.stmts):
            return True
        if isinstance(st.transition, A.SelectExpr) and not any(
            isinstance(c.keyset, (A.Default, A.DontCare)) for c in st.transition.cases
        ):
            return True
        return any(n in ("accept", "reject") for n in cls.edges(st))

    @classmethod
    def reachable(cls, names: dict[str, A.ParserState], start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            name = todo.pop()
            if name in seen or name not in names:
                continue
            seen.add(name)
            todo.extend(cls.edges(names[name]))
        return seen

    @classmethod
    def may_terminate(cls, names: dict[str, A.ParserState], start: str) -> bool:
        """Whether some path from state ``start`` ends the parse."""
        return any(cls.can_end(names[n]) for n in cls.reachable(names, start))

    def check_state_ref(self, name: str, pos: SourcePos, names: dict[str, Any]) -> None:
        if name not in names and name not in ("accept", "reject"):
            raise fail(pos, f"{name}: state not found")

    def select(self, sel: A.SelectExpr, scope: Scope, ctx: Context, names: dict[str, Any]) -> None:
        types = [self.expr(e, scope, ctx) for e in sel.exprs]
        for t, e in zip(types, sel.exprs, strict=True):
            b = T.strip_newtype(t)
            if not (
                isinstance(b, (T.Bits, T.InfInt))
                or b in (T.BOOL, T.ERROR)
                or isinstance(b, T.EnumT)
            ):
                raise fail(e.pos, f"select expression of type {t} is not supported")
        for case in sel.cases:
            self.check_state_ref(case.state, case.state_pos or case.pos, names)
            self.keyset(case.keyset, types, scope, ctx)

    def keyset(self, ks: A.Expr, types: list[T.Type], scope: Scope, ctx: Context) -> None:
        if isinstance(ks, (A.Default, A.DontCare)):
            ks.type = T.DONTCARE
            return
        if isinstance(ks, A.Name):
            sym = scope.lookup(ks.name)
            if sym is not None and sym.kind == "value_set":
                ks.type = sym.type
                elem = sym.type.elem
                if isinstance(elem, T.StructT):
                    if len(elem.fields) != len(types):
                        raise fail(
                            ks.pos,
                            f"{ks.name}: value_set element has {len(elem.fields)} fields, select has {len(types)} expressions",
                        )
                elif isinstance(elem, T.TupleT) and len(types) > 1:
                    if not self.assignable(T.TupleT(tuple(types)), elem):
                        raise fail(
                            ks.pos,
                            f"{ks.name}: value_set of {elem} does not match select type "
                            f"{T.TupleT(tuple(types))}",
                        )
                elif len(types) != 1 or not self.assignable(types[0], elem):
                    want = types[0] if len(types) == 1 else T.TupleT(tuple(types))
                    raise fail(
                        ks.pos, f"{ks.name}: value_set of {elem} does not match select type {want}"
                    )
                return
        if len(types) > 1:
            if not isinstance(ks, A.ListExpr):
                raise fail(
                    ks.pos, f"select has {len(types)} expressions but the keyset is not a tuple"
                )
            if len(ks.items) != len(types):
                raise fail(
                    ks.pos,
                    f"keyset has {len(ks.items)} elements but select has {len(types)} expressions",
                )
            for item, t in zip(ks.items, types, strict=True):
                self.simple_keyset(item, t, scope, ctx)
            ks.type = T.TupleT(tuple(types))
            return
        if isinstance(ks, A.ListExpr):
            if len(ks.items) != 1:
                raise fail(
                    ks.pos, f"keyset has {len(ks.items)} elements but select has 1 expression"
                )
            self.simple_keyset(ks.items[0], types[0], scope, ctx)
            ks.type = types[0]
            return
        self.simple_keyset(ks, types[0], scope, ctx)

    def simple_keyset(self, ks: A.Expr, t: T.Type, scope: Scope, ctx: Context) -> None:
        if isinstance(ks, (A.Default, A.DontCare)):
            ks.type = T.DONTCARE
            return
        if isinstance(ks, (A.Mask, A.Range)):
            a, b = (ks.value, ks.mask) if isinstance(ks, A.Mask) else (ks.lo, ks.hi)
            base = T.strip_newtype(t)
            if isinstance(base, T.EnumT) and base.underlying is not None:
                self.enum_keyset(ks, a, b, t, scope, ctx)
                ks.type = t
                return
            for part in (a, b):
                pt = self.expr(part, scope, ctx, expected=t)
                self.require_assignable(t, pt, part, "keyset")
            if isinstance(ks, A.Mask) and not isinstance(base, (T.Bits, T.InfInt)):
                raise fail(ks.pos, f"mask &&& cannot be applied to a value of type {t}")
            ks.type = t
            return
        kt = self.expr(ks, scope, ctx, expected=t)
        self.require_assignable(t, kt, ks, "keyset")
        if (
            self.const_value(ks, scope) is None
            and not isinstance(kt, (T.EnumT,))
            and kt is not T.ERROR
        ):
            raise fail(ks.pos, "keyset expression must be a compile-time constant")

    def enum_keyset(
        self, ks: A.Expr, a: A.Expr, b: A.Expr, t: T.Type, scope: Scope, ctx: Context
    ) -> None:
        """``a &&& b`` or ``a .. b`` for a key of serializable enum type ``t``, typed as p4c's
        TypeInference::typeSet does: an enum operand counts as its underlying bit<W>, both
        must then agree, and the set takes the left operand's type (an untyped integer on the
        left takes the right's bit<W>). So ``Kind.A &&& 0xFF00`` is a set of Kind and fits a
        Kind key, while ``((bit<16>)Kind.A) &&& 0xFF00`` is a set of bit<16>, which p4c
        refuses for it ("Cannot cast implicitly type 'bit<16>' to type 'Kind'")."""
        op = "&&&" if isinstance(ks, A.Mask) else ".."
        lt = self.expr(a, scope, ctx, expected=t)
        rt = self.expr(b, scope, ctx, expected=t)

        def bits(x: T.Type) -> T.Type:
            return x.underlying if isinstance(x, T.EnumT) and x.underlying is not None else x

        lb, rb = bits(lt), bits(rt)
        for part, pt, pb in ((a, lt, lb), (b, rt, rb)):
            if not isinstance(pb, (T.Bits, T.InfInt)):
                raise fail(part.pos, f"{op}: cannot be applied to a value of type {pt}")
        if isinstance(lb, T.Bits) and isinstance(rb, T.Bits) and lb != rb:
            raise fail(ks.pos, f"{op}: Cannot operate on values with different types {lb} and {rb}")
        elem = lt
        if isinstance(lb, T.InfInt) and isinstance(rb, T.Bits):
            self.retype_literal(a, rb)
            elem = rb
        elif isinstance(lb, T.Bits) and isinstance(rb, T.InfInt):
            self.retype_literal(b, lb)
        if not self.assignable(t, elem):
            raise fail(
                ks.pos,
                f"keyset: Cannot cast implicitly type '{elem}' to type '{t}' (a {op} set has the "
                f"type of its left operand: write {t}.MEMBER {op} ...)",
            )
