"""P4Info details checked against p4c's serializer rules (issue 19).

Each test compiles a small program written for the case and compares fragments of the
P4Info with what p4c's control-plane code (p4RuntimeSerializer.cpp, flattenHeader.cpp,
typeSpecConverter.cpp, p4RuntimeArchStandard.cpp) produces for it: ids, names, aliases,
annotations, field ids, widths and type names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.frontend.p4info import jenkins_one_at_a_time

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
"""

# A V1Switch around an ingress body; {decls} go at top level, {ingress} into the control.
SKELETON = """
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t e; }
struct M { bit<32> x; bit<16> y; }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.e); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
{ingress}
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out pk, in H h) { apply { pk.emit(h.e); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compile_source(tmp_path: Path, decls: str, ingress: str = "apply {}") -> p4info_pb2.P4Info:
    path = tmp_path / "prog.p4"
    path.write_text(PRELUDE + decls + SKELETON.replace("{ingress}", ingress))
    return compile_file(path, CompileOptions()).p4info


def p4c_id(prefix: int, name: str) -> int:
    return (prefix << 24) | (jenkins_one_at_a_time(name.encode()) & 0xFFFFFF)


def by_name(entities, name: str):
    for e in entities:
        if e.preamble.name == name:
            return e
    raise AssertionError(f"{name} not in {[e.preamble.name for e in entities]}")


def metadata_rows(header) -> list[tuple]:
    return [
        (m.id, m.name, m.bitwidth, list(m.annotations), m.type_name.name) for m in header.metadata
    ]


# --------------------------------------------------------------------------------------------
# Controller packet metadata


CONTROLLER_HEADERS = """
@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)
type bit<9> port_id_t;
@p4runtime_translation("example.org/name", string)
type bit<16> named_t;
typedef bit<9> port_td_t;
typedef port_id_t port_alias_t;
enum bit<8> Reason { LEARN = 1, TTL = 2 }

@brief("sent to the controller") @description("one per punted packet")
@my_anno("v") @my_struct[level = 1]
@controller_header("packet_in")
header packet_in_t {
    port_id_t ingress_port;
    @id(7) bit<1> spare;
    @name("renamed") bit<8> orig;
    Reason reason;
    port_td_t plain;
    port_alias_t aliased;
    @padding @brief("not a doc field") bit<4> pad;
    named_t who;
}

@controller_header("packet_out") @name("cpu_out_t") @id(0x10)
header packet_out_t {
    @hidden bit<9> hidden_port;
    bit<7> pad;
}
"""


def test_controller_header_preamble(tmp_path: Path) -> None:
    p4info = compile_source(tmp_path, CONTROLLER_HEADERS)
    pin = by_name(p4info.controller_packet_metadata, "packet_in")
    # the id hashes the header type's name; name and alias are the annotation's string
    assert pin.preamble.id == p4c_id(0x04, "packet_in_t")
    assert pin.preamble.alias == "packet_in"
    # annotations as written (the @controller_header one included); @brief/@description
    # become the doc; structured annotations are kept apart
    assert list(pin.preamble.annotations) == ['@my_anno("v")', '@controller_header("packet_in")']
    assert pin.preamble.doc.brief == "sent to the controller"
    assert pin.preamble.doc.description == "one per punted packet"
    assert pin.preamble.structured_annotations[0].name == "my_struct"
    pout = by_name(p4info.controller_packet_metadata, "packet_out")
    # @id(0x10) gets the controller-header prefix
    assert pout.preamble.id == 0x04000010


def test_controller_header_metadata_fields(tmp_path: Path) -> None:
    p4info = compile_source(tmp_path, CONTROLLER_HEADERS)
    pin = by_name(p4info.controller_packet_metadata, "packet_in")
    # field ids: @id values first, then 1, 2, ... skipping taken ones (p4c's
    # FieldIdAllocator); @name renames the field; a translated `type` has its controller
    # width (0 for a string) and a type_name, a typedef is seen through, a serializable
    # enum has its width and no type_name; @brief is not a doc on metadata
    assert metadata_rows(pin) == [
        (1, "ingress_port", 32, [], "port_id_t"),
        (7, "spare", 1, [], ""),
        (2, "renamed", 8, [], ""),
        (3, "reason", 8, [], ""),
        (4, "plain", 9, [], ""),
        (5, "aliased", 32, [], "port_id_t"),
        (6, "pad", 4, ["@padding"], ""),
        (8, "who", 0, [], "named_t"),
    ]
    # a @hidden field is left out but keeps its id slot
    pout = by_name(p4info.controller_packet_metadata, "packet_out")
    assert metadata_rows(pout) == [(2, "pad", 7, [], "")]
    # the user types the fields name are described in type_info
    assert set(p4info.type_info.new_types) == {"port_id_t", "named_t"}
    assert p4info.type_info.new_types["named_t"].translated_type.HasField("sdn_string")
    assert p4info.type_info.serializable_enums["Reason"].underlying_type.bitwidth == 8


def test_controller_header_with_struct_field_is_flattened(tmp_path: Path) -> None:
    decls = """
struct inner_t { @id(9) bit<3> x; @padding bit<5> y; }
@controller_header("packet_in")
header packet_in_t {
    @name("renamed") bit<8> first;
    @my_anno(1) inner_t nested;
}
"""
    p4info = compile_source(tmp_path, decls)
    pin = by_name(p4info.controller_packet_metadata, "packet_in")
    # FlattenHeader: leaves named by their dotted path (which replaces @name), annotations of
    # the enclosing fields merged in, the inner @id used for the id
    assert metadata_rows(pin) == [
        (1, "first", 8, [], ""),
        (9, "nested.x", 3, ["@my_anno(1)"], ""),
        (2, "nested.y", 5, ["@padding", "@my_anno(1)"], ""),
    ]


def test_controller_header_field_of_unsupported_type(tmp_path: Path) -> None:
    decls = """
@controller_header("packet_in")
header packet_in_t {
    bit<7> port;
    bool flag;
}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, decls)
    message = str(info.value)
    assert "prog.p4(8): error:" in message and "field flag has type bool" in message

