"""The P4Runtime error model (the P4Runtime specification's error model; docs/p4runtime.md).

Everything below the RPC layer raises ``P4RTError(code, message)``. The server turns it into
a plain gRPC status, except for Write: there every update gets its own ``p4.v1.Error`` (OK for
those that succeeded) packed into a ``google.rpc.Status`` sent as the trailing metadata
``grpc-status-details-bin`` of an UNKNOWN status, as PI / simple_switch_grpc do.
"""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2

from p4reduce.proto import p4runtime_pb2

Code = grpc.StatusCode

# grpc.StatusCode -> the integer of google.rpc.Code
_RPC_CODE = {c: c.value[0] for c in grpc.StatusCode}


class P4RTError(Exception):
    """A request the server refuses: a gRPC status code and a message naming the problem."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def invalid(message: str) -> P4RTError:
    return P4RTError(Code.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RTError:
    return P4RTError(Code.NOT_FOUND, message)


def out_of_range(message: str) -> P4RTError:
    return P4RTError(Code.OUT_OF_RANGE, message)


def already_exists(message: str) -> P4RTError:
    return P4RTError(Code.ALREADY_EXISTS, message)


def unimplemented(message: str) -> P4RTError:
    return P4RTError(Code.UNIMPLEMENTED, message)


def failed_precondition(message: str) -> P4RTError:
    return P4RTError(Code.FAILED_PRECONDITION, message)


def permission_denied(message: str) -> P4RTError:
    return P4RTError(Code.PERMISSION_DENIED, message)


def resource_exhausted(message: str) -> P4RTError:
    return P4RTError(Code.RESOURCE_EXHAUSTED, message)


def rpc_code(code: grpc.StatusCode) -> int:
    """The google.rpc.Code number of a gRPC status code."""
    return _RPC_CODE[code]


def write_error_status(results: list[P4RTError | None]) -> status_pb2.Status:
    """The google.rpc.Status of a failed Write: one p4.v1.Error per update, in order."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    failed = sum(r is not None for r in results)
    status.message = f"{failed} of {len(results)} updates failed"
    for r in results:
        err = p4runtime_pb2.Error()
        if r is None:
            err.canonical_code = code_pb2.OK
        else:
            err.canonical_code = rpc_code(r.code)
            err.message = r.message
        status.details.add().Pack(err)
    return status


def write_error_metadata(results: list[P4RTError | None]) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying ``write_error_status(results)``."""
    return (("grpc-status-details-bin", write_error_status(results).SerializeToString()),)
