"""The data plane on the native I/O loop: ``switch/native/runtime/ioloop.c`` owns the ports'
sockets on its own thread, without the GIL, and runs every frame through the native engine's
handler (``p4r_handler.h``).

Python keeps three jobs here:

- **CPU port.** Frames the program sends to ``--cpu-port`` come out of the loop's CPU queue;
  a thread turns them into PacketIn messages (``Device.to_controller``).
- **Packet-out and control-plane sends.** ``Device.transmit`` becomes the loop's transmit
  queue, so whatever Python emits (a PacketOut run through ``Device.inject``) leaves through
  the loop's sockets, counted on the same ports.
- **Digests.** The loop's packets leave their digests (and log_msg text) in the engine; the
  engine writes to an eventfd when one is ready (``NativeSwitch.notify_events``), and the
  CPU-port thread, which waits on it too, delivers them to the P4Runtime stream at once
  (``Device.deliver_events``), while packets flow and after they stop.
- **Pipeline changes.** A hook on the device moves the loop to the new engine's handler before
  the old pipeline is released. A pipeline whose engine has no native handler (a program the
  native engine refuses) still runs: the loop hands its frames to a Python thread that runs
  ``Device.inject`` (the Python engine) and sends the outputs through the loop.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import select
import threading
from typing import Any

from ..native import ioloop
from ..ports import Port, PortCounters

log = logging.getLogger("p4reduce.switch")

# Frames waiting for the Python engine when the pipeline has no native handler.
PY_BACKLOG = 4096


def native_handler_of(device: Any, state: Any = None) -> tuple[int, int] | None:
    """(handler address, context address) of the engine running ``state`` (default: the
    device's current pipeline), or None when that engine has no native handler."""
    state = device.state if state is None else state
    engine = getattr(state, "switch", None)
    offer = getattr(engine, "native_handler", None)
    if offer is None:
        return None
    handler = offer()
    return (int(handler[0]), int(handler[1])) if handler else None


class NativeDataplane:
    """Same interface as ``Dataplane`` (start, stop, transmit, no_such_port)."""

    def __init__(
        self, device: Any, ports: dict[int, Port], lib: Any = None, udp_offload: bool | None = None
    ) -> None:
        self.device = device
        self.ports = ports
        self.loop = ioloop.NativeIoLoop(
            ports, cpu_port=device.cpu_port, lib=lib, udp_offload=udp_offload
        )
        self.transmit_dropped = 0  # the loop's transmit queue was full
        self.python_dropped = 0  # frames for the Python engine beyond PY_BACKLOG
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        # the engine's "events ready" signal (NativeSwitch.notify_events)
        self._events_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self._notified: Any = None  # the engine told to write to _events_fd
        self._py_frames: collections.deque[tuple[int, bytes]] = collections.deque()
        self._py_ready = threading.Condition()
        self._trampoline = ioloop.HANDLER_FN(self._to_python)
        self._threads: list[threading.Thread] = []
        device.transmit = self.transmit
        device.pipeline_hooks.append(self._retarget)
        self._retarget(device.state)

    # -- engine selection ---------------------------------------------------------------------

    def _notify(self, state: Any) -> None:
        """Have the engine of ``state`` (None: no engine) signal ``_events_fd``; the one
        before stops, so no released engine writes to the descriptor."""
        engine = getattr(state, "switch", None)
        if not hasattr(engine, "notify_events"):
            engine = None
        if self._notified is not None and self._notified is not engine:
            self._notified.notify_events(None)
        if engine is not None:
            engine.notify_events(self._events_fd)
        self._notified = engine

    def _retarget(self, state: Any) -> None:
        """Point the loop at the engine of ``state`` (called with each new pipeline)."""
        self._notify(state)
        if state is None:
            self.loop.set_handler(None, None)
            return
        handler = native_handler_of(self.device, state)
        if handler is not None:
            # keepalive: the state owns the engine whose context the handler uses
            self.loop.set_handler(handler[0], handler[1], keepalive=state)
        else:
            log.info("pipeline has no native handler: its frames run on the Python engine")
            fn = ctypes.cast(self._trampoline, ctypes.c_void_p).value
            self.loop.set_handler(fn, None, keepalive=self._trampoline)

    def _to_python(self, _ctx, in_port, frame, length, _emit, _emit_ctx) -> int:
        """Runs on the loop thread (ctypes takes the GIL): only queue, never block on the
        device lock, which a pipeline change may hold while it waits for this handler."""
        if len(self._py_frames) >= PY_BACKLOG:
            self.python_dropped += 1
            return 0
        self._py_frames.append((in_port, ctypes.string_at(frame, length)))
        with self._py_ready:
            self._py_ready.notify()
        return 0

    def _python_engine(self) -> None:
        while not self._stop.is_set():
            with self._py_ready:
                if not self._py_frames:
                    self._py_ready.wait(0.5)
            while self._py_frames:
                port, frame = self._py_frames.popleft()
                self.device.inject(port, frame)  # outputs come back through transmit()

    # -- the CPU port ---------------------------------------------------------------------------

    def _cpu_port(self) -> None:
        """PacketIns from the loop's CPU queue, and digests the engine signals."""
        cpu_fd, events_fd = self.loop.cpu_fileno(), self._events_fd
        while not self._stop.is_set():
            ready, _, _ = select.select([cpu_fd, events_fd, self._wake_r], [], [], 1.0)
            if cpu_fd in ready:
                for port, frame in self.loop.drain_cpu():
                    self.device.to_controller(port, frame)
            if events_fd in ready:
                try:
                    os.eventfd_read(events_fd)
                except BlockingIOError:
                    pass
                self.device.deliver_events()

    # -- Dataplane's interface ------------------------------------------------------------------

    def transmit(self, port: int, frame: bytes) -> None:
        if not self.loop.transmit(port, frame):
            self.transmit_dropped += 1

    @property
    def no_such_port(self) -> int:
        return self.loop.stats().no_such_port

    def port_counters(self, number: int) -> PortCounters:
        return self.loop.port_counters(number)

    def start(self) -> None:
        for name, target in (("cpu", self._cpu_port), ("python-engine", self._python_engine)):
            t = threading.Thread(target=target, name=f"p4reduce-native-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.loop.start()
        log.info("data plane: native I/O loop")

    def stop(self) -> None:
        self._stop.set()
        self.loop.stop()
        os.write(self._wake_w, b"x")
        with self._py_ready:
            self._py_ready.notify_all()
        for t in self._threads:
            t.join(timeout=10)
        if self._retarget in self.device.pipeline_hooks:
            self.device.pipeline_hooks.remove(self._retarget)
        with self.device.lock:
            self._notify(None)  # before the descriptor is closed (and its number reused)
        self.loop.merge_counters()
        self.loop.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        os.close(self._events_fd)
        for port in {id(p): p for p in self.ports.values()}.values():
            port.close()
