"""Wide arithmetic (bit<W>, 65 <= W <= 300): the native engine's multi-word path against the
interpreter, value by value.

One generated program holds a header of inputs and one of results per width; each result is
one operator of docs/interpreter.md on the wide inputs (+ - * & | ^ ~ unary -, shifts by
constants and by a run-time amount, comparisons, ?:, slices, concatenation, casts both ways,
saturating |+| |-|, / and % by powers of two, a truth test, mixing with a narrow field).
Hypothesis draws the inputs, biased to the edges (0, 1, 2^W - 1, 2^(W-1), 2^64 +- 1, one
word boundary or another) and the shift amounts around W and 64; both engines must send the
same bytes. The widths straddle every word boundary from 65 to 300 bits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

WIDTHS = (65, 100, 127, 128, 129, 191, 192, 255, 300)
BMV2 = Path(__file__).resolve().parents[2] / "bmv2_tests"


def _results(w: int) -> list[tuple[str, int, str]]:
    """(field, width, P4 expression) per result, a and b being bit<W>, s bit<8>, n bit<32>."""
    return [
        ("sum", w, "a + b"),
        ("diff", w, "a - b"),
        ("rdiff", w, "b - a"),
        ("prod", w, "a * b"),
        ("band", w, "a & b"),
        ("bor", w, "a | b"),
        ("bxor", w, "a ^ b"),
        ("inv", w, "~a"),
        ("neg", w, "-a"),
        ("shlc", w, "a << 7"),
        ("shrc", w, "a >> 9"),
        ("shl64", w, "a << 64"),
        ("shr65", w, "a >> 65"),
        ("shlr", w, "a << h.s"),
        ("shrr", w, "a >> h.s"),
        ("mx", w, "(a > b) ? a : b"),
        (
            "flags",
            8,
            "(a < b ? 8w1 : 8w0) | (a <= b ? 8w2 : 8w0) | (a == b ? 8w4 : 8w0)"
            " | (a != b ? 8w8 : 8w0) | (a >= b ? 8w16 : 8w0) | (a > b ? 8w32 : 8w0)"
            " | (a == 0 ? 8w64 : 8w0)",
        ),
        ("hi", 64, f"a[{w - 1}:{w - 64}]"),
        ("lo", 64, "(bit<64>)a"),
        ("lo32", 32, "(bit<32>)(a >> 40)"),
        ("mid", w - 4, f"a[{w - 2}:3]"),
        ("cat", w + 30, f"a[{w - 1}:{w - 30}] ++ b"),
        ("widen", w + 37, f"((bit<{w + 37}>)b) << 36"),
        ("satp", w, "a |+| b"),
        ("satm", w, "a |-| b"),
        ("div", w, "a / 16"),
        ("mod", w, "a % 32"),
        ("mixed", w, f"a + (bit<{w}>)h.n - (bit<{w}>)h.s"),
        ("nsum", 32, "h.n + (bit<32>)a"),
        # narrow operands, a wide intermediate: 96 bits shifted back under 64
        ("ncat", 64, "((h.n ++ (bit<64>)a) >> 40)[63:0]"),
    ]


def _pad(n: int) -> str:
    return f"bit<{n}> pad;" if n else ""


def program(widths: tuple[int, ...] = WIDTHS) -> str:
    out = ["#include <core.p4>", "#include <v1model.p4>"]
    for w in widths:
        pad = (-(2 * w + 40)) % 8
        out.append(f"header in{w}_t {{ bit<{w}> a; bit<{w}> b; bit<8> s; bit<32> n;")
        out.append(f"    {_pad(pad)} }}")
        fields = _results(w)
        total = sum(fw for _, fw, _ in fields)
        rpad = (-total) % 8
        body = " ".join(f"bit<{fw}> {f};" for f, fw, _ in fields)
        out.append(f"header out{w}_t {{ {body} {_pad(rpad)} }}")
    hs = " ".join(f"in{w}_t i{w}; out{w}_t o{w};" for w in widths)
    out.append(f"struct headers_t {{ {hs} }}")
    out.append("struct meta_t { }")
    ex = " ".join(f"pkt.extract(hdr.i{w});" for w in widths)
    out.append(
        "parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, "
        "inout standard_metadata_t sm) { state start { " + ex + " transition accept; } }"
    )
    out.append("control V(inout headers_t hdr, inout meta_t meta) { apply { } }")
    body = []
    for w in widths:
        body.append(f"hdr.o{w}.setValid();")
        body.append(f"{{ bit<{w}> a = hdr.i{w}.a; bit<{w}> b = hdr.i{w}.b;")
        for f, _, e in _results(w):
            body.append(f"hdr.o{w}.{f} = {e.replace('h.', f'hdr.i{w}.')};")
        body.append("}")
    out.append(
        "control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) "
        "{ apply { " + "\n".join(body) + " sm.egress_spec = 1; } }"
    )
    out.append(
        "control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) "
        "{ apply { } }"
    )
    out.append("control C(inout headers_t hdr, inout meta_t meta) { apply { } }")
    em = " ".join(f"pkt.emit(hdr.i{w}); pkt.emit(hdr.o{w});" for w in widths)
    out.append("control D(packet_out pkt, in headers_t hdr) { apply { " + em + " } }")
    out.append("V1Switch(P(), V(), I(), E(), C(), D()) main;")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    path = tmp_path_factory.mktemp("wide") / "wide_ops.p4"
    path.write_text(program())
    options = CompileOptions(include_dirs=[BMV2])
    py = make_switch(load_pipeline(path, options), "python")
    nat = make_switch(load_pipeline(path, options), "native", notice=None)
    assert nat.engine == "native", "the wide program does not run natively"  # type: ignore[attr-defined]
    return py, nat


def _value(w: int) -> st.SearchStrategy[int]:
    edges = [0, 1, 2, (1 << w) - 1, 1 << (w - 1), (1 << 64) - 1, 1 << 64, (1 << 64) + 1]
    edges += [(1 << k) - 1 for k in (63, 127, 128, 192) if k < w]
    edges += [1 << k for k in (63, 127, 128, 191, 192, 255) if k < w]
    return st.one_of(st.sampled_from(edges), st.integers(0, (1 << w) - 1))


@st.composite
def _packet(draw: st.DrawFn) -> bytes:
    data = b""
    for w in WIDTHS:
        a, b = draw(_value(w)), draw(_value(w))
        if draw(st.booleans()):
            b = a  # equal operands: the comparisons' other side
        s = draw(st.sampled_from([0, 1, 63, 64, 65, 127, 128, w - 1, w, 255]) | st.integers(0, 255))
        n = draw(st.integers(0, (1 << 32) - 1))
        pad = (-(2 * w + 40)) % 8
        v = (((((a << w) | b) << 8 | s) << 32) | n) << pad
        data += v.to_bytes((2 * w + 40 + pad) // 8, "big")
    return data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=_packet())
def test_wide_arithmetic_agrees_with_the_interpreter(
    engines: tuple[object, object], frame: bytes
) -> None:
    py, nat = engines
    a = py.process(0, frame)  # type: ignore[attr-defined]
    b = nat.process(0, frame)  # type: ignore[attr-defined]
    assert a and a == b


def test_a_short_packet_is_the_same_parser_error(engines: tuple[object, object]) -> None:
    py, nat = engines
    for n in (0, 17, 40):
        frame = bytes(range(n))
        assert py.process(0, frame) == nat.process(0, frame)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- wide table keys
OWN = Path(__file__).resolve().parent / "p4"


@pytest.fixture(scope="module")
def table_engines() -> tuple[object, object]:
    path = OWN / "wide_tables.p4"
    options = CompileOptions(include_dirs=[BMV2])
    py = make_switch(load_pipeline(path, options), "python")
    nat = make_switch(load_pipeline(path, options), "native", notice=None)
    assert nat.engine == "native", "wide_tables does not run natively"  # type: ignore[attr-defined]
    return py, nat


def ex_action(i: int, dst: int, flow: int) -> tuple[str, list[int]]:
    """set_tag, or set_dst with action data over 64 bits (bit<128>, bit<72>)."""
    if i % 2:
        return "ingress.set_dst", [dst ^ (flow << 50), flow ^ (1 << 71), 0x40 + i]
    return "ingress.set_tag", [0x40 + i]


def _header(dst: int, src: int, k: int, flow: int) -> bytes:
    v = (((((dst << 100) | src) << 4 | k) << 72 | flow) << 24) | 0xABCDEF
    return v.to_bytes(41, "big")


_KEYS = st.tuples(_value(128), st.integers(0, (1 << 100) - 1), st.integers(0, 15), _value(72))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=st.lists(_KEYS, min_size=1, max_size=6),
    plens=st.lists(st.integers(0, 128), min_size=6, max_size=6),
    masks=st.lists(_value(100), min_size=6, max_size=6),
    probes=st.lists(_KEYS, max_size=4),
)
def test_wide_table_keys_agree(
    table_engines: tuple[object, object],
    keys: list[tuple[int, int, int, int]],
    plens: list[int],
    masks: list[int],
    probes: list[tuple[int, int, int, int]],
) -> None:
    """Entries made from the packets' own addresses (an exact bit<72>, a bit<128> prefix of
    any length, a bit<100> ternary mask), so that they hit, miss by one word or another, and
    overlap, half of the exact ones with action data over 64 bits; both engines must forward
    every packet the same way."""
    from p4reduce.switch.interp.matches import Exact, Lpm, Ternary

    for sw in table_engines:
        tables = sw.pipeline.tables  # type: ignore[attr-defined]
        for t in tables.values():
            t.clear()
        for i, (dst, src, k, flow) in enumerate(keys):
            plen = plens[i]
            prefix = dst & (((1 << plen) - 1) << (128 - plen))
            for name, matches, action, args, prio in (
                ("ingress.lpm6", [Lpm(prefix, plen)], "ingress.set_port", [i + 1, i], None),
                (
                    "ingress.tern",
                    [Ternary(src & masks[i], masks[i]), Exact(k)],
                    "ingress.set_tag",
                    [i],
                    10 + i,
                ),
                ("ingress.ex", [Exact(flow)], *ex_action(i, dst, flow), None),
            ):
                try:
                    tables[name].add_entry(matches, action, args, prio)
                except Exception:  # noqa: BLE001 - a duplicate key: the same on both engines
                    pass
    py, nat = table_engines
    first = nat.process(0, _header(*keys[0]))  # type: ignore[attr-defined]
    assert first == py.process(0, _header(*keys[0]))  # type: ignore[attr-defined]
    assert first[0][1][40] == 7, "the first key's own packet hits all three tables"
    for dst, src, k, flow in [*keys, *probes, (keys[0][0] ^ 1, keys[0][1], keys[0][2], 0)]:
        frame = _header(dst, src, k, flow)
        assert py.process(0, frame) == nat.process(0, frame)  # type: ignore[attr-defined]
