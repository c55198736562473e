"""TLS for P4Runtime, both sides (docs/p4runtime.md, "TLS"): reading the PEM files and making
gRPC's credentials. The switch's server (``switch/p4runtime/tls.py``) and the controller's
client (``controller/p4rt.py``) both use this, so a missing or non-PEM file reads the same
one line on either side. Plain TCP stays the default on both."""

from __future__ import annotations

from pathlib import Path

import grpc


class TlsFilesError(ValueError):
    """A TLS file that cannot be read or is not PEM: one line naming the file."""


def read_pem(path: str | Path, what: str) -> bytes:
    """The bytes of a PEM file; TlsFilesError naming ``what`` and the path otherwise."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TlsFilesError(f"cannot read the {what} {path}: {err.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsFilesError(f"the {what} {path} is not PEM")
    return data


def server_credentials(
    cert: str | Path, key: str | Path, client_ca: str | Path | None = None
) -> grpc.ServerCredentials:
    """A server certificate and key; with ``client_ca`` clients must present a certificate
    signed by it (mutual TLS)."""
    pair = (read_pem(key, "TLS key"), read_pem(cert, "TLS certificate"))
    ca = read_pem(client_ca, "client CA") if client_ca else None
    return grpc.ssl_server_credentials(
        [pair], root_certificates=ca, require_client_auth=ca is not None
    )


def channel_credentials(
    ca: str | Path, cert: str | Path | None = None, key: str | Path | None = None
) -> grpc.ChannelCredentials:
    """The CA the server's certificate must chain to; with ``cert`` and ``key`` this client's
    certificate for mutual TLS."""
    return grpc.ssl_channel_credentials(
        read_pem(ca, "TLS CA"),
        read_pem(key, "TLS key") if key is not None else None,
        read_pem(cert, "TLS certificate") if cert is not None else None,
    )
