"""Statements and calls to Python source (the mixin next to ``ExprGen``).

Actions and functions become Python functions ``f(S, P, *args)``: scalar ``in`` and
directionless parameters are Python arguments, every other parameter has its own slots that
the caller copies in before the call and out after it (P4's copy-in/copy-out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from .emit import tuple_code
from .exprs import CodegenError, ConstBinding, Ref, mask, wrap_code
from .layout import HeaderL, Layout, PyLocal, StackL, StructL, UnionL, is_aggregate
from .tables import NO_ACTION


@dataclass
class CallableInfo:
    """A generated action or function: its Python name and where its parameters live."""

    fn: str
    decl: Any
    params: list[tuple[A.Param, Layout]]
    cp_name: str = ""
    data_params: list[A.Param] = field(default_factory=list)  # directionless (control plane)


class StmtGen:
    """Mixin of ``ProgramBuilder``, which provides callable_info, action_run_id, table_apply."""

    em: Any
    env: Any

    # ------------------------------------------------------------------ statements
    def stmt(self, s: A.Stmt) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(s.pos, f"unsupported statement {type(s).__name__}")
        method(s)

    def s_Block(self, s: A.Block) -> None:
        for x in s.stmts:
            self.stmt(x)

    def s_Empty(self, s: A.Empty) -> None:
        pass

    def s_Exit(self, s: A.Exit) -> None:
        self.em.line("raise ExitPipeline()")

    def s_Return(self, s: A.Return) -> None:
        if s.value is None:
            self.em.line("return")
            return
        t = self.return_type
        if is_aggregate(t):
            self.em.line(f"return {tuple_code(self.agg(s.value, t))}")
        else:
            self.em.line(f"return {self.val(s.value)}")

    def s_Break(self, s: A.Break) -> None:
        self.em.line("break")

    def s_Continue(self, s: A.Continue) -> None:
        self.em.line("continue")

    def s_CallStmt(self, s: A.CallStmt) -> None:
        self.call_stmt(s.call)

    def s_Assign(self, s: A.Assign) -> None:
        self.assign(s.lhs, s.rhs)

    def s_If(self, s: A.If) -> None:
        self.em.line(f"if {self.val(s.cond)}:")
        with self.em.indent():
            self.stmt(s.then)
        if s.other is not None:
            self.em.line("else:")
            with self.em.indent():
                self.stmt(s.other)

    def s_VarDecl(self, s: A.VarDecl) -> None:
        lay = self.declare_var(s, self.ty(self.var_type(s)))
        self.init_var(s, lay)

    def var_type(self, s: A.VarDecl) -> T.Type:
        sym_type = getattr(s, "resolved_type", None)
        if sym_type is None:
            raise CodegenError(s.pos, f"{s.name}: variable type unknown")
        return sym_type

    def declare_var(self, s: Any, t: T.Type) -> Layout:
        lay = self.storage.alloc(t, f"{self.prefix}.{s.name}")
        self.env.bind(s, lay)
        return lay

    def init_var(self, s: A.VarDecl, lay: Layout) -> None:
        t = self.ty(self.var_type(s))
        if s.init is not None:
            self.store(Ref(lay), t, s.init)
        else:
            self.invalidate_headers(lay)

    def invalidate_headers(self, lay: Layout) -> None:
        """Uninitialised header locals start invalid (p4c inserts setInvalid for them)."""
        for h in headers_in(lay):
            self.em.line(f"S[{h.valid}] = False")
        if isinstance(lay, StackL):
            self.em.line(f"S[{lay.next_index}] = 0")

    def s_ConstDecl(self, s: A.ConstDecl) -> None:
        from ..frontend.checker import Checker

        t = s.value.type
        self.env.bind(s, ConstBinding(Checker.const_value_static(s.value), t, s.value))

    def s_Switch(self, s: A.Switch) -> None:
        et = T.strip_newtype(self.ty(s.expr.type))
        if isinstance(et, T.ActionRunT):
            subject = self.simple(f"{self.table_apply(s.expr.expr)}[1]", "a")
        else:
            subject = self.simple(self.val(s.expr), "v")
        pending: list[str] = []
        first = True
        for case in s.cases:
            if isinstance(case.label, A.Default) and isinstance(et, T.ActionRunT):
                # a miss that ran no action takes no case, not even default (BMv2 goes to
                # the table's base_default_next: Table.make_indirect)
                pending.append(f"{subject} != {NO_ACTION!r}")
                cond = None
            elif isinstance(case.label, A.Default):
                cond = "True"
            elif isinstance(et, T.ActionRunT):
                pending.append(f"{subject} == {self.action_run_id(s.expr.expr, case.label.name)!r}")
                cond = None
            else:
                pending.append(f"{subject} == {self.val(case.label)}")
                cond = None
            if case.body is None:
                continue
            if cond is None:
                cond = " or ".join(pending)
            pending = []
            if cond == "True" and not first:
                self.em.line("else:")
            else:
                self.em.line(f"{'if' if first else 'elif'} {cond}:")
            with self.em.indent():
                self.stmt(case.body)
            first = False

    def s_For(self, s: A.For) -> None:
        for st in s.init:
            self.stmt(st)
        self.em.line("while True:")
        with self.em.indent():
            if s.cond is not None:
                self.em.line(f"if not {self.val(s.cond)}: break")
            # `continue` must still run the update: wrap the body in a one-shot loop
            self.em.line("for _once in (0,):")
            with self.em.indent():
                self.stmt(s.body)
            self.em.line("else:")
            with self.em.indent():
                for st in s.update:
                    self.stmt(st)
                self.em.line("continue")
            self.em.line("break")

    def s_ForIn(self, s: A.ForIn) -> None:
        t = self.ty(getattr(s, "resolved_type", None) or T.Bits(32))
        lay = self.storage.alloc(t, f"{self.prefix}.{s.var}")
        self.env.bind(s, lay)
        coll = s.collection
        if isinstance(coll, A.Range):
            lo, hi = self.val(coll.lo), self.val(coll.hi)
            it = self.em.temp("k")
            self.em.line(f"for {it} in range({lo}, {hi} + 1):")
            with self.em.indent():
                self.em.line(f"S[{lay.slots()[0]}] = {it}")
                self.stmt(s.body)
            return
        ct = T.strip_newtype(self.ty(coll.type))
        if isinstance(ct, T.StackT):
            src = self.ref(coll).layout
            assert isinstance(src, StackL)
            for elem in src.elems:
                dst = lay.slots()
                self.em.parallel([f"S[{d}]" for d in dst], [f"S[{x}]" for x in elem.slots()])
                self.stmt(s.body)  # unrolled: stacks are small and fixed-size
            return
        raise CodegenError(s.pos, "for-in over this collection is not supported")

    # ------------------------------------------------------------------ assignment
    def assign(self, lhs: A.Expr, rhs: A.Expr) -> None:
        if isinstance(lhs, A.Slice):
            target, lo, w, t = self.slice_target(lhs)
            self.slice_store(target, lo, w, t, self.val(rhs))
            return
        self.store(self.ref(lhs), self.ty(lhs.type), rhs)

    def slice_target(self, lhs: A.Slice) -> tuple[str, int, int, T.Type]:
        """Where a slice l-value writes: (target, low bit, width, type of the whole value)."""
        w = lhs.hi_value - lhs.lo_value + 1
        lo = 0
        base: A.Expr = lhs
        while isinstance(base, A.Slice):  # n[7:4][3:0] = x: offsets add up
            lo += base.lo_value
            base = base.expr
        ref = self.ref(base)
        return self.leaf(ref, ref.layout), lo, w, self.ty(base.type)

    def slice_store(self, target: str, lo: int, w: int, t: T.Type, v: str) -> None:
        m = mask(w) << lo
        code = f"({target} & ~{m}) | (({v} & {mask(w)}) << {lo})"
        self.em.line(f"{target} = {wrap_code(code, t)}")

    def store(self, ref: Ref, t: T.Type, rhs: A.Expr) -> None:
        if is_aggregate(t):
            vals = self.agg(rhs, t)
            self.store_leaves(ref, vals)
        else:
            self.em.line(f"{self.leaf(ref, ref.layout)} = {self.val(rhs)}")

    def store_leaves(self, ref: Ref, vals: list[str]) -> None:
        tg = self.targets(ref)
        if len(tg) == 1:
            self.em.line(f"{tg[0]} = {vals[0]}")
        elif tg:
            self.em.line(f"{', '.join(tg)} = {', '.join(vals)}")
        lay = ref.layout
        if isinstance(lay, HeaderL) and lay.union is not None:
            self.em.line(f"if {tg[0]}:")
            with self.em.indent():
                self.invalidate_siblings(ref, lay)

    def invalidate_siblings(self, ref: Ref, h: HeaderL) -> None:
        assert h.union is not None
        for other in h.union.members.values():
            if other is not h:
                self.em.line(f"{self.slot_target(ref, other.valid)} = False")

    # ------------------------------------------------------------------ calls
    def call_stmt(self, e: A.Call) -> None:
        target = getattr(e, "target", None)
        if target is None:
            raise CodegenError(e.pos, "unresolved call")
        kind = target[0]
        if kind in ("action", "function"):
            code = self.invoke(e, target[1], kind)
            if code:
                self.em.line(code)
        elif kind == "extern_function":
            self.extern_function(e, target[1], statement=True)
        elif kind == "method":
            code = self.extern_method(e, target[1], target[2], statement=True)
            if code:
                self.em.line(code)
        elif kind == "builtin":
            self.builtin_stmt(e, target[1])
        else:
            raise CodegenError(e.pos, f"unsupported call ({kind})")

    def call_value(self, e: A.Call) -> str:
        target = getattr(e, "target", None)
        kind = target[0] if target else None
        if kind == "function":
            return self.invoke(e, target[1], kind, want_value=True)
        if kind == "method":
            return self.extern_method(e, target[1], target[2], statement=False)
        if kind == "extern_function":
            return self.extern_function(e, target[1], statement=False)
        if kind == "builtin":
            name = target[1]
            if name == "isValid":
                ref = self.ref(e.func.expr)
                lay = ref.layout
                if isinstance(lay, UnionL):
                    parts = [self.slot_target(ref, m.valid) for m in lay.members.values()]
                    return "(" + " or ".join(parts) + ")"
                assert isinstance(lay, HeaderL)
                return self.slot_target(ref, lay.valid)
            if name == "apply":
                return self.table_apply(e)
        raise CodegenError(e.pos, "unsupported call in an expression")

    def builtin_stmt(self, e: A.Call, name: str) -> None:
        if name == "apply":
            self.apply_stmt(e)
            return
        if name == "isValid":
            return
        obj = e.func.expr
        ref = self.ref(obj)
        lay = ref.layout
        if name in ("setValid", "setInvalid"):
            assert isinstance(lay, HeaderL)
            self.set_validity(ref, lay, name == "setValid")
            return
        if name in ("push_front", "pop_front"):
            assert isinstance(lay, StackL)
            self.stack_shift(lay, self.folded(e.args[0].value), name == "push_front")
            return
        raise CodegenError(e.pos, f"unsupported method {name}")

    def set_validity(self, ref: Ref, lay: HeaderL, valid: bool) -> None:
        """BMv2's add_header/remove_header: a header that becomes valid is zeroed, and the
        packet-length register (standard_metadata.packet_length in egress) follows."""
        em = self.em
        v = self.slot_target(ref, lay.valid)
        size = header_bytes_code(self, ref, lay)
        em.line(f"if {'not ' if valid else ''}{v}:")
        with em.indent():
            em.line(f"{v} = {valid}")
            if valid:
                for f in lay.fields.values():
                    em.line(f"{self.slot_target(ref, f.slot)} = {zero_code(f.type)}")
            em.line(f"P.length {'+' if valid else '-'}= {size}")
            if valid and lay.union is not None:
                self.invalidate_siblings(ref, lay)

    def stack_shift(self, lay: StackL, count: int, push: bool) -> None:
        n = len(lay.elems)
        slots = [e.slots() for e in lay.elems]
        if push:
            for i in range(n - 1, -1, -1):
                if i - count >= 0:
                    self.copy_slots(slots[i], slots[i - count])
                else:
                    self.invalidate_headers(lay.elems[i])
            self.em.line(f"S[{lay.next_index}] = min(S[{lay.next_index}] + {count}, {n})")
        else:
            for i in range(n):
                if i + count < n:
                    self.copy_slots(slots[i], slots[i + count])
                else:
                    self.invalidate_headers(lay.elems[i])
            self.em.line(f"S[{lay.next_index}] = max(S[{lay.next_index}] - {count}, 0)")

    def copy_slots(self, dst: list[int], src: list[int]) -> None:
        self.em.parallel([f"S[{d}]" for d in dst], [f"S[{s}]" for s in src])

    # ------------------------------------------------------------------ actions and functions
    def invoke(self, e: A.Call, decl: Any, kind: str, want_value: bool = False) -> str:
        info = self.callable_info(decl, kind, e)
        pyargs: list[str] = []
        copy_in: list[tuple[list[str], list[str]]] = []
        copy_out: list[tuple[list[str], list[str]]] = []
        bound = list(
            zip(info.params, self.bind_call_args(e, [p for p, _ in info.params]), strict=True)
        )
        values = self.in_order(
            [lambda p=p, lay=lay, arg=arg: self.arg_value(p, lay, arg) for (p, lay), arg in bound]
        )
        for ((p, lay), arg), vals in zip(bound, values, strict=True):
            value = arg.value if arg is not None else p.default
            if isinstance(lay, PyLocal):
                pyargs.append(vals[0])
                continue
            mine = self.targets(Ref(lay))
            if p.direction == "out":
                for h in headers_in(lay):
                    copy_in.append(([f"S[{h.valid}]"], ["False"]))
            elif value is not None:
                copy_in.append((mine, vals))
            if p.direction in ("out", "inout") and value is not None:
                if isinstance(value, A.Slice):
                    copy_out.append((self.slice_target(value), mine))
                else:
                    copy_out.append((self.targets(self.ref(value)), mine))
        for dst, vals in copy_in:
            self.em.parallel(dst, vals)
        call = f"{info.fn}(S, P{''.join(', ' + a for a in pyargs)})"
        if not copy_out:
            return call
        # copy-out happens even when the callee exits (P4 spec: exit still copies out)
        tmp = self.em.temp("r") if want_value else ""
        self.em.line("try:")
        with self.em.indent():
            self.em.line(f"{tmp} = {call}" if want_value else call)
        self.em.line("finally:")
        with self.em.indent():
            for dst, src in copy_out:
                if isinstance(dst, tuple):  # a slice argument
                    self.slice_store(*dst, src[0])
                else:
                    self.em.parallel(dst, src)
        return tmp

    def arg_value(self, p: A.Param, lay: Layout, arg: A.Argument | None) -> list[str]:
        value = arg.value if arg is not None else p.default
        if isinstance(lay, PyLocal):
            return [self.val(value) if value is not None else "0"]
        if p.direction == "out" or value is None:
            return []
        return self.value_as(value, self.ty(p.type))

    def bind_call_args(self, e: A.Call, params: list[A.Param]) -> list[A.Argument | None]:
        if any(a.name for a in e.args):
            by_name = {a.name: a for a in e.args}
            return [by_name.get(p.name) for p in params]
        return list(e.args) + [None] * (len(params) - len(e.args))


def zero_code(t: T.Type) -> str:
    b = T.strip_newtype(t)
    if b is T.BOOL:
        return "False"
    if isinstance(b, T.Varbit):
        return "(0, 0)"
    return "0"


def header_bytes_code(gen: Any, ref: Ref, lay: HeaderL) -> str:
    """The header's size in bytes as the packet carries it (varbit fields at their width)."""
    fixed = 0
    dynamic = []
    for f in lay.fields.values():
        if isinstance(T.strip_newtype(f.type), T.Varbit):
            dynamic.append(f"{gen.slot_target(ref, f.slot)}[0]")
        else:
            fixed += T.width_of(f.type) or 0
    if not dynamic:
        return str(fixed // 8)
    return f"({fixed} + {' + '.join(dynamic)}) // 8"


def headers_in(lay: Layout) -> list[HeaderL]:
    if isinstance(lay, HeaderL):
        return [lay]
    if isinstance(lay, StructL):
        return [h for f in lay.fields.values() for h in headers_in(f)]
    if isinstance(lay, UnionL):
        return list(lay.members.values())
    if isinstance(lay, StackL):
        return [h for el in lay.elems for h in headers_in(el)]
    return []
