"""The whole C translation unit of one pipeline: layout, objects, functions, tables.

Input is the interpreter's ``Pipeline`` (the checked program already lowered to Python
functions over one flat slot array, with its tables and externs created under their
control-plane names). Output is C source that includes the fixed runtime
(``runtime/p4r_runtime.c`` before the program, ``runtime/p4r_path.c`` after it). Anything the
translation does not know raises ``Unsupported`` naming it and the P4 function it sits in.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

from ..interp.builder import Pipeline
from ..interp.externs import ActionProfile, Counter, Meter, Register, ValueSet
from ..interp.pycompile import parse_module
from ..interp.tables import NO_ACTION, NO_COLOR, Table
from .cexprs import U64, Unsupported, const
from .creroll import reroll
from .csigns import Signs
from .cstmts import StmtTx
from .cwide import words

GENERATOR_VERSION = "5"
STD_NEEDED = (
    "ingress_port",
    "egress_spec",
    "egress_port",
    "instance_type",
    "packet_length",
    "mcast_grp",
    "egress_rid",
    "parser_error",
)
STD_OPTIONAL = ("ingress_global_timestamp", "egress_global_timestamp", "enq_timestamp")
STAGES = ("parser", "verify", "ingress", "egress", "compute", "deparser")


@dataclass
class ProgramObjects:
    """What the names in the generated Python stand for, as C indexes."""

    pipeline: Pipeline
    functions: set[str] = field(default_factory=set)
    states: dict[str, int] = field(default_factory=dict)
    key_fns: set[str] = field(default_factory=set)
    value_fns: set[str] = field(default_factory=set)
    tables: dict[str, int] = field(default_factory=dict)  # namespace name -> C index
    table_list: list[Table] = field(default_factory=list)
    registers: dict[str, int] = field(default_factory=dict)  # namespace name -> C index
    cells: dict[str, int] = field(default_factory=dict)
    register_list: list[Register] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    counter_list: list[Counter] = field(default_factory=list)
    meters: dict[str, int] = field(default_factory=dict)  # namespace name -> C index
    meter_list: list[Meter] = field(default_factory=list)
    actions: dict[str, int] = field(default_factory=dict)  # control-plane name -> id
    payload_bufs: set[str] = field(default_factory=set)  # field lists + packet (checksums)
    crcs: list[str] = field(default_factory=list)  # custom CRC algorithms: C index -> name
    # digest, log_msg and fault calls: (kind, text, where, EV_UINT/EV_BOOL/EV_INT per value)
    event_sites: list[tuple[str, str, str, tuple[int, ...]]] = field(default_factory=list)
    emit_total: int = 0
    bitbuf_max: int = 64
    signed_slots: set[int] = field(default_factory=set)  # slots of int<W> values
    signed_cells: set[str] = field(default_factory=set)  # X_CELLS of signed registers
    signed_params: dict[str, set[str]] = field(default_factory=dict)  # fn -> its int<W> params
    # per table action: how each control-plane argument becomes the action's value
    arg_kinds: dict[tuple[int, str], list[tuple[str, int]]] = field(default_factory=dict)
    signs: Any = None  # csigns.Signs, once the module is parsed
    ix_tables: dict[str, tuple[int, ...]] = field(default_factory=dict)  # header stack slots
    vsets: dict[str, int] = field(default_factory=dict)  # namespace name -> C index
    vset_list: list[ValueSet] = field(default_factory=list)
    profile_list: list[ActionProfile] = field(default_factory=list)  # C index -> profile
    sel_fns: dict[str, str] = field(default_factory=dict)  # selector key fn -> hash algorithm
    # the slots as words of S (cwide.py): the first word of each slot, its words on arrival
    base: list[int] = field(default_factory=list)
    init_words: list[int] = field(default_factory=list)
    vmax: dict[int, int] = field(default_factory=dict)  # varbit slot -> its maximum width
    wide_bits: int = 0  # the widest value the wide path computes (P4R_WW words); 0: none
    # per table whose keys take more than one word each: the words of each key (cwide.py);
    # per key function the same, for its return
    key_words: dict[int, list[int]] = field(default_factory=dict)
    key_fn_words: dict[str, list[int]] = field(default_factory=dict)
    # actions with data over 64 bits: the words of each argument (engine.push_entries), and
    # their generated functions' wide parameters: index after S, P -> width
    arg_words: dict[str, list[int]] = field(default_factory=dict)
    wide_params: dict[str, dict[int, int]] = field(default_factory=dict)
    reg_words: dict[int, int] = field(default_factory=dict)  # wide register -> words per cell
    # registers of one word per cell and the same size share a bank laid out cell-major
    # (bank_registers): register -> (its bank's first register, its column, the bank's width)
    reg_bank: dict[int, tuple[int, int, int]] = field(default_factory=dict)

    def reg_stride(self, r: int) -> int:
        """Words between cell i and cell i + 1 of register r: its bank's width (1 alone)."""
        return self.reg_bank[r][2] if r in self.reg_bank else 1

    def arg_columns(self) -> int:
        """The words of action data an entry holds in C (one per argument of at most 64
        bits), the most any action takes."""
        return max(
            [
                sum(self.arg_words.get(a, [1] * len(s.params)))
                for t in self.table_list
                for a, s in t.actions.items()
            ]
            + [1]
        )

    def key_columns(self, t: Table) -> int:
        """The words of a table's key in C (one per key of at most 64 bits)."""
        return sum(words(k.width) for k in t.keys)

    def slot_bits(self, k: int) -> int:
        """A bound on the bits of slot k's value (64 where the type does not say)."""
        init = self.pipeline.storage.init[k]
        if isinstance(init, bool):
            return 1
        return getattr(self.pipeline.storage, "widths", {}).get(k, 64)

    passes: bool = False  # the program clones, resubmits or recirculates (p4r_path.c)
    xfls: list[tuple[int, ...]] = field(default_factory=list)  # explicit preserved slots

    def table_id(self, name: str) -> int | None:
        return self.tables.get(name)

    def counter_id(self, name: str) -> int | None:
        return self.counters.get(name)

    def meter_id(self, name: str) -> int | None:
        return self.meters.get(name)

    def register_cells(self, name: str) -> int | None:
        return self.cells.get(name)

    def action_id(self, name: str) -> int:
        if name == NO_ACTION:
            return 0  # no action ran (ids start at 1): an indirect table's empty default
        if name not in self.actions:
            raise Unsupported(f"the action name {name!r}")
        return self.actions[name]

    def event_site(self, kind: str, text: str, where: str, flags: tuple[int, ...]) -> int:
        """The number of a digest/log_msg/fault call site (mirror_externs.drain_events)."""
        site = (kind, text, where, flags)
        if site not in self.event_sites:
            self.event_sites.append(site)
        return self.event_sites.index(site)

    def returns_value(self, fn: str) -> bool:
        return fn in self.value_fns

    def note_emit(self, n: int) -> None:
        self.emit_total += n

    def note_ix(self, name: str, table: tuple[int, ...]) -> str:
        """The C array of a header stack field's slots per element (``S[IX[i]]``)."""
        self.ix_tables[name] = tuple(self.base[k] for k in table)
        return f"P4R_{name}"

    def note_bitbuf(self, nbits: int) -> None:
        self.bitbuf_max = max(self.bitbuf_max, nbits)

    def explicit_list(self, slots: tuple[int, ...]) -> int:
        """The C id (from 1) of the slots a clone3/resubmit/recirculate(data) preserves."""
        if slots not in self.xfls:
            self.xfls.append(slots)
        return self.xfls.index(slots) + 1


