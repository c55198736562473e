"""Expressions: names, members, operators, casts, lists and struct initializers."""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .check_base import (
    COMPARE,
    EQUALITY,
    BuiltinMethod,
    Context,
    MethodRef,
    TypeValue,
    fail,
)
from .cpbuild_names import expr_text
from .errors import CompileWarning
from .symbols import Scope


class ExprsMixin:
    """Checker methods for expressions other than calls (mixed into Checker)."""

    # ================================================================= expressions
    def expr(
        self,
        e: A.Expr,
        scope: Scope,
        ctx: Context,
        expected: T.Type | None = None,
        statement: bool = False,
    ) -> T.Type:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise fail(e.pos, f"{type(e).__name__} is not allowed here")
        t = (
            method(e, scope, ctx, expected)
            if not statement
            else self.expr_Call(e, scope, ctx, expected, statement=True)
        )
        e.type = t
        return t

    def expr_IntLit(self, e: A.IntLit, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        if e.width is None:
            return T.INFINT
        low, high = (-(1 << (e.width - 1)), 1 << (e.width - 1)) if e.signed else (0, 1 << e.width)
        if e.width and not low <= e.value < high:
            # p4c's front end warns and wraps the value (8s128 is -128, 8w300 is 44)
            kind = "signed value" if e.signed else "value"
            text = e.text or f"{e.width}{'s' if e.signed else 'w'}{e.value}"
            w = CompileWarning(e.pos, "overflow", f"{text}: {kind} does not fit in {e.width} bits")
            if all((x.pos, x.message) != (w.pos, w.message) for x in self.warnings):
                self.warnings.append(w)
        return T.Bits(e.width, e.signed)

    def expr_BoolLit(self, e: A.BoolLit, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        return T.BOOL

    def expr_StringLit(self, e: A.StringLit, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        return T.STRING

    def expr_DontCare(self, e: A.DontCare, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        return T.DONTCARE

    def expr_Default(self, e: A.Default, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        return T.DONTCARE

    def expr_ThisExpr(self, e: A.ThisExpr, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        return T.DONTCARE

    def expr_TypeExpr(self, e: A.TypeExpr, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        e.resolved = self.resolve_type(e.typeref, scope)
        return TypeValue(e.resolved)

    def expr_Name(self, e: A.Name, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        if e.name == "error" and not e.dot:
            return TypeValue(T.ERROR)
        sym = (self.globals if e.dot else scope).lookup(e.name)
        if sym is None:
            raise fail(e.pos, f"{e.name}: declaration not found (undeclared identifier)")
        e.sym = sym
        if sym.kind == "type":
            return TypeValue(sym.type)
        if sym.kind in ("action", "function", "extern_function"):
            return T.CallableT(sym.kind, sym.name, sym)
        if sym.kind == "state":
            raise fail(e.pos, f"{e.name}: a parser state cannot be used as a value")
        if sym.kind == "value_set":
            raise fail(e.pos, f"{e.name}: a value_set can only be used in a select keyset")
        return sym.type

    def expr_Member(self, e: A.Member, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        bt = self.expr(e.expr, scope, ctx)
        if isinstance(bt, TypeValue):
            return self.type_member(e, bt.type)
        b = T.strip_newtype(bt)
        name = e.name
        if isinstance(b, T.StructT):
            if name in b.fields:
                return b.fields[name]
            if b.kind in ("header", "header_union") and name in (
                "isValid",
                "setValid",
                "setInvalid",
            ):
                if b.kind == "header_union" and name != "isValid":
                    raise fail(e.pos, f"{name}: not a method of header_union {b.name}")
                return BuiltinMethod(name, b)
            if name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                return BuiltinMethod(name, b)
            raise fail(e.pos, f"{name}: no such field in {b.kind} {b.name}")
        if isinstance(b, T.StackT):
            eb = T.strip_newtype(b.elem)
            is_array = not (isinstance(eb, T.StructT) and eb.kind in ("header", "header_union"))
            if is_array and not isinstance(eb, T.TypeVar):
                if name == "size":  # the spec allows it, p4c 1.2.5 does not
                    raise fail(e.pos, f"{expr_text(e)}: 'size' can only be used on header stacks")
                raise fail(e.pos, f"{name}: not a member of an array of {b.elem}")
            if name in ("next", "last"):
                if ctx.kind != "parser":
                    raise fail(
                        e.pos, f"{name}: header stack '.{name}' can only be used in a parser"
                    )
                return b.elem
            if name in ("size", "lastIndex", "nextIndex"):
                return T.Bits(32, False)
            if name in ("push_front", "pop_front"):
                return BuiltinMethod(name, b)
            raise fail(e.pos, f"{name}: no such member of header stack")
        if isinstance(b, T.ExternT):
            methods = [m for m in b.decl.methods if m.name == name and m.return_type is not None]
            if not methods:
                raise fail(e.pos, f"{name}: no method of extern {b.name} (not found)")
            return MethodRef(name, b, methods)
        if isinstance(b, T.TableT):
            if name != "apply":
                raise fail(e.pos, f"{name}: tables only have an apply method")
            return BuiltinMethod("apply", b)
        if isinstance(b, T.BlockT) and b.kind in ("parser", "control"):
            if name != "apply":
                raise fail(e.pos, f"{name}: a {b.kind} only has an apply method")
            return BuiltinMethod("apply", b)
        if isinstance(b, T.ApplyResultT):
            if name in ("hit", "miss"):
                return T.BOOL
            if name == "action_run":
                return T.ActionRunT(b.table)
            raise fail(e.pos, f"{name}: table apply results have only hit, miss and action_run")
        if isinstance(b, (T.Bits, T.Varbit)) and name in ("minSizeInBits", "minSizeInBytes"):
            return BuiltinMethod(name, b)
        raise fail(e.pos, f"{name}: no such member in a value of type {bt}")

    def type_member(self, e: A.Member, t: T.Type) -> T.Type:
        if t is T.ERROR:
            if e.name not in self.error_members:
                raise fail(e.pos, f"error.{e.name}: not found (undeclared error)")
            return T.ERROR
        b = t
        if isinstance(b, T.EnumT):
            if e.name not in b.members:
                raise fail(e.pos, f"{b.name}.{e.name}: no such enum member (not found)")
            return b
        if (
            isinstance(b, T.BlockT)
            and b.kind in ("parser", "control")
            and e.name == "apply"
            and not isinstance(b.decl, A.TypeDeclProto)
        ):
            # direct type invocation: `C.apply(...)` instantiates C anonymously (P4_16 spec 15.1)
            return BuiltinMethod("apply", b)
        if isinstance(T.strip_newtype(b), (T.StructT, T.Bits)) and e.name in (
            "minSizeInBits",
            "minSizeInBytes",
            "maxSizeInBits",
            "maxSizeInBytes",
        ):
            return BuiltinMethod(e.name, T.strip_newtype(b))
        raise fail(e.pos, f"{e.name}: no such member of type {t}")

    def expr_Index(self, e: A.Index, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        bt = T.strip_newtype(self.expr(e.expr, scope, ctx))
        it = self.expr(e.index, scope, ctx)
        if not isinstance(T.strip_newtype(it), (T.Bits, T.InfInt)):
            raise fail(e.index.pos, f"array index must be an integer, not {it}")
        if isinstance(bt, T.StackT):
            idx = self.const_value(e.index, scope)
            if isinstance(idx, int) and not isinstance(idx, bool) and not 0 <= idx < bt.size:
                raise fail(
                    e.index.pos, f"index {idx} out of bounds for header stack of size {bt.size}"
                )
            return bt.elem
        if isinstance(bt, T.TupleT):
            idx = self.const_value(e.index, scope)
            if not isinstance(idx, int) or not 0 <= idx < len(bt.elems):
                raise fail(e.index.pos, "tuple index must be a constant within bounds")
            return bt.elems[idx]
        raise fail(e.pos, f"cannot index a value of type {bt}")

    def expr_Slice(self, e: A.Slice, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        bt = T.strip_newtype(self.expr(e.expr, scope, ctx))
        self.expr(e.hi, scope, ctx)
        self.expr(e.lo, scope, ctx)
        hi = self.const_value(e.hi, scope)
        lo = self.const_value(e.lo, scope)
        if (
            not isinstance(hi, int)
            or not isinstance(lo, int)
            or isinstance(hi, bool)
            or isinstance(lo, bool)
        ):
            raise fail(e.pos, "bit slice indices must be compile-time constants")
        if lo < 0 or hi < 0:
            raise fail(e.pos, f"negative bit slice index [{hi}:{lo}]")
        if hi < lo:
            raise fail(e.pos, f"bit slice [{hi}:{lo}]: high index is smaller than low index")
        if isinstance(bt, T.Bits):
            if hi >= bt.width:
                raise fail(e.pos, f"bit slice [{hi}:{lo}] out of range for {bt}")
        elif not isinstance(bt, T.InfInt):
            raise fail(e.pos, f"cannot slice a value of type {bt}")
        e.hi_value, e.lo_value = hi, lo
        return T.Bits(hi - lo + 1, False)

    def expr_Unary(self, e: A.Unary, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        t = self.expr(e.expr, scope, ctx, expected=expected)
        b = t
        if e.op == "!":
            if b is not T.BOOL:
                raise fail(e.pos, f"operator ! needs a bool, not {t}")
            return T.BOOL
        if e.op == "~":
            if not isinstance(b, (T.Bits, T.InfInt)):
                raise fail(e.pos, f"operator ~ cannot be applied to {t}")
            return b
        if not isinstance(b, (T.Bits, T.InfInt)):
            raise fail(e.pos, f"operator - cannot be applied to {t}")
        return b

    def expr_Binary(self, e: A.Binary, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                st = self.expr(side, scope, ctx, expected=T.BOOL)
                if st is not T.BOOL:
                    raise fail(side.pos, f"operator {op} needs bool operands, not {st}")
            return T.BOOL
        lt = self.expr(e.left, scope, ctx)
        rt = self.expr(e.right, scope, ctx, expected=lt if op not in ("<<", ">>", "++") else None)
        if op in ("<<", ">>"):
            return self.shift(e, lt, rt, scope)
        if op == "++":
            lb, rb = T.strip_newtype(lt), T.strip_newtype(rt)
            if isinstance(lb, T.InfInt) or isinstance(rb, T.InfInt):
                raise fail(
                    e.pos,
                    "concatenation (++) needs operands with a known width; cast the integer literal",
                )
            if not isinstance(lb, T.Bits) or not isinstance(rb, T.Bits):
                raise fail(e.pos, f"concatenation (++) cannot be applied to {lt} and {rt}")
            return T.Bits(lb.width + rb.width, lb.signed)
        if op in EQUALITY:
            _nested_struct_inits_typed(e.left)
            _nested_struct_inits_typed(e.right)
            t = self.unify_operands(
                e,
                lt,
                rt,
                allow=lambda b: (
                    not isinstance(b, (T.ExternT, T.BlockT, T.TableT, T.CallableT))
                    and b is not T.VOID
                ),
            )
            return T.BOOL
        if op in COMPARE:
            t = self.unify_operands(e, lt, rt, allow=lambda b: isinstance(b, (T.Bits, T.InfInt)))
            return T.BOOL
        t = self.unify_operands(e, lt, rt, allow=lambda b: isinstance(b, (T.Bits, T.InfInt)))
        if op in ("/", "%"):
            if isinstance(t, T.Bits) and t.signed:
                raise fail(e.pos, f"operator {op} is not supported on signed values ({t})")
            rv = self.const_value(e.right, scope)
            if rv == 0 and rv is not False:
                raise fail(e.right.pos, "division by zero")
            if isinstance(t, T.InfInt):
                lv = self.const_value(e.left, scope)
                if (isinstance(lv, int) and lv < 0) or (isinstance(rv, int) and rv < 0):
                    raise fail(e.pos, f"operator {op} is not defined for negative integers")
        if op in ("|+|", "|-|") and isinstance(t, T.InfInt):
            raise fail(e.pos, f"saturating operator {op} needs operands with a known width")
        return t

    def unify_operands(self, e: A.Binary, lt: T.Type, rt: T.Type, allow: Any) -> T.Type:
        lt, rt = self.enum_operands(e.op, lt, rt)
        lb, rb = lt, rt
        if isinstance(lb, T.InfInt) and isinstance(T.strip_newtype(rb), T.Bits):
            self.retype_literal(e.left, rb)
            lb = rb
        elif isinstance(rb, T.InfInt) and isinstance(T.strip_newtype(lb), T.Bits):
            self.retype_literal(e.right, lb)
            rb = lb
        elif (
            isinstance(lb, T.InfInt)
            and isinstance(rb, T.EnumT)
            and rb.underlying
            and e.op in EQUALITY
        ):
            raise fail(e.pos, f"cannot compare an integer with enum {rb}; cast it")
        base = T.strip_newtype(lb)
        if not allow(base):
            raise fail(e.pos, f"operator {e.op} cannot be applied to values of type {lt}")
        if (
            isinstance(lb, T.TupleT)
            and lb.is_list_expr
            or isinstance(rb, T.TupleT)
            and rb.is_list_expr
        ):
            if self.assignable(lb, rb) or self.assignable(rb, lb):
                return lb
        if (
            isinstance(lb, T.StructT)
            and isinstance(rb, T.StructT)
            and (lb.anonymous or rb.anonymous)
        ):
            if self.assignable(lb, rb) or self.assignable(rb, lb):
                return lb
        if not (lb == rb or lb is rb):
            if (
                isinstance(lb, T.StructT)
                and isinstance(rb, T.StructT)
                and lb.decl is rb.decl
                and lb.name == rb.name
            ):
                return lb
            if isinstance(lb, T.TypeVar) or isinstance(rb, T.TypeVar):
                return lb
            raise fail(
                e.pos,
                f"operator {e.op}: operands have different types {lt} and {rt} (type mismatch; cast one of them)",
            )
        return lb

    @staticmethod
    def enum_operands(op: str, lt: T.Type, rt: T.Type) -> tuple[T.Type, T.Type]:
        """Serializable enum operands converted to their underlying type, as P4_16 (and p4c)
        do implicitly: always for arithmetic and bitwise operators (``32w1 | E.A``), and for
        comparisons when the other side is a bit type (``hdr.etherType == E.IPV4``); two
        values of one enum type compare as enums."""

        def under(t: T.Type) -> T.Bits | None:
            return t.underlying if isinstance(t, T.EnumT) else None

        lu, ru = under(lt), under(rt)
        if op in EQUALITY or op in COMPARE:
            if lu is not None and isinstance(rt, T.Bits):
                lt = lu
            elif ru is not None and isinstance(lt, T.Bits):
                rt = ru
            return lt, rt
        return (lu or lt), (ru or rt)

    def shift(self, e: A.Binary, lt: T.Type, rt: T.Type, scope: Scope) -> T.Type:
        lb, rb = T.strip_newtype(lt), T.strip_newtype(rt)
        if isinstance(rb, T.EnumT) and rb.underlying is not None:
            # p4c 1.2.5 converts a serializable enum amount to its bit<W> (checked with
            # p4c-bm2-ss by bench/p4c_diff.py)
            rb = rb.underlying
        if not isinstance(lb, (T.Bits, T.InfInt)):
            raise fail(e.pos, f"shift cannot be applied to {lt}")
        if not isinstance(rb, (T.Bits, T.InfInt)):
            raise fail(e.pos, f"shift amount must be an integer, not {rt}")
        if isinstance(rb, T.Bits) and rb.signed:
            raise fail(e.right.pos, "shift amount must be unsigned")
        amount = self.const_value(e.right, scope)
        if isinstance(amount, int) and amount < 0:
            raise fail(e.right.pos, f"shift by a negative amount {amount}")
        if isinstance(lb, T.InfInt) and amount is None:
            raise fail(
                e.pos, "left operand of a shift by a non-constant amount needs a known width"
            )
        if isinstance(rb, T.InfInt):
            e.right.type = T.Bits(32) if amount is None else T.INFINT
        return lb

    def expr_Mux(self, e: A.Mux, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        ct = self.expr(e.cond, scope, ctx, expected=T.BOOL)
        if ct is not T.BOOL:
            raise fail(e.cond.pos, f"condition of ?: must be a bool, not {ct}")
        at = self.expr(e.then, scope, ctx, expected=expected)
        bt = self.expr(e.other, scope, ctx, expected=expected)
        if isinstance(at, T.InfInt) and not isinstance(bt, T.InfInt):
            self.require_assignable(bt, at, e.then, "?: branch")
            return bt
        if isinstance(bt, T.InfInt) and not isinstance(at, T.InfInt):
            self.require_assignable(at, bt, e.other, "?: branch")
            return at
        if not (self.assignable(at, bt) and self.assignable(bt, at)):
            raise fail(e.pos, f"?: branches have different types {at} and {bt}")
        if isinstance(at, T.InfInt) and self.const_value(e.cond, scope) is None:
            if isinstance(expected, T.Bits):
                return expected
            raise fail(
                e.pos,
                "?: with untyped integer branches needs a constant condition or a known width",
            )
        return at

    def expr_Cast(self, e: A.Cast, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        target = self.resolve_type(e.typeref, scope)
        st = self.expr(e.expr, scope, ctx, expected=target)
        if isinstance(target, T.InfInt) and isinstance(T.strip_newtype(st), T.Bits):
            # P4_16 1.2.4: bit<W>/int<W> cast to int only when the value is compile-time known
            if self.const_value(e.expr, scope) is None:
                # p4c 1.2.5 accepts a run-time value here, and its BMv2 JSON masks it to no
                # bits ((int)x is x & 0: checked on BMv2 with p4c-bmv2-stf), so it is 0
                e.expr = A.IntLit(e.expr.pos, 0, text="0")
                e.expr.type = T.INFINT
            return target
        if not self.castable(st, target):
            raise fail(e.pos, f"illegal cast from {st} to {target}")
        if isinstance(st, T.InfInt) and isinstance(target, T.Bits):
            self.retype_literal(e.expr, target)
        return target

    def castable(self, src: T.Type, dst: T.Type) -> bool:
        if self.assignable(dst, src) and not isinstance(src, T.InfInt):
            return True
        s, d = src, dst
        if isinstance(s, T.NewType) or isinstance(d, T.NewType):
            return self.castable(T.strip_newtype(s), T.strip_newtype(d))
        if isinstance(s, T.Bits) and isinstance(d, T.Bits):
            return True  # any width and signedness change is an explicit cast in P4
        if isinstance(s, T.InfInt):
            return (
                isinstance(d, (T.Bits, T.InfInt))
                or d is T.BOOL
                or (isinstance(d, T.EnumT) and d.underlying is not None)
            )
        if s is T.BOOL and isinstance(d, T.Bits):
            return d.width == 1 and not d.signed
        if isinstance(s, T.Bits) and d is T.BOOL:
            return s.width == 1 and not s.signed
        if isinstance(s, T.EnumT) and s.underlying is not None and isinstance(d, T.Bits):
            return True
        if isinstance(s, T.Bits) and isinstance(d, T.EnumT) and d.underlying is not None:
            return True
        if isinstance(s, T.EnumT) and isinstance(d, T.EnumT):
            return s is d
        if isinstance(d, (T.StructT, T.TupleT)) and isinstance(s, (T.TupleT, T.StructT)):
            return self.assignable(d, s)
        return False

    def expr_ListExpr(self, e: A.ListExpr, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        exp_elems: list[Any] = [None] * len(e.items)
        if isinstance(expected, T.StructT) and len(expected.fields) == len(e.items):
            exp_elems = list(expected.fields.values())
        elif isinstance(expected, T.TupleT) and len(expected.elems) == len(e.items):
            exp_elems = list(expected.elems)
        elif isinstance(expected, T.StackT):
            exp_elems = [expected.elem] * len(e.items)
        types = []
        for item, ex in zip(e.items, exp_elems, strict=True):
            it = self.expr(item, scope, ctx, expected=ex)
            if ex is not None and isinstance(it, T.InfInt):
                self.require_assignable(ex, it, item, "list element")
                it = ex
            types.append(it)
        return T.TupleT(tuple(types), is_list_expr=True)

    def expr_StructInit(self, e: A.StructInit, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        fields: dict[str, T.Type] = {}
        exp_fields = expected.fields if isinstance(expected, T.StructT) else {}
        for name, value in e.fields:
            if name in fields:
                raise fail(value.pos, f"{name}: duplicate field in initializer")
            ex = exp_fields.get(name)
            vt = self.expr(value, scope, ctx, expected=ex)
            if ex is not None and isinstance(vt, T.InfInt):
                self.require_assignable(ex, vt, value, "field initializer")
                vt = ex
            fields[name] = vt
        return T.StructT("struct", "struct initializer", fields, None, anonymous=True)

    def expr_Mask(self, e: A.Mask, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        raise fail(e.pos, "&&& can only be used in a keyset")

    def expr_Range(self, e: A.Range, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        lt = self.expr(e.lo, scope, ctx)
        rt = self.expr(e.hi, scope, ctx)
        t = lt if not isinstance(lt, T.InfInt) else rt
        return t

    def expr_SelectExpr(self, e: A.SelectExpr, scope: Scope, ctx: Context, expected: Any) -> T.Type:
        raise fail(e.pos, "select can only be used in a transition")


def _nested_struct_inits_typed(operand: A.Expr) -> None:
    """p4c 1.2.5 cannot type an untyped `{a = ..}` nested in a struct initializer that is an
    operand of == or != (`n == (nest_t){ p = { a = 1 }, c = 7 }`): it asks for the type to be
    written, although the same initializer is fine in a declaration."""
    if isinstance(operand, A.Cast):  # (T){ ... }
        operand = operand.expr
    if not isinstance(operand, A.StructInit):
        return
    for _, value in operand.fields:
        if isinstance(value, A.StructInit) and value.typeref is None:
            raise fail(
                value.pos,
                f"{_init_text(value)}: could not infer a type for expression; "
                "please specify it explicitly",
            )
        _nested_struct_inits_typed(value)


def _init_text(e: A.Expr) -> str:
    """`{ a = 1, b = 1 }` as p4c prints a struct initializer (expr_text has no form for it)."""
    if isinstance(e, A.StructInit):
        return "{ " + ", ".join(f"{n} = {_init_text(v)}" for n, v in e.fields) + " }"
    return expr_text(e)
