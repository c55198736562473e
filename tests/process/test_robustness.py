"""A packet whose processing fails is logged, counted and dropped; the next one forwards."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import compile_file
from p4reduce.switch.p4runtime import Device

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { assert(hdr.h.a != 0xFF); sm.egress_spec = 2; }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_failing_packet_is_counted_and_the_switch_keeps_forwarding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    src = tmp_path / "p.p4"
    src.write_text(PROGRAM)
    sent: list[tuple[int, bytes]] = []
    device = Device(1, transmit=lambda p, f: sent.append((p, f)))
    device.load(json.dumps(compile_file(src).ir).encode())
    with caplog.at_level(logging.ERROR, logger="p4reduce"):
        assert device.inject(1, b"\xff") == []
    assert device.aborted_packets == 1
    assert "aborted the pipeline" in caplog.text and "assert failed" in caplog.text
    assert device.inject(1, b"\x01") == [(2, b"\x01")]
    assert sent == [(2, b"\x01")]


def test_trace_logs_tables_and_actions(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    src = tmp_path / "t.p4"
    src.write_text(
        PROGRAM.replace(
            "apply { assert(hdr.h.a != 0xFF); sm.egress_spec = 2; }",
            "action fwd(bit<9> p) { sm.egress_spec = p; }\n"
            "    table t { key = { hdr.h.a: exact; } actions = { fwd; }"
            " const entries = { 1 : fwd(3); } }\n    apply { t.apply(); }",
        )
    )
    device = Device(1)
    device.load(json.dumps(compile_file(src).ir).encode())
    device.trace = True
    with caplog.at_level(logging.DEBUG, logger="p4reduce"):
        device.inject(1, b"\x01")
    assert "table I.t: hit, action I.fwd[3]" in caplog.text
    assert "sent on port 3" in caplog.text
