"""The switch's data plane on the native I/O loop: picked when the engine offers a native
handler, moved to each new pipeline's handler, CPU-port frames become PacketIns, and a
pipeline without a native handler still runs (on the Python engine, through the loop)."""

from __future__ import annotations

import inspect
import queue
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.p4runtime import Device
from p4reduce.switch.p4runtime.pipeline_config import build_state
from p4reduce.switch.ports import UdpAdapter
from p4reduce.switch.process.dataplane import Dataplane, make_dataplane
from p4reduce.switch.process.native_dataplane import NativeDataplane

from p4reduce.proto import p4runtime_pb2

from .test_loop_udp import wait_until  # noqa: E402

PROCESS = Path(__file__).resolve().parents[1] / "process"
CPU = 64
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def fwd_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fwd")
    assert p4c_main([str(PROCESS / "fwd.p4"), "-o", str(out)]) == 0
    return out / "fwd.json"


def build(config: Any, engine: str) -> Any:
    """build_state on ``engine`` where the switch has several, else on its only one."""
    if "engine" in inspect.signature(build_state).parameters:
        return build_state(config, None, engine=engine)
    if engine != "python":
        pytest.skip("this switch has no native engine yet")
    return build_state(config, None)


class Rig:
    def __init__(self, json_path: Path) -> None:
        self.json = json_path
        self.a, self.b = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
        for s in (self.a, self.b):
            s.bind(("127.0.0.1", 0))
            s.settimeout(10)
        self.device = Device(1, cpu_port=CPU)
        self.messages: queue.Queue = queue.Queue()
        self.device.stream_sink = self.messages.put
        self.adapter = UdpAdapter(
            ("127.0.0.1", 0), {1: self.a.getsockname(), 2: self.b.getsockname()}
        )

    def load(self, native: object | None, engine: str = "python") -> Any:
        """Install fwd.p4 (1 -> 2) on ``engine``; ``native``: a test handler its engine
        offers instead of its own."""
        config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=self.json.read_bytes())
        state = build(config, engine)
        state.switch.pipeline.tables["I.fwd"].add_entry([Exact(1)], "I.to_port", [2])
        if native is not None:
            state.switch.native_handler = lambda: (native.fn, native.ctx_address)
        self.device.install(state)
        return state

    def close(self) -> None:
        self.a.close()
        self.b.close()


@pytest.fixture
def rig(fwd_json: Path) -> Iterator[Rig]:
    r = Rig(fwd_json)
    yield r
    r.close()


def test_python_loop_without_a_native_handler(rig: Rig) -> None:
    rig.load(None)
    dp = make_dataplane(rig.device, dict(rig.adapter.ports))
    assert type(dp) is Dataplane
    dp.stop()


def test_native_loop_follows_the_pipeline(rig: Rig, handler, lib) -> None:
    handler.ctx.cpu_port = CPU
    rig.load(handler)
    dp = make_dataplane(rig.device, dict(rig.adapter.ports))
    assert isinstance(dp, NativeDataplane)
    dp.start()
    try:
        # the C test handler reflects: port 1's frame comes back to port 1, not to 2
        rig.a.sendto(b"Rnative", rig.adapter.listen)
        assert rig.a.recvfrom(100)[0] == b"Rnative"
        # to the CPU port: a PacketIn carrying the whole frame
        rig.a.sendto(b"Cpacket-in", rig.adapter.listen)
        msg = rig.messages.get(timeout=10)
        assert msg.packet.payload.endswith(b"Cpacket-in")
        assert len(msg.packet.payload) == 42 + len(b"Cpacket-in")

        # a new pipeline without a native handler: the Python engine runs it (fwd 1 -> 2)
        rig.load(None)
        rig.a.sendto(b"Rpython", rig.adapter.listen)
        assert rig.b.recvfrom(100)[0] == b"Rpython"

        # and back to a native one
        rig.load(handler)
        rig.b.sendto(b"Rnative again", rig.adapter.listen)
        assert rig.b.recvfrom(100)[0] == b"Rnative again"

        # Python's own sends (what a PacketOut emits) leave through the loop and its counters
        rig.device.transmit(1, b"too short")
        wait_until(lambda: dp.port_counters(1).tx_dropped == {"runt": 1}, "the runt counted")
        wait_until(lambda: dp.port_counters(2).tx_frames == 2, "port 2's sends counted")
        assert dp.port_counters(2).rx_frames == 1
    finally:
        dp.stop()
    # after stop, the ports' own counters include what the loop counted
    assert rig.adapter.ports[1].counters.rx_frames == 3
    assert rig.adapter.ports[1].counters.tx_dropped == {"runt": 1}
    assert rig.device.pipeline_hooks == []


