"""Compile a checked v1model program, once, into Python functions and runtime objects.

The builder walks the instance tree from ``main`` (parser, checksum controls, ingress,
egress, deparser), allocates storage for every parameter and local, creates the tables and
stateful externs under their control-plane names (the names P4Info uses), and generates one
Python function per parser state, action, function and control. The result is a
``Pipeline``: nothing in it walks the syntax tree when packets run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from ..frontend.bmv2rules import first_user_extern, is_library
from ..frontend.checker import CheckedProgram, Checker
from ..frontend.cpbuild import iter_nodes, qualify
from ..frontend.digests import assign_digest_names
from ..frontend.errors import MissingMainError
from . import hashes
from .bindings import (
    BlockB,
    DeferredBlockB,
    DirectCounterB,
    Env,
    ExternB,
    PacketB,
    TableB,
    ValueSetB,
)
from .emit import Emitter
from .exprs import CodegenError, ConstBinding, ExprGen, Ref, bits_of
from .externcalls import ExternCallGen
from .externs import ActionProfile, Counter, DirectMeterFactory, Meter, Register, ValueSet
from .layout import HeaderL, Layout, PyLocal, Scalar, Storage, StructL, is_aggregate
from .names import safe_identifier as _safe
from .parsergen import ParserGen
from .pycompile import compile_module
from .runtime import CloneRequest, ExitPipeline, P4RuntimeFault, ParserError, PreserveRequest
from .stmts import CallableInfo, StmtGen, headers_in
from .tablegen import TableGen, _prop, finalize_tables
from .tables import Table

PIPELINE_STAGES = ("parser", "verify", "ingress", "egress", "compute", "deparser")


@dataclass
class Pipeline:
    """A compiled program, ready to run packets (see ``switch.V1Switch``)."""

    name: str
    storage: Storage
    stages: dict[str, Any]
    std: dict[str, int]  # standard_metadata field -> slot
    metadata_slots: list[int]
    field_lists: dict[int, list[int]]
    tables: dict[str, Table]
    registers: dict[str, Register]
    counters: dict[str, Counter]
    direct_counters: dict[str, Table]  # direct counter name -> its table
    meters: dict[str, Meter]
    direct_meters: dict[str, Table]
    profiles: dict[str, ActionProfile]
    value_sets: dict[str, ValueSet]
    errors: list[str]
    source: str
    namespace: dict[str, Any] = field(default_factory=dict)
    # @controller_header("packet_in"/...) string -> the header's width in the data plane (bits),
    # which the P4Runtime server checks against the P4Info metadata it packs and unpacks
    controller_headers: dict[str, int] = field(default_factory=dict)


def controller_header_widths(checked: CheckedProgram) -> dict[str, int]:
    """Data-plane widths of the program's controller headers, by annotation string."""
    out: dict[str, int] = {}
    for d in checked.program.decls:
        if not (isinstance(d, A.StructLike) and d.kind == "header"):
            continue
        for a in d.annotations:
            if a.name == "controller_header" and a.args and isinstance(a.args[0], A.StringLit):
                sym = checked.scope.names.get(d.name)
                t = sym.type if sym is not None else None
                width = T.width_of(t) if isinstance(t, T.StructT) else None
                if width is not None:
                    out[a.args[0].value] = width
    return out


