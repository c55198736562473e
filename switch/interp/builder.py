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
from ..frontend.checker import CheckedProgram, Checker
from ..frontend.cpbuild import expr_text, name_annotation, qualify
from . import hashes
from .emit import Emitter
from .exprs import CodegenError, ConstBinding, ExprGen, Ref, bits_of, mask, wrap_const
from .externcalls import ExternCallGen
from .externs import ActionProfile, Counter, DirectMeterFactory, Meter, Register, ValueSet
from .layout import HeaderL, Layout, PyLocal, StackL, Storage, StructL
from .matches import Exact, Lpm, Match, Optional, Range, Ternary
from .runtime import CloneRequest, ExitPipeline, P4RuntimeFault, ParserError, PreserveRequest
from .stmts import CallableInfo, StmtGen, headers_in
from .tables import ActionSpec, KeySpec, Table

MISSING = object()
PIPELINE_STAGES = ("parser", "verify", "ingress", "egress", "compute", "deparser")


@dataclass
class ExternB:
    name: str  # the object's name in the generated module
    type: T.ExternT
    obj: Any


@dataclass
class TableB:
    name: str
    table: Table
    decl: A.TableDecl


@dataclass
class BlockB:
    fn: str
    decl: Any
    params: list[tuple[A.Param, Layout | None]]
    prefix: str


@dataclass
class ValueSetB:
    name: str
    obj: ValueSet


class PacketB:
    """packet_in / packet_out parameters: the generated code uses ``P`` for both."""


class Env:
    """Bindings of declarations (by identity) to storage and objects, chained to the parent."""

    def __init__(self, parent: Env | None = None) -> None:
        self.parent = parent
        self.map: dict[int, Any] = {}

    def bind(self, decl: Any, binding: Any) -> None:
        self.map[id(decl)] = binding

    def get(self, decl: Any) -> Any:
        env: Env | None = self
        while env is not None:
            b = env.map.get(id(decl))
            if b is not None:
                return b
            env = env.parent
        return None

    def get_named(self, key: str) -> Any:
        env: Env | None = self
        while env is not None:
            if key in env.map:
                return env.map[key]
            env = env.parent
        return None

    def lookup(self, e: A.Name, default: Any = MISSING) -> Any:
        sym = getattr(e, "sym", None)
        if sym is not None:
            b = self.get(sym.decl) if sym.decl is not None else None
            if b is not None:
                return b
            if sym.kind == "const":
                expr = sym.decl.value if isinstance(sym.decl, A.ConstDecl) else None
                return ConstBinding(sym.value, sym.type, expr)
        if default is not MISSING:
            return default
        raise CodegenError(e.pos, f"{e.name}: not available at run time")


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


