"""P4Info generation against p4c: ids, aliases, field ids and real p4c golden files.

The golden files in p4info_golden/ are p4c's own output for p4c sample programs; each test
builds the ControlPlaneModel the semantic passes would produce for that sample by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from p4reduce.switch.frontend.cpmodel import (
    ControlPlaneModel,
    CPAction,
    CPActionProfile,
    CPActionRef,
    CPControllerHeader,
    CPCounter,
    CPDigest,
    CPEnum,
    CPEnumMember,
    CPHeaderField,
    CPMatchField,
    CPMeter,
    CPNewType,
    CPParam,
    CPRegister,
    CPStruct,
    CPTable,
    CPTypeSpecField,
    CPValueSet,
)
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.frontend.p4info import (
    ACTION,
    TABLE,
    SymbolTable,
    build_p4info,
    collect_symbols,
    jenkins_one_at_a_time,
    p4info_to_text,
)

from p4reduce.proto import p4info_pb2

GOLDEN = Path(__file__).parent / "p4info_golden"

NO_ACTION = CPAction("NoAction", annotations=['noWarn("unused")'])
DEFAULT_ONLY = ["defaultonly"]


# --------------------------------------------------------------------------------------------
# Helpers


def _id(kind: int, name: str) -> int:
    return (kind << 24) | (jenkins_one_at_a_time(name.encode()) & 0xFFFFFF)


def _repeated(descriptor: FieldDescriptor) -> bool:
    """protobuf >= 5.28 says ``is_repeated``; 7 dropped ``label``, which older releases need."""
    flag = getattr(descriptor, "is_repeated", None)
    return flag if flag is not None else descriptor.label == FieldDescriptor.LABEL_REPEATED


def _canonical(message) -> None:
    """Sort every repeated field (children first) so comparisons ignore ordering."""
    for descriptor, value in message.ListFields():
        if descriptor.type != FieldDescriptor.TYPE_MESSAGE:
            if _repeated(descriptor):
                value.sort()
            continue
        if descriptor.message_type.GetOptions().map_entry:
            if descriptor.message_type.fields_by_name["value"].message_type:
                for item in value.values():
                    _canonical(item)
            continue
        if not _repeated(descriptor):
            _canonical(value)
            continue
        for item in value:
            _canonical(item)
        items = sorted(value, key=lambda m: m.SerializeToString(deterministic=True))
        copies = [type(m)() for m in items]
        for copy, item in zip(copies, items, strict=True):
            copy.CopyFrom(item)
        del value[:]
        value.extend(copies)


def _golden(name: str) -> str:
    return (GOLDEN / f"{name}.p4info.txtpb").read_text()


def _without_leading_comments(text: str) -> str:
    """Drop our provenance comment lines; p4c's own '# proto-...' lines stay."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#") and not lines[0].startswith("# proto-"):
        lines.pop(0)
    return "".join(lines)


def _assert_matches_golden(model: ControlPlaneModel, name: str) -> None:
    text = _golden(name)
    expected = text_format.Parse(text, p4info_pb2.P4Info())
    actual = build_p4info(model)
    # Byte-identical text when the model lists entities in p4c's order ...
    assert p4info_to_text(actual) == _without_leading_comments(text)
    # ... and equal up to ordering in any case (the actual contract).
    _canonical(expected)
    _canonical(actual)
    assert actual == expected


def _table(name: str, keys, actions, **kwargs) -> CPTable:
    refs = [CPActionRef(a) if isinstance(a, str) else a for a in actions]
    return CPTable(name, match_fields=list(keys), actions=refs, **kwargs)


# --------------------------------------------------------------------------------------------
# Ids


def test_known_ids():
    assert _id(TABLE, "ingress.bd") == 48392551
    assert _id(ACTION, "NoAction") == 21257015
    assert _id(TABLE, "egress.rewrite_mac") == 40309161


def test_jenkins_hash_reference_values():
    assert jenkins_one_at_a_time(b"") == 0
    # Bob Jenkins' published value for "a" and the classic test string.
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442
    assert jenkins_one_at_a_time(b"The quick brown fox jumps over the lazy dog") == 0x519E91F5


