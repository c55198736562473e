"""One TLS helper for both sides of P4Runtime (p4reduce.grpc_tls): the switch's server and the
controller's client read the PEM files the same way and report a bad one in the same line."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.controller.errors import ControllerError
from p4reduce.controller.p4rt import ClientTls
from p4reduce.switch.p4runtime.tls import ServerTls, TlsFilesError

from p4reduce import grpc_tls


def test_both_sides_report_a_bad_file_in_the_same_line(tmp_path: Path) -> None:
    good = tmp_path / "good.pem"
    good.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    missing = tmp_path / "missing.pem"
    not_pem = tmp_path / "plain.txt"
    not_pem.write_text("not a certificate\n")
    for key, want in (
        (missing, f"cannot read the TLS key {missing}: No such file or directory"),
        (not_pem, f"the TLS key {not_pem} is not PEM"),
    ):
        with pytest.raises(TlsFilesError) as server:
            ServerTls(cert=str(good), key=str(key)).credentials()
        with pytest.raises(ControllerError) as client:
            ClientTls(ca=str(good), cert=str(good), key=str(key)).credentials()
        assert str(server.value) == str(client.value) == want
    with pytest.raises(ControllerError, match=f"^the TLS CA {not_pem} is not PEM$"):
        ClientTls(ca=str(not_pem)).credentials()


def test_pem_files_make_credentials(tmp_path: Path) -> None:
    pem = tmp_path / "x.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert grpc_tls.read_pem(pem, "TLS CA").startswith(b"-----BEGIN ")
    assert grpc_tls.channel_credentials(pem) is not None  # gRPC checks the contents on use
