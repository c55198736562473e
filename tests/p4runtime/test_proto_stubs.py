"""p4reduce/proto is what its generator makes from the installed p4runtime package's descriptors,
and its messages load under the protobuf implementation in use (upb by default)."""

from __future__ import annotations

import importlib.util

import pytest
from google.protobuf.internal import api_implementation

from p4reduce.proto import _generate, p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc


def test_generated_modules_are_current() -> None:
    if importlib.util.find_spec("p4") is None:
        pytest.skip("the p4runtime package (the descriptors' source) is not installed")
    assert _generate.main(["--check"]) == 0


def test_messages_round_trip() -> None:
    req = p4runtime_pb2.WriteRequest(device_id=3)
    up = req.updates.add(type=p4runtime_pb2.Update.MODIFY)
    up.entity.register_entry.index.index = 7
    again = p4runtime_pb2.WriteRequest.FromString(req.SerializeToString())
    assert again == req and again.updates[0].entity.register_entry.index.index == 7
    info = p4info_pb2.P4Info()
    info.tables.add().preamble.name = "ingress.t"
    assert (
        p4info_pb2.P4Info.FromString(info.SerializeToString()).tables[0].preamble.name
        == "ingress.t"
    )
    assert p4runtime_pb2_grpc.P4RuntimeStub and api_implementation.Type() in (
        "upb",
        "cpp",
        "python",
    )