class ProgramBuilder(ExprGen, StmtGen, ExternCallGen):
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
        assert main is not None
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
        code = compile(source, f"<p4reduce:{self.name}>", "exec")
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
            for local in decl.locals:
                self.local_decl(local, env, prefix, prologue)
            if isinstance(decl, A.ControlDecl):
                self.gen_control(decl, fn, prologue)
            else:
                self.gen_parser(decl, fn, prologue)
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
        safe = "".join(c if c.isalnum() else "_" for c in name)
        return f"{kind}{self.counter[0]}_{safe}"

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

    def gen_parser(self, decl: A.ParserDecl, fn: str, prologue: Emitter) -> None:
        names = {st.name: self.fresh("s", f"{decl.name}_{st.name}") for st in decl.states}
        for st in decl.states:
            em = Emitter(self.counter)
            saved = self.em
            self.em = em
            try:
                for s in st.stmts:
                    self.stmt(s)
                self.transition(st.transition, names)
            finally:
                self.em = saved
            self.add_function(f"def {names[st.name]}(S, P):", em)
        em = Emitter(self.counter)
        em.lines = list(prologue.lines)
        em.line(f"st = {names['start']}")
        em.line("n = 0")
        em.line("while st is not None:")
        em.line("    st = st(S, P)")
        em.line("    n += 1")
        em.line(f"    if n > 100000: raise ParserError({self.error_code('ParserTimeout')})")
        self.add_function(f"def {fn}(S, P):", em)

    def state_ref(self, name: str, names: dict[str, str]) -> str:
        if name == "accept":
            return "None"
        if name == "reject":
            return "REJECT"
        return names[name]

    def transition(self, tr: A.Expr | None, names: dict[str, str]) -> None:
        em = self.em
        if tr is None:
            em.line("return None")
            return
        if isinstance(tr, A.Name):
            target = self.state_ref(tr.name, names)
            em.line("raise ParserError(-1)" if target == "REJECT" else f"return {target}")
            return
        assert isinstance(tr, A.SelectExpr)
        keys = [self.simple(self.val(k), "k") for k in tr.exprs]
        for case in tr.cases:
            cond = self.keyset_cond(case.keyset, keys, tr.exprs)
            target = self.state_ref(case.state, names)
            action = "raise ParserError(-1)" if target == "REJECT" else f"return {target}"
            if cond is None:
                em.line(action)
                return
            em.line(f"if {cond}: {action}")
        em.line(f"raise ParserError({self.error_code('NoMatch')})")

    def keyset_cond(self, ks: A.Expr, keys: list[str], exprs: list[A.Expr]) -> str | None:
        if isinstance(ks, (A.Default, A.DontCare)):
            return None
        if isinstance(ks, A.Name):
            b = self.env.lookup(ks, None) or self.env.get_named(f"value_set:{ks.name}")
            if isinstance(b, ValueSetB):
                return f"{b.name}.match(({', '.join(self.key_bits(k, e) for k, e in zip(keys, exprs, strict=True))},))"
        if isinstance(ks, A.ListExpr) and len(keys) > 1:
            parts = [
                self.one_key_cond(item, k, e)
                for item, k, e in zip(ks.items, keys, exprs, strict=True)
            ]
            parts = [p for p in parts if p is not None]
            return " and ".join(parts) if parts else None
        if isinstance(ks, A.ListExpr) and len(ks.items) == 1:
            ks = ks.items[0]
        return self.one_key_cond(ks, keys[0], exprs[0])

    def key_bits(self, k: str, e: A.Expr) -> str:
        t = self.ty(e.type)
        if T.strip_newtype(t) is T.BOOL:
            return f"int({k})"
        b = bits_of(t)
        if b is not None and b.signed:
            return f"({k} & {mask(b.width)})"
        return k

    def one_key_cond(self, ks: A.Expr, key: str, e: A.Expr) -> str | None:
        if isinstance(ks, (A.Default, A.DontCare)):
            return None
        if isinstance(ks, A.Mask):
            v, m = self.val(ks.value), self.val(ks.mask)
            return f"({self.key_bits(key, e)} & {m}) == ({v} & {m})"
        if isinstance(ks, A.Range):
            return f"{self.val(ks.lo)} <= {key} <= {self.val(ks.hi)}"
        if isinstance(ks, A.Name):
            b = self.env.lookup(ks, None) or self.env.get_named(f"value_set:{ks.name}")
            if isinstance(b, ValueSetB):
                return f"{b.name}.match(({self.key_bits(key, e)},))"
        return f"{key} == {self.val(ks)}"

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
                if p.direction in ("", "in") and not _agg(pt):
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
            if isinstance(b, BlockB):
                self.call_block(b, e)
                return
        raise CodegenError(e.pos, "unsupported apply")

    def call_block(self, b: BlockB, e: A.Call) -> None:
        copy_out: list[tuple[list[str], list[str]]] = []
        for (p, lay), a in zip(
            b.params, self.bind_call_args(e, [p for p, _ in b.params]), strict=True
        ):
            if lay is None or a is None or a.value is None:
                continue
            pt = self.ty(p.type)
            mine = self.targets(Ref(lay))
            if p.direction == "out":
                for h in headers_in(lay):
                    self.em.line(f"S[{h.valid}] = False")
            else:
                vals = self.value_as(a.value, pt)
                self.em.line(f"{', '.join(mine)} = {', '.join(vals)}")
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
                self.em.line(f"{', '.join(dst)} = {', '.join(src)}")

    def action_run_id(self, apply_call: A.Expr, label: str) -> str:
        b = self.env.lookup(apply_call.func.expr)
        assert isinstance(b, TableB)
        for ref in _prop(b.decl, "actions") or []:
            e = ref.expr.func if isinstance(ref.expr, A.Call) else ref.expr
            if e.name == label:
                return self.callable_info(e.sym.decl, "action", None).cp_name
        raise CodegenError(apply_call.pos, f"{label}: not an action of the table")

    # ------------------------------------------------------------------ tables
    def gen_table(self, d: A.TableDecl, prefix: str) -> Table:
        name = qualify(prefix, d)
        props = {p.name: p for p in d.properties}
        key_elems: list[A.KeyElement] = list(props["key"].value) if "key" in props else []
        match_keys = [k for k in key_elems if k.match_kind != "selector"]
        selector_keys = [k for k in key_elems if k.match_kind == "selector"]
        keys = [
            KeySpec(
                name_annotation(k.annotations) or expr_text(k.expr),
                k.match_kind,
                self.key_width(k.expr),
            )
            for k in match_keys
        ]
        key_fn = self.gen_key_fn(name, match_keys)
        actions: dict[str, ActionSpec] = {}
        for ref in props["actions"].value if "actions" in props else []:
            spec = self.action_spec(ref)
            actions[spec.name] = spec
        default_name, default_args, const_default = "NoAction", [], False
        if "default_action" in props:
            p = props["default_action"]
            default_name, default_args = self.action_call_value(p.value)
            const_default = p.is_const
        if default_name not in actions:
            spec = self.action_spec(A.ActionRef(d.pos, _noaction_name(self.checked, d.pos)))
            actions.setdefault(spec.name, spec)
        size = 1024
        if "size" in props:
            v = Checker.const_value_static(props["size"].value)
            size = int(v) if isinstance(v, int) else size
        table = Table(
            name,
            keys,
            actions,
            default_name,
            default_args,
            const_default,
            size,
            key_fn,
            self.std("packet_length"),
        )
        self.tables[name] = table
        if "implementation" in props:
            b = self.env.lookup(props["implementation"].value)
            if isinstance(b, ExternB) and isinstance(b.obj, ActionProfile):
                table.profile = b.obj
                b.obj.tables.append(table)
                if selector_keys:
                    table.selector_fn = _Late(self.ns, self.gen_selector_fn(name, selector_keys))
        for pname in ("counters", "meters"):
            if pname in props:
                b = self.env.lookup(props[pname].value)
                if isinstance(b, ExternB) and isinstance(b.obj, DirectCounterB):
                    table.direct_counter = b.obj.name
                    self.direct_counters[b.obj.name] = table
                elif isinstance(b, ExternB) and isinstance(b.obj, DirectMeterFactory):
                    table.direct_meter = b.obj
                    self.direct_meters[b.obj.name] = table
        if "entries" in props:
            entries: list[A.Entry] = props["entries"].value
            table.has_const_entries = props["entries"].is_const
            for i, entry in enumerate(entries):
                matches = self.entry_matches(entry, keys)
                aname, aargs = self.action_call_value(entry.action)
                prio = None
                if entry.priority is not None:
                    prio = int(Checker.const_value_static(entry.priority))
                elif table.needs_priority:
                    # p4c's BMv2 back end: @priority(N) or the 1-based position, lowest wins;
                    # our tables let the highest win, hence the negation
                    prio = -(_priority_annotation(entry) or i + 1)
                table.add_entry(matches, aname, aargs, prio, is_const=props["entries"].is_const)
        return table

    def key_width(self, e: A.Expr) -> int:
        t = T.strip_newtype(self.ty(e.type))
        if t is T.BOOL:
            return 1
        if t is T.ERROR:
            return 32
        return T.width_of(t) or 0

    def gen_key_fn(self, table: str, keys: list[A.KeyElement]) -> Any:
        fn = self.fresh("k", table)
        em = Emitter(self.counter)
        saved = self.em
        self.em = em
        try:
            vals = [self.key_bits(self.val(k.expr), k.expr) for k in keys]
        finally:
            self.em = saved
        em.line(f"return ({', '.join(vals)}{',' if vals else ''})")
        self.add_function(f"def {fn}(S, P):", em)
        return _Late(self.ns, fn)

    def gen_selector_fn(self, table: str, keys: list[A.KeyElement]) -> str:
        fn = self.fresh("sel", table)
        em = Emitter(self.counter)
        saved = self.em
        self.em = em
        try:
            data = self.packed_bytes(A.ListExpr(keys[0].pos, [k.expr for k in keys]))
        finally:
            self.em = saved
        em.line(f"return {data}")
        self.add_function(f"def {fn}(S, P):", em)
        return fn

    def action_spec(self, ref: A.ActionRef) -> ActionSpec:
        e = ref.expr
        call = e if isinstance(e, A.Call) and any(a.value is not None for a in e.args) else None
        if isinstance(e, A.Call):
            e = e.func
        decl = e.sym.decl
        info = self.callable_info(decl, "action", None)
        fn = info.fn if call is None else self.gen_bound_action(call, info)
        params = [(p.name, T.width_of(self.ty(p.type)) or 0) for p in info.data_params]
        types = [self.ty(p.type) for p in info.data_params]
        scope = "TABLE_AND_DEFAULT"
        for a in ref.annotations + list(decl.annotations):
            if a.name == "tableonly":
                scope = "TABLE_ONLY"
            elif a.name == "defaultonly":
                scope = "DEFAULT_ONLY"
        return ActionSpec(info.cp_name, _Late(self.ns, fn), params, _converter(types), scope)

    def gen_bound_action(self, call: A.Call, info: CallableInfo) -> str:
        """A wrapper for ``a(x)`` in a table's action list: x bound here, data from the entry."""
        from ..frontend.symbols import Sym

        wenv = Env(self.env)
        args = list(call.args)
        names: list[str] = []
        for p in info.data_params:
            marker = A.Empty(call.pos)
            n = A.Name(call.pos, p.name)
            n.sym = Sym("var", p.name, call.pos, p.type, marker)
            n.type = p.type
            lay = PyLocal(f"d_{_safe(p.name)}", self.ty(p.type))
            wenv.bind(marker, lay)
            names.append(lay.name)
            args.append(A.Argument(call.pos, n))
        full = A.Call(call.pos, call.func, args)
        full.target = ("action", info.decl)
        fn = self.fresh("w", info.decl.name)
        with self.function_scope(wenv, self.prefix):
            code = self.invoke(full, info.decl, "action")
            if code:
                self.em.line(code)
            self.add_function(f"def {fn}(S, P{''.join(', ' + n for n in names)}):", self.em)
        return fn

    def action_call_value(self, e: A.Expr) -> tuple[str, list[int]]:
        args: list[A.Argument] = []
        if isinstance(e, A.Call):
            args = e.args
            e = e.func
        decl = e.sym.decl
        info = self.callable_info(decl, "action", None)
        values = []
        data = info.data_params
        bound = [a for a in args if a.value is not None]
        for p, a in zip(data, bound[len(bound) - len(data) :] if data else [], strict=True):
            v = Checker.const_value_static(a.value)
            if isinstance(v, str):
                v = self.member_value(T.strip_newtype(self.ty(p.type)), v)
            w = T.width_of(self.ty(p.type)) or 0
            values.append(int(v) & mask(w))
        return info.cp_name, values

    def entry_matches(self, entry: A.Entry, keys: list[KeySpec]) -> list[Match]:
        ks = entry.keyset
        n = len(keys)
        if isinstance(ks, A.ListExpr) and (n != 1 or len(ks.items) == 1):
            items = ks.items
        else:
            items = [ks]
        if isinstance(ks, (A.Default, A.DontCare)) and n > 1:
            items = [ks] * n
        out: list[Match] = []
        for k, item in zip(keys, items, strict=True):
            out.append(self.key_match(k, item))
        return out

    def key_match(self, k: KeySpec, item: A.Expr) -> Match:
        full = mask(k.width)
        wild = isinstance(item, (A.Default, A.DontCare))
        if k.match_kind == "exact":
            return Exact(self.cp_value(item) & full)
        if k.match_kind == "ternary":
            if wild:
                return Ternary(0, 0)
            if isinstance(item, A.Mask):
                m = self.cp_value(item.mask) & full
                return Ternary(self.cp_value(item.value) & m, m)
            return Ternary(self.cp_value(item) & full, full)
        if k.match_kind == "lpm":
            if wild:
                return Lpm(0, 0)
            if isinstance(item, A.Mask):
                m = self.cp_value(item.mask) & full
                plen = bin(m).count("1")
                return Lpm(self.cp_value(item.value) & m, plen)
            return Lpm(self.cp_value(item) & full, k.width)
        if k.match_kind == "range":
            if wild:
                return Range(0, full)
            if isinstance(item, A.Range):
                return Range(self.cp_value(item.lo) & full, self.cp_value(item.hi) & full)
            v = self.cp_value(item) & full
            return Range(v, v)
        if k.match_kind == "optional":
            return Optional(None if wild else self.cp_value(item) & full)
        raise CodegenError(item.pos, f"match kind {k.match_kind} is not supported")

    def cp_value(self, e: A.Expr) -> int:
        v = Checker.const_value_static(e)
        if v is None and isinstance(e, A.Member):
            v = self.member_value(T.strip_newtype(self.ty(e.type)), e.name)
        if isinstance(v, str):
            v = self.member_value(T.strip_newtype(self.ty(e.type)), v)
        if isinstance(v, bool):
            return int(v)
        if not isinstance(v, int):
            raise CodegenError(e.pos, "table entry values must be compile-time constants")
        return v


