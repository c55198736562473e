"""Constructs of public production v1model programs (PINS/SAI, SONiC DASH, ONF UP4), each in a
small program of our own: it compiles, loads into the embedded switch and forwards a packet.

The programs live in ``programs/good/`` (so the corpus test also checks that they compile and
yield P4Info); here each one is run once through the interpreter with an Ethernet frame and the
port it must come out of.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.switch import V1Switch

GOOD = Path(__file__).parent / "programs" / "good"

FRAME = bytes.fromhex(
    "0000000000020000000000010800"  # Ethernet: dst, src, IPv4
    "4500002800010000401100000a0000010a000002"  # IPv4 (UDP), 10.0.0.1 -> 10.0.0.2
    "1f901f900014000000000000000000000000000000000000"  # UDP 8080 -> 8080, payload
)

# program -> the egress port the frame must leave on
RUNS: dict[str, int] = {
    "annotation_multiline_string.p4": 2,
    "enum_serializable_implicit.p4": 3,
    "package_named_arguments_reordered.p4": 5,
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_program_runs_in_the_switch(name: str) -> None:
    switch = V1Switch(load_pipeline(GOOD / name))
    out = switch.process(1, FRAME)
    assert [port for port, _ in out] == [RUNS[name]]


def test_named_package_arguments_load_when_pushed_over_p4runtime(tmp_path: Path) -> None:
    """The compiled JSON and P4Info of a V1Switch with reordered named arguments make a
    pipeline a SetForwardingPipelineConfig accepts, and it forwards like the source does."""
    from p4.v1 import p4runtime_pb2
    from p4reduce.switch.frontend.cli import main as p4c_main
    from p4reduce.switch.p4runtime.pipeline_config import build_state

    name = "package_named_arguments_reordered"
    info = tmp_path / "p.txtpb"
    assert (
        p4c_main([str(GOOD / f"{name}.p4"), "-o", str(tmp_path), "--p4runtime-files", str(info)])
        == 0
    )
    from google.protobuf import text_format

    config = p4runtime_pb2.ForwardingPipelineConfig()
    text_format.Parse(info.read_text(), config.p4info)
    config.p4_device_config = (tmp_path / f"{name}.json").read_bytes()
    state = build_state(config)
    assert [port for port, _ in state.switch.process(1, FRAME)] == [5]
