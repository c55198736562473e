"""Bit-exact arithmetic of the interpreter at every width, against an independent reference.

What this file proves: for ``bit<W>`` and ``int<W>`` at W in {1, 3, 7, 8, 13, 16, 31, 32, 33,
48, 64, 128}, every P4_16 operation on fixed-width integers gives the value the spec defines
(P4_16 spec 8.6 "Operations on fixed-width bit types (unsigned integers)" and 8.7 "Operations
on fixed-width signed integers", both including slices and saturating arithmetic; 8.9
"Concatenation and shifts"; 8.11 "Casts"; 8.5.1 the conditional operator). Covered: ``+ - *``
(modulo 2^W), ``/ %`` (unsigned), ``& | ^ ~``, unary minus, ``<< >>`` by constants and by
run-time amounts including amounts >= W (``<<`` gives 0; ``>>`` of ``int<W>`` fills with the
sign), the six comparisons, ``|+| |-|``, casts (truncation, zero and sign extension, signedness
reinterpretation, bool <-> bit<1>), slice reads and slice assignment, ``++`` of mixed widths
and signedness, ``?:``, and compound expressions whose intermediate results must wrap at the
declared width (where an interpreter computing in Python big ints goes wrong). Every result
is also read back and checked to lie in its type's range, which the deparser's masking would
otherwise hide. Expressions made only of constants, which the interpreter folds at compile
time, are checked as well.

Each program is a real v1model P4 program run in process: its parser extracts a header of
operands (signed values travel as two's complement), its ingress writes every result into a
second header and its deparser emits both. The reference below is plain Python arithmetic
on bit patterns, written from the spec and sharing no code with the interpreter.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.switch import V1Switch

WIDTHS = (1, 3, 7, 8, 13, 16, 31, 32, 33, 48, 64, 128)
CAST_WIDTHS = (1, 4, 8, 13, 32, 33, 64, 128)
KINDS = [(w, signed) for w in WIDTHS for signed in (False, True)]

Vals = dict[str, int]

# --- reference model (P4_16 spec 8.6, 8.7, 8.11) ------------------------------------------


def mask(w: int) -> int:
    return (1 << w) - 1


def to_bits(v: int, w: int) -> int:
    """The W-bit two's complement pattern of ``v`` (v may be negative)."""
    return v & mask(w)


def from_bits(bits: int, w: int, signed: bool) -> int:
    """The value a W-bit pattern denotes as ``bit<W>`` or ``int<W>``."""
    bits &= mask(w)
    if signed and bits >> (w - 1):
        return bits - (1 << w)
    return bits


def wrap(v: int, w: int, signed: bool) -> int:
    """``v`` reduced modulo 2^W into the range of ``bit<W>`` / ``int<W>``."""
    return from_bits(to_bits(v, w), w, signed)


def bounds(w: int, signed: bool) -> tuple[int, int]:
    if signed:
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return 0, mask(w)


def saturate(v: int, w: int, signed: bool) -> int:
    lo, hi = bounds(w, signed)
    return min(max(v, lo), hi)


def shl(v: int, n: int, w: int, signed: bool) -> int:
    """``v << n``: zero fill from the right; shifting by W or more gives 0."""
    if n >= w:
        return 0
    return from_bits((to_bits(v, w) << n) & mask(w), w, signed)


def shr(v: int, n: int, w: int, signed: bool) -> int:
    """``v >> n``: logical for bit<W>, sign-filling for int<W>, written on the bit pattern."""
    bits = to_bits(v, w)
    negative = signed and bits >> (w - 1) == 1
    if n >= w:
        return -1 if negative else 0
    out = bits >> n
    if negative:
        out |= mask(w) ^ mask(w - n)  # the n top bits become copies of the sign
    return from_bits(out, w, signed)


def cast(v: int, w: int, signed: bool, to_w: int, to_signed: bool) -> int:
    """Casts of 8.11.1: truncate to fewer bits, else zero-extend bit<W> / sign-extend int<W>;
    then read the pattern with the target's signedness."""
    bits = to_bits(v, w)
    if to_w < w:
        bits &= mask(to_w)
    elif signed and bits >> (w - 1):
        bits |= mask(to_w) ^ mask(w)
    return from_bits(bits, to_w, to_signed)


def concat(a: int, wa: int, sa: bool, b: int, wb: int) -> int:
    """``a ++ b``: W1+W2 bits, the signedness of the left operand."""
    return from_bits((to_bits(a, wa) << wb) | to_bits(b, wb), wa + wb, sa)


def get_slice(v: int, w: int, hi: int, lo: int) -> int:
    """``v[hi:lo]``: a ``bit<hi-lo+1>`` whatever the signedness of ``v``."""
    return (to_bits(v, w) >> lo) & mask(hi - lo + 1)


