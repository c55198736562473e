"""Calls in the interpreter's generated Python: generated functions, table applies, externs
(counters, meters, hashes and checksums, random), the deparser's emits and the parser loop's
state calls, as C."""

from __future__ import annotations

import ast
from typing import Any

from .cexprs import Unsupported

# how an event value (digest, log_msg) goes back to Python: unsigned int, bool, int<W>
EV_UINT, EV_BOOL, EV_INT = 0, 1, 2


class ExternTx:
    objects: Any
    fn: Any

    # ------------------------------------------------------------------ statements
    def call_stmt(self, e: ast.Call) -> None:
        f = e.func
        if isinstance(f, ast.Name) and f.id in self.objects.functions:
            self.check(self.fn_call(e))
            return
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            obj = f.value.id
            if f.attr == "apply" and self.objects.table_id(obj) is not None:
                self.check(f"p4r_tbl_{self.objects.table_id(obj)}(S, P, &_hr)")
                self.fn.locals.setdefault("_hr", "u64")
                return
            if f.attr == "count" and (c := self.objects.counter_id(obj)) is not None:
                idx, length = (self.expr(a) for a in e.args)
                self.out(f"p4r_count(P->E, {c}, {idx}, {length});")
                return
        if ast.unparse(f) == "P.out.append":
            self.emit_bytes(e.args[0])
            return
        if ast.unparse(f) == "P.digests.append" and len(e.args) == 1:
            # P.digests.append((NAME, (values...))): delivered at the end of ingress
            item = e.args[0]
            if isinstance(item, ast.Tuple) and len(item.elts) == 2:
                name = self.objects.pipeline.namespace.get(ast.unparse(item.elts[0]))
                if isinstance(name, str):
                    self.event("digest", name, "", item.elts[1])
                    return
        if isinstance(f, ast.Name) and f.id == "LOG_MSG" and len(e.args) == 2:
            fmt = e.args[0]
            if isinstance(fmt, ast.Constant) and isinstance(fmt.value, str):
                self.event("log", fmt.value, "", e.args[1])
                return
        raise Unsupported(f"the call {ast.unparse(e)}")

    def fn_call(self, e: ast.Call, ret: str | None = None) -> str:
        name = e.func.id  # type: ignore[attr-defined]
        args = [ast.unparse(a) for a in e.args[:2]]
        if args != ["S", "P"] or e.keywords:
            raise Unsupported(f"the call {ast.unparse(e)}")
        wide = self.objects.wide_params.get(name, {})
        vals = [
            self.wexpr(a) if j in wide else self.expr(a)  # type: ignore[attr-defined]
            for j, a in enumerate(e.args[2:])
        ]
        if ret is not None:
            vals.append(ret)
        elif self.objects.returns_value(name):
            self.fn.locals.setdefault("_discard", "u64")
            vals.append("&_discard")
        return f"{name}({', '.join(['S', 'P', *vals])})"

    def value_call(self, call: str) -> str:
        """A call with a status and a result, as a GNU C statement expression."""
        return (
            f"({{ uint64_t _v = 0; if ((_rc = {call.replace('@RET', '&_v')}) != P4R_OK) "
            f"{{ {self.raise_code()} }} _v; }})"
        )

    # ------------------------------------------------------------------ values
    def call_value(self, e: ast.Call) -> str:
        f = e.func
        if isinstance(f, ast.Name):
            if f.id in self.objects.functions and self.objects.returns_value(f.id):
                return self.value_call(self.fn_call(e, "@RET"))
            if f.id.startswith("HASH_") and len(e.args) == 1:
                algo = f.id[len("HASH_") :]
                if algo not in HASHES and algo not in CUSTOM_CRCS:
                    raise Unsupported(f"the hash algorithm {algo}")
                buf = e.args[0]
                if not (isinstance(buf, ast.Name) and self.fn.locals.get(buf.id) == "bb"):
                    raise Unsupported("a hash over something else than a field list")
                b = buf.id
                if algo in CUSTOM_CRCS:
                    if b in self.objects.payload_bufs:
                        raise Unsupported(f"a {algo} checksum with payload")
                    if algo not in self.objects.crcs:
                        self.objects.crcs.append(algo)
                    k = self.objects.crcs.index(algo)
                    return f"p4r_crc_custom(&P->E->crc[{k}], {b}.b, ({b}.nbits + 7) / 8)"
                if b in self.objects.payload_bufs:
                    # a checksum _with_payload: the field list, then the packet from the
                    # parser's end (recorded where it was appended)
                    return self.value_call(
                        f"p4r_hash_payload({HASHES[algo]}, {b}.b, ({b}.nbits + 7) / 8,"
                        f" P->data + {b}_tp, P->len - {b}_tp, @RET)"
                    )
                return f"{HASHES[algo]}({b}.b, ({b}.nbits + 7) / 8)"
            if f.id == "st" or (f.id in self.fn.locals and self.fn.locals[f.id] == "u64"):
                # the parser loop: st = st(S, P)
                return self.value_call(f"p4r_state_call({f.id}, S, P, @RET)")
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "RNG" and f.attr == "randint" and len(e.args) == 2:
                lo, hi = (self.expr(a) for a in e.args)
                return f"p4r_randint(P->E, {lo}, {hi})"
            m = self.objects.meter_id(f.value.id)
            if (
                f.attr == "execute"
                and m is not None
                and len(e.args) == 3
                and ast.unparse(e.args[2]) == "P.now_us"
            ):
                # Meter.execute(index, packet_length, now): GREEN out of range
                idx, length = (self.expr(a) for a in e.args[:2])
                return f"p4r_meter_run(P->E, {m}, {idx}, {length}, P->now)"
        raise Unsupported(f"the call {ast.unparse(e)}")

    def selector_hash(self, packed: ast.expr) -> str:
        """An action selector's hash of its packed selector keys (``return _a`` of the
        interpreter's selector function; the profile's ``hash_fn`` is ``HASH_<algo>``)."""
        algo = self.objects.sel_fns[self.fn.name]
        return self.call_value(ast.Call(ast.Name(f"HASH_{algo}", ast.Load()), [packed], []))

    def apply_result(self, e: ast.Call) -> str:
        f = e.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "apply"
            and isinstance(f.value, ast.Name)
            and (t := self.objects.table_id(f.value.id)) is not None
        ):
            return self.value_call(f"p4r_tbl_{t}(S, P, @RET)")
        raise Unsupported(f"the call {ast.unparse(e)}")

    # ------------------------------------------------------------------ events for Python
    def event(self, kind: str, text: str, where: str, values: ast.expr) -> None:
        """A digest or log_msg: its values go to Python (runtime/p4r_externs.c, events)."""
        if not isinstance(values, ast.Tuple):
            raise Unsupported(f"the {kind} values {ast.unparse(values)}")
        init = self.objects.pipeline.storage.init
        codes, flags = [], []
        for v in values.elts:
            # Python hands the values over as they are: a bool stays a bool (the log text
            # says True) and an int<W> stays negative, so each must be a slot or a constant
            # whose type is known here (EV_UINT, EV_BOOL, EV_INT: how mirror_externs reads it)
            if (
                isinstance(v, ast.Subscript)
                and ast.unparse(v.value) == "S"
                and isinstance(v.slice, ast.Constant)
            ):
                slot = int(v.slice.value)
                if isinstance(init[slot], bool):
                    flags.append(EV_BOOL)
                else:
                    flags.append(EV_INT if slot in self.objects.signed_slots else EV_UINT)
            elif isinstance(v, ast.Constant) and isinstance(v.value, (bool, int)):
                if isinstance(v.value, bool):
                    flags.append(EV_BOOL)
                else:
                    flags.append(EV_INT if v.value < 0 else EV_UINT)
            else:
                raise Unsupported(f"the {kind} value {ast.unparse(v)}")
            codes.append(self.expr(v))
        site = self.objects.event_site(kind, text, where, tuple(flags))
        k = "P4R_EV_DIGEST" if kind == "digest" else "P4R_EV_LOG"
        vals = ", ".join(codes) or "0"
        self.out(
            f"{{ const uint64_t _ev[] = {{{vals}}}; p4r_event(P->E, {k}, {site}, {len(codes)}, _ev); }}"
        )

    def extern_raise(self, e: ast.expr | None) -> bool:
        """``raise P4RuntimeFault(POS, 'message')`` (assert, assume): the packet stops, and
        Python raises the same exception (NativeSwitch)."""
        if not (
            isinstance(e, ast.Call)
            and ast.unparse(e.func) == "P4RuntimeFault"
            and len(e.args) == 2
            and isinstance(e.args[0], ast.Name)
            and isinstance(e.args[1], ast.Constant)
        ):
            return False
        where = self.objects.pipeline.namespace.get(e.args[0].id)
        if not isinstance(where, str) or not isinstance(e.args[1].value, str):
            return False
        site = self.objects.event_site("fault", e.args[1].value, where, ())
        self.out(f"p4r_event(P->E, P4R_EV_FAULT, {site}, 0, NULL);")
        self.out(f"_rc = P4R_FAULT; {self.raise_code()}")
        return True

    # ------------------------------------------------------------------ end-of-pipe requests
    def extern_assign(self, t: ast.expr, v: ast.expr) -> bool:
        """``P.clone = CloneRequest(kind, session, field_list[, explicit])`` and
        ``P.resubmit``/``P.recirculate = PreserveRequest(field_list[, explicit])``: the
        request the packet path acts on at the end of the control (runtime/p4r_path.c)."""
        target = ast.unparse(t)
        fields = {"P.clone": "clone", "P.resubmit": "resubmit", "P.recirculate": "recirc"}
        if target not in fields:
            return False
        want = "CloneRequest" if target == "P.clone" else "PreserveRequest"
        if not (isinstance(v, ast.Call) and ast.unparse(v.func) == want and not v.keywords):
            raise Unsupported(f"the request {ast.unparse(v)}")
        args = list(v.args)
        r = f"P->{fields[target]}"
        code = [f"{r}.set = 1;"]
        if want == "CloneRequest":
            if len(args) < 3 or not isinstance(args[0], ast.Constant):
                raise Unsupported(f"the request {ast.unparse(v)}")
            code.append(f"{r}.kind = {int(args[0].value)};")
            code.append(f"{r}.session = {self.expr(args[1])};")
            args = args[2:]
        if not 1 <= len(args) <= 2:
            raise Unsupported(f"the request {ast.unparse(v)}")
        fl = args[0]
        if isinstance(fl, ast.Constant) and fl.value is None:
            code.append(f"{r}.has_fl = 0;")
        else:
            code.append(f"{r}.has_fl = 1; {r}.fl = {self.expr(fl)};")
        xfl = 0
        if len(args) == 2:  # the slots named by clone3/resubmit/recirculate's data
            slots = self.objects.pipeline.namespace.get(ast.unparse(args[1]))
            if not isinstance(slots, tuple) or not all(isinstance(x, int) for x in slots):
                raise Unsupported(f"the preserved fields {ast.unparse(args[1])}")
            xfl = self.objects.explicit_list(slots)
        code.append(f"{r}.xfl = {xfl};")
        self.objects.passes = True
        self.out(" ".join(code))
        return True

    # ------------------------------------------------------------------ statements of externs
    def extern_augassign(self, s: ast.AugAssign) -> bool:
        """``_a += P.data[P.pos:]``: a checksum _with_payload appends the packet's rest."""
        t = s.target
        if (
            isinstance(t, ast.Name)
            and self.fn.locals.get(t.id) == "bb"
            and isinstance(s.op, ast.Add)
            and ast.unparse(s.value) == "P.data[P.pos:]"
        ):
            self.objects.payload_bufs.add(t.id)
            self.fn.locals.setdefault(f"{t.id}_tp", "u64")
            self.out(f"{t.id}_tp = P->pos;")
            return True
        return False

    def extern_if(self, s: ast.If) -> bool:
        """``if P.truncate is None or N < P.truncate: P.truncate = N`` (truncate(N): the
        smallest length asked for wins); P->truncate holds UINT64_MAX for None."""
        t = s.test
        if not (
            isinstance(t, ast.BoolOp)
            and isinstance(t.op, ast.Or)
            and len(t.values) == 2
            and ast.unparse(t.values[0]) == "P.truncate is None"
            and not s.orelse
            and len(s.body) == 1
            and isinstance(s.body[0], ast.Assign)
            and ast.unparse(s.body[0].targets[0]) == "P.truncate"
        ):
            return False
        cmp = t.values[1]
        n = s.body[0].value
        if not (
            isinstance(cmp, ast.Compare)
            and isinstance(cmp.ops[0], ast.Lt)
            and ast.unparse(cmp.comparators[0]) == "P.truncate"
            and ast.unparse(cmp.left) == ast.unparse(n)
        ):
            return False
        self.out(f"{{ uint64_t _tn = {self.expr(n)}; if (_tn < P->truncate) P->truncate = _tn; }}")
        return True

    # ------------------------------------------------------------------ deparser
    def emit_bytes(self, v: ast.expr) -> None:
        """P.out.append((fields...).to_bytes(N, 'big')): one header, MSB first."""
        if (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "to_bytes"
            and isinstance(v.func.value, ast.Name)
            and self.fn.locals.get(v.func.value.id) == "bb"
        ):
            # a header with a varbit field, packed into a bit buffer (its length at run time)
            b = v.func.value.id
            n = (self.bb_bits.get(b, 0) + 7) // 8  # type: ignore[attr-defined]
            self.objects.note_emit(n)
            self.out(
                f"{{ uint64_t _n = {self.expr(v.args[0])}; if (_n > {n} || P->outlen + _n > "
                f"P4R_OUT_MAX) {{ _rc = P4R_FAULT; return _rc; }} "
                f"memcpy(P->out + P->outlen, {b}.b, _n); P->outlen += (uint32_t)_n; }}"
            )
            return
        if not (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "to_bytes"
            and isinstance(v.args[0], ast.Constant)
        ):
            raise Unsupported(f"the deparser code {ast.unparse(v)}")
        n = int(v.args[0].value)
        self.objects.note_emit(n)
        self.out(f"if (P->outlen + {n} > P4R_OUT_MAX) {{ _rc = P4R_FAULT; return _rc; }}")
        self.pack_into("(P->out + P->outlen)", n, v.func.value)
        self.out(f"P->outlen += {n};")


HASHES = {
    "csum16": "p4r_csum16",
    "cksum16": "p4r_csum16",
    "crc16": "p4r_crc16",
    "crc32": "p4r_crc32",
    "xor16": "p4r_xor16",
    "identity": "p4r_identity",
}
CUSTOM_CRCS = {"crc8_custom": 8, "crc16_custom": 16, "crc32_custom": 32, "crc64_custom": 64}
