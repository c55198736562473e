"""The P4Runtime gRPC service (p4.v1.P4Runtime) of the embedded switch.

``P4RuntimeServer(device, address)`` serves one ``Device``: ``start()`` binds and returns the
port (``"127.0.0.1:0"`` picks a free one), ``stop()`` cancels every RPC, ends every stream and
joins every thread the server started. The servicer follows simple_switch_grpc (PI) and the
P4Runtime 1.4 specification; docs/p4runtime.md lists what is supported and how errors are
reported.
"""

from __future__ import annotations

import errno
import logging
import queue
import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc

from p4reduce import netaddr, portmap
from p4reduce.proto import p4runtime_pb2, p4runtime_pb2_grpc

from . import entities, pipeline_config
from .arbitration import Arbitration, Connection, election_id
from .device import Device
from .errors import (
    Code,
    P4RTError,
    failed_precondition,
    not_found,
    permission_denied,
    rpc_code,
    unimplemented,
    write_error_metadata,
)
from .tls import ServerTls

log = logging.getLogger("p4reduce.switch.p4runtime")

API_VERSION = "1.4.1"
READ_CHUNK = 1000  # entities per ReadResponse
MAX_MESSAGE = 256 * 1024 * 1024


class _End:
    """Queued to end a stream: ``code`` None for a normal end."""

    def __init__(self, code: grpc.StatusCode | None = None, message: str = "") -> None:
        self.code, self.message = code, message