@dataclass
class DirectCounterB:
    name: str
    unit: str


class _Late:
    """A callable resolved in the generated namespace on first use (after ``exec``)."""

    __slots__ = ("ns", "fn", "target")

    def __init__(self, ns: dict[str, Any], fn: str) -> None:
        self.ns, self.fn, self.target = ns, fn, None

    def __call__(self, *args: Any) -> Any:
        return self.ns[self.fn](*args)


def _resolve(x: Any) -> Any:
    return x.ns[x.fn] if isinstance(x, _Late) else x


def finalize_tables(tables: dict[str, Table], profiles: dict[str, ActionProfile]) -> None:
    """Replace the late-bound callables by the generated functions, once they exist."""
    for t in tables.values():
        t.key_fn = _resolve(t.key_fn)
        t.selector_fn = _resolve(t.selector_fn)
        for spec in t.actions.values():
            spec.fn = _resolve(spec.fn)
        for e in [*t.entries, t.default_entry]:
            e.fn = _resolve(e.fn)
    for p in profiles.values():
        for m in p.members.values():
            m.fn = _resolve(m.fn)


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


def _priority_annotation(entry: A.Entry) -> int | None:
    for a in entry.annotations:
        if a.name == "priority" and a.args:
            v = Checker.const_value_static(a.args[0])
            if isinstance(v, int):
                return v
    return None


