"""The native I/O loop (``runtime/ioloop.c``) from Python: build it, lend it the ports' sockets,
give it a handler, read its counters.

The C file is compiled at run time by ``build.py`` (the one compiler lookup, honouring
``$P4REDUCE_CC``) into a shared object cached by the SHA-256 of its sources and flags, in
``$P4REDUCE_CACHE_DIR`` or ``~/.cache/p4reduce/native`` (the directory the native engine
caches into), so a second start is instant. No compiler: ``load()`` returns None and ``unavailable_reason()`` says why in one
line; the switch then runs its Python loop. ``load(sanitize=True)`` builds a separate
AddressSanitizer/UBSan object for tests (it needs libasan preloaded into the process).

The sockets stay owned by the Port objects (switch/ports/), which opened and configured them;
the loop only borrows their file descriptors while it runs. See docs/ports.md, "native I/O
loop".
"""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..ports.base import MAX_FRAME, Port, PortCounters
from ..ports.ipudp import Endpoints, NotUdp
from ..ports.raw import RawSocketPort
from ..ports.udp import UdpAdapter, UdpPort
from .build import BuildError, build_files
from .build import compiler as compiler  # the one lookup, re-exported for the loop's callers

RUNTIME = Path(__file__).resolve().parent / "runtime"
SOURCES = ("ioloop.c", "ioloop.h", "p4r_handler.h")
ABI = 2
REASONS = (
    "runt",
    "oversize",
    "mtu_exceeded",
    "buffer_full",
    "send_error",
    "closed",
    "not_ipv4",
    "not_udp",
    "ip_fragment",
    "malformed",
    "port_closed",
    "backlog_full",
    "unknown_sender",
)
ERRNO_SLOTS = 8
_CFLAGS = ("-O2", "-g", "-shared", "-fPIC", "-pthread", "-Wall", "-Wextra", "-std=gnu11")
_SANITIZE = ("-O1", "-g", "-shared", "-fPIC", "-pthread", "-fno-omit-frame-pointer",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-std=gnu11")  # fmt: skip

# The C function types of p4r_handler.h, for handlers written in Python (tests, fallbacks).
EMIT_FN = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8), ctypes.c_uint32
)
HANDLER_FN = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.c_uint32,
    ctypes.POINTER(ctypes.c_uint8),
    ctypes.c_uint32,
    EMIT_FN,
    ctypes.c_void_p,
)


class _Counters(ctypes.Structure):
    _fields_ = [
        ("rx_frames", ctypes.c_uint64),
        ("tx_frames", ctypes.c_uint64),
        ("rx_dropped", ctypes.c_uint64 * len(REASONS)),
        ("tx_dropped", ctypes.c_uint64 * len(REASONS)),
        ("errno_value", ctypes.c_int32 * ERRNO_SLOTS),
        ("errno_count", ctypes.c_uint64 * ERRNO_SLOTS),
        ("errno_other", ctypes.c_uint64),
    ]


_STAT_NAMES = (
    "batches",
    "handled",
    "handler_failed",
    "no_handler",
    "no_such_port",
    "cpu_queued",
    "cpu_dropped",
    "inject_dropped",
    "gso_sends",
    "gro_receives",
    "gso_refused",
)


class _Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in _STAT_NAMES]


@dataclass(frozen=True)
class LoopStats:
    """Whole-loop counters (ioloop.h p4r_loop_stats)."""

    batches: int
    handled: int
    handler_failed: int
    no_handler: int
    no_such_port: int
    cpu_queued: int
    cpu_dropped: int
    inject_dropped: int
    gso_sends: int  # UDP sends that carried several datagrams (UDP_SEGMENT)
    gro_receives: int  # UDP super-datagrams received (UDP_GRO)
    gso_refused: int  # segmented sends the kernel refused (then per datagram)


log = logging.getLogger("p4reduce.switch")

OFFLOAD_ENV = "P4REDUCE_UDP_OFFLOAD"  # 0/off/no/false: per-datagram UDP I/O (host driver too)


def udp_offload_default() -> bool:
    """Whether UDP GSO/GRO is wanted: yes unless $P4REDUCE_UDP_OFFLOAD says 0/off/no/false
    (the host's native driver reads the same variable, host/_engine/udpio.h)."""
    return os.environ.get(OFFLOAD_ENV, "").strip().lower() not in ("0", "off", "no", "false")


