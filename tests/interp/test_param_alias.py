"""Sub-controls applied once share their caller's storage (no copy-in/copy-out) only where
that cannot be observed: overlapping arguments, `out` parameters and controls applied twice
keep P4's copy semantics, and `exit` inside a sub-control keeps the writes made before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.switch import V1Switch

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }

// `in` and `inout` naming the same field: the `in` copy must keep the value from the call
control Overlap(in bit<8> before, inout bit<8> value, out bit<8> seen) {
    apply { value = value + 1; seen = before; }
}
// applied twice: each call adds one
control Twice(inout bit<8> v) { apply { v = v + 1; } }
// `out` starts uninitialised in P4; the caller's field is overwritten on return
control Out(out bit<8> o) { apply { o = 9; } }
// writes before `exit` stay
control Exits(inout h_t h) { apply { h.e = 0x55; exit; } }

control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Overlap() overlap;
    Twice() twice;
    Out() out_ctl;
    Exits() exits;
    apply {
        sm.egress_spec = 1;
        overlap.apply(hdr.h.a, hdr.h.a, hdr.h.b);
        twice.apply(hdr.h.c);
        twice.apply(hdr.h.c);
        out_ctl.apply(hdr.h.d);
        exits.apply(hdr.h);
        hdr.h.e = 0xEE;  // not reached
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def switch(tmp_path_factory: pytest.TempPathFactory) -> V1Switch:
    path: Path = tmp_path_factory.mktemp("alias") / "alias.p4"
    path.write_text(PROGRAM)
    return V1Switch(load_pipeline(path))


def test_copy_semantics_where_observable(switch: V1Switch) -> None:
    out = switch.process(0, bytes([10, 0, 20, 0, 0]))
    assert out == [(1, bytes([11, 10, 22, 9, 0x55]))]
