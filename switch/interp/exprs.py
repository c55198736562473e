"""Expressions to Python source: values, references to storage, and aggregates.

Conventions of the generated code: ``bit<W>`` values are Python ints in [0, 2^W); ``int<W>``
values are Python ints in [-2^(W-1), 2^(W-1)); bool is a Python bool; ``error`` and enums are
ints (an enum's member index, or its value when it is serializable); varbit is the pair
``(width, value)``. Aggregates (structs, headers, unions, stacks, tuples) are never built as
objects: they are lists of leaf expressions in ``Layout.slots`` order.

Expressions are compiled inside a statement: anything that needs statements of its own (a
function call with out parameters, a dynamic index) is emitted before the statement as
temporaries, left to right, which keeps P4's evaluation order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.checker import Checker, TypeValue
from .emit import tuple_code
from .layout import (
    HeaderL,
    Layout,
    PyLocal,
    Scalar,
    StackL,
    StructL,
    TupleL,
    UnionL,
    is_aggregate,
    leaf_types,
)

CONSTANT = re.compile(r"^(?:-?\d+|True|False|_[a-z]+\d+)$")  # literals and temporaries
SIMPLE = re.compile(r"^(?:[A-Za-z_][A-Za-z_0-9]*|S\[\d+\]|-?\d+|True|False)$")


class CodegenError(Exception):
    """The program uses something the interpreter cannot run; carries the source position."""

    def __init__(self, pos: Any, message: str) -> None:
        super().__init__(f"{pos}: error: {message}")
        self.pos = pos
        self.message = message


@dataclass
class Ref:
    """A place in storage, possibly inside a header stack element chosen at run time."""

    layout: Layout
    stack: StackL | None = None  # for a dynamic element: the stack ...
    index: str | None = None  # ... and the Python name holding the element index

    def member(self, name: str) -> Ref:
        lay = self.layout
        if isinstance(lay, HeaderL) and name in lay.structs:
            return Ref(lay.structs[name], self.stack, self.index)
        if isinstance(lay, (HeaderL, StructL)):
            return Ref(lay.fields[name], self.stack, self.index)
        if isinstance(lay, UnionL):
            return Ref(lay.members[name], self.stack, self.index)
        raise KeyError(name)


def mask(width: int) -> int:
    return (1 << width) - 1


def wrap_const(v: int, t: T.Type) -> int:
    b = T.strip_newtype(t)
    if isinstance(b, T.EnumT) and b.underlying is not None:
        b = b.underlying
    if isinstance(b, T.Bits):
        v &= mask(b.width)
        if b.signed and b.width and v >> (b.width - 1):
            v -= 1 << b.width
    return v


def bits_of(t: T.Type) -> T.Bits | None:
    """The bit type a value is computed in (serializable enums compute as their underlying)."""
    b = T.strip_newtype(t)
    if isinstance(b, T.EnumT) and b.underlying is not None:
        return b.underlying
    return b if isinstance(b, T.Bits) else None


def wrap_code(code: str, t: T.Type) -> str:
    """Bring a Python integer expression into the range of ``t``."""
    b = bits_of(t)
    if b is None:
        return code
    if not b.signed:
        return f"(({code}) & {mask(b.width)})"
    h = 1 << (b.width - 1)
    return f"(((({code}) + {h}) & {mask(b.width)}) - {h})"


class ExprGen:
    """Mixin: needs ``em`` (Emitter), ``env``, ``tbind``, ``const_name`` and ``error_code``."""

    em: Any
    env: Any
    tbind: dict[str, T.Type]

    # ------------------------------------------------------------------ helpers
    def ty(self, t: T.Type) -> T.Type:
        """Substitute the type variables bound in the current instantiation."""
        if isinstance(t, T.TypeVar) and t.name in self.tbind:
            return self.ty(self.tbind[t.name])
        if isinstance(t, T.StackT) and isinstance(t.elem, T.TypeVar):
            return T.StackT(self.ty(t.elem), t.size)
        if isinstance(t, T.TupleT) and any(isinstance(x, T.TypeVar) for x in t.elems):
            return T.TupleT(tuple(self.ty(x) for x in t.elems), t.is_list_expr)
        return t

    def simple(self, code: str, hint: str = "t") -> str:
        """``code`` itself when it is cheap and side-effect free, else a temporary holding it."""
        if SIMPLE.match(code):
            return code
        tmp = self.em.temp(hint)
        self.em.line(f"{tmp} = {code}")
        return tmp

    def in_order(self, thunks: list[Any]) -> list[list[str]]:
        """Compile several expressions left to right, keeping P4's evaluation order.

        When a later one needs statements (a call with side effects), the values of the
        earlier ones are captured in temporaries first, so the call cannot change them.
        """
        results: list[list[str]] = []
        for thunk in thunks:
            saved = self.em.lines
            self.em.lines = []
            try:
                r = thunk()
            finally:
                new, self.em.lines = self.em.lines, saved
            if new:
                for res in results:
                    for i, code in enumerate(res):
                        if not CONSTANT.match(code):
                            tmp = self.em.temp("o")
                            self.em.line(f"{tmp} = {code}")
                            res[i] = tmp
                self.em.lines.extend(new)
            results.append(list(r) if isinstance(r, list) else [r])
        return results

    def folded(self, e: A.Expr) -> Any:
        if isinstance(e, (A.IntLit, A.BoolLit)):
            return e.value
        if isinstance(e, (A.Binary, A.Unary, A.Cast, A.Name, A.Slice, A.Mux, A.Member, A.Call)):
            try:
                return Checker.const_value_static(e)
            except Exception:  # noqa: BLE001 - folding is an optimisation only
                return None
        return None

    def leaf(self, ref: Ref, slot_layout: Layout) -> str:
        if isinstance(slot_layout, PyLocal):
            return slot_layout.name
        assert isinstance(slot_layout, Scalar)
        return self.slot_target(ref, slot_layout.slot)

    def slot_target(self, ref: Ref, slot: int) -> str:
        if ref.stack is None:
            return f"S[{slot}]"
        elems = [*ref.stack.elems, ref.stack.scratch]
        pos = elems[0].slots().index(slot)
        table = tuple(e.slots()[pos] for e in elems)
        return f"S[{self.const_name(table, 'ix')}[{ref.index}]]"

    def targets(self, ref: Ref) -> list[str]:
        lay = ref.layout
        if isinstance(lay, PyLocal):
            return [lay.name]
        return [self.slot_target(ref, s) for s in lay.slots()]

    # ------------------------------------------------------------------ references
    def ref(self, e: A.Expr) -> Ref:
        """The storage an l-value (or a readable path) names."""
        if isinstance(e, A.Name):
            b = self.env.lookup(e)
            if isinstance(b, Layout):
                return Ref(b)
            raise CodegenError(e.pos, f"{e.name}: not a storage location")
        if isinstance(e, A.Member):
            base = self.ref(e.expr)
            lay = base.layout
            if isinstance(lay, StackL) and e.name in ("next", "last"):
                return self.stack_cursor(base, e.name, e.pos)
            return base.member(e.name)
        if isinstance(e, A.Index):
            base = self.ref(e.expr)
            lay = base.layout
            if isinstance(lay, StackL):
                k = self.folded(e.index)
                if isinstance(k, int) and not isinstance(k, bool):
                    return Ref(lay.elems[k], base.stack, base.index)
                raw = self.simple(self.val(e.index), "i")
                n = len(lay.elems)
                idx = self.em.temp("i")
                self.em.line(f"{idx} = {raw} if {raw} < {n} else {n}")
                if lay.scratch is None:
                    lay.scratch = self.storage.alloc(lay.type.elem, "$stack_scratch", True)
                return Ref(lay.elems[0], lay, idx)
            if isinstance(lay, TupleL):
                return Ref(lay.elems[self.folded(e.index)], base.stack, base.index)
        raise CodegenError(e.pos, "expression is not a storage location")

    def stack_cursor(self, base: Ref, which: str, pos: Any) -> Ref:
        lay = base.layout
        assert isinstance(lay, StackL)
        idx = self.em.temp("i")
        if which == "next":
            self.em.line(f"{idx} = S[{lay.next_index}]")
            self.em.line(
                f"if {idx} >= {len(lay.elems)}: raise ParserError({self.error_code('StackOutOfBounds')})"
            )
        else:
            self.em.line(f"{idx} = S[{lay.next_index}] - 1")
            self.em.line(f"if {idx} < 0: raise ParserError({self.error_code('StackOutOfBounds')})")
        if lay.scratch is None:
            lay.scratch = self.storage.alloc(lay.type.elem, "$stack_scratch", True)
        return Ref(lay.elems[0], lay, idx)

    def is_ref(self, e: A.Expr) -> bool:
        if isinstance(e, A.Name):
            return isinstance(self.env.lookup(e, None), Layout)
        if isinstance(e, A.Member):
            return self.is_ref(e.expr) and not isinstance(
                T.strip_newtype(self.ty(e.expr.type)), (T.ApplyResultT,)
            )
        if isinstance(e, A.Index):
            return self.is_ref(e.expr)
        return False

    # ------------------------------------------------------------------ aggregates
    def agg(self, e: A.Expr, want: T.Type | None = None) -> list[str]:
        """Leaf expressions of an aggregate value, shaped as ``want`` (default: its own type)."""
        t = self.ty(want if want is not None else e.type)
        b = T.strip_newtype(t)
        if isinstance(e, (A.ListExpr, A.StructInit)):
            items = [v for _, v in e.fields] if isinstance(e, A.StructInit) else list(e.items)
            if isinstance(b, T.StructT):
                if isinstance(e, A.StructInit):
                    by_name = dict(e.fields)
                    items = [by_name[f] for f in b.fields]
                out = ["True"] if b.kind == "header" else []
                types = list(b.fields.values())
            elif isinstance(b, T.StackT):
                out, types = [], [b.elem] * len(items)
            elif isinstance(b, T.TupleT):
                out, types = [], list(b.elems)
            else:
                out, types = [], [item.type for item in items]
            parts = self.in_order(
                [
                    lambda item=item, t=t: self.value_as(item, t)
                    for item, t in zip(items, types, strict=True)
                ]
            )
            out += [c for part in parts for c in part]
            if isinstance(b, T.StackT):
                out.append(str(len(items)))
            return out
        if self.is_ref(e):
            return self.targets(self.ref(e))
        if isinstance(e, A.Mux):
            cond = self.val(e.cond)
            n = len(leaf_types(t))
            tmp = self.em.temp("m")
            self.em.line(f"if {cond}:")
            with self.em.indent():
                self.em.line(f"{tmp} = {tuple_code(self.value_as(e.then, t))}")
            self.em.line("else:")
            with self.em.indent():
                self.em.line(f"{tmp} = {tuple_code(self.value_as(e.other, t))}")
            return [f"{tmp}[{i}]" for i in range(n)]
        if isinstance(e, A.Cast):
            return self.agg(e.expr, t)
        if isinstance(e, A.Name):
            b2 = self.env.lookup(e, None)
            if isinstance(b2, ConstBinding):
                return self.agg(b2.expr, t)
        if isinstance(e, A.Call):
            code = self.call_value(e)
            tmp = self.simple(code, "r")
            return [f"{tmp}[{i}]" for i in range(len(leaf_types(t)))]
        raise CodegenError(e.pos, f"unsupported aggregate expression {type(e).__name__}")

    def value_as(self, e: A.Expr, t: T.Type) -> list[str]:
        """Leaves of ``e`` when stored into a place of type ``t``."""
        if is_aggregate(self.ty(t)):
            return self.agg(e, t)
        return [self.val(e)]

    def agg_eq(self, a: list[str], b: list[str], t: T.Type) -> str:
        """Equality of two aggregates: invalid headers are equal whatever their fields hold."""
        parts: list[str] = []
        self._eq_parts(iter(a), iter(b), self.ty(t), parts)
        return "(" + " and ".join(parts or ["True"]) + ")"

    def _eq_parts(self, a: Any, b: Any, t: T.Type, parts: list[str]) -> None:
        bt = T.strip_newtype(t)
        if isinstance(bt, T.StructT) and bt.kind == "header":
            va, vb = next(a), next(b)
            n = len(leaf_types(bt)) - 1  # struct-typed fields count by their leaves
            fa = [next(a) for _ in range(n)]
            fb = [next(b) for _ in range(n)]
            same = " and ".join(f"{x} == {y}" for x, y in zip(fa, fb, strict=True)) or "True"
            parts.append(f"({va} == {vb} and (not {va} or ({same})))")
        elif isinstance(bt, T.StructT):
            for ft in bt.fields.values():
                self._eq_parts(a, b, ft, parts)
        elif isinstance(bt, T.StackT):
            for _ in range(bt.size):
                self._eq_parts(a, b, bt.elem, parts)
            next(a), next(b)  # nextIndex does not take part in equality
        elif isinstance(bt, T.TupleT):
            for et in bt.elems:
                self._eq_parts(a, b, et, parts)
        else:
            parts.append(f"{next(a)} == {next(b)}")

    # ------------------------------------------------------------------ scalar values
    def val(self, e: A.Expr) -> str:
        if not isinstance(e, A.Name):  # names go through their binding (constants included)
            v = self.folded(e)
            if isinstance(v, bool):
                return "True" if v else "False"
            if isinstance(v, int):
                return str(wrap_const(v, self.ty(e.type)))
        method = getattr(self, "v_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(e.pos, f"unsupported expression {type(e).__name__}")
        return method(e)

    def v_IntLit(self, e: A.IntLit) -> str:
        return str(wrap_const(e.value, self.ty(e.type)))

    def v_BoolLit(self, e: A.BoolLit) -> str:
        return "True" if e.value else "False"

    def v_StringLit(self, e: A.StringLit) -> str:
        return repr(e.value)

    def v_Name(self, e: A.Name) -> str:
        b = self.env.lookup(e)
        if isinstance(b, PyLocal):
            return b.name
        if isinstance(b, Scalar):
            return f"S[{b.slot}]"
        if isinstance(b, ConstBinding):
            return self.const_value_code(b, e)
        raise CodegenError(e.pos, f"{e.name}: cannot be used as a value here")

    def const_value_code(self, b: ConstBinding, e: A.Expr) -> str:
        v = b.value
        t = self.ty(b.type)
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, str):  # an enum member or error name
            return str(self.member_value(T.strip_newtype(t), v))
        if isinstance(v, int):
            return str(wrap_const(v, t))
        return self.val(b.expr)

    def member_value(self, t: T.Type, name: str) -> int:
        if t is T.ERROR:
            return self.error_code(name)
        if isinstance(t, T.EnumT):
            if t.underlying is not None:
                return wrap_const(t.values[name], t.underlying)
            return t.members.index(name)
        raise KeyError(name)

    def v_Member(self, e: A.Member) -> str:
        bt = e.expr.type
        if isinstance(bt, TypeValue) or (isinstance(e.expr, A.Name) and e.expr.name == "error"):
            target = bt.type if isinstance(bt, TypeValue) else T.ERROR
            return str(self.member_value(T.strip_newtype(target), e.name))
        b = T.strip_newtype(self.ty(bt))
        if isinstance(b, T.ApplyResultT):
            code = self.table_apply(e.expr)
            if e.name == "hit":
                return f"{code}[0]"
            if e.name == "miss":
                return f"(not {code}[0])"
            return f"{code}[1]"
        if isinstance(b, T.StackT):
            lay = self.ref(e.expr).layout
            assert isinstance(lay, StackL)
            if e.name == "size":
                return str(b.size)
            if e.name == "nextIndex":
                return f"S[{lay.next_index}]"
            if e.name == "lastIndex":
                return f"((S[{lay.next_index}] - 1) & 4294967295)"
        if self.is_ref(e):
            ref = self.ref(e)
            return self.leaf(ref, ref.layout)
        if isinstance(b, T.StructT):
            # a field of a computed struct value (a call's result, a constant)
            leaves = self.agg(e.expr, b)
            start = 0
            for fname, ft in b.fields.items():
                n = len(leaf_types(ft))
                if fname == e.name:
                    if b.kind == "header":
                        return leaves[1 + start]
                    return leaves[start]
                start += n
        raise CodegenError(e.pos, f"unsupported member access .{e.name}")

    def v_Index(self, e: A.Index) -> str:
        if self.is_ref(e):
            ref = self.ref(e)
            return self.leaf(ref, ref.layout)
        bt = T.strip_newtype(self.ty(e.expr.type))
        if isinstance(bt, T.TupleT):
            k = self.folded(e.index)
            leaves = self.agg(e.expr)
            start = sum(len(leaf_types(x)) for x in bt.elems[:k])
            return leaves[start]
        raise CodegenError(e.pos, "unsupported index expression")

    def v_Slice(self, e: A.Slice) -> str:
        hi, lo = e.hi_value, e.lo_value
        v = self.val(e.expr)
        w = hi - lo + 1
        return f"(({v} >> {lo}) & {mask(w)})" if lo else f"({v} & {mask(w)})"

    def v_Unary(self, e: A.Unary) -> str:
        v = self.val(e.expr)
        t = self.ty(e.type)
        if e.op == "!":
            return f"(not {v})"
        b = bits_of(t)
        if e.op == "~":
            if b is None:
                return f"(~{v})"
            return f"({v} ^ {mask(b.width)})" if not b.signed else f"(~{v})"
        return wrap_code(f"-{v}", t)

    def v_Mux(self, e: A.Mux) -> str:
        c = self.val(e.cond)
        a, b = self.branch(e.then), self.branch(e.other)
        if a[0] or b[0]:
            tmp = self.em.temp("m")
            self.em.line(f"if {c}:")
            with self.em.indent():
                self.em.lines += a[0]
                self.em.line(f"{tmp} = {a[1]}")
            self.em.line("else:")
            with self.em.indent():
                self.em.lines += b[0]
                self.em.line(f"{tmp} = {b[1]}")
            return tmp
        return f"({a[1]} if {c} else {b[1]})"

    def branch(self, e: A.Expr) -> tuple[list[str], str]:
        """Compile ``e`` aside: its pre-statements (indented one level deeper) and its value."""
        saved = self.em.lines
        self.em.lines = []
        self.em.level += 1
        try:
            code = self.val(e)
            return self.em.lines, code
        finally:
            self.em.level -= 1
            self.em.lines = saved

    def v_Cast(self, e: A.Cast) -> str:
        src = T.strip_newtype(self.ty(e.expr.type))
        dst = T.strip_newtype(self.ty(e.type))
        v = self.val(e.expr)
        if dst is T.BOOL:
            return f"({v} != 0)" if src is not T.BOOL else v
        if src is T.BOOL:
            return f"(1 if {v} else 0)"
        if isinstance(src, T.InfInt):
            return wrap_code(v, dst)
        sb, db = bits_of(src), bits_of(dst)
        if sb is not None and db is not None:
            if sb == db:
                return v
            if not db.signed and not sb.signed and db.width >= sb.width:
                return v
            return wrap_code(v, dst)
        return v

    def v_Binary(self, e: A.Binary) -> str:
        op = e.op
        if op in ("&&", "||"):
            a = self.val(e.left)
            pre, b = self.branch(e.right)
            if pre:
                tmp = self.em.temp("c")
                self.em.line(f"{tmp} = {a}")
                self.em.line(f"if {'' if op == '&&' else 'not '}{tmp}:")
                with self.em.indent():
                    self.em.lines += pre
                    self.em.line(f"{tmp} = {b}")
                return tmp
            return f"({a} {'and' if op == '&&' else 'or'} {b})"
        lt = self.ty(e.left.type)
        if op in ("==", "!=") and is_aggregate(lt):
            a, b = self.in_order([lambda: self.agg(e.left), lambda: self.agg(e.right, lt)])
            eq = self.agg_eq(a, b, lt)
            return eq if op == "==" else f"(not {eq})"
        (a,), (b,) = self.in_order([lambda: self.val(e.left), lambda: self.val(e.right)])
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        t = self.ty(e.type)
        bt = bits_of(t)
        if bt is None:  # arbitrary-precision int (only reached when not folded)
            pyop = {"/": "//", "|+|": "+", "|-|": "-"}.get(op, op)
            return f"({a} {pyop} {b})"
        w, m = bt.width, mask(bt.width)
        if op == "++":
            rt = bits_of(self.ty(e.right.type))
            assert rt is not None
            lb = bits_of(lt)
            left = f"({a} & {mask(lb.width)})" if lb is not None and lb.signed else a
            code = f"(({left} << {rt.width}) | ({b} & {mask(rt.width)}))"
            return wrap_code(code, t) if bt.signed else code
        if op in ("+", "-", "*"):
            return wrap_code(f"{a} {op} {b}", t)
        if op in ("/", "%"):
            pyop = "//" if op == "/" else "%"
            zero = self.folded(e.left)
            if isinstance(zero, int) and not isinstance(zero, bool) and zero == 0:
                # p4c's StrengthReduction rewrites 0 / x and 0 % x as 0, so BMv2 gives 0
                # even where x is 0: no fault here either (x is still evaluated, for calls)
                return f"(0 * {b})"
            if isinstance(self.folded(e.right), int):
                return f"({a} {pyop} {b})"
            b = self.simple(b, "d")  # a run-time zero divisor is a fault, as it aborts BMv2
            where = self.const_name(str(e.pos), "pos")
            return f"(({a} {pyop} {b}) if {b} else DIVISION_BY_ZERO({where}))"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "<<":
            amount = self.folded(e.right)
            if isinstance(amount, int):
                return "0" if amount >= w else wrap_code(f"{a} << {amount}", t)
            b = self.simple(b, "s")
            return f"({wrap_code(f'{a} << {b}', t)} if {b} < {w} else 0)"
        if op == ">>":
            amount = self.folded(e.right)
            if isinstance(amount, int) and amount >= w:
                return "(-1 if " + a + " < 0 else 0)" if bt.signed else "0"
            return f"({a} >> {b})"
        if op in ("|+|", "|-|"):
            pyop = "+" if op == "|+|" else "-"
            if bt.signed:
                h = 1 << (w - 1)
                return f"min(max({a} {pyop} {b}, {-h}), {h - 1})"
            return f"min({a} + {b}, {m})" if op == "|+|" else f"max({a} - {b}, 0)"
        raise CodegenError(e.pos, f"unsupported operator {op}")

    def v_Call(self, e: A.Call) -> str:
        return self.call_value(e)

    def v_TypeExpr(self, e: A.TypeExpr) -> str:
        raise CodegenError(e.pos, "a type is not a value")


@dataclass
class ConstBinding:
    """A compile-time constant (or a constructor argument) bound to a name."""

    value: Any  # folded int/bool/member name, or None when only ``expr`` says it
    type: T.Type
    expr: A.Expr | None = None
