"""Issue 34: a ``p4reduce-switch`` whose gRPC or UDP address is taken refuses to start (exit 1,
one line naming the address) instead of sharing the port; a gRPC address without a port is
refused before anything starts. The first switch keeps serving throughout."""

from __future__ import annotations

import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from p4reduce.proto import p4runtime_pb2, p4runtime_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from switchproc import EXE, Switch  # noqa: E402


def _second(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "--no-p4", "--log-level", "warn", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""  # never "ready"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("p4reduce-switch: error: "), r.stderr
    return lines[0]


def _still_serves(addr: str) -> None:
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        reply = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
        assert reply.p4runtime_api_version


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_second_switch_on_a_used_port_exits_1_with_one_line() -> None:
    peer = _free_udp_port()
    first = Switch(
        [
            "--no-p4",
            "--grpc-server-addr",
            "127.0.0.1:0",
            "--udp-listen",
            "127.0.0.1:0",
            "-i",
            f"1@udp:127.0.0.1:{peer}",
        ]
    )
    try:
        assert first.udp is not None
        udp = f"{first.udp[0]}:{first.udp[1]}"
        cases = [
            # the same gRPC port (gRPC would set SO_REUSEPORT and let both serve)
            ["--grpc-server-addr", first.grpc],
            # the same UDP adapter address, on a free gRPC port
            ["--grpc-server-addr", "127.0.0.1:0", "--udp-listen", udp, "-i", "1@udp:127.0.0.1:9"],
        ]
        with ThreadPoolExecutor(len(cases)) as pool:  # the two start-ups overlap
            grpc_used, udp_used = pool.map(_second, cases)
        line = _one_error_line(grpc_used)
        assert f"cannot serve P4Runtime on {first.grpc}" in line
        assert "Address already in use" in line
        line = _one_error_line(udp_used)
        assert f"UDP adapter cannot listen on {udp}" in line and "Address already in use" in line
        assert "Errno" not in line
        assert first.proc.poll() is None
        _still_serves(first.grpc)
    finally:
        assert first.stop() == 0


@pytest.mark.parametrize(
    ("addr", "message"),
    [
        (
            "127.0.0.1",
            "'127.0.0.1' has no ':PORT' (expected HOST:PORT)",
        ),  # gRPC would serve on port 443
        ("::1", "'::1' has no ':PORT' (an IPv6 address needs brackets: [IPV6]:PORT)"),
        ("127.0.0.1:http", "port 'http' is not a decimal integer"),
    ],
)
def test_a_grpc_address_without_a_port_is_refused(addr: str, message: str) -> None:
    r = _second(["--grpc-server-addr", addr])
    assert _one_error_line(r) == f"p4reduce-switch: error: --grpc-server-addr: {message}"