def _colliding_names() -> tuple[str, str]:
    """Two table names whose hashes agree on the low 24 bits (birthday search)."""
    seen: dict[int, str] = {}
    for i in range(200_000):
        name = f"c.t{i}"
        low = jenkins_one_at_a_time(name.encode()) & 0xFFFFFF
        if low in seen:
            return seen[low], name
        seen[low] = name
    raise AssertionError("no collision found")


def test_linear_probing_in_sorted_name_order():
    first, second = sorted(_colliding_names(), key=str.encode)
    for order in ([first, second], [second, first]):  # declaration order must not matter
        model = ControlPlaneModel(tables=[CPTable(n) for n in order])
        symbols = collect_symbols(model)
        assert symbols.id_of(TABLE, first) == _id(TABLE, first)
        assert symbols.id_of(TABLE, second) == _id(TABLE, first) + 1


def test_probing_wraps_within_24_bits():
    symbols = SymbolTable()
    symbols.add(TABLE, "t", explicit_id=0x02FFFFFF)
    symbols._taken.add(0x02000000)
    assert symbols._probe(TABLE, 0xFFFFFFFF) == 0x02000001


def test_explicit_ids_are_reserved_first():
    # An @id that sits on another table's hash slot pushes that table to the next id.
    victim = "ingress.bd"
    model = ControlPlaneModel(
        tables=[CPTable(victim), CPTable("ingress.other", explicit_id=_id(TABLE, victim))]
    )
    symbols = collect_symbols(model)
    assert symbols.id_of(TABLE, "ingress.other") == 48392551
    assert symbols.id_of(TABLE, victim) == 48392552


def test_explicit_id_prefix_added_kept_or_rejected():
    model = ControlPlaneModel(
        tables=[CPTable("a", explicit_id=5), CPTable("b", explicit_id=0x02000006)],
        actions=[CPAction("x", explicit_id=7)],
    )
    symbols = collect_symbols(model)
    assert symbols.id_of(TABLE, "a") == 0x02000005
    assert symbols.id_of(TABLE, "b") == 0x02000006
    assert symbols.id_of(ACTION, "x") == 0x01000007
    with pytest.raises(CompileError, match="wrong 8-bit prefix"):
        collect_symbols(ControlPlaneModel(tables=[CPTable("a", explicit_id=0x01000005)]))
    with pytest.raises(CompileError, match="multiple declarations"):
        collect_symbols(
            ControlPlaneModel(tables=[CPTable("a", explicit_id=5), CPTable("b", explicit_id=5)])
        )


def test_aliases_are_shortest_unique_suffixes_over_all_kinds():
    model = ControlPlaneModel(
        actions=[CPAction("ingress.on_miss"), CPAction("egress.on_miss"), CPAction("d.a.c")],
        tables=[CPTable("e.b.c"), CPTable("x.y")],
        registers=[CPRegister("ingress.y", bitwidth=8, size=1)],
        counters=[CPCounter("a.b", "PACKETS", 1), CPCounter("x.a.b", "PACKETS", 1)],
    )
    symbols = collect_symbols(model)
    assert symbols.alias("ingress.on_miss") == "ingress.on_miss"
    assert symbols.alias("d.a.c") == "a.c"
    assert symbols.alias("e.b.c") == "b.c"
    assert symbols.alias("x.y") == "x.y"  # a register elsewhere ends in ".y" too
    assert symbols.alias("a.b") == "a.b"  # not unique even when complete
    assert symbols.alias("x.a.b") == "x.a.b"


# --------------------------------------------------------------------------------------------
# Details of the message


def test_field_ids_honour_id_annotations_and_selector_slots():
    table = _table(
        "c.t",
        [
            CPMatchField("k.sel", 32, "selector"),
            CPMatchField("k.a", 8, "exact"),
            CPMatchField("k.b", 8, "ternary", annotations=["id(5)"]),
            CPMatchField("k.c", 8, "lpm"),
        ],
        ["c.act"],
    )
    action = CPAction(
        "c.act",
        params=[CPParam("p", 8, annotations=["id(5)"]), CPParam("q", 8), CPParam("r", 8)],
    )
    p4info = build_p4info(ControlPlaneModel(tables=[table], actions=[action]))
    fields = [(f.name, f.id) for f in p4info.tables[0].match_fields]
    # The selector key takes id 1 without being emitted.
    assert fields == [("k.a", 2), ("k.b", 5), ("k.c", 3)]
    # As in p4c, an element with @id still advances the counter: q gets 2, not 1.
    assert [(p.name, p.id) for p in p4info.actions[0].params] == [("p", 5), ("q", 2), ("r", 3)]


