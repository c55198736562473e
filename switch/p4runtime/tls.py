"""TLS for the P4Runtime server (docs/p4runtime.md, "TLS"): a server certificate and key,
and optionally a CA whose certificates clients must present (mutual TLS), as gRPC's
``ssl_server_credentials`` takes them. Plain TCP stays the default."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

# the file reading and credentials are p4reduce.grpc_tls's, shared with the controller's client
from p4reduce.grpc_tls import TlsFilesError, read_pem, server_credentials

__all__ = ["ServerTls", "TlsFilesError", "read_pem"]


@dataclass(frozen=True)
class ServerTls:
    cert: str
    key: str
    client_ca: str | None = None  # set: clients must present a certificate signed by it

    def credentials(self) -> grpc.ServerCredentials:
        return server_credentials(self.cert, self.key, self.client_ca)
