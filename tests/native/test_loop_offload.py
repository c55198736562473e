"""The native I/O loop's UDP adapter with UDP GSO/GRO and per datagram (ioloop.c,
p4r_ioloop_udp_offload): the same datagrams in, through the C test handler (test_handler.c),
give every peer the same datagrams out, in the same per-peer order, and the handler the same
frames; with offload on, super-datagrams were split and results left as segmented sends."""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from p4reduce.switch.native import ioloop
from p4reduce.switch.ports import ipudp
from p4reduce.switch.ports.udp import UdpAdapter

from .test_loop_udp import CPU, Rig, wait_until
from .udp_gso import SOL_UDP, UDP_GRO, UDP_SEGMENT, send_segmented, split_gro

pytestmark = pytest.mark.timeout(60)


def read_datagrams(sock: socket.socket, count: int) -> tuple[list[bytes], int]:
    """``count`` datagrams from a socket with UDP_GRO on, split; and how many reads held
    several (the loop's segmented sends arrive whole on loopback)."""
    out: list[bytes] = []
    coalesced = 0
    end = time.monotonic() + 20
    while len(out) < count and time.monotonic() < end:
        if not select.select([sock], [], [], 0.5)[0]:
            continue
        data, anc, _, _ = sock.recvmsg(65536, 64)
        parts = split_gro(data, anc)
        coalesced += len(parts) > 1
        out += parts
    return out, coalesced


def make_rig(lib, handler, offload: bool) -> Rig:
    """test_loop_udp's rig (three peers, the C test handler), its peers reading with UDP_GRO
    and the loop's offload as asked."""
    peers = {}
    for n in (1, 2, 3):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(SOL_UDP, UDP_GRO, 1)
        peers[n] = s
    adapter = UdpAdapter(("127.0.0.1", 0), {n: s.getsockname() for n, s in peers.items()})
    loop = ioloop.NativeIoLoop(adapter.ports, cpu_port=CPU, lib=lib, udp_offload=offload)
    handler.ctx.cpu_port = CPU
    loop.set_handler(handler.fn, handler.ctx_address, keepalive=handler)
    loop.start()
    return Rig(adapter, peers, loop)


@pytest.fixture
def rigs(lib, handler) -> Iterator[Callable[[bool], Rig]]:
    made: list[Rig] = []

    def make(offload: bool) -> Rig:
        made.append(make_rig(lib, handler, offload))
        return made[-1]

    yield make
    for r in made:
        r.loop.close()
        r.adapter.close()
        for s in r.peers.values():
            s.close()


def _multicast_run(rig: Rig, handler) -> tuple[dict[int, list[bytes]], int]:
    handler.group([1, 2, 3])
    burst = [b"M" + bytes([i]) * 999 for i in range(24)] + [b"M-short"]
    send_segmented(rig.peers[1], burst, rig.adapter.listen)
    singles = [b"M%03d" % i for i in range(10)]
    for p in singles:  # one datagram each, interleaved with nothing
        rig.peers[2].sendto(p, rig.adapter.listen)
    got, coalesced = {}, 0
    for n in (1, 2, 3):
        got[n], c = read_datagrams(rig.peers[n], len(burst) + len(singles))
        coalesced += c
    for n in got:
        assert got[n] == burst + singles, n  # arrival order, whichever path
    return got, coalesced


def test_both_paths_send_every_peer_the_same_datagrams(rigs, handler) -> None:
    plain = rigs(False)
    assert plain.loop.offload == frozenset()
    got_plain, coalesced_plain = _multicast_run(plain, handler)
    fast = rigs(True)
    if fast.loop.offload != {"gso", "gro"}:
        pytest.skip(f"this kernel offers only {sorted(fast.loop.offload)}")
    got_fast, coalesced_fast = _multicast_run(fast, handler)
    assert got_plain == got_fast  # every peer: the same datagrams, in the same order
    assert coalesced_plain == 0 and coalesced_fast > 0
    s_plain, s_fast = plain.loop.stats(), fast.loop.stats()
    assert (s_plain.gso_sends, s_plain.gro_receives) == (0, 0)
    assert s_fast.gso_sends > 0 and s_fast.gro_receives >= 1 and s_fast.gso_refused == 0
    for n in (1, 2, 3):
        assert plain.loop.port_counters(n) == fast.loop.port_counters(n)


def test_split_frames_are_the_python_adapters(rigs) -> None:
    """Every datagram of a super-datagram becomes the frame ipudp.build_frame builds, the
    identification counter stepping per datagram as in the per-datagram path."""
    rig = rigs(True)
    if "gro" not in rig.loop.offload:
        pytest.skip("no UDP GRO here")
    burst = [b"C" + bytes([i]) * 299 for i in range(12)] + [b"Ctail"]
    send_segmented(rig.peers[3], burst, rig.adapter.listen)
    wait_until(lambda: rig.loop.stats().cpu_queued == len(burst), "frames queued")
    got = rig.loop.drain_cpu()
    expected = [
        (CPU, ipudp.build_frame(p, rig.endpoints(3), ip_id)) for ip_id, p in enumerate(burst)
    ]
    assert got == expected
    assert rig.loop.stats().gro_receives == 1


