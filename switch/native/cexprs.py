"""Expressions of the interpreter's generated Python, as C expressions on ``uint64_t``.

The native generator does not walk the P4 syntax tree a second time: it translates the
Python the interpreter's builder generated from it (``Pipeline.source``), whose conventions
docs/interpreter.md fixes. That code only ever holds unsigned values below 2^W for a W-bit
field, and it brings every arithmetic result back into its type's range where it is produced
(``(a + b) & 0xFFFF``). For W <= 64 that makes C's arithmetic modulo 2^64 give the same bits:
masking commutes with it. Signed ``int<W>`` values are held as their 64-bit two's complement;
where the sign matters (ordering, right shifts, saturation) csigns.py says which operands may
be negative. What does not fit (widths over 64 bits, division by a run-time or signed divisor,
anything not recognised) is refused with ``Unsupported``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

U64 = (1 << 64) - 1


# operators whose C is the same infix on uint64_t for every operand (signed too)
_INFIX = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


class Unsupported(Exception):
    """A construct the native engine does not run (yet); the program stays on Python."""

    def __init__(self, what: str, where: str = "") -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.what = what
        self.where = where


def const(v: int) -> str:
    if v < -(1 << 63) or v > U64:
        raise Unsupported(f"the value {v} (wider than 64 bits)")
    if v < 0:  # an int<W> value: its 64-bit two's complement (csigns.py)
        return f"UINT64_C({v & U64})"
    return f"UINT64_C({v})" if v > 0x7FFFFFFF else str(v)


def _int_of(e: ast.expr) -> int | None:
    """The value of an integer literal, ``-N`` included."""
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _int_of(e.operand)
        return -v if v is not None else None
    return None


def mask_width(m: int) -> int | None:
    """W when ``m`` is 2^W - 1 (W >= 1), else None."""
    if m > 0 and (m + 1) & m == 0:
        return m.bit_length()
    return None


@dataclass
class FnCtx:
    """Per generated function: its locals and how a raised exception leaves the code."""

    name: str
    locals: dict[str, str] = field(default_factory=dict)  # name -> kind: u64 | w | view | bb
    wbits: dict[str, int] = field(default_factory=dict)  # name -> bound of its bits (cwide.py)
    views: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (ptr, nbytes)
    ends: dict[str, tuple[str, int]] = field(default_factory=dict)  # _e -> (_p, nbytes)
    onexc: list[str] = field(default_factory=lambda: ["return _rc;"])


class ExprTx:
    """Mixin: the program's objects (``objects``) name tables, registers and functions."""

    objects: Any
    fn: FnCtx
    # set for one call of expr(): only the low 64 bits of the value are used (the operand of
    # + - * & | ^ ~ or a left shift), so a wide value may be read as its lowest word
    _low: bool = False
    cur_low: bool = False

    # ------------------------------------------------------------------ entry
    def expr(self, e: ast.expr) -> str:
        low, self._low = self._low, False
        if not low and self.wb(e) > 64 and not isinstance(e, ast.Tuple):  # type: ignore[attr-defined]
            # a value that may have more than 64 bits where C needs its exact value in 64
            raise Unsupported(f"a value wider than 64 bits ({ast.unparse(e)}) held in 64")
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"Python expression {type(e).__name__}")
        saved, self.cur_low = self.cur_low, low
        try:
            return m(e)
        finally:
            self.cur_low = saved

    def low(self, e: ast.expr) -> str:
        """``e`` modulo 2^64: a wide value's lowest word."""
        self._low = True
        return self.expr(e)

    def raise_code(self) -> str:
        return self.fn.onexc[-1]

    # ------------------------------------------------------------------ leaves
    def x_Constant(self, e: ast.Constant) -> str:
        v = e.value
        if v is True:
            return "1"
        if v is False or v is None:
            return "0"
        if isinstance(v, int):
            return const(v & U64 if self.cur_low and v > U64 else v)
        if isinstance(v, str):
            return const(self.objects.action_id(v))
        raise Unsupported(f"the constant {v!r}")

    def x_Name(self, e: ast.Name) -> str:
        n = e.id
        if n in self.fn.locals and self.fn.locals[n] == "u64":
            return n
        if self.fn.locals.get(n) == "w":  # a wide local's low word (cwide.py)
            return f"{n}.w[0]"
        if n in self.objects.states:
            return str(self.objects.states[n])
        if n == "None":
            return "0"
        raise Unsupported(f"the name {n}")

    def x_Subscript(self, e: ast.Subscript) -> str:
        base = e.value
        if isinstance(base, ast.Name) and base.id == "S":
            if self.varbit_slot(e) is not None:  # type: ignore[attr-defined]
                raise Unsupported(f"a varbit value ({ast.unparse(e)}) held in 64 bits")
            return f"S[{self.slot(e.slice)}]"  # a wide slot: its lowest word
        if (vp := self.varbit_part(e)) is not None:  # type: ignore[attr-defined]
            return f"S[{self.objects.base[vp[0]] + vp[1]}]"  # width, or the value's low word
        if isinstance(base, ast.Name) and (r := self.objects.register_cells(base.id)) is not None:
            # a wide register: its cell's low word; a banked one: its column of the cell
            n = self.objects.reg_words.get(r, 1) * self.objects.reg_stride(r)
            return f"P->E->reg[{r}][({self.expr(e.slice)}){f' * {n}' if n > 1 else ''}]"
        if isinstance(base, ast.Call) and isinstance(e.slice, ast.Constant):
            res = self.apply_result(base)
            if e.slice.value == 0:
                return f"({res} & 1)"
            if e.slice.value == 1:
                return f"({res} >> 1)"
        raise Unsupported("a subscript of " + ast.unparse(base))

    def slot(self, s: ast.expr) -> str:
        if isinstance(s, ast.Constant) and isinstance(s.value, int):
            return str(self.objects.base[s.value])  # the slot's first word (cwide.py)
        # S[IX[i]]: a field of the header stack element picked at run time. IX lists the
        # field's slot in each element, then in the scratch element that out-of-range indexes
        # go to (the interpreter bounds i before). Indexing follows Python's tuple rules: a
        # negative index counts from the end, anything else out of range is a fault.
        if isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name):
            name = s.value.id
            table = self.objects.pipeline.namespace.get(name)
            if (
                isinstance(table, tuple)
                and table
                and all(isinstance(x, int) and not isinstance(x, bool) for x in table)
            ):
                cname = self.objects.note_ix(name, table)
                n = len(table)
                i = self.expr(s.slice)
                wrap = f"if ((int64_t)_j < 0) _j += {n}; " if self.neg(s.slice) else ""
                return (
                    f"({{ uint64_t _j = {i}; {wrap}if (_j >= {n}) "
                    f"{{ _rc = P4R_FAULT; {self.raise_code()} }} {cname}[_j]; }})"
                )
        raise Unsupported("a run-time storage index " + ast.unparse(s))

    # ------------------------------------------------------------------ operators
    def x_BinOp(self, e: ast.BinOp) -> str:
        op = type(e.op)
        if op is ast.BitAnd and isinstance(e.left, ast.BinOp) and isinstance(e.left.op, ast.Sub):
            # (a - b) & mask: wraps like C's unsigned subtraction, then masked
            if isinstance(e.right, ast.Constant) and e.right.value <= U64:
                a, b = self.low(e.left.left), self.low(e.left.right)
                return f"(({a} - {b}) & {self.expr(e.right)})"
        if op is ast.BitAnd and isinstance(e.left, ast.BinOp) and isinstance(e.left.op, ast.RShift):
            view = self.view_of(e.left.left)
            if view is not None and isinstance(e.right, ast.Constant):
                return self.view_bits(view, e.left.right, e.right.value)
        if op is ast.BitAnd and (view := self.view_of(e.left)) is not None:
            if isinstance(e.right, ast.Constant):
                return self.view_bits(view, ast.Constant(0), e.right.value)
        if op is ast.RShift and (peek := self.lookahead(e.left, e.right)) is not None:
            return peek
        if op in (ast.RShift, ast.Mod, ast.FloorDiv) and self.wb(e.left) > 64:
            # the high bits of a wide operand reach the result: compute it wide (cwide.py)
            return f"({self.wbinop(e)}).w[0]"  # type: ignore[attr-defined]
        if op in _INFIX:
            a, b = self.low(e.left), self.low(e.right)
        elif op is ast.LShift:
            a, b = self.low(e.left), self.shift_amount(e.right)  # type: ignore[attr-defined]
        elif op is ast.RShift:
            a, b = self.expr(e.left), self.shift_amount(e.right)  # type: ignore[attr-defined]
        else:
            a, b = self.expr(e.left), self.expr(e.right)
        if op in (ast.Mod, ast.FloorDiv) and (self.neg(e.left) or self.neg(e.right)):
            raise Unsupported(f"a signed division ({ast.unparse(e)})")
        if op in _INFIX:
            # Sub wraps modulo 2^64: a negative result is its two's complement (csigns.py)
            return f"({a} {_INFIX[op]} {b})"
        if op is ast.RShift and self.neg(e.left):
            if isinstance(e.right, ast.Constant) and 0 <= e.right.value < 64:
                return f"((uint64_t)((int64_t){a} >> {b}))"
            return f"p4r_sar({a}, {b})"
        if op is ast.Mod:
            return f"({a} % {self.divisor(e.right)})"
        if op is ast.FloorDiv:
            return f"({a} / {self.divisor(e.right)})"
        if op is ast.LShift:
            if isinstance(e.right, ast.Constant) and 0 <= e.right.value < 64:
                return f"({a} << {b})"
            return f"p4r_shl({a}, {b})"
        if op is ast.RShift:
            if isinstance(e.right, ast.Constant) and 0 <= e.right.value < 64:
                return f"({a} >> {b})"
            return f"p4r_shr({a}, {b})"
        raise Unsupported(f"the operator {type(e.op).__name__} in {ast.unparse(e)}")

    def x_UnaryOp(self, e: ast.UnaryOp) -> str:
        if isinstance(e.op, ast.Not):
            return f"(!{self.truth(e.operand)})"  # type: ignore[attr-defined]
        if isinstance(e.op, ast.USub):
            return f"(UINT64_C(0) - {self.low(e.operand)})"
        if isinstance(e.op, ast.Invert):
            return f"(~(uint64_t){self.low(e.operand)})"
        raise Unsupported(f"the unary operator {type(e.op).__name__}")

    def neg(self, e: ast.expr) -> bool:
        """Whether ``e`` may be negative (an int<W> value): see csigns.py."""
        return self.objects.signs.neg(e, self.fn.name)

    def x_BoolOp(self, e: ast.BoolOp) -> str:
        op = " && " if isinstance(e.op, ast.And) else " || "
        return "(" + op.join(f"({self.truth(v)} != 0)" for v in e.values) + ")"  # type: ignore[attr-defined]

    def x_Compare(self, e: ast.Compare) -> str:
        ops = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">"}
        ops[ast.GtE] = ">="
        ops[ast.IsNot] = "!="
        ops[ast.Is] = "=="
        parts = []
        left = e.left
        for op, right in zip(e.ops, e.comparators, strict=True):
            sym = ops.get(type(op))
            if sym is None:
                raise Unsupported(f"the comparison {type(op).__name__}")
            wide = self.wide_compare(left, sym, right)  # type: ignore[attr-defined]
            if wide is not None:
                parts.append(wide)
                left = right
                continue
            lhs = self.compare_operand(left)
            rhs = self.compare_operand(right)
            if sym not in ("==", "!=") and (self.neg(left) or self.neg(right)):
                parts.append(f"((int64_t){lhs} {sym} (int64_t){rhs})")
            elif lhs == "0" and sym == "<=":
                parts.append("1")  # 0 <= unsigned: always true (avoids a compiler warning)
            else:
                parts.append(f"({lhs} {sym} {rhs})")
            left = right
        return "(" + " && ".join(parts) + ")"

    def compare_operand(self, e: ast.expr) -> str:
        if (
            isinstance(e, ast.Call)
            and isinstance(e.func, ast.Name)
            and e.func.id == "len"
            and ast.unparse(e) == "len(P.data)"
        ):
            return "(uint64_t)P->len"
        return self.expr(e)

    def x_IfExp(self, e: ast.IfExp) -> str:
        # `x % m if m else base` (hash): the division only runs when m is not zero
        guard = ast.unparse(e.test)
        nonzero = getattr(self, "nonzero", set())
        self.nonzero = nonzero | {guard}
        branch = self.low if self.cur_low else self.expr
        try:
            body = branch(e.body)
        finally:
            self.nonzero = nonzero
        test = self.truth(e.test)  # type: ignore[attr-defined]
        return f"(({test}) ? ({body}) : ({branch(e.orelse)}))"

    def divisor(self, e: ast.expr) -> str:
        """A divisor known not to be zero here (a constant, or guarded by the enclosing test)."""
        if isinstance(e, ast.Constant) and isinstance(e.value, int) and e.value > 0:
            return self.expr(e)
        if ast.unparse(e) in getattr(self, "nonzero", set()):
            return self.expr(e)
        raise Unsupported(f"a division by {ast.unparse(e)}, which may be zero")

    def x_Attribute(self, e: ast.Attribute) -> str:
        if isinstance(e.value, ast.Name) and e.value.id == "P":
            if e.attr == "pos":
                return "(uint64_t)P->pos"
            if e.attr == "length":
                return "(uint64_t)P->length"
            if e.attr == "color":  # the direct meter's colour (runtime/p4r_externs.c)
                return "P->color"
        raise Unsupported(f"the attribute {ast.unparse(e)}")

    def x_Call(self, e: ast.Call) -> str:
        f = e.func
        if isinstance(f, ast.Name) and f.id in ("min", "max") and not e.keywords:
            return self.saturate(e)
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "match"
            and isinstance(f.value, ast.Name)
            and (vs := self.objects.vsets.get(f.value.id)) is not None
            and len(e.args) == 1
            and isinstance(e.args[0], ast.Tuple)
        ):
            # a parser value set (select on it): the members live in the engine (mirror.py)
            keys = [self.expr(k) for k in e.args[0].elts]
            nf = len(keys)
            return (
                f"({{ const uint64_t _vk[{max(nf, 1)}] = {{{', '.join(keys) or '0'}}}; "
                f"p4r_vs_match(P->E, {vs}, _vk, {nf}); }})"
            )
        if isinstance(f, ast.Name) and f.id == "int" and len(e.args) == 1 and not e.keywords:
            return self.expr(e.args[0])  # int(bool): slots hold bools as 0 and 1
        return self.call_value(e)

    def lookahead(self, e: ast.expr, shift: ast.expr) -> str | None:
        """``int.from_bytes(P.data[P.pos:P.pos + N], 'big') >> K``: the parser's lookahead."""
        if not (
            isinstance(e, ast.Call)
            and ast.unparse(e.func) == "int.from_bytes"
            and len(e.args) == 2
            and isinstance(e.args[0], ast.Subscript)
            and ast.unparse(e.args[0].value) == "P.data"
            and isinstance(e.args[0].slice, ast.Slice)
            and isinstance(shift, ast.Constant)
        ):
            return None
        sl = e.args[0].slice
        if sl.lower is None or sl.upper is None or sl.step is not None:
            return None
        n = _int_of(sl.upper.right) if isinstance(sl.upper, ast.BinOp) else None
        if not (
            isinstance(sl.upper, ast.BinOp)
            and isinstance(sl.upper.op, ast.Add)
            and ast.unparse(sl.upper.left) == ast.unparse(sl.lower)
            and n is not None
        ):
            raise Unsupported(f"the packet read {ast.unparse(e)}")
        k = int(shift.value)
        if n > 8 or n * 8 - k > 64:
            raise Unsupported(f"a lookahead wider than 64 bits ({ast.unparse(e)})")
        lo = self.expr(sl.lower)
        return f"p4r_peek(P->data, P->len, {lo}, {lo} + {n}, {k})"

    def saturate(self, e: ast.Call) -> str:
        """The interpreter's saturating operators (|+|, |-|), the only min/max it writes."""
        f = e.func.id  # type: ignore[attr-defined]
        args = e.args
        if len(args) != 2:
            raise Unsupported(f"the call {ast.unparse(e)}")
        inner, bound = args
        # signed: min(max(a op b, -h), h - 1), computed exactly in 128 bits
        if (
            f == "min"
            and isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id == "max"
            and len(inner.args) == 2
            and isinstance(inner.args[0], ast.BinOp)
            and isinstance(inner.args[0].op, (ast.Add, ast.Sub))
        ):
            lo, hi = _int_of(inner.args[1]), _int_of(bound)
            if lo is not None and hi is not None and -(1 << 63) <= lo <= hi < (1 << 63):
                x = inner.args[0]
                op = "+" if isinstance(x.op, ast.Add) else "-"
                a, b = self.expr(x.left), self.expr(x.right)
                wide = f"((__int128)(int64_t){a} {op} (__int128)(int64_t){b})"
                return f"p4r_clamp({wide}, INT64_C({lo}), INT64_C({hi}))"
        # unsigned: min(a + b, 2^W - 1) and max(a - b, 0)
        if isinstance(inner, ast.BinOp) and not (self.neg(inner.left) or self.neg(inner.right)):
            m = _int_of(bound)
            if f == "min" and isinstance(inner.op, ast.Add) and m is not None and 0 <= m <= U64:
                a, b = self.expr(inner.left), self.expr(inner.right)
                return f"p4r_addsat_u({a}, {b}, {const(m)})"
            if f == "max" and isinstance(inner.op, ast.Sub) and m == 0:
                a, b = self.expr(inner.left), self.expr(inner.right)
                return f"p4r_subsat_u({a}, {b})"
        raise Unsupported(f"the call {ast.unparse(e)}")

    # ------------------------------------------------------------------ parser views
    def view_of(self, e: ast.expr) -> tuple[str, str] | None:
        if isinstance(e, ast.Name) and self.fn.locals.get(e.id) == "view":
            return self.fn.views[e.id]
        return None

    def view_bits(self, view: tuple[str, str], off: ast.expr, m: Any) -> str:
        w = mask_width(m) if isinstance(m, int) else None
        if w is None or w > 64:
            raise Unsupported("a field wider than 64 bits read as 64")
        ptr, nbytes = view
        # a run-time offset: the fixed fields after a varbit one
        o = str(off.value) if isinstance(off, ast.Constant) else f"(uint32_t)({self.expr(off)})"
        return f"p4r_get_bits({ptr}, {nbytes}, {o}, {w})"