@dataclass
class NativeProgram:
    """The generated C source and how its objects map to the pipeline's."""

    source: str
    objects: ProgramObjects


def _where(pipeline: Pipeline, fn: str) -> str:
    # generated functions are named kind + counter + '_' + the P4 name
    return f"{pipeline.name}: {fn.split('_', 1)[-1] if '_' in fn else fn}"


def generate(pipeline: Pipeline) -> NativeProgram:
    """C for ``pipeline``, or ``Unsupported`` naming the first construct refused."""
    ns = pipeline.namespace
    objs = ProgramObjects(pipeline)
    check_objects(pipeline, objs)
    # the same generated Python (the same program) gives the same C: translate it once per
    # process (test suites build the same program many times)
    # (the objects' shapes are part of the key: two programs can lower to the same Python
    # and differ in a meter's unit, a counter's size or a table's direct counter)
    cache_key = (pipeline.source, objects_signature(objs))
    cached = _CACHE.get(cache_key)
    if cached is not None:
        objs.emit_total, objs.bitbuf_max = cached.emit_total, cached.bitbuf_max
        objs.event_sites, objs.crcs = list(cached.event_sites), list(cached.crcs)
        objs.wide_bits, objs.passes = cached.wide_bits, cached.passes
        return NativeProgram(cached.source, objs)
    mod = parse_module(pipeline.source)
    fdefs = [f for f in mod.body if isinstance(f, ast.FunctionDef)]
    if len(fdefs) != len(mod.body):
        raise Unsupported("generated code other than functions")
    objs.functions = {f.name for f in fdefs}
    state_id = 1
    for f in fdefs:
        if f.name[0] == "s" and f.name[1:2].isdigit():
            objs.states[f.name] = state_id
            state_id += 1
        for node in ast.walk(f):
            if isinstance(node, ast.Return) and node.value is not None:
                if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                    objs.value_fns.add(f.name)
        if f.name in objs.states:
            objs.value_fns.add(f.name)
    for (ti, name), kinds in objs.arg_kinds.items():
        spec = objs.table_list[ti].actions[name]
        fn = getattr(spec.fn, "__name__", "")
        fdef = next((f for f in fdefs if f.name == fn), None)
        if fdef is not None:
            params = [a.arg for a in fdef.args.args][2:]
            for p, (kind, _) in zip(params, kinds, strict=False):
                if kind == "s":
                    objs.signed_params.setdefault(fn, set()).add(p)
    for t in objs.table_list:  # the generated functions of actions with wide data
        for aname, spec in t.actions.items():
            if aname in objs.arg_words:
                fn = getattr(spec.fn, "__name__", "")
                objs.wide_params[fn] = {j: w for j, (_, w) in enumerate(spec.params) if w > 64}
    objs.signs = Signs(objs, fdefs)
    for t in objs.table_list:
        kf = getattr(t.key_fn, "__name__", None)
        if t.keys:
            if kf not in objs.functions:
                raise Unsupported(f"the key of table {t.name}")
            objs.key_fns.add(kf)
            objs.value_fns.discard(kf)
            if any(k.width > 64 for k in t.keys):
                objs.key_fn_words[kf] = [words(k.width) for k in t.keys]
    tx = StmtTx(objs)
    protos, bodies = [], []
    for f in fdefs:
        try:
            p, b = tx.function(f)
        except Unsupported as e:
            raise Unsupported(e.what, _where(pipeline, f.name)) from e
        except RecursionError:
            # a generator pass that still recurses met a deeper expression than Python's
            # stack allows: refuse (the Python engine runs it) rather than fail the load
            raise Unsupported("an expression nested too deeply", _where(pipeline, f.name)) from None
        protos.append(p)
        bodies.append(reroll(b))
    stage_fns = {}
    for stage in STAGES:
        fn = getattr(pipeline.stages[stage], "__name__", "")
        if fn not in objs.functions or fn in objs.value_fns:
            raise Unsupported(f"the {stage} stage")
        stage_fns[stage] = fn
    parts = [prelude(pipeline, objs, stage_fns)]
    parts.append(resources.files(__package__).joinpath("runtime/p4r_runtime.c").read_text())
    parts.append(meter_decls(objs))
    parts.append(resources.files(__package__).joinpath("runtime/p4r_externs.c").read_text())
    parts.append(resources.files(__package__).joinpath("runtime/p4r_profiles.c").read_text())
    sizes = ", ".join(str(v.size) for v in objs.vset_list) or "0"
    nfields = ", ".join(str(len(v.widths)) for v in objs.vset_list) or "0"
    parts.append(f"static const uint32_t P4R_VS_SIZE[] = {{{sizes}}};")
    parts.append(f"static const uint32_t P4R_VS_FIELDS[] = {{{nfields}}};")
    parts.append(resources.files(__package__).joinpath("runtime/p4r_types.c").read_text())
    if objs.wide_bits or objs.vmax:  # only programs with wide or varbit values need it
        parts.append(f"#define P4R_WW {words(max(objs.wide_bits, *objs.vmax.values(), 1))}")
        parts.append(resources.files(__package__).joinpath("runtime/p4r_wide.c").read_text())
    parts.append(counter_code(objs))
    parts += protos
    parts += [
        f"static const uint32_t P4R_{n}[] = {{{', '.join(map(str, t))}}};"
        for n, t in objs.ix_tables.items()
    ]
    parts += [
        f"static int p4r_tbl_{i}(uint64_t *S, p4r_pkt *P, uint64_t *_res);"
        for i in range(len(objs.table_list))
    ]
    parts.append(state_dispatch(objs))
    parts += bodies
    parts.append(table_code(objs))
    parts.append(state_code(objs))
    strides = ", ".join(str(objs.reg_stride(i)) for i in range(len(objs.register_list))) or "1"
    parts.append(f"static const uint32_t P4R_REG_STRIDE[] = {{{strides}}};")
    parts.append(passes_code(objs))
    parts.append(resources.files(__package__).joinpath("runtime/p4r_queues.c").read_text())
    parts.append(resources.files(__package__).joinpath("runtime/p4r_path.c").read_text())
    del ns
    source = "\n".join(parts) + "\n"
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[cache_key] = _Generated(
        source,
        objs.emit_total,
        objs.bitbuf_max,
        tuple(objs.event_sites),
        tuple(objs.crcs),
        objs.wide_bits,
        objs.passes,
    )
    return NativeProgram(source, objs)


