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


def test_ids_beyond_64_bits_are_the_writes_error() -> None:
    """The engine keys members and groups by 64-bit ids (P4Runtime's are 32-bit): a larger
    id is refused as the write's error, and the profile is left as it was."""
    from p4reduce.switch.interp.externs import ExternError

    root = Path(__file__).resolve().parents[2]
    sw = make_switch(load_pipeline(root / "bmv2_tests" / "profile_selector.p4"), "native")
    assert sw.engine == "native"
    prof = sw.pipeline.profiles["ingress.sel"]
    prof.add_member((1 << 64) - 1, "ingress.pick", [1, 1])
    for bad in (1 << 64, -1):
        with pytest.raises(ExternError, match=r"member id .* is not in \[0, 2\^64\)"):
            prof.add_member(bad, "ingress.pick", [1, 1])
        with pytest.raises(ExternError, match="group id"):
            prof.set_group(bad, [(1 << 64) - 1])
    assert list(prof.members) == [(1 << 64) - 1] and prof.groups == {}
    sw.close()
    assert list(prof.members) == [(1 << 64) - 1]  # back in Python, state kept
