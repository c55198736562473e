"""The P4Runtime connection: a gRPC channel to one device, primary arbitration on a
StreamChannel, Write/Read/pipeline RPCs, and the translation of gRPC failures (the RPC status
and the per-update ``p4.v1.Error`` details of a Write) into one-line ``ControllerError``s.

This is the controller's only way to the switch (docs/controller.md): it speaks plain
P4Runtime 1.x, so it works the same against ``p4reduce-switch`` and ``simple_switch_grpc``.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import status_pb2

from p4reduce import grpc_tls
from p4reduce.proto import p4runtime_pb2, p4runtime_pb2_grpc

from .errors import ControllerError, NoPipeline, SwitchError

INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE

DEFAULT_ADDR = "127.0.0.1:9559"
DEFAULT_DEVICE_ID = 1
DEFAULT_ELECTION_ID = 1
# How long one P4Runtime call may take. Reads of a few thousand register cells took 6-9 s
# on a machine at load average 15 (the embedded switch is a Python process), so the default
# is generous; a dead switch is still found at once (UNAVAILABLE), and connecting has a
# shorter bound of its own.
DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 10.0
TIMEOUT_ENV = "P4REDUCE_P4RT_TIMEOUT"
TIMEOUT_HINT = f"--timeout or ${TIMEOUT_ENV} sets the limit"


def default_timeout() -> float:
    """``$P4REDUCE_P4RT_TIMEOUT`` (seconds) when set, else DEFAULT_TIMEOUT."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise ControllerError(f"${TIMEOUT_ENV}={raw!r}: a positive number of seconds expected")
    return value


def unreachable_reason(details: str, tls: bool) -> str:
    """The one-line cause of a failed first call, from gRPC's UNAVAILABLE details; '' when
    they name none of the causes a user can fix (gRPC then keeps retrying)."""
    if "Connection refused" in details:
        return "connection refused (is the switch running, and on this port?)"
    if "errors resolving" in details or "DNS resolution failed" in details:
        return "the host name does not resolve"
    if not tls:
        if "Socket closed" in details or "Connection reset" in details:
            # a TLS server closes a plain HTTP/2 connection at its first bytes
            return "the switch closed the connection (does it serve TLS? pass --grpc-ca FILE)"
        return ""
    if "WRONG_VERSION_NUMBER" in details:
        return "TLS handshake failed: the switch serves plain TCP (drop --grpc-ca)"
    if "CERTIFICATE_VERIFY_FAILED" in details or "certificate verify failed" in details:
        return (
            "TLS handshake failed: the switch's certificate is not signed by the --grpc-ca CA "
            "(or does not name this host)"
        )
    if "handshake" in details.lower():
        return "TLS handshake failed (check --grpc-ca and the address)"
    if "Socket closed" in details or "Connection reset" in details:
        # the server ends the handshake when it wants a client certificate it did not get
        return (
            "the switch closed the connection over TLS: it may require a client certificate "
            "signed by its CA (--grpc-cert and --grpc-key)"
        )
    return ""


WRITE_BATCH = 2000  # updates per WriteRequest (keeps messages far below gRPC's 4 MiB)

_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def code_name(code: int) -> str:
    return _CODE_NAMES.get(code, str(code))


