"""What the switch's I/O loop sees of a port, and the ``-i`` port spec.

A port is one switch port number backed by something that moves Ethernet frames: a Linux
interface (``raw.RawSocketPort``) or a UDP peer behind the loopback adapter (``udp.UdpPort``).
Several ports may share one socket (every UDP port shares the adapter's), and a selector
accepts each file descriptor once, so the I/O loop waits on *frame sources* rather than on
ports: ``frame_sources(ports)`` gives one source per socket, and a source's
``receive_tagged()`` says which port a frame arrived on.
"""

from __future__ import annotations

import string
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ... import netaddr

# Frames longer than this are dropped on both paths. BMv2 reads at most 16 KiB per frame too,
# and a bound keeps one jumbo (or GRO-merged) frame from becoming a huge Python object.
MAX_FRAME = 16 * 1024
# An Ethernet header; anything shorter cannot be parsed as a frame at all.
MIN_FRAME = 14
# v1model's default drop port is 511 (BMv2's drop_port), so it can never name a real port.
DROP_PORT = 511
MAX_PORT_NUMBER = DROP_PORT - 1
# Linux IFNAMSIZ is 16 including the terminating NUL.
MAX_IFNAME = 15


@dataclass
class PortCounters:
    """Frames that passed and frames dropped, by reason (reason names are in docs/ports.md).

    ``errors`` counts socket events that are not frames (an interface going down, an ICMP
    "port unreachable" reported by the kernel), so drop counts stay counts of frames.
    """

    rx_frames: int = 0
    tx_frames: int = 0
    rx_dropped: Counter[str] = field(default_factory=Counter)
    tx_dropped: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)

    def snapshot(self) -> dict[str, object]:
        """A plain-dict copy, for logs and JSON."""
        return {
            "rx_frames": self.rx_frames,
            "tx_frames": self.tx_frames,
            "rx_dropped": dict(self.rx_dropped),
            "tx_dropped": dict(self.tx_dropped),
            "errors": dict(self.errors),
        }


@runtime_checkable
class FrameSource(Protocol):
    """Something to wait on with select/selectors that yields frames tagged with a port."""

    def fileno(self) -> int: ...

    def receive_tagged(self) -> tuple[int, bytes] | None:
        """One (port number, frame) if one is ready, else None; never blocks."""
        ...


class Port(ABC):
    """One switch port. ``receive`` and ``send`` never block; a frame that cannot be delivered
    is dropped and counted, never raised, so one bad frame cannot stop the switch."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.counters = PortCounters()

    @abstractmethod
    def fileno(self) -> int:
        """The file descriptor that becomes readable when a frame may be ready."""

    @abstractmethod
    def receive(self) -> bytes | None:
        """One received frame, or None when none is ready."""

    @abstractmethod
    def send(self, frame: bytes) -> None:
        """Transmit one frame (or drop and count it)."""

    @abstractmethod
    def close(self) -> None:
        """Release the port's resources; idempotent."""

    @property
    def source(self) -> FrameSource:
        """The object the I/O loop waits on for this port; ports sharing a socket share it."""
        return self

    def receive_tagged(self) -> tuple[int, bytes] | None:
        frame = self.receive()
        return None if frame is None else (self.number, frame)

    # The counters, readable straight off the port.
    @property
    def rx_frames(self) -> int:
        return self.counters.rx_frames

    @property
    def tx_frames(self) -> int:
        return self.counters.tx_frames

    @property
    def rx_dropped(self) -> Counter[str]:
        return self.counters.rx_dropped

    @property
    def tx_dropped(self) -> Counter[str]:
        return self.counters.tx_dropped

    def __enter__(self) -> Port:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def frame_sources(ports: Iterable[Port]) -> list[FrameSource]:
    """One source per underlying socket, in first-seen order, for registering with a selector."""
    seen: dict[int, FrameSource] = {}
    for port in ports:
        seen.setdefault(id(port.source), port.source)
    return list(seen.values())


@dataclass(frozen=True)
class PortSpec:
    """A parsed ``-i`` argument: exactly one of ``iface`` and ``udp_peer`` is set."""

    number: int
    iface: str | None = None
    udp_peer: tuple[str, int] | None = None

    @property
    def is_udp(self) -> bool:
        return self.udp_peer is not None

    def __str__(self) -> str:
        if self.udp_peer is not None:
            return f"{self.number}@udp:{self.udp_peer[0]}:{self.udp_peer[1]}"
        return f"{self.number}@{self.iface}"


_SYNTAX = "expected N@IFACE or N@udp:HOST:PORT"


def parse_port_spec(text: str) -> PortSpec:
    """Parse ``N@IFACE`` or ``N@udp:HOST:PORT`` (simple_switch's ``-i`` syntax plus our UDP
    adapter). Raises ValueError naming the part that is wrong."""
    number_text, at, target = text.partition("@")
    if not at:
        raise ValueError(f"port spec {text!r}: {_SYNTAX} (no '@')")
    number = _parse_port_number(number_text, text)
    if not target:
        raise ValueError(f"port spec {text!r}: nothing after '@' ({_SYNTAX})")
    if target.startswith("udp:"):
        host, port = parse_host_port(target[4:], what=f"UDP peer in port spec {text!r}")
        return PortSpec(number, udp_peer=(host, port))
    _check_ifname(target, text)
    return PortSpec(number, iface=target)


def _parse_port_number(number_text: str, text: str) -> int:
    # Only plain decimal: int() would also take " 1", "+1" and "1_0", none of which is a port.
    if not number_text or not all(c in string.digits for c in number_text):
        raise ValueError(
            f"port spec {text!r}: port number {number_text!r} is not a decimal integer"
        )
    number = int(number_text)
    if number > MAX_PORT_NUMBER:
        raise ValueError(
            f"port spec {text!r}: port number {number} is out of range 0..{MAX_PORT_NUMBER} "
            f"({DROP_PORT} is v1model's drop port)"
        )
    return number


def _check_ifname(name: str, text: str) -> None:
    if len(name.encode()) > MAX_IFNAME:
        raise ValueError(
            f"port spec {text!r}: interface name {name!r} is longer than {MAX_IFNAME} bytes"
        )
    if name in (".", "..") or any(c == "/" or c.isspace() for c in name):
        raise ValueError(f"port spec {text!r}: {name!r} is not a valid interface name")


def parse_host_port(
    text: str, *, what: str = "address", allow_port_zero: bool = False
) -> tuple[str, int]:
    """Parse ``HOST:PORT`` (an IPv4 address or a host name) with ``p4reduce.netaddr``, the
    parser of every address; IPv6 is refused because the UDP adapter builds IPv4 frames.
    ``allow_port_zero`` is for a listen address (ephemeral port). A ValueError
    (``AddressError``) names the bad piece."""
    return netaddr.split(
        text, what=what, allow_port_zero=allow_port_zero, ipv4_only=True, port_word="UDP port"
    )
