"""``-i N@IFACE``: a switch port bound to a Linux network interface with an AF_PACKET raw
socket, as simple_switch does (it needs root or CAP_NET_RAW)."""

from __future__ import annotations

import errno
import logging
import socket
import struct

from .base import MAX_FRAME, MIN_FRAME, Port

log = logging.getLogger(__name__)

# Linux constants Python's socket module does not export on every version.
ETH_P_ALL = 0x0003
SOL_PACKET = getattr(socket, "SOL_PACKET", 263)
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = getattr(socket, "PACKET_OUTGOING", 4)
PACKET_IGNORE_OUTGOING = 23  # Linux 4.20+
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
_SOCKET_BUFFER = 8 << 20
# A receive burst bound, so a busy interface cannot starve the I/O loop's other sockets.
_MAX_SKIPS_PER_CALL = 64


def rx_drop_reason(size: int, pkttype: int) -> str | None:
    """Why a received frame of ``size`` bytes (its real length) is not delivered: "" for a
    copy of a frame leaving the interface (skipped, not counted), a drop reason, or None to
    deliver it."""
    if pkttype == PACKET_OUTGOING:
        return ""
    if size > MAX_FRAME:
        return "oversize"
    if size < MIN_FRAME:
        return "runt"
    return None


class RawSocketPort(Port):
    """Port ``number`` on interface ``ifname``: every frame the interface receives (promiscuous,
    all EtherTypes), and frames sent out of it verbatim."""

    def __init__(self, number: int, ifname: str, *, promiscuous: bool = True) -> None:
        super().__init__(number)
        self.ifname = ifname
        self._buffer = bytearray(MAX_FRAME)
        where = f"port {number}@{ifname}"
        try:
            self.ifindex = socket.if_nametoindex(ifname)
        except OSError:
            raise OSError(
                errno.ENODEV, f"{where}: there is no network interface named {ifname!r}"
            ) from None
        try:
            # Protocol 0 receives nothing until bind() names the interface and ETH_P_ALL, so
            # no frame from another interface can slip in between socket() and bind().
            self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise PermissionError(
                errno.EPERM,
                f"{where}: opening a raw socket needs root or the CAP_NET_RAW capability "
                "(run as root, or use -i N@udp:HOST:PORT, which needs no privilege)",
            ) from None
        try:
            self._configure(promiscuous)
        except OSError as exc:
            self._sock.close()
            if exc.errno == errno.ENODEV:
                raise OSError(exc.errno, f"{where}: interface {ifname!r} went away") from None
            raise OSError(exc.errno, f"{where}: {exc.strerror or exc}") from None

    def _configure(self, promiscuous: bool) -> None:
        sock = self._sock
        sock.bind((self.ifname, ETH_P_ALL))
        try:
            # The kernel never loops this socket's own sends back, but frames others (the
            # host's IP stack, another packet socket) transmit on the interface would come
            # back as PACKET_OUTGOING copies: they leave, they do not arrive. Have the kernel
            # skip them; receive() filters them too, for kernels older than 4.20.
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        if promiscuous:
            # A membership, unlike the interface flag, is undone by the kernel when the
            # socket closes, even if the process dies.
            mreq = struct.pack("iHH8s", self.ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        # Large buffers absorb bursts while Python processes a frame. The *FORCE options
        # pass net.core.rmem_max/wmem_max, which root may do; fall back to the capped kind.
        for force, plain in (
            (SO_RCVBUFFORCE, socket.SO_RCVBUF),
            (SO_SNDBUFFORCE, socket.SO_SNDBUF),
        ):
            try:
                sock.setsockopt(socket.SOL_SOCKET, force, _SOCKET_BUFFER)
            except OSError:
                sock.setsockopt(socket.SOL_SOCKET, plain, _SOCKET_BUFFER)
        sock.setblocking(False)

    def fileno(self) -> int:
        return self._sock.fileno()  # -1 once closed

    @property
    def closed(self) -> bool:
        return self._sock.fileno() == -1

    def receive(self) -> bytes | None:
        if self.closed:
            return None
        for _ in range(_MAX_SKIPS_PER_CALL):
            try:
                # MSG_TRUNC makes the kernel report the frame's real length even when it is
                # longer than the buffer, so an oversize frame is counted, not truncated.
                size, address = self._sock.recvfrom_into(self._buffer, 0, socket.MSG_TRUNC)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:
                # e.g. ENETDOWN when the interface goes down: an event, not a frame.
                self.counters.errors[errno.errorcode.get(exc.errno or 0, "unknown")] += 1
                return None
            reason = rx_drop_reason(size, address[2])
            if reason is None:
                self.counters.rx_frames += 1
                return bytes(self._buffer[:size])
            if reason:
                self.counters.rx_dropped[reason] += 1
        return None

    def send(self, frame: bytes) -> None:
        drops = self.counters.tx_dropped
        if self.closed:
            drops["closed"] += 1
        elif len(frame) < MIN_FRAME:
            drops["runt"] += 1
        elif len(frame) > MAX_FRAME:
            drops["oversize"] += 1
        else:
            try:
                self._sock.send(frame)
            except BlockingIOError:
                drops["buffer_full"] += 1
            except OSError as exc:
                # EMSGSIZE: larger than the interface's MTU; ENETDOWN/ENXIO: interface down.
                name = errno.errorcode.get(exc.errno or 0, "unknown")
                drops["mtu_exceeded" if exc.errno == errno.EMSGSIZE else "send_error"] += 1
                self.counters.errors[name] += 1
                if self.counters.errors[name] == 1:
                    log.warning("port %d@%s: send failed: %s", self.number, self.ifname, exc)
            else:
                self.counters.tx_frames += 1

    def close(self) -> None:
        self._sock.close()


def have_raw_socket_privilege() -> bool:
    """Whether this process may open AF_PACKET sockets (root with CAP_NET_RAW, or the bare
    capability). Tried rather than inferred from the uid: root in a container may lack it."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except OSError:
        return False
    return True
