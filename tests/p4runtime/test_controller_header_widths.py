"""Packet I/O refuses controller headers whose P4Info widths are not the data plane's.

P4Runtime packs packet-out metadata and cuts packet-in metadata by the P4Info bitwidths; a
field of a translated `type` (P4Info shows its controller width) or a @hidden field (left
out of P4Info) would make every packet-in/out cut in the wrong place, so such a pipeline is
refused at push time with INVALID_ARGUMENT instead of corrupting packets.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from p4reduce.switch.p4runtime import Device
from p4reduce.switch.p4runtime.errors import P4RTError
from p4rt_client import compile_program

TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)
type bit<9> port_id_t;
@controller_header("packet_in")
header packet_in_t { FIELDS }
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { packet_in_t cpu; eth_t e; }
struct M {}
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.e); transition accept; }
}
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out pk, in H h) { apply { pk.emit(h.cpu); pk.emit(h.e); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def load(tmp_path: Path, fields: str) -> Device:
    program = tmp_path / "cpu.p4"
    program.write_text(TEMPLATE.replace("FIELDS", fields))
    compiled = compile_program(program, tmp_path / "out")
    device = Device(1, cpu_port=255)
    device.load(compiled.device_config, compiled.p4info)
    return device


def test_plain_controller_header_loads(tmp_path: Path) -> None:
    device = load(tmp_path, "bit<9> port; bit<7> pad;")
    assert device.state is not None and device.state.schema.packet_in.bits == 16


@pytest.mark.parametrize(
    "fields",
    ["port_id_t port; bit<7> pad;", "@hidden bit<9> port; bit<7> pad;"],
    ids=["translated", "hidden"],
)
def test_mismatched_widths_are_refused(tmp_path: Path, fields: str) -> None:
    with pytest.raises(P4RTError) as info:
        load(tmp_path, fields)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    message = str(info.value)
    assert "controller header packet_in" in message and "the program's header 16 bits" in message
