"""Issue 34: ``p4reduce-ctl``'s common mistakes get the right one-line message at once: an
address without a port, a refused connection, a TLS switch reached without (or with the wrong)
CA, a push of a program that is not p4reduce's, and ``serve --listen`` on a used port. Each
leaves the switch as it was."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ctl_helpers import SWITCH_IP, SWITCH_MAC, Switch
from p4reduce.controller import Controller
from p4reduce.controller.cli import main
from p4reduce.switch.p4runtime import Device, P4RuntimeServer
from p4reduce.switch.p4runtime.tls import ServerTls
from tlscerts import Certs, make_certs

CTL = Path(sys.executable).parent / "p4reduce-ctl"


def ctl(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, float]:
    """Exit status, the one error line, and the seconds it took."""
    capsys.readouterr()
    start = time.monotonic()
    rc = main(list(argv))
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("p4reduce-ctl: error: "), err
    return rc, err.strip(), took


@pytest.mark.parametrize("bad", ["127.0.0.1", "localhost", "127.0.0.1:port"])
def test_a_switch_address_without_a_port_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    rc, err, _ = ctl(capsys, "--grpc-addr", bad, "stats")
    assert rc == 2 and err.startswith("p4reduce-ctl: error: argument --grpc-addr: bad ")
    assert "expected HOST:PORT" in err or "port 'port' is not a decimal integer" in err


def test_a_refused_connection_is_reported_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port that nothing listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        rc, err, took = ctl(capsys, "--grpc-addr", addr, "--timeout", "20", "job", "list")
    assert rc == 1
    assert err == (
        f"p4reduce-ctl: error: switch unreachable at {addr}: connection refused "
        "(is the switch running, and on this port?)"
    )
    assert took < 5.0  # it waited 10 s (the connect bound) before


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_switch(certs: Certs) -> Iterator[Switch]:
    sw = Switch(Device(1))
    sw.server = P4RuntimeServer(
        sw.device, "127.0.0.1:0", tls=ServerTls(str(certs.server_cert), str(certs.server_key))
    )
    sw.port = sw.server.start()
    try:
        yield sw
    finally:
        sw.stop()


def test_a_tls_switch_without_the_right_ca_names_grpc_ca(
    tls_switch: Switch, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--grpc-addr", tls_switch.addr, "--timeout", "20"]
    rc, err, took = ctl(capsys, *base, "job", "list")  # plain TCP to a TLS server
    assert rc == 1 and took < 5.0
    assert err == (
        f"p4reduce-ctl: error: switch unreachable at {tls_switch.addr}: the switch closed the "
        "connection (does it serve TLS? pass --grpc-ca FILE)"
    )
    rc, err, took = ctl(capsys, *base, "--grpc-ca", str(certs.other_ca), "job", "list")
    assert rc == 1 and took < 5.0
    assert "TLS handshake failed" in err and "not signed by the --grpc-ca CA" in err
    # the right CA: the switch answers (no pipeline yet), so the probe does not get in the way
    rc, err, _ = ctl(capsys, *base, "--grpc-ca", str(certs.ca), "job", "list")
    assert rc == 1 and "no pipeline" in err


def test_a_plain_switch_reached_over_tls(
    switch: Switch, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err, took = ctl(
        capsys, "--grpc-addr", switch.addr, "--grpc-ca", str(certs.ca), "--timeout", "20", "stats"
    )
    assert rc == 1 and took < 5.0
    assert err.endswith("TLS handshake failed: the switch serves plain TCP (drop --grpc-ca)")


def test_push_of_another_program_names_the_file(
    switch: Switch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "other.json").write_text("{}")
    info = tmp_path / "other.p4info.txtpb"
    info.write_text('tables { preamble { id: 1 name: "MyIngress.fwd" alias: "fwd" } }\n')
    rc, err, _ = ctl(capsys, "--grpc-addr", switch.addr, "push", str(tmp_path / "other"))
    assert rc == 1
    assert err == (
        f"p4reduce-ctl: error: {info} is not a p4reduce program: no table "
        "SwitchIngress.admission.workers (push build/dense or build/sparse)"
    )
    # nothing was pushed: the switch still has no pipeline
    rc, err, _ = ctl(capsys, "--grpc-addr", switch.addr, "job", "list")
    assert rc == 1 and "no pipeline on device 1" in err


def test_serve_on_a_used_port_exits_1_with_one_line(
    switch: Switch, programs: dict[str, Path]
) -> None:
    with Controller(switch.addr) as c:
        c.push(programs["dense"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        listen = f"127.0.0.1:{taken.getsockname()[1]}"
        done = subprocess.run(
            [str(CTL), "--grpc-addr", switch.addr, "serve", "--listen", listen]
            + ["--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"p4reduce-ctl: error: cannot listen on {listen}: Address already in use\n"
    )
    with Controller(switch.addr) as c:  # the service took nothing over: no job, no primary
        assert c.refresh().sorted() == []
