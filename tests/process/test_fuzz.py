"""Throw random P4Runtime requests and random frames at a running switch, then check that it
still answers RPCs and still forwards (the issue's robustness requirement)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.p4runtime import Device, P4RuntimeServer
from p4reduce.switch.ports import UdpAdapter
from p4reduce.switch.process.dataplane import Dataplane

from p4reduce.proto import p4runtime_pb2, p4runtime_pb2_grpc

HERE = Path(__file__).resolve().parent
METHODS = ["Write", "Read", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig",
           "Capabilities"]  # fmt: skip


class Rig:
    def __init__(self, tmp: Path) -> None:
        info = tmp / "fwd.p4info.txtpb"
        assert p4c_main([str(HERE / "fwd.p4"), "-o", str(tmp), "--p4runtime-files", str(info)]) == 0
        self.a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for s in (self.a, self.b):
            s.bind(("127.0.0.1", 0))
            s.settimeout(5)
        self.device = Device(1)
        self.device.load_file(tmp / "fwd.json", info)
        with self.device.lock:
            self.device.switch.pipeline.tables["I.fwd"].add_entry([Exact(1)], "I.to_port", [2])
        self.adapter = UdpAdapter(
            ("127.0.0.1", 0), {1: self.a.getsockname(), 2: self.b.getsockname()}
        )
        self.dataplane = Dataplane(self.device, dict(self.adapter.ports))
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        self.port = self.server.start()
        self.dataplane.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace=1)
        self.dataplane.stop()
        self.a.close()
        self.b.close()

    def still_works(self) -> None:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        assert stub.Capabilities(
            p4runtime_pb2.CapabilitiesRequest(), timeout=10
        ).p4runtime_api_version
        self.a.sendto(b"ping", self.adapter.listen)
        while True:  # earlier fuzz frames may still be arriving at b
            data, _ = self.b.recvfrom(65536)
            if data == b"ping":
                return


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    r = Rig(tmp_path_factory.mktemp("fuzz"))
    yield r
    r.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(method=st.sampled_from(METHODS), body=st.binary(max_size=300))
def test_random_request_bytes_get_a_status_not_a_crash(rig: Rig, method: str, body: bytes) -> None:
    call = rig.channel.unary_unary(
        f"/p4.v1.P4Runtime/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    try:
        if method == "Read":
            list(
                rig.channel.unary_stream(
                    "/p4.v1.P4Runtime/Read",
                    request_serializer=lambda b: b,
                    response_deserializer=lambda b: b,
                )(body, timeout=10)
            )
        else:
            call(body, timeout=10)
    except grpc.RpcError as e:
        assert e.code() != grpc.StatusCode.DEADLINE_EXCEEDED


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=st.lists(st.binary(max_size=200), max_size=5))
def test_random_datagrams_leave_the_switch_forwarding(rig: Rig, frames: list[bytes]) -> None:
    for f in frames:
        rig.a.sendto(f, rig.adapter.listen)
    rig.still_works()


def test_still_answering_after_the_fuzz(rig: Rig) -> None:
    rig.still_works()
