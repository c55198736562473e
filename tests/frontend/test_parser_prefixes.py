"""The parser on every prefix of a program: a program cut anywhere (an editor's unsaved
buffer, a truncated download) is a ``FILE(LINE): error:`` (CompileError), never a Python
exception. A cut inside an extern's method list once ran the method-prototype lookahead past
the end of the token list (IndexError)."""

from __future__ import annotations

import pytest
from p4reduce.switch.frontend import parser
from p4reduce.switch.frontend.errors import CompileError

# One of each declaration kind whose parsing looks ahead (extern objects and functions,
# generic methods, packages, parsers with select, controls with tables and entries).
PROGRAM = """\
error { NoError, Bad }
match_kind { exact, ternary }
typedef bit<8> u8;
enum bit<8> E { A = 1, B = 2 }
header h_t { bit<8> f; u8 g; }
struct s_t { h_t h; }
extern packet_in { void extract<T>(out T hdr); T lookahead<T>(); }
extern E2<I> { E2(bit<32> size); abstract bit<8> f(in I x); void read(out I r, in bit<32> i); }
extern void mark(inout s_t s);
extern bit<8> twice<T>(in T x);
parser P(packet_in pkt, out s_t s) {
    state start {
        pkt.extract(s.h);
        transition select(s.h.f, s.h.g) { (1, 2): accept; (_, 3 &&& 3): reject; default: accept; }
    }
}
control C(inout s_t s) {
    action a(bit<8> v) { s.h.f = v; }
    table t {
        key = { s.h.f: exact; }
        actions = { a; }
        const entries = { 1 : a(2); }
        size = 4;
    }
    apply { if (s.h.isValid()) { t.apply(); } else { s.h.g = (bit<8>) twice<bit<4>>(4w1); } }
}
package Pkg<H>(P p, C c);
Pkg(P(), C()) main;
"""


def test_the_whole_program_parses() -> None:
    parser.parse(PROGRAM, "p.p4")


@pytest.mark.timeout(60)
def test_every_prefix_is_a_compile_error_or_parses() -> None:
    for cut in range(len(PROGRAM)):
        text = PROGRAM[:cut]
        try:
            parser.parse(text, "p.p4")
        except CompileError as err:
            assert err.pos is not None, f"cut at {cut}: an error without a position"
        except Exception as exc:  # noqa: BLE001 - the contract under test
            pytest.fail(f"cut at {cut} ({text[-40:]!r}): {type(exc).__name__}: {exc}")
