"""Constructs of public production v1model programs (PINS/SAI, SONiC DASH, ONF UP4), each in a
small program of our own: it compiles, loads into the embedded switch and forwards a packet.

The programs live in ``programs/good/`` (so the corpus test also checks that they compile and
yield P4Info); here each one is run once through the interpreter with an Ethernet frame and the
port it must come out of.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.switch import V1Switch

GOOD = Path(__file__).parent / "programs" / "good"

FRAME = bytes.fromhex(
    "0000000000020000000000010800"  # Ethernet: dst, src, IPv4
    "4500002800010000401100000a0000010a000002"  # IPv4 (UDP), 10.0.0.1 -> 10.0.0.2
    "1f901f900014000000000000000000000000000000000000"  # UDP 8080 -> 8080, payload
)

# program -> the egress port the frame must leave on
RUNS: dict[str, int] = {
    "annotation_multiline_string.p4": 2,
    "enum_serializable_implicit.p4": 3,
    "package_named_arguments_reordered.p4": 5,
    "empty_struct_initializer_argument.p4": 3,
    "table_implementation_inline.p4": 6,
    "struct_valued_expressions.p4": 6,
    "header_union_stack.p4": 4,
    "cast_to_int.p4": 7,
    "generic_struct_header.p4": 10,
    "extern_user_declared_unused.p4": 9,
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_program_runs_in_the_switch(name: str) -> None:
    switch = V1Switch(load_pipeline(GOOD / name))
    out = switch.process(1, FRAME)
    assert [port for port, _ in out] == [RUNS[name]]


def test_named_package_arguments_load_when_pushed_over_p4runtime(tmp_path: Path) -> None:
    """The compiled JSON and P4Info of a V1Switch with reordered named arguments make a
    pipeline a SetForwardingPipelineConfig accepts, and it forwards like the source does."""
    from p4reduce.switch.frontend.cli import main as p4c_main
    from p4reduce.switch.p4runtime.pipeline_config import build_state

    from p4reduce.proto import p4runtime_pb2

    name = "package_named_arguments_reordered"
    info = tmp_path / "p.txtpb"
    assert (
        p4c_main([str(GOOD / f"{name}.p4"), "-o", str(tmp_path), "--p4runtime-files", str(info)])
        == 0
    )
    from google.protobuf import text_format

    config = p4runtime_pb2.ForwardingPipelineConfig()
    text_format.Parse(info.read_text(), config.p4info)
    config.p4_device_config = (tmp_path / f"{name}.json").read_bytes()
    state = build_state(config)
    assert [port for port, _ in state.switch.process(1, FRAME)] == [5]


INLINE_DIRECT_COUNTER = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    table t {
        key = { hdr.h.a : exact; }
        actions = { NoAction; }
        counters = direct_counter(CounterType.packets);
    }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_an_unsupported_construct_is_refused_at_load_with_its_line(tmp_path: Path) -> None:
    """What the front end accepts but the switch cannot run is refused at load with
    FILE(LINE): error: naming the construct, never an internal error."""
    path = tmp_path / "inline_counter.p4"
    path.write_text(INLINE_DIRECT_COUNTER)
    with pytest.raises(Exception) as info:
        load_pipeline(path)
    assert f"{path}(14): error:" in str(info.value)
    assert "counters" in str(info.value) and "not supported" in str(info.value)


def test_p4info_leaves_out_what_p4c_removes_as_unused() -> None:
    from p4reduce.switch.frontend.compiler import CompileOptions, compile_file

    result = compile_file(
        str(GOOD / "p4info_unused_declarations.p4"),
        CompileOptions(include_dirs=[], defines={}, undefines=[]),
    )
    p4info = result.p4info
    assert [t.preamble.name for t in p4info.tables] == ["MyIngress.t"]
    assert sorted(a.preamble.name for a in p4info.actions) == ["MyIngress.outer", "NoAction"]
    assert [c.preamble.name for c in p4info.counters] == ["MyIngress.spare"]
