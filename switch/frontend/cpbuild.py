"""Build the control-plane model from a checked program, naming objects as p4c does.

p4c names every control-plane object by its place in the instance tree: the control's name
(or the instance name when a control is instantiated by name), then the local name, joined
with dots; ``@name("x")`` replaces the local name and ``@name(".x")`` is absolute.
"""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .checker import CheckedProgram, Checker, TableChecker
from .cpbuild_names import annotation_texts, expr_text, id_annotation, name_annotation, qualify
from .cpbuild_types import TypesMixin
from .cpmodel import (
    ControlPlaneModel,
    CPAction,
    CPActionProfile,
    CPActionRef,
    CPCounter,
    CPMatchField,
    CPMeter,
    CPParam,
    CPRegister,
    CPTable,
    CPValueSet,
)
from .errors import CompileError, CompileWarning

COUNTER_UNITS = {"packets": "PACKETS", "bytes": "BYTES", "packets_and_bytes": "BOTH"}


class ModelBuilder(TypesMixin):
    """The control-plane model of a checked program; digests, user types and controller
    headers are collected by TypesMixin (cpbuild_types.py)."""

    def __init__(self, checked: CheckedProgram) -> None:
        self.checked = checked
        self.model = ControlPlaneModel()
        self.actions: dict[str, CPAction] = {}
        self.seen_types: set[str] = set()
        self.instances: dict[int, str] = {}  # id(extern Instance decl) -> control-plane name
        self.ids_seen: dict[int, Any] = {}
        self.table_owners: dict[str, A.TableDecl] = {}
        self.action_decls: dict[str, A.ActionDecl] = {}
        # actions some table lists; the others are only called from an apply block
        self.table_actions: set[str] = set()
        # p4c's order of actions (see build()): a block-local action by (the V1Switch
        # argument it is under, its place in that block once inlined), a top-level one by
        # its first reference
        self.root_index = 0
        self.local_rank: dict[str, tuple[int, int]] = {}
        self.first_use: dict[str, int] = {}

    def build(self) -> ControlPlaneModel:
        main = self.checked.main
        assert main is not None
        self.model.pkg_annotations = annotation_texts(main.annotations)
        self.model.errors = list(self.checked.error_members)
        for index, arg in enumerate(main.args):
            self.root_index = index
            self.block_arg(arg.value, "")
        for d in self.checked.program.decls:
            if isinstance(d, A.Instance) and d is not main:
                sym = self.checked.scope.names.get(d.name)
                if sym is not None and isinstance(sym.type, T.ExternT):
                    self.extern_instance(d, sym.type, "")
            if isinstance(d, A.StructLike) and d.kind == "header":
                self.controller_header(d)
        self.digests()

        # p4c lists the top-level actions first, in the order tables (in the order of the
        # inlined program) first refer to them (a table's action list, then its implicit
        # default NoAction); then every block's own actions, V1Switch argument by argument,
        # in the order of the inlined block: instances in place, the hidden instances of
        # direct invocations `C.apply()` after the block's own locals (checked against
        # p4c-bm2-ss 1.2.5 by bench/p4c_diff.py --rules, area action_order)
        def place(action: CPAction) -> tuple[int, int, int]:
            if action.name in self.local_rank:
                return (1, *self.local_rank[action.name])
            return (0, self.first_use.get(action.name, 0), 0)

        for action in self.actions.values():
            if action.name not in self.table_actions:
                # p4c's midend turns the directionless parameters of an action that is only
                # called directly into locals (their values come from the call), so its
                # P4Info lists none; checked against p4c-bm2-ss by bench/p4c_diff.py
                action.params = []
        self.model.actions = sorted(self.actions.values(), key=place)
        return self.model

    # ------------------------------------------------------------------ the instance tree
    def block_arg(self, e: A.Expr | None, prefix: str) -> None:
        if e is None:
            return
        t = e.type
        if not isinstance(t, T.BlockT):
            return
        if isinstance(e, A.Call):
            name = t.name
            decl = t.decl
        elif isinstance(e, A.Name):
            sym = e.sym
            decl = t.decl
            name = qualify(prefix, sym.decl) if sym.decl is not None else e.name
        else:
            return
        self.block(decl, name)

    def block(self, decl: Any, prefix: str) -> None:
        if isinstance(decl, A.ControlDecl):
            locals_ = decl.locals
        elif isinstance(decl, A.ParserDecl):
            locals_ = decl.locals
        else:
            return
        # p4c's front end removes tables and parser/control instances nothing refers to
        # (RemoveUnusedDeclarations: "Table t is not used; removing"), so P4Info lacks them;
        # extern instances stay even when unused.
        used = referenced_decls(decl)
        tables = [d for d in locals_ if isinstance(d, A.TableDecl) and id(d) in used]
        for d in locals_:
            if isinstance(d, A.Instance):
                t = getattr(d, "inst_type", None)
                if isinstance(t, T.ExternT):
                    self.extern_instance(d, t, prefix)
                elif isinstance(t, T.BlockT) and id(d) in used:
                    self.block(t.decl, qualify(prefix, d))
            elif isinstance(d, A.ValueSetDecl):
                self.value_set(d, prefix)
            elif isinstance(d, A.ActionDecl):
                rank = (self.root_index, len(self.local_rank))
                self.local_rank.setdefault(qualify(prefix, d), rank)
        for d in tables:
            self.table(d, prefix)
        # a direct invocation `C.apply()` is p4c's hidden instance named after the type
        # (InstantiateDirectCalls), placed after the block's own locals, in the order the
        # calls are written
        bodies = [decl.body] if isinstance(decl, A.ControlDecl) else decl.states
        for node in iter_syntax(bodies):
            direct = _direct_invocation(node)
            if direct is not None:
                self.block(direct.sym.type.decl, f"{prefix}.{direct.name}")
        self.walk_calls(decl, prefix)

    def walk_calls(self, decl: Any, prefix: str) -> None:
        """Digests and extern function calls, found in statement bodies."""
        bodies: list[Any] = []
        if isinstance(decl, A.ControlDecl):
            bodies.append(decl.body)
            bodies += [d.body for d in decl.locals if isinstance(d, A.ActionDecl)]
        else:
            bodies += [s for st in decl.states for s in st.stmts]
        apply_calls = set()
        if isinstance(decl, A.ControlDecl):
            # the calls written in the apply block itself (iter_syntax: not the bodies of the
            # actions it calls, which iter_nodes would reach through each call's target)
            apply_calls = {id(n) for n in iter_syntax([decl.body]) if isinstance(n, A.Call)}
        for node in iter_nodes(bodies):
            if isinstance(node, A.Call):
                target = getattr(node, "target", None)
                if target and target[0] == "action" and id(node) in apply_calls:
                    # actions called from the apply block stay in p4c's program (and P4Info);
                    # those called only from other actions are inlined away
                    self.action(target[1], "" if self.is_global(target[1]) else prefix)
                if target and target[0] == "extern_function" and isinstance(decl, A.ControlDecl):
                    # p4c looks at extern function calls in controls only (a parser's
                    # verify() leaves type_info out: bmv2_tests/parser_verify.p4)
                    self.model.touches_type_info = True

    # ------------------------------------------------------------------ objects
    def explicit_id(self, annos: list[A.Annotation], prefix: int) -> int | None:
        """An @id value, checked where it is written (p4c checks the prefix and uniqueness)."""
        value = id_annotation(annos)
        if value is None:
            return None
        pos = next(a.pos for a in annos if a.name == "id")
        top = value >> 24
        if top not in (0, prefix):
            raise CompileError(
                pos, f"@id({value:#x}) has the wrong 8-bit prefix {top:#x}; expected {prefix:#x}"
            )
        full = value | (prefix << 24)
        if full in self.ids_seen and self.ids_seen[full] is not pos:
            raise CompileError(pos, f"@id({value:#x}) is already used (at {self.ids_seen[full]})")
        self.ids_seen[full] = pos
        return value

    def extern_instance(self, d: A.Instance, t: T.ExternT, prefix: str) -> None:
        name = qualify(prefix, d)
        self.instances[id(d)] = name
        annos = annotation_texts(d.annotations)
        prefix_of = {
            "counter": 0x12,
            "direct_counter": 0x13,
            "meter": 0x14,
            "direct_meter": 0x15,
            "register": 0x16,
            "action_profile": 0x11,
            "action_selector": 0x11,
        }
        explicit = self.explicit_id(d.annotations, prefix_of.get(t.name, 0))
        args = [self.const(a.value) for a in d.args]
        self.model.touches_type_info = True
        if t.name == "counter":
            self.model.counters.append(
                CPCounter(
                    name,
                    self.unit(d.args[1].value),
                    int(args[0] or 0),
                    None,
                    annos,
                    explicit,
                    self.index_type_name(t),
                )
            )
        elif t.name == "direct_counter":
            d.cp_pending = ("counter", name, self.unit(d.args[0].value), annos, explicit)
        elif t.name == "meter":
            self.model.meters.append(
                CPMeter(
                    name,
                    self.unit(d.args[1].value),
                    int(args[0] or 0),
                    None,
                    annos,
                    explicit,
                    self.index_type_name(t),
                )
            )
        elif t.name == "direct_meter":
            d.cp_pending = ("meter", name, self.unit(d.args[0].value), annos, explicit)
        elif t.name == "register":
            elem = T.strip_newtype(t.args.get("T", T.Bits(32)))
            width = T.width_of(elem) or 0
            signed = isinstance(elem, T.Bits) and elem.signed
            reg = CPRegister(name, width, signed, int(args[0] or 0), annos, explicit)
            if isinstance(t.args.get("T"), (T.NewType, T.StructT, T.EnumT)):
                reg.type_name = self.user_type(t.args["T"])
            reg.index_type_name = self.index_type_name(t)
            self.model.registers.append(reg)
        elif t.name in ("action_profile", "action_selector"):
            size = args[0] if t.name == "action_profile" else args[1]
            self.model.action_profiles.append(
                CPActionProfile(
                    name, [], t.name == "action_selector", int(size or 0), 0, annos, explicit
                )
            )

    def index_type_name(self, t: T.ExternT) -> str | None:
        """v1model >= 20200408 (`counter<I>`, `meter<I>`, `register<T, I>`): P4Info names the
        index type when it is a user `type` (p4c's getTypeName), and describes it."""
        index = t.args.get("I")
        return self.user_type(index) if isinstance(index, T.NewType) else None

    def unit(self, e: A.Expr | None) -> str:
        if isinstance(e, A.Member):
            return COUNTER_UNITS.get(e.name, "BOTH")
        return "BOTH"

    def const(self, e: A.Expr | None) -> Any:
        if e is None:
            return None
        return Checker.const_value_static(e)

    def table(self, d: A.TableDecl, prefix: str) -> None:
        name = qualify(prefix, d)
        self.claim_table_name(name, d)
        table = CPTable(
            name,
            annotations=annotation_texts(d.annotations),
            explicit_id=self.explicit_id(d.annotations, 0x02),
        )
        for k in TableChecker.prop(d, "key") or []:
            kname = name_annotation(k.annotations) or expr_text(k.expr)
            kt = k.expr.type
            width = T.width_of(kt) if T.strip_newtype(kt) is not T.ERROR else 0
            mf = CPMatchField(
                kname,
                width or 0,
                k.match_kind,
                annotation_texts([a for a in k.annotations if a.name != "name"]),
            )
            if isinstance(kt, (T.NewType, T.EnumT)):
                mf.type_name = self.user_type(kt)
            table.match_fields.append(mf)
        for ref in TableChecker.prop(d, "actions") or []:
            fn = ref.expr.func if isinstance(ref.expr, A.Call) else ref.expr
            adecl = fn.sym.decl
            aname = self.action(adecl, prefix if not self.is_global(adecl) else "")
            self.table_actions.add(aname)
            scope = "TABLE_AND_DEFAULT"
            names = {a.name for a in ref.annotations}
            if "defaultonly" in names:
                scope = "DEFAULT_ONLY"
            elif "tableonly" in names:
                scope = "TABLE_ONLY"
            table.actions.append(
                CPActionRef(
                    aname,
                    scope,
                    # p4c keeps @tableonly/@defaultonly among the reference's annotations
                    annotation_texts(ref.annotations),
                )
            )
        if TableChecker.prop(d, "default_action") is None:
            # p4c's front end gives every table without one `default_action = NoAction()`,
            # adding NoAction to the action list as @defaultonly when it is not there.
            table.default_action = "NoAction"
            if all(r.action != "NoAction" for r in table.actions):
                no_action = self.checked.scope.lookup("NoAction")
                if no_action is not None and no_action.kind == "action":
                    self.table_actions.add(self.action(no_action.decl, ""))
                    table.actions.append(CPActionRef("NoAction", "DEFAULT_ONLY", ["defaultonly"]))
        for p in d.properties:
            if p.name == "size":
                table.size = int(self.const(p.value) or 0)
            elif p.name == "default_action":
                fn = p.value.func if isinstance(p.value, A.Call) else p.value
                adecl = fn.sym.decl
                aname = self.action(adecl, prefix if not self.is_global(adecl) else "")
                table.default_action = aname
                if p.is_const:
                    table.const_default_action = aname
                if isinstance(p.value, A.Call):
                    table.default_action_args = [
                        int(self.const(a.value) or 0)
                        for a, prm in zip(p.value.args, adecl.params, strict=False)
                        if not prm.direction
                    ]
            elif p.name == "entries":
                table.is_const_table = p.is_const
                table.has_initial_entries = bool(p.value) or p.is_const
            elif p.name == "implementation":
                if isinstance(p.value, A.Call) and isinstance(p.value.type, T.ExternT):
                    # constructed in place: p4c names it by the property's @name, unqualified
                    t = p.value.type
                    pname = name_annotation(p.annotations)
                    if pname is None:
                        # p4c's P4Info has no name to give it (p4c-bm2-ss 1.2.5 refuses)
                        raise CompileError(
                            p.pos,
                            f"Table '{name.lstrip('.')}' has an anonymous table property "
                            "'implementation' with no name annotation, which is not "
                            "supported by P4Runtime",
                        )
                    args = [self.const(a.value) for a in p.value.args]
                    size = args[0] if t.name == "action_profile" else args[1]
                    self.model.action_profiles.append(
                        CPActionProfile(
                            pname.lstrip("."),
                            [],
                            t.name == "action_selector",
                            int(size or 0),
                            0,
                            annotation_texts([a for a in p.annotations if a.name != "name"]),
                            self.explicit_id(p.annotations, 0x11),
                        )
                    )
                    table.implementation = pname.lstrip(".")
                else:
                    table.implementation = self.instance_name(p.value, prefix)
                for ap in self.model.action_profiles:
                    if ap.name == table.implementation:
                        ap.table_names.append(name)
                # p4c's BMv2 back end (ControlConverter) for every table with an
                # implementation, default action written or not
                self.checked.warnings.append(
                    CompileWarning(
                        d.pos,
                        "unsupported",
                        f"Target does not support default_action for {name.lstrip('.')} "
                        "(due to action profiles)",
                    )
                )
            elif p.name == "counters":
                table.direct_counter = self.direct(p, name)
            elif p.name == "meters":
                table.direct_meter = self.direct(p, name)
            elif p.name == "support_timeout":
                table.idle_timeout = self.const(p.value) is True
        self.model.tables.append(table)

    def instance_name(self, e: A.Expr, prefix: str) -> str | None:
        if isinstance(e, A.Name) and getattr(e, "sym", None) is not None:
            return self.instances.get(id(e.sym.decl), qualify(prefix, e.sym.decl))
        return None

    def direct(self, p: A.TableProperty, table: str) -> str | None:
        """The direct counter or meter of a table's `counters`/`meters` property, added to the
        model here: p4c emits direct resources only through the tables that use them."""
        e = p.value
        if isinstance(e, A.Call) and isinstance(e.type, T.ExternT):
            # constructed in place: named like an in-place action profile (the property's
            # @name, unqualified, else TABLE.PROPERTY); the switch refuses it at load
            kind = "counter" if e.type.name == "direct_counter" else "meter"
            given = name_annotation(p.annotations) or f"{table}.{p.name}"
            pending = (
                kind,
                given.lstrip("."),
                self.unit(e.args[0].value if e.args else None),
                annotation_texts([a for a in p.annotations if a.name != "name"]),
                self.explicit_id(p.annotations, 0x13 if kind == "counter" else 0x15),
            )
        elif isinstance(e, A.Name) and getattr(e, "sym", None) is not None:
            pending = getattr(e.sym.decl, "cp_pending", None)
        else:
            pending = None
        if pending is None:
            return None
        kind, name, unit, annos, explicit = pending
        if kind == "counter":
            self.model.counters.append(CPCounter(name, unit, 0, table, annos, explicit))
        else:
            self.model.meters.append(CPMeter(name, unit, 0, table, annos, explicit))
        return name

    def is_global(self, decl: Any) -> bool:
        return any(d is decl for d in self.checked.program.decls)

    def claim_table_name(self, name: str, decl: A.TableDecl) -> None:
        """Two tables may not share a control-plane name (p4c: conflicting name)."""
        owner = self.table_owners.setdefault(name, decl)
        if owner is not decl:
            raise CompileError(
                decl.pos,
                f"{name}: conflicting control plane name "
                f"(also used by the declaration at {owner.pos})",
            )

    def action(self, decl: A.ActionDecl, prefix: str) -> str:
        name = qualify(prefix, decl)
        self.first_use.setdefault(name, len(self.first_use))
        if name not in self.actions:
            params = []
            for p in decl.params:
                if p.direction:
                    continue
                cp = CPParam(
                    qualify("", p),  # p4c: the parameter's control-plane name (@name wins)
                    T.width_of(p.type) or 0,
                    annotation_texts([a for a in p.annotations if a.name != "name"]),
                )
                if isinstance(p.type, (T.NewType, T.EnumT)):
                    cp.type_name = self.user_type(p.type)
                params.append(cp)
            self.action_decls[name] = decl
            self.actions[name] = CPAction(
                name,
                params,
                annotation_texts(decl.annotations),
                self.explicit_id(decl.annotations, 0x01),
            )
        return name

    def value_set(self, d: A.ValueSetDecl, prefix: str) -> None:
        elem = T.strip_newtype(getattr(d, "elem_type", None) or T.Bits(0))
        if not _value_set_elem_ok(elem):
            # P4Info describes only these (p4c-bm2-ss 1.2.5 refuses the others)
            raise CompileError(
                d.pos,
                f"{qualify(prefix, d).lstrip('.')}: Unsupported type argument for Value Set; "
                "this version of P4Runtime requires the type parameter of a Value Set to be "
                "a bit<W>, a struct of bit<W> fields, or a serializable enum",
            )
        fields = []
        if isinstance(elem, T.StructT):
            for fdecl, ft in zip(elem.decl.fields, elem.fields.values(), strict=True):
                kind = "exact"
                for a in fdecl.annotations:
                    if a.name == "match" and a.args and isinstance(a.args[0], A.Name):
                        kind = a.args[0].name
                if kind != "exact":  # p4c's BMv2 back end ignores it (P4Info keeps it)
                    self.checked.warnings.append(
                        CompileWarning(
                            fdecl.pos,
                            "unsupported",
                            "This backend only supports exact matches in value_sets but the "
                            f"match on '{fdecl.name}' is not exact; the annotation will be "
                            "ignored",
                        )
                    )
                # p4c: the field's control-plane name, its @id, its annotations (p4info.py
                # leaves @match out) and @brief/@description as doc
                fields.append(
                    CPMatchField(
                        qualify("", fdecl),
                        T.width_of(ft) or 0,
                        kind,
                        annotation_texts([a for a in fdecl.annotations if a.name != "name"]),
                    )
                )
        else:
            fields.append(CPMatchField("", T.width_of(elem) or 0, "exact"))
        self.model.value_sets.append(
            CPValueSet(
                qualify(prefix, d),
                int(getattr(d, "size_value", 0)),
                fields,
                annotation_texts(d.annotations),
                self.explicit_id(d.annotations, 0x03),
            )
        )


