"""The loopback port adapter: switch ports that stand for UDP peers, so unprivileged processes
reach the switch with ordinary UDP sockets (``-i N@udp:HOST:PORT``).

One UDP socket listens (default 127.0.0.1:9000). A datagram from the peer of port N arrives
on port N as the Ethernet/IPv4/UDP frame that peer's host would have sent to the listen
address; a UDP frame the switch sends out of port N leaves as a datagram from the listen
socket to N's peer. The full mapping, byte by byte, is in docs/ports.md.
"""

from __future__ import annotations

import errno
import logging
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping

from .base import MAX_FRAME, Port, PortCounters, PortSpec
from .ipudp import FRAME_OVERHEAD, Endpoints, NotUdp, build_frame, port_mac, udp_payload

log = logging.getLogger(__name__)

DEFAULT_LISTEN = ("127.0.0.1", 9000)
DEFAULT_SWITCH_MAC = bytes.fromhex("0200000000fe")
MAX_PAYLOAD = MAX_FRAME - FRAME_OVERHEAD  # 16342: the frame would exceed MAX_FRAME beyond it
# Big enough for any UDP datagram, so an oversize one is seen whole and counted, not truncated.
_RECV_BUFFER = 65536
_SOCKET_BUFFER = 4 << 20
# How many unusable datagrams one receive() call discards before returning None, so a flood
# from unknown senders cannot keep the I/O loop from its other sockets.
_MAX_DISCARDS_PER_CALL = 64
# Frames read for one port while another port's receive() was draining the shared socket.
_MAX_BACKLOG = 4096
# Errors an ICMP message from a peer's host can leave on a UDP socket: not frames, not fatal.
_UNREACHABLE = {
    errno.ECONNREFUSED,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.EHOSTDOWN,
    errno.ENETDOWN,
}
# Linux's IP_PKTINFO (Python's socket module does not export it): with it, recvmsg tells the
# destination address of each datagram, needed when listening on 0.0.0.0.
_IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)


def _resolve_ipv4(host: str, port: int, what: str) -> tuple[str, int]:
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)
    except socket.gaierror as exc:
        raise ValueError(f"{what}: cannot resolve {host!r} to an IPv4 address: {exc}") from None
    ip, resolved_port = infos[0][4][:2]
    return ip, resolved_port


class UdpPort(Port):
    """Switch port ``number``, standing for the UDP peer ``peer``. Shares the adapter's socket:
    ``source`` is the adapter, which the I/O loop should wait on once for all its ports."""

    def __init__(self, adapter: UdpAdapter, number: int, peer: tuple[str, int]) -> None:
        super().__init__(number)
        self.adapter = adapter
        self.peer = peer
        self.closed = False
        self.backlog: deque[bytes] = deque()

    def fileno(self) -> int:
        return self.adapter.fileno()

    @property
    def source(self) -> UdpAdapter:
        return self.adapter

    def receive(self) -> bytes | None:
        """This port's next frame. Frames for the adapter's other ports read on the way are
        kept in their backlogs (``pending()``), which ``adapter.receive()`` also drains."""
        return self.adapter._receive_for(self)

    def pending(self) -> int:
        return len(self.backlog)

    def send(self, frame: bytes) -> None:
        self.adapter._send(self, frame)

    def close(self) -> None:
        """Stop this port; the shared socket closes with the adapter's last open port."""
        if not self.closed:
            self.closed = True
            self.backlog.clear()
            if all(p.closed for p in self.adapter.ports.values()):
                self.adapter.close()


