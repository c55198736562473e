"""The registration service's HTTP layer: request parsing, credentials, resource limits and
optional TLS, over ``http.server`` (docs/controller.md, "Credentials", "Limits", "TLS").

Every refusal is a status with ``{"error": "one line"}``; the limits each have their own:

| limit | status |
|---|---|
| request body larger than ``max_body`` bytes | 413 |
| a client (IP address) with ``max_waiting_per_client`` joins/barriers/recoveries waiting | 429 |
| ``max_jobs`` jobs tracked (joining, installing or ready) and a join for a new one | 507 |
| ``max_connections`` requests in progress at once (one thread each) | 503 |

A connection that has not sent its whole request (headers and body) ``request_timeout``
seconds after it was accepted is cut (a timer shuts its socket down), so slow or trickling
clients cannot hold threads either; waiting for other workers afterwards is not bounded by
it (the request's own ``timeout`` is).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from . import credentials
from .errors import Busy, ControllerError, InvalidArgument, TooLarge, TooManyWaiting

if TYPE_CHECKING:
    from .service import RegistrationService


@dataclass(frozen=True)
class Limits:
    """Bounds on what requests may make the service hold (docs/controller.md, "Limits")."""

    max_body: int = 64 * 1024  # bytes of one request body
    max_waiting_per_client: int = 64  # joins, barriers and recoveries waiting, per client IP
    max_jobs: int = 255  # jobs tracked at once (the switch has 255 job indexes)
    max_connections: int = 256  # requests in progress at once (a thread each)
    request_timeout: float = 10.0  # seconds to receive a request (headers and body)

    def __post_init__(self) -> None:
        for name in ("max_body", "max_waiting_per_client", "max_jobs", "max_connections"):
            if getattr(self, name) < 1:
                raise InvalidArgument(f"limit {name} must be at least 1")
        if not self.request_timeout > 0:
            raise InvalidArgument("limit request_timeout must be > 0 seconds")


@dataclass(frozen=True)
class TlsConfig:
    """Server side TLS: a certificate chain and key (PEM); with ``client_ca`` every client
    must present a certificate signed by it (mutual TLS)."""

    cert: str
    key: str
    client_ca: str | None = None

    def context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(self.cert, self.key)
            if self.client_ca is not None:
                ctx.load_verify_locations(self.client_ca)
                ctx.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as err:
            what = getattr(err, "strerror", None) or getattr(err, "reason", None) or err
            raise InvalidArgument(
                f"cannot load the TLS files ({self.cert}, {self.key}"
                + (f", {self.client_ca}" if self.client_ca else "")
                + f"): {what}"
            ) from None
        return ctx


class WaitGate:
    """Per client, how many requests are waiting (join, barrier, recover); refuses beyond
    the limit. Thread safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._waiting: Counter[str] = Counter()

    @contextmanager
    def hold(self, client: str) -> Iterator[None]:
        with self._lock:
            if self._waiting[client] >= self.limit:
                raise TooManyWaiting(
                    f"client {client} already has {self._waiting[client]} requests waiting "
                    f"(the limit is {self.limit}); try again when some are answered"
                )
            self._waiting[client] += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting[client] -= 1
                if not self._waiting[client]:
                    del self._waiting[client]

    def waiting(self, client: str) -> int:
        with self._lock:
            return self._waiting[client]


class Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every request thread
    block_on_close = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: Limits,
        tls: ssl.SSLContext | None,
    ) -> None:
        self.limits = limits
        self.tls = tls
        self._active = 0
        self._active_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Refuse (503, one line) instead of starting a thread past ``max_connections``."""
        with self._active_lock:
            full = self._active >= self.limits.max_connections
            if not full:
                self._active += 1
        if full:
            _refuse_busy(request, self.limits.max_connections)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._active_lock:
            self._active -= 1

    def finish_request(self, request: Any, client_address: Any) -> None:
        """In the request's thread: the TLS handshake (bounded by the request timeout), so a
        client that never completes it holds no more than its own thread."""
        request.settimeout(self.limits.request_timeout)
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                return  # no HTTP peer to answer: the handshake failed or timed out
        super().finish_request(request, client_address)


def _refuse_busy(request: socket.socket, limit: int) -> None:
    """A plain-text HTTP 503 written from the accepting thread (no TLS: the handshake would
    cost the thread that must stay free)."""
    body = (
        json.dumps({"error": Busy(f"{limit} requests in progress: try again").message}) + "\n"
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
    ).encode()
    try:
        request.settimeout(1.0)
        request.sendall(head + body)
    except OSError:
        pass


class Handler(BaseHTTPRequestHandler):
    """One request: parsed, authenticated by the service, answered with one JSON object."""

    svc: RegistrationService
    protocol_version = "HTTP/1.1"
    server_version = "p4reduce-ctl"
    server: Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.limits.request_timeout)
        self._received = False
        self._deadline = threading.Timer(self.server.limits.request_timeout, self._cut)
        self._deadline.daemon = True
        self._deadline.start()

    def _cut(self) -> None:
        """The request was not in by its deadline: shut the socket so the reader returns."""
        if not self._received:
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def request_received(self) -> None:
        """Headers and body are in: the deadline no longer applies."""
        self._received = True
        self._deadline.cancel()

    def finish(self) -> None:
        self._deadline.cancel()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    @property
    def client(self) -> str:
        return str(self.client_address[0])

    @property
    def credential(self) -> str | None:
        return credentials.bearer(self.headers.get("Authorization"))

    def send_json(self, status: int, body: Any) -> None:
        data = (json.dumps(body) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="p4reduce"')
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:
            pass  # the client went away; nothing to answer
        self.close_connection = True

    def body(self) -> dict[str, Any]:
        text = self.headers.get("Content-Length")
        try:
            length = int(text) if text else 0
        except ValueError:
            raise InvalidArgument(f"bad Content-Length {text!r}") from None
        if length < 0:
            raise InvalidArgument(f"bad Content-Length {text!r}")
        limit = self.server.limits.max_body
        if length > limit:
            raise TooLarge(f"request body of {length} bytes: the limit is {limit}")
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError:
            raise InvalidArgument("request body not received in time") from None
        if len(raw) < length:
            raise InvalidArgument(f"request body cut short ({len(raw)} of {length} bytes)")
        self.request_received()
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise InvalidArgument("request body is not JSON") from None
        if not isinstance(body, dict):
            raise InvalidArgument("request body is not a JSON object")
        return body

    def answer(self, fn: Callable[[], tuple[int, Any]]) -> None:
        try:
            status, body = fn()
            self.send_json(status, body)
        except ControllerError as err:
            self.send_json(err.status, {"error": str(err)})
        except Exception as err:  # noqa: BLE001 - answer, never drop the connection
            self.send_json(500, {"error": f"internal error: {type(err).__name__}: {err}"})

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.request_received()
        self.answer(lambda: self.svc.dispatch(self, "GET"))

    def do_POST(self) -> None:  # noqa: N802
        self.answer(lambda: self.svc.dispatch(self, "POST"))

    def do_PUT(self) -> None:  # noqa: N802
        self.answer(lambda: self.svc.dispatch(self, "PUT"))

    def do_DELETE(self) -> None:  # noqa: N802
        self.answer(lambda: self.svc.dispatch(self, "DELETE"))
