"""What ``p4reduce-switch`` tells a controller about its ports (p4reduce/portmap.py), and the
rate-limited log line for datagrams from unknown senders when the native I/O loop drives
the UDP adapter (the Python adapter logs each sender itself, switch/ports/udp.py)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from p4reduce.portmap import PortMap

from ..ports.base import Port
from ..ports.udp import UdpAdapter, UdpPort

log = logging.getLogger("p4reduce.switch")
REPORT_INTERVAL = 10.0  # seconds between two reports of new unknown-sender drops


def _adapter(ports: dict[int, Port]) -> UdpAdapter | None:
    """The UDP adapter the UDP ports share, or None (no UDP port)."""
    return next((p.adapter for p in ports.values() if isinstance(p, UdpPort)), None)


def listen_address(ports: dict[int, Port]) -> str | None:
    """The UDP adapter's ``HOST:PORT``, or None (no UDP port)."""
    adapter = _adapter(ports)
    return f"{adapter.listen[0]}:{adapter.listen[1]}" if adapter is not None else None


def unknown_senders(ports: dict[int, Port], dataplane: Any) -> int:
    """Datagrams the UDP adapter dropped so far because no port stands for their sender."""
    loop = getattr(dataplane, "loop", None)
    if loop is not None and getattr(loop, "adapter", None) is not None:
        counters = loop.adapter_counters()  # the native loop keeps its own counts
    else:
        adapter = _adapter(ports)
        if adapter is None:
            return 0
        counters = adapter.counters
    return int(counters.rx_dropped.get("unknown_sender", 0))


def port_map(ports: dict[int, Port], dataplane: Any) -> PortMap:
    """The ports as the P4Runtime read of p4reduce/portmap.py answers them, counts now."""
    peers = {n: p.peer for n, p in ports.items() if isinstance(p, UdpPort)}
    ifaces = {n: str(getattr(p, "ifname", "")) for n, p in ports.items() if n not in peers}
    return PortMap(peers, ifaces, unknown_senders(ports, dataplane), listen_address(ports))


class UnknownSenderReport:
    """A thread that looks at the count every second and logs new drops at once, then at
    most once per ``interval`` seconds (with how many came meanwhile)."""

    def __init__(
        self, ports: dict[int, Port], dataplane: Any, interval: float = REPORT_INTERVAL
    ) -> None:
        self.ports, self.dataplane, self.interval = ports, dataplane, interval
        self.reported = 0
        self.last = float("-inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="unknown-senders", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def check(self, now: float) -> bool:
        """Log the drops since the last report, unless one was logged less than
        ``interval`` ago (one line); whether it logged."""
        count = unknown_senders(self.ports, self.dataplane)
        if count <= self.reported or now - self.last < self.interval:
            return False
        log.warning(
            "UDP adapter %s: dropped %d datagram(s) from senders no -i N@udp:HOST:PORT names "
            "(%d in all): a worker's socket must be bound to its switch port's peer address",
            listen_address(self.ports), count - self.reported, count,
        )  # fmt: skip
        self.reported, self.last = count, now
        return True

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.check(time.monotonic())