class ProgramBuilder(ExprGen, StmtGen, ExternCallGen, ParserGen, TableGen):
    def __init__(
        self, checked: CheckedProgram, name: str, rng: random.Random | None = None
    ) -> None:
        self.checked = checked
        self.name = name
        self.storage = Storage()
        self.counter = [0]
        self.em: Emitter = Emitter(self.counter)
        self.global_env = Env()
        self.env = self.global_env
        self.tbind: dict[str, T.Type] = {}
        self.applied_once: set[str] = set()  # instances the control being built applies once
        self.prefix = ""
        self.return_type: T.Type | None = None
        self.sources: list[str] = []
        self.consts: dict[tuple[str, str], str] = {}
        self.functions: dict[tuple[int, str], CallableInfo] = {}
        self.rng = rng or random.Random(0)
        self.ns: dict[str, Any] = {
            "ParserError": ParserError,
            "ExitPipeline": ExitPipeline,
            "P4RuntimeFault": P4RuntimeFault,
            "CloneRequest": CloneRequest,
            "PreserveRequest": PreserveRequest,
            "RNG": self.rng,
            "LOG_MSG": _no_log,
            "DIVISION_BY_ZERO": _division_by_zero,
        }
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.direct_counters: dict[str, Table] = {}
        self.meters: dict[str, Meter] = {}
        self.direct_meters: dict[str, Table] = {}
        self.profiles: dict[str, ActionProfile] = {}
        self.value_sets: dict[str, ValueSet] = {}
        self.std_layout: StructL | None = None

    # ------------------------------------------------------------------ small services
    def const_name(self, value: Any, hint: str) -> str:
        key = (hint, repr(value))
        name = self.consts.get(key)
        if name is None:
            self.counter[0] += 1
            name = f"{hint.upper()}{self.counter[0]}"
            self.consts[key] = name
            self.ns[name] = value
        return name

    def error_code(self, name: str) -> int:
        try:
            return self.checked.error_members.index(name)
        except ValueError:
            raise CodegenError(None, f"error.{name} is not declared") from None

    def std(self, fname: str) -> int:
        assert self.std_layout is not None
        lay = self.std_layout.fields[fname]
        return lay.slots()[0]

    def owning_header(self, slot: int) -> HeaderL | None:
        return self.storage.owner.get(slot)

    def hash_fn(self, algo: str) -> str:
        name = f"HASH_{algo}"
        if name not in self.ns:
            if algo not in hashes.ALGORITHM_WIDTHS:
                raise CodegenError(None, f"hash algorithm {algo} is not supported")
            calc = hashes.HashCalc(algo, rng=self.rng)
            self.ns[name] = calc.compute
        return name

    def extern_object(self, e: A.Expr) -> str:
        if isinstance(e, A.Name):
            b = self.env.lookup(e)
            if isinstance(b, ExternB):
                return b.name
            if isinstance(b, PacketB):
                return "P"
        raise CodegenError(e.pos, "extern instance expected")

    def function_scope(self, env: Env, prefix: str) -> _Scope:
        return _Scope(self, env, prefix)

    def add_function(self, header: str, em: Emitter) -> None:
        self.sources.append(em.source(header))

    # ------------------------------------------------------------------ entry point
    def build(self) -> Pipeline:
        main = self.checked.main
        if main is None:
            own = [d.pos.file for d in self.checked.program.decls if not is_library(d)]
            raise MissingMainError(own[0] if own else self.checked.program.pos.file)
        _refuse_user_externs(self.checked)
        args = [a.value for a in main.args]
        if len(args) != 6:
            raise CodegenError(main.pos, "main must be a V1Switch with six blocks")
        blocks = [self.block_of(a) for a in args]
        ptypes = [self.block_param_type(blocks[0], i) for i in range(1, 4)]
        h = self.storage.alloc(ptypes[0], "hdr", in_header=True)
        m = self.storage.alloc(ptypes[1], "meta")
        std = self.storage.alloc(ptypes[2], "standard_metadata")
        assert isinstance(std, StructL)
        self.std_layout = std
        shapes = {
            "parser": [None, h, m, std],
            "verify": [h, m],
            "ingress": [h, m, std],
            "egress": [h, m, std],
            "compute": [h, m],
            "deparser": [None, h],
        }
        for d in self.checked.program.decls:  # top-level extern instances (a global register)
            t = getattr(d, "inst_type", None)
            if isinstance(d, A.Instance) and d is not main and isinstance(t, T.ExternT):
                self.global_env.bind(d, self.make_extern(d, t, qualify("", d)))
        stages: dict[str, str] = {}
        for stage, (decl, prefix, ctor_args, tbind) in zip(PIPELINE_STAGES, blocks, strict=True):
            layouts = shapes[stage]
            if len(decl.params) != len(layouts):
                raise CodegenError(
                    decl.pos, f"{decl.name}: unexpected parameters for the {stage} block"
                )
            info = self.instantiate(decl, prefix, tbind, layouts, ctor_args)
            stages[stage] = info.fn
        source = "\n".join(self.sources)
        code = compile_module(source, f"<p4reduce:{self.name}>")
        exec(code, self.ns)  # noqa: S102 - the program's own generated code
        funcs = {stage: self.ns[fn] for stage, fn in stages.items()}
        finalize_tables(self.tables, self.profiles)
        std_slots = {f: lay.slots()[0] for f, lay in std.fields.items()}
        return Pipeline(
            self.name,
            self.storage,
            funcs,
            std_slots,
            self.storage.metadata_slots(),
            self.field_lists(m),
            self.tables,
            self.registers,
            self.counters,
            self.direct_counters,
            self.meters,
            self.direct_meters,
            self.profiles,
            self.value_sets,
            list(self.checked.error_members),
            source,
            self.ns,
            controller_header_widths(self.checked),
        )

    def block_of(self, e: A.Expr) -> tuple[Any, str, list[A.Argument], dict[str, T.Type]]:
        t = e.type
        if not isinstance(t, T.BlockT):
            raise CodegenError(e.pos, "V1Switch arguments must be parser or control instances")
        if isinstance(e, A.Call):
            return t.decl, t.name, e.args, dict(t.args)
        if isinstance(e, A.Name):
            inst = e.sym.decl
            return t.decl, qualify("", inst), inst.args, dict(t.args)
        raise CodegenError(e.pos, "unsupported V1Switch argument")

    def block_param_type(self, block: Any, i: int) -> T.Type:
        decl, _, _, tbind = block
        self.tbind = tbind
        try:
            return self.ty(decl.params[i].type)
        finally:
            self.tbind = {}

    def field_lists(self, meta: Layout) -> dict[int, list[int]]:
        lists: dict[int, list[int]] = {}

        def walk(lay: Layout) -> None:
            if isinstance(lay, StructL) and lay.type.decl is not None:
                for fdecl in lay.type.decl.fields:
                    sub = lay.fields.get(fdecl.name)
                    if sub is None:
                        continue
                    for a in fdecl.annotations:
                        if a.name == "field_list" and a.args:
                            for x in a.args:
                                v = Checker.const_value_static(x)
                                if isinstance(v, int):
                                    lists.setdefault(v, []).extend(sub.slots())
                    walk(sub)

        walk(meta)
        return lists

    # ------------------------------------------------------------------ blocks
    def instantiate(
        self,
        decl: Any,
        prefix: str,
        tbind: dict[str, T.Type],
        layouts: list[Layout | None] | None,
        ctor_args: list[A.Argument],
        outer: Env | None = None,
    ) -> BlockB:
        env = Env(self.global_env)
        with self.function_scope(env, prefix):
            self.tbind = tbind
            params: list[tuple[A.Param, Layout | None]] = []
            for i, p in enumerate(decl.params):
                pt = self.ty(p.type)
                if isinstance(T.strip_newtype(pt), T.ExternT) and pt.name in (
                    "packet_in",
                    "packet_out",
                ):
                    env.bind(p, PacketB())
                    params.append((p, None))
                    continue
                lay = (
                    layouts[i]
                    if layouts is not None
                    else self.storage.alloc(pt, f"{prefix}.{p.name}")
                )
                env.bind(p, lay)
                params.append((p, lay))
            self.bind_ctor_args(decl, ctor_args, env, outer or self.global_env)
            fn = self.fresh("c" if isinstance(decl, A.ControlDecl) else "p", decl.name)
            info = BlockB(fn, decl, params, prefix)
            prologue = Emitter(self.counter)
            saved_once = self.applied_once
            self.applied_once = _applied_once(decl) if isinstance(decl, A.ControlDecl) else set()
            try:
                for local in decl.locals:
                    self.local_decl(local, env, prefix, prologue)
            finally:
                self.applied_once = saved_once
            if isinstance(decl, A.ControlDecl):
                self.gen_control(decl, fn, prologue)
            else:
                self.gen_parser(decl, fn, prologue)
            # an instance whose one apply was never generated still needs its tables and externs
            for local in decl.locals:
                if isinstance(env.map.get(id(local)), DeferredBlockB):
                    self.resolve_deferred(env.map[id(local)], None)
        return info

    def bind_ctor_args(self, decl: Any, args: list[A.Argument], env: Env, outer: Env) -> None:
        params = decl.ctor_params
        if not params:
            return
        if any(a.name for a in args):
            by_name = {a.name: a for a in args}
            pairs = [(p, by_name.get(p.name)) for p in params]
        else:
            pairs = list(zip(params, list(args) + [None] * (len(params) - len(args)), strict=True))
        for p, a in pairs:
            value = a.value if a is not None else p.default
            if value is None:
                continue
            if isinstance(value, A.Name):
                b = outer.lookup(value, None)
                if b is not None and not isinstance(b, ConstBinding):
                    env.bind(p, b)
                    continue
            env.bind(p, ConstBinding(Checker.const_value_static(value), p.type, value))

    def fresh(self, kind: str, name: str) -> str:
        self.counter[0] += 1
        return f"{kind}{self.counter[0]}_{_safe(name)}"

    def local_decl(self, d: A.Decl, env: Env, prefix: str, prologue: Emitter) -> None:
        if isinstance(d, A.VarDecl):
            lay = self.storage.alloc(self.ty(d.resolved_type), f"{prefix}.{d.name}")
            env.bind(d, lay)
            saved = self.em
            self.em = prologue
            try:
                self.init_var(d, lay)
            finally:
                self.em = saved
        elif isinstance(d, A.ConstDecl):
            env.bind(d, ConstBinding(Checker.const_value_static(d.value), d.value.type, d.value))
        elif isinstance(d, A.Instance):
            t = d.inst_type
            if isinstance(t, T.ExternT):
                env.bind(d, self.make_extern(d, t, qualify(prefix, d)))
            elif isinstance(t, T.BlockT):
                if isinstance(t.decl, A.ControlDecl) and d.name in self.applied_once:
                    pending = DeferredBlockB(
                        d, t.decl, qualify(prefix, d), dict(t.args), d.args, env
                    )
                    env.bind(d, pending)
                    return
                sub = self.instantiate(t.decl, qualify(prefix, d), dict(t.args), None, d.args, env)
                env.bind(d, sub)
        elif isinstance(d, A.ActionDecl):
            env.bind(d, self.gen_callable(d, "action", env, prefix))
        elif isinstance(d, A.TableDecl):
            table = self.gen_table(d, prefix)
            env.bind(d, TableB(self.const_name(table, "tbl"), table, d))
        elif isinstance(d, A.ValueSetDecl):
            widths = self.value_set_widths(d)
            vs = ValueSet(qualify(prefix, d), d.size_value, widths)
            self.value_sets[vs.name] = vs
            binding = ValueSetB(self.const_name(vs, "vs"), vs)
            env.bind(d, binding)
            env.map[f"value_set:{d.name}"] = binding  # select keysets name it without a symbol
        else:
            raise CodegenError(d.pos, f"unsupported local declaration {type(d).__name__}")

    def value_set_widths(self, d: A.ValueSetDecl) -> list[int]:
        et = T.strip_newtype(d.elem_type)
        if isinstance(et, T.StructT):
            return [T.width_of(ft) or 0 for ft in et.fields.values()]
        if isinstance(et, T.TupleT):
            return [T.width_of(x) or 0 for x in et.elems]
        return [T.width_of(et) or 0]

    # ------------------------------------------------------------------ externs
    def make_extern(self, d: A.Instance, t: T.ExternT, name: str) -> ExternB:
        args = [a.value for a in d.args]
        folded = [Checker.const_value_static(a) if a is not None else None for a in args]
        kind = t.name
        obj: Any
        if kind == "register":
            elem = self.ty(t.args.get("T", T.Bits(32)))
            b = bits_of(elem)
            width, signed = (b.width, b.signed) if b is not None else (1, False)
            obj = Register(name, int(folded[0] or 0), width, signed)
            self.registers[name] = obj
        elif kind == "counter":
            obj = Counter(name, int(folded[0] or 0), _member(args[1]))
            self.counters[name] = obj
        elif kind == "meter":
            obj = Meter(name, int(folded[0] or 0), _member(args[1]))
            self.meters[name] = obj
        elif kind == "direct_counter":
            obj = DirectCounterB(name, _member(args[0]))
        elif kind == "direct_meter":
            obj = DirectMeterFactory(name, _member(args[0]))
        elif kind in ("action_profile", "action_selector"):
            if kind == "action_profile":
                obj = ActionProfile(name, int(folded[0] or 0))
            else:
                algo = _member(args[0])
                obj = ActionProfile(name, int(folded[1] or 0), algo)
                obj.hash_fn = self.ns[self.hash_fn(algo)]
            self.profiles[name] = obj
        elif kind == "Checksum16":
            obj = None
        else:
            raise CodegenError(d.pos, f"extern {kind} is not supported by the interpreter")
        return ExternB(self.const_name(obj, "x") if obj is not None else "None", t, obj)

    # ------------------------------------------------------------------ controls and parsers
    def gen_control(self, decl: A.ControlDecl, fn: str, prologue: Emitter) -> None:
        em = Emitter(self.counter)
        em.lines = list(prologue.lines)
        saved = self.em
        self.em = em
        try:
            self.stmt(decl.body)
        finally:
            self.em = saved
        self.add_function(f"def {fn}(S, P):", em)

    # ------------------------------------------------------------------ actions and functions
    def gen_callable(self, decl: Any, kind: str, env: Env, prefix: str) -> CallableInfo:
        global_decl = any(d is decl for d in self.checked.program.decls)
        cp_name = qualify("" if global_decl else prefix, decl)
        fenv = Env(env)
        fn = self.fresh("a" if kind == "action" else "f", decl.name)
        params: list[tuple[A.Param, Layout]] = []
        pynames: list[str] = []
        with self.function_scope(fenv, cp_name):
            for p in decl.params:
                pt = self.ty(p.type)
                if p.direction in ("", "in") and not is_aggregate(pt):
                    lay: Layout = PyLocal(f"p_{_safe(p.name)}", pt)
                    pynames.append(lay.name)
                else:
                    lay = self.storage.alloc(pt, f"{cp_name}.{p.name}")
                fenv.bind(p, lay)
                params.append((p, lay))
            self.return_type = self.ty(decl.resolved_return) if kind == "function" else None
            em = Emitter(self.counter)
            self.em = em
            self.stmt(decl.body)
            self.add_function(f"def {fn}(S, P{''.join(', ' + n for n in pynames)}):", em)
        data = [p for p in decl.params if p.direction == ""] if kind == "action" else []
        return CallableInfo(fn, decl, params, cp_name, data)

    def callable_info(self, decl: Any, kind: str, e: A.Call | None) -> CallableInfo:
        b = self.env.get(decl)
        if isinstance(b, CallableInfo):
            return b
        if kind == "action":
            info = self.global_env.get(decl)
            if info is None:
                info = self.gen_callable(decl, "action", self.global_env, "")
                self.global_env.bind(decl, info)
            return info
        tb = self.function_bindings(decl, e)
        key = (id(decl), repr(sorted((k, str(v)) for k, v in tb.items())))
        info = self.functions.get(key)
        if info is None:
            saved = self.tbind
            self.tbind = tb
            try:
                info = self.gen_callable(decl, "function", self.global_env, "")
            finally:
                self.tbind = saved
            self.functions[key] = info
        return info

    def function_bindings(self, decl: Any, e: A.Call | None) -> dict[str, T.Type]:
        tb: dict[str, T.Type] = {}
        if not decl.type_params or e is None:
            return tb
        if e.type_args:
            for name, ta in zip(decl.type_params, e.type_args, strict=False):
                t = getattr(ta, "resolved", None)
                if t is not None:
                    tb[name] = t
        for (_p, pt), a in zip(
            decl.resolved_params, self.bind_call_args(e, decl.params), strict=True
        ):
            if isinstance(pt, T.TypeVar) and a is not None and a.value is not None:
                tb[pt.name] = self.ty(a.value.type)
        return tb

    # ------------------------------------------------------------------ apply
    def table_apply(self, e: A.Expr) -> str:
        if isinstance(e, A.Call) and isinstance(e.func, A.Member):
            b = self.env.lookup(e.func.expr) if isinstance(e.func.expr, A.Name) else None
            if isinstance(b, TableB):
                return f"{b.name}.apply(S, P)"
        raise CodegenError(e.pos, "only tables can be applied in an expression")

    def apply_stmt(self, e: A.Call) -> None:
        target = e.func.expr
        if isinstance(target, A.Name):
            b = self.env.lookup(target, None)
            if isinstance(b, TableB):
                self.em.line(f"{b.name}.apply(S, P)")
                return
            if b is None and getattr(target, "sym", None) is not None and target.sym.kind == "type":
                # direct type invocation `C.apply(...)`: a hidden instance named after the type
                bt = target.sym.type
                b = self.env.get(("direct", id(e)))
                if b is None:
                    b = self.instantiate(
                        bt.decl, f"{self.prefix}.{target.name}", dict(bt.args), None, [], self.env
                    )
                self.call_block(b, e)
                return
            if isinstance(b, DeferredBlockB):
                b = self.resolve_deferred(b, e)
            if isinstance(b, BlockB):
                self.call_block(b, e)
                return
        raise CodegenError(e.pos, "unsupported apply")

    def resolve_deferred(self, b: DeferredBlockB, call: A.Call | None) -> BlockB:
        """Generate a once-applied sub-control, its parameters aliased to the call's arguments.

        Copy-in/copy-out is unobservable when each ``in``/``inout`` argument is a fixed place
        of the same type and no two arguments overlap: the callee reaches the caller's storage
        only through its parameters, and on ``exit`` the writes it made are what copy-out would
        have written. ``out`` parameters keep their own storage (they start uninitialised).
        """
        params = b.decl.params
        layouts: list[Layout | None] = []
        used: set[int] = set()
        bound = (
            self.bind_call_args(call, list(params)) if call is not None else [None] * len(params)
        )
        for p, a in zip(params, bound, strict=True):
            layouts.append(self.alias_layout(p, a, used, b.tbind, b.prefix))
        info = self.instantiate(b.decl, b.prefix, b.tbind, layouts, b.ctor_args, b.env)
        b.env.bind(b.instance, info)
        return info

    def alias_layout(
        self, p: A.Param, a: A.Argument | None, used: set[int], tbind: dict[str, Any], prefix: str
    ) -> Layout | None:
        """The caller's storage for parameter ``p`` when it can be shared, else fresh storage."""
        saved = self.tbind
        self.tbind = tbind
        try:
            pt = self.ty(p.type)
        finally:
            self.tbind = saved
        if isinstance(T.strip_newtype(pt), T.ExternT):
            return None  # packet_in / packet_out: bound by instantiate
        lay = self.aliasable(p, a, pt)
        if lay is None:
            return self.storage.alloc(pt, f"{prefix}.{p.name}")
        slots = set(lay.slots())
        if slots & used:
            return self.storage.alloc(pt, f"{prefix}.{p.name}")
        used |= slots
        return lay

    def aliasable(self, p: A.Param, a: A.Argument | None, pt: T.Type) -> Layout | None:
        if p.direction not in ("in", "inout") or a is None or a.value is None:
            return None
        if not isinstance(a.value, (A.Name, A.Member)):
            return None
        try:
            ref = self.ref(a.value)
        except (CodegenError, KeyError):
            return None
        lay = ref.layout
        if ref.stack is not None or not _same_type(lay, pt):
            return None
        return lay

    def call_block(self, b: BlockB, e: A.Call) -> None:
        copy_out: list[tuple[list[str], list[str]]] = []
        for (p, lay), a in zip(
            b.params, self.bind_call_args(e, [p for p, _ in b.params]), strict=True
        ):
            if lay is None or a is None or a.value is None:
                continue
            pt = self.ty(p.type)
            mine = self.targets(Ref(lay))
            if p.direction != "out" and isinstance(a.value, (A.Name, A.Member)):
                try:
                    if self.targets(self.ref(a.value)) == mine:
                        continue  # aliased: the callee works on the argument itself
                except (CodegenError, KeyError):
                    pass
            if p.direction == "out":
                for h in headers_in(lay):
                    self.em.line(f"S[{h.valid}] = False")
            else:
                vals = self.value_as(a.value, pt)
                self.em.parallel(mine, vals)
            if p.direction in ("out", "inout"):
                copy_out.append((self.targets(self.ref(a.value)), mine))
        if not copy_out:
            self.em.line(f"{b.fn}(S, P)")
            return
        self.em.line("try:")
        self.em.line(f"    {b.fn}(S, P)")
        self.em.line("finally:")
        with self.em.indent():
            for dst, src in copy_out:
                self.em.parallel(dst, src)

    def action_run_id(self, apply_call: A.Expr, label: str) -> str:
        b = self.env.lookup(apply_call.func.expr)
        assert isinstance(b, TableB)
        for ref in _prop(b.decl, "actions") or []:
            e = ref.expr.func if isinstance(ref.expr, A.Call) else ref.expr
            if e.name == label:
                return self.callable_info(e.sym.decl, "action", None).cp_name
        raise CodegenError(apply_call.pos, f"{label}: not an action of the table")