def test_strangers_and_oversize_count_per_datagram(rigs) -> None:
    rig = rigs(True)
    if "gro" not in rig.loop.offload:
        pytest.skip("no UDP GRO here")
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        send_segmented(stranger, [b"R" * 100] * 5, rig.adapter.listen)
    finally:
        stranger.close()
    wait_until(lambda: rig.loop.adapter_counters().rx_dropped["unknown_sender"] == 5, "5 strangers")
    assert rig.loop.stats().handled == 0


def _gro_on(fd: int) -> int:
    s = socket.socket(fileno=os.dup(fd))
    try:
        return s.getsockopt(SOL_UDP, UDP_GRO)
    finally:
        s.close()


@pytest.mark.parametrize("setting", ["off", "1"])
def test_the_environment_and_the_socket_left_as_found(
    lib, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(ioloop.OFFLOAD_ENV, setting)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    adapter = UdpAdapter(("127.0.0.1", 0), {1: peer.getsockname()})
    try:
        with ioloop.NativeIoLoop(adapter.ports, lib=lib) as loop:
            assert ioloop.udp_offload_default() is (setting == "1")
            if setting == "off":
                assert loop.offload == frozenset()
            assert _gro_on(adapter.fileno()) == ("gro" in loop.offload)
            loop.start()
        # stopped: GRO off again, the Python loop reads this socket one datagram at a time
        assert _gro_on(adapter.fileno()) == 0
    finally:
        adapter.close()
        peer.close()


def _kernel_offloads() -> frozenset[str]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    have = set()
    try:
        s.getsockopt(SOL_UDP, UDP_SEGMENT)
        have.add("gso")
    except OSError:
        pass
    try:
        s.setsockopt(SOL_UDP, UDP_GRO, 1)
        have.add("gro")
    except OSError:
        pass
    s.close()
    return frozenset(have)


@pytest.mark.parametrize("option", ["off", "on"])
def test_the_switch_option_reaches_the_loop(lib, option: str) -> None:
    """p4reduce-switch --udp-offload on|off: the data plane's native loop is built with it
    (on: what the kernel offers)."""
    from p4reduce.switch.p4runtime import Device
    from p4reduce.switch.process.cli import _parser
    from p4reduce.switch.process.dataplane import make_dataplane

    args = _parser().parse_args(["--no-p4", "--udp-offload", option])
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    adapter = UdpAdapter(("127.0.0.1", 0), {1: peer.getsockname()})
    try:
        on = args.udp_offload == "on"
        dp = make_dataplane(Device(1, cpu_port=CPU), dict(adapter.ports), udp_offload=on)
        try:
            assert dp.loop.offload == (_kernel_offloads() if on else frozenset())
        finally:
            dp.stop()
    finally:
        adapter.close()
        peer.close()


_REFUSED = """
import ctypes, subprocess, sys
# this network namespace's loopback takes 1,000-byte packets: a 1,001-byte datagram goes as
# IP fragments, a segmented send of several is refused (EMSGSIZE)
subprocess.run(["ip", "link", "set", "lo", "up", "mtu", "1000"], check=True)
sys.path.insert(0, sys.argv[2])
from p4reduce.switch.native import ioloop
from tests.native.conftest import Handler, TestCtx
from tests.native.test_loop_offload import make_rig, read_datagrams
so = ctypes.CDLL(sys.argv[1])
handler = Handler(so, ctypes.cast(so.test_handler, ctypes.c_void_p).value, TestCtx())
handler.group([1, 1, 2, 2, 3, 3])  # two copies per peer and frame: a run of two to segment
rig = make_rig(ioloop.load(), handler, True)
assert rig.loop.offload == {"gso", "gro"}, rig.loop.offload
burst = [b"M" + bytes([i]) * 1000 for i in range(10)]
for p in burst:
    rig.peers[2].sendto(p, rig.adapter.listen)
for n in (1, 2, 3):
    got, _ = read_datagrams(rig.peers[n], 2 * len(burst))
    assert got == [p for p in burst for _ in range(2)], (n, len(got))
stats = rig.loop.stats()
assert stats.gso_refused == 1 and stats.gso_sends == 0, stats
rig.loop.close()
print("refused ok")
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root")
def test_a_refused_segmented_send_goes_per_datagram(handler_so) -> None:
    """Where the route cannot take a segmented send (in a network namespace whose loopback
    MTU is below the results' size), the loop counts gso_refused once, turns GSO off and
    sends every peer the same datagrams one by one."""
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", _REFUSED, str(handler_so), root],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "refused ok" in done.stdout