def test_annotations_doc_and_structured():
    action = CPAction(
        "c.a",
        explicit_id=3,  # the passes read @id into explicit_id; the annotation itself is dropped
        annotations=[
            'name("c.a")',
            "id(3)",
            'brief("short")',
            'description("long \\"text\\"")',
            'my_anno("x", 1)',
            'structured[k="v", n=2, b=true]',
            "list[1, 0x10]",
        ],
        params=[CPParam("p", 4, annotations=['brief("param")', "foo"])],
    )
    p4info = build_p4info(ControlPlaneModel(actions=[action]))
    preamble = p4info.actions[0].preamble
    assert preamble.id == 0x01000003
    assert list(preamble.annotations) == ['@my_anno("x", 1)']
    assert preamble.doc.brief == "short"
    assert preamble.doc.description == 'long "text"'
    kv = preamble.structured_annotations[0]
    assert kv.name == "structured"
    assert [(p.key, p.value.WhichOneof("value")) for p in kv.kv_pair_list.kv_pairs] == [
        ("k", "string_value"),
        ("n", "int64_value"),
        ("b", "bool_value"),
    ]
    assert [
        e.int64_value for e in preamble.structured_annotations[1].expression_list.expressions
    ] == [
        1,
        16,
    ]
    param = p4info.actions[0].params[0]
    assert list(param.annotations) == ["@foo"] and param.doc.brief == "param"


def test_action_ref_scopes_and_hidden_entities():
    table = _table(
        "c.t",
        [],
        [
            CPActionRef("c.a", annotations=["tableonly"]),
            CPActionRef("NoAction", annotations=DEFAULT_ONLY),
            CPActionRef("c.b", scope="DEFAULT_ONLY"),
        ],
        default_action="NoAction",
    )
    hidden = _table("x.t", [], ["c.a"], annotations=["hidden"])
    model = ControlPlaneModel(
        tables=[table, hidden], actions=[CPAction("c.a"), CPAction("c.b"), NO_ACTION]
    )
    p4info = build_p4info(model)
    assert [t.preamble.name for t in p4info.tables] == ["c.t"]
    refs = p4info.tables[0].action_refs
    assert [r.scope for r in refs] == [
        p4info_pb2.ActionRef.TABLE_ONLY,
        p4info_pb2.ActionRef.DEFAULT_ONLY,
        p4info_pb2.ActionRef.DEFAULT_ONLY,
    ]
    assert list(refs[0].annotations) == ["@tableonly"]
    # The hidden table is not emitted but its name still counts for aliases.
    assert p4info.tables[0].preamble.alias == "c.t"


def test_type_info_only_when_p4c_would_touch_it():
    only_value_set = ControlPlaneModel(
        value_sets=[CPValueSet("p.vs", 4, [CPMatchField("", 8, "exact")])]
    )
    assert not build_p4info(only_value_set).HasField("type_info")
    only_value_set.touches_type_info = True  # e.g. a mark_to_drop() call in a control
    assert build_p4info(only_value_set).HasField("type_info")
    vs = build_p4info(only_value_set).value_sets[0]
    assert vs.match[0].id == 1 and not vs.match[0].name and vs.match[0].bitwidth == 8