def test_the_native_engine_through_the_native_loop(rig: Rig, lib) -> None:
    """The real pair: fwd.p4 compiled to C (its native_handler()) driven by the loop."""
    state = rig.load(None, engine="native")
    if getattr(state.switch, "native_handler", None) is None:
        pytest.skip("the native engine refused fwd.p4 here (fell back to the interpreter)")
    dp = make_dataplane(rig.device, dict(rig.adapter.ports))
    assert isinstance(dp, NativeDataplane)
    dp.start()
    try:
        for i in range(200):
            rig.a.sendto(b"frame %d" % i, rig.adapter.listen)
        assert [rig.b.recvfrom(100)[0] for _ in range(200)] == [b"frame %d" % i for i in range(200)]
        rig.b.sendto(b"dropped: no entry for port 2", rig.adapter.listen)
        wait_until(lambda: dp.port_counters(2).rx_frames == 1, "port 2's frame")
        assert dp.loop.stats().handler_failed == 0
    finally:
        dp.stop()
    assert rig.adapter.ports[1].counters.rx_frames == 200
    assert rig.adapter.ports[2].counters.tx_frames == 200


def test_without_the_native_loop_the_python_loop_runs(
    rig: Rig, handler, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No compiler (or a failed build): one line says so, the Python loop runs the ports."""
    from p4reduce.switch.native import ioloop

    monkeypatch.setattr(ioloop, "load", lambda **_: None)
    monkeypatch.setattr(ioloop, "unavailable_reason", lambda: "no C compiler (cc) on PATH")
    rig.load(handler)
    with caplog.at_level("WARNING", logger="p4reduce.switch"):
        dp = make_dataplane(rig.device, dict(rig.adapter.ports))
    assert type(dp) is Dataplane
    (record,) = caplog.records
    assert record.getMessage() == (
        "native I/O loop unavailable (no C compiler (cc) on PATH); using the Python loop"
    )
    dp.stop()


def test_a_switch_started_without_a_program_takes_the_native_loop(rig: Rig, lib) -> None:
    """--no-p4: no pipeline yet, so no handler to look at; the loop is native anyway (unless
    the engine is python), and the pipeline a controller pushes later runs through it."""
    python_device = Device(1, cpu_port=CPU, engine="python")
    other = UdpAdapter(("127.0.0.1", 0), {1: rig.a.getsockname()})
    dp = make_dataplane(python_device, dict(other.ports))
    assert type(dp) is Dataplane
    dp.stop()  # closes the other adapter's ports

    dp = make_dataplane(rig.device, dict(rig.adapter.ports))  # engine "auto", no pipeline
    assert isinstance(dp, NativeDataplane)
    dp.start()
    try:
        state = rig.load(None, engine="native")
        if getattr(state.switch, "native_handler", None) is None:
            pytest.skip("the native engine refused fwd.p4 here (fell back to the interpreter)")
        rig.a.sendto(b"after the push", rig.adapter.listen)
        assert rig.b.recvfrom(100)[0] == b"after the push"
        assert dp.loop.stats().handler_failed == 0
    finally:
        dp.stop()
