"""Where the P4 spec and p4c + BMv2 ``simple_switch`` disagree, the interpreter follows BMv2.

Each case here was a difference found by running bmv2_tests/ on real p4c + BMv2 (issue 22);
docs/interpreter.md gives the reasoning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.interp.load import load_compiled, load_pipeline
from p4reduce.switch.interp.switch import V1Switch
from p4reduce.switch.stf.runner import load_and_run

# Ingress reports parser_error (as the index of the error member: NoError 0, NoMatch 2, the
# user's Custom 7) and the validity of h and n in a prepended rep header.
PARSER_PROGRAM = """#include <core.p4>
#include <v1model.p4>
error { Custom }
header rep_t { bit<8> err; bit<8> h_valid; bit<8> n_valid; }
header h_t { bit<8> kind; }
header n_t { bit<16> v; }
struct H { rep_t rep; h_t h; n_t n; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            1: parse_n;
            2: refuse;
            3: custom;
            4: no_match_by_hand;
        }
    }
    state parse_n { pkt.extract(hdr.n); transition accept; }
    state refuse { transition reject; }
    state custom { verify(false, error.Custom); transition accept; }
    state no_match_by_hand { verify(false, error.NoMatch); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err = sm.parser_error == error.NoError ? 8w0
                    : sm.parser_error == error.NoMatch ? 8w2
                    : sm.parser_error == error.Custom ? 8w7 : 8w0xEE;
        hdr.rep.h_valid = hdr.h.isValid() ? 8w1 : 8w0;
        hdr.rep.n_valid = hdr.n.isValid() ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) {
    apply { pkt.emit(hdr.rep); pkt.emit(hdr.h); pkt.emit(hdr.n); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def parser_switch(tmp_path_factory: pytest.TempPathFactory) -> V1Switch:
    path: Path = tmp_path_factory.mktemp("parity") / "parity.p4"
    path.write_text(PARSER_PROGRAM)
    return V1Switch(load_pipeline(path))


def _run(sw: V1Switch, data: bytes) -> bytes:
    ((port, out),) = sw.process(0, data)
    assert port == 1
    return out


def test_a_matching_case_parses_on(parser_switch: V1Switch) -> None:
    assert _run(parser_switch, bytes.fromhex("01 1234 AB")) == bytes.fromhex("00 01 01 01 1234 AB")


def test_a_select_without_a_matching_case_ends_parsing_with_no_error(
    parser_switch: V1Switch,
) -> None:
    # The spec says error.NoMatch; p4c's BMv2 back end emits no default transition and BMv2
    # then ends the parse as at accept: parser_error stays NoError, the packet goes on.
    assert _run(parser_switch, bytes.fromhex("09 1234 AB")) == bytes.fromhex("00 01 00 09 1234 AB")


def test_an_explicit_transition_to_reject_also_leaves_no_error(parser_switch: V1Switch) -> None:
    # p4c warns "Explicit transition to reject not supported on this target" and emits a
    # null next state, exactly as for accept.
    assert _run(parser_switch, bytes.fromhex("02 1234")) == bytes.fromhex("00 01 00 02 1234")


def test_verify_is_how_a_parser_reports_an_error_on_bmv2(parser_switch: V1Switch) -> None:
    assert _run(parser_switch, bytes.fromhex("03 1234")) == bytes.fromhex("07 01 00 03 1234")
    assert _run(parser_switch, bytes.fromhex("04 1234")) == bytes.fromhex("02 01 00 04 1234")


# ------------------------------------------------------------------ run-time / and %

PROGRAMS = Path(__file__).parent / "programs"
DIVMOD = PROGRAMS / "divmod_runtime.p4"


def test_runtime_division_by_a_constant_that_is_not_a_power_of_two_is_refused() -> None:
    # p4c: "arith_divmod.p4(43): [--Werror=invalid] error: hdr.h.a8 / 3: could not evaluate
    # expression at compilation time"
    with pytest.raises(CompileError) as info:
        compile_file(DIVMOD, CompileOptions())
    assert info.value.pos.line == 45
    assert str(info.value) == (
        f"{DIVMOD}(45): error: hdr.h.a8 / 3: could not evaluate expression at compilation time"
    )


def test_the_option_runs_the_interpreters_own_division() -> None:
    runner, outcome = load_and_run(
        DIVMOD, DIVMOD.with_suffix(".stf"), CompileOptions(runtime_divmod=True)
    )
    assert outcome.fault is None and outcome.passed, "\n".join(outcome.report)
    assert outcome.packets_in == 3


def test_the_option_travels_in_the_compiled_pipeline() -> None:
    doc = compile_file(DIVMOD, CompileOptions(runtime_divmod=True)).ir
    assert doc["options"] == {"runtime_divmod": True}
    sw = V1Switch(load_compiled(json.loads(json.dumps(doc))))
    data = bytes.fromhex("C8 03E8") + b"\xff" * 18
    ((port, out),) = sw.process(0, data)
    assert port == 1 and out[3:5] == bytes([200 // 3, 200 % 3])
    del doc["options"]
    with pytest.raises(CompileError, match="could not evaluate expression at compilation time"):
        load_compiled(doc)
