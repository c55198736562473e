"""p4c's BMv2 rule for ``/`` and ``%``: only what its front end can fold or strength-reduce
(to a shift or a mask) compiles; anything else is "could not evaluate expression at
compilation time". ``--runtime-divmod`` (CompileOptions.runtime_divmod) keeps the
interpreter's own semantics for such programs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; bit<8> y; bit<8> r; }
struct H { h_t h; }
struct M { }
const bit<8> SIXTEEN = 16;
const bit<8> THREE = 3;
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
bit<8> f(in bit<8> v) { return v; }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        STATEMENT
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
LINE = 15  # the line of STATEMENT


def write(tmp_path: Path, statement: str) -> Path:
    path = tmp_path / "divmod.p4"
    path.write_text(TEMPLATE.replace("STATEMENT", statement))
    return path


@pytest.mark.parametrize(
    "statement",
    [
        "hdr.h.r = hdr.h.x / 4;",  # x >> 2
        "hdr.h.r = hdr.h.x % 8;",  # x & 7
        "hdr.h.r = hdr.h.x / 1;",  # x
        "hdr.h.r = hdr.h.x % 1;",  # x & 0
        "hdr.h.r = hdr.h.x / SIXTEEN;",  # a named constant folds
        "hdr.h.r = hdr.h.x / (2 + 2);",
        "hdr.h.r = 8w0 / hdr.h.x;",  # 0 / x is 0
        "hdr.h.r = 8w0 % hdr.h.x;",
        "hdr.h.r = (8w200 / THREE) % 7;",  # constant: folded
        "hdr.h.r /= 128;",
        "hdr.h.r = (bit<8>)(16w1000 / 3);",
    ],
)
def test_what_p4c_reduces_is_accepted(tmp_path: Path, statement: str) -> None:
    compile_file(write(tmp_path, statement), CompileOptions())


@pytest.mark.parametrize(
    ("statement", "shown"),
    [
        ("hdr.h.r = hdr.h.x / 3;", "hdr.h.x / 3"),
        ("hdr.h.r = hdr.h.x % 3;", "hdr.h.x % 3"),
        ("hdr.h.r = hdr.h.x / THREE;", "hdr.h.x / THREE"),
        ("hdr.h.r = hdr.h.x / hdr.h.y;", "hdr.h.x / hdr.h.y"),
        ("hdr.h.r = 16 / hdr.h.x;", "16 / hdr.h.x"),
        ("hdr.h.r = (hdr.h.x + 1) % 100;", "(hdr.h.x + 1) % 100"),
        ("hdr.h.r /= 3;", "hdr.h.r / 3"),
        ("hdr.h.r = (bit<8>)((bit<16>)hdr.h.x / 10);", "(bit<16>)hdr.h.x / 10"),
    ],
)
def test_what_p4c_cannot_reduce_is_refused_with_its_message(
    tmp_path: Path, statement: str, shown: str
) -> None:
    path = write(tmp_path, statement)
    with pytest.raises(CompileError) as info:
        compile_file(path, CompileOptions())
    assert str(info.value) == (
        f"{path}({LINE}): error: {shown}: could not evaluate expression at compilation time"
    )
    compile_file(path, CompileOptions(runtime_divmod=True))


def test_the_first_division_in_the_source_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "hdr.h.r = hdr.h.x / 5;\n        hdr.h.y = hdr.h.x % 6;")
    with pytest.raises(CompileError, match=r"hdr\.h\.x / 5"):
        compile_file(path, CompileOptions())


def test_command_line_prints_p4c_style_and_the_option_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "hdr.h.r = hdr.h.x / 3;")
    assert p4c_main([str(path), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{path}({LINE}): error: hdr.h.x / 3: could not evaluate expression at compilation time",
        "        hdr.h.r = hdr.h.x / 3;",
    ]
    assert not (tmp_path / "divmod.json").exists()
    assert p4c_main([str(path), "--runtime-divmod", "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "divmod.json").read_text())
    assert doc["options"] == {"runtime_divmod": True}


def test_without_the_option_the_pipeline_has_no_options_key(tmp_path: Path) -> None:
    doc = compile_file(write(tmp_path, "hdr.h.r = hdr.h.x / 2;"), CompileOptions()).ir
    assert "options" not in doc