def _prop(d: A.TableDecl, name: str) -> Any:
    for p in d.properties:
        if p.name == name:
            return p.value
    return None


def _member(e: A.Expr | None) -> str:
    if isinstance(e, A.Member):
        return e.name
    return ""


def _agg(t: T.Type) -> bool:
    return isinstance(T.strip_newtype(t), (T.StructT, T.StackT, T.TupleT))


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _converter(types: list[T.Type]) -> Any:
    """Control-plane argument values (unsigned) to the Python values actions take."""
    plan = []
    for t in types:
        b = T.strip_newtype(t)
        if b is T.BOOL:
            plan.append("bool")
        elif (bb := bits_of(b)) is not None and bb.signed:
            plan.append(bb)
        else:
            plan.append(None)
    if all(p is None for p in plan):
        return tuple

    def convert(values: list[int]) -> tuple[Any, ...]:
        out = []
        for v, p in zip(values, plan, strict=True):
            if p == "bool":
                out.append(bool(v))
            elif isinstance(p, T.Bits):
                out.append(wrap_const(v, p))
            else:
                out.append(v)
        return tuple(out)

    return convert


def _noaction_name(checked: CheckedProgram, pos: Any) -> A.Name:
    sym = checked.scope.lookup("NoAction")
    if sym is None:
        raise CodegenError(pos, "NoAction is not declared (include core.p4)")
    n = A.Name(pos, "NoAction")
    n.sym = sym
    return n


def _no_log(msg: str, values: tuple[Any, ...]) -> None:
    pass


def _division_by_zero(where: str) -> int:
    raise P4RuntimeFault(where, "division by zero")


def build_pipeline(
    checked: CheckedProgram, name: str, rng: random.Random | None = None
) -> Pipeline:
    return ProgramBuilder(checked, name, rng).build()


__all__ = ["build_pipeline", "Pipeline", "ProgramBuilder", "StackL"]