def test_registers_direct_resources_idle_timeout_and_initial_entries():
    model = ControlPlaneModel(
        actions=[NO_ACTION, CPAction("c.set", params=[CPParam("v", 9), CPParam("w", 8)])],
        tables=[
            _table(
                "c.t",
                [CPMatchField("h.h.$valid$", 1, "exact")],
                ["c.set", CPActionRef("NoAction", annotations=DEFAULT_ONLY)],
                default_action="c.set",
                default_action_args=[3, -1],
                direct_counter="c.dc",
                direct_meter="c.dm",
                idle_timeout=True,
                size=0,
                is_const_table=True,
                has_initial_entries=False,
            )
        ],
        counters=[CPCounter("c.dc", "packets_and_bytes", direct_table="c.t")],
        meters=[CPMeter("c.dm", "BYTES", direct_table="c.t"), CPMeter("c.m", "PACKETS", 64)],
        registers=[
            CPRegister("c.r", 48, size=16),
            CPRegister("c.s", 8, signed=True, size=2),
            CPRegister("c.st", 0, size=4, type_name="pair_t"),
        ],
        structs=[
            CPStruct("pair_t", [CPTypeSpecField("a", 8), CPTypeSpecField("ok", 1, kind="bool")])
        ],
    )
    p4info = build_p4info(model)
    table = p4info.tables[0]
    assert table.size == 1024
    assert table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert table.is_const_table and not table.has_initial_entries
    assert list(table.direct_resource_ids) == [_id(0x13, "c.dc"), _id(0x15, "c.dm")]
    args = [(a.param_id, a.value) for a in table.initial_default_action.arguments]
    assert args == [(1, b"\x00\x03"), (2, b"\xff")]
    assert p4info.direct_counters[0].spec.unit == p4info_pb2.CounterSpec.BOTH
    assert p4info.direct_counters[0].direct_table_id == table.preamble.id
    assert p4info.direct_meters[0].direct_table_id == table.preamble.id
    assert p4info.meters[0].preamble.id == _id(0x14, "c.m") and p4info.meters[0].size == 64
    r, s, st = p4info.registers
    assert (r.type_spec.bitstring.bit.bitwidth, r.size) == (48, 16)
    assert s.type_spec.bitstring.int.bitwidth == 8
    assert st.type_spec.struct.name == "pair_t"
    members = p4info.type_info.structs["pair_t"].members
    assert members[1].type_spec.HasField("bool")


def test_action_profile_selector_semantics_annotations():
    def profile(*annotations: str, selector: bool = True) -> p4info_pb2.ActionProfile:
        model = ControlPlaneModel(
            action_profiles=[
                CPActionProfile(
                    "c.ap", with_selector=selector, size=8, annotations=list(annotations)
                )
            ]
        )
        return build_p4info(model).action_profiles[0]

    members = profile('selector_size_semantics("sum_of_members")', "max_member_weight(4000)")
    assert members.sum_of_members.max_member_weight == 4000
    assert list(members.preamble.annotations) == []
    # p4c 1.2.5 (the installed p4c-bm2-ss) leaves the oneof unset without the annotation
    assert profile("max_group_size(7)").WhichOneof("selector_size_semantics") is None
    assert profile('selector_size_semantics("sum_of_weights")').HasField("sum_of_weights")
    assert profile("max_group_size(7)").max_group_size == 7
    plain = profile("max_group_size(7)", "other", selector=False)
    assert plain.WhichOneof("selector_size_semantics") is None and plain.max_group_size == 0
    assert list(plain.preamble.annotations) == ["@other"]


def test_pkg_info_annotations():
    model = ControlPlaneModel(
        pkg_annotations=['pkginfo(name="demo", version="1.2")', 'brief("b")', "custom"]
    )
    pkg = build_p4info(model).pkg_info
    assert (pkg.arch, pkg.name, pkg.version, pkg.doc.brief) == ("v1model", "demo", "1.2", "b")
    assert list(pkg.annotations) == ["@custom"]


def test_unknown_user_type_is_an_error():
    model = ControlPlaneModel(actions=[CPAction("c.a", params=[CPParam("p", 8, type_name="T")])])
    with pytest.raises(CompileError, match="not described"):
        build_p4info(model)


# --------------------------------------------------------------------------------------------
# p4c golden files


def test_golden_default_action_arg():
    add = CPAction("ingress.c.add", params=[CPParam("va", 32), CPParam("vb", 32)])
    table = _table(
        "ingress.c.t",
        [CPMatchField("h.key", 16, "exact")],
        ["ingress.c.add"],
        const_default_action="ingress.c.add",
        default_action="ingress.c.add",
        default_action_args=[10, 0],
    )
    _assert_matches_golden(
        ControlPlaneModel(tables=[table], actions=[add]), "default-action-arg-bmv2"
    )


