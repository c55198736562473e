"""TLS for the P4Runtime server (docs/p4runtime.md, "TLS"): a server certificate and key,
and optionally a CA whose certificates clients must present (mutual TLS), as gRPC's
``ssl_server_credentials`` takes them. Plain TCP stays the default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


class TlsFilesError(ValueError):
    """A TLS file that cannot be read or is not PEM: one line naming the file."""


def read_pem(path: str | Path, what: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TlsFilesError(f"cannot read the {what} {path}: {err.strerror}") from None
    if b"-----BEGIN " not in data:
        raise TlsFilesError(f"the {what} {path} is not PEM")
    return data


@dataclass(frozen=True)
class ServerTls:
    cert: str
    key: str
    client_ca: str | None = None  # set: clients must present a certificate signed by it

    def credentials(self) -> grpc.ServerCredentials:
        pair = (read_pem(self.key, "TLS key"), read_pem(self.cert, "TLS certificate"))
        ca = read_pem(self.client_ca, "client CA") if self.client_ca else None
        return grpc.ssl_server_credentials(
            [pair], root_certificates=ca, require_client_auth=ca is not None
        )