def _applied_once(decl: A.ControlDecl) -> set[str]:
    """Names of the control's instances that its body applies exactly once."""
    counts: dict[str, int] = {}
    for node in iter_nodes([decl.body]):
        if (
            isinstance(node, A.Call)
            and isinstance(node.func, A.Member)
            and node.func.name == "apply"
            and isinstance(node.func.expr, A.Name)
        ):
            counts[node.func.expr.name] = counts.get(node.func.expr.name, 0) + 1
    return {name for name, n in counts.items() if n == 1}


def _same_type(lay: Layout, t: T.Type) -> bool:
    """Whether storage ``lay`` holds a value of type ``t`` (so a parameter can share it)."""
    b = T.strip_newtype(t)
    if isinstance(lay, Scalar):
        return T.strip_newtype(lay.type) == b
    if isinstance(lay, (HeaderL, StructL)):
        return lay.type is b or lay.type == b
    return False


class _Scope:
    """Save and restore the builder's current function context."""

    def __init__(self, b: ProgramBuilder, env: Env, prefix: str) -> None:
        self.b, self.env, self.prefix = b, env, prefix

    def __enter__(self) -> None:
        b = self.b
        self.saved = (b.env, b.em, b.prefix, b.tbind, b.return_type)
        b.env, b.prefix = self.env, self.prefix
        b.em = Emitter(b.counter)

    def __exit__(self, *exc: Any) -> None:
        b = self.b
        b.env, b.em, b.prefix, b.tbind, b.return_type = self.saved


def _member(e: A.Expr | None) -> str:
    if isinstance(e, A.Member):
        return e.name
    return ""


def _no_log(msg: str, values: tuple[Any, ...]) -> None:
    pass


def _division_by_zero(where: str) -> int:
    raise P4RuntimeFault(where, "division by zero")


def _refuse_user_externs(checked: CheckedProgram) -> None:
    """A program compiled with --emit-externs may call extern functions or instantiate
    extern objects it declares itself; like BMv2 without an extern library, this switch
    cannot run them and refuses the program before building anything, at the first use."""
    found = first_user_extern(checked.program.decls)
    if found is None:
        return
    use, kind, decl = found
    raise CodegenError(
        use.pos,
        f"{decl.name}: user-declared extern {kind} (declared at {decl.pos}) is not supported "
        "by this switch, which runs only the externs of core.p4 and v1model.p4",
    )


def build_pipeline(
    checked: CheckedProgram, name: str, rng: random.Random | None = None
) -> Pipeline:
    assign_digest_names(checked)  # the names DigestLists are sent under, as in P4Info
    return ProgramBuilder(checked, name, rng).build()
