"""STF commands for action profiles and selectors (our extension: docs/stf.md): handles,
and a clear ``FILE:LINE: error:`` (exit 2) for every misuse, on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.stf.cli import main
from p4reduce.switch.stf.parser import IndirectAdd, StfError, parse_stf

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w8, 32w16) sel;
    action_profile(32w2) ap;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.a: exact; hdr.h.b: selector; } actions = { fwd; NoAction; }
              implementation = sel; default_action = NoAction(); }
    table u { key = { hdr.h.b: ternary; } actions = { fwd; NoAction; }
              implementation = ap; default_action = NoAction(); }
    table plain { key = { hdr.h.a: exact; } actions = { fwd; NoAction; } }
    apply { t.apply(); u.apply(); plain.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    p = tmp_path / "prog.p4"
    p.write_text(PROGRAM)
    return p


def run(prog: Path, tmp_path: Path, text: str, engine: str = "python") -> int:
    t = tmp_path / "t.stf"
    t.write_text(text)
    return main(["--engine", engine, str(prog), str(t)])


def test_parse_indirect_adds() -> None:
    cmds = parse_stf(
        "table_indirect_add u 7 hdr.h.b:0x0* => 1\ntable_indirect_add_with_group t a:3 => 0\n",
        "t.stf",
    )
    assert cmds == [
        IndirectAdd(1, "u", 7, [("hdr.h.b", "0x0*")], False, 1),
        IndirectAdd(2, "t", None, [("a", "3")], True, 0),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("table_indirect_add t a:1", "missing '=> <handle>'"),
        ("table_indirect_add t a:1 => x", "expected a member handle"),
        ("table_indirect_add_with_group t a:1 = 0", "expected '>'"),
        ("act_prof_create_member sel", "missing arguments"),
        ("act_prof_add_member_to_group sel 0", "missing arguments"),
    ],
)
def test_malformed_commands(line: str, message: str) -> None:
    with pytest.raises(StfError) as e:
        parse_stf(line + "\n", "t.stf")
    assert message in str(e.value) and str(e.value).startswith("t.stf:1: error:")


@pytest.mark.parametrize("engine", ["python", "native"])
def test_handles_groups_and_entries(prog: Path, tmp_path: Path, engine: str) -> None:
    text = (
        "act_prof_create_member sel fwd 4\n"  # member 0
        "act_prof_create_member sel fwd 5\n"  # member 1
        "act_prof_create_group sel\n"  # group 0
        "act_prof_add_member_to_group sel 1 0\n"
        "table_indirect_add_with_group t a:1 => 0\n"
        "table_indirect_add t a:2 => 0\n"
        "act_prof_create_member ap fwd 9\n"
        "table_indirect_add u 3 b:0x0* => 0\n"
        "packet 0 01 20\nexpect 5 01 20 $\n"
        "packet 0 02 20\nexpect 4 02 20 $\n"
        "packet 0 03 05\nexpect 9 03 05 $\n"
    )
    assert run(prog, tmp_path, text, engine) == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("act_prof_create_member nosuch fwd 1\n", "no profile named 'nosuch'"),
        ("act_prof_create_member sel nosuch 1\n", "no action named 'nosuch'"),
        ("act_prof_create_member sel fwd\n", "fwd takes 1 arguments"),
        ("act_prof_create_member sel fwd 512\n", "does not fit in 9 bits"),
        ("act_prof_create_group ap\n", "is an action profile: it has no groups"),
        ("act_prof_delete_member sel 3\n", "no member 3"),
        ("act_prof_add_member_to_group sel 0 0\n", "no group 0"),
        (
            "act_prof_create_member sel fwd 1\nact_prof_create_group sel\n"
            "act_prof_add_member_to_group sel 0 0\nact_prof_add_member_to_group sel 0 0\n",
            "member 0 is already in group 0",
        ),
        (
            "act_prof_create_member sel fwd 1\nact_prof_create_group sel\n"
            "act_prof_remove_member_from_group sel 0 0\n",
            "member 0 is not in group 0",
        ),
        ("table_indirect_add t a:1 => 0\n", "no member 0"),
        ("table_indirect_add_with_group u b:1 => 0\n", "it has no groups"),
        ("table_indirect_add plain a:1 => 0\n", "has no action profile or selector"),
        # BMv2 refuses table_add / table_set_default on an indirect table (WRONG_TABLE_TYPE)
        ("add u b:1 fwd(port:1)\n", "add I.u: the table has an action profile"),
        ("setdefault t fwd(port:1)\n", "setdefault I.t: the table has an action profile"),
        (
            "act_prof_create_member ap fwd 1\nact_prof_create_member ap fwd 2\n"
            "act_prof_create_member ap fwd 3\n",
            "profile is full (2 members)",
        ),
        (
            "act_prof_create_member sel fwd 1\ntable_indirect_add t a:1 => 0\n"
            "act_prof_delete_member sel 0\n",
            "still used by a table entry",
        ),
    ],
)
def test_misuse_is_exit_2_with_file_and_line(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    assert run(prog, tmp_path, text) == 2
    err = capsys.readouterr().err
    last = text.count("\n")
    assert f"t.stf:{last}: error:" in err and message in err, err
    assert "Traceback" not in err
