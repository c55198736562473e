"""Declarations: types, externs, blocks, actions, functions, instances, tables."""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .check_base import (
    Context,
    fail,
)
from .check_tables import TableChecker
from .errors import CompileWarning, SourcePos
from .symbols import Scope, Sym


class DeclsMixin:
    """Checker methods for declarations (mixed into Checker)."""

    # ================================================================= declarations
    def define(self, scope: Scope, sym: Sym) -> Sym:
        self.check_shadowing(scope, sym.name, sym.kind, sym.pos)
        old = scope.names.get(sym.name)
        if old is not None:
            overloadable = ("function", "extern_function")
            if old.kind in overloadable and sym.kind in overloadable:
                old.overloads.extend(sym.overloads)
                return old
            raise fail(sym.pos, f"{sym.name}: duplicate declaration (previous one at {old.pos})")
        scope.names[sym.name] = sym
        return sym

    def check_shadowing(self, scope: Scope, name: str, kind: str, pos: SourcePos) -> None:
        """p4c's ResolveReferences::checkShadowing: a declaration inside a block, action,
        control, parser, state or table whose name an enclosing scope already declares is
        warned about (``'x' shadows 'x'``), and one that hides a parameter is an error."""
        if scope.kind in ("global", "type", "instance") or scope.parent is None:
            return  # top level, type parameters, abstract method bodies: p4c checks none
        prev = scope.parent.lookup(name)
        if prev is None or prev.pos == pos:
            return
        overloadable = ("function", "extern_function")
        if kind in overloadable and prev.kind in overloadable:
            return  # overloads, not shadowing
        if prev.kind == "param" and kind not in ("param", "property"):
            raise fail(pos, f"declaration of '{name}' shadows a parameter '{name}'")
        self.warnings.append(
            CompileWarning(pos, "shadow", f"'{name}' shadows '{prev.name}'", prev.pos)
        )

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
        # Several varbit fields in one header are not a front-end error (p4c's front end
        # objects only when such a header is extracted, check_calls.packet_method_rules);
        # BMv2's back end refuses the header type (bmv2rules).
        for f in d.fields:
            if f.name in st.fields:
                raise fail(f.pos, f"{f.name}: duplicate field in {d.kind} {d.name}")
            ft = self.resolve_type(f.typeref, inner)
            self.check_field_type(d, f, ft)
            st.fields[f.name] = ft

    def check_field_type(self, d: A.StructLike, f: A.FieldDecl, ft: T.Type) -> None:
        base = T.strip_newtype(ft)
        if d.kind == "header":
            ok = (
                isinstance(base, (T.Bits, T.Varbit, T.TypeVar))  # a type parameter: checked
                or base is T.BOOL  # again when the generic header is specialized
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
        if scope is self.globals and isinstance(t, T.BlockT) and t.kind in ("parser", "control"):
            raise fail(d.pos, f"{d.name}: cannot instantiate a {t.kind} at top level")
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
            self.order_named_args([p for p, _ in proto.resolved_params], args)
            for a in args:
                # constructor arguments are compile-time values (p4c's type inference)
                at = T.strip_newtype(a.value.type) if a.value is not None else None
                if (isinstance(at, (T.Bits, T.InfInt)) or at == T.BOOL) and self.const_value(
                    a.value, scope
                ) is None:
                    raise fail(
                        a.value.pos,
                        f"{self.describe(a.value)}: cannot evaluate to a compile-time constant",
                    )
            for tp in t.decl.type_params:
                bindings.setdefault(tp, T.TypeVar(tp))
            return T.ExternT(t.name, t.decl, bindings)
        if isinstance(t, T.BlockT):
            decl = t.decl
            self.no_self_reference(t, ctx, typeref.pos)
            if isinstance(decl, A.TypeDeclProto) and decl.kind != "package":
                raise fail(pos, f"{t.name}: cannot instantiate a {decl.kind} type declaration")
            params = [
                (p, p.type if hasattr(p, "type") and p.type is not None else pt)
                for p, pt in self.ctor_params(decl)
            ]
            bindings = dict(t.args)
            self.bind_args(params, args, scope, ctx, bindings, pos, t.name)
            self.order_named_args([p for p, _ in params], args)
            return T.BlockT(t.kind, t.name, decl, bindings)
        raise fail(pos, f"{self.describe_typeref(typeref)}: cannot instantiate a value of type {t}")

    @staticmethod
    def no_self_reference(t: T.BlockT, ctx: Context, pos: SourcePos) -> None:
        """p4c's TypeInference: a control or parser may not name itself inside its own body
        (an instance of itself, or a direct ``Self.apply(...)``): it would contain itself."""
        block = ctx.block
        if block is None or t.decl is not block:
            return
        if isinstance(block, A.ControlDecl):
            raise fail(pos, f"{t.name}: Cannot refer to control inside itself")
        raise fail(pos, f"{t.name}: Cannot refer parser inside itself")

    @staticmethod
    def order_named_args(params: list[A.Param], args: list[A.Argument]) -> None:
        """Put checked named constructor arguments (``V1Switch(p = P(), ig = I(), ...)``, in
        any order) into parameter order, in place, so that every later stage (the control-plane
        model, the switch's builder) can read them by position. Arguments that leave out
        parameters with default values keep the order they were written in."""
        if not args or any(a.name is None for a in args):
            return
        index = {p.name: i for i, p in enumerate(params)}
        ordered = sorted(args, key=lambda a: index.get(a.name, len(index)))
        if [index.get(a.name) for a in ordered] == list(range(len(args))):
            args[:] = ordered

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
        for prop in d.properties:  # p4c's table properties are declarations too
            self.check_shadowing(Scope(scope, "table"), prop.name, "property", prop.pos)
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
            named = self.named_type(t, scope)
            if (
                isinstance(named, T.StructT)
                and getattr(named.decl, "type_params", None)
                and "<" not in named.name  # not a typedef of a specialization
            ):
                # p4c infers type arguments of externs and blocks, never of a generic struct
                raise fail(t.pos, f"Unspecified type parameters for {named.kind} {t.name}")
            return named
        if isinstance(t, A.SpecializedType):
            base = (
                self.named_type(t.base, scope)
                if isinstance(t.base, A.NamedType)
                else self.resolve_type(t.base, scope)
            )
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
            # P4_16 1.2.5 arrays: any fixed-size element (bit<W>, int<W>, bool, enums,
            # structs) besides the headers and unions of a header stack
            array_elem = (isinstance(b, T.StructT) and b.kind == "struct") or (
                b is T.BOOL or isinstance(b, (T.Bits, T.EnumT))
            )
            if (
                not (isinstance(b, T.StructT) and b.kind in ("header", "header_union"))
                and not isinstance(b, T.TypeVar)
                and not array_elem
            ):
                raise fail(
                    t.pos, f"header stack elements must be headers or header unions, not {elem}"
                )
            return T.StackT(elem, size)
        if isinstance(t, A.TupleType):
            return T.TupleT(tuple(self.resolve_type(a, scope) for a in t.args))
        raise fail(t.pos, "unsupported type")

    def named_type(self, t: A.NamedType, scope: Scope) -> T.Type:
        sym = (self.globals if t.dot else scope).lookup(t.name)
        if sym is None:
            raise fail(t.pos, f"{t.name}: type not found (undeclared)")
        if sym.kind != "type":
            raise fail(t.pos, f"{t.name}: is not a type")
        return sym.type

    def specialize_struct(self, base: T.StructT, binding: dict[str, T.Type]) -> T.StructT:
        name = f"{base.name}<{', '.join(map(str, binding.values()))}>"
        key = (id(base.decl), name)
        st = self.struct_types.get(key)
        if st is None:
            fields = {k: self.subst(v, binding) for k, v in base.fields.items()}
            if isinstance(base.decl, A.StructLike):
                for f in base.decl.fields:
                    if f.name in fields and not self.has_typevar(fields[f.name]):
                        self.check_field_type(base.decl, f, fields[f.name])
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
