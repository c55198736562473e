"""User-declared extern functions and objects (P4_16 7.2.10): the front end accepts them as
p4c's does; p4c's BMv2 back end refuses a call / an instance unless ``--emit-externs`` (the
corpus holds those two errors); with ``--emit-externs`` the pipeline compiles and the switch
refuses to load it with one ``FILE(LINE): error:`` naming the extern - never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.load import load_pipeline

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
"""
PRELUDE_LINES = PRELUDE.count("\n")

FUNCTION = """extern bit<8> scramble(in bit<8> x);
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action mix() {
        scramble(hdr.h.a);
    }
    apply { mix(); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

OBJECT = """extern rate_limiter {
    rate_limiter(bit<32> buckets);
    bit<8> admit(in bit<16> flow);
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    rate_limiter(32w64) limiter;
    apply { limiter.admit(hdr.h.b); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

# (body, the extern's name, its declaration line, the line of its first use)
CASES = {
    "function": (FUNCTION, "scramble", PRELUDE_LINES + 1, PRELUDE_LINES + 4),
    "object": (OBJECT, "rate_limiter", PRELUDE_LINES + 1, PRELUDE_LINES + 6),
}


def _write(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"user_{kind}.p4"
    path.write_text(PRELUDE + CASES[kind][0])
    return path


@pytest.mark.parametrize("kind", sorted(CASES))
def test_bmv2_back_end_refuses_without_emit_externs(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, kind)
    _, name, declared, _ = CASES[kind]
    assert p4c_main([str(path), "-o", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    what = "extern function" if kind == "function" else "extern instance"
    assert err.splitlines()[0] == f"{path}({declared}): error: {name}: unknown {what}"
    assert not (tmp_path / f"{path.stem}.json").exists()


@pytest.mark.parametrize("kind", sorted(CASES))
def test_emit_externs_compiles_and_the_switch_refuses_at_load(kind: str, tmp_path: Path) -> None:
    path = _write(tmp_path, kind)
    _, name, declared, used = CASES[kind]
    assert p4c_main([str(path), "--emit-externs", "-o", str(tmp_path)]) == 0
    compiled = tmp_path / f"{path.stem}.json"
    assert json.loads(compiled.read_text())["options"] == {"emit_externs": True}
    from p4reduce.switch.frontend.compiler import CompileOptions

    # the compiled pipeline, and the source compiled again at load with the same option
    for source, options in ((compiled, None), (path, CompileOptions(emit_externs=True))):
        with pytest.raises(Exception) as info:
            load_pipeline(source, options)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"{path}({used}): error: {name}: user-declared extern {kind}")
        assert f"{path}({declared})" in message and "not supported by this switch" in message


@pytest.mark.parametrize(
    ("kind", "call", "message"),
    [
        ("function", "scramble(hdr.h.a);", "scramble(...): not supported"),
        ("object", "limiter.admit(hdr.h.b);", "limiter: could not convert expression to Json"),
    ],
)
def test_emit_externs_refuses_a_call_whose_value_is_used(
    kind: str, call: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """p4c-bm2-ss --emit-externs converts such a call only as a statement (p4c 1.2.5)."""
    path = _write(tmp_path, kind)
    target = "hdr.h.a = " if kind == "function" else "m.x = "
    path.write_text(path.read_text().replace(call, target + call))
    assert p4c_main([str(path), "--emit-externs", "-o", str(tmp_path)]) == 1
    lines = path.read_text().splitlines()
    line = next(no for no, text in enumerate(lines, start=1) if target + call in text)
    assert capsys.readouterr().err.splitlines()[0] == f"{path}({line}): error: {message}"


def test_emit_externs_pipeline_is_refused_over_p4runtime(tmp_path: Path) -> None:
    """SetForwardingPipelineConfig with such a pipeline is INVALID_ARGUMENT naming the line."""
    import grpc
    from p4reduce.switch.p4runtime.errors import P4RTError
    from p4reduce.switch.p4runtime.pipeline_config import build_state

    from p4reduce.proto import p4runtime_pb2

    path = _write(tmp_path, "function")
    assert p4c_main([str(path), "--emit-externs", "-o", str(tmp_path)]) == 0
    config = p4runtime_pb2.ForwardingPipelineConfig()
    config.p4_device_config = (tmp_path / f"{path.stem}.json").read_bytes()
    with pytest.raises(P4RTError) as info:
        build_state(config)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{path}({CASES['function'][3]}): error: scramble:" in info.value.message


@pytest.mark.timeout(120)
def test_switch_command_line_says_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "object")
    assert p4c_main([str(path), "--emit-externs", "-o", str(tmp_path)]) == 0
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "p4reduce.switch.process.cli",
            str(tmp_path / f"{path.stem}.json"),
            "--grpc-server-addr",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert f"({CASES['object'][3]}): error: rate_limiter: user-declared extern object" in lines[0]