class UdpAdapter:
    """The shared UDP socket and one ``UdpPort`` per switch port. Also a frame source:
    ``receive()`` returns (port number, frame) for whichever port has one."""

    def __init__(
        self,
        listen: tuple[str, int] = DEFAULT_LISTEN,
        peers: Mapping[int, tuple[str, int]] | None = None,
        *,
        switch_mac: bytes = DEFAULT_SWITCH_MAC,
        log_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len(switch_mac) != 6:
            raise ValueError(f"switch MAC must be 6 bytes, got {len(switch_mac)}")
        self.switch_mac = switch_mac
        self.counters = PortCounters()  # drops and errors that belong to no port
        self._ip_id = 0
        self._buffer = bytearray(_RECV_BUFFER)
        self._unknown = _SenderLog(log_interval, clock)
        listen_ip, listen_port = _resolve_ipv4(*listen, what="UDP adapter listen address")
        self.ports: dict[int, UdpPort] = {}
        self._by_peer: dict[tuple[str, int], UdpPort] = {}
        for number, (host, port) in sorted((peers or {}).items()):
            peer = _resolve_ipv4(host, port, what=f"UDP peer of port {number}")
            if peer in self._by_peer:
                other = self._by_peer[peer].number
                raise ValueError(f"ports {other} and {number} both stand for UDP peer {peer}")
            self.ports[number] = self._by_peer[peer] = UdpPort(self, number, peer)

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.setblocking(False)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
            # On the wildcard address the frame's IP destination must be learnt per datagram.
            self._pktinfo = listen_ip == "0.0.0.0"
            if self._pktinfo:
                self._sock.setsockopt(socket.IPPROTO_IP, _IP_PKTINFO, 1)
            self._sock.bind((listen_ip, listen_port))
        except OSError as exc:
            self._sock.close()
            raise OSError(
                exc.errno,
                f"UDP adapter cannot listen on {listen_ip}:{listen_port}: {exc.strerror or exc}",
            ) from None
        self.listen: tuple[str, int] = self._sock.getsockname()  # the real port if 0 was asked
        if self.listen in self._by_peer:
            self.close()
            raise ValueError(f"a UDP peer is the adapter's own listen address {self.listen}")

    @classmethod
    def from_specs(
        cls, specs: Iterable[PortSpec], listen: tuple[str, int] = DEFAULT_LISTEN, **options
    ) -> UdpAdapter:
        """An adapter for the UDP specs among ``specs`` (interface specs are ignored)."""
        peers = {s.number: s.udp_peer for s in specs if s.udp_peer is not None}
        return cls(listen, peers, **options)

    # -- frame source ---------------------------------------------------------------------

    def fileno(self) -> int:
        return self._sock.fileno()  # -1 once closed

    @property
    def closed(self) -> bool:
        return self._sock.fileno() == -1

    def receive(self) -> tuple[int, bytes] | None:
        """One (port number, frame), or None when nothing deliverable is ready now."""
        for port in self.ports.values():
            if port.backlog:
                return port.number, port.backlog.popleft()
        return self._read()

    receive_tagged = receive

    def _receive_for(self, want: UdpPort) -> bytes | None:
        if want.backlog:
            return want.backlog.popleft()
        while (item := self._read()) is not None:
            number, frame = item
            if number == want.number:
                return frame
            other = self.ports[number]
            if len(other.backlog) >= _MAX_BACKLOG:
                other.counters.rx_dropped["backlog_full"] += 1
            else:
                other.backlog.append(frame)
        return None

    def _read(self) -> tuple[int, bytes] | None:
        if self.closed:
            return None
        for _ in range(_MAX_DISCARDS_PER_CALL):
            try:
                size, sender, dst_ip = self._recv()
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:
                if exc.errno not in _UNREACHABLE:
                    raise
                # An earlier datagram to some peer was refused; nothing to deliver now.
                self.counters.errors[errno.errorcode[exc.errno]] += 1
                continue
            port = self._by_peer.get(sender)
            if port is None:
                self.counters.rx_dropped["unknown_sender"] += 1
                self._unknown.note(sender, self.listen)
                continue
            if port.closed:
                port.counters.rx_dropped["port_closed"] += 1
                continue
            if size > MAX_PAYLOAD:
                port.counters.rx_dropped["oversize"] += 1
                continue
            ends = Endpoints(
                eth_dst=self.switch_mac,
                eth_src=port_mac(port.number),
                ip_src=sender[0],
                ip_dst=dst_ip,
                udp_src=sender[1],
                udp_dst=self.listen[1],
            )
            frame = build_frame(bytes(self._buffer[:size]), ends, self._ip_id)
            self._ip_id = (self._ip_id + 1) & 0xFFFF
            port.counters.rx_frames += 1
            return port.number, frame
        return None

    def _recv(self) -> tuple[int, tuple[str, int], str]:
        if not self._pktinfo:
            size, sender = self._sock.recvfrom_into(self._buffer)
            return size, sender, self.listen[0]
        size, ancillary, _flags, sender = self._sock.recvmsg_into(
            [self._buffer], socket.CMSG_SPACE(12)
        )
        dst_ip = self.listen[0]
        for level, kind, data in ancillary:
            if level == socket.IPPROTO_IP and kind == _IP_PKTINFO and len(data) >= 12:
                # struct in_pktinfo { int ifindex; in_addr spec_dst; in_addr addr; }: addr is
                # the destination in the datagram's IP header.
                dst_ip = socket.inet_ntoa(data[8:12])
        return size, sender, dst_ip

    # -- transmit -------------------------------------------------------------------------

    def _send(self, port: UdpPort, frame: bytes) -> None:
        drops = port.counters.tx_dropped
        if port.closed or self.closed:
            drops["closed"] += 1
            return
        if len(frame) > MAX_FRAME:
            drops["oversize"] += 1
            return
        try:
            payload = udp_payload(frame)
        except NotUdp as why:
            drops[why.reason] += 1
            return
        # The frame's own addresses are ignored: the port decides where the datagram goes.
        for attempt in (1, 2):
            try:
                self._sock.sendto(payload, port.peer)
            except BlockingIOError:
                drops["buffer_full"] += 1
                return
            except OSError as exc:
                if exc.errno in _UNREACHABLE and attempt == 1:
                    # A pending ICMP error from an earlier datagram surfaced here; it does
                    # not concern this one, so count it and try once more.
                    self.counters.errors[errno.errorcode[exc.errno]] += 1
                    continue
                drops["send_error"] += 1
                port.counters.errors[errno.errorcode.get(exc.errno or 0, "unknown")] += 1
                return
            port.counters.tx_frames += 1
            return

    def close(self) -> None:
        for port in self.ports.values():
            port.closed = True
            port.backlog.clear()
        self._sock.close()

    def __enter__(self) -> UdpAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SenderLog:
    """One warning per unknown sender, then at most one per ``interval`` seconds with the
    number suppressed meanwhile. Remembers a bounded number of senders, so spoofed floods
    cost bounded memory (a forgotten sender is simply logged again)."""

    MAX_SENDERS = 256

    def __init__(self, interval: float, clock: Callable[[], float]) -> None:
        self.interval = interval
        self.clock = clock
        self.seen: OrderedDict[tuple[str, int], list[float | int]] = OrderedDict()

    def note(self, sender: tuple[str, int], listen: tuple[str, int]) -> None:
        now = self.clock()
        entry = self.seen.get(sender)
        if entry is not None and now - entry[0] < self.interval:
            entry[1] += 1
            return
        suppressed = int(entry[1]) if entry is not None else 0
        self.seen[sender] = [now, 0]
        self.seen.move_to_end(sender)
        while len(self.seen) > self.MAX_SENDERS:
            self.seen.popitem(last=False)
        more = f" ({suppressed} more since the last report)" if suppressed else ""
        log.warning(
            "UDP adapter %s:%d: dropping datagrams from %s:%d, which no -i N@udp:HOST:PORT names%s",
            *listen,
            *sender,
            more,
        )
