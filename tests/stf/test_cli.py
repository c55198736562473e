"""``p4reduce-stf``: exit status and messages for passing, failing and broken tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.switch.stf.cli import main

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
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.a: exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply {
        assert(hdr.h.b != 0xFF);
        hdr.h.b = hdr.h.b + 1;
        t.apply();
    }
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


def stf(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.stf"
    p.write_text(text)
    return p


def test_pass(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = stf(tmp_path, "add t a:0x05 fwd(port:3)\npacket 0 05 01\nexpect 3 05 02 $\n")
    assert main([str(prog), str(t)]) == 0
    assert "PASS" in capsys.readouterr().out


def test_failure_reports_hex_and_first_difference(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "add t a:5 fwd(port:3)\npacket 0 05 01\nexpect 3 05 07 $\n")
    assert main([str(prog), str(t)]) == 1
    err = capsys.readouterr().err
    assert "t.stf:3: expected packet #1 on port 3" in err
    assert "05 07" in err and "05 02" in err and "^^" in err


def test_missing_packet_fails(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "packet 0 05 01\nexpect 3 05 02\n")
    assert main([str(prog), str(t)]) == 1
    assert "no packet received" in capsys.readouterr().err


def test_malformed_stf_is_exit_2_with_file_and_line(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "packet 0 05 01\nfrobnicate 3\n")
    assert main([str(prog), str(t)]) == 2
    err = capsys.readouterr().err
    assert f"{t}:2: error:" in err
    assert "Traceback" not in err


def test_unknown_table_is_exit_2(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "add nosuch a:1 fwd(port:1)\n")
    assert main([str(prog), str(t)]) == 2
    assert f"{t}:1: error: no table named 'nosuch'" in capsys.readouterr().err


def test_bad_action_argument_is_exit_2(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "add t a:1 fwd(port:1024)\n")
    assert main([str(prog), str(t)]) == 2
    assert "does not fit in 9 bits" in capsys.readouterr().err


def test_runtime_fault_is_reported_like_bmv2_without_traceback(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "packet 0 05 FF\nexpect 0 05 00\n")
    assert main([str(prog), str(t)]) == 1
    err = capsys.readouterr().err
    assert "prog.p4(14): runtime error: assert failed" in err
    assert "Traceback" not in err


def test_program_that_does_not_compile_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text(PROGRAM.replace("hdr.h.b + 1", "hdr.h.zz + 1"))
    t = stf(tmp_path, "packet 0 00 00\n")
    assert main([str(bad), str(t)]) == 2
    assert "bad.p4(15): error: zz: no such field" in capsys.readouterr().err


def test_json_output(prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = stf(tmp_path, "packet 0 05 01\nexpect 0 05 02 $\n")
    assert main([str(prog), str(t), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is True and doc["packets_in"] == 1 and doc["packets_out"] == 1


def test_verbose_trace_names_tables_and_actions(
    prog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = stf(tmp_path, "add t a:5 fwd(port:2)\npacket 0 05 01\nexpect 2 05 02\n")
    assert main([str(prog), str(t), "-v"]) == 0
    out = capsys.readouterr().out
    assert "table I.t: hit, action I.fwd[2]" in out


def test_missing_file_is_exit_2(prog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(prog), "/nonexistent.stf"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_console_script_runs(prog: Path, tmp_path: Path) -> None:
    t = stf(tmp_path, "packet 0 05 01\nexpect 0 05 02 $\n")
    exe = Path(sys.executable).parent / "p4reduce-stf"
    r = subprocess.run([str(exe), str(prog), str(t)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "PASS" in r.stdout