class _Generated(NamedTuple):
    """What generate() learns while translating, kept with the source so that a cache hit
    restores it into the new ProgramObjects."""

    source: str
    emit_total: int
    bitbuf_max: int
    event_sites: tuple[Any, ...]
    crcs: tuple[Any, ...]
    wide_bits: int
    passes: bool


_CACHE: dict[tuple[str, str], _Generated] = {}


def objects_signature(objs: ProgramObjects) -> str:
    """What the C depends on besides the generated Python: the objects' sizes and kinds."""
    return repr(
        (
            sorted(objs.registers.items()),
            [(r.size, r.width) for r in objs.register_list],
            sorted(objs.counters.items()),
            [c.size for c in objs.counter_list],
            sorted(objs.meters.items()),
            [(m.size, m.unit) for m in objs.meter_list],
            sorted(objs.tables.items()),
            [
                (
                    t.name,
                    t.mode,
                    [(k.match_kind, k.width) for k in t.keys],
                    [(a, getattr(s.fn, "__name__", ""), s.params) for a, s in t.actions.items()],
                    t.direct_counter is not None,
                    getattr(t.direct_meter, "unit", None),
                    t.length_slot,
                    getattr(t.key_fn, "__name__", None),
                )
                for t in objs.table_list
            ],
            sorted(objs.actions.items()),
            sorted(objs.pipeline.std.items()),
            [(p.name, [objs.table_list.index(t) for t in p.tables]) for p in objs.profile_list],
            sorted(objs.sel_fns.items()),
            sorted(objs.pipeline.field_lists.items()),
            objs.pipeline.metadata_slots,
        )
    )


