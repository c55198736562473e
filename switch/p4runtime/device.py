"""The device a P4Runtime server controls: the running switch and its packet I/O.

``Device`` owns the current pipeline (``state``: a ``PipelineState`` holding the ``V1Switch``;
None until a config is pushed) and one lock that serializes control-plane changes with packet
processing. Its owner feeds it frames (``inject``) and receives what leaves on front-panel
ports through ``transmit(port, frame)``. Frames the program sends to the CPU port become
PacketIn messages, and digests become DigestList messages; both go to ``stream_sink``
(the server routes them to the primary controllers). PacketOut messages come back through
``packet_out``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from p4reduce.proto import p4info_pb2, p4runtime_pb2

from ..interp.pre import PreStore
from . import packetio
from .errors import P4RTError, failed_precondition, not_found
from .pipeline_config import build_state
from .state import PipelineState

log = logging.getLogger("p4reduce.switch.p4runtime")

Transmit = Callable[[int, bytes], None]
StreamSink = Callable[[Any], None]  # receives p4.v1.StreamMessageResponse messages


class Device:
    def __init__(
        self,
        device_id: int = 1,
        cpu_port: int | None = None,
        transmit: Transmit | None = None,
        clock: Callable[[], int] | None = None,
        engine: str = "auto",
    ) -> None:
        """``cpu_port``: BMv2's ``--cpu-port`` (1..510), None for no packet I/O with the
        controller. ``clock``: microseconds for the switch (default: since the pipeline
        was built). ``engine``: the data-plane engine of every pipeline loaded ("auto" and
        "native": generated C where the program and the machine allow, else the
        interpreter, said in one line; "python": the interpreter)."""
        if cpu_port is not None and not 0 < cpu_port < 511:
            raise ValueError(f"cpu_port must be in 1..510, got {cpu_port}")
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.transmit = transmit
        self.clock = clock
        self.engine = engine
        self.lock = threading.RLock()
        self.state: PipelineState | None = None
        self.saved: PipelineState | None = None  # VERIFY_AND_SAVE, waiting for COMMIT
        self.stream_sink: StreamSink | None = None
        self._trace = False
        self.aborted_packets = 0  # packets whose processing failed (logged, then dropped)
        # Called with each newly installed pipeline (under ``lock``, before the old one is
        # released): the native I/O loop moves to the new engine's handler here, so it never
        # runs a handler whose pipeline is gone.
        self.pipeline_hooks: list[Callable[[PipelineState], None]] = []
        # The switch's ports for a P4Runtime read of p4reduce/portmap.py's extern type (set
        # by p4reduce-switch; None: such a read is refused like any extern entry).
        self.port_map: Callable[[], Any] | None = None

    # ------------------------------------------------------------------ pipeline
    @property
    def switch(self) -> Any:
        state = self.state
        return state.switch if state is not None else None

    @property
    def p4info(self) -> Any:
        state = self.state
        return state.p4info if state is not None else None

    @property
    def cookie(self) -> int | None:
        state = self.state
        return state.cookie if state is not None else None

    @property
    def trace(self) -> bool:
        """Log, per packet, the tables hit and actions run (DEBUG level)."""
        return self._trace

    @trace.setter
    def trace(self, on: bool) -> None:
        with self.lock:
            self._trace = on
            state = self.state
            if state is not None and on and getattr(state.switch, "engine", "") == "native":
                # the native engine does not trace: move the pipeline, with its entries,
                # registers, counters and PRE, to the interpreter (as RECONCILE_AND_COMMIT)
                from .pipeline_config import reconcile

                config = p4runtime_pb2.ForwardingPipelineConfig(
                    p4_device_config=state.device_config
                )
                config.p4info.CopyFrom(state.p4info)
                if state.cookie is not None:
                    config.cookie.cookie = state.cookie
                new = build_state(config, self.clock, "python", True)
                reconcile(state, new)
                new.switch.pre.use_store(PreStore())  # the PRE serves the interpreter only
                self.state = state = new
            if state is not None:
                state.switch.trace = on

    def install(self, state: PipelineState) -> None:
        """Make ``state`` the running pipeline (the old one and its state are dropped)."""
        with self.lock:
            state.switch.trace = self._trace
            old, self.state = self.state, state
            for hook in self.pipeline_hooks:
                hook(state)
            del old  # released only once every hook has moved off it

    def load(
        self, device_config: bytes, p4info: Any | None = None, cookie: int | None = None
    ) -> None:
        """Install a pipeline directly (e.g. at start-up, like simple_switch_grpc PROG.json).

        ``p4info`` None: the one embedded in the device config. Raises P4RTError if invalid.
        """
        config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=device_config)
        if p4info is not None:
            config.p4info.CopyFrom(p4info)
        if cookie is not None:
            config.cookie.cookie = cookie
        self.install(build_state(config, self.clock, self.engine, self._trace))

    def load_file(self, json_path: str | Path, p4info_path: str | Path | None = None) -> None:
        """``load`` from a ``p4reduce-p4c -o`` JSON file and optionally a text P4Info file."""
        p4info = None
        if p4info_path is not None:
            from google.protobuf import text_format

            p4info = text_format.Parse(Path(p4info_path).read_text(), p4info_pb2.P4Info())
        self.load(Path(json_path).read_bytes(), p4info)

    # ------------------------------------------------------------------ packets
    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Run a frame arriving on ``port``.

        Front-panel outputs go to ``transmit`` and are returned; outputs on the CPU port
        become PacketIn messages and digests DigestList messages, sent to ``stream_sink``.
        With no pipeline the frame is dropped.
        """
        with self.lock:
            state = self.state
            if state is None:
                return []
            try:
                outputs = state.switch.process(port, frame)
            except Exception:  # a false assert/assume (simple_switch would stop): drop
                self.aborted_packets += 1
                log.exception("packet from port %d aborted the pipeline; dropped", port)
                state.switch.digests.clear()
                return []
            if self._trace:
                for line in state.switch.last_trace:
                    log.debug("port %d: %s", port, line)
            messages = self._controller_messages(state, outputs)
            sent = [(p, f) for p, f in outputs if p != self.cpu_port]
            transmit, sink = self.transmit, self.stream_sink
        if transmit is not None:
            for p, f in sent:
                transmit(p, f)
        if sink is not None:
            for msg in messages:
                sink(msg)
        return sent

    def _controller_messages(
        self, state: PipelineState, outputs: list[tuple[int, bytes]]
    ) -> list[Any]:
        messages = []
        for p, f in outputs:
            if p == self.cpu_port:
                try:
                    pin = packetio.unpack_packet_in(state.schema.packet_in, f)
                except P4RTError as exc:
                    log.warning("packet to the CPU port dropped: %s", exc.message)
                    continue
                messages.append(p4runtime_pb2.StreamMessageResponse(packet=pin))
        digests = state.switch.digests
        if digests:
            items = list(digests)
            digests.clear()
            for dl in state.digests.collect(state, items):
                messages.append(p4runtime_pb2.StreamMessageResponse(digest=dl))
        return messages

    def deliver_events(self) -> None:
        """Send the digests the engine holds (the native I/O loop's packets leave them in
        the engine) to the controllers as DigestList messages, as ``inject`` does."""
        with self.lock:
            state = self.state
            if state is None:
                return
            messages = self._controller_messages(state, [])
            sink = self.stream_sink
        if sink is not None:
            for msg in messages:
                sink(msg)

    def to_controller(self, port: int, frame: bytes) -> None:
        """A frame the program sent to the CPU port outside ``inject`` (the native I/O loop's
        CPU queue): a PacketIn for the controllers, as ``inject`` makes one."""
        with self.lock:
            state = self.state
            if state is None:
                return
            messages = self._controller_messages(state, [(port, frame)])
            sink = self.stream_sink
        if sink is not None:
            for msg in messages:
                sink(msg)

    def packet_out(self, msg: Any) -> list[tuple[int, bytes]]:
        """Inject a p4.v1.PacketOut on the CPU port (raises P4RTError if it is malformed)."""
        with self.lock:
            state = self.state
            if state is None:
                raise failed_precondition("no forwarding pipeline config has been set")
            if self.cpu_port is None:
                raise failed_precondition("the switch has no CPU port")
            frame = packetio.pack_packet_out(state.schema.packet_out, msg)
        return self.inject(self.cpu_port, frame)

    def digest_ack(self, digest_id: int, list_id: int) -> None:
        """Release a DigestList (NOT_FOUND for a digest id the P4Info does not have)."""
        with self.lock:
            state = self.state
            if state is None:
                raise failed_precondition("no forwarding pipeline config has been set")
            if digest_id not in state.schema.digests:
                raise not_found(f"no digest with id {digest_id}")
            state.digests.ack(digest_id, list_id)  # an unknown or expired list: nothing to do
