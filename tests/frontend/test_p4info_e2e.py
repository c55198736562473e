"""End-to-end P4Info: compile programs and check the names and ids p4c would give them.

The id facts come from p4c's own goldens (basic_routing-bmv2: ingress.bd, egress.rewrite_mac,
NoAction); the structural rules are the ones documented in docs/frontend.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header vlan_t { bit<16> tci; bit<16> type; }
@controller_header("packet_in") header packet_in_t { bit<9> port; bit<7> pad; }
struct learn_t { bit<48> src; bit<9> port; }
struct H { packet_in_t cpu; eth_t eth; vlan_t vlan; }
struct M { bit<16> bd; bit<12> vrf; }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control ingress(inout H h, inout M m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) bd_hits;
    counter(32w64, CounterType.bytes) port_bytes;
    register<bit<32>>(32w128) seen;
    action set_bd(bit<16> bd) { m.bd = bd; }
    @name("pick") action choose(bit<9> port) { sm.egress_spec = port; }
    table bd {
        key = { h.eth.dst: exact; h.vlan.isValid(): exact @name("vlan_valid"); h.eth.type[7:0]: ternary; }
        actions = { set_bd; }
        counters = bd_hits;
        size = 65536;
    }
    table fwd {
        key = { m.bd: exact; h.vlan.isValid(): exact; }
        actions = { choose; @defaultonly NoAction; }
        @name("fwd_profile") implementation = action_profile(32w128);  // p4c needs the name
    }
    apply {
        bd.apply();
        fwd.apply();
        port_bytes.count((bit<32>)sm.ingress_port);
        seen.write(0, 1);
        digest<learn_t>(1, {h.eth.src, sm.ingress_port});
    }
}
control egress(inout H h, inout M m, inout standard_metadata_t sm) {
    action rewrite(bit<48> smac) { h.eth.src = smac; }
    table rewrite_mac { key = { sm.egress_port: exact; } actions = { rewrite; NoAction; } default_action = NoAction(); }
    apply { rewrite_mac.apply(); }
}
control C(inout H h, inout M m) { apply {} }
control D(packet_out pk, in H h) { apply { pk.emit(h.cpu); pk.emit(h.eth); } }
V1Switch(P(), V(), ingress(), egress(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def p4info(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("e2e") / "prog.p4"
    path.write_text(PROGRAM)
    return compile_file(path, CompileOptions()).p4info


def by_name(entities, name: str):
    for e in entities:
        if e.preamble.name == name:
            return e
    raise AssertionError(f"{name} not in {[e.preamble.name for e in entities]}")


def test_ids_match_p4c(p4info) -> None:
    assert by_name(p4info.tables, "ingress.bd").preamble.id == 48392551
    assert by_name(p4info.tables, "egress.rewrite_mac").preamble.id == 40309161
    assert by_name(p4info.actions, "NoAction").preamble.id == 21257015


def test_names_aliases_and_keys(p4info) -> None:
    bd = by_name(p4info.tables, "ingress.bd")
    assert bd.preamble.alias == "bd"
    assert [(f.id, f.name, f.bitwidth) for f in bd.match_fields] == [
        (1, "h.eth.dst", 48),
        (2, "vlan_valid", 1),
        (3, "h.eth.type[7:0]", 8),
    ]
    assert bd.size == 65536
    fwd = by_name(p4info.tables, "ingress.fwd")
    assert fwd.match_fields[1].name == "h.vlan.$valid$"
    # @name on an action replaces its local name
    assert by_name(p4info.actions, "ingress.pick").params[0].name == "port"


def test_implicit_noaction_is_defaultonly(p4info) -> None:
    bd = by_name(p4info.tables, "ingress.bd")
    noaction = [r for r in bd.action_refs if r.id == 21257015]
    assert len(noaction) == 1 and noaction[0].scope == noaction[0].DEFAULT_ONLY


def test_externs_are_linked(p4info) -> None:
    bd = by_name(p4info.tables, "ingress.bd")
    hits = by_name(p4info.direct_counters, "ingress.bd_hits")
    assert list(bd.direct_resource_ids) == [hits.preamble.id]
    assert hits.direct_table_id == bd.preamble.id
    assert by_name(p4info.counters, "ingress.port_bytes").size == 64
    assert by_name(p4info.registers, "ingress.seen").type_spec.bitstring.bit.bitwidth == 32
    fwd = by_name(p4info.tables, "ingress.fwd")
    assert fwd.implementation_id >> 24 == 0x11
    profile = by_name(p4info.action_profiles, "fwd_profile")
    assert fwd.implementation_id == profile.preamble.id


def test_controller_header_and_digest(p4info) -> None:
    cpm = by_name(p4info.controller_packet_metadata, "packet_in")
    assert [m.name for m in cpm.metadata] == ["port", "pad"]
    assert by_name(p4info.digests, "learn_t").preamble.id >> 24 == 0x17


def test_wrong_id_prefix_is_reported_at_its_line(tmp_path: Path) -> None:
    src = PROGRAM.replace("table rewrite_mac", "@id(0x01000001) table rewrite_mac")
    path = tmp_path / "p.p4"
    path.write_text(src)
    with pytest.raises(CompileError) as info:
        compile_file(path, CompileOptions())
    assert (
        info.value.pos.line
        == src.splitlines().index(next(line for line in src.splitlines() if "@id(" in line)) + 1
    )