def check_objects(pipeline: Pipeline, objs: ProgramObjects) -> None:
    """Index the program's tables, registers and counters; refuse what C does not hold yet."""
    ns = pipeline.namespace
    objs.signed_slots = set(getattr(pipeline.storage, "signed", ()))
    slot_layout(pipeline, objs)
    for name, obj in ns.items():
        if isinstance(obj, Table):
            objs.tables[name] = len(objs.table_list)
            objs.table_list.append(obj)
        elif isinstance(obj, Register):
            if obj.width > 64 and obj.signed:
                raise Unsupported(f"{obj.name}: a signed register wider than 64 bits")
            if obj.width > 64:  # its cells take a word per 64 bits each (cwide.py)
                objs.reg_words[len(objs.register_list)] = words(obj.width)
                objs.wide_bits = max(objs.wide_bits, obj.width)
            objs.registers[name] = len(objs.register_list)
            objs.register_list.append(obj)
        elif isinstance(obj, Counter):
            objs.counters[name] = len(objs.counter_list)
            objs.counter_list.append(obj)
        elif isinstance(obj, Meter):
            objs.meters[name] = len(objs.meter_list)
            objs.meter_list.append(obj)
        elif isinstance(obj, ValueSet):
            if any(w > 64 for w in obj.widths):
                raise Unsupported(f"{obj.name}: a value set field wider than 64 bits")
            objs.vsets[name] = len(objs.vset_list)
            objs.vset_list.append(obj)
    for name in ns:
        if name.endswith("_CELLS") and name[: -len("_CELLS")] in objs.registers:
            objs.cells[name] = objs.registers[name[: -len("_CELLS")]]
            if objs.register_list[objs.cells[name]].signed:
                objs.signed_cells.add(name)
    for t in pipeline.tables.values():
        if t not in objs.table_list:
            objs.tables[f"<{t.name}>"] = len(objs.table_list)
            objs.table_list.append(t)
        for aname, spec in t.actions.items():
            if spec.convert is not tuple:
                ti = objs.table_list.index(t)
                objs.arg_kinds[(ti, aname)] = arg_kinds(spec)
                if any(k == "s" and w > 64 for k, w in objs.arg_kinds[(ti, aname)]):
                    raise Unsupported(
                        f"{t.name}: action {spec.name} takes a signed value over 64 bits"
                    )
            if any(w > 64 for _, w in spec.params):  # a column per word (cwide.py)
                objs.arg_words[aname] = [words(max(w, 1)) for _, w in spec.params]
                objs.wide_bits = max(objs.wide_bits, *(w for _, w in spec.params))
            objs.actions.setdefault(spec.name, len(objs.actions) + 1)
        if any(k.width > 64 and k.match_kind == "range" for k in t.keys):
            raise Unsupported(f"{t.name}: a range key wider than 64 bits")
        if any(k.width > 64 for k in t.keys):
            # a wide key is matched as one column per word (exact, masks, prefixes: a mask
            # of each word); cwide.split_key pushes the entries so
            objs.key_words[objs.table_list.index(t)] = [words(k.width) for k in t.keys]
    check_profiles(pipeline, objs)
    bank_registers(objs)
    for r in pipeline.registers.values():
        if r not in objs.register_list:
            raise Unsupported(f"{r.name}: a register the generated code does not name")
    for v in pipeline.value_sets.values():
        if v not in objs.vset_list:
            raise Unsupported(f"{v.name}: a value set the generated code does not name")
    for c in pipeline.counters.values():
        if c not in objs.counter_list:
            raise Unsupported(f"{c.name}: a counter the generated code does not name")
    for m in pipeline.meters.values():
        if m not in objs.meter_list:
            raise Unsupported(f"{m.name}: a meter the generated code does not name")
    for f in STD_NEEDED:
        if f not in pipeline.std:
            raise Unsupported(f"standard_metadata.{f} is missing")