def set_slice(v: int, w: int, signed: bool, hi: int, lo: int, x: int) -> int:
    """``v[hi:lo] = x``: only the bits hi..lo of v change."""
    m = mask(hi - lo + 1) << lo
    bits = (to_bits(v, w) & ~m) | ((to_bits(x, hi - lo + 1) << lo) & m)
    return from_bits(bits, w, signed)


def boundaries(w: int, signed: bool) -> list[int]:
    """0, 1, -1, the extremes and their neighbours, the values next to the sign bit."""
    lo, hi = bounds(w, signed)
    cands = [0, 1, -1, 2, lo, lo + 1, hi, hi - 1, 1 << (w - 1), (1 << (w - 1)) - 1]
    return sorted({v for v in cands if lo <= v <= hi})


def values(w: int, signed: bool) -> st.SearchStrategy[int]:
    lo, hi = bounds(w, signed)
    return st.one_of(st.sampled_from(boundaries(w, signed)), st.integers(lo, hi))


# --- packets and programs -----------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    signed: bool = False

    @property
    def p4type(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


def padded(fields: list[Field]) -> list[Field]:
    """Headers are whole bytes: a trailing ``bit<N>`` pad field fills the last one."""
    total = sum(f.width for f in fields)
    return fields + [Field("pad_", 8 - total % 8)] if total % 8 else list(fields)


def pack(fields: list[Field], vals: Vals) -> bytes:
    """Fields MSB first, signed values as two's complement; unnamed fields are 0."""
    acc = total = 0
    for f in fields:
        acc = (acc << f.width) | to_bits(vals.get(f.name, 0), f.width)
        total += f.width
    return acc.to_bytes(total // 8, "big")


def unpack(fields: list[Field], data: bytes) -> Vals:
    acc, left = int.from_bytes(data, "big"), 8 * len(data)
    out: Vals = {}
    for f in fields:
        left -= f.width
        out[f.name] = from_bits(acc >> left, f.width, f.signed)
    return out


@dataclass
class Op:
    """One result: its field type, the P4 that computes it and the reference value.

    ``code`` is an expression assigned to ``hdr.r.<name>``, or (``stmt=True``) statements that
    assign it themselves.
    """

    name: str
    width: int
    signed: bool
    code: str
    ref: Callable[[Vals], int]
    stmt: bool = False


TEMPLATE = """\
#include <core.p4>
#include <v1model.p4>

header opnd_t {{
{opnd}
}}
header res_t {{
{res}
}}
struct headers_t {{ opnd_t op; res_t r; }}
struct meta_t {{ }}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.op); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{
        hdr.r.setValid();
{body}
    }}
}}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Dep(packet_out pkt, in headers_t hdr) {{
    apply {{ pkt.emit(hdr.op); pkt.emit(hdr.r); }}
}}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def range_probe(o: Op) -> Op:
    """A 1-bit result that is 1 when ``hdr.r.<name>`` holds a value in its type's range.

    The deparser keeps only the low W bits, so a result computed out of range (say 255 or
    -129 in an int<8>) would leave the packet right and only go wrong when read again. The
    probe reads it again: ``x >> (W-1)`` of an in-range value is 0 or 1 (0 or -1 if signed).
    """
    top = f"(hdr.r.{o.name} >> {o.width - 1})"
    one = -1 if o.signed else 1
    code = f"hdr.r.in_{o.name} = ({top} == 0 || {top} == {one}) ? 1w1 : 1w0;"
    return Op(f"in_{o.name}", 1, False, code, lambda v: 1, stmt=True)


class Program:
    """A compiled program: operands in, one header of results out."""

    def __init__(self, path: Path, inputs: list[Field], ops: list[Op], prelude: str = "") -> None:
        self.inputs = padded(inputs)
        lines = [prelude] if prelude else []
        lines += [o.code if o.stmt else f"hdr.r.{o.name} = {o.code};" for o in ops]
        probes = [range_probe(o) for o in ops]
        lines += [p.code for p in probes]
        ops = ops + probes
        self.outputs = padded([Field(o.name, o.width, o.signed) for o in ops])
        self.ops = ops
        path.write_text(
            TEMPLATE.format(
                opnd="\n".join(f"    {f.p4type} {f.name};" for f in self.inputs),
                res="\n".join(f"    {f.p4type} {f.name};" for f in self.outputs),
                body="\n".join("        " + ln for ln in "\n".join(lines).splitlines()),
            )
        )
        self.source = path
        # run-time / and % (a / b, a / 3) are the interpreter's own semantics: p4c refuses
        # them for BMv2, so they are compiled with the explicit option
        self.sw = V1Switch(load_pipeline(path, CompileOptions(runtime_divmod=True)))

    def run(self, vals: Vals) -> Vals:
        data = pack(self.inputs, vals)
        out = self.sw.process(1, data)
        assert len(out) == 1, out
        port, pkt = out[0]
        assert port == 0
        assert pkt[: len(data)] == data, "the operand header changed"
        res = unpack(self.outputs, pkt[len(data) :])
        assert len(pkt) == len(data) + sum(f.width for f in self.outputs) // 8
        res.pop("pad_", None)
        return res

    def check(self, vals: Vals) -> None:
        got = self.run(vals)
        want = {o.name: o.ref(vals) for o in self.ops}
        bad = {
            k: (got[k], want[k], next(o.code for o in self.ops if o.name == k))
            for k in want
            if got[k] != want[k]
        }
        assert not bad, f"{self.source.name}, operands {vals}: (got, expected, P4) {bad}"


# --- the per-width program ----------------------------------------------------------------


def slice_bounds(w: int) -> tuple[int, int]:
    """An interior slice [hi:lo] of a W-bit value (the whole bit for W = 1)."""
    return w - 1 - w // 4, w // 3


def width_ops(w: int, sg: bool) -> list[Op]:
    """Every operation on ``T = bit<W>`` / ``int<W>`` over the operands a, b, c: T and s: bit<8>."""
    T = f"{'int' if sg else 'bit'}<{w}>"
    U = f"{'bit' if sg else 'int'}<{w}>"  # the other signedness

    def wr(v: int) -> int:
        return wrap(v, w, sg)

    ops: list[Op] = []

    def op(
        name: str, code: str, ref: Callable[[Vals], int], width: int = w, signed: bool = sg
    ) -> None:
        ops.append(Op(name, width, signed, code, ref))

    def flag(name: str, code: str, ref: Callable[[Vals], bool]) -> None:
        ops.append(Op(name, 1, False, code, lambda v: int(ref(v))))

    # + - * wrap around (8.6, 8.7)
    op("add", "a + b", lambda v: wr(v["a"] + v["b"]))
    op("sub", "a - b", lambda v: wr(v["a"] - v["b"]))
    op("mul", "a * b", lambda v: wr(v["a"] * v["b"]))
    op("neg", "-a", lambda v: wr(-v["a"]))
    op("pos", "+a - b", lambda v: wr(v["a"] - v["b"]))
    # bitwise, on the two's complement patterns
    op("band", "a & b", lambda v: from_bits(to_bits(v["a"], w) & to_bits(v["b"], w), w, sg))
    op("bor", "a | b", lambda v: from_bits(to_bits(v["a"], w) | to_bits(v["b"], w), w, sg))
    op("bxor", "a ^ b", lambda v: from_bits(to_bits(v["a"], w) ^ to_bits(v["b"], w), w, sg))
    op("bnot", "~a", lambda v: from_bits(mask(w) ^ to_bits(v["a"], w), w, sg))
    if not sg:  # / and % are defined on unsigned values only (8.6)
        ops.append(
            Op(
                "div",
                w,
                sg,
                "if (b != 0) { hdr.r.div = a / b; hdr.r.mod = a % b; }"
                " else { hdr.r.div = ~a; hdr.r.mod = a; }",
                lambda v: v["a"] // v["b"] if v["b"] else mask(w) ^ v["a"],
                stmt=True,
            )
        )
        ops.append(Op("mod", w, sg, "", lambda v: v["a"] % v["b"] if v["b"] else v["a"], True))
        if w >= 2:
            op("div3", "a / 3", lambda v: v["a"] // 3)
            op("mod3", "a % 3", lambda v: v["a"] % 3)
    # shifts by constants, amounts >= W included, and by run-time amounts (s: 0..255)
    for k in sorted({0, 1, w // 2, w - 1, w, w + 1, 2 * w + 3}):
        op(f"shl{k}", f"a << {k}", lambda v, k=k: shl(v["a"], k, w, sg))
        op(f"shr{k}", f"a >> {k}", lambda v, k=k: shr(v["a"], k, w, sg))
    op("shls", "a << s", lambda v: shl(v["a"], v["s"], w, sg))
    op("shrs", "a >> s", lambda v: shr(v["a"], v["s"], w, sg))
    # comparisons, through bool -> bit<1> casts and through ?:
    flag("lt", "(bit<1>)(a < b)", lambda v: v["a"] < v["b"])
    flag("le", "(bit<1>)(a <= b)", lambda v: v["a"] <= v["b"])
    flag("gt", "(bit<1>)(a > b)", lambda v: v["a"] > v["b"])
    flag("ge", "(bit<1>)(a >= b)", lambda v: v["a"] >= v["b"])
    flag("eq", "(bit<1>)(a == b)", lambda v: v["a"] == v["b"])
    flag("ne", "a != b ? 1w1 : 1w0", lambda v: v["a"] != v["b"])
    flag("ltc", "(bit<1>)(a < c)", lambda v: v["a"] < v["c"])
    # saturating arithmetic
    op("sadd", "a |+| b", lambda v: saturate(v["a"] + v["b"], w, sg))
    op("ssub", "a |-| b", lambda v: saturate(v["a"] - v["b"], w, sg))
    op("ssubc", "c |-| a", lambda v: saturate(v["c"] - v["a"], w, sg))
    # the conditional operator, with plain and compound branches
    op("min", "a < b ? a : b", lambda v: min(v["a"], v["b"]))
    op(
        "mux",
        "a >= b ? a - c : b + c",
        lambda v: wr(v["a"] - v["c"] if v["a"] >= v["b"] else v["b"] + v["c"]),
    )
    # compound expressions: every intermediate result wraps at W
    op(
        "cx1",
        "(a + b) * c - (a >> 3)",
        lambda v: wr(wr(v["a"] + v["b"]) * v["c"] - shr(v["a"], 3, w, sg)),
    )
    op("cx2", "(a << 1) >> 1", lambda v: shr(shl(v["a"], 1, w, sg), 1, w, sg))
    op("cx3", "(a << s) >> s", lambda v: shr(shl(v["a"], v["s"], w, sg), v["s"], w, sg))
    op("cx4", "(a + b) >> 1", lambda v: shr(wr(v["a"] + v["b"]), 1, w, sg))
    op("cx5", "(a * b) >> s", lambda v: shr(wr(v["a"] * v["b"]), v["s"], w, sg))
    op("cx6", "-(a - b) * ~c", lambda v: wr(-wr(v["a"] - v["b"]) * from_bits(~v["c"], w, sg)))
    op(
        "cx7",
        "(a |+| b) |-| c",
        lambda v: saturate(saturate(v["a"] + v["b"], w, sg) - v["c"], w, sg),
    )
    op("cx8", "~(a + b) >> 1", lambda v: shr(from_bits(~wr(v["a"] + v["b"]), w, sg), 1, w, sg))
    op("cx9", "(-a) >> s", lambda v: shr(wr(-v["a"]), v["s"], w, sg))
    op(
        "cx10",
        "((a ^ b) & c | ~a) + (b - c) * a",
        lambda v: wr(((v["a"] ^ v["b"]) & v["c"] | ~v["a"]) + wr(v["b"] - v["c"]) * v["a"]),
    )
    op(
        "cx11",
        "(a * b < c) ? (a - b) * c : c << 2",
        lambda v: (
            wr(wr(v["a"] - v["b"]) * v["c"])
            if wr(v["a"] * v["b"]) < v["c"]
            else shl(v["c"], 2, w, sg)
        ),
    )
    flag("cx12", "(bit<1>)(a + b < a)", lambda v: wr(v["a"] + v["b"]) < v["a"])
    flag("cx13", "(bit<1>)(a - b == c)", lambda v: wr(v["a"] - v["b"]) == v["c"])
    # ++ : width W1+W2, signedness of the left operand
    op("cat_ab", "a ++ b", lambda v: concat(v["a"], w, sg, v["b"], w), 2 * w)
    op("cat_as", "a ++ s", lambda v: concat(v["a"], w, sg, v["s"], 8), w + 8)
    op("cat_sa", "s ++ a", lambda v: concat(v["s"], 8, False, v["a"], w), w + 8, False)
    op(
        "cat_x",
        "(a - b) ++ (c * a)",
        lambda v: concat(wr(v["a"] - v["b"]), w, sg, wr(v["c"] * v["a"]), w),
        2 * w,
    )
    op(
        "cat3",
        "a ++ s ++ b",
        lambda v: concat(concat(v["a"], w, sg, v["s"], 8), w + 8, sg, v["b"], w),
        2 * w + 8,
    )
    op("cat_u", f"({U})a ++ b", lambda v: concat(v["a"], w, not sg, v["b"], w), 2 * w, not sg)
    # slices read a bit<hi-lo+1> whatever the signedness
    hi, lo = slice_bounds(w)
    n = hi - lo + 1
    op("sl", f"a[{hi}:{lo}]", lambda v: get_slice(v["a"], w, hi, lo), n, False)
    op("sl_all", f"a[{w - 1}:0]", lambda v: get_slice(v["a"], w, w - 1, 0), w, False)
    op("sl_top", f"a[{w - 1}:{w - 1}]", lambda v: get_slice(v["a"], w, w - 1, w - 1), 1, False)
    op("sl_x", f"(a + b)[{hi}:{lo}]", lambda v: get_slice(wr(v["a"] + v["b"]), w, hi, lo), n, False)
    op(
        "sl_sh",
        f"(a << s)[{w - 1}:{lo}]",
        lambda v: get_slice(shl(v["a"], v["s"], w, sg), w, w - 1, lo),
        w - lo,
        False,
    )
    # slice assignment, to a local and to a header field
    ops.append(
        Op(
            "sa",
            w,
            sg,
            f"{T} t = a; t[{hi}:{lo}] = b[{n - 1}:0]; hdr.r.sa = t;",
            lambda v: set_slice(v["a"], w, sg, hi, lo, get_slice(v["b"], w, n - 1, 0)),
            stmt=True,
        )
    )

    def flip_top(x: int) -> int:
        return set_slice(x, w, sg, w - 1, w - 1, 1 ^ get_slice(x, w, w - 1, w - 1))

    def sa_hdr(v: Vals) -> int:
        return set_slice(flip_top(v["c"]), w, sg, lo, 0, v["s"])

    ops.append(
        Op(
            "sa_hdr",
            w,
            sg,
            f"hdr.r.sa_hdr = c; hdr.r.sa_hdr[{w - 1}:{w - 1}] = ~c[{w - 1}:{w - 1}];"
            f" hdr.r.sa_hdr[{lo}:0] = (bit<{lo + 1}>)s;",
            sa_hdr,
            stmt=True,
        )
    )
    # a slice-assigned value read again: flipping the sign bit must give an in-range value
    op("sa_hdr2", "hdr.r.sa_hdr >> 1", lambda v: shr(sa_hdr(v), 1, w, sg))
    ops.append(
        Op(
            "sa_use",
            w,
            sg,
            f"{T} u = a; u[{w - 1}:{w - 1}] = ~a[{w - 1}:{w - 1}];"
            " hdr.r.sa_use = (u >> 1) + (u < b ? c : u);",
            lambda v: wr(
                shr(flip_top(v["a"]), 1, w, sg)
                + (v["c"] if flip_top(v["a"]) < v["b"] else flip_top(v["a"]))
            ),
            stmt=True,
        )
    )
    # casts: same signedness to other widths, the other signedness at the same width, chains
    S = "int" if sg else "bit"
    for v_w in CAST_WIDTHS:
        if v_w != w:
            op(f"cast{v_w}", f"({S}<{v_w}>)a", lambda v, v_w=v_w: cast(v["a"], w, sg, v_w, sg), v_w)
        if v_w < w:
            op(
                f"rt{v_w}",
                f"({T})({S}<{v_w}>)(a + b)",
                lambda v, v_w=v_w: cast(cast(wr(v["a"] + v["b"]), w, sg, v_w, sg), v_w, sg, w, sg),
            )
    op("reint", f"({U})a", lambda v: cast(v["a"], w, sg, w, not sg), w, not sg)
    op("reint2", f"({T})(({U})a + ({U})b)", lambda v: wrap(v["a"] + v["b"], w, sg))
    # bool <-> bit<1>
    flag(
        "bool1",
        "(bit<1>)((bool)a[0:0] && !(bool)b[0:0])",
        lambda v: bool(v["a"] & 1 and not v["b"] & 1),
    )
    ops.append(
        Op(
            "bool2",
            1,
            False,
            "bool f = (bool)(bit<1>)(a == c); hdr.r.bool2 = f ? 1w0 : 1w1;",
            lambda v: int(v["a"] != v["c"]),
            stmt=True,
        )
    )
    return ops


def width_program(path: Path, w: int, sg: bool) -> Program:
    T = f"{'int' if sg else 'bit'}<{w}>"
    inputs = [Field("a", w, sg), Field("b", w, sg), Field("c", w, sg), Field("s", 8)]
    prelude = f"{T} a = hdr.op.a; {T} b = hdr.op.b; {T} c = hdr.op.c; bit<8> s = hdr.op.s;"
    return Program(path, inputs, width_ops(w, sg), prelude)


@pytest.fixture(scope="module")
def progs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, bool], Program]:
    """Each per-width program, compiled once for the module, on first use."""
    cache: dict[tuple[int, bool], Program] = {}
    base = tmp_path_factory.mktemp("arith")

    def get(w: int, sg: bool) -> Program:
        if (w, sg) not in cache:
            cache[w, sg] = width_program(base / f"w{w}{'s' if sg else 'u'}.p4", w, sg)
        return cache[w, sg]

    return get


def kind_id(k: tuple[int, bool]) -> str:
    return f"{'int' if k[1] else 'bit'}{k[0]}"


@pytest.mark.parametrize("kind", KINDS, ids=kind_id)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_width_properties(
    progs: Callable[[int, bool], Program], kind: tuple[int, bool], data: st.DataObject
):
    w, sg = kind
    vals = {
        "a": data.draw(values(w, sg), "a"),
        "b": data.draw(values(w, sg), "b"),
        "c": data.draw(values(w, sg), "c"),
        "s": data.draw(
            st.one_of(st.sampled_from([0, 1, w - 1, w, w + 1, 255]), st.integers(0, 255)), "s"
        ),
    }
    progs(w, sg).check(vals)


@pytest.mark.parametrize("kind", KINDS, ids=kind_id)
def test_width_boundaries(progs: Callable[[int, bool], Program], kind: tuple[int, bool]):
    """Every pair of boundary values (0, 1, -1, max, min, ...) through every operation."""
    w, sg = kind
    prog = progs(w, sg)
    bvals = boundaries(w, sg)
    amounts = [0, 1, w - 1, w, w + 1, 255]
    for i, (a, b) in enumerate(itertools.product(bvals, repeat=2)):
        prog.check({"a": a, "b": b, "c": bvals[i % len(bvals)], "s": amounts[i % len(amounts)]})


# --- known answers, written by hand (they also check the reference model) -----------------


def kv(text: str) -> Vals:
    """``"add=44 neg=-1 cat=0xC864"`` as a dict."""
    return {k: int(v, 0) for k, v in (item.split("=") for item in text.split())}


KNOWN_8BIT = [
    (
        False,
        "a=200 b=100 c=3 s=9",
        "add=44 sub=100 mul=32 neg=56 sadd=255 ssub=100 ssubc=0 shls=0 shrs=0 div=2 mod=0"
        " cat_ab=0xC864 sl=2 cx4=22 cast4=8 reint=-56 shl7=0 shr7=1 shl8=0 shr8=0",
    ),
    (
        False,
        "a=255 b=1 c=0 s=1",
        "add=0 sadd=255 bnot=0 cx2=127 cx3=127 cx8=127 lt=0 gt=1 div=255 div3=85 mod3=0"
        " cat_as=0xFF01 cast13=255",
    ),
    (False, "a=7 b=0 c=0 s=0", "div=248 mod=7 ssub=7 shrs=7"),
    (
        True,
        "a=127 b=1 c=-1 s=200",
        "add=-128 sadd=127 sub=126 mul=127 neg=-127 shrs=0 shls=0 cx2=-1 cast4=-1 cast13=127"
        " reint=127 lt=0 ssubc=-128",
    ),
    (
        True,
        "a=-128 b=1 c=5 s=8",
        "neg=-128 sub=127 ssub=-128 sadd=-127 shrs=-1 shr7=-1 shr8=-1 shr19=-1 shl1=0 shr1=-64"
        " bnot=127 sl_top=1 cat_ab=-32767 cat_sa=0x0880 reint=128 cast128=-128 lt=1 min=-128",
    ),
    (
        True,
        "a=-1 b=-1 c=-1 s=3",
        "add=-2 mul=1 neg=1 shrs=-1 shls=-8 sadd=-2 ssub=0 cx3=-1 reint=255 sl=0b1111 cast1=-1"
        " eq=1 cat_u=0xFFFF",
    ),
]


@pytest.mark.parametrize(("sg", "vals", "want"), KNOWN_8BIT)
def test_known_answers_8bit(progs: Callable[[int, bool], Program], sg: bool, vals: str, want: str):
    got = progs(8, sg).run(kv(vals))
    assert {k: got[k] for k in kv(want)} == kv(want)


def test_known_answers_narrow(progs: Callable[[int, bool], Program]):
    # int<1> holds -1 and 0: -1 + -1 wraps to 0, -(-1) is -1, saturation clamps to [-1, 0]
    got = progs(1, True).run({"a": -1, "b": -1, "c": 0, "s": 0})
    assert (got["add"], got["neg"], got["sadd"], got["ssubc"], got["mul"]) == (0, -1, -1, 0, -1)
    assert (got["shr1"], got["shl1"], got["cat_ab"], got["reint"]) == (-1, 0, -1, 1)
    # bit<3>: 5 * 6 = 30 = 6 mod 8; 5 + 6 = 3; 5 ++ 6 = 0b101110
    got = progs(3, False).run({"a": 5, "b": 6, "c": 0, "s": 2})
    assert (got["mul"], got["add"], got["cat_ab"], got["shls"], got["cx3"]) == (6, 3, 46, 4, 1)


def test_known_answers_wide(progs: Callable[[int, bool], Program]):
    m64 = mask(64)
    got = progs(64, False).run({"a": m64, "b": m64, "c": 2, "s": 64})
    assert (got["add"], got["mul"], got["sadd"]) == (m64 - 1, 1, m64)
    assert (got["shls"], got["shrs"]) == (0, 0)
    assert got["cx4"] == m64 >> 1  # (a + b) wraps before the shift
    assert got["cast128"] == m64 and got["cast33"] == mask(33)
    got = progs(128, True).run({"a": -(1 << 127), "b": -1, "c": 1, "s": 127})
    assert (got["shrs"], got["shls"]) == (-1, 0)
    assert got["ssub"] == got["sub"] == -(1 << 127) + 1
    assert (got["add"], got["sadd"], got["neg"]) == ((1 << 127) - 1, -(1 << 127), -(1 << 127))
    got = progs(33, True).run({"a": -5, "b": 3, "c": 0, "s": 40})
    assert (got["shrs"], got["cast8"], got["cast64"], got["reint"]) == (-1, -5, -5, (1 << 33) - 5)


# --- mixed widths and signedness ----------------------------------------------------------

MIXED_INPUTS = [
    Field("x", 8),
    Field("y", 8),
    Field("i", 8, True),
    Field("j", 8, True),
    Field("z", 13),
    Field("k", 5, True),
    Field("q", 64),
]


def mixed_ops() -> list[Op]:
    """Expressions that mix widths and signedness through casts, locals and ``++``."""
    ops: list[Op] = []

    def op(
        name: str,
        width: int,
        signed: bool,
        code: str,
        ref: Callable[[Vals], int],
        stmt: bool = False,
    ) -> None:
        ops.append(Op(name, width, signed, code, ref, stmt))

    op("m1", 16, False, "(bit<16>)x * (bit<16>)y", lambda v: v["x"] * v["y"])
    op("m2", 8, False, "((bit<16>)x * (bit<16>)y)[15:8]", lambda v: (v["x"] * v["y"]) >> 8)
    op("m3", 8, False, "(bit<8>)(((bit<16>)x * (bit<16>)y) >> 8)", lambda v: (v["x"] * v["y"]) >> 8)
    op("m4", 16, True, "(int<16>)i * (int<16>)j", lambda v: wrap(v["i"] * v["j"], 16, True))
    op("m5", 32, False, "(bit<32>)(int<32>)i", lambda v: to_bits(v["i"], 32))
    op("m6", 32, False, "(bit<32>)(bit<8>)i", lambda v: to_bits(v["i"], 8))
    op("m7", 16, True, "(int<16>)(int<8>)x", lambda v: from_bits(v["x"], 8, True))
    op(
        "m8",
        29,
        False,
        "x ++ i ++ z",
        lambda v: (v["x"] << 21) | (to_bits(v["i"], 8) << 13) | v["z"],
    )
    op("m9", 18, True, "k ++ z", lambda v: concat(v["k"], 5, True, v["z"], 13))
    op("m10", 13, True, "(int<13>)k", lambda v: v["k"])
    op(
        "m11",
        13,
        False,
        "(bit<13>)(int<13>)k + z",
        lambda v: wrap(to_bits(v["k"], 13) + v["z"], 13, False),
    )
    op(
        "m12",
        5,
        True,
        "(int<5>)z[4:0] - k",
        lambda v: wrap(from_bits(v["z"], 5, True) - v["k"], 5, True),
    )
    op(
        "m13",
        64,
        False,
        "q * (bit<64>)x + ((bit<64>)z << 51)",
        lambda v: wrap(v["q"] * v["x"] + (v["z"] << 51), 64, False),
    )
    op("m14", 8, False, "q[63:56] |+| x", lambda v: min((v["q"] >> 56) + v["x"], 255))
    op(
        "m15",
        1,
        False,
        "(bit<1>)((int<16>)i * (int<16>)j < (int<16>)(i * j))",
        lambda v: int(v["i"] * v["j"] < wrap(v["i"] * v["j"], 8, True)),
    )
    op("m16", 8, False, "x << z", lambda v: shl(v["x"], v["z"], 8, False))
    op("m17", 8, True, "i >> z", lambda v: shr(v["i"], v["z"], 8, True))
    op("m18", 64, False, "q >> x", lambda v: shr(v["q"], v["x"], 64, False))
    op("m19", 64, False, "q << x", lambda v: shl(v["q"], v["x"], 64, False))
    op("m20", 8, True, "i >> q", lambda v: shr(v["i"], v["q"], 8, True))
    op("m21", 8, False, "x << q", lambda v: shl(v["x"], v["q"], 8, False))

    def locals_ref(v: Vals) -> int:
        t = wrap(v["x"] + v["y"], 8, False)
        t = wrap(t * v["y"], 8, False)
        u = shl(t, 4, 16, False)
        return wrap(u - v["z"], 16, False)

    op(
        "m22",
        16,
        False,
        "bit<8> t = x + y; t = t * y; bit<16> u = (bit<16>)t << 4; hdr.r.m22 = u - (bit<16>)z;",
        locals_ref,
        stmt=True,
    )

    def header_ref(v: Vals) -> int:
        r = wrap(v["i"] - v["j"], 8, True)
        r = wrap(r * 3, 8, True)
        return shr(r, 1, 8, True)

    op(
        "m23",
        8,
        True,
        "hdr.r.m23 = hdr.op.i - hdr.op.j; hdr.r.m23 = hdr.r.m23 * 3; hdr.r.m23 = hdr.r.m23 >> 1;",
        header_ref,
        stmt=True,
    )
    op("m24", 8, False, "x + (8w200 + 8w100)", lambda v: wrap(v["x"] + 44, 8, False))
    op("m25", 8, False, "x - 1 + y", lambda v: wrap(v["x"] - 1 + v["y"], 8, False))
    op("m26", 8, True, "i * 3 - 100", lambda v: wrap(v["i"] * 3 - 100, 8, True))
    op("m27", 8, False, "(x + y) % 7", lambda v: wrap(v["x"] + v["y"], 8, False) % 7)
    return ops


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Program:
    prelude = (
        "bit<8> x = hdr.op.x; bit<8> y = hdr.op.y; int<8> i = hdr.op.i; int<8> j = hdr.op.j;\n"
        "bit<13> z = hdr.op.z; int<5> k = hdr.op.k; bit<64> q = hdr.op.q;"
    )
    return Program(
        tmp_path_factory.mktemp("mixed") / "mixed.p4", MIXED_INPUTS, mixed_ops(), prelude
    )


@settings(max_examples=200, deadline=None)
@given(
    x=values(8, False),
    y=values(8, False),
    i=values(8, True),
    j=values(8, True),
    z=st.one_of(st.integers(0, 80), values(13, False)),
    k=values(5, True),
    q=st.one_of(st.integers(0, 130), values(64, False)),
)
@example(x=0, y=0, i=0, j=0, z=0, k=0, q=0)
@example(x=255, y=255, i=-128, j=-128, z=8191, k=-16, q=mask(64))
@example(x=8, y=1, i=-1, j=127, z=8, k=15, q=64)  # shift amounts equal to the widths
@example(x=63, y=200, i=-128, j=-1, z=7, k=-1, q=63)
def test_mixed_properties(mixed: Program, x: int, y: int, i: int, j: int, z: int, k: int, q: int):
    mixed.check({"x": x, "y": y, "i": i, "j": j, "z": z, "k": k, "q": q})


# --- constant expressions (folded at compile time) ----------------------------------------

CONST_OPS: list[tuple[str, int, bool, str, int]] = [
    ("add_shr", 8, False, "(8w200 + 8w100) >> 1", 22),
    ("add", 8, False, "8w200 + 8w100", 44),
    ("shl_over", 8, False, "8w1 << 9", 0),
    ("shl_edge", 8, False, "8w0xFF << 7", 0x80),
    ("neg_shr", 8, True, "(int<8>)8w0x80 >> 9", -1),
    ("neg_shr2", 8, True, "-8s3 >> 1", -2),
    ("not_shr", 8, False, "~8w0 >> 4", 15),
    ("uneg_shr", 8, False, "-(8w1) >> 4", 15),
    ("trunc", 4, False, "(bit<4>)8w0xAB", 0xB),
    ("sext", 16, True, "(int<16>)(int<8>)8w0xF0", -16),
    ("zext", 16, False, "(bit<16>)8w0xF0", 0xF0),
    ("slice", 4, False, "8w0xAB[7:4]", 0xA),
    ("slice_x", 4, False, "(8w0xF0 + 8w0x20)[7:4]", 1),
    ("cat", 8, False, "4w0xF ++ 4w0x1", 0xF1),
    ("cat_s", 8, True, "(int<4>)4w8 ++ 4w1", -127),
    ("sat_u", 8, False, "8w250 |+| 8w10", 255),
    ("sat_u2", 8, False, "8w5 |-| 8w10", 0),
    ("sat_s", 8, True, "8s127 |+| 8s1", 127),
    ("sat_s2", 8, True, "(int<8>)8w0x80 |-| 8s1", -128),
    ("mul_div", 8, False, "(8w200 * 8w2) / 8w3", 48),
    ("mod", 8, False, "(8w250 + 8w10) % 8w3", 1),
    ("int_to_bit", 8, False, "(bit<8>)(int<8>)-1", 255),
    ("mux", 8, False, "(8w255 + 1) == 0 ? 8w1 : 8w2", 1),
    ("k_fold", 8, False, "(K + K) >> 1", 72),
    ("k_fold2", 16, False, "(bit<16>)(K + K)", 144),
    ("k_fold3", 16, False, "(bit<16>)K + (bit<16>)K", 400),
    ("neg_min", 8, True, "-(int<8>)8w0x80", -128),
    ("wide", 64, False, "(64w0xFFFFFFFFFFFFFFFF + 1) | (64w1 << 63 >> 63)", 1),
    ("wide2", 128, True, "(int<128>)(int<64>)64w0x8000000000000000 >> 40", -(1 << 23)),
    ("bool_fold", 1, False, "(bit<1>)((bool)1w1 && !(bool)1w0)", 1),
]


@pytest.fixture(scope="module")
def consts(tmp_path_factory: pytest.TempPathFactory) -> Program:
    ops = [Op(n, w, sg, code, lambda v, want=want: want) for n, w, sg, code, want in CONST_OPS]
    return Program(
        tmp_path_factory.mktemp("consts") / "consts.p4",
        [Field("x", 8)],
        ops,
        "const bit<8> K = 200;",
    )


def test_constant_folding(consts: Program):
    consts.check({"x": 0})


def test_constant_reference_agrees():
    """The hand-written constants above agree with the reference model."""
    assert shr(wrap(200 + 100, 8, False), 1, 8, False) == 22
    assert shr(-128, 9, 8, True) == -1 and shr(-3, 1, 8, True) == -2
    assert shr(mask(8) ^ 0, 4, 8, False) == 15 and shr(wrap(-1, 8, False), 4, 8, False) == 15
    assert cast(0xAB, 8, False, 4, False) == 0xB and cast(-16, 8, True, 16, True) == -16
    assert concat(-8, 4, True, 1, 4) == -127
    assert get_slice(wrap(0xF0 + 0x20, 8, False), 8, 7, 4) == 1
    assert shr(cast(-(1 << 63), 64, True, 128, True), 40, 128, True) == -(1 << 23)
