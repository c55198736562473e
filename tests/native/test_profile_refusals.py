"""What the native engine refuses of action profiles and selectors, in one line each (the
program then runs on the interpreter): a selector whose hash the runtime does not compute,
and a profile shared by tables whose action lists differ (a member runs the first table's
binding of its action in the interpreter, C would dispatch on the applying table's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
"""
RANDOM_SELECTOR = """
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.random, 32w8, 32w16) sel;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.a: exact; hdr.h.b: selector; } actions = { fwd; NoAction; }
              implementation = sel; }
    apply { t.apply(); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
SHARED_DIFFERENT_ACTIONS = """
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action_profile(32w8) ap;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action setb(bit<8> v) { hdr.h.b = v; }
    table t { key = { hdr.h.a: exact; } actions = { fwd; setb; NoAction; } implementation = ap; }
    table u { key = { hdr.h.b: exact; } actions = { fwd; NoAction; } implementation = ap; }
    apply { t.apply(); u.apply(); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (RANDOM_SELECTOR, "the hash algorithm random"),
        (SHARED_DIFFERENT_ACTIONS, "I.ap: a profile shared by tables with different actions"),
    ],
)
def test_refused_in_one_line(tmp_path: Path, body: str, reason: str) -> None:
    path = tmp_path / "prog.p4"
    path.write_text(HEAD + body)
    lines: list[str] = []
    sw = make_switch(load_pipeline(path), notice=lines.append)
    assert sw.engine == "python"
    assert len(lines) == 1 and reason in lines[0] and "running the Python engine" in lines[0], lines
    assert sw.process(1, b"\x01\x02") == [(0, b"\x01\x02")]  # the interpreter runs it