def bank_registers(objs: ProgramObjects) -> None:
    """Group the one-word registers of equal size into banks stored cell-major: cell i of
    the bank's j-th register is word i * width + j. A program that reads and writes many
    registers at one index (dense.p4's K accumulators at the packet's cell) then touches K
    adjacent words, a few cache lines and one page, instead of K arrays far apart: with K =
    1024 separate arrays each packet missed the TLB about a thousand times. A register alone
    in its size keeps its own array (width 1)."""
    by_size: dict[int, list[int]] = {}
    for i, r in enumerate(objs.register_list):
        if i not in objs.reg_words:
            by_size.setdefault(max(r.size, 1), []).append(i)
    for members in by_size.values():
        if len(members) > 1:
            for j, i in enumerate(members):
                objs.reg_bank[i] = (members[0], j, len(members))


def check_profiles(pipeline: Pipeline, objs: ProgramObjects) -> None:
    """Index the action profiles and selectors and their tables' selector key functions.

    A member runs the action of the first of the profile's tables that lists it
    (``ActionProfile.action_spec``), while C dispatches on the applying table's own action
    list: the two agree only if every table sharing a profile has the same actions, bound the
    same way, so a profile shared by tables whose actions differ is refused."""
    for prof in pipeline.profiles.values():
        objs.profile_list.append(prof)
        shapes = {
            repr(sorted((a, getattr(s.fn, "__name__", ""), s.params) for a, s in t.actions.items()))
            for t in prof.tables
        }
        if len(shapes) > 1:
            raise Unsupported(f"{prof.name}: a profile shared by tables with different actions")
        if any(a in objs.arg_words for t in prof.tables for a in t.actions):
            # members are pushed one word per argument (profile_words), not split (cwide.py)
            raise Unsupported(f"{prof.name}: action data wider than 64 bits in an action profile")
        for t in prof.tables:
            if t not in objs.table_list:
                raise Unsupported(f"{t.name}: a table the generated code does not name")
            sel = getattr(t.selector_fn, "__name__", None)
            if t.selector_fn is not None and prof.hash_fn is not None:
                if sel is None or prof.selector_algo is None:
                    raise Unsupported(f"{t.name}: the selector key")
                objs.sel_fns[sel] = prof.selector_algo


def profile_of(objs: ProgramObjects, t: Table) -> int | None:
    return objs.profile_list.index(t.profile) if t.profile is not None else None


def slot_layout(pipeline: Pipeline, objs: ProgramObjects) -> None:
    """Each slot's words in S: one for a value of at most 64 bits, ceil(W / 64) for a wider
    one, a width word and ceil(max / 64) value words for a varbit (cwide.py)."""
    storage = pipeline.storage
    widths = getattr(storage, "widths", {})
    for k, v in enumerate(storage.init):
        objs.base.append(len(objs.init_words))
        if isinstance(v, tuple) and len(v) == 2:  # varbit: (width, value)
            vmax = widths.get(k)
            if vmax is None:
                raise Unsupported(f"{pipeline.name}: a varbit field of unknown size")
            objs.vmax[k] = vmax
            objs.init_words += [0] * (1 + words(vmax))
        elif not isinstance(v, (bool, int)):
            raise Unsupported(f"{pipeline.name}: a slot holding {type(v).__name__}")
        elif widths.get(k, 0) > 64:
            if k in objs.signed_slots:
                raise Unsupported(f"{pipeline.name}: an int<{widths[k]}> (signed, over 64 bits)")
            objs.init_words += [0] * words(widths[k])
        else:
            objs.init_words.append(int(v))


