"""Name resolution, type checking and constant folding (one pass, declare-before-use).

The checker walks the tree in source order, as P4 requires, with a scope per block. It
annotates every expression with its semantic type (``expr.type``), folds constants it needs
(widths, sizes, slice bounds, enum values) and raises CompileError with the position of the
first problem. Control-plane structure is collected afterwards by ``cpbuild.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ast as A
from . import types as T
from .errors import CompileError, SourcePos
from .symbols import Scope, Sym

ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
COMPARE = {"<", ">", "<=", ">="}
EQUALITY = {"==", "!="}


@dataclass
class Context:
    """Where a statement or expression is being checked."""

    kind: str  # global | parser | control | action | function | extern
    block: Any = None  # the enclosing ParserDecl/ControlDecl
    return_type: T.Type | None = None
    in_loop: bool = False


@dataclass
class CheckedProgram:
    program: A.Program
    scope: Scope
    main: A.Instance | None = None
    match_kinds: list[str] = field(default_factory=list)
    error_members: list[str] = field(default_factory=list)


def fail(pos: SourcePos, message: str) -> CompileError:
    return CompileError(pos, message)


class Checker:
    def __init__(self, program: A.Program) -> None:
        self.program = program
        self.globals = Scope(None, "global")
        self.error_members: list[str] = []
        self.match_kinds: list[str] = []
        self.main: A.Instance | None = None
        # specialized generic structs, one StructT per (declaration, type arguments)
        self.struct_types: dict[tuple[int, str], T.StructT] = {}

    # ================================================================= entry
    def check(self) -> CheckedProgram:
        ctx = Context("global")
        for d in self.program.decls:
            self.declaration(d, self.globals, ctx)
        if self.main is None:
            raise fail(
                self.program.pos,
                "no 'main' package instance; a v1model program needs 'V1Switch(...) main;'",
            )
        return CheckedProgram(
            self.program, self.globals, self.main, self.match_kinds, self.error_members
        )

    # ================================================================= declarations
    def define(self, scope: Scope, sym: Sym) -> Sym:
        old = scope.names.get(sym.name)
        if old is not None:
            overloadable = ("function", "extern_function")
            if old.kind in overloadable and sym.kind in overloadable:
                old.overloads.extend(sym.overloads)
                return old
            raise fail(sym.pos, f"{sym.name}: duplicate declaration (previous one at {old.pos})")
        scope.names[sym.name] = sym
        return sym

    def declaration(self, d: A.Decl, scope: Scope, ctx: Context) -> None:
        method = getattr(self, "decl_" + type(d).__name__)
        method(d, scope, ctx)

    def decl_ConstDecl(self, d: A.ConstDecl, scope: Scope, ctx: Context) -> None:
        t = self.resolve_type(d.typeref, scope)
        vt = self.expr(d.value, scope, ctx, expected=t)
        self.require_assignable(t, vt, d.value, "constant initializer")
        value = self.const_value(d.value, scope)
        if (
            value is None
            and not isinstance(T.strip_newtype(t), (T.StructT, T.TupleT, T.StackT))
            and not isinstance(vt, (T.EnumT,))
            and t not in (T.ERROR, T.STRING)
        ):
            raise fail(
                d.value.pos, f"{d.name}: initializer of a constant must be a compile-time constant"
            )
        self.define(scope, Sym("const", d.name, d.pos, t, d, value=self.coerce_const(value, t)))

    def decl_VarDecl(self, d: A.VarDecl, scope: Scope, ctx: Context) -> None:
        t = self.resolve_type(d.typeref, scope)
        if t is T.VOID or isinstance(t, (T.ExternT, T.BlockT, T.InfInt)) or t is T.STRING:
            raise fail(d.pos, f"{d.name}: cannot declare a variable of type {t}")
        if d.init is not None:
            vt = self.expr(d.init, scope, ctx, expected=t)
            self.require_assignable(t, vt, d.init, "initializer")
        d.resolved_type = t  # for the interpreter, which allocates storage by type
        self.define(scope, Sym("var", d.name, d.pos, t, d, direction="inout"))

    def decl_Typedef(self, d: A.Typedef, scope: Scope, ctx: Context) -> None:
        base = self.resolve_type(d.typeref, scope)
        if isinstance(base, (T.ExternT, T.BlockT)) and d.newtype:
            raise fail(d.pos, f"{d.name}: 'type' cannot rename {base}")
        t: T.Type = T.NewType(d.name, base, d) if d.newtype else base
        if d.newtype and not isinstance(T.strip_newtype(base), (T.Bits, T.Simple)):
            raise fail(
                d.pos,
                f"{d.name}: 'type' can only introduce a type based on bit<>, int<>, bool or another type",
            )
        self.define(scope, Sym("type", d.name, d.pos, t, d))

    def decl_StructLike(self, d: A.StructLike, scope: Scope, ctx: Context) -> None:
        st = T.StructT(d.kind, d.name, {}, d)
        self.define(scope, Sym("type", d.name, d.pos, st, d))
        inner = Scope(scope, "type")
        for tp in d.type_params:
            self.define(inner, Sym("type", tp, d.pos, T.TypeVar(tp)))
        varbits = 0
        for f in d.fields:
            if f.name in st.fields:
                raise fail(f.pos, f"{f.name}: duplicate field in {d.kind} {d.name}")
            ft = self.resolve_type(f.typeref, inner)
            self.check_field_type(d, f, ft)
            if isinstance(ft, T.Varbit):
                varbits += 1
                if varbits > 1:
                    raise fail(f.pos, f"{d.name}: a header may contain at most one varbit field")
            st.fields[f.name] = ft

    def check_field_type(self, d: A.StructLike, f: A.FieldDecl, ft: T.Type) -> None:
        base = T.strip_newtype(ft)
        if d.kind == "header":
            ok = (
                isinstance(base, (T.Bits, T.Varbit))
                or base is T.BOOL
                or (isinstance(base, T.EnumT) and base.underlying is not None)
                or (
                    isinstance(base, T.StructT)
                    and base.kind == "struct"
                    and self.all_fixed_bits(base)
                )
            )
            if not ok:
                raise fail(f.pos, f"{f.name}: field of type {ft} is not allowed in header {d.name}")
        elif d.kind == "header_union":
            if not T.is_header(base):
                raise fail(
                    f.pos, f"{f.name}: header_union {d.name} fields must be headers, not {ft}"
                )
        else:
            if base in (T.VOID, T.STRING, T.MATCH_KIND) or isinstance(
                base, (T.ExternT, T.BlockT, T.InfInt)
            ):
                raise fail(f.pos, f"{f.name}: field of type {ft} is not allowed in struct {d.name}")

    def all_fixed_bits(self, st: T.StructT) -> bool:
        for ft in st.fields.values():
            b = T.strip_newtype(ft)
            if isinstance(b, T.StructT) and b.kind == "struct":
                if not self.all_fixed_bits(b):
                    return False
            elif not (
                isinstance(b, T.Bits) or b is T.BOOL or (isinstance(b, T.EnumT) and b.underlying)
            ):
                return False
        return True

    def decl_EnumDecl(self, d: A.EnumDecl, scope: Scope, ctx: Context) -> None:
        underlying = None
        if d.underlying is not None:
            ut = self.resolve_type(d.underlying, scope)
            if not isinstance(ut, T.Bits):
                raise fail(
                    d.pos,
                    f"{d.name}: the underlying type of a serializable enum must be bit<> or int<>",
                )
            underlying = ut
        et = T.EnumT(d.name, [], underlying, {}, d)
        for mname, value, mpos in d.members:
            if mname in et.values or mname in et.members:
                raise fail(mpos, f"{mname}: duplicate enum member in {d.name}")
            et.members.append(mname)
            if underlying is not None:
                if value is None:
                    raise fail(mpos, f"{mname}: members of a serializable enum need a value")
                self.expr(value, scope, Context("global"), expected=underlying)
                v = self.const_value(value, scope)
                if not isinstance(v, int) or isinstance(v, bool):
                    raise fail(
                        value.pos, f"{mname}: enum member value must be a compile-time integer"
                    )
                et.values[mname] = self.wrap(v, underlying)
        self.define(scope, Sym("type", d.name, d.pos, et, d))

    def decl_ErrorDecl(self, d: A.ErrorDecl, scope: Scope, ctx: Context) -> None:
        for name, pos in d.members:
            if name in self.error_members:
                raise fail(pos, f"error.{name}: duplicate declaration")
            self.error_members.append(name)

    def decl_MatchKindDecl(self, d: A.MatchKindDecl, scope: Scope, ctx: Context) -> None:
        for name, pos in d.members:
            if name in self.match_kinds:
                raise fail(pos, f"{name}: duplicate match_kind")
            self.match_kinds.append(name)
            self.define(self.globals, Sym("const", name, pos, T.MATCH_KIND, d, value=name))

    def decl_ExternDecl(self, d: A.ExternDecl, scope: Scope, ctx: Context) -> None:
        et = T.ExternT(d.name, d, {})
        self.define(scope, Sym("type", d.name, d.pos, et, d))
        inner = Scope(scope, "type")
        for tp in d.type_params:
            self.define(inner, Sym("type", tp, d.pos, T.TypeVar(tp)))
        for m in d.methods:
            self.check_proto(m, inner)

    def check_proto(self, m: A.MethodProto, scope: Scope) -> None:
        inner = Scope(scope, "type")
        for tp in m.type_params:
            self.define(inner, Sym("type", tp, m.pos, T.TypeVar(tp)))
        m.resolved_params = [(p, self.resolve_type(p.typeref, inner)) for p in m.params]
        m.resolved_return = self.resolve_type(m.return_type, inner) if m.return_type else None
        m.scope = inner
        self.check_param_names(m.params)

    def check_param_names(self, params: list[A.Param]) -> None:
        seen: set[str] = set()
        for p in params:
            if p.name in seen:
                raise fail(p.pos, f"{p.name}: duplicate parameter name")
            seen.add(p.name)

    def decl_ExternFunction(self, d: A.ExternFunction, scope: Scope, ctx: Context) -> None:
        self.check_proto(d.proto, scope)
        self.define(scope, Sym("extern_function", d.name, d.pos, None, d, overloads=[d.proto]))

    def decl_TypeDeclProto(self, d: A.TypeDeclProto, scope: Scope, ctx: Context) -> None:
        bt = T.BlockT(d.kind, d.name, d)
        self.define(scope, Sym("type", d.name, d.pos, bt, d))
        inner = Scope(scope, "type")
        for tp in d.type_params:
            self.define(inner, Sym("type", tp, d.pos, T.TypeVar(tp)))
        d.resolved_params = [(p, self.resolve_type(p.typeref, inner)) for p in d.params]
        self.check_param_names(d.params)

    def params_scope(self, params: list[A.Param], scope: Scope, kind: str) -> Scope:
        inner = Scope(scope, kind)
        self.check_param_names(params)
        for p in params:
            pt = self.resolve_type(p.typeref, inner)
            p.type = pt
            if pt is T.VOID:
                raise fail(p.pos, f"{p.name}: parameter cannot have type void")
            self.define(inner, Sym("param", p.name, p.pos, pt, p, direction=p.direction))
        return inner

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

    def decl_ValueSetDecl(self, d: A.ValueSetDecl, scope: Scope, ctx: Context) -> None:
        elem = self.resolve_type(d.elem, scope)
        self.expr(d.size, scope, ctx)
        size = self.const_value(d.size, scope)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise fail(
                d.size.pos, f"{d.name}: value_set size must be a positive compile-time constant"
            )
        d.elem_type, d.size_value = elem, size
        self.define(scope, Sym("value_set", d.name, d.pos, T.ValueSetT(elem), d, value=size))

    def decl_ActionDecl(self, d: A.ActionDecl, scope: Scope, ctx: Context) -> None:
        seen_directionless = False
        for p in d.params:
            if p.direction == "":
                seen_directionless = True
            elif seen_directionless:
                raise fail(
                    p.pos,
                    f"{p.name}: parameters with a direction must come before directionless action parameters",
                )
        self.define(scope, Sym("action", d.name, d.pos, T.CallableT("action", d.name, d), d))
        inner = self.params_scope(d.params, scope, "action")
        for p in d.params:
            if p.direction == "" and isinstance(T.strip_newtype(p.type), (T.ExternT, T.BlockT)):
                raise fail(p.pos, f"{p.name}: action parameters cannot have type {p.type}")
        actx = Context("action", ctx.block)
        self.block(d.body, inner, actx, new_scope=False)

    def decl_FunctionDecl(self, d: A.FunctionDecl, scope: Scope, ctx: Context) -> None:
        sym = self.define(scope, Sym("function", d.name, d.pos, None, d, overloads=[d]))
        tscope = Scope(scope, "type")
        for tp in d.type_params:
            self.define(tscope, Sym("type", tp, d.pos, T.TypeVar(tp)))
        rt = self.resolve_type(d.return_type, tscope)
        d.resolved_return = rt
        inner = self.params_scope(d.params, tscope, "function")
        d.resolved_params = [(p, p.type) for p in d.params]
        # the body may not call the function itself: P4 forbids recursion
        scope.names.pop(d.name) if sym.overloads == [d] else None
        fctx = Context("function", ctx.block, return_type=rt)
        self.block(d.body, inner, fctx, new_scope=False)
        if sym.overloads == [d]:
            scope.names[d.name] = sym
        if rt is not T.VOID and not self.always_returns(d.body):
            raise fail(d.pos, f"{d.name}: function does not return a value on every path")

    def always_returns(self, s: A.Stmt) -> bool:
        if isinstance(s, (A.Return, A.Exit)):
            return True
        if isinstance(s, A.Block):
            return any(self.always_returns(x) for x in s.stmts)
        if isinstance(s, A.If):
            return (
                s.other is not None and self.always_returns(s.then) and self.always_returns(s.other)
            )
        if isinstance(s, A.Switch):
            has_default = any(isinstance(c.label, A.Default) for c in s.cases)
            return has_default and all(
                c.body is None or self.always_returns(c.body) for c in s.cases
            )
        return False

    def decl_Instance(self, d: A.Instance, scope: Scope, ctx: Context) -> None:
        t = self.instantiate(d.typeref, d.args, scope, ctx, d.pos)
        if d.body:
            inner = Scope(scope, "instance")
            for m in d.body:
                self.declaration(m, inner, Context("function", ctx.block))
        d.inst_type = t
        self.define(scope, Sym("instance", d.name, d.pos, t, d))
        if d.name == "main" and scope is self.globals:
            if not (isinstance(t, T.BlockT) and t.kind == "package"):
                raise fail(d.pos, "main must be an instance of a package")
            self.main = d

    def instantiate(
        self, typeref: A.TypeRef, args: list[A.Argument], scope: Scope, ctx: Context, pos: SourcePos
    ) -> T.Type:
        """Check a constructor call ``Type(args)`` and return the instance's type."""
        t = self.resolve_type(typeref, scope, allow_generic=True)
        if isinstance(t, T.ExternT):
            ctors = [m for m in t.decl.methods if m.return_type is None]
            if not ctors:
                raise fail(pos, f"{t.name}: extern has no constructor")
            bindings = dict(t.args)
            proto = self.pick_overload(ctors, args, pos, t.name)
            self.bind_args(proto.resolved_params, args, scope, ctx, bindings, pos, t.name)
            for tp in t.decl.type_params:
                bindings.setdefault(tp, T.TypeVar(tp))
            return T.ExternT(t.name, t.decl, bindings)
        if isinstance(t, T.BlockT):
            decl = t.decl
            if isinstance(decl, A.TypeDeclProto) and decl.kind != "package":
                raise fail(pos, f"{t.name}: cannot instantiate a {decl.kind} type declaration")
            params = [
                (p, p.type if hasattr(p, "type") and p.type is not None else pt)
                for p, pt in self.ctor_params(decl)
            ]
            bindings = dict(t.args)
            self.bind_args(params, args, scope, ctx, bindings, pos, t.name)
            return T.BlockT(t.kind, t.name, decl, bindings)
        raise fail(pos, f"{self.describe_typeref(typeref)}: cannot instantiate a value of type {t}")

    def ctor_params(self, decl: Any) -> list[tuple[A.Param, T.Type]]:
        if isinstance(decl, A.TypeDeclProto):
            return decl.resolved_params
        return [(p, p.type) for p in decl.ctor_params]

    def describe_typeref(self, t: A.TypeRef) -> str:
        if isinstance(t, A.NamedType):
            return t.name
        if isinstance(t, A.SpecializedType):
            return t.base.name
        return "type"

    def decl_TableDecl(self, d: A.TableDecl, scope: Scope, ctx: Context) -> None:
        if ctx.kind != "control":
            raise fail(d.pos, f"{d.name}: tables can only be declared in controls")
        self.define(scope, Sym("table", d.name, d.pos, T.TableT(d, d.name), d))
        TableChecker(self, d, scope, ctx).check()

    # ================================================================= types
    def resolve_type(self, t: A.TypeRef, scope: Scope, allow_generic: bool = False) -> T.Type:
        if isinstance(t, A.BitsType):
            if t.width is None:
                return T.Bits(1, False)
            self.expr(t.width, scope, Context("global"))
            w = self.const_value(t.width, scope)
            if not isinstance(w, int) or isinstance(w, bool):
                raise fail(t.pos, "width of a bit<>/int<> type must be a compile-time constant")
            if w < (1 if t.signed else 0) or w > 2048:
                raise fail(t.pos, f"invalid width {w} for {'int' if t.signed else 'bit'}<>")
            return T.Bits(w, t.signed)
        if isinstance(t, A.VarbitType):
            self.expr(t.width, scope, Context("global"))
            w = self.const_value(t.width, scope)
            if not isinstance(w, int) or w <= 0:
                raise fail(t.pos, "width of varbit<> must be a positive compile-time constant")
            return T.Varbit(w)
        if isinstance(t, A.BaseType):
            simple = {
                "int": T.INFINT,
                "bool": T.BOOL,
                "string": T.STRING,
                "void": T.VOID,
                "error": T.ERROR,
                "match_kind": T.MATCH_KIND,
                "_": T.DONTCARE,
            }
            if t.name in simple:
                return simple[t.name]
            raise fail(t.pos, f"unsupported type argument {t.name[1:]}")
        if isinstance(t, A.NamedType):
            sym = (self.globals if t.dot else scope).lookup(t.name)
            if sym is None:
                raise fail(t.pos, f"{t.name}: type not found (undeclared)")
            if sym.kind != "type":
                raise fail(t.pos, f"{t.name}: is not a type")
            return sym.type
        if isinstance(t, A.SpecializedType):
            base = self.resolve_type(t.base, scope)
            args = [self.resolve_type(a, scope) for a in t.args]
            params = getattr(getattr(base, "decl", None), "type_params", None)
            if params is None or not params:
                raise fail(t.pos, f"{t.base.name}: is not a generic type")
            if len(params) != len(args):
                raise fail(
                    t.pos, f"{t.base.name}: expects {len(params)} type arguments, got {len(args)}"
                )
            binding = dict(zip(params, args, strict=True))
            if isinstance(base, T.ExternT):
                return T.ExternT(base.name, base.decl, binding)
            if isinstance(base, T.BlockT):
                return T.BlockT(base.kind, base.name, base.decl, binding)
            if isinstance(base, T.StructT):
                return self.specialize_struct(base, binding)
            raise fail(t.pos, f"{t.base.name}: cannot be specialized")
        if isinstance(t, A.StackType):
            elem = self.resolve_type(t.elem, scope)
            self.expr(t.size, scope, Context("global"))
            size = self.const_value(t.size, scope)
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise fail(t.pos, "header stack size must be a positive compile-time constant")
            b = T.strip_newtype(elem)
            if not (
                isinstance(b, T.StructT) and b.kind in ("header", "header_union")
            ) and not isinstance(b, T.TypeVar):
                raise fail(
                    t.pos, f"header stack elements must be headers or header unions, not {elem}"
                )
            return T.StackT(elem, size)
        if isinstance(t, A.TupleType):
            return T.TupleT(tuple(self.resolve_type(a, scope) for a in t.args))
        raise fail(t.pos, "unsupported type")

    def specialize_struct(self, base: T.StructT, binding: dict[str, T.Type]) -> T.StructT:
        name = f"{base.name}<{', '.join(map(str, binding.values()))}>"
        key = (id(base.decl), name)
        st = self.struct_types.get(key)
        if st is None:
            fields = {k: self.subst(v, binding) for k, v in base.fields.items()}
            st = self.struct_types[key] = T.StructT(base.kind, name, fields, base.decl)
        return st

    def subst(self, t: T.Type, binding: dict[str, T.Type]) -> T.Type:
        if isinstance(t, T.TypeVar):
            return binding.get(t.name, t)
        if isinstance(t, T.StackT):
            return T.StackT(self.subst(t.elem, binding), t.size)
        if isinstance(t, T.TupleT):
            return T.TupleT(tuple(self.subst(e, binding) for e in t.elems))
        if isinstance(t, T.ExternT) and t.args:
            return T.ExternT(t.name, t.decl, {k: self.subst(v, binding) for k, v in t.args.items()})
        if isinstance(t, T.BlockT) and t.args:
            return T.BlockT(
                t.kind, t.name, t.decl, {k: self.subst(v, binding) for k, v in t.args.items()}
            )
        return t

    # ================================================================= statements
    def block(self, b: A.Block, scope: Scope, ctx: Context, new_scope: bool = True) -> None:
        inner = Scope(scope, "block") if new_scope else scope
        for s in b.stmts:
            self.statement(s, inner, ctx)

    def statement(self, s: A.Stmt, scope: Scope, ctx: Context) -> None:
        if isinstance(s, A.Decl):
            if isinstance(s, A.Instance) and ctx.kind not in ("control", "parser"):
                raise fail(s.pos, f"{s.name}: instantiation is not allowed here")
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
        if not self.assignable(dst, src):
            raise fail(e.pos, f"{what}: cannot convert {src} to {dst} (type mismatch)")
        if isinstance(src, T.InfInt) and isinstance(T.strip_newtype(dst), T.Bits):
            self.retype_literal(e, T.strip_newtype(dst))

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

    def shift(self, e: A.Binary, lt: T.Type, rt: T.Type, scope: Scope) -> T.Type:
        lb, rb = T.strip_newtype(lt), T.strip_newtype(rt)
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
        elif ft.extern.name == "packet_out" and ft.name == "emit":
            if not self.emittable(arg_t):
                raise fail(
                    e.args[0].value.pos,
                    f"emit: argument must be a header, header stack, header_union or a struct of them, not {arg_t}",
                )

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
        """Match arguments to parameters, inferring type variables; check directions."""
        if any(a.name for a in args):
            by_name = {p.name: (p, t) for p, t in params}
            pairs = []
            for a in args:
                if a.name not in by_name:
                    raise fail(a.pos, f"{name}: no parameter named {a.name}")
                pairs.append((by_name[a.name], a))
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
            if a.value is None:  # `_`
                if p.direction not in ("out", "inout", ""):
                    raise fail(
                        a.pos, f"{p.name}: don't care '_' can only be passed to an out parameter"
                    )
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


