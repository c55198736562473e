"""Programs without ``main``. p4c's front end accepts them (a package instance is needed only
by a back end), so the front end checks them completely; the BMv2 driver then does what
p4c-bm2-ss does - P4Info written (nothing instantiated: only pkg_info), no pipeline JSON,
``warning: Program does not contain a `main' module`` (then our own ``error:`` line), exit
status 1 - and the switch refuses
such a program with one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.switch.frontend import checker, parser, preprocess
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.frontend.errors import CompileError, MissingMainError
from p4reduce.switch.interp.load import load_compiled, load_pipeline

BAD = Path(__file__).parent / "programs" / "bad"
NO_MAIN = BAD / "bmv2_no_main_module.p4"
WARNING = "warning: Program does not contain a `main' module"

# The blocks of a program in a file of their own (no main), as multi-file programs are kept.
BLOCKS = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser Prs(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control Nop(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { if (hdr.eth.type == 0x0800) { sm.egress_spec = 4; } }
}
control Egr(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
"""


def _check(path: Path):
    return checker.check(parser.parse(preprocess.preprocess(path), str(path)))


def test_front_end_accepts_a_program_without_main() -> None:
    checked = _check(NO_MAIN)
    assert checked.main is None
    assert "Ing" in checked.scope.names and "Prs" in checked.scope.names


def test_front_end_still_checks_everything_in_it(tmp_path: Path) -> None:
    path = tmp_path / "broken.p4"
    path.write_text(BLOCKS.replace("sm.egress_spec = 4;", "sm.egress_spec = true;"))
    with pytest.raises(CompileError) as info:
        _check(path)
    assert info.value.pos.line == 11 and not isinstance(info.value, MissingMainError)


def test_command_line_does_what_p4c_bm2_ss_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = tmp_path / "p.txtpb"
    code = p4c_main([str(NO_MAIN), "-o", str(tmp_path), "--p4runtime-files", str(info)])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        WARNING,  # p4c's line, then the error line every failed compile of ours ends with
        f"{NO_MAIN}: error: no pipeline for BMv2 without 'V1Switch(...) main;'",
    ]
    assert not list(tmp_path.glob("*.json"))
    body = [ln for ln in info.read_text().splitlines() if ln and not ln.startswith("#")]
    assert body == ["pkg_info {", '  arch: "v1model"', "}"]


def test_a_file_without_main_compiles_once_a_program_includes_it(tmp_path: Path) -> None:
    (tmp_path / "blocks.p4").write_text(BLOCKS)
    prog = tmp_path / "prog.p4"
    prog.write_text(
        '#include "blocks.p4"\nV1Switch(Prs(), Nop(), Ing(), Egr(), Nop(), Dep()) main;\n'
    )
    assert p4c_main([str(tmp_path / "blocks.p4"), "-o", str(tmp_path / "a")]) == 1
    assert p4c_main([str(prog), "-o", str(tmp_path / "b")]) == 0
    from p4reduce.switch.interp.switch import V1Switch

    frame = bytes(12) + b"\x08\x00" + bytes(20)
    assert [port for port, _ in V1Switch(load_pipeline(prog)).process(1, frame)] == [4]


def test_switch_refuses_it_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as info:
        load_pipeline(NO_MAIN)
    message = str(info.value)
    assert message == (
        f"{NO_MAIN}: error: Program does not contain a `main' module; "
        "the switch needs 'V1Switch(...) main;'"
    )
    # a compiled pipeline whose source has lost its main (hand-edited) is refused the same way
    (tmp_path / "blocks.p4").write_text(BLOCKS)
    prog = tmp_path / "prog.p4"
    prog.write_text(
        '#include "blocks.p4"\nV1Switch(Prs(), Nop(), Ing(), Egr(), Nop(), Dep()) main;\n'
    )
    assert p4c_main([str(prog), "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "prog.json").read_text())
    doc["source"]["text"] = doc["source"]["text"].replace("V1Switch(", "// V1Switch(")
    with pytest.raises(MissingMainError) as refused:
        load_compiled(doc)
    assert "\n" not in str(refused.value) and str(refused.value).startswith(f"{prog}: error:")


def test_switch_refuses_it_over_p4runtime(tmp_path: Path) -> None:
    import grpc
    from p4reduce.switch.p4runtime.errors import P4RTError
    from p4reduce.switch.p4runtime.pipeline_config import build_state

    from p4reduce.proto import p4runtime_pb2

    (tmp_path / "blocks.p4").write_text(BLOCKS)
    prog = tmp_path / "prog.p4"
    prog.write_text(
        '#include "blocks.p4"\nV1Switch(Prs(), Nop(), Ing(), Egr(), Nop(), Dep()) main;\n'
    )
    assert p4c_main([str(prog), "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "prog.json").read_text())
    doc["source"]["text"] = doc["source"]["text"].replace("V1Switch(", "// V1Switch(")
    config = p4runtime_pb2.ForwardingPipelineConfig()
    config.p4_device_config = json.dumps(doc).encode()
    with pytest.raises(P4RTError) as info:
        build_state(config)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "Program does not contain a `main' module" in info.value.message