class NativeUnavailable(RuntimeError):
    """The native loop cannot be built or loaded here; the message is one line."""


def build(*, sanitize: bool = False) -> Path:
    """The shared object, compiled if the cache has none for these sources and flags
    (build.build_files: the one compiler lookup and cache of every run-time build).
    Raises NativeUnavailable (one line) when there is no compiler or it fails."""
    try:
        return build_files(
            "ioloop-asan" if sanitize else "ioloop",
            RUNTIME / SOURCES[0],
            _SANITIZE if sanitize else _CFLAGS,
            depends=[RUNTIME / name for name in SOURCES[1:]],
            suffix=".so",
            timeout=120,
        )
    except BuildError as exc:
        raise NativeUnavailable(str(exc)) from None


_libs: dict[bool, ctypes.CDLL] = {}
_reason: str | None = None
_lock = threading.Lock()


def load(*, sanitize: bool = False) -> ctypes.CDLL | None:
    """The loaded library, or None (``unavailable_reason()`` says why)."""
    global _reason
    with _lock:
        if sanitize not in _libs:
            try:
                lib = ctypes.CDLL(str(build(sanitize=sanitize)))
            except (NativeUnavailable, OSError) as exc:
                _reason = str(exc)
                return None
            _declare(lib)
            if lib.p4r_ioloop_abi() != ABI:
                _reason = f"ioloop ABI {lib.p4r_ioloop_abi()} != {ABI}"
                return None
            _libs[sanitize] = lib
        return _libs[sanitize]


def unavailable_reason() -> str | None:
    return _reason


