"""TLS (docs/controller.md, "TLS"; docs/p4runtime.md, "TLS"): the registration service over
HTTPS and the P4Runtime server over gRPC TLS, both with client certificates required; the
controller, the worker-side client and p4runtime-shell connect with certificates, and a
client without a certificate, with one from another CA, or in plain text is refused with a
one-line error. Certificates are made at test time with openssl (tlscerts.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import STATIC
from ctl_helpers import Switch, member
from p4reduce.controller import (
    Controller,
    RegistrationClient,
    RegistrationError,
    RegistrationService,
    SwitchError,
    TlsConfig,
)
from p4reduce.controller.p4rt import ClientTls
from p4reduce.switch.p4runtime import Device, P4RuntimeServer
from p4reduce.switch.p4runtime.tls import ServerTls
from tlscerts import Certs, make_certs

# p4runtime-shell runs in its own virtual environment (tests/p4runtime/shell_venv.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "p4runtime"))
from shell_venv import shell_python  # noqa: E402

SECRET = "a-secret-for-the-tls-tests"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_switch(certs: Certs) -> Iterator[Switch]:
    """The embedded switch with P4Runtime over TLS, client certificates required."""
    sw = Switch(Device(1))
    tls = ServerTls(str(certs.server_cert), str(certs.server_key), str(certs.ca))
    sw.server = P4RuntimeServer(sw.device, "127.0.0.1:0", tls=tls)
    sw.port = sw.server.start()
    try:
        yield sw
    finally:
        sw.stop()


def client_tls(certs: Certs) -> ClientTls:
    return ClientTls(str(certs.ca), str(certs.client_cert), str(certs.client_key))


def test_controller_over_p4runtime_tls(
    tls_switch: Switch, certs: Certs, programs: dict[str, Path]
) -> None:
    with Controller(tls_switch.addr, timeout=10.0, tls=client_tls(certs)) as ctl:
        ctl.push(programs["dense"])
        ctl.install_static(STATIC)
        job = ctl.create_job(7, [member(0)], 4)
        assert [j.job_id for j in ctl.refresh().sorted()] == [7] and job.key == ctl.get_job(7).key
    refused = [
        ClientTls(str(certs.ca)),  # no client certificate
        ClientTls(str(certs.ca), str(certs.other_cert), str(certs.other_key)),  # another CA
        ClientTls(str(certs.other_ca), str(certs.client_cert), str(certs.client_key)),  # wrong CA
        None,  # plain text
    ]
    for tls in refused:
        with pytest.raises(SwitchError) as e:
            Controller(tls_switch.addr, timeout=2.0, tls=tls).connect(connect_timeout=2.0)
        assert "\n" not in str(e.value) and "switch unreachable" in str(e.value)


SHELL = textwrap.dedent(
    """
    import json, os, sys, threading
    import p4runtime_sh.shell as sh
    from p4runtime_sh.p4runtime import SSLOptions

    addr, p4info, bmv2, ca, cert, key = sys.argv[1:7]
    ssl = SSLOptions(False, ca, cert or None, key or None)
    done = {}

    def run():
        try:
            sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
                     config=sh.FwdPipeConfig(p4info, bmv2), ssl_options=ssl)
            te = sh.TableEntry("SwitchIngress.local_address.switch_ipv4")(
                action="SwitchIngress.local_address.is_switch")
            te.match["hdr.ipv4.dstAddr"] = "10.0.0.254"
            te.action["mac"] = "02:00:00:00:00:fe"
            te.insert()
            n = sum(1 for _ in sh.TableEntry("SwitchIngress.local_address.switch_ipv4").read())
            done["entries"] = n
            sh.teardown()
        except BaseException as err:  # SystemExit included: setup exits on failure
            done["error"] = type(err).__name__

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    print(json.dumps(done or {"error": "no answer"}), flush=True)
    os._exit(0)
    """
)


def _shell(switch: Switch, programs: dict[str, Path], ca: Path, cert: Any, key: Any) -> dict:
    prefix = programs["dense"]
    args = [switch.addr, f"{prefix}.p4info.txtpb", f"{prefix}.json", str(ca), str(cert or ""),
            str(key or "")]  # fmt: skip
    done = subprocess.run(
        [shell_python(), "-c", SHELL, *args], capture_output=True, text=True, timeout=90
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_p4runtime_shell_over_tls(
    tls_switch: Switch, certs: Certs, programs: dict[str, Path]
) -> None:
    ok = _shell(tls_switch, programs, certs.ca, certs.client_cert, certs.client_key)
    assert ok == {"entries": 1}
    refused = _shell(tls_switch, programs, certs.ca, None, None)
    assert "entries" not in refused


def test_switch_cli_tls_errors_are_one_line(certs: Certs, tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "p4reduce-switch"
    bad = tmp_path / "not.pem"
    bad.write_text("hello")
    for extra, phrase in [
        (["--grpc-tls-cert", str(certs.server_cert)], "--grpc-tls-cert and --grpc-tls-key"),
        (["--grpc-tls-cert", str(bad), "--grpc-tls-key", str(certs.server_key)], "is not PEM"),
    ]:
        done = subprocess.run(
            [
                str(cli),
                "--no-p4",
                "--grpc-server-addr",
                "127.0.0.1:0",
                "--udp-listen",
                "127.0.0.1:0",
                *extra,
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert phrase in done.stderr and "Traceback" not in done.stderr


@pytest.fixture
def https_service(ctl: Controller, certs: Certs) -> Iterator[RegistrationService]:
    tls = TlsConfig(str(certs.server_cert), str(certs.server_key), str(certs.ca))
    svc = RegistrationService(ctl, port=0, default_slots=4, join_timeout=10.0, tls=tls)
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


def test_registration_over_https_with_client_certificates(
    https_service: RegistrationService, certs: Certs
) -> None:
    url = https_service.url
    assert url.startswith("https://")
    c = RegistrationClient(
        url, timeout=10, secret=SECRET, ca=str(certs.ca), cert=str(certs.client_cert),
        key=str(certs.client_key),
    )  # fmt: skip

    def join(r: int) -> Any:
        m = member(r)
        return c.join(7, r, 2, m.ip, m.udp_port, m.mac, m.switch_port)

    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(join, range(2)))
    assert {a.slot_base for a in got} == {0} and c.health()["status"] == "ok"
    refused = [
        RegistrationClient(url, timeout=5, secret=SECRET, ca=str(certs.ca)),  # no certificate
        RegistrationClient(
            url,
            timeout=5,
            secret=SECRET,
            ca=str(certs.ca),
            cert=str(certs.other_cert),
            key=str(certs.other_key),
        ),  # fmt: skip
        RegistrationClient(
            url,
            timeout=5,
            secret=SECRET,
            ca=str(certs.other_ca),
            cert=str(certs.client_cert),
            key=str(certs.client_key),
        ),  # fmt: skip  (the service's certificate does not chain to this CA)
        RegistrationClient(url.replace("https", "http"), timeout=5, secret=SECRET),
    ]
    for bad in refused:
        with pytest.raises(RegistrationError) as e:
            bad.job(7)
        assert e.value.status is None and "\n" not in str(e.value)
    assert c.leave(7, 0)["deleted"] is False  # the service still serves the right client


def test_tls_file_errors(ctl: Controller, certs: Certs, tmp_path: Path) -> None:
    from p4reduce.controller import InvalidArgument

    with pytest.raises(InvalidArgument, match="cannot load the TLS files"):
        RegistrationService(ctl, port=0, tls=TlsConfig(str(tmp_path / "no.pem"), "no.key"))
    with pytest.raises(RegistrationError, match="use an https:// URL"):
        RegistrationClient("http://127.0.0.1:1", ca=str(certs.ca))


def test_ctl_command_line_over_tls(
    tls_switch: Switch, certs: Certs, programs: dict[str, Path]
) -> None:
    ctl = Path(sys.executable).parent / "p4reduce-ctl"
    tls = ["--grpc-ca", str(certs.ca), "--grpc-cert", str(certs.client_cert), "--grpc-key",
           str(certs.client_key)]  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ctl), "--grpc-addr", tls_switch.addr, "--timeout", "5", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = run(*tls, "push", str(programs["dense"]))
    assert done.returncode == 0, done.stderr
    done = run(*tls, "--json", "job", "list")
    assert done.returncode == 0 and json.loads(done.stdout)["jobs"] == []
    done = run("--grpc-ca", str(certs.ca), "job", "list")  # no client certificate
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "over TLS" in done.stderr
    done = run("--grpc-cert", str(certs.client_cert), "job", "list")
    assert done.returncode == 1 and "need --grpc-ca" in done.stderr
