"""Table properties: keys, action lists, default actions, entries, size."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ast as A
from . import types as T
from .check_base import (
    Context,
    fail,
)
from .errors import CompileWarning
from .symbols import Scope

if TYPE_CHECKING:
    from .checker import Checker


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
        self.key_kinds: list[str] = []
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
            elif p.name == "largest_priority_wins" and "entries" in seen:
                # p4c: a compile-time boolean; false makes the smallest entry priority win
                # (without entries p4c ignores the property, with a warning)
                t = self.c.expr(p.value, self.scope, self.ctx)
                if T.strip_newtype(t) is not T.BOOL or not isinstance(
                    self.c.const_value(p.value, self.scope), bool
                ):
                    raise fail(p.value.pos, "largest_priority_wins must be a boolean expression")
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
            if not any(a.name == "name" for a in k.annotations):
                complex_part = self.unnameable(k.expr)
                if complex_part is not None:
                    raise fail(
                        complex_part.pos,
                        f"{self.t.name}: complex key expression requires a @name annotation",
                    )
            if k.match_kind == "lpm":
                lpm += 1
                if lpm > 1:
                    # at the table, as p4c's BMv2 back end reports it
                    raise fail(
                        self.t.pos, f"multiple LPM keys in table {self.t.name} not supported"
                    )
            self.key_types.append(kt)
            self.key_kinds.append(k.match_kind)

    def entry_value_fits(self, item: A.Expr, kt: T.Type, kind: str) -> None:
        """An lpm or optional entry value (and mask) wider than the key is cut to the key's
        width with p4c's ``[--Wwarn=overflow]`` warning (p4c 1.2.5 accepts it so: checked by
        bench/p4c_diff.py)."""
        b = T.strip_newtype(kt)
        if not isinstance(b, T.Bits) or b.signed:
            return
        parts = [item.value, item.mask] if isinstance(item, A.Mask) else [item]
        for part in parts:
            if isinstance(part, A.IntLit) and part.width is None:
                value = part.value  # as written, before it took the key's type
            else:
                continue
            if value < 0 or value >= 1 << b.width:
                written = part.text or str(value)
                part.value = value & ((1 << b.width) - 1)
                self.c.warnings.append(
                    CompileWarning(
                        part.pos,
                        "overflow",
                        f"{b.width}w{written}: value does not fit in {b.width} bits",
                    )
                )

    @classmethod
    def unnameable(cls, e: A.Expr) -> A.Expr | None:
        """The innermost part of a key expression the control plane cannot be given a name
        for (p4c names only paths, members, constant or named indexes and slices, ``&`` of
        nameable parts, and ``isValid()``); None when the whole key has a name."""
        parts: list[A.Expr]
        if isinstance(e, (A.Name, A.IntLit, A.TypeExpr)):
            return None
        if isinstance(e, A.Member):
            parts = [e.expr]
        elif isinstance(e, A.Index):
            parts = [e.expr, e.index]
        elif isinstance(e, A.Slice):
            parts = [e.expr, e.hi, e.lo]
        elif isinstance(e, A.Binary) and e.op == "&":
            parts = [e.left, e.right]
        elif (
            isinstance(e, A.Call)
            and isinstance(e.func, A.Member)
            and e.func.name == "isValid"
            and not e.args
        ):
            parts = [e.func.expr]
        else:
            for child in cls.children(e):
                found = cls.unnameable(child)
                if found is not None:
                    return found
            return e
        for part in parts:
            found = cls.unnameable(part)
            if found is not None:
                return found
        return None

    @staticmethod
    def children(e: A.Expr) -> list[A.Expr]:
        """The operand expressions of ``e`` (for reporting the innermost complex part)."""
        out: list[A.Expr] = []
        for name in ("expr", "left", "right", "cond", "then", "other", "func"):
            v = getattr(e, name, None)
            if isinstance(v, A.Expr):
                out.append(v)
        for a in getattr(e, "args", None) or []:
            if isinstance(a, A.Argument) and a.value is not None:
                out.append(a.value)
        return out

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
        for entry in p.value if p.is_const else []:
            if entry.priority is not None:
                # p4c: const entries take their priorities from their order only
                raise fail(
                    entry.keyset.pos, "Entry: Table with 'const' entries cannot have priorities"
                )
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
            for item, kt, kind in zip(items, self.key_types, self.key_kinds, strict=True):
                self.c.simple_keyset(item, kt, self.scope, self.ctx)
                if kind in ("lpm", "optional"):
                    self.entry_value_fits(item, kt, kind)
            ks.type = T.DONTCARE if ks.type is None else ks.type
            if entry.priority is not None and not any(
                k in ("ternary", "range", "optional") for k in self.key_kinds
            ):
                raise fail(
                    entry.priority.pos,
                    f"{self.t.name}: entry has a priority, but the table's keys "
                    f"({', '.join(sorted(set(self.key_kinds)))}) need none",
                )
            if entry.priority is None and any(e.priority is not None for e in p.value):
                # p4c (EntryPriorities): once one entry names a priority, all must
                raise fail(
                    ks.pos,
                    f"{self.t.name}: entry must have a priority (another entry of the "
                    "table has one)",
                )
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