def test_golden_issue1049():
    tables = [
        _table(
            "cIngress.guh",
            [CPMatchField("hdr.ipv4.dstAddr", 32, "exact")],
            ["cIngress.hash_drop_decision"],
            default_action="cIngress.hash_drop_decision",
        ),
        _table(
            "cIngress.debug_table",
            [
                CPMatchField("meta.mystruct1.hash1", 16, "exact"),
                CPMatchField("meta.mystruct1.hash_drop", 1, "exact"),  # a bool key
            ],
            ["NoAction"],
            default_action="NoAction",
        ),
    ]
    actions = [NO_ACTION, CPAction("cIngress.hash_drop_decision")]
    _assert_matches_golden(ControlPlaneModel(tables=tables, actions=actions), "issue1049-bmv2")


def _translated(name: str) -> CPNewType:
    uri = f"com.fingerhutpress/andysp4arch/v1/{name}"
    return CPNewType(
        name, 48 if "Ethernet" in name else 32, translation_uri=uri, translation_bitwidth=32
    )


def test_golden_custom_type_restricted_fields():
    table = _table(
        "ingressImpl.t1",
        [CPMatchField("hdr.andycustom.srcAddr", 32, "exact", type_name="CustomAddr_t")],
        ["ingressImpl.set_addr", "ingressImpl.my_drop", "NoAction"],
        const_default_action="NoAction",
        default_action="NoAction",
    )
    actions = [
        NO_ACTION,
        CPAction("ingressImpl.my_drop"),
        CPAction(
            "ingressImpl.set_addr", params=[CPParam("new_dstAddr", 32, type_name="IPv4Addr_t")]
        ),
    ]
    packet_out = CPControllerHeader(
        "packet_out",
        "packet_out_t",
        fields=[
            CPHeaderField("egress_port", 9),
            CPHeaderField("queue_id", 7),
            # Declared bit<48>; the translation makes it 32 bits wide for the controller.
            CPHeaderField("not_actually_useful", 48, type_name="EthernetAddr_t"),
        ],
        annotations=['controller_header("packet_out")'],
    )
    model = ControlPlaneModel(
        tables=[table],
        actions=actions,
        controller_headers=[packet_out],
        new_types=[_translated(n) for n in ("EthernetAddr_t", "IPv4Addr_t", "CustomAddr_t")],
    )
    _assert_matches_golden(model, "custom-type-restricted-fields")


def test_golden_action_profile_max_group_size():
    actions = ["IngressI.drop", "NoAction"]
    tables = [
        _table(
            "IngressI.indirect",
            [],
            actions,
            const_default_action="NoAction",
            default_action="NoAction",
            implementation="ap",
        ),
        _table(
            "IngressI.indirect_ws",
            [CPMatchField("meta.hash1", 32, "selector")],
            actions,
            const_default_action="NoAction",
            default_action="NoAction",
            implementation="ap_ws",
        ),
    ]
    # Constructed inside the tables, the profiles take the property's @name unqualified.
    profiles = [
        CPActionProfile(
            "ap", ["IngressI.indirect"], size=128, annotations=['name("ap")', "max_group_size(200)"]
        ),
        CPActionProfile(
            "ap_ws",
            ["IngressI.indirect_ws"],
            with_selector=True,
            size=1024,
            annotations=['name("ap_ws")', "max_group_size(200)"],
        ),
    ]
    model = ControlPlaneModel(
        tables=tables,
        actions=[NO_ACTION, CPAction("IngressI.drop")],
        action_profiles=profiles,
    )
    _assert_matches_golden(model, "action_profile_max_group_size_annotation")


def _entries_actions() -> list[CPAction]:
    return [
        CPAction("ingress.a"),
        CPAction("ingress.a_with_control_params", params=[CPParam("x", 9)]),
    ]


def test_golden_table_entries_range():
    table = _table(
        "ingress.t_range",
        [CPMatchField("h.h.r", 8, "range")],
        ["ingress.a", "ingress.a_with_control_params"],
        default_action="ingress.a",
        is_const_table=True,
    )
    model = ControlPlaneModel(tables=[table], actions=_entries_actions())
    _assert_matches_golden(model, "table-entries-range-bmv2")


