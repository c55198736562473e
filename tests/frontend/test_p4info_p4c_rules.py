"""P4Info details checked against p4c's serializer rules (issue 19).

Each test compiles a small program written for the case and compares fragments of the
P4Info with what p4c's control-plane code (p4RuntimeSerializer.cpp, flattenHeader.cpp,
typeSpecConverter.cpp, p4RuntimeArchStandard.cpp) produces for it: ids, names, aliases,
annotations, field ids, widths and type names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.frontend.p4info import jenkins_one_at_a_time

from p4reduce.proto import p4info_pb2

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
"""

# A V1Switch around an ingress body; {decls} go at top level, {ingress} into the control.
SKELETON = """
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t e; }
struct M { bit<32> x; bit<16> y; }
{after}
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


def compile_source(
    tmp_path: Path, decls: str, ingress: str = "apply {}", after: str = ""
) -> p4info_pb2.P4Info:
    """{decls} go before the skeleton's types, {after} after them, {ingress} into I."""
    path = tmp_path / "prog.p4"
    path.write_text(
        PRELUDE + decls + SKELETON.replace("{ingress}", ingress).replace("{after}", after)
    )
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


# --------------------------------------------------------------------------------------------
# Meters (and the counters and registers that share their rules)


METERS = """
type bit<32> slot_t;
"""

METER_INGRESS = """
    @brief("per flow") @my_meter("x") @id(0x33)
    direct_meter<bit<2>>(MeterType.bytes) flow_meter;
    direct_meter<bit<2>>(MeterType.packets) pkt_meter;
    direct_meter<bit<2>>(MeterType.packets) dead_meter;
    @name("port_meter") meter(32w64, MeterType.packets) pm;
    meter<slot_t>(32w16, MeterType.bytes) typed_meter;
    counter<slot_t>(32w8, CounterType.packets_and_bytes) typed_counter;
    register<bit<8>, slot_t>(32w4) typed_register;
    action color_bytes() { flow_meter.read(m.x[1:0]); }
    action color_packets() { pkt_meter.read(m.x[3:2]); }
    action color_dead() { dead_meter.read(m.x[5:4]); }
    table by_dst { key = { h.e.d: exact; } actions = { color_bytes; } meters = flow_meter; }
    table by_src { key = { h.e.s: exact; } actions = { color_packets; } meters = pkt_meter; }
    table never_applied { key = { h.e.s: exact; } actions = { color_dead; } meters = dead_meter; }
    table in_place {
        key = { h.e.t: exact; }
        actions = { NoAction; }
        @name("inline_meter") @note("kept") meters = direct_meter<bit<2>>(MeterType.bytes);
    }
    apply {
        by_dst.apply();
        by_src.apply();
        in_place.apply();
        bit<2> c;
        pm.execute_meter(32w1, c);
        typed_meter.execute_meter((slot_t)1, c);
        typed_counter.count((slot_t)2);
        typed_register.write((slot_t)3, 8w1);
    }
"""


def compile_meters(tmp_path: Path) -> p4info_pb2.P4Info:
    path = tmp_path / "prog.p4"
    path.write_text(
        "#define V1MODEL_VERSION 20200408\n"
        + PRELUDE
        + METERS
        + SKELETON.replace("{ingress}", METER_INGRESS).replace("{after}", "")
    )
    return compile_file(path, CompileOptions()).p4info


def test_direct_meters(tmp_path: Path) -> None:
    p4info = compile_meters(tmp_path)
    unit = p4info_pb2.MeterSpec
    flow = by_name(p4info.direct_meters, "I.flow_meter")
    # @id gets the direct-meter prefix 0x15; annotations as written, @brief as doc
    assert flow.preamble.id == 0x15000033
    assert flow.preamble.alias == "flow_meter"
    assert list(flow.preamble.annotations) == ['@my_meter("x")']
    assert flow.preamble.doc.brief == "per flow"
    assert flow.spec.unit == unit.BYTES
    by_dst = by_name(p4info.tables, "I.by_dst")
    assert flow.direct_table_id == by_dst.preamble.id
    assert list(by_dst.direct_resource_ids) == [flow.preamble.id]
    pkt = by_name(p4info.direct_meters, "I.pkt_meter")
    assert pkt.preamble.id == p4c_id(0x15, "I.pkt_meter")
    assert pkt.spec.unit == unit.PACKETS
    assert pkt.direct_table_id == by_name(p4info.tables, "I.by_src").preamble.id
    # one constructed in the table: named by the property's @name, with its annotations
    inline = by_name(p4info.direct_meters, "inline_meter")
    assert list(inline.preamble.annotations) == ['@note("kept")']
    assert inline.direct_table_id == by_name(p4info.tables, "I.in_place").preamble.id
    # a direct meter exists in P4Info only through a table: the table p4c's front end
    # removes (never applied) takes its meter along
    names = {m.preamble.name for m in p4info.direct_meters}
    assert names == {"I.flow_meter", "I.pkt_meter", "inline_meter"}
    assert not p4info.meters or all(m.preamble.name != "I.dead_meter" for m in p4info.meters)