def _stream_error(code: grpc.StatusCode, message: str, **details: Any) -> Any:
    resp = p4runtime_pb2.StreamMessageResponse()
    err = resp.error
    err.canonical_code = rpc_code(code)
    err.message = message
    for name, value in details.items():
        if name == "packet_out":
            err.packet_out.packet_out.CopyFrom(value)
        elif name == "digest_list_ack":
            err.digest_list_ack.digest_list_ack.CopyFrom(value)
        elif name == "other":
            err.other.other.CopyFrom(value)
    return resp


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device, arbitration: Arbitration) -> None:
        self.device = device
        self.arbitration = arbitration
        self._lock = threading.Lock()
        self._streams: dict[Connection, queue.SimpleQueue[Any]] = {}
        self._readers: set[threading.Thread] = set()
        self.closing = False

    # ------------------------------------------------------------------ helpers
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise not_found(f"no device with id {device_id} (this is {self.device.device_id})")

    @staticmethod
    def _fail(context: grpc.ServicerContext, exc: P4RTError) -> None:
        context.set_code(exc.code)
        context.set_details(exc.message)

    @staticmethod
    def _internal(context: grpc.ServicerContext, what: str, exc: Exception) -> None:
        log.exception("P4Runtime %s failed", what)
        context.set_code(grpc.StatusCode.INTERNAL)
        context.set_details(f"{what}: internal error: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ unary RPCs
    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
            self.arbitration.check_primary(request.role, election_id(request))
            pipeline_config.set_forwarding_pipeline_config(self.device, request)
        except P4RTError as exc:
            self._fail(context, exc)
        except Exception as exc:
            self._internal(context, "SetForwardingPipelineConfig", exc)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._check_device(request.device_id)
            return pipeline_config.get_forwarding_pipeline_config(self.device, request)
        except P4RTError as exc:
            self._fail(context, exc)
        except Exception as exc:
            self._internal(context, "GetForwardingPipelineConfig", exc)
        return p4runtime_pb2.GetForwardingPipelineConfigResponse()

    def Write(self, request: Any, context: grpc.ServicerContext) -> Any:
        results: list[P4RTError | None] = []
        try:
            self._check_device(request.device_id)
            self.arbitration.check_primary(request.role, election_id(request))
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise unimplemented("only CONTINUE_ON_ERROR atomicity is supported")
            with self.device.lock:
                state = self.device.state
                if state is None:
                    raise failed_precondition("no forwarding pipeline config has been set")
                for update in request.updates:
                    try:
                        entities.write(state, update)
                        results.append(None)
                    except P4RTError as exc:
                        results.append(exc)
                    except Exception as exc:
                        log.exception("P4Runtime Write update failed")
                        results.append(P4RTError(Code.INTERNAL, f"{type(exc).__name__}: {exc}"))
        except P4RTError as exc:
            self._fail(context, exc)
            return p4runtime_pb2.WriteResponse()
        except Exception as exc:
            self._internal(context, "Write", exc)
            return p4runtime_pb2.WriteResponse()
        if any(r is not None for r in results):
            context.set_trailing_metadata(write_error_metadata(results))
            context.set_code(grpc.StatusCode.UNKNOWN)
            failed = [r for r in results if r is not None]
            context.set_details(
                f"{len(failed)} of {len(results)} updates failed; first: {failed[0]}"
            )
        return p4runtime_pb2.WriteResponse()

    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            self._check_device(request.device_id)
            with self.device.lock:
                state = self.device.state
                if state is None:
                    raise failed_precondition("no forwarding pipeline config has been set")
                found: list[Any] = []
                for entity in request.entities:
                    if self.device.port_map is not None and portmap.wanted(entity):
                        found += portmap.encode(self.device.port_map())
                    else:
                        found += entities.read(state, entity)
        except P4RTError as exc:
            self._fail(context, exc)
            return
        except Exception as exc:
            self._internal(context, "Read", exc)
            return
        for start in range(0, max(len(found), 1), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=found[start : start + READ_CHUNK])

    # ------------------------------------------------------------------ the stream
    def StreamChannel(self, request_iterator: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        conn = Connection(q.put, context.peer())
        reader = threading.Thread(
            target=self._read_stream,
            args=(conn, q, request_iterator),
            name="p4runtime-stream",
            daemon=True,
        )
        with self._lock:
            if self.closing:
                context.set_code(grpc.StatusCode.UNAVAILABLE)
                context.set_details("the server is stopping")
                return
            self._streams[conn] = q
            self._readers.add(reader)
        context.add_callback(lambda: q.put(_End()))
        reader.start()
        try:
            while True:
                item = q.get()
                if isinstance(item, _End):
                    if item.code is not None:
                        context.set_code(item.code)
                        context.set_details(item.message)
                    return
                yield item
        finally:
            self.arbitration.remove(conn)
            with self._lock:
                self._streams.pop(conn, None)

    def _read_stream(self, conn: Connection, q: Any, request_iterator: Any) -> None:
        try:
            for req in request_iterator:
                try:
                    self._on_stream_request(conn, req)
                except P4RTError as exc:  # the stream ends with this status
                    q.put(_End(exc.code, exc.message))
                    return
        except Exception as exc:  # the RPC was cancelled or the client went away
            log.debug("stream from %s ended: %s", conn.peer, exc)
        finally:
            q.put(_End())
            with self._lock:
                self._readers.discard(threading.current_thread())

    def _on_stream_request(self, conn: Connection, req: Any) -> None:
        which = req.WhichOneof("update")
        if which == "arbitration":
            self.arbitration.update(conn, req.arbitration)
            return
        if which == "packet":
            try:
                if not self.arbitration.is_primary(conn):
                    raise permission_denied("only the primary controller can send packets")
                self.device.packet_out(req.packet)
            except P4RTError as exc:
                conn.send(_stream_error(exc.code, exc.message, packet_out=req.packet))
        elif which == "digest_ack":
            try:
                if not self.arbitration.is_primary(conn):
                    raise permission_denied("only the primary controller can acknowledge digests")
                self.device.digest_ack(req.digest_ack.digest_id, req.digest_ack.list_id)
            except P4RTError as exc:
                conn.send(_stream_error(exc.code, exc.message, digest_list_ack=req.digest_ack))
        elif which == "other":
            conn.send(
                _stream_error(
                    Code.UNIMPLEMENTED, "'other' stream messages are not supported", other=req.other
                )
            )
        else:
            conn.send(_stream_error(Code.INVALID_ARGUMENT, "empty stream message"))

    # ------------------------------------------------------------------ routing
    def route(self, msg: Any) -> None:
        """Send a PacketIn / DigestList message to the primary controller of every role."""
        for conn in self.arbitration.primaries():
            conn.send(msg)

    def close_streams(self) -> None:
        with self._lock:
            self.closing = True
            queues = list(self._streams.values())
        for q in queues:
            q.put(_End(grpc.StatusCode.UNAVAILABLE, "the server is stopping"))

    def join_readers(self, timeout: float) -> None:
        with self._lock:
            readers = list(self._readers)
        for t in readers:
            t.join(timeout)


def check_free(address: str) -> None:
    """Raise ``OSError`` (one line) when ``address`` (``HOST:PORT``) cannot be listened on.

    gRPC's own bind failure is a log line of its C core and a bare "failed"; probing with a
    plain socket first names the address in use in our one line.
    """
    try:
        host, port = netaddr.split(address)
    except netaddr.AddressError:
        return  # a malformed address is gRPC's to refuse
    if port == 0:
        return  # port 0 is always free
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise OSError(f"cannot resolve {host!r}: {e.strerror}") from None
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as s:
            # as a server would: a port in TIME_WAIT is free, one with a listener is not
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(sockaddr)
                s.listen(1)
            except OSError as e:
                if e.errno != errno.EADDRINUSE:
                    continue  # e.g. ::1 of "localhost" without IPv6: gRPC binds what it can
                where = f"{sockaddr[0]}:{sockaddr[1]}"
                text = e.strerror or str(e)
                raise OSError(text if where == address else f"{text} ({where})") from None


class P4RuntimeServer:
    """A gRPC server exposing ``device`` as P4Runtime device ``device.device_id``."""

    def __init__(
        self,
        device: Device,
        address: str = "127.0.0.1:9559",
        max_workers: int = 32,
        tls: ServerTls | None = None,
    ) -> None:
        self.device = device
        self.address = address
        self.tls = tls  # None: plain TCP (the default); else TLS, mutual with a client CA
        self.max_workers = max_workers
        self.arbitration = Arbitration(device.device_id)
        self.servicer = P4RuntimeServicer(device, self.arbitration)
        self.port: int | None = None
        self._server: grpc.Server | None = None
        self._executor: futures.ThreadPoolExecutor | None = None

    def start(self) -> int:
        """Bind and serve; returns the port (useful with ``host:0``)."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        creds = self.tls.credentials() if self.tls is not None else None  # before binding
        check_free(self.address)
        self._executor = futures.ThreadPoolExecutor(
            max_workers=self.max_workers, thread_name_prefix="p4runtime"
        )
        server = grpc.server(
            self._executor,
            options=[
                # device configs carry the program's whole syntax tree
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
                # gRPC sets SO_REUSEPORT by default: a second switch on the same port would
                # start too and the kernel would split the controllers between the two
                ("grpc.so_reuseport", 0),
            ],
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.servicer, server)
        try:
            if creds is not None:
                port = server.add_secure_port(self.address, creds)
            else:
                port = server.add_insecure_port(self.address)
        except RuntimeError:  # grpcio >= 1.5x raises where older ones returned 0
            port = 0
        if port == 0:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise OSError(f"cannot bind P4Runtime server to {self.address}")
        server.start()
        self._server = server
        self.port = port
        self.servicer.closing = False
        self.device.stream_sink = self.servicer.route
        return port

    def stop(self, grace: float | None = None) -> None:
        """Stop serving: end every stream and RPC, wait for every thread started here.

        Streams end at once (status UNAVAILABLE). Unary RPCs in flight are cancelled at once,
        or given ``grace`` seconds to finish; their handlers run to completion either way.
        """
        server, self._server = self._server, None
        if server is None:
            return
        if self.device.stream_sink == self.servicer.route:
            self.device.stream_sink = None
        self.servicer.close_streams()
        server.stop(grace).wait()
        if grace is not None:  # grpc's grace timer thread may still be returning
            for t in threading.enumerate():
                if "cancel_all_calls_after_grace" in t.name:
                    t.join(grace + 1.0)
        self.servicer.join_readers(timeout=5.0)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> P4RuntimeServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


__all__ = ["P4RuntimeServer", "P4RuntimeServicer", "API_VERSION"]
