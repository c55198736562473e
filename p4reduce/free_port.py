"""A free TCP or UDP port on an address, for a process that binds it a little later.

Asking the kernel (``bind(port 0)``) yields a port of the ephemeral range, which the kernel
may hand to the next outgoing connection between the moment it is chosen and the moment the
process that needs it binds it: rare, but then that process fails (or, for a torch store,
its peers wait out the whole rendezvous timeout). A port below the ephemeral range is never
handed out that way, so one is picked there at random and checked; only when none is found
(or the range cannot be read) does the kernel choose.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20_000  # below: ports registered for well-known services
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_TRIES = 64


def ephemeral_start() -> int | None:
    """The first port of the kernel's ephemeral range (Linux), or None when unknown."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _bindable(kind: int, host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def free_port(protocol: str = "tcp", host: str = "127.0.0.1") -> int:
    """A port of ``protocol`` ("tcp" or "udp") that ``host`` can bind now."""
    if protocol not in ("tcp", "udp"):
        raise ValueError(f"protocol {protocol!r}: tcp or udp")
    kind = socket.SOCK_STREAM if protocol == "tcp" else socket.SOCK_DGRAM
    start = ephemeral_start()
    if start is not None and start > LOWEST + _TRIES:
        pick = random.Random()  # its own generator: seeding the global one must not matter
        for _ in range(_TRIES):
            port = pick.randrange(LOWEST, start)
            if _bindable(kind, host, port):
                return port
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
