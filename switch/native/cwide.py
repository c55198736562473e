"""Values wider than 64 bits and varbit fields, as words of ``uint64_t`` (runtime/p4r_wide.c).

The interpreter's generated Python computes with unbounded ints; the native engine's narrow
path keeps a value modulo 2^64, which is exact wherever only the low 64 bits of a value
matter (``+ - * << & | ^ ~``, then a mask) and wherever the value is below 2^64. Neither holds
for a ``bit<128>`` field or for ``(a << 64) | b`` shifted right, so this pass bounds, for every
expression, how many bits its value can have (``wb``: an upper bound on the bit length, or
INF when a run-time left shift leaves it unbounded) and translates an expression whose high
bits are observed to a ``p4r_w``: P4R_WW words, least significant first, every operation
exact modulo 2^(64 * P4R_WW). High bits are observed by an operand of ``>>``, ``//``, ``%``,
a comparison or a truth test, by a store into a wide field or local, and by the deparser and
field lists (``p4r_put_wide``, ``p4r_bb_push_w``). P4R_WW is the largest such bound in the
program, so the modular result is the exact one there. A wide operand of an exact operation
that may be negative (a signed value, an unmasked subtraction) or is unbounded is refused,
as is a wide value passed where C holds 64 bits (function arguments and results, table keys
and action data, registers, digest and log values).

Storage: a slot of W > 64 bits takes ceil(W / 64) consecutive words of ``S``; a varbit slot
(the interpreter's pair ``(width, value)``) takes its width word, then ceil(max / 64) value
words. ``ProgramObjects.base`` maps the interpreter's slot numbers to word offsets.
"""

from __future__ import annotations

import ast
from typing import Any

from .cexprs import Unsupported, _int_of, mask_width

INF = 1 << 30