def prelude(pipeline: Pipeline, objs: ProgramObjects, stage_fns: dict[str, str]) -> str:
    init = objs.init_words
    nkeys = max([objs.key_columns(t) for t in objs.table_list] + [1])
    nargs = objs.arg_columns()
    lines = [
        f"/* generated by p4reduce's native generator {GENERATOR_VERSION} from {pipeline.name} */",
        f"#define P4R_NSLOTS {max(len(init), 1)}",
        f"#define P4R_NTABLES {len(objs.table_list)}",
        f"#define P4R_NREGS {len(objs.register_list)}",
        f"#define P4R_NCTRS {len(objs.counter_list)}",
        f"#define P4R_NMETERS {len(objs.meter_list)}",
        f"#define P4R_NCRC {len(objs.crcs)}",
        f"#define P4R_NVS {len(objs.vset_list)}",
        f"#define P4R_NPROF {len(objs.profile_list)}",
        f"#define P4R_MAX_KEYS {nkeys}",
        f"#define P4R_MAX_ARGS {nargs}",
        f"#define P4R_OUT_MAX {max(objs.emit_total, 64)}",
        f"#define P4R_BITBUF_MAX {(objs.bitbuf_max + 7) // 8 + 64}",
    ]
    if any(site[0] == "digest" for site in objs.event_sites):
        lines.append("#define P4R_HAS_DIGESTS 1")
    for f in STD_NEEDED + STD_OPTIONAL:
        if f in pipeline.std:
            lines.append(f"#define P4R_STD_{f} {objs.base[pipeline.std[f]]}")
    for f, w in (
        ("ingress_port", 9),
        ("egress_rid", 16),
        ("packet_length", 32),
        ("ingress_global_timestamp", 48),
        ("egress_global_timestamp", 48),
    ):
        lines.append(f"#define P4R_MASK_{f} UINT64_C({(1 << w) - 1})")
    for stage, fn in stage_fns.items():
        lines.append(f"#define P4R_STAGE_{stage}(S, P) {fn}(S, P)")
    return "\n".join(lines)


def state_dispatch(objs: ProgramObjects) -> str:
    lines = ["static int p4r_state_call(uint64_t st, uint64_t *S, p4r_pkt *P, uint64_t *ret) {"]
    lines.append("    switch (st) {")
    for name, i in objs.states.items():
        lines.append(f"    case {i}: return {name}(S, P, ret);")
    lines += ["    default: *ret = 0; return P4R_OK;", "    }", "}"]
    return "\n".join(lines)


def table_code(objs: ProgramObjects) -> str:
    out = []
    for i, t in enumerate(objs.table_list):
        nk = objs.key_columns(t)
        kf = getattr(t.key_fn, "__name__", "")
        lines = [f"static int p4r_tbl_{i}(uint64_t *S, p4r_pkt *P, uint64_t *_res) {{"]
        lines.append(f"    /* {t.name} */")
        lines.append(f"    uint64_t key[{max(nk, 1)}] = {{0}};")
        lines.append("    int _rc;")
        if nk:
            lines.append(f"    if ((_rc = {kf}(S, P, key)) != P4R_OK) return _rc;")
        lines.append(f"    const p4r_entry *e = p4r_lookup(&P->E->tables[{i}], key);")
        lines.append(f"    if (!e) e = &P->E->tables[{i}].def;")
        k = profile_of(objs, t)
        if k is not None:
            lines += profile_code(objs, i, k, t)
        lines += direct_code(i, t, objs)
        if k is not None:
            lines.append("    if (_m) e = _m; /* the member's action runs */")
        lines.append("    *_res = e->hit | ((uint64_t)e->action << 1);")
        lines.append("    switch (e->action) {")
        for name, spec in t.actions.items():
            fn = getattr(spec.fn, "__name__", "")
            if fn not in objs.functions:
                raise Unsupported(f"{t.name}: action {name} has no generated function")
            kinds = objs.arg_kinds.get((i, name))
            cols = objs.arg_words.get(name, [1] * len(spec.params))
            codes, col = [], 0
            for j, n in enumerate(cols):  # an argument over 64 bits: its words (cwide.py)
                codes.append(
                    arg_code(j, kinds, col) if n == 1 else f"p4r_w_ld(e->args + {col}, {n})"
                )
                col += n
            args = ", ".join(["S", "P", *codes])
            lines.append(f"    case {objs.actions[name]}: return {fn}({args});")
        lines += ["    default: return P4R_OK;", "    }", "}"]
        out.append("\n".join(lines))
    return "\n".join(out)


def arg_kinds(spec: Any) -> list[tuple[str, int]]:
    """How the action converts each control-plane argument: ``u`` as is, ``b`` to bool,
    ``s`` sign-extended from its width. Asked of the interpreter's own converter (all ones
    in: -1 out means signed, True means bool), so the two engines cannot disagree."""
    widths = [max(w, 1) for _, w in spec.params]
    out = spec.convert([(1 << w) - 1 for w in widths])
    kinds = []
    for v, w in zip(out, widths, strict=True):
        if v is True:
            kinds.append(("b", w))
        elif v == -1:
            kinds.append(("s", w))
        elif v == (1 << w) - 1:
            kinds.append(("u", w))
        else:
            raise Unsupported(f"{spec.name}: an action parameter converted as {v!r}")
    return kinds


