"""V1Switch services around the pipeline: log_msg text, digests, per-packet traces, faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.runtime import P4RuntimeFault
from p4reduce.switch.interp.switch import V1Switch

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct learn_t { bit<8> a; bit<9> port; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        log_msg("a={} b={}", {hdr.h.a, hdr.h.b});
        log_msg("plain");
        if (hdr.h.a == 7) { digest<learn_t>(1, {hdr.h.a, sm.ingress_port}); }
        assume(hdr.h.b != 0xDEAD);
        sm.egress_spec = 2;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def switch(tmp_path_factory: pytest.TempPathFactory) -> V1Switch:
    path: Path = tmp_path_factory.mktemp("misc") / "misc.p4"
    path.write_text(PROGRAM)
    return V1Switch(load_pipeline(path), trace=True)


def test_log_msg_formats_values(switch: V1Switch) -> None:
    switch.process(3, bytes([5, 0x01, 0x02]))
    assert switch.log_messages[-2:] == ["a=5 b=258", "plain"]
    assert "log_msg: a=5 b=258" in switch.last_trace


def test_digest_is_collected_with_its_type_name(switch: V1Switch) -> None:
    before = len(switch.digests)
    switch.process(4, bytes([7, 0, 0]))
    assert switch.digests[before:] == [("learn_t", (7, 4))]


def test_trace_says_where_the_packet_went(switch: V1Switch) -> None:
    out = switch.process(1, bytes([1, 2, 3]))
    assert out == [(2, bytes([1, 2, 3]))]
    assert switch.last_trace[-1] == "sent on port 2 (3 bytes)"


def test_failed_assume_is_a_fault_with_the_source_position(switch: V1Switch) -> None:
    with pytest.raises(P4RuntimeFault) as info:
        switch.process(1, bytes([1, 0xDE, 0xAD]))
    assert info.value.where.endswith("misc.p4(16)")
    assert "assume failed" in str(info.value)


def test_value_set_of_a_struct_matches_a_select_on_two_fields(tmp_path: Path) -> None:
    # bad/value_set_tuple.p4 with a struct for the tuple (p4c refuses a value_set of a tuple)
    bad = Path(__file__).parents[1] / "frontend/programs/bad/value_set_tuple.p4"
    program = tmp_path / "value_set_struct.p4"
    program.write_text(
        bad.read_text()
        .replace("value_set<tuple<bit<8>, bit<8>>>(4)", "value_set<pair_t>(4)")
        .replace("struct H {", "struct pair_t { bit<8> a; bit<8> b; }\nstruct H {")
    )
    sw = V1Switch(load_pipeline(program))
    (vs,) = sw.pipeline.value_sets.values()
    assert sw.process(0, bytes([1, 2])) == [(0, bytes([1, 2]))]
    vs.add([(1, 0xFF), (2, 0xFF)])
    assert sw.process(0, bytes([1, 2])) == [(0, bytes([0xEE, 2]))]
    assert sw.process(0, bytes([1, 3])) == [(0, bytes([1, 3]))]


def test_runtime_division_by_zero_is_a_fault_not_a_crash(tmp_path: Path) -> None:
    program = tmp_path / "div.p4"
    program.write_text(
        PROGRAM.replace("sm.egress_spec = 2;", "hdr.h.a = hdr.h.a / (bit<8>)hdr.h.b;")
    )
    # a run-time divisor: p4c refuses it for BMv2; the interpreter runs it with the option
    sw = V1Switch(load_pipeline(program, CompileOptions(runtime_divmod=True)))
    assert sw.process(0, bytes([9, 0, 2])) == [(0, bytes([4, 0, 2]))]
    with pytest.raises(P4RuntimeFault, match="division by zero"):
        sw.process(0, bytes([9, 0, 0]))