class WriteFailed(SwitchError):
    """A Write in which some updates failed. ``errors`` has one (code name, message) per update
    of the request, ``("OK", "")`` for those that were applied."""

    def __init__(self, message: str, errors: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.errors = errors


def entity(msg: Any) -> Any:
    """Wrap a TableEntry, RegisterEntry, ... into a ``p4.v1.Entity``."""
    if isinstance(msg, p4runtime_pb2.Entity):
        return msg
    field = _ENTITY_FIELD[type(msg).__name__]
    e = p4runtime_pb2.Entity()
    getattr(e, field).CopyFrom(msg)
    return e


_ENTITY_FIELD = {
    "TableEntry": "table_entry",
    "CounterEntry": "counter_entry",
    "RegisterEntry": "register_entry",
    "PacketReplicationEngineEntry": "packet_replication_engine_entry",
    "ActionProfileMember": "action_profile_member",
    "ActionProfileGroup": "action_profile_group",
    "MeterEntry": "meter_entry",
    "DirectCounterEntry": "direct_counter_entry",
    "DirectMeterEntry": "direct_meter_entry",
    "ValueSetEntry": "value_set_entry",
    "DigestEntry": "digest_entry",
}


def unwrap(ent: Any) -> Any:
    """The message inside a ``p4.v1.Entity``."""
    return getattr(ent, ent.WhichOneof("entity"))


@dataclass(frozen=True)
class ClientTls:
    """TLS to the P4Runtime server: the CA its certificate must chain to, and for mutual TLS
    this client's certificate and key (PEM files)."""

    ca: str
    cert: str | None = None
    key: str | None = None

    def credentials(self) -> Any:
        """gRPC's channel credentials (``p4reduce.grpc_tls``, the switch's helper too);
        ControllerError naming a file that cannot be read or is not PEM."""
        try:
            return grpc_tls.channel_credentials(self.ca, self.cert, self.key)
        except grpc_tls.TlsFilesError as err:
            raise ControllerError(str(err)) from None


class Connection:
    """One controller's session with one P4Runtime device.

    ``connect()`` checks that the switch answers and, with ``arbitrate=True``, opens the
    StreamChannel and becomes primary with ``election_id`` (needed for Write and
    SetForwardingPipelineConfig; reads need no arbitration). Use it as a context manager.
    """

    def __init__(
        self,
        addr: str = DEFAULT_ADDR,
        device_id: int = DEFAULT_DEVICE_ID,
        election_id: int = DEFAULT_ELECTION_ID,
        role: str = "",
        timeout: float | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        if timeout is None:
            timeout = default_timeout()
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ControllerError(f"P4Runtime timeout {timeout!r}: a positive number of seconds")
        if not 0 < election_id < 1 << 128:
            raise ControllerError(f"election id must be in 1..2^128-1, got {election_id}")
        self.addr = addr
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.timeout = timeout
        self.tls = tls
        self.channel: Any = None
        self.stub: Any = None
        self.primary = False
        self._out: queue.Queue[Any] = queue.Queue()
        self._in: queue.Queue[Any] = queue.Queue()
        self._call: Any = None
        self._reader: threading.Thread | None = None
        # PacketIn payloads from the stream (and StreamErrors about our PacketOuts), for
        # the control messages of controller/cells.py; only while arbitrated
        self.packets: queue.Queue[bytes | str] = queue.Queue()
        # one exchange of control messages at a time: each takes every answer off the queue
        self.packet_lock = threading.Lock()
        # does the target serve RegisterEntry? None: not probed yet (controller/slots.py)
        self.register_access: bool | None = None

    # ------------------------------------------------------------------ lifecycle
    def connect(self, arbitrate: bool = True, connect_timeout: float | None = None) -> Connection:
        # a pipeline's device config (fetch_config: a K = 1024 BMv2 JSON is ~7 MB) is past
        # gRPC's default 4 MiB; the switch's server takes and sends up to this much
        opts = [("grpc.max_receive_message_length", 256 << 20)]
        if self.tls is not None:
            self.channel = grpc.secure_channel(self.addr, self.tls.credentials(), options=opts)
        else:
            self.channel = grpc.insecure_channel(self.addr, options=opts)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        wait = (
            min(self.timeout, DEFAULT_CONNECT_TIMEOUT)
            if connect_timeout is None
            else connect_timeout
        )
        deadline = time.monotonic() + wait
        reason = self._probe(wait)
        if reason:
            self.close()
            raise SwitchError(f"switch unreachable at {self.addr}: {reason}")
        try:  # no verdict from the probe: wait for the channel as before, to the same deadline
            # at least a moment: a channel already READY still answers through a callback
            grpc.channel_ready_future(self.channel).result(
                timeout=max(0.1, deadline - time.monotonic())
            )
        except grpc.FutureTimeoutError:
            self.close()
            raise SwitchError(
                f"switch unreachable at {self.addr} (no P4Runtime server answered"
                + (" over TLS: check the CA, the certificates and the address" if self.tls else "")
                + f" within {wait:g} s)"
            ) from None
        if arbitrate:
            try:
                self._arbitrate()
            except BaseException:
                self.close()
                raise
        return self

    def _probe(self, wait: float) -> str:
        """One Capabilities call that fails at once (no wait-for-ready) when nothing listens or
        the handshake fails: the reason as a sentence, or '' when the switch answered (any
        status but UNAVAILABLE) or the failure says nothing certain."""
        try:
            self.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=wait)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNAVAILABLE:
                return unreachable_reason(str(err.details()), self.tls is not None)
        return ""

    def close(self) -> None:
        if self._call is not None:
            self._out.put(None)
            self._call.cancel()
            if self._reader is not None:
                self._reader.join(5)
            self._call = None
            self._reader = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        self.primary = False

    def __enter__(self) -> Connection:
        if self.channel is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ arbitration
    def _election(self, msg: Any) -> None:
        msg.high = self.election_id >> 64
        msg.low = self.election_id & ((1 << 64) - 1)

    def _arbitrate(self) -> None:
        # fresh queues: an earlier stream's reader may have left its end (an error) in them
        self._out, self._in = queue.Queue(), queue.Queue()
        self._call = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(
            target=self._read_stream, name="p4reduce-ctl-stream", daemon=True
        )
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        if self.role:
            req.arbitration.role.name = self.role
        self._election(req.arbitration.election_id)
        self._out.put(req)
        while True:
            try:
                reply = self._in.get(timeout=self.timeout)
            except queue.Empty:
                raise SwitchError(
                    f"arbitration: the switch at {self.addr} did not answer within "
                    f"{self.timeout:g} s ({TIMEOUT_HINT})"
                ) from None
            if isinstance(reply, grpc.RpcError):
                code = reply.code()
                if code == grpc.StatusCode.INVALID_ARGUMENT:
                    raise SwitchError(
                        f"election id {self.election_id} is held by another controller of device "
                        f"{self.device_id} (is p4reduce-ctl serve running? pass --election-id)"
                    )
                if code == grpc.StatusCode.NOT_FOUND:
                    raise SwitchError(f"no device {self.device_id} at {self.addr}")
                raise translate(reply, "arbitration", self)
            if reply is None:
                raise SwitchError(f"switch at {self.addr} closed the stream")
            if reply.WhichOneof("update") != "arbitration":
                continue
            status = reply.arbitration.status.code
            if status == grpc.StatusCode.OK.value[0]:
                self.primary = True
                return
            eid = reply.arbitration.election_id
            held = (eid.high << 64) | eid.low
            raise SwitchError(
                f"not the primary controller of device {self.device_id}: election id "
                f"{self.election_id} is below the primary's {held} (pass a higher --election-id)"
            )

    def _read_stream(self) -> None:
        try:
            for msg in self._call:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._in.put(msg)
                    status = msg.arbitration.status.code
                    self.primary = status == grpc.StatusCode.OK.value[0]
                elif kind == "packet":
                    self.packets.put(bytes(msg.packet.payload))
                elif kind == "error" and msg.error.WhichOneof("details") == "packet_out":
                    e = msg.error
                    self.packets.put(
                        f"{code_name(e.canonical_code)}: {' '.join(e.message.split())}"
                    )
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                self._in.put(err)
            self.primary = False
            return
        self._in.put(None)
        self.primary = False

    # ------------------------------------------------------------------ packet I/O
    def packet_out(self, payload: bytes) -> None:
        """Send one PacketOut (no metadata: the p4reduce programs have no controller header),
        injected by the switch on its CPU port. A connection made without arbitration
        (a read-only command) becomes primary first: P4Runtime takes PacketOut from the
        primary only, and sends it the PacketIn answers."""
        if self._call is None:
            self._arbitrate()
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        self._out.put(req)

    # ------------------------------------------------------------------ RPCs
    def write(self, updates: Iterable[tuple[int, Any]], what: str = "write") -> None:
        """Apply (update type, entity) pairs, ``WRITE_BATCH`` per request, in order. Raises
        ``WriteFailed`` (with every update's outcome in the failing request) on errors."""
        batch: list[tuple[int, Any]] = []
        for update in updates:
            batch.append(update)
            if len(batch) >= WRITE_BATCH:
                self._write(batch, what)
                batch = []
        if batch:
            self._write(batch, what)

    def _write(self, updates: Sequence[tuple[int, Any]], what: str) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        self._election(req.election_id)
        req.atomicity = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
        for utype, ent in updates:
            u = req.updates.add()
            u.type = utype
            u.entity.CopyFrom(entity(ent))
        with self._rpc(what):
            self.stub.Write(req, timeout=self.timeout)

    def read(self, entities: Iterable[Any], what: str = "read") -> list[Any]:
        """Read the entities (wildcards allowed); returns the messages inside the replies."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        for ent in entities:
            req.entities.append(entity(ent))
        if not req.entities:
            return []
        out = []
        with self._rpc(what):
            for resp in self.stub.Read(req, timeout=self.timeout):
                out.extend(unwrap(e) for e in resp.entities)
        return out

    def get_pipeline(self, response_type: int = 0) -> Any:
        """The running ``ForwardingPipelineConfig``; ``NoPipeline`` when there is none."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=response_type
        )
        with self._rpc("get pipeline"):
            resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        if not resp.config.HasField("p4info") or not resp.config.p4info.tables:
            raise self.no_pipeline()
        return resp.config

    def set_pipeline(self, p4info: Any, device_config: bytes, cookie: int | None = None) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        if self.role:
            req.role = self.role
        self._election(req.election_id)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        with self._rpc("push"):
            self.stub.SetForwardingPipelineConfig(req, timeout=max(self.timeout, 60.0))

    @contextlib.contextmanager
    def _rpc(self, what: str) -> Iterator[None]:
        """Around one unary RPC: its gRPC error as a ControllerError (``translate``); a
        channel closed meanwhile (a reconnection; grpc raises ValueError) as SwitchError."""
        try:
            yield
        except grpc.RpcError as err:
            raise translate(err, what, self) from None
        except ValueError:
            raise SwitchError(
                f"{what}: switch unreachable at {self.addr} (its connection was lost; reconnecting)"
            ) from None

    def no_pipeline(self) -> NoPipeline:
        return NoPipeline(
            f"no pipeline on device {self.device_id} at {self.addr} (run p4reduce-ctl push first)"
        )