class TypeValue(T.Type):
    """The 'type' of a name that denotes a type (used for E.member, error.X, T.minSizeInBits)."""

    def __init__(self, t: T.Type) -> None:
        self.type = t

    def __str__(self) -> str:
        return f"type {self.type}"


class BuiltinMethod(T.Type):
    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.target = target

    def __str__(self) -> str:
        return f"method {self.name}"


class MethodRef(T.Type):
    def __init__(self, name: str, extern: T.ExternT, methods: list[A.MethodProto]) -> None:
        self.name = name
        self.extern = extern
        self.methods = methods

    def __str__(self) -> str:
        return f"method {self.extern.name}.{self.name}"


class TableChecker:
    """The rules for a table's properties: keys, actions, default action, entries, size."""

    def __init__(self, checker: Checker, table: A.TableDecl, scope: Scope, ctx: Context) -> None:
        self.c = checker
        self.t = table
        self.scope = scope
        self.ctx = ctx

    @staticmethod
    def prop(table: A.TableDecl, name: str) -> Any:
        for p in table.properties:
            if p.name == name:
                return p.value
        return None

    def check(self) -> None:
        seen: set[str] = set()
        for p in self.t.properties:
            if p.name in seen:
                raise fail(p.pos, f"{p.name}: duplicate property in table {self.t.name}")
            seen.add(p.name)
        if "actions" not in seen:
            raise fail(self.t.pos, f"{self.t.name}: table has no 'actions' property")
        self.key_types: list[T.Type] = []
        self.actions: dict[str, tuple[A.ActionDecl, A.ActionRef]] = {}
        for p in self.t.properties:
            if p.name == "key":
                self.keys(p.value)
        for p in self.t.properties:
            if p.name == "actions":
                self.action_list(p.value)
        for p in self.t.properties:
            if p.name == "default_action":
                self.default_action(p)
            elif p.name == "entries":
                self.entries(p)
            elif p.name == "size":
                self.c.expr(p.value, self.scope, self.ctx)
                v = self.c.const_value(p.value, self.scope)
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise fail(
                        p.value.pos,
                        f"{self.t.name}: size must be a non-negative compile-time constant",
                    )
            elif p.name in ("key", "actions"):
                continue
            elif isinstance(p.value, A.Expr):
                if p.name in ("implementation", "counters", "meters"):
                    self.extern_property(p)
                else:
                    self.c.expr(p.value, self.scope, self.ctx)

    def extern_property(self, p: A.TableProperty) -> None:
        wanted = {
            "implementation": ("action_profile", "action_selector"),
            "counters": ("direct_counter",),
            "meters": ("direct_meter",),
        }[p.name]
        if isinstance(p.value, A.Call):
            t = self.c.instantiate(
                A.NamedType(p.value.pos, self.c.describe(p.value.func)),
                p.value.args,
                self.scope,
                self.ctx,
                p.value.pos,
            )
            p.value.type = t
        else:
            t = self.c.expr(p.value, self.scope, self.ctx)
        if not (isinstance(t, T.ExternT) and t.name in wanted):
            raise fail(
                p.value.pos,
                f"{self.t.name}: property {p.name} must name a {' or '.join(wanted)} instance",
            )

    def keys(self, elements: list[A.KeyElement]) -> None:
        lpm = 0
        for k in elements:
            kt = self.c.expr(k.expr, self.scope, self.ctx)
            if k.match_kind not in self.c.match_kinds:
                raise fail(
                    k.match_kind_pos or k.pos, f"{k.match_kind}: not a match_kind (undeclared)"
                )
            b = T.strip_newtype(kt)
            if not (isinstance(b, T.Bits) or b in (T.BOOL, T.ERROR) or isinstance(b, T.EnumT)):
                raise fail(k.expr.pos, f"table key of type {kt} is not supported")
            if k.match_kind == "lpm":
                lpm += 1
                if lpm > 1:
                    raise fail(k.pos, f"{self.t.name}: a table may have at most one lpm key")
            self.key_types.append(kt)

    def action_list(self, refs: list[A.ActionRef]) -> None:
        for r in refs:
            e = r.expr
            call = e if isinstance(e, A.Call) else None
            fn = call.func if call else e
            if not isinstance(fn, A.Name):
                raise fail(e.pos, "table actions must name actions")
            sym = (self.c.globals if fn.dot else self.scope).lookup(fn.name)
            if sym is None:
                raise fail(fn.pos, f"{fn.name}: action not found (undeclared)")
            if sym.kind != "action":
                raise fail(fn.pos, f"{fn.name}: is not an action")
            fn.sym = sym
            fn.type = T.CallableT("action", fn.name, sym)
            if fn.name in self.actions:
                raise fail(fn.pos, f"{fn.name}: duplicate action in table {self.t.name}")
            decl: A.ActionDecl = sym.decl
            args = call.args if call else []
            directional = [p for p in decl.params if p.direction]
            if len(args) > len(decl.params) or (len(args) < len(directional)):
                raise fail(
                    e.pos,
                    f"{fn.name}: action in a table's action list must get exactly its "
                    f"directional arguments ({len(directional)}), got {len(args)}",
                )
            self.c.bind_args(
                [(p, p.type) for p in decl.params[: len(args)]],
                args,
                self.scope,
                self.ctx,
                {},
                e.pos,
                fn.name,
            )
            if call:
                call.type = T.VOID
            self.actions[fn.name] = (decl, r)

    def action_call(self, e: A.Expr, what: str) -> A.ActionDecl:
        """A default_action or entry action: a listed action with all its arguments."""
        call = e if isinstance(e, A.Call) else None
        fn = call.func if call else e
        if not isinstance(fn, A.Name):
            raise fail(e.pos, f"{what} must be an action call")
        if fn.name not in self.actions:
            sym = self.scope.lookup(fn.name)
            if sym is None:
                raise fail(fn.pos, f"{fn.name}: action not found (undeclared)")
            raise fail(
                fn.pos, f"{what}: {fn.name} is not in the actions list of table {self.t.name}"
            )
        decl, ref = self.actions[fn.name]
        fn.sym = self.scope.lookup(fn.name) or (self.c.globals.lookup(fn.name))
        fn.type = T.CallableT("action", fn.name, fn.sym)
        args = call.args if call else []
        if call is None and decl.params:
            raise fail(e.pos, f"{what}: action {fn.name} needs arguments: {fn.name}(...)")
        if len(args) != len(decl.params):
            raise fail(
                e.pos,
                f"{what}: action {fn.name} expects {len(decl.params)} arguments, got {len(args)}",
            )
        self.c.bind_args(
            [(p, p.type) for p in decl.params], args, self.scope, self.ctx, {}, e.pos, fn.name
        )
        for a, p in zip(args, decl.params, strict=True):
            if (
                p.direction == ""
                and a.value is not None
                and self.c.const_value(a.value, self.scope) is None
                and not isinstance(a.value.type, T.EnumT)
                and a.value.type is not T.ERROR
                and not isinstance(T.strip_newtype(a.value.type), T.StructT)
            ):
                raise fail(
                    a.value.pos,
                    f"{what}: argument {p.name} of {fn.name} must be a compile-time constant",
                )
        if call is not None:
            call.type = T.VOID
        return decl

    def default_action(self, p: A.TableProperty) -> None:
        decl = self.action_call(p.value, "default_action")
        for _, ref in [self.actions[decl.name]]:
            if any(a.name == "tableonly" for a in ref.annotations):
                raise fail(
                    p.value.pos,
                    f"{decl.name}: action is @tableonly and cannot be the default action",
                )

    def entries(self, p: A.TableProperty) -> None:
        if not self.key_types and p.value:
            raise fail(p.pos, f"{self.t.name}: a table without keys cannot have entries")
        for entry in p.value:
            ks = entry.keyset
            n = len(self.key_types)
            if isinstance(ks, A.ListExpr) and (n != 1 or len(ks.items) == 1):
                items = ks.items
            else:
                items = [ks]
            if isinstance(ks, (A.Default, A.DontCare)) and n > 1:
                items = [ks] * n
            if len(items) != n:
                raise fail(ks.pos, f"entry has {len(items)} keys but table {self.t.name} has {n}")
            for item, kt in zip(items, self.key_types, strict=True):
                self.c.simple_keyset(item, kt, self.scope, self.ctx)
            ks.type = T.DONTCARE if ks.type is None else ks.type
            if entry.priority is not None:
                self.c.expr(entry.priority, self.scope, self.ctx)
                if self.c.const_value(entry.priority, self.scope) is None:
                    raise fail(entry.priority.pos, "entry priority must be a compile-time constant")
            decl = self.action_call(entry.action, "entry action")
            ref = self.actions[decl.name][1]
            if any(a.name == "defaultonly" for a in ref.annotations):
                raise fail(
                    entry.action.pos,
                    f"{decl.name}: action is @defaultonly and cannot be used in entries",
                )


def check(program: A.Program) -> CheckedProgram:
    return Checker(program).check()