def arg_code(j: int, kinds: list[tuple[str, int]] | None, col: int | None = None) -> str:
    c = j if col is None else col  # argument j's word in the entry
    if kinds is None or kinds[j][0] == "u":
        return f"e->args[{c}]"
    kind, w = kinds[j]
    if kind == "b":
        return f"(e->args[{c}] != 0)"
    return f"p4r_sext(e->args[{c}], {w})"


def state_code(objs: ProgramObjects) -> str:
    """Allocation of register and counter storage, and the tables' static shape."""
    lines = ["static int p4r_alloc_state(p4r_engine *E) {"]
    for i, r in enumerate(objs.register_list):
        n = max(r.size, 1) * objs.reg_words.get(i, 1)
        first, col, width = objs.reg_bank.get(i, (i, 0, 1))
        if first != i:  # a later column of a bank: the bank's first register holds it
            lines.append(f"    E->reg[{i}] = E->reg[{first}] + {col};")
        else:
            lines.append(f"    if (!(E->reg[{i}] = calloc({n * width}, 8))) return -1;")
    for i, c in enumerate(objs.counter_list):
        n = max(c.size, 1)
        lines.append(f"    if (!(E->ctr_pk[{i}] = calloc({n}, 8))) return -1;")
        lines.append(f"    if (!(E->ctr_by[{i}] = calloc({n}, 8))) return -1;")
    for i, m in enumerate(objs.meter_list):
        lines.append(
            f"    if (!(E->mtr[{i}] = calloc({max(m.size, 1)}, sizeof(p4r_meter)))) return -1;"
        )
    for i, v in enumerate(objs.vset_list):
        n = max(v.size, 1) * 2 * max(len(v.widths), 1)
        lines.append(f"    if (!(E->vs[{i}] = calloc({n}, 8))) return -1;")
    lines += ["    return 0;", "}", "static void p4r_free_state(p4r_engine *E) {"]
    lines.append(f"    for (int i = 0; i < {len(objs.vset_list)}; i++) free(E->vs[i]);")
    owners = [i for i in range(len(objs.register_list)) if objs.reg_bank.get(i, (i,))[0] == i]
    lines += [f"    free(E->reg[{i}]);" for i in owners]
    lines.append(f"    for (int i = 0; i < {len(objs.meter_list)}; i++) free(E->mtr[i]);")
    lines.append(f"    for (int i = 0; i < {len(objs.table_list)}; i++) {{")
    lines.append("        free(E->dctr_pk[i]); free(E->dctr_by[i]); free(E->dmtr[i]);")
    lines.append("    }")
    lines.append("    free(E->ev);")
    lines.append("    p4r_profiles_free(E);")
    lines.append(f"    for (int i = 0; i < {len(objs.counter_list)}; i++) {{")
    lines.append("        free(E->ctr_pk[i]); free(E->ctr_by[i]);")
    lines += ["    }", "}", "static void p4r_init_tables(p4r_engine *E) {"]
    for i, t in enumerate(objs.table_list):
        exact = int(t.mode == "exact" and bool(t.keys))
        lpm = int(t.mode == "lpm")
        lines.append(
            f"    E->tables[{i}].nkeys = {objs.key_columns(t)}; E->tables[{i}].exact = {exact};"
            f" E->tables[{i}].lpm = {lpm};"
        )
    lines.append("}")
    return "\n".join(lines)


def passes_code(objs: ProgramObjects) -> str:
    """What the packet path (runtime/p4r_path.c) needs to know of the program: the metadata
    slots a clone resets (``V1Switch.reset_metadata``), the slots each ``@field_list`` index
    preserves (``Pipeline.field_lists``; an unknown index preserves nothing) and the explicit
    slot lists of clone3/resubmit/recirculate(data)."""
    p = objs.pipeline
    meta = p.metadata_slots
    lines = [
        f"#define P4R_NMETA {len(meta)}u",
        f"static const uint32_t P4R_META[] = {{{', '.join(map(str, meta)) or '0'}}};",
    ]
    cases = []
    for k, (idx, slots) in enumerate(sorted(p.field_lists.items())):
        if not 0 <= idx < 1 << 64:
            raise Unsupported(f"{p.name}: the @field_list index {idx}")
        lines.append(
            f"static const uint32_t P4R_FL_{k}[] = {{{', '.join(map(str, slots)) or '0'}}};"
        )
        cases.append(f"    case {const(idx)}: *sl = P4R_FL_{k}; return {len(slots)};")
    lines.append("static uint32_t p4r_field_list(uint64_t idx, const uint32_t **sl) {")
    lines += ["    switch (idx) {", *cases, "    default: *sl = NULL; return 0;", "    }", "}"]
    cases = []
    for k, slots in enumerate(objs.xfls):
        lines.append(
            f"static const uint32_t P4R_XFL_{k + 1}[] = {{{', '.join(map(str, slots)) or '0'}}};"
        )
        cases.append(f"    case {k + 1}: *sl = P4R_XFL_{k + 1}; return {len(slots)};")
    lines.append("static uint32_t p4r_xfl(uint32_t id, const uint32_t **sl) {")
    lines += ["    switch (id) {", *cases, "    default: *sl = NULL; return 0;", "    }", "}"]
    return "\n".join(lines)


