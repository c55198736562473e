"""``p4reduce-switch`` end to end: a real process, tables installed over P4Runtime, real UDP
datagrams through the loopback adapter, and a clean stop on SIGTERM/SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4reduce.switch.frontend.cli import main as p4c_main

from p4reduce.proto import p4runtime_pb2, p4runtime_pb2_grpc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from switchproc import EXE, Switch  # noqa: E402


def udp_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(10)
    return s


@pytest.fixture
def peers() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = udp_socket(), udp_socket()
    yield a, b
    a.close()
    b.close()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("fwd")
    info = out / "fwd.p4info.txtpb"
    assert p4c_main([str(HERE / "fwd.p4"), "-o", str(out), "--p4runtime-files", str(info)]) == 0
    return out / "fwd.json", info


def install_forwarding(addr: str, info_path: Path, entries: dict[int, int]) -> None:
    from google.protobuf import text_format

    from p4reduce.proto import p4info_pb2

    info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
    table = next(t for t in info.tables if t.preamble.name == "I.fwd")
    action = next(a for a in info.actions if a.preamble.name == "I.to_port")
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        arbitration = p4runtime_pb2.StreamMessageRequest()
        arbitration.arbitration.device_id = 1
        arbitration.arbitration.election_id.low = 1
        done = threading.Event()

        def requests() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
            yield arbitration
            done.wait(30)  # keep the stream (and so our primaryship) open while we write

        stream = stub.StreamChannel(requests())
        reply = next(stream)
        assert reply.arbitration.status.code == 0
        req = p4runtime_pb2.WriteRequest(device_id=1)
        req.election_id.low = 1
        for ingress, egress in entries.items():
            u = req.updates.add()
            u.type = p4runtime_pb2.Update.INSERT
            e = u.entity.table_entry
            e.table_id = table.preamble.id
            m = e.match.add()
            m.field_id = table.match_fields[0].id
            m.exact.value = bytes([ingress])
            e.action.action.action_id = action.preamble.id
            p = e.action.action.params.add()
            p.param_id = action.params[0].id
            p.value = bytes([egress])
        try:
            stub.Write(req, timeout=10)
        finally:
            done.set()
            stream.cancel()


def test_udp_datagrams_forwarded_by_tables_installed_over_p4runtime(
    compiled: tuple[Path, Path], peers: tuple[socket.socket, socket.socket]
) -> None:
    a, b = peers
    sw = Switch(
        [
            str(compiled[0]),
            "-i", f"1@udp:127.0.0.1:{a.getsockname()[1]}",
            "-i", f"2@udp:127.0.0.1:{b.getsockname()[1]}",
            "--udp-listen", "127.0.0.1:0",
            "--grpc-server-addr", "127.0.0.1:0",
        ]
    )  # fmt: skip
    try:
        assert sw.udp is not None
        install_forwarding(sw.grpc, compiled[1], {1: 2, 2: 1})
        a.sendto(b"hello from a", sw.udp)
        data, src = b.recvfrom(2048)
        assert data == b"hello from a" and src == sw.udp
        b.sendto(b"and back", sw.udp)
        assert a.recvfrom(2048)[0] == b"and back"
    finally:
        assert sw.stop() == 0


def test_source_program_and_sigint_stop(peers: tuple[socket.socket, socket.socket]) -> None:
    a, _ = peers
    sw = Switch(
        [str(HERE / "fwd.p4"), "-i", f"1@udp:127.0.0.1:{a.getsockname()[1]}",
         "--udp-listen", "127.0.0.1:0", "--grpc-server-addr", "127.0.0.1:0"]
    )  # fmt: skip
    assert sw.stop(signal.SIGINT) == 0


def test_sigterm_taken_by_another_thread_still_stops_it() -> None:
    """kill() on a thread id makes that thread take the process's signal, as the kernel
    does when the main thread already has one pending: Python runs the handler only in
    the main thread, which must therefore not sleep in a plain Event.wait()."""
    sw = Switch(["--no-p4", "--grpc-server-addr", "127.0.0.1:0"])
    pid = sw.proc.pid
    others = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert others, "the switch runs gRPC and data-plane threads"
    try:
        os.kill(others[0], signal.SIGTERM)
        assert sw.proc.wait(timeout=20) == 0
    finally:
        sw.stop()


def test_no_p4_waits_for_a_pipeline() -> None:
    sw = Switch(["--no-p4", "--grpc-server-addr", "127.0.0.1:0"])
    try:
        with grpc.insecure_channel(sw.grpc) as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                stub.GetForwardingPipelineConfig(
                    p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1), timeout=10
                )
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        assert sw.stop() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a program"),
        (["--no-p4", "-i", "511@udp:127.0.0.1:1"], "511"),
        (["/nonexistent.p4"], "nonexistent.p4"),
        (["--no-p4", "--cpu-port", "0"], "cpu_port"),
    ],
)
def test_bad_command_lines_are_one_line_and_exit_1(args: list[str], message: str) -> None:
    r = subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert message in r.stderr
    assert "Traceback" not in r.stderr
