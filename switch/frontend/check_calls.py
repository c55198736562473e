"""Calls: overloads, argument binding, type inference, builtins, constant values."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from . import ast as A
from . import types as T
from .check_base import (
    BuiltinMethod,
    Context,
    MethodRef,
    TypeValue,
    fail,
)
from .errors import SourcePos
from .symbols import Scope

if TYPE_CHECKING:
    pass
from .constfold import ConstFolder


class CallsMixin:
    """Checker methods for calls and constant values (mixed into Checker)."""

    # ================================================================= calls
    def expr_Call(
        self, e: A.Call, scope: Scope, ctx: Context, expected: Any, statement: bool = False
    ) -> T.Type:
        ft = self.expr(e.func, scope, ctx)
        if isinstance(ft, T.CallableT):
            return self.call_named(e, ft, scope, ctx, statement)
        if isinstance(ft, MethodRef):
            proto = self.pick_overload(ft.methods, e.args, e.pos, ft.name)
            bindings = dict(ft.extern.args)
            self.bind_type_args(proto, e, scope, bindings)
            self.bind_args(proto.resolved_params, e.args, scope, ctx, bindings, e.pos, ft.name)
            e.target = ("method", ft.extern, proto)
            e.bindings = bindings
            self.packet_method_rules(e, ft)
            rt = self.subst(proto.resolved_return, bindings)
            return self.call_result(e, rt, statement)
        if isinstance(ft, BuiltinMethod):
            return self.builtin_call(e, ft, scope, ctx, statement)
        if isinstance(ft, TypeValue):
            if isinstance(ft.type, (T.BlockT, T.ExternT)) and isinstance(
                e.func, (A.Name, A.TypeExpr)
            ):
                # a constructor call used as an argument: `V1Switch(MyParser(), ...)`
                typeref = (
                    A.NamedType(e.func.pos, e.func.name, e.func.dot)
                    if isinstance(e.func, A.Name)
                    else e.func.typeref
                )
                e.target = ("constructor", ft.type)
                return self.instantiate(typeref, e.args, scope, ctx, e.pos)
            raise fail(e.pos, f"{self.describe(e.func)}: a type cannot be called (use an instance)")
        raise fail(e.pos, f"{self.describe(e.func)}: is not a function, action or method")

    def packet_method_rules(self, e: A.Call, ft: MethodRef) -> None:
        """packet_in.extract needs a header; packet_out.emit headers, stacks, unions or structs of them."""
        if not e.args or e.args[0].value is None:
            return
        arg_t = T.strip_newtype(e.args[0].value.type)
        if ft.extern.name == "packet_in" and ft.name == "extract":
            if not T.is_header(arg_t):
                raise fail(e.args[0].value.pos, f"extract: argument must be a header, not {arg_t}")
            if isinstance(arg_t, T.StructT):
                self.extract_varbit_rules(e, arg_t)
        elif ft.extern.name == "packet_out" and ft.name == "emit":
            if not self.emittable(arg_t):
                raise fail(
                    e.args[0].value.pos,
                    f"emit: argument must be a header, header stack, header_union or a struct of them, not {arg_t}",
                )

    def extract_varbit_rules(self, e: A.Call, header: T.StructT) -> None:
        """p4c's TypeInference on extract: a header with two varbit fields is an error at the
        first of them; extract(hdr) needs a header without a varbit field, and
        extract(hdr, bits) one with a varbit field."""
        varbits = [
            name for name, t in header.fields.items() if isinstance(T.strip_newtype(t), T.Varbit)
        ]
        arg = e.args[0].value
        assert arg is not None
        if len(varbits) > 1:
            decl = header.decl
            fields = {f.name: f.pos for f in getattr(decl, "fields", [])}
            raise fail(
                fields.get(varbits[0], arg.pos),
                f"{varbits[0]} and {varbits[1]}: multiple varbit fields in a header",
            )
        if len(e.args) == 1 and varbits:
            raise fail(arg.pos, f"{self.describe(arg)}: argument cannot contain varbit fields")
        if len(e.args) == 2 and not varbits:
            raise fail(arg.pos, f"{self.describe(arg)}: argument should contain a varbit field")

    def emittable(self, t: T.Type) -> bool:
        t = T.strip_newtype(t)
        if isinstance(t, T.StructT):
            if t.kind in ("header", "header_union"):
                return True
            return all(self.emittable(f) for f in t.fields.values())
        if isinstance(t, T.StackT):
            return True
        if isinstance(t, T.TupleT):
            return all(self.emittable(f) for f in t.elems)
        return isinstance(t, T.TypeVar)

    def call_result(self, e: A.Call, rt: T.Type | None, statement: bool) -> T.Type:
        rt = rt or T.VOID
        if not statement and rt is T.VOID:
            raise fail(
                e.pos, f"{self.describe(e.func)}: returns void and cannot be used as a value"
            )
        return rt

    def call_named(
        self, e: A.Call, ft: T.CallableT, scope: Scope, ctx: Context, statement: bool
    ) -> T.Type:
        sym = ft.target
        if sym.kind == "action":
            decl: A.ActionDecl = sym.decl
            if ctx.kind not in ("control", "action"):
                raise fail(
                    e.pos, f"{decl.name}: actions can only be called from controls and actions"
                )
            self.bind_args(
                [(p, p.type) for p in decl.params], e.args, scope, ctx, {}, e.pos, decl.name
            )
            for a in e.args:
                applied = find_table_apply(a.value)
                if applied is not None:
                    raise fail(
                        applied.pos,
                        f"{decl.name}: a table cannot be applied in an action call's arguments",
                    )
            e.target = ("action", decl)
            return self.call_result(e, T.VOID, statement)
        if sym.kind == "function":
            decl = self.pick_overload(sym.overloads, e.args, e.pos, sym.name)
            bindings: dict[str, T.Type] = {}
            self.bind_type_args(decl, e, scope, bindings)
            self.bind_args(decl.resolved_params, e.args, scope, ctx, bindings, e.pos, sym.name)
            e.target = ("function", decl)
            return self.call_result(e, self.subst(decl.resolved_return, bindings), statement)
        proto = self.pick_overload(sym.overloads, e.args, e.pos, sym.name)
        bindings = {}
        self.bind_type_args(proto, e, scope, bindings)
        self.bind_args(proto.resolved_params, e.args, scope, ctx, bindings, e.pos, sym.name)
        e.target = ("extern_function", proto)
        e.bindings = bindings
        if sym.name == "verify" and ctx.kind != "parser":
            raise fail(e.pos, "verify can only be called in a parser")
        if sym.name == "static_assert" and e.args and e.args[0].value is not None:
            ok = self.const_value(e.args[0].value, scope)
            if ok is None:
                raise fail(
                    e.args[0].value.pos,
                    "static_assert: the condition must be a compile-time constant",
                )
            if ok is False:
                msg = (
                    e.args[1].value.value
                    if len(e.args) > 1 and isinstance(e.args[1].value, A.StringLit)
                    else "static assertion failed"
                )
                raise fail(e.pos, f"static_assert failed: {msg}")
        return self.call_result(e, self.subst(proto.resolved_return, bindings), statement)

    def bind_type_args(
        self, proto: Any, e: A.Call, scope: Scope, bindings: dict[str, T.Type]
    ) -> None:
        if not e.type_args:
            return
        tparams = proto.type_params
        if len(tparams) != len(e.type_args):
            raise fail(
                e.pos,
                f"{self.describe(e.func)}: expects {len(tparams)} type arguments, got {len(e.type_args)}",
            )
        for name, ta in zip(tparams, e.type_args, strict=True):
            bindings[name] = self.resolve_type(ta, scope)

    def pick_overload(
        self, candidates: list[Any], args: list[A.Argument], pos: SourcePos, name: str
    ) -> Any:
        check_arg_names(args)
        named = {a.name for a in args if a.name}
        fitting = []
        for c in candidates:
            params = c.params
            required = [
                p
                for p in params
                if p.default is None and not any(a.name == "optional" for a in p.annotations)
            ]
            if named:
                pnames = {p.name for p in params}
                if named <= pnames and all(
                    p.name in named or p.default is not None for p in required
                ):
                    fitting.append(c)
            elif len(required) <= len(args) <= len(params):
                fitting.append(c)
        if not fitting and named:
            # say which name is wrong or missing, not a count that looks right
            params = candidates[0].params
            unknown = sorted(named - {p.name for p in params})
            if len(candidates) == 1 and unknown:
                raise fail(pos, f"{name}: no parameter named {unknown[0]}")
            if len(candidates) == 1:
                missing = [p.name for p in params if p.name not in named and not _optional(p)]
                raise fail(pos, f"{name}: no argument for parameter {missing[0]}")
            raise fail(pos, f"{name}: no overload has parameters named {', '.join(sorted(named))}")
        if not fitting:
            counts = sorted({len(c.params) for c in candidates})
            raise fail(
                pos,
                f"{name}: wrong number of arguments: {len(args)} given, expected "
                f"{' or '.join(map(str, counts))}",
            )
        return fitting[0]

    def bind_args(
        self,
        params: list[tuple[A.Param, T.Type]],
        args: list[A.Argument],
        scope: Scope,
        ctx: Context,
        bindings: dict[str, T.Type],
        pos: SourcePos,
        name: str,
    ) -> None:
        """Match arguments to parameters, inferring type variables; check directions.

        Named arguments are put into parameter order in ``args`` itself (see
        ``order_named_args``), so every later pass may read a call's arguments by position.
        """
        if any(a.name for a in args):
            check_arg_names(args)
            by_name = {p.name: (p, t) for p, t in params}
            pairs = []
            for a in args:
                if a.name not in by_name:
                    raise fail(a.pos, f"{name}: no parameter named {a.name}")
                pairs.append((by_name[a.name], a))
            given = {a.name for a in args}
            for p, _ in params:
                if p.name not in given and not _optional(p):
                    # p4c: 'action two(x = 16w1): parameter y must be bound'
                    raise fail(pos, f"{name}: parameter {p.name} must be bound")
            order_named_args([p for p, _ in params], args)
        else:
            if len(args) > len(params):
                raise fail(
                    pos, f"{name}: too many arguments ({len(args)} given, {len(params)} expected)"
                )
            required = [
                p
                for p, _ in params
                if p.default is None and not any(x.name == "optional" for x in p.annotations)
            ]
            if len(args) < len(required):
                raise fail(
                    pos,
                    f"{name}: not enough arguments ({len(args)} given, {len(required)} expected)",
                )
            pairs = list(zip(params, args, strict=False))
        for (p, pt), a in pairs:
            if a.value is None:  # `_`: for any direction, an uninitialized temporary
                # (p4c 1.2.5 also takes it for an `in` parameter: BMv2 reads the temporary
                # as 0, with only the warning 'may be uninitialized')
                continue
            want = self.subst(pt, bindings)
            at = self.expr(a.value, scope, ctx, expected=None if self.has_typevar(want) else want)
            if isinstance(want, T.BlockT) and isinstance(at, T.BlockT):
                self.bind_block(want, at, bindings, a.value.pos, p.name)
                continue
            self.unify(want, at, bindings)
            want = self.subst(pt, bindings)
            if not self.assignable(want, at):
                raise fail(
                    a.value.pos,
                    f"{name}: argument {p.name}: cannot convert {at} to {want} (type mismatch)",
                )
            if isinstance(at, T.InfInt) and isinstance(T.strip_newtype(want), T.Bits):
                self.retype_literal(a.value, T.strip_newtype(want))
            if p.direction in ("out", "inout"):
                problem = self.lvalue_problem(a.value, scope)
                if problem:
                    raise fail(
                        a.value.pos,
                        f"{name}: argument {p.name} is passed to an {p.direction} "
                        f"parameter and must be an l-value: {problem}",
                    )

    def has_typevar(self, t: T.Type) -> bool:
        if isinstance(t, T.TypeVar):
            return True
        if isinstance(t, T.TupleT):
            return any(self.has_typevar(x) for x in t.elems)
        if isinstance(t, T.StackT):
            return self.has_typevar(t.elem)
        return False

    def unify(self, want: T.Type, got: T.Type, bindings: dict[str, T.Type]) -> None:
        if isinstance(want, T.TypeVar):
            if want.name not in bindings or isinstance(bindings[want.name], T.TypeVar):
                if isinstance(got, T.TupleT) and got.is_list_expr:
                    got = T.TupleT(got.elems)
                bindings[want.name] = got
            elif isinstance(bindings[want.name], T.InfInt) and not isinstance(got, T.InfInt):
                bindings[want.name] = got
            return
        if (
            isinstance(want, T.TupleT)
            and isinstance(got, T.TupleT)
            and len(want.elems) == len(got.elems)
        ):
            for a, b in zip(want.elems, got.elems, strict=True):
                self.unify(a, b, bindings)
        if isinstance(want, T.StackT) and isinstance(got, T.StackT):
            self.unify(want.elem, got.elem, bindings)
        if isinstance(want, T.ExternT) and isinstance(got, T.ExternT):
            for k, v in want.args.items():
                if k in got.args:
                    self.unify(v, got.args[k], bindings)

    def bind_block(
        self, want: T.BlockT, got: T.BlockT, bindings: dict[str, T.Type], pos: SourcePos, pname: str
    ) -> None:
        """A package argument: the instance's parameters must match the declared block type's."""
        want_params = want.decl.resolved_params if hasattr(want.decl, "resolved_params") else []
        got_params = got.decl.resolved_params
        if want.kind != got.kind:
            raise fail(
                pos, f"{pname}: expected a {want.kind} ({want.name}), got a {got.kind} {got.name}"
            )
        if len(want_params) != len(got_params):
            raise fail(
                pos,
                f"{pname}: {got.name} has {len(got_params)} parameters, {want.name} expects {len(want_params)}",
            )
        for (wp, wt), (gp, gt) in zip(want_params, got_params, strict=True):
            wt = self.subst(self.subst(wt, want.args), bindings)
            gt = self.subst(gt, got.args)
            # v1model before 2018 declared VerifyChecksum(in H hdr, ...); p4c's samples still
            # pass such controls, and reading through `in` is safe where `inout` is declared
            legacy = want.name == "VerifyChecksum" and (wp.direction, gp.direction) == (
                "inout",
                "in",
            )
            if wp.direction != gp.direction and not legacy:
                raise fail(
                    pos,
                    f"{pname}: parameter {gp.name} of {got.name} is '{gp.direction or 'directionless'}', "
                    f"{want.name} needs '{wp.direction or 'directionless'}'",
                )
            if isinstance(wt, T.TypeVar):
                bound = bindings.get(wt.name)
                if bound is None or isinstance(bound, T.TypeVar):
                    bindings[wt.name] = gt
                elif not self.same_type(bound, gt):
                    raise fail(
                        pos,
                        f"{pname}: parameter {gp.name} of {got.name} has type {gt}, "
                        f"but {wt.name} is already {bound} (type mismatch)",
                    )
            elif not self.same_type(wt, gt):
                raise fail(
                    pos,
                    f"{pname}: parameter {gp.name} of {got.name} has type {gt}, expected {wt} (type mismatch)",
                )

    def same_type(self, a: T.Type, b: T.Type) -> bool:
        if a is b or a == b:
            return True
        if isinstance(a, T.StructT) and isinstance(b, T.StructT):
            return a.decl is b.decl and a.name == b.name
        if isinstance(a, T.ExternT) and isinstance(b, T.ExternT):
            return a.decl is b.decl
        if isinstance(a, T.TypeVar) or isinstance(b, T.TypeVar):
            return True
        return False

    def builtin_call(
        self, e: A.Call, m: BuiltinMethod, scope: Scope, ctx: Context, statement: bool
    ) -> T.Type:
        name = m.name
        obj = e.func.expr if isinstance(e.func, A.Member) else None
        e.target = ("builtin", name)
        if name == "apply":
            target = m.target
            if isinstance(target, T.TableT):
                if e.args:
                    raise fail(e.pos, "table apply takes no arguments")
                if ctx.kind not in ("control",):
                    raise fail(
                        e.pos,
                        f"{target.name}: tables can only be applied in a control's apply block",
                    )
                return T.ApplyResultT(target.decl)
            decl = target.decl
            if isinstance(target, T.BlockT):
                self.no_self_reference(target, ctx, (obj or e).pos)
            params = [(p, self.subst(t, target.args)) for p, t in decl.resolved_params]
            self.bind_args(params, e.args, scope, ctx, dict(target.args), e.pos, target.name)
            return T.VOID if statement else self.call_result(e, T.VOID, statement)
        if name in ("setValid", "setInvalid", "push_front", "pop_front"):
            if obj is not None:
                self.require_lvalue(obj, scope, f"{name}() target")
            if name in ("push_front", "pop_front"):
                if len(e.args) != 1:
                    raise fail(e.pos, f"{name} takes one argument")
                self.expr(e.args[0].value, scope, ctx)
                if self.const_value(e.args[0].value, scope) is None:
                    raise fail(e.pos, f"{name}: the count must be a compile-time constant")
            elif e.args:
                raise fail(e.pos, f"{name} takes no arguments")
            return self.call_result(e, T.VOID, statement)
        if e.args:
            raise fail(e.pos, f"{name} takes no arguments")
        if name == "isValid":
            return T.BOOL
        return T.INFINT  # minSizeInBits & co

    # ================================================================= constants
    def const_value(self, e: A.Expr, scope: Scope) -> Any:
        """Fold a compile-time constant (int, bool, or enum member name); None if not constant."""
        return ConstFolder(self, scope).fold(e)

    @staticmethod
    def const_value_static(e: A.Expr) -> Any:
        """Fold an already checked expression (names resolved through their symbols)."""
        from .checker import Checker  # the assembled class; imported late (cycle)

        return ConstFolder(Checker(A.Program(e.pos, [])), None).fold(e)

    def wrap(self, v: int, t: T.Type) -> int:
        b = T.strip_newtype(t)
        if isinstance(b, T.Bits):
            v &= (1 << b.width) - 1
            if b.signed and v >> (b.width - 1):
                v -= 1 << b.width
        return v

    def coerce_const(self, v: Any, t: T.Type) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return self.wrap(v, t)
        return v


def find_table_apply(e: A.Node | None) -> A.Call | None:
    """A ``t.apply()`` of a table somewhere inside expression ``e`` (already checked)."""
    if e is None:
        return None
    if (
        isinstance(e, A.Call)
        and isinstance(e.func, A.Member)
        and e.func.name == "apply"
        and isinstance(getattr(e.func.expr, "type", None), T.TableT)
    ):
        return e
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        items = v if isinstance(v, list) else [v]
        for item in items:
            if isinstance(item, A.Argument):
                item = item.value
            if isinstance(item, A.Expr):
                found = find_table_apply(item)
                if found is not None:
                    return found
    return None


def _optional(p: A.Param) -> bool:
    return p.default is not None or any(a.name == "optional" for a in p.annotations)


def check_arg_names(args: list[A.Argument]) -> None:
    """p4c's rules for named arguments: all or none named, each name once."""
    if not any(a.name for a in args):
        return
    seen: set[str] = set()
    for a in args:
        if not a.name:
            raise fail(a.pos, "either all or none of the arguments of a call must be named")
        if a.name in seen:
            raise fail(a.pos, f"{a.name}: same argument name given twice")
        seen.add(a.name)


def order_named_args(params: list[A.Param], args: list[A.Argument]) -> None:
    """Reorder named ``args`` (in place) into the order of ``params``.

    The interpreter's and the native engine's extern lowering, P4Info and the BMv2 rules
    read extern arguments by position (``verify_checksum``'s data is ``args[1]``), so a
    call written ``verify_checksum(data = ..., condition = ...)`` must reach them in
    parameter order. A parameter left out (a default or @optional one) before one that is
    given would shift the positions: such a call keeps its written order, and only the
    passes that bind by name (functions, actions, constructors) may read it.
    """
    by_name = {a.name: a for a in args}
    ordered = [by_name[p.name] for p in params if p.name in by_name]
    present = [p.name in by_name for p in params]
    gap = any(not present[i] and any(present[i + 1 :]) for i in range(len(present)))
    if not gap:
        args[:] = ordered
