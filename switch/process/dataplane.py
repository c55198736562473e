"""The data-plane loop: frames from the ports into the device, the device's output to ports.

One thread waits on every port's socket (one per raw interface, one for the whole UDP
adapter) and a wake-up pipe; each frame goes through ``Device.inject``, whose outputs come
back through ``transmit``. Nothing a frame contains can stop the loop: the ports drop and
count malformed frames, the device logs and counts packets whose processing fails.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
from typing import Any

from ..ports import Port, frame_sources

log = logging.getLogger("p4reduce.switch")

BURST = 64  # frames taken from one socket before looking at the others again


def make_dataplane(device: Any, ports: dict[int, Port], udp_offload: bool | None = None) -> Any:
    """The native I/O loop when the device's engine offers ``native_handler()`` and the loop
    builds here (``native_dataplane.NativeDataplane``), else the Python loop below. A switch
    started without a program (``--no-p4``) and not told ``--engine python`` takes the native
    loop too, so the pipeline a controller pushes later runs natively; one it cannot run
    natively still runs, on the Python engine through the loop. Where the loop cannot be
    built, one line says why. ``udp_offload``: the native loop's UDP GSO/GRO (None:
    $P4REDUCE_UDP_OFFLOAD, on by default)."""
    from .native_dataplane import NativeDataplane, native_handler_of

    no_program_yet = device.state is None and getattr(device, "engine", "python") != "python"
    if native_handler_of(device) is None and not no_program_yet:
        return Dataplane(device, ports)
    from ..native import ioloop

    lib = ioloop.load()
    if lib is None:
        log.warning(
            "native I/O loop unavailable (%s); using the Python loop", ioloop.unavailable_reason()
        )
        return Dataplane(device, ports)
    return NativeDataplane(device, ports, lib, udp_offload=udp_offload)


class Dataplane:
    def __init__(self, device: Any, ports: dict[int, Port]) -> None:
        self.device = device
        self.ports = ports
        self.no_such_port = 0  # outputs to a port the switch does not have
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        for source in frame_sources(list(ports.values())):
            self._selector.register(source.fileno(), selectors.EVENT_READ, source)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        device.transmit = self.transmit

    def transmit(self, port: int, frame: bytes) -> None:
        out = self.ports.get(port)
        if out is None:
            self.no_such_port += 1
            log.debug("output on port %d, which is not bound; dropped", port)
            return
        out.send(frame)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="p4reduce-dataplane", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        for port in {id(p): p for p in self.ports.values()}.values():
            port.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=1.0):
                source = key.data
                if source is None:
                    continue  # the wake-up pipe: the loop condition decides
                for _ in range(BURST):
                    item = source.receive_tagged()
                    if item is None:
                        break
                    port, frame = item
                    self.device.inject(port, frame)
