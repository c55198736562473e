"""P4Info details where p4c-bm2-ss 1.2.5 was the judge (bench/p4c_diff.py found each one).

These run without p4c: each program's expected P4Info detail is what the installed p4c printed
for it (tests/frontend/test_against_p4c.py compares with p4c itself where it is installed).
"""

from __future__ import annotations

from pathlib import Path

from p4reduce.switch.frontend.compiler import compile_file

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
control V(inout H hdr, inout M m) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
"""
PARSER = """parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
"""
MAIN = "V1Switch(P(), V(), I(), E(), C(), D()) main;\n"


def _p4info(tmp_path: Path, body: str, parser: str = PARSER):
    path = tmp_path / "prog.p4"
    path.write_text(PRELUDE + parser + body + MAIN)
    return compile_file(path).p4info


def test_action_only_called_directly_has_no_params(tmp_path: Path) -> None:
    # p4c's midend makes such an action's directionless parameters locals; one a table also
    # lists keeps them
    info = _p4info(
        tmp_path,
        """control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action both(bit<8> v) { hdr.h.a = v; }
    action direct(inout bit<8> z, bit<8> w) { hdr.h.a = w; z = w; }
    table t { key = { hdr.h.b: exact; } actions = { both; NoAction; } }
    apply { t.apply(); both(8w3); direct(m.x, 8w4); }
}
""",
    )
    params = {a.preamble.name: [p.name for p in a.params] for a in info.actions}
    assert params == {"NoAction": [], "I.both": ["v"], "I.direct": []}


def test_action_ref_keeps_tableonly_and_defaultonly(tmp_path: Path) -> None:
    info = _p4info(
        tmp_path,
        """control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action a() { }
    action b() { }
    table t { key = { hdr.h.b: exact; } actions = { @tableonly a; @defaultonly b; } }
    apply { t.apply(); }
}
""",
    )
    refs = [(list(r.annotations), r.scope) for r in info.tables[0].action_refs]
    assert refs[:2] == [(["@tableonly"], 1), (["@defaultonly"], 2)]


def test_verify_in_a_parser_leaves_type_info_out(tmp_path: Path) -> None:
    parser = """parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); verify(hdr.h.a == 1, error.NoMatch); transition accept; }
}
"""
    body = "control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }\n"
    assert not _p4info(tmp_path, body, parser).HasField("type_info")
    # an extern function called in a control does create it, as in p4c
    called = "control I(inout H hdr, inout M m, inout standard_metadata_t sm) {\n"
    called += "    apply { mark_to_drop(sm); }\n}\n"
    assert _p4info(tmp_path, called, parser).HasField("type_info")


def test_unstructured_annotations_print_as_p4c_tokens(tmp_path: Path) -> None:
    # p4c keeps such a body as tokens and prints them one space apart; `@a()` is `@a`;
    # `@pragma NAME ...` is `@NAME(...)`
    info = _p4info(
        tmp_path,
        """control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    @a1(x.y, f(c), [d], g(1,2)) @a5(x=1,y="z") @a6() @a7(a::b) @a8(8w5, -1, !x)
    @pragma p1 q.r(s,t)
    action act() { }
    table t { key = { hdr.h.b: exact; } actions = { act; } }
    apply { t.apply(); }
}
""",
    )
    act = next(a for a in info.actions if a.preamble.name == "I.act")
    assert list(act.preamble.annotations) == [
        "@a1(x . y , f ( c ) , [ d ] , g ( 1 , 2 ))",
        '@a5(x = 1 , y = "z")',
        "@a6",
        "@a7(a : : b)",
        "@a8(8w5 , - 1 , ! x)",
        "@p1(q . r ( s , t ))",
    ]


def test_unknown_v1model_version_selects_the_newest(tmp_path: Path) -> None:
    # p4c 1.2.5 accepts any V1MODEL_VERSION; from 20200408 on its declarations are 20200408's
    path = tmp_path / "prog.p4"
    path.write_text(
        "#define V1MODEL_VERSION 20991301\n"
        + PRELUDE
        + PARSER
        + """
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    register<bit<8>, bit<4>>(16) r;
    apply { PortId_t p = sm.ingress_port; r.write(4w1, (bit<8>)p); }
}
"""
        + MAIN
    )
    compiled = compile_file(path)
    assert [r.preamble.name for r in compiled.p4info.registers] == ["I.r"]


def test_unused_unattached_direct_meter_is_accepted(tmp_path: Path) -> None:
    # p4c removes the unused declaration before its 'not associated with any table' check
    # (bad/bmv2_direct_meter_unattached.p4 reads the meter, and is refused)
    body = """control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;
    apply { }
}
"""
    info = _p4info(tmp_path, body)
    assert list(info.direct_meters) == []


GOOD = Path(__file__).parent / "programs" / "good"


def test_lpm_entry_value_wider_than_the_key_is_cut(tmp_path: Path) -> None:
    # p4c 1.2.5: `[--Wwarn=overflow] warning: 16w0x1ffff: value does not fit in 16 bits`,
    # and the entry is 16w0xffff &&& 0xff00 (BMv2 forwards etherType 0xff12 by it)
    from p4reduce.switch.stf.cli import main as stf_main

    program = GOOD / "table_entry_lpm_value_truncated.p4"
    warnings = compile_file(program).warnings
    assert [(w.pos.line, w.kind, w.message) for w in warnings] == [
        (19, "overflow", "16w0x1ffff: value does not fit in 16 bits")
    ]
    stf = tmp_path / "cut.stf"
    stf.write_text(
        "packet 0 000000000001 000000000002 ff12 00\n"
        "expect 1 000000000001 000000000002 ff12 00\n"
        "packet 0 000000000001 000000000002 fe12 00\n"
        "expect 0 000000000001 000000000002 fe12 00\n"
    )
    assert stf_main(["--engine", "python", str(program), str(stf)]) == 0


def test_optional_entry_value_wider_than_the_key_is_cut() -> None:
    warnings = compile_file(GOOD / "table_entry_optional_value_truncated.p4").warnings
    assert [w.message for w in warnings] == ["8w256: value does not fit in 8 bits"]


def test_int_literal_initializes_and_is_assigned_to_a_new_type(tmp_path: Path) -> None:
    # p4c 1.2.5: `Tag_t t = 5; t = 0x0800;` compile (not `tag(9)`: bad/new_type_int_argument.p4)
    from p4reduce.switch.stf.cli import main as stf_main

    stf = tmp_path / "tag.stf"
    stf.write_text(
        "packet 0 000000000001 000000000002 ffff\nexpect 1 000000000001 000000000002 0800\n"
    )
    program = GOOD / "new_type_int_initializer.p4"
    assert stf_main(["--engine", "python", str(program), str(stf)]) == 0


def test_serializable_enum_as_shift_amount(tmp_path: Path) -> None:
    # p4c 1.2.5 shifts by the enum's bit<8> value (BMv2: 0x0011 << 3 == 0x0088)
    from p4reduce.switch.stf.cli import main as stf_main

    stf = tmp_path / "shift.stf"
    stf.write_text(
        "packet 0 000000000001 000000000002 0011\nexpect 1 000000000001 000000000002 0088\n"
    )
    program = GOOD / "enum_shift_amount.p4"
    for engine in ("python", "native"):
        assert stf_main(["--engine", engine, str(program), str(stf)]) == 0


def test_dont_care_for_an_in_parameter_reads_as_zero(tmp_path: Path) -> None:
    # p4c 1.2.5 passes an uninitialized temporary for `_` as an `in` argument, which BMv2
    # reads as 0 (checked with p4c-bmv2-stf: etherType 0x08ff leaves as 0x0800); both engines
    from p4reduce.switch.stf.cli import main as stf_main

    stf = tmp_path / "dont_care.stf"
    stf.write_text(
        "packet 0 000000000001 000000000002 08ff\nexpect 1 000000000001 000000000002 0800\n"
    )
    program = GOOD / "dont_care_for_in_parameter.p4"
    for engine in ("python", "native"):
        assert stf_main(["--engine", engine, str(program), str(stf)]) == 0


def test_cast_of_a_run_time_value_to_int_is_zero(tmp_path: Path) -> None:
    # p4c 1.2.5 accepts (int)meta.b16 and writes it as meta.b16 & 0 in BMv2's JSON:
    # (bit<8>)((int)meta.b16 + 1) is 1 (checked with p4c-bmv2-stf); both engines
    from p4reduce.switch.stf.cli import main as stf_main

    stf = tmp_path / "cast_int.stf"
    stf.write_text(
        "packet 0 000000000001 000000000002 0842\nexpect 1 000000000001 000000000002 0801\n"
    )
    program = GOOD / "cast_to_int_not_constant.p4"
    for engine in ("python", "native"):
        assert stf_main(["--engine", engine, str(program), str(stf)]) == 0