def words(bits: int) -> int:
    return max(1, (bits + 63) // 64)


def wconst(v: int) -> str:
    """A non-negative constant as a p4r_w (words not given are zero)."""
    ws = []
    while True:
        ws.append(f"UINT64_C({v & 0xFFFFFFFFFFFFFFFF})")
        v >>= 64
        if not v:
            break
    return f"P4R_WC({', '.join(ws)})"


def split_key(checks: list[tuple[int, int, int]], cols: list[int]) -> list[tuple[int, int, int]]:
    """An entry's (kind, a, b) per key as one per word of C's key columns (least significant
    word first): a mask check of a wide key is the same check on every word of it (exact
    and LPM keys are masks too); a wildcard is a wildcard on every word. Range keys over 64
    bits are refused at load (the order of a wide number is not a per-word property)."""
    out = []
    for (kind, a, b), n in zip(checks, cols, strict=True):
        if n == 1:
            out.append((kind, a, b))
            continue
        for j in range(n):
            sh = 64 * j
            out.append((kind, (a >> sh) & 0xFFFFFFFFFFFFFFFF, (b >> sh) & 0xFFFFFFFFFFFFFFFF))
    return out


def split_args(args: list[int], cols: list[int] | None) -> list[int]:
    """An entry's action data as C holds it: one word per argument of at most 64 bits, the
    words of a wider one least significant first."""
    if cols is None:
        return list(args)
    out = []
    for v, n in zip(args, cols, strict=True):
        out += [(int(v) >> (64 * j)) & 0xFFFFFFFFFFFFFFFF for j in range(n)]
    return out


def join_words(ws: list[int]) -> int:
    """Words, least significant first, as one number."""
    return sum(int(w) << (64 * j) for j, w in enumerate(ws))


class WideTx:
    """Mixin of StmtTx: ``objects`` holds the slot map, ``fn`` the function's locals."""

    objects: Any
    fn: Any
    _wbc: dict[int, int]

    # ------------------------------------------------------------------ bounds
    def wb(self, e: ast.expr) -> int:
        """An upper bound on the bit length of ``e``'s value (modulo arithmetic: the low bits
        of a subtraction are bounded like an addition's; signs are csigns.py's business)."""
        if isinstance(e, ast.Constant):  # the generator makes temporary ones: not cached by id
            return min(self._wb(e), INF)
        key = id(e)
        r = self._wbc.get(key)
        if r is None:
            r = min(self._wb(e), INF)
            self._wbc[key] = r
        return r

    def _wb(self, e: ast.expr) -> int:
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool) or v is None:
                return 1
            if isinstance(v, int):
                return max(v.bit_length(), 1) if v >= 0 else 64
            return 64
        if isinstance(e, ast.Name):
            kind = self.fn.locals.get(e.id)
            if kind == "view":
                return INF
            if kind in ("u64", "w", "wparam"):  # assignments (infer_local_widths), types
                return self.fn.wbits.get(e.id, 64)
            return 64
        if isinstance(e, ast.Subscript):
            return self._wb_subscript(e)
        if isinstance(e, ast.BinOp):
            op = type(e.op)
            a = self.wb(e.left)
            if op is ast.BitAnd:
                return min(a, self.wb(e.right))
            if op is ast.LShift:
                k = _int_of(e.right)
                return a + k if k is not None and k >= 0 else INF
            if op is ast.RShift:
                k = _int_of(e.right)
                return max(a - k, 1) if k is not None and k >= 0 else a
            if op is ast.FloorDiv:
                return a
            b = self.wb(e.right)
            if op is ast.Mod:
                return min(a, b)
            if op in (ast.BitOr, ast.BitXor, ast.Sub):
                return max(a, b)
            if op is ast.Add:
                return max(a, b) + 1
            if op is ast.Mult:
                return a + b
            return INF
        if isinstance(e, ast.UnaryOp):
            return 1 if isinstance(e.op, ast.Not) else self.wb(e.operand)
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return 1
        if isinstance(e, ast.IfExp):
            return max(self.wb(e.body), self.wb(e.orelse))
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            f = e.func.id
            if f == "int" and len(e.args) == 1:
                return self.wb(e.args[0])
            if f == "min" and e.args:
                return min(self.wb(a) for a in e.args)
            if f == "max" and e.args:
                return max(self.wb(a) for a in e.args)
        if isinstance(e, ast.Call) and ast.unparse(e) == "len(P.data)":
            return 32
        if isinstance(e, ast.Attribute) and ast.unparse(e) in ("P.pos", "P.length"):
            return 32  # byte positions and BMv2's packet-length register
        if isinstance(e, ast.Tuple):
            return INF
        return 64

    def _wb_subscript(self, e: ast.Subscript) -> int:
        base = e.value
        if isinstance(base, ast.Name) and base.id == "S":
            s = e.slice
            if isinstance(s, ast.Constant) and isinstance(s.value, int):
                return INF if s.value in self.objects.vmax else self.objects.slot_bits(s.value)
            if isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name):
                table = self.objects.pipeline.namespace.get(s.value.id)
                if isinstance(table, tuple) and table:
                    return max(self.objects.slot_bits(x) for x in table)
            return 64
        k = self.varbit_part(e)
        if k is not None:
            slot, part = k
            return 32 if part == 0 else self.objects.vmax[slot]
        if isinstance(base, ast.Name) and (r := self.objects.register_cells(base.id)) is not None:
            return self.objects.register_list[r].width
        return 64

    def wide_cell(self, e: ast.expr) -> str | None:
        """``X_CELLS[i]`` of a register over 64 bits: a pointer to the cell's words, and
        their number."""
        if not (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)):
            return None
        r = self.objects.register_cells(e.value.id)
        if r is None or r not in self.objects.reg_words:
            return None
        n = self.objects.reg_words[r]
        # the generated Python checked the index against the register's size
        return f"P->E->reg[{r}] + ({self.expr(e.slice)}) * {n}, {n}"  # type: ignore[attr-defined]

    def varbit_part(self, e: ast.expr) -> tuple[int, int] | None:
        """(slot, 0 | 1) for ``S[k][0]`` (a varbit's width) or ``S[k][1]`` (its value)."""
        if (
            isinstance(e, ast.Subscript)
            and isinstance(e.slice, ast.Constant)
            and e.slice.value in (0, 1)
            and (k := self.varbit_slot(e.value)) is not None
        ):
            return k, int(e.slice.value)
        return None

    def varbit_slot(self, e: ast.expr) -> int | None:
        k = constant_slot(e)
        return k if k is not None and k in self.objects.vmax else None

    def wide_slot(self, e: ast.expr) -> int | None:
        """The slot number of ``S[k]`` when slot k holds more than 64 bits (not a varbit)."""
        k = constant_slot(e)
        if k is None or k in self.objects.vmax or self.objects.slot_bits(k) <= 64:
            return None
        return k

    def note_bits(self, bits: int) -> None:
        if bits < INF:
            self.objects.wide_bits = max(self.objects.wide_bits, bits, 1)

    # ------------------------------------------------------------------ locals
    def infer_local_widths(self, body: list[ast.stmt]) -> None:
        """Bounds of the function's u64 locals (a fixpoint: locals feed each other); a local
        that may hold more than 64 bits becomes a p4r_w."""
        assigns = []
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                t = n.targets[0]
                if isinstance(t, ast.Name) and self.fn.locals.get(t.id) == "u64":
                    assigns.append(n)
                    self.fn.wbits.setdefault(t.id, 0)  # raised by the fixpoint below
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                self.fn.wbits[n.target.id] = 64  # counters and widths: held in 64 bits
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple):
                for x in n.targets[0].elts:
                    if isinstance(x, ast.Name):
                        self.fn.wbits[x.id] = 64
        for _ in range(8):
            changed = False
            self._wbc = {}
            for n in assigns:
                name = n.targets[0].id  # type: ignore[attr-defined]
                b = self.wb(n.value)
                if b > self.fn.wbits.get(name, 64):
                    self.fn.wbits[name] = b
                    changed = True
            if not changed:
                break
        self._wbc = {}
        for name, b in self.fn.wbits.items():
            if b > 64 and self.fn.locals.get(name) == "u64":
                self.fn.locals[name] = "w"
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if (
                isinstance(n, ast.AugAssign)
                and isinstance(n.target, ast.Name)
                and self.fn.locals.get(n.target.id) == "w"
            ):
                raise Unsupported(f"the augmented assignment {ast.unparse(n)} of a wide value")

    # ------------------------------------------------------------------ wide expressions
    def wexpr(self, e: ast.expr) -> str:
        """``e`` as a p4r_w: its value modulo 2^(64 * P4R_WW). Only what needs more than the
        low bits notes its width (``note_bits``: constants, exact operands, stores)."""
        got = self.wide_view(e)
        if got is not None:
            return got
        if (
            isinstance(e, ast.Constant)
            and isinstance(e.value, int)
            and not isinstance(e.value, bool)
        ):
            v = e.value
            if v >= 0:
                self.note_bits(v.bit_length())
                return wconst(v)
            if v >= -(1 << 63):
                return f"p4r_w_s64(UINT64_C({v & 0xFFFFFFFFFFFFFFFF}))"
            raise Unsupported(f"the constant {v}")
        if (k := self.wide_slot(e)) is not None:
            n = words(self.objects.slot_bits(k))
            return f"p4r_w_ld(S + {self.objects.base[k]}, {n})"
        if (vp := self.varbit_part(e)) is not None and vp[1] == 1:
            k = vp[0]
            return f"p4r_w_ld(S + {self.objects.base[k] + 1}, {words(self.objects.vmax[k])})"
        if isinstance(e, ast.Name) and self.fn.locals.get(e.id) in ("w", "wparam"):
            return e.id
        if (cell := self.wide_cell(e)) is not None:
            return f"p4r_w_ld({cell})"
        if isinstance(e, ast.BinOp):
            return self.wbinop(e)
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Invert):
                return f"p4r_w_not({self.wexpr(e.operand)})"
            if isinstance(e.op, ast.USub):
                return f"p4r_w_neg({self.wexpr(e.operand)})"
        if isinstance(e, ast.IfExp):
            return f"(({self.truth(e.test)}) ? {self.wexpr(e.body)} : {self.wexpr(e.orelse)})"
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            f, args = e.func.id, e.args
            if f == "int" and len(args) == 1:
                return self.wexpr(args[0])
            a0 = args[0] if args else None
            if (
                f == "max"
                and len(args) == 2
                and isinstance(a0, ast.BinOp)
                and isinstance(a0.op, ast.Sub)
                and _int_of(args[1]) == 0
            ):  # a |-| b on bit<W>: a - b when a > b, else 0
                x, y = self.exact_wide(a0.left), self.exact_wide(a0.right)
                return (
                    f"({{ p4r_w _x = {x}, _y = {y}; "
                    f"p4r_w_cmp(_x, _y) > 0 ? p4r_w_sub(_x, _y) : p4r_w_u64(0); }})"
                )
            if f in ("min", "max") and len(args) == 2:
                # the saturating |+| and |-| of bit<W>: min(a + b, 2^W - 1), max(a - b, 0);
                # Python returns the first of equal values, which are the same bits here
                x, y = self.exact_wide(args[0]), self.exact_wide(args[1])
                keep = "<=" if f == "min" else ">="
                return f"({{ p4r_w _x = {x}, _y = {y}; p4r_w_cmp(_x, _y) {keep} 0 ? _x : _y; }})"
        if self.wb(e) > 64:
            raise Unsupported(f"the wide value {ast.unparse(e)}")
        x = self.expr(e)  # type: ignore[attr-defined]
        if self.neg(e):  # type: ignore[attr-defined]
            return f"p4r_w_s64({x})"  # an int<W <= 64> held as its two's complement
        return f"p4r_w_u64({x})"

    def wbinop(self, e: ast.BinOp) -> str:
        op = type(e.op)
        fn = {
            ast.Add: "add",
            ast.Sub: "sub",
            ast.Mult: "mul",
            ast.BitAnd: "and",
            ast.BitOr: "or",
            ast.BitXor: "xor",
        }.get(op)
        if fn is not None:
            return f"p4r_w_{fn}({self.wexpr(e.left)}, {self.wexpr(e.right)})"
        if op is ast.LShift:
            return f"p4r_w_shl({self.wexpr(e.left)}, {self.shift_amount(e.right)})"
        if op is ast.RShift:
            return f"p4r_w_shr({self.exact_wide(e.left)}, {self.shift_amount(e.right)})"
        d = _int_of(e.right)
        if op in (ast.FloorDiv, ast.Mod) and d is not None and d > 0 and d & (d - 1) == 0:
            a = self.exact_wide(e.left)
            k = d.bit_length() - 1
            if op is ast.FloorDiv:
                return f"p4r_w_shr({a}, {k})"
            return f"p4r_w_and({a}, {wconst(d - 1)})"
        raise Unsupported(f"the operator {op.__name__} on values wider than 64 bits")

    def exact_wide(self, e: ast.expr) -> str:
        """``e`` as a p4r_w whose value must be exact (not only its low bits)."""
        bits = self.wb(e)
        if bits >= INF or self.neg(e):  # type: ignore[attr-defined]
            raise Unsupported(f"a wide value of unknown width or sign ({ast.unparse(e)})")
        self.note_bits(bits)
        return self.wexpr(e)

    def shift_amount(self, e: ast.expr) -> str:
        k = _int_of(e)
        if k is not None and k >= 0:
            return str(k)
        if self.wb(e) > 64:
            return f"p4r_w_sat64({self.exact_wide(e)})"
        return self.expr(e)  # type: ignore[attr-defined]

    def truth(self, e: ast.expr) -> str:
        """A truth test: of every bit of a wide value."""
        if self.wb(e) > 64 and self.varbit_slot(e) is None:
            return f"p4r_w_nz({self.exact_wide(e)})"
        return self.expr(e)  # type: ignore[attr-defined]

    def wide_compare(self, left: ast.expr, sym: str, right: ast.expr) -> str | None:
        """A comparison with an operand wider than 64 bits; None when both are narrow."""
        va, vb = self.varbit_slot(left), self.varbit_slot(right)
        if va is not None or vb is not None:
            if va is None or vb is None or sym not in ("==", "!=") or va == vb:
                if va is not None and va == vb and sym in ("==", "!="):
                    return "1" if sym == "==" else "0"
                raise Unsupported(f"a comparison of varbit values ({ast.unparse(left)})")
            n = 1 + words(self.objects.vmax[va])
            if n != 1 + words(self.objects.vmax[vb]):
                raise Unsupported("a comparison of varbit values of different sizes")
            ba, bb = self.objects.base[va], self.objects.base[vb]
            return f"(memcmp(S + {ba}, S + {bb}, {n * 8}) {sym} 0)"
        if self.wb(left) <= 64 and self.wb(right) <= 64:
            return None
        return f"(p4r_w_cmp({self.exact_wide(left)}, {self.exact_wide(right)}) {sym} 0)"

    def wide_view(self, e: ast.expr) -> str | None:
        """``(VIEW >> off) & M`` over the packet bytes with M of more than 64 bits, or the
        varbit extract's ``(VIEW >> s) & ((1 << n) - 1)``: p4r_get_wide."""
        if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitAnd)):
            return None
        inner, m = e.left, e.right
        off: ast.expr = ast.Constant(0)
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.RShift):
            inner, off = inner.left, inner.right
        view = self.view_of(inner)  # type: ignore[attr-defined]
        if view is None:
            return None
        mv = _int_of(m)
        if mv is not None:
            w = mask_width(mv)
            if w is None:
                raise Unsupported(f"the packet read {ast.unparse(e)}")
            width = str(w)
            self.note_bits(w)
        elif (
            isinstance(m, ast.BinOp)
            and isinstance(m.op, ast.Sub)
            and _int_of(m.right) == 1
            and isinstance(m.left, ast.BinOp)
            and isinstance(m.left.op, ast.LShift)
            and _int_of(m.left.left) == 1
        ):
            width = self.expr(m.left.right)  # type: ignore[attr-defined]
        else:
            return None
        ptr, nbytes = view
        return f"p4r_get_wide({ptr}, {nbytes}, {self.expr(off)}, {width})"  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ stores
    def wide_store(self, t: ast.expr, v: ast.expr) -> str | None:
        """C for ``t = v`` when t is a wide or varbit slot or a wide local; else None."""
        if (k := self.wide_slot(t)) is not None:
            n = words(self.objects.slot_bits(k))
            self.note_bits(self.objects.slot_bits(k))
            return f"p4r_w_st(S + {self.objects.base[k]}, {n}, {self.wexpr(v)});"
        if isinstance(t, ast.Name) and self.fn.locals.get(t.id) == "w":
            return f"{t.id} = {self.wexpr(v)};"
        if (cell := self.wide_cell(t)) is not None:
            return f"p4r_w_st({cell}, {self.wexpr(v)});"
        k = self.varbit_slot(t)
        if k is None:
            return None
        b, nv = self.objects.base[k], words(self.objects.vmax[k])
        self.note_bits(self.objects.vmax[k])
        if isinstance(v, ast.Tuple) and len(v.elts) == 2:
            n = self.expr(v.elts[0])  # type: ignore[attr-defined]
            return f"S[{b}] = {n}; p4r_w_st(S + {b + 1}, {nv}, {self.wexpr(v.elts[1])});"
        src = self.varbit_slot(v)
        if src is not None and words(self.objects.vmax[src]) == nv:
            return f"memmove(S + {b}, S + {self.objects.base[src]}, {(1 + nv) * 8});"
        raise Unsupported(f"the varbit assignment {ast.unparse(t)} = {ast.unparse(v)}")


def constant_slot(e: ast.expr) -> int | None:
    """k for ``S[k]`` with a constant slot number k (a field or metadata slot), else None."""
    if (
        isinstance(e, ast.Subscript)
        and isinstance(e.value, ast.Name)
        and e.value.id == "S"
        and isinstance(e.slice, ast.Constant)
        and isinstance(e.slice.value, int)
        and not isinstance(e.slice.value, bool)
    ):
        return int(e.slice.value)
    return None
