"""The aggregation port pool: the ports a loopback stack compiles into its program, each
held by a lock file for the stack's lifetime (docs/testbed.md)."""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import contracts
from ..free_port import free_port

# The aggregation port is compiled into the P4 program (-DAGG_UDP_PORT), and the native
# switch engine caches its shared object by the content hash of the C generated from that
# program (docs/native.md, "Cache and fallbacks"). A stack that compiled a random port in would
# therefore generate and compile C at every start; stacks take the first free port of this
# fixed pool instead (the programs' default first), so a second start hits the cache. The
# contracts' spec stays the only place the port is defined; only when the whole pool is busy (many
# stacks at once) does a stack fall back to a random port, and compile.
AGG_PORT_POOL = range(contracts.AGG_PORT, contracts.AGG_PORT + 16)
AGG_PORT_LOCKS = Path(tempfile.gettempdir())
"""Where the pool's lock files live (``p4reduce-agg-port-PORT.lock``): one directory for
every process of the machine, so that stacks of different processes (parallel test runs,
several users) never pick the same port."""


@dataclass
class AggPortLease:
    """An aggregation port held for a stack's (or a test session's) lifetime.

    A pool port is held by an exclusive ``flock`` on its lock file: unlike a bind test,
    that holds between choosing the port and the switch binding it, and across the
    restarts of a switch on the same port; the kernel drops it when the holder exits,
    however it exits. A port outside the pool (the pool was full) holds nothing."""

    port: int
    fd: int | None = field(default=None, repr=False)

    @property
    def pooled(self) -> bool:
        return self.fd is not None

    def release(self) -> None:
        """Let another stack take the port (idempotent)."""
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None

    def __enter__(self) -> AggPortLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _lock_port(port: int) -> int | None:
    """A descriptor holding the port's pool lock, or None when another holds it (or the
    lock file cannot be opened, e.g. made by another user with a restrictive umask)."""
    try:
        fd = os.open(
            AGG_PORT_LOCKS / f"p4reduce-agg-port-{port}.lock", os.O_RDONLY | os.O_CREAT, 0o666
        )
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def lease_agg_port(tried: set[int] | frozenset[int] = frozenset()) -> AggPortLease:
    """The first port of AGG_PORT_POOL not in ``tried`` whose lock this process can take
    and that 127.0.0.1 can bind now (held until ``release``), else a random free UDP port
    (held by nobody)."""
    for port in AGG_PORT_POOL:
        if port in tried:
            continue
        fd = _lock_port(port)
        if fd is None:
            continue
        if _bindable(port):  # a process outside p4reduce's locks may have it
            return AggPortLease(port, fd)
        os.close(fd)
    return AggPortLease(free_port("udp"))