def test_indirect_meters_counters_registers_with_index_types(tmp_path: Path) -> None:
    p4info = compile_meters(tmp_path)
    pm = by_name(p4info.meters, "I.port_meter")
    assert pm.preamble.id == p4c_id(0x14, "I.port_meter")
    assert pm.size == 64 and pm.spec.unit == p4info_pb2.MeterSpec.PACKETS
    assert not pm.HasField("index_type_name")
    # v1model 20200408: the index type parameter is named when it is a user `type`
    typed = by_name(p4info.meters, "I.typed_meter")
    assert typed.size == 16 and typed.index_type_name.name == "slot_t"
    counter = by_name(p4info.counters, "I.typed_counter")
    assert counter.index_type_name.name == "slot_t"
    assert counter.spec.unit == p4info_pb2.CounterSpec.BOTH
    register = by_name(p4info.registers, "I.typed_register")
    assert register.index_type_name.name == "slot_t"
    assert register.type_spec.bitstring.bit.bitwidth == 8
    spec = p4info.type_info.new_types["slot_t"]
    assert spec.original_type.bitstring.bit.bitwidth == 32


# --------------------------------------------------------------------------------------------
# Digests of any type


DIGEST_DECLS = """
typedef bit<16> port_word_t;
@name("learned_t") struct learn_t { bit<48> src; bit<9> port; }
"""

DIGEST_SUB = """
control Sub(inout H h, inout M m) {
    action sub_learn() { digest<bit<8>>(11, h.e.t[7:0]); }
    table sub_t { key = { h.e.d: exact; } actions = { sub_learn; } }
    apply {
        sub_t.apply();
        digest(12, m.y);
    }
}
"""

DIGEST_INGRESS = """
    action unused_action() { digest<bit<4>>(99, h.e.t[3:0]); }
    action learn_first() { digest(1, m.x); }
    Sub() sub;
    action learn_second() { digest<learn_t>(2, {h.e.s, sm.ingress_port}); }
    table t {
        key = { h.e.d: exact; }
        actions = { learn_first; learn_second; }
    }
    apply {
        digest(3, {h.e.d, true});
        t.apply();
        sub.apply(h, m);
        digest<port_word_t>(4, m.y);
        digest(6, {h.e.s, sm.ingress_port});
    }
"""


def test_digest_names_and_order(tmp_path: Path) -> None:
    p4info = compile_source(tmp_path, DIGEST_DECLS, DIGEST_INGRESS, DIGEST_SUB)
    digests = [(d.preamble.name, d.preamble.id, d.preamble.alias) for d in p4info.digests]
    # p4c: the control's actions in declaration order (a sub-control's where it is
    # declared), then its apply body (a sub-control's body where it is applied); named
    # types give their (@name) name, other types digest_N in that order; an unused action
    # is not there
    names = [name for name, _, _ in digests]
    assert names == [
        "digest_0",  # learn_first: bit<32>
        "digest_1",  # Sub.sub_learn: bit<8>
        "learned_t",  # learn_second: the struct's @name
        "digest_2",  # {h.e.d, true}: tuple<bit<48>, bool>
        "digest_3",  # Sub's body: m.y, bit<16>
        "port_word_t",  # a typedef written as the type argument
        "digest_4",  # a list expression without a type argument: a tuple
    ]
    for name, id_, alias in digests:
        assert id_ == p4c_id(0x17, name) and alias == name
    specs = {d.preamble.name: d.type_spec for d in p4info.digests}
    assert specs["learned_t"].HasField("struct")
    assert specs["port_word_t"].bitstring.bit.bitwidth == 16
    tup = specs["digest_2"].tuple.members
    assert tup[0].bitstring.bit.bitwidth == 48 and tup[1].HasField("bool")
    assert [m.bitstring.bit.bitwidth for m in specs["digest_4"].tuple.members] == [48, 9]


