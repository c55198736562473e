"""Calls of v1model's and core.p4's externs to Python source (a mixin of the code generator).

The parser's packet_in works on ``P.data`` with the byte cursor ``P.pos``; the deparser's
packet_out appends to ``P.out``. Stateful externs (registers, counters, meters) are runtime
objects bound into the generated module's namespace.
"""

from __future__ import annotations

import re
from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from .emit import tuple_code
from .exprs import CodegenError, Ref, bits_of, mask, wrap_code
from .externs import DirectMeterFactory, Register
from .layout import HeaderL, Scalar, StackL, StructL, UnionL, is_aggregate, leaf_types
from .tables import NO_COLOR

CLONE_TYPES = {"I2E": 0, "E2E": 1}


class ExternCallGen:
    """Mixin of ``ProgramBuilder``, which provides extern_object, std, hash_fn, owning_header."""

    em: Any

    # ------------------------------------------------------------------ dispatch
    def extern_method(self, e: A.Call, ext: T.ExternT, proto: Any, statement: bool) -> str:
        name = f"m_{ext.name}_{proto.name}"
        method = getattr(self, name, None)
        if method is None:
            raise CodegenError(e.pos, f"{ext.name}.{proto.name}: not supported by the interpreter")
        return method(e, self.extern_object(e.func.expr)) or ""

    def extern_function(self, e: A.Call, proto: Any, statement: bool) -> str:
        method = getattr(self, f"f_{proto.name}", None)
        if method is None:
            raise CodegenError(
                e.pos, f"{proto.name}: extern function not supported by the interpreter"
            )
        return method(e) or ""

    def arg(self, e: A.Call, i: int) -> A.Expr | None:
        if i >= len(e.args):
            return None
        return e.args[i].value

    def where(self, e: A.Node) -> str:
        return self.const_name(str(e.pos), "pos")

    # ------------------------------------------------------------------ packet_in
    def m_packet_in_extract(self, e: A.Call, obj: Any) -> str:
        target = self.arg(e, 0)
        if target is None:  # extract(_): parse the header into a scratch copy, then drop it
            t = self.ty(getattr(e, "bindings", {}).get("T") or T.VOID)
            lay0 = self.storage.alloc(t, "$extract_scratch", True)
            if not isinstance(lay0, HeaderL):
                raise CodegenError(e.pos, "extract(_) needs the header type: extract<H>(_)")
            ref = Ref(lay0)
        else:
            ref = self.ref(target)
        lay = ref.layout
        assert isinstance(lay, HeaderL)
        size = self.arg(e, 1)
        if size is None:
            self.extract_fixed(ref, lay)
        else:
            self.extract_varbit(ref, lay, self.val(size))
        if ref.stack is not None and target is not None and _through_next(target):
            self.em.line(f"S[{ref.stack.next_index}] = {ref.index} + 1")
        return ""

    def extract_fixed(self, ref: Ref, lay: HeaderL) -> None:
        width = sum(T.width_of(t) or 0 for t in (f.type for f in lay.fields.values()))
        nbytes = width // 8
        em = self.em
        pos, end, v = em.temp("p"), em.temp("e"), em.temp("x")
        em.line(f"{pos} = P.pos; {end} = {pos} + {nbytes}")
        em.line(f"if {end} > len(P.data): raise ParserError({self.error_code('PacketTooShort')})")
        em.line(f"{v} = int.from_bytes(P.data[{pos}:{end}], 'big'); P.pos = {end}")
        shift = width
        for f in lay.fields.values():
            w = T.width_of(f.type) or 0
            shift -= w
            raw = f"({v} >> {shift}) & {mask(w)}" if shift else f"{v} & {mask(w)}"
            em.line(f"{self.slot_target(ref, f.slot)} = {self.from_bits(raw, f.type)}")
        self.mark_valid(ref, lay)

    def extract_varbit(self, ref: Ref, lay: HeaderL, size: str) -> None:
        em = self.em
        fixed = sum(T.width_of(f.type) or 0 for f in lay.fields.values() if not _varbit(f.type))
        vmax = sum(T.width_of(f.type) or 0 for f in lay.fields.values() if _varbit(f.type))
        n = self.simple(size, "n")
        # BMv2's order (bm_sim/parser.cpp): not whole bytes, then too short a packet, then
        # more bits than the field can hold
        em.line(f"if {n} % 8: raise ParserError({self.error_code('ParserInvalidArgument')})")
        pos, end, v = em.temp("p"), em.temp("e"), em.temp("x")
        em.line(f"{pos} = P.pos; {end} = {pos} + ({fixed} + {n}) // 8")
        em.line(f"if {end} > len(P.data): raise ParserError({self.error_code('PacketTooShort')})")
        em.line(f"if {n} > {vmax}: raise ParserError({self.error_code('HeaderTooShort')})")
        em.line(f"{v} = int.from_bytes(P.data[{pos}:{end}], 'big'); P.pos = {end}")
        shift = em.temp("s")
        em.line(f"{shift} = {fixed} + {n}")
        for f in lay.fields.values():
            target = self.slot_target(ref, f.slot)
            if _varbit(f.type):
                em.line(f"{shift} -= {n}")
                em.line(f"{target} = ({n}, ({v} >> {shift}) & ((1 << {n}) - 1))")
            else:
                w = T.width_of(f.type) or 0
                em.line(f"{shift} -= {w}")
                em.line(f"{target} = {self.from_bits(f'({v} >> {shift}) & {mask(w)}', f.type)}")
        self.mark_valid(ref, lay)

    def mark_valid(self, ref: Ref, lay: HeaderL) -> None:
        self.em.line(f"{self.slot_target(ref, lay.valid)} = True")
        if lay.union is not None:
            self.invalidate_siblings(ref, lay)

    def from_bits(self, raw: str, t: T.Type) -> str:
        """A field's value from its raw unsigned bits."""
        b = T.strip_newtype(t)
        if b is T.BOOL:
            return f"({raw}) != 0"
        bb = bits_of(b)
        if bb is not None and bb.signed:
            return wrap_code(raw, bb)
        return raw

    def to_bits(self, code: str, t: T.Type) -> str:
        b = T.strip_newtype(t)
        if b is T.BOOL:
            return f"(1 if {code} else 0)"
        bb = bits_of(b)
        if bb is not None and bb.signed:
            return f"({code} & {mask(bb.width)})"
        return code

    def m_packet_in_lookahead(self, e: A.Call, obj: Any) -> str:
        t = self.ty(e.type)
        width = T.width_of(t) or 0
        nbytes = (width + 7) // 8
        em = self.em
        v = em.temp("x")
        em.line(
            f"if P.pos + {nbytes} > len(P.data): raise ParserError({self.error_code('PacketTooShort')})"
        )
        em.line(
            f"{v} = int.from_bytes(P.data[P.pos:P.pos + {nbytes}], 'big') >> {nbytes * 8 - width}"
        )
        if not is_aggregate(t):
            return self.from_bits(v, t)
        leaves: list[str] = []
        shift = width
        for lt in leaf_types(t):
            if (
                lt is T.BOOL
                and isinstance(T.strip_newtype(t), T.StructT)
                and not leaves
                and (T.strip_newtype(t).kind == "header")
            ):
                leaves.append("True")
                continue
            w = T.width_of(lt) or 0
            shift -= w
            leaves.append(self.from_bits(f"(({v} >> {shift}) & {mask(w)})", lt))
        tmp = em.temp("l")
        em.line(f"{tmp} = {tuple_code(leaves)}")
        return tmp

    def m_packet_in_advance(self, e: A.Call, obj: Any) -> str:
        n = self.simple(self.val(self.arg(e, 0)), "n")
        self.em.line(f"if {n} % 8: raise ParserError({self.error_code('ParserInvalidArgument')})")
        self.em.line(
            f"if P.pos + {n} // 8 > len(P.data): raise ParserError({self.error_code('PacketTooShort')})"
        )
        self.em.line(f"P.pos += {n} // 8")
        return ""

    def m_packet_in_length(self, e: A.Call, obj: Any) -> str:
        return "len(P.data)"

    # ------------------------------------------------------------------ packet_out
    def m_packet_out_emit(self, e: A.Call, obj: Any) -> str:
        arg = self.arg(e, 0)
        self.emit_layout(self.ref(arg))
        return ""

    def emit_layout(self, ref: Ref) -> None:
        lay = ref.layout
        if isinstance(lay, HeaderL):
            self.emit_header(ref, lay)
        elif isinstance(lay, UnionL):
            for m in lay.members.values():
                self.emit_header(Ref(m, ref.stack, ref.index), m)
        elif isinstance(lay, StackL):
            for el in lay.elems:
                self.emit_layout(Ref(el))
        elif isinstance(lay, StructL):
            for f in lay.fields.values():
                self.emit_layout(Ref(f, ref.stack, ref.index))

    def emit_header(self, ref: Ref, lay: HeaderL) -> None:
        em = self.em
        em.line(f"if {self.slot_target(ref, lay.valid)}:")
        with em.indent():
            if any(_varbit(f.type) for f in lay.fields.values()):
                acc, n = em.temp("a"), em.temp("w")
                em.line(f"{acc} = 0; {n} = 0")
                for f in lay.fields.values():
                    tg = self.slot_target(ref, f.slot)
                    if _varbit(f.type):
                        em.line(f"{acc} = ({acc} << {tg}[0]) | {tg}[1]; {n} += {tg}[0]")
                    else:
                        w = T.width_of(f.type) or 0
                        em.line(f"{acc} = ({acc} << {w}) | {self.to_bits(tg, f.type)}; {n} += {w}")
                em.line(f"P.out.append({acc}.to_bytes({n} // 8, 'big'))")
                return
            width = sum(T.width_of(f.type) or 0 for f in lay.fields.values())
            parts = []
            shift = width
            for f in lay.fields.values():
                w = T.width_of(f.type) or 0
                shift -= w
                code = self.to_bits(self.slot_target(ref, f.slot), f.type)
                parts.append(f"({code} << {shift})" if shift else code)
            value = " | ".join(parts) or "0"
            em.line(f"P.out.append(({value}).to_bytes({width // 8}, 'big'))")

    # ------------------------------------------------------------------ parser helpers
    def f_verify(self, e: A.Call) -> str:
        cond = self.val(self.arg(e, 0))
        err = self.val(self.arg(e, 1))
        self.em.line(f"if not {cond}: raise ParserError({err})")
        return ""

    # ------------------------------------------------------------------ registers, counters, meters
    def register_cells(self, obj: str) -> tuple[str, int] | None:
        """The name of a register's cell list in the generated module, and its size.

        Reads and writes index the list directly instead of calling ``Register.read`` and
        ``write`` (a method call per access is most of an aggregation program's cost); the
        list is updated in place by the control plane, never replaced."""
        reg = self.ns.get(obj)
        if not isinstance(reg, Register):
            return None
        name = f"{obj}_CELLS"
        self.ns[name] = reg.values
        return name, reg.size

    def m_register_read(self, e: A.Call, obj: Any) -> str:
        if len(e.args) == 1:  # T read(in I index)
            return f"{obj}.read({self.val(self.arg(e, 0))})"
        idx = self.val(self.arg(e, 1))
        dst = self.arg(e, 0)
        ref = self.ref(dst)
        cells = self.register_cells(obj)
        if cells is None:
            self.em.line(f"{self.leaf(ref, ref.layout)} = {obj}.read({idx})")
            return ""
        # BMv2 leaves the destination of an out-of-range read unchanged ("Dest field was not
        # updated"; v1model leaves it unspecified): found by the BMv2 oracle, tests/oracle
        i = self.simple(idx, "i")
        self.em.line(f"if 0 <= {i} < {cells[1]}:")
        with self.em.indent():
            self.em.line(f"{self.leaf(ref, ref.layout)} = {cells[0]}[{i}]")
        return ""

    def m_register_write(self, e: A.Call, obj: Any) -> str:
        idx, value = self.val(self.arg(e, 0)), self.val(self.arg(e, 1))
        cells = self.register_cells(obj)
        if cells is None:
            self.em.line(f"{obj}.write({idx}, {value})")
            return ""
        # BMv2 ignores an out-of-range write
        i = self.simple(idx, "i")
        self.em.line(f"if 0 <= {i} < {cells[1]}: {cells[0]}[{i}] = {value}")
        return ""

    def m_counter_count(self, e: A.Call, obj: Any) -> str:
        self.em.line(f"{obj}.count({self.val(self.arg(e, 0))}, S[{self.std('packet_length')}])")
        return ""

    def m_direct_counter_count(self, e: A.Call, obj: Any) -> str:
        return ""  # the table counts every hit of an entry (BMv2's direct counter semantics)

    def m_meter_execute_meter(self, e: A.Call, obj: Any) -> str:
        idx = self.val(self.arg(e, 0))
        ref = self.ref(self.arg(e, 1))
        meter = self.ns.get(obj)
        size = getattr(meter, "size", None)
        if not isinstance(size, int):
            color = f"{obj}.execute({idx}, S[{self.std('packet_length')}], P.now_us)"
            self.em.line(f"{self.leaf(ref, ref.layout)} = {self.color_as(color, ref)}")
            return ""
        # BMv2 updates neither the meter nor the result at an out-of-range index (v1model
        # leaves the result unspecified; found by the BMv2 oracle, tests/oracle)
        i = self.simple(idx, "i")
        color = f"{obj}.execute({i}, S[{self.std('packet_length')}], P.now_us)"
        self.em.line(f"if 0 <= {i} < {size}:")
        with self.em.indent():
            self.em.line(f"{self.leaf(ref, ref.layout)} = {self.color_as(color, ref)}")
        return ""

    def m_direct_meter_read(self, e: A.Call, obj: Any) -> str:
        ref = self.ref(self.arg(e, 0))
        leaf = self.leaf(ref, ref.layout)
        factory = self.ns.get(obj)
        slot = re.fullmatch(r"S\[(\d+)\]", leaf)
        lay = ref.layout
        b = bits_of(lay.type) if isinstance(lay, Scalar) else None
        if isinstance(factory, DirectMeterFactory) and slot and b and 0 < b.width <= 64:
            # the table writes it on every hit, as BMv2 does (found by the BMv2 oracle)
            factory.read_target = (int(slot.group(1)), b.width)
        self.em.line(f"if P.color != {NO_COLOR}:")  # the table missed: BMv2 writes nothing
        with self.em.indent():
            self.em.line(f"{leaf} = {self.color_as('P.color', ref)}")
        return ""

    def color_as(self, code: str, ref: Ref) -> str:
        lay = ref.layout
        t = lay.type if isinstance(lay, Scalar) else None
        b = bits_of(t) if t is not None else None
        return wrap_code(code, b) if b is not None else code

    def m_Checksum16_get(self, e: A.Call, obj: Any) -> str:
        data = self.packed_bytes(self.arg(e, 0))
        return f"HASH('csum16', {data})"

    # ------------------------------------------------------------------ hashes and checksums
    def algo_name(self, e: A.Expr) -> str:
        if isinstance(e, A.Member):
            return e.name
        raise CodegenError(e.pos, "the hash algorithm must be a HashAlgorithm member")

    def field_items(self, e: A.Expr) -> list[tuple[str, int, str | None]]:
        """(value code, width, validity guard) of each field of a field list, in order."""
        items: list[tuple[str, int, str | None]] = []
        if isinstance(e, A.ListExpr):
            for x in e.items:
                items += self.field_items(x)
            return items
        if isinstance(e, A.StructInit):
            for _, x in e.fields:
                items += self.field_items(x)
            return items
        t = T.strip_newtype(self.ty(e.type))
        if self.is_ref(e):
            return self.layout_items(self.ref(e), None)
        if isinstance(t, T.StructT) or isinstance(t, T.TupleT):
            raise CodegenError(e.pos, "field list element must be a field or a header")
        w = T.width_of(t) or 0
        return [(self.to_bits(self.val(e), t), w, None)]

    def layout_items(self, ref: Ref, guard: str | None) -> list[tuple[str, int, str | None]]:
        lay = ref.layout
        if isinstance(lay, HeaderL):
            g = self.slot_target(ref, lay.valid)
            return [
                self.field_item(self.slot_target(ref, f.slot), f.type, g)
                for f in lay.fields.values()
            ]
        if isinstance(lay, (StructL, UnionL)):
            out = []
            members = lay.fields if isinstance(lay, StructL) else lay.members
            for m in members.values():
                out += self.layout_items(Ref(m, ref.stack, ref.index), guard)
            return out
        if isinstance(lay, StackL):
            return [x for el in lay.elems for x in self.layout_items(Ref(el), guard)]
        if isinstance(lay, Scalar):
            # a field: guarded by its header's validity when it belongs to one
            owner = self.owning_header(lay.slot)
            g = self.slot_target(ref, owner.valid) if owner is not None else guard
            return [self.field_item(self.slot_target(ref, lay.slot), lay.type, g)]
        return [(self.to_bits(self.leaf(ref, lay), lay.type), T.width_of(lay.type) or 0, guard)]

    def field_item(self, target: str, t: T.Type, guard: str | None) -> tuple[str, int, str | None]:
        if _varbit(t):  # width known only at run time: -1 marks it
            return (target, -1, guard)
        return (self.to_bits(target, t), T.width_of(t) or 0, guard)

    def packed_bytes(self, data: A.Expr, payload: bool = False) -> str:
        """Emit code packing a field list MSB first (invalid headers skipped); return its name."""
        items = self.field_items(data)
        em = self.em
        acc, n = em.temp("a"), em.temp("w")
        if not any(g or w < 0 for _, w, g in items):
            total = sum(w for _, w, _ in items)
            parts, shift = [], total
            for code, w, _ in items:
                shift -= w
                parts.append(f"(({code}) << {shift})" if shift else f"({code})")
            pad = (-total) % 8
            value = " | ".join(parts) or "0"
            em.line(f"{acc} = (({value}) << {pad}).to_bytes({(total + pad) // 8}, 'big')")
        else:
            em.line(f"{acc} = 0; {n} = 0")
            for code, w, g in items:
                stmt = f"{acc} = ({acc} << {w}) | {code}; {n} += {w}"
                if w < 0:
                    stmt = f"{acc} = ({acc} << {code}[0]) | {code}[1]; {n} += {code}[0]"
                em.line(f"if {g}: {stmt}" if g else stmt)
            em.line(f"{acc} = ({acc} << (-{n} % 8)).to_bytes(({n} + 7) // 8, 'big')")
        if payload:
            em.line(f"{acc} += P.data[P.pos:]")
        return acc

    def f_hash(self, e: A.Call) -> str:
        ref = self.ref(self.arg(e, 0))
        algo = self.algo_name(self.arg(e, 1))
        base = self.val(self.arg(e, 2))
        data = self.packed_bytes(self.arg(e, 3))
        maxv = self.simple(self.val(self.arg(e, 4)), "m")
        h = f"{self.hash_fn(algo)}({data})"
        code = f"(({base}) + {h} % {maxv}) if {maxv} else ({base})"
        self.em.line(f"{self.leaf(ref, ref.layout)} = {self.fit(code, ref)}")
        return ""

    def fit(self, code: str, ref: Ref) -> str:
        lay = ref.layout
        t = lay.type if isinstance(lay, Scalar) or hasattr(lay, "type") else None
        return wrap_code(code, t) if t is not None else code

    def checksum(self, e: A.Call, update: bool, payload: bool) -> str:
        cond = self.val(self.arg(e, 0))
        algo = self.algo_name(self.arg(e, 3))
        em = self.em
        em.line(f"if {cond}:")
        with em.indent():
            data = self.packed_bytes(self.arg(e, 1), payload)
            h = f"{self.hash_fn(algo)}({data})"
            target = self.arg(e, 2)
            t = self.ty(target.type)
            w = T.width_of(t) or 16
            if update:
                ref = self.ref(target)
                em.line(f"{self.leaf(ref, ref.layout)} = {self.from_bits(f'{h} & {mask(w)}', t)}")
            else:
                cur = self.to_bits(self.val(target), t)
                em.line(f"if ({h} & {mask(w)}) != {cur}: S[{self.std('checksum_error')}] = 1")
        return ""

    def f_verify_checksum(self, e: A.Call) -> str:
        return self.checksum(e, update=False, payload=False)

    def f_update_checksum(self, e: A.Call) -> str:
        return self.checksum(e, update=True, payload=False)

    def f_verify_checksum_with_payload(self, e: A.Call) -> str:
        return self.checksum(e, update=False, payload=True)

    def f_update_checksum_with_payload(self, e: A.Call) -> str:
        return self.checksum(e, update=True, payload=True)

    # ------------------------------------------------------------------ packet fate
    def f_mark_to_drop(self, e: A.Call) -> str:
        if e.args:
            ref = self.ref(self.arg(e, 0))
            spec = self.leaf(ref.member("egress_spec"), ref.member("egress_spec").layout)
            grp = self.leaf(ref.member("mcast_grp"), ref.member("mcast_grp").layout)
        else:
            spec, grp = f"S[{self.std('egress_spec')}]", f"S[{self.std('mcast_grp')}]"
        self.em.line(f"{spec} = 511; {grp} = 0")
        return ""

    def clone_kind(self, e: A.Expr) -> int:
        if isinstance(e, A.Member) and e.name in CLONE_TYPES:
            return CLONE_TYPES[e.name]
        raise CodegenError(e.pos, "clone type must be CloneType.I2E or CloneType.E2E")

    def f_clone(self, e: A.Call) -> str:
        kind = self.clone_kind(self.arg(e, 0))
        session = self.val(self.arg(e, 1))
        self.em.line(f"P.clone = CloneRequest({kind}, {session}, None)")
        return ""

    def f_clone_preserving_field_list(self, e: A.Call) -> str:
        kind = self.clone_kind(self.arg(e, 0))
        session = self.val(self.arg(e, 1))
        index = self.val(self.arg(e, 2))
        self.em.line(f"P.clone = CloneRequest({kind}, {session}, {index})")
        return ""

    def explicit_slots(self, e: A.Expr) -> str:
        slots: list[int] = []
        for x in e.items if isinstance(e, A.ListExpr) else [e]:
            if self.is_ref(x):
                lay = self.ref(x).layout
                slots += lay.slots()
        return self.const_name(tuple(slots), "fl")

    def f_clone3(self, e: A.Call) -> str:
        kind = self.clone_kind(self.arg(e, 0))
        session = self.val(self.arg(e, 1))
        fl = self.explicit_slots(self.arg(e, 2))
        self.em.line(f"P.clone = CloneRequest({kind}, {session}, None, {fl})")
        return ""

    def f_resubmit(self, e: A.Call) -> str:
        self.em.line(f"P.resubmit = PreserveRequest(None, {self.explicit_slots(self.arg(e, 0))})")
        return ""

    def f_recirculate(self, e: A.Call) -> str:
        self.em.line(
            f"P.recirculate = PreserveRequest(None, {self.explicit_slots(self.arg(e, 0))})"
        )
        return ""

    def f_resubmit_preserving_field_list(self, e: A.Call) -> str:
        self.em.line(f"P.resubmit = PreserveRequest({self.val(self.arg(e, 0))})")
        return ""

    def f_recirculate_preserving_field_list(self, e: A.Call) -> str:
        self.em.line(f"P.recirculate = PreserveRequest({self.val(self.arg(e, 0))})")
        return ""

    def f_truncate(self, e: A.Call) -> str:
        # the smallest requested length wins; it cuts the deparsed packet as it leaves
        n = self.simple(self.val(self.arg(e, 0)), "n")
        self.em.line(f"if P.truncate is None or {n} < P.truncate: P.truncate = {n}")
        return ""

    def f_digest(self, e: A.Call) -> str:
        data = self.arg(e, 1)
        bound = getattr(e, "bindings", {}).get("T")  # digest<T>: T names the digest
        t = self.ty(bound if bound is not None and not isinstance(bound, T.TypeVar) else data.type)
        leaves = self.value_as(data, t)
        # the control-plane name P4Info gives this call (digests.py); a call p4c leaves out
        # of P4Info (in a parser or function) keeps its type's name, which nothing configures
        cp_name = getattr(e, "digest_name", None) or getattr(T.strip_newtype(t), "name", "digest")
        name = self.const_name(cp_name, "dg")
        self.em.line(f"P.digests.append(({name}, {tuple_code(leaves)}))")
        return ""

    # ------------------------------------------------------------------ misc
    def f_random(self, e: A.Call) -> str:
        ref = self.ref(self.arg(e, 0))
        lo = self.simple(self.val(self.arg(e, 1)), "lo")
        hi = self.simple(self.val(self.arg(e, 2)), "hi")
        self.em.line(
            f"{self.leaf(ref, ref.layout)} = RNG.randint({lo}, {hi}) if {lo} < {hi} else {lo}"
        )
        return ""

    def f_assert(self, e: A.Call) -> str:
        self.em.line(
            f"if not {self.val(self.arg(e, 0))}: raise P4RuntimeFault({self.where(e)}, 'assert failed')"
        )
        return ""

    def f_assume(self, e: A.Call) -> str:
        self.em.line(
            f"if not {self.val(self.arg(e, 0))}: raise P4RuntimeFault({self.where(e)}, 'assume failed')"
        )
        return ""

    def f_log_msg(self, e: A.Call) -> str:
        msg = self.val(self.arg(e, 0))
        data = self.arg(e, 1)
        values = "()"
        if data is not None:
            leaves = self.value_as(data, self.ty(data.type))
            values = f"{tuple_code(leaves)}"
        self.em.line(f"LOG_MSG({msg}, {values})")
        return ""

    def f_static_assert(self, e: A.Call) -> str:
        return "True"


def _through_next(e: A.Expr) -> bool:
    """``hs.next`` or ``hs.next.member`` (a union stack): extracting there advances the stack."""
    while isinstance(e, A.Member):
        if e.name == "next" and isinstance(T.strip_newtype(e.expr.type), T.StackT):
            return True
        e = e.expr
    return False


def _varbit(t: T.Type) -> bool:
    return isinstance(T.strip_newtype(t), T.Varbit)