def meter_decls(objs: ProgramObjects) -> str:
    """The indexed meters' sizes and units, which runtime/p4r_externs.c reads."""
    sizes = ", ".join(str(m.size) for m in objs.meter_list) or "0"
    units = ", ".join(str(int(m.unit == "bytes")) for m in objs.meter_list) or "0"
    return (
        f"static const uint64_t P4R_MTR_SIZE[] = {{{sizes}}};\n"
        f"static const uint8_t P4R_MTR_BYTES[] = {{{units}}};"
    )


def profile_code(objs: ProgramObjects, i: int, k: int, t: Table) -> list[str]:
    """An entry that points into action profile k: its member, or for a group the member the
    selector hash picks (ActionProfile.resolve: ``members[h % len(members)]``, h = 0 without
    a selector). A missing or empty group makes the table miss: the default action runs and
    the direct counter and meter are not touched."""
    sel = getattr(t.selector_fn, "__name__", None)
    hashed = sel in objs.sel_fns and t.profile.hash_fn is not None
    out = [
        "    const p4r_entry *_m = NULL;",
        "    if (e->ref) {",
        f"        const p4r_profile *_p = &P->E->prof[{k}];",
        "        if (e->ref == 1) {",
        "            _m = p4r_prof_member(_p, e->args[0]);",
        "        } else {",
        "            int64_t _g = p4r_prof_group(_p, e->args[0]);",
        "            if (_g >= 0) {",
        "                uint64_t _h = 0;",
    ]
    if hashed:
        out.append(f"                if ((_rc = {sel}(S, P, &_h)) != P4R_OK) return _rc;")
    out += [
        "                _m = p4r_prof_choose(_p, _g, _h);",
        "            }",
        "        }",
        f"        if (!_m) e = &P->E->tables[{i}].def;",
        "    }",
    ]
    return out


def direct_code(i: int, t: Table, objs: ProgramObjects) -> list[str]:
    """A hit's direct counter and meter updates (Table.apply: counter, then meter, then the
    action), on the entry's cell; a miss (the default entry) touches neither."""
    out = []
    length = f"S[{objs.base[t.length_slot]}]"
    if t.direct_counter is not None:
        out.append(
            f"    if (e != &P->E->tables[{i}].def) {{ P->E->dctr_pk[{i}][e->cell]++;"
            f" P->E->dctr_by[{i}][e->cell] += {length}; }}"
        )
    if t.direct_meter is not None:
        units = length if t.direct_meter.unit == "bytes" else "1"
        out.append(
            f"    if (e != &P->E->tables[{i}].def)"
            f" P->color = p4r_meter_exec(&P->E->dmtr[{i}][e->cell], {units}, P->now);"
            f" else P->color = {NO_COLOR};"  # a miss: read() leaves its destination alone
        )
        target = getattr(t.direct_meter, "read_target", None)
        if target is not None:  # BMv2 writes read()'s field on every hit, whatever the action
            slot, bits = target
            mask = (1 << bits) - 1
            out.append(
                f"    if (e != &P->E->tables[{i}].def)"
                f" S[{objs.base[slot]}] = P->color & {const(mask)};"
            )
    return out


def counter_code(objs: ProgramObjects) -> str:
    """The slots' values on arrival and the counters' bounds-checked update."""
    lines = []
    sizes = ", ".join(str(c.size) for c in objs.counter_list) or "0"
    lines.append(f"static const uint64_t P4R_CTR_SIZE[] = {{{sizes}}};")
    lines.append(
        "static inline void p4r_count(p4r_engine *E, uint32_t c, uint64_t i, uint64_t len) {\n"
        "    if (i < P4R_CTR_SIZE[c]) { E->ctr_pk[c][i]++; E->ctr_by[c][i] += len; }\n}"
    )
    init = ", ".join(const(v) for v in objs.init_words) or "0"
    lines.insert(0, f"static const uint64_t P4R_INIT[] = {{{init}}};")
    return "\n".join(lines)


__all__ = ["GENERATOR_VERSION", "NativeProgram", "Unsupported", "generate", "U64"]