def _details(err: Any) -> list[tuple[str, str]]:
    """The per-update p4.v1.Error list of a failed Write, if the status carries one."""
    try:
        md = dict(err.trailing_metadata() or ())
    except Exception:  # noqa: BLE001 - a call without metadata
        return []
    raw = md.get("grpc-status-details-bin")
    if not raw:
        return []
    out = []
    for d in status_pb2.Status.FromString(raw).details:
        e = p4runtime_pb2.Error()
        if d.Unpack(e):
            out.append((code_name(e.canonical_code), e.message))
    return out


def translate(err: Any, what: str, conn: Connection) -> ControllerError:
    """One ``ControllerError`` for a failed RPC, with a one-line message."""
    code = err.code()
    details = " ".join((err.details() or "").split())
    if code == grpc.StatusCode.UNAVAILABLE:
        return SwitchError(
            f"switch unreachable at {conn.addr} ({what}: {details or 'unavailable'})"
        )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return SwitchError(
            f"{what}: the switch at {conn.addr} did not answer within {conn.timeout:g} s "
            f"({TIMEOUT_HINT})"
        )
    if code == grpc.StatusCode.FAILED_PRECONDITION and "pipeline" in details.lower():
        return conn.no_pipeline()
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return SwitchError(
            f"{what}: not the primary controller of device {conn.device_id} "
            f"(election id {conn.election_id}): {details}"
        )
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "metadata size" in details:
        # gRPC dropped the answer: the per-update errors of a large refused Write exceeded
        # its 16 KiB metadata limit; what they said is lost
        return WriteFailed(
            f"{what}: the switch refused the request and its per-update errors overflowed "
            f"gRPC's metadata limit ({details})",
            [(code.name, details)],
        )
    errors = _details(err)
    failed = [(c, m) for c, m in errors if c != "OK"]
    if failed:
        c, m = failed[0]
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        if c == "FAILED_PRECONDITION" and "pipeline" in m.lower():
            return conn.no_pipeline()
        return WriteFailed(f"{what}: {c}: {m}{more}", errors)
    if code == grpc.StatusCode.NOT_FOUND and "device" in details.lower():
        return SwitchError(f"{what}: no device {conn.device_id} at {conn.addr}: {details}")
    # a Write refused as a whole (no per-update details): every update shares the status
    return WriteFailed(f"{what}: {code.name}: {details or 'no details'}", [(code.name, details)])


def unsupported(err: ControllerError) -> bool:
    """Did the switch answer UNIMPLEMENTED to everything (simple_switch_grpc and
    RegisterEntry)?"""
    return (
        isinstance(err, WriteFailed)
        and bool(err.errors)
        and all(c == "UNIMPLEMENTED" for c, _ in err.errors)
    )