def _declare(lib: ctypes.CDLL) -> None:
    vp, u8p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8)
    u32, u16, i32, c_int = ctypes.c_uint32, ctypes.c_uint16, ctypes.c_int32, ctypes.c_int
    sig = {
        "p4r_ioloop_new": (vp, [i32, u32]),
        "p4r_ioloop_add_udp_adapter": (c_int, [vp, c_int, u32, u16, c_int, ctypes.c_char_p, u16]),
        "p4r_ioloop_add_udp_port": (c_int, [vp, u32, u32, u16]),
        "p4r_ioloop_add_raw_port": (c_int, [vp, u32, c_int]),
        "p4r_ioloop_set_handler": (None, [vp, vp, vp]),
        "p4r_ioloop_udp_offload": (c_int, [vp, c_int]),
        "p4r_ioloop_start": (c_int, [vp]),
        "p4r_ioloop_stop": (c_int, [vp]),
        "p4r_ioloop_free": (None, [vp]),
        "p4r_ioloop_inject": (c_int, [vp, u32, ctypes.c_char_p, u32]),
        "p4r_ioloop_transmit": (c_int, [vp, u32, ctypes.c_char_p, u32]),
        "p4r_ioloop_cpu_fd": (c_int, [vp]),
        "p4r_ioloop_cpu_pop": (c_int, [vp, ctypes.POINTER(u32), u8p]),
        "p4r_ioloop_port_counters": (c_int, [vp, u32, ctypes.POINTER(_Counters)]),
        "p4r_ioloop_adapter_counters": (c_int, [vp, ctypes.POINTER(_Counters)]),
        "p4r_ioloop_stats": (None, [vp, ctypes.POINTER(_Stats)]),
        "p4r_ioloop_abi": (c_int, []),
        "p4r_udp_build_frame": (
            c_int,
            [u8p, u8p, u32, ctypes.c_char_p, ctypes.c_char_p, u32, u32, u16, u16, u16],
        ),
        "p4r_udp_payload": (c_int, [ctypes.c_char_p, u32, ctypes.POINTER(u32)]),
        "p4r_port_mac": (None, [u32, u8p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _need(lib: ctypes.CDLL | None) -> ctypes.CDLL:
    if lib is None:
        lib = load()
    if lib is None:
        raise NativeUnavailable(unavailable_reason() or "native I/O loop unavailable")
    return lib


def _ip(text: str) -> int:
    return int.from_bytes(socket.inet_aton(text), "big")


# -- the framing, for the differential test against switch/ports/ipudp.py ---------------------


def build_frame(
    payload: bytes, ends: Endpoints, ip_id: int, lib: ctypes.CDLL | None = None
) -> bytes:
    """ipudp.build_frame, computed by ioloop.c."""
    lib = _need(lib)
    out = (ctypes.c_uint8 * (42 + len(payload)))()
    src = (ctypes.c_uint8 * max(1, len(payload))).from_buffer_copy(payload or b"\0")
    n = lib.p4r_udp_build_frame(
        out, src, len(payload), ends.eth_dst, ends.eth_src, _ip(ends.ip_src), _ip(ends.ip_dst),
        ends.udp_src, ends.udp_dst, ip_id & 0xFFFF,
    )  # fmt: skip
    if n < 0:
        raise ValueError(f"payload of {len(payload)} bytes is too long for one UDP datagram")
    return bytes(out)[:n]


def udp_payload(frame: bytes, lib: ctypes.CDLL | None = None) -> bytes:
    """ipudp.udp_payload, computed by ioloop.c (raises NotUdp with the same reasons)."""
    lib = _need(lib)
    offset = ctypes.c_uint32()
    n = lib.p4r_udp_payload(frame, len(frame), ctypes.byref(offset))
    if n < 0:
        raise NotUdp(REASONS[-1 - n])
    return frame[offset.value : offset.value + n]


def port_mac(number: int, lib: ctypes.CDLL | None = None) -> bytes:
    lib = _need(lib)
    out = (ctypes.c_uint8 * 6)()
    lib.p4r_port_mac(number, out)
    return bytes(out)


# -- the loop ---------------------------------------------------------------------------------


def _to_port_counters(c: _Counters) -> PortCounters:
    import errno as errno_mod

    out = PortCounters(rx_frames=c.rx_frames, tx_frames=c.tx_frames)
    for i, name in enumerate(REASONS):
        if c.rx_dropped[i]:
            out.rx_dropped[name] = c.rx_dropped[i]
        if c.tx_dropped[i]:
            out.tx_dropped[name] = c.tx_dropped[i]
    for value, count in zip(c.errno_value, c.errno_count, strict=True):
        if value and count:
            out.errors[errno_mod.errorcode.get(value, f"errno{value}")] += count
    if c.errno_other:
        out.errors["other"] += c.errno_other
    return out


class NativeIoLoop:
    """The C loop over ``ports`` (as ``open_ports`` returns them). The ports keep their
    sockets; the loop borrows the descriptors from ``start()`` to ``stop()``, during which
    nothing else may read or write them."""

    def __init__(
        self,
        ports: Mapping[int, Port],
        *,
        cpu_port: int | None = None,
        queue_frames: int = 4096,
        lib: ctypes.CDLL | None = None,
        udp_offload: bool | None = None,
    ) -> None:
        self.lib = _need(lib)
        self.ports = dict(ports)
        handle = self.lib.p4r_ioloop_new(-1 if cpu_port is None else cpu_port, queue_frames)
        if not handle:
            raise OSError(ctypes.get_errno(), "cannot create the native I/O loop")
        self._h: int | None = handle
        self._handler_keepalive: object = None
        self._cpu_buf = (ctypes.c_uint8 * MAX_FRAME)()
        self.adapter: UdpAdapter | None = None
        # the UDP offloads in use on the adapter's socket: "gso", "gro" (docs/ports.md)
        self.offload: frozenset[str] = frozenset()
        try:
            self._add_ports()
            if self.adapter is not None:
                self._offload(udp_offload_default() if udp_offload is None else udp_offload)
        except BaseException:
            self.close()
            raise

    def _offload(self, want: bool) -> None:
        flags = self.lib.p4r_ioloop_udp_offload(self._h, int(want))
        if flags < 0:
            raise OSError(ctypes.get_errno(), "native I/O loop: cannot configure UDP offload")
        self.offload = frozenset(n for bit, n in ((1, "gso"), (2, "gro")) if flags & bit)
        if want and len(self.offload) < 2:
            missing = " and ".join(n.upper() for n in ("gso", "gro") if n not in self.offload)
            log.warning(
                "UDP %s unavailable on this kernel; the native I/O loop sends and receives "
                "one datagram per packet there (%s=0 turns both off)", missing, OFFLOAD_ENV,
            )  # fmt: skip

    def _add_ports(self) -> None:
        lib, h = self.lib, self._h
        for number, port in sorted(self.ports.items()):
            if isinstance(port, UdpPort):
                if self.adapter is None:
                    ad = self.adapter = port.adapter
                    rc = lib.p4r_ioloop_add_udp_adapter(
                        h, ad.fileno(), _ip(ad.listen[0]), ad.listen[1], int(ad._pktinfo),
                        ad.switch_mac, ad._ip_id,
                    )  # fmt: skip
                    self._check(rc, "UDP adapter")
                elif port.adapter is not self.adapter:
                    raise ValueError("the native I/O loop takes one UDP adapter")
                ip, udp_port = port.peer
                self._check(
                    lib.p4r_ioloop_add_udp_port(h, number, _ip(ip), udp_port), f"port {number}"
                )
            elif isinstance(port, RawSocketPort):
                self._check(lib.p4r_ioloop_add_raw_port(h, number, port.fileno()), f"port {number}")
            else:
                raise ValueError(
                    f"port {number}: the native I/O loop cannot drive {type(port).__name__}"
                )

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise ValueError(f"native I/O loop: cannot add {what} (rc {rc})")

    @property
    def handle(self) -> int:
        if self._h is None:
            raise RuntimeError("the native I/O loop is closed")
        return self._h

    def set_handler(self, fn: int | None, ctx: int | None, keepalive: object = None) -> None:
        """Run frames through the handler at address ``fn`` with ``ctx`` (None: drop them).
        Returns once no call of the previous handler is in progress. ``keepalive``: an
        object to hold while the handler is in use (e.g. a ctypes callback)."""
        self.lib.p4r_ioloop_set_handler(self.handle, fn or None, ctx or None)
        self._handler_keepalive = keepalive

    def start(self) -> None:
        if self.lib.p4r_ioloop_start(self.handle) != 0:
            raise RuntimeError("the native I/O loop cannot start (already started?)")

    def stop(self) -> None:
        if self._h is not None:
            self.lib.p4r_ioloop_stop(self._h)

    def close(self) -> None:
        """Stop and free the loop (the ports stay open: their owners close them)."""
        if self._h is not None:
            self.lib.p4r_ioloop_free(self._h)
            self._h = None

    def inject(self, port: int, frame: bytes) -> bool:
        """Run ``frame`` through the handler as arriving on ``port`` (packet-out)."""
        return self.lib.p4r_ioloop_inject(self.handle, port, frame, len(frame)) == 0

    def transmit(self, port: int, frame: bytes) -> bool:
        """Send ``frame`` out of ``port`` from the loop thread, counted like any output."""
        return self.lib.p4r_ioloop_transmit(self.handle, port, frame, len(frame)) == 0

    def cpu_fileno(self) -> int:
        """Readable while frames wait in the CPU queue."""
        return self.lib.p4r_ioloop_cpu_fd(self.handle)

    def drain_cpu(self) -> list[tuple[int, bytes]]:
        """Every (port, frame) waiting in the CPU queue, oldest first."""
        try:
            os.read(self.cpu_fileno(), 8)  # re-arm the eventfd before reading the queue
        except BlockingIOError:
            pass
        out = []
        port = ctypes.c_uint32()
        while (
            n := self.lib.p4r_ioloop_cpu_pop(self.handle, ctypes.byref(port), self._cpu_buf)
        ) >= 0:
            out.append((port.value, bytes(self._cpu_buf[:n])))
        return out

    def port_counters(self, number: int) -> PortCounters:
        c = _Counters()
        if self.lib.p4r_ioloop_port_counters(self.handle, number, ctypes.byref(c)) != 0:
            raise KeyError(f"the native I/O loop has no port {number}")
        return _to_port_counters(c)

    def adapter_counters(self) -> PortCounters:
        c = _Counters()
        if self.lib.p4r_ioloop_adapter_counters(self.handle, ctypes.byref(c)) != 0:
            return PortCounters()
        return _to_port_counters(c)

    def stats(self) -> LoopStats:
        s = _Stats()
        self.lib.p4r_ioloop_stats(self.handle, ctypes.byref(s))
        return LoopStats(**{name: getattr(s, name) for name in _STAT_NAMES})

    def merge_counters(self) -> None:
        """Add the loop's counts to the ports' own ``counters`` (after ``stop()``), so the
        Port objects tell the whole story, whichever loop drove them."""
        for number, port in self.ports.items():
            _add(port.counters, self.port_counters(number))
        if self.adapter is not None:
            _add(self.adapter.counters, self.adapter_counters())

    def __enter__(self) -> NativeIoLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _add(into: PortCounters, more: PortCounters) -> None:
    into.rx_frames += more.rx_frames
    into.tx_frames += more.tx_frames
    into.rx_dropped.update(more.rx_dropped)
    into.tx_dropped.update(more.tx_dropped)
    into.errors.update(more.errors)
