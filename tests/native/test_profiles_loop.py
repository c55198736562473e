"""Action selector writes while the native I/O loop forwards (the switch process's data
plane): the loop calls the engine from its own thread without the GIL while this thread
rewrites members and groups, as the P4Runtime server does. Each member pairs an egress port
with a tag equal to it, so a datagram that reached a peer with another port's tag would
have seen half of a change."""

from __future__ import annotations

import random
import socket
import threading
import time
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.native.build import compiler
from p4reduce.switch.p4runtime import Device
from p4reduce.switch.p4runtime.pipeline_config import build_state
from p4reduce.switch.ports import UdpAdapter
from p4reduce.switch.process.dataplane import make_dataplane
from p4reduce.switch.process.native_dataplane import NativeDataplane

from p4reduce.proto import p4runtime_pb2

PROGRAM = Path(__file__).resolve().parent / "p4" / "profile_loop.p4"
CPU = 64
pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(compiler() is None, reason="no C compiler"),
]


@pytest.mark.usefixtures("lib")
def test_selector_writes_while_the_native_loop_forwards(tmp_path: Path) -> None:
    assert p4c_main([str(PROGRAM), "-o", str(tmp_path)]) == 0
    config = p4runtime_pb2.ForwardingPipelineConfig(
        p4_device_config=(tmp_path / "profile_loop.json").read_bytes()
    )
    peers = {}
    for n in (1, 2, 3):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.5)
        peers[n] = s
    adapter = UdpAdapter(("127.0.0.1", 0), {n: s.getsockname() for n, s in peers.items()})
    device = Device(1, cpu_port=CPU)
    state = build_state(config, None, engine="native")
    assert state.switch.engine == "native"
    t = state.switch.pipeline.tables["I.t"]
    prof = t.profile
    rng = random.Random(11)

    def member(mid: int) -> None:
        port = rng.randint(1, 3)
        prof.members[mid] = prof.make_member("I.fwd", [port, port])

    for mid in range(4):
        member(mid)
    prof.set_group(0, [0, 1, 2, 3])
    t.add_entry([Exact(1)], "", [], group=0)
    device.install(state)
    dp = make_dataplane(device, dict(adapter.ports))
    assert isinstance(dp, NativeDataplane)
    dp.start()
    received = {n: 0 for n in peers}
    torn: list[tuple[int, bytes]] = []
    stop = threading.Event()

    def listen(n: int) -> None:
        while not stop.is_set():
            try:
                data = peers[n].recv(100)
            except (TimeoutError, OSError):
                continue
            received[n] += 1
            if data[1] != n:  # the tag of another member than the one that set the port
                torn.append((n, data))

    listeners = [threading.Thread(target=listen, args=(n,)) for n in peers]
    for th in listeners:
        th.start()
    try:
        for i in range(400):
            for flow in range(8):
                peers[1].sendto(bytes([1, 0, (i * 8 + flow) & 0xFF]), adapter.listen)
            member(rng.randrange(4))
            if rng.random() < 0.3:
                prof.set_group(0, [rng.randrange(4) for _ in range(rng.randint(1, 4))])
            time.sleep(0.0005)  # let the loop run between writes
        end = time.monotonic() + 10  # the last datagrams drain (bounds a hang only)
        while sum(received.values()) < 400 and time.monotonic() < end:
            time.sleep(0.01)
        failed = dp.loop.stats().handler_failed
    finally:
        stop.set()
        for th in listeners:
            th.join(timeout=10)
        dp.stop()
        for s in peers.values():
            s.close()
    assert not torn, torn[:5]
    assert sum(received.values()) >= 400  # packets flowed during the writes
    assert failed == 0