def test_digest_of_a_header_is_refused_at_the_header(tmp_path: Path) -> None:
    # p4c-bm2-ss 1.2.5's v1model converter: only a header is refused (bit<W>, tuples, typedefs
    # and structs above are accepted), at the header's declaration
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, "", "apply { digest(5, h.e); }")
    assert (
        info.value.format()
        .splitlines()[0]
        .endswith(
            "error: header eth_t: expected a struct type. Are you using an up-to-date v1model.p4?"
        )
    )


def test_digest_of_the_same_named_type_is_one_entry(tmp_path: Path) -> None:
    ingress = """
    apply {
        digest<bit<32>>(1, m.x);
        digest<key_t>(2, {h.e.d});
        digest<key_t>(3, {h.e.s});
        digest<bit<32>>(4, m.x);
    }
"""
    p4info = compile_source(tmp_path, "struct key_t { bit<48> a; }\n", ingress)
    # each unnamed call is its own digest, named calls of one type share theirs
    assert [d.preamble.name for d in p4info.digests] == ["digest_0", "key_t", "digest_1"]


def test_digest_of_an_anonymous_struct_is_an_error(tmp_path: Path) -> None:
    ingress = """
    apply {
        digest(1, {a = m.x, b = m.y});
    }
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, "", ingress)
    assert "anonymous struct" in str(info.value)


# --------------------------------------------------------------------------------------------
# What p4c's front end removes, inlines or renames


REMOVED_DECLS = """
action global_helper() { }
"""

REMOVED_SUB = """
control Sub(inout H h, inout M m, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    action helper(bit<16> v) { m.y = v; }
    action set_x(bit<32> v) { m.x = v; helper(v[15:0]); }
    action only_in_dead(bit<16> v) { m.y = v; }
    action port(@name("egress_port") bit<9> p) { sm.egress_spec = p; }
    table live {
        key = { h.e.d: exact; h.e.s: selector; }
        actions = { set_x; port; }
        implementation = sel;
    }
    table dead {
        key = { h.e.d: exact; h.e.s: selector; }
        actions = { only_in_dead; }
        implementation = sel;
    }
    apply { live.apply(); }
}
"""

REMOVED_INGRESS = """
    Sub() s1;
    Sub() unused_instance;
    action direct() { global_helper(); }
    apply {
        s1.apply(h, m, sm);
        direct();
    }
"""


def test_front_end_removals_and_inlining(tmp_path: Path) -> None:
    p4info = compile_source(tmp_path, REMOVED_DECLS, REMOVED_INGRESS, REMOVED_SUB)
    # actions called only from other actions are inlined and gone (global or local), so are
    # the actions of a removed table, and a control instance never applied
    assert [a.preamble.name for a in p4info.actions] == [
        "NoAction",
        "I.s1.set_x",
        "I.s1.port",
        "I.direct",
    ]
    assert [t.preamble.name for t in p4info.tables] == ["I.s1.live"]
    # the selector lists only the tables that remain
    (sel,) = p4info.action_profiles
    assert sel.preamble.name == "I.s1.sel"
    assert list(sel.table_ids) == [p4info.tables[0].preamble.id]
    # an action parameter is named by its @name
    port = by_name(p4info.actions, "I.s1.port")
    assert [(p.id, p.name, p.bitwidth) for p in port.params] == [(1, "egress_port", 9)]


def test_value_set_struct_fields_keep_ids_names_and_annotations(tmp_path: Path) -> None:
    decls = """
struct vs_key_t {
    @match(ternary) bit<16> t;
    @id(5) @brief("low half") @note("n") bit<8> lo;
    @name("renamed") bit<8> hi;
}
"""
    path = tmp_path / "prog.p4"
    src = PRELUDE + decls + SKELETON.replace("{ingress}", "apply {}").replace("{after}", "")
    src = src.replace(
        "state start { pk.extract(h.e); transition accept; }",
        "value_set<vs_key_t>(4) vs;\n"
        "    state start { pk.extract(h.e);\n"
        "        transition select(h.e.t, h.e.d[7:0], h.e.d[15:8]) { vs: accept; default: accept; } }",
    )
    path.write_text(src)
    p4info = compile_file(path, CompileOptions()).p4info
    (vs,) = p4info.value_sets
    rows = [(m.id, m.name, m.bitwidth, list(m.annotations), m.doc.brief) for m in vs.match]
    # p4c: @id first then 1, 2, ...; @name renames; annotations other than @match kept
    assert rows == [
        (1, "t", 16, [], ""),
        (5, "lo", 8, ['@note("n")'], "low half"),
        (2, "renamed", 8, [], ""),
    ]
    assert vs.match[0].match_type == p4info_pb2.MatchField.TERNARY