def _value_set_elem_ok(elem: T.Type) -> bool:
    """bit<W>, a struct of bit<W> fields, or a serializable enum (p4c's P4Runtime rule)."""
    if isinstance(elem, T.Bits):
        return not elem.signed
    if isinstance(elem, T.EnumT):
        return elem.underlying is not None
    if isinstance(elem, T.StructT) and elem.kind == "struct":
        return all(
            isinstance(f, T.Bits) and not f.signed
            for f in (T.strip_newtype(t) for t in elem.fields.values())
        )
    return False


def declaration_order(program: A.Program) -> dict[int, int]:
    """Source order of top-level declarations and the locals of parsers and controls."""
    order: dict[int, int] = {}
    for d in program.decls:
        order[id(d)] = len(order)
        for local in getattr(d, "locals", []):
            order[id(local)] = len(order)
    return order


def check_action_names(program: A.Program) -> None:
    """Every action declaration must have its own control-plane name, used or not.

    Like p4c's DuplicateActionControlPlaneNameCheck, this runs over declarations in source
    order and reports the later of two actions that share a name.
    """
    seen: dict[str, A.ActionDecl] = {}

    def visit(decl: A.ActionDecl, prefix: str) -> None:
        name = qualify(prefix, decl)
        first = seen.setdefault(name, decl)
        if first is not decl:
            raise CompileError(
                decl.pos,
                f"{name_annotation(decl.annotations) or decl.name}: "
                f"conflicting control plane name: {name} (also {first.pos})",
            )

    for d in program.decls:
        if isinstance(d, A.ActionDecl):
            visit(d, "")
        elif isinstance(d, A.ControlDecl):
            for local in d.locals:
                if isinstance(local, A.ActionDecl):
                    visit(local, d.name)