def test_golden_table_entries_ser_enum():
    table = _table(
        "ingress.t_ternary",
        [
            CPMatchField("h.h.f1", 8, "exact", type_name="MyEnum1B"),
            CPMatchField("h.h.f2", 16, "ternary", type_name="MyEnum2B"),
        ],
        ["ingress.a", "ingress.a_with_control_params"],
        const_default_action="ingress.a",
        default_action="ingress.a",
        is_const_table=True,
    )
    enums = [
        CPEnum("MyEnum1B", [CPEnumMember("MBR1", 0), CPEnumMember("MBR2", 0xFF)], bitwidth=8),
        CPEnum("MyEnum2B", [CPEnumMember("MBR1", 10), CPEnumMember("MBR2", 0xAB00)], bitwidth=16),
    ]
    model = ControlPlaneModel(tables=[table], actions=_entries_actions(), enums=enums)
    _assert_matches_golden(model, "table-entries-ser-enum-bmv2")


def test_golden_issue1566_counter_only():
    # No table and no action: type_info is still there because the counter is an extern instance.
    model = ControlPlaneModel(counters=[CPCounter("cIngress.E.c1.stats", "PACKETS", 65536)])
    _assert_matches_golden(model, "issue1566-bmv2")


def test_golden_pvs_struct():
    table = _table(
        "MyIngress.t",
        [CPMatchField("meta.data[0].da", 32, "exact")],
        ["MyIngress.set_data", CPActionRef("NoAction", annotations=DEFAULT_ONLY)],
        default_action="NoAction",
    )
    value_set = CPValueSet("MyParser.pvs", 4, [CPMatchField("field", 32, "exact")])
    model = ControlPlaneModel(
        tables=[table],
        actions=[NO_ACTION, CPAction("MyIngress.set_data")],
        value_sets=[value_set],
    )
    _assert_matches_golden(model, "pvs-struct-1-bmv2")


def test_golden_digest_custom_type():
    def forwarding(name: str, key: CPMatchField, actions: list[str]) -> CPTable:
        return _table(name, [key], [*actions, "NoAction"], default_action="NoAction")

    ipv4 = "IPv4Addr_t"
    tables = [
        forwarding(
            "MyIngress.forward",
            CPMatchField("hdr.ipv4.dstAddr", 32, "exact", type_name=ipv4),
            ["MyIngress.set_dmac", "MyIngress.drop"],
        ),
        forwarding(
            "MyIngress.ipv4_lpm",
            CPMatchField("hdr.ipv4.dstAddr", 32, "lpm", type_name=ipv4),
            ["MyIngress.set_nhop", "MyIngress.drop"],
        ),
        forwarding(
            "MyEgress.send_frame",
            CPMatchField("standard_metadata.egress_port", 9, "exact"),
            ["MyEgress.rewrite_mac"],
        ),
    ]
    actions = [
        NO_ACTION,
        CPAction("MyIngress.set_dmac", params=[CPParam("dstAddr", 48, type_name="EthernetAddr_t")]),
        CPAction("MyIngress.drop"),
        CPAction(
            "MyIngress.set_nhop",
            params=[CPParam("dstAddr", 32, type_name=ipv4), CPParam("port", 9)],
        ),
        CPAction("MyIngress.send_digest"),
        CPAction(
            "MyEgress.rewrite_mac", params=[CPParam("srcAddr", 48, type_name="EthernetAddr_t")]
        ),
    ]
    digest = CPDigest(
        "test_digest_t",
        "test_digest_t",
        fields=[
            CPTypeSpecField("in_mac_srcAddr", 48, type_name="EthernetAddr_t"),
            CPTypeSpecField("my_parser_error", 0, kind="error"),
            CPTypeSpecField("pkt_type", 0, type_name="MyPacketTypes"),
            CPTypeSpecField("bar", 32, type_name="bar_t"),
        ],
    )
    model = ControlPlaneModel(
        tables=tables,
        actions=actions,
        digests=[digest],
        new_types=[_translated("EthernetAddr_t"), _translated(ipv4), CPNewType("bar_t", 32)],
        enums=[CPEnum("MyPacketTypes", [CPEnumMember("IPv4"), CPEnumMember("Other")])],
        errors=[
            "NoError",
            "PacketTooShort",
            "NoMatch",
            "StackOutOfBounds",
            "HeaderTooShort",
            "ParserTimeout",
            "ParserInvalidArgument",
        ],
    )
    _assert_matches_golden(model, "v1model-digest-custom-type")
