"""p4c's shadowing diagnostics (ResolveReferences::checkShadowing), in p4c's words.

A declaration in a control, parser, state, action, block or table whose name an enclosing
scope already declares is ``FILE(LINE): [--Wwarn=shadow] warning: 'x' shadows 'x'`` on
stderr (table properties such as ``key`` count as declarations, as in p4c), the exit status
stays 0; a declaration other than a parameter that hides a parameter is p4c's error
``declaration of 'x' shadows a parameter 'x'``. The expected lines are what p4c-bm2-ss
1.2.5 printed for these programs; where it is installed the last test asks it again.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.frontend.compiler import compile_file
from p4reduce.switch.frontend.errors import CompileError

from p4reduce import p4lang

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
const bit<8> size = 3;
const bit<8> gl = 1;
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    bit<8> v = 0;
    bit<8> actions = 0;
    action both(bit<8> v, bit<8> gl) { hdr.h.a = v + gl; }
    table t { key = { hdr.h.b: exact; } actions = { both; NoAction; } }
    apply { t.apply(); bit<8> gl = 2; if (gl == 2) { bit<8> v = 1; hdr.h.a = v; } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

# p4c-bm2-ss 1.2.5.16 on PROGRAM: (line, message, line of the shadowed declaration)
EXPECTED = [
    (15, "'v' shadows 'v'", 13),
    (15, "'gl' shadows 'gl'", 7),
    (16, "'actions' shadows 'actions'", 14),
    (17, "'gl' shadows 'gl'", 7),
    (17, "'v' shadows 'v'", 13),
]


def _write(tmp_path: Path, text: str = PROGRAM) -> Path:
    path = tmp_path / "shadow.p4"
    path.write_text(text)
    return path


def test_shadowing_declarations_are_warned_about(tmp_path: Path) -> None:
    warnings = compile_file(_write(tmp_path)).warnings
    got = [(w.pos.line, w.message, w.related.line if w.related else None) for w in warnings]
    assert sorted(got) == sorted(EXPECTED)
    assert all(w.kind == "shadow" for w in warnings)


def test_command_line_prints_them_as_p4c_and_exits_0(tmp_path: Path) -> None:
    path = _write(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert p4c_main([str(path)]) == 0
    text = err.getvalue()
    assert f"{path}(16): [--Wwarn=shadow] warning: 'actions' shadows 'actions'" in text
    lines = text.splitlines()
    at = lines.index(f"{path}(16): [--Wwarn=shadow] warning: 'actions' shadows 'actions'")
    # the source line, then where the shadowed declaration is and its line
    assert lines[at + 1 : at + 4] == [
        "    table t { key = { hdr.h.b: exact; } actions = { both; NoAction; } }",
        f"{path}(14)",
        "    bit<8> actions = 0;",
    ]
    assert text.count("warning:") == len(EXPECTED)


def test_no_warning_without_shadowing(tmp_path: Path) -> None:
    text = PROGRAM.replace("bit<8> v, bit<8> gl", "bit<8> v2, bit<8> g2").replace(
        "v + gl", "v2 + g2"
    )
    text = text.replace("bit<8> actions = 0;", "bit<8> acts = 0;")
    text = text.replace("bit<8> gl = 2; if (gl == 2) { bit<8> v = 1; hdr.h.a = v; }", "")
    assert compile_file(_write(tmp_path, text)).warnings == []


def test_declaration_hiding_a_parameter_is_an_error(tmp_path: Path) -> None:
    text = PROGRAM.replace(
        "apply { t.apply(); bit<8> gl", "apply { t.apply(); bit<8> sm = 2; bit<8> gl"
    )
    with pytest.raises(CompileError) as info:
        compile_file(_write(tmp_path, text))
    assert info.value.pos.line == 17
    assert info.value.message == "declaration of 'sm' shadows a parameter 'sm'"


def test_same_warnings_as_p4c(tmp_path: Path) -> None:
    reason = p4lang.missing_reason("p4c-bm2-ss")
    if reason:
        pytest.skip(reason)
    path = _write(tmp_path)
    run = subprocess.run(
        [p4lang.find("p4c-bm2-ss") or "", "--arch", "v1model", "-o", str(tmp_path / "o.json"),
         str(path)],
        capture_output=True, text=True, timeout=300, env=p4lang.env(),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    theirs = sorted(line for line in run.stderr.splitlines() if "[--Wwarn=shadow]" in line)
    ours = sorted(w.head() for w in compile_file(path).warnings)
    assert ours == theirs


def test_literals_too_wide_for_their_width_warn_as_p4c(tmp_path: Path) -> None:
    # p4c-bm2-ss 1.2.5's front end: the value wraps, with an [--Wwarn=overflow] warning
    path = tmp_path / "lit.p4"
    body = "hdr.h.a = 8w300; hdr.h.a = (bit<8>)(-8s128); hdr.h.a = 8w255; hdr.h.a = 8w0;"
    path.write_text(PROGRAM.replace("apply { t.apply();", "apply { t.apply(); " + body))
    assert body in path.read_text()
    heads = [w.head() for w in compile_file(path).warnings if w.kind == "overflow"]
    assert [h.split(": ", 1)[1] for h in heads] == [
        "[--Wwarn=overflow] warning: 8w300: value does not fit in 8 bits",
        "[--Wwarn=overflow] warning: 8s128: signed value does not fit in 8 bits",
    ]