def referenced_decls(decl: Any) -> set[int]:
    """ids of the declarations named anywhere in a control's or parser's body, actions,
    states and local instances' arguments (what p4c counts as used)."""
    roots: list[Any] = [d for d in decl.locals if not isinstance(d, A.TableDecl)]
    roots += [d.properties for d in decl.locals if isinstance(d, A.TableDecl)]
    roots.append(decl.body if isinstance(decl, A.ControlDecl) else decl.states)
    used: set[int] = set()
    for node in iter_nodes(roots):
        sym = getattr(node, "sym", None) if isinstance(node, A.Name) else None
        if sym is not None and sym.decl is not None:
            used.add(id(sym.decl))
    return used


def _direct_invocation(node: Any) -> A.Name | None:
    """The type name of a direct invocation ``C.apply(...)`` of a control or parser type."""
    if not isinstance(node, A.Call) or not isinstance(node.func, A.Member):
        return None
    func_t = node.func.expr
    if (
        isinstance(func_t, A.Name)
        and getattr(func_t, "sym", None) is not None
        and func_t.sym.kind == "type"
        and isinstance(func_t.sym.type, T.BlockT)
    ):
        return func_t
    return None


def iter_nodes(roots: list[Any]):
    """Every AST node below the given roots (expressions and statements)."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if isinstance(node, tuple):
            stack.extend(node)
            continue
        if not isinstance(node, A.Node):
            continue
        yield node
        for value in vars(node).values():
            if isinstance(value, (A.Node, list, tuple)):
                stack.append(value)


iter_syntax = A.iter_syntax  # digests.py and the P4Info walk use it by this name


def build_model(checked: CheckedProgram) -> ControlPlaneModel:
    check_action_names(checked.program)
    return ModelBuilder(checked).build()


__all__ = [
    "COUNTER_UNITS",
    "ModelBuilder",
    "annotation_texts",
    "build_model",
    "check_action_names",
    "declaration_order",
    "expr_text",
    "id_annotation",
    "iter_nodes",
    "iter_syntax",
    "name_annotation",
    "qualify",
    "referenced_decls",
]
