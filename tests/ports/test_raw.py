"""RawSocketPort on a real veth pair (needs root and iproute2's ``ip``; skipped otherwise).

What this file proves: a frame sent into one end of a veth pair with a plain AF_PACKET socket
arrives byte for byte through a RawSocketPort on the other end, and a frame the port sends
arrives at the first end byte for byte; the port never receives its own transmissions; it
puts the interface in promiscuous mode only while open; frames over 16 KiB are dropped and
counted on receive, and runt, oversize and over-MTU frames on send; and the errors for a
missing interface and a missing privilege say what is wrong. The veth pair has a random name
and is deleted in a ``finally``; every wait is bounded.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from shutil import which

import pytest
from p4reduce.switch.ports import (
    MAX_FRAME,
    RawSocketPort,
    UdpAdapter,
    have_raw_socket_privilege,
    open_ports,
    parse_port_spec,
)
from p4reduce.switch.ports.raw import (
    PACKET_IGNORE_OUTGOING,
    PACKET_OUTGOING,
    SOL_PACKET,
    rx_drop_reason,
)

TIMEOUT = 2.0
TEST_TYPE = 0x88B5  # IEEE "local experimental" EtherType: nothing else on the link uses it
PR_CAPBSET_DROP = 24
CAP_NET_RAW = 13
MAC_A = bytes.fromhex("0200000000aa")
MAC_B = bytes.fromhex("0200000000bb")


def _why_no_veth() -> str | None:
    if not sys.platform.startswith("linux"):
        return "AF_PACKET raw sockets exist only on Linux"
    if which("ip") is None:
        return "iproute2's `ip` is not on PATH"
    if not have_raw_socket_privilege():
        return "needs root or CAP_NET_RAW to open AF_PACKET sockets and create veth pairs"
    return None


needs_veth = pytest.mark.skipif(_why_no_veth() is not None, reason=str(_why_no_veth()))


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)


@contextmanager
def veth_pair(mtu: int = 20000) -> Iterator[tuple[str, str]]:
    """A fresh veth pair (random names, so parallel runs cannot clash), up, without IPv6 so
    the kernel sends no neighbour discovery noise on it; always deleted afterwards."""
    suffix = secrets.token_hex(3)
    a, b = f"p4ra{suffix}", f"p4rb{suffix}"
    try:
        try:
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
        except subprocess.CalledProcessError as exc:
            pytest.skip(f"cannot create a veth pair: {exc.stderr.strip()}")
        for name in (a, b):
            disable = Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6")
            if disable.exists():
                disable.write_text("1")
            _ip("link", "set", "dev", name, "mtu", str(mtu))
            _ip("link", "set", "dev", name, "up")
        deadline = time.monotonic() + TIMEOUT
        while any(_operstate(n) != "up" for n in (a, b)):
            assert time.monotonic() < deadline, "veth pair did not come up"
            time.sleep(0.01)
        yield a, b
    finally:
        # Deleting one end deletes both; quiet if creation failed.
        subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=10)


def _operstate(name: str) -> str:
    return Path(f"/sys/class/net/{name}/operstate").read_text().strip()


def _promiscuity(name: str) -> int:
    out = subprocess.run(
        ["ip", "-d", "link", "show", "dev", name], capture_output=True, text=True, timeout=10
    ).stdout
    words = out.split()
    return int(words[words.index("promiscuity") + 1])


@contextmanager
def plain_socket(ifname: str) -> Iterator[socket.socket]:
    """An ordinary AF_PACKET socket on ``ifname`` that sees only the test EtherType."""
    with closing(socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)) as sock:
        sock.bind((ifname, TEST_TYPE))
        sock.settimeout(TIMEOUT)
        yield sock


def make_frame(tag: bytes, size: int = 64) -> bytes:
    body = tag + secrets.token_bytes(max(0, size - 14 - len(tag)))
    return MAC_B + MAC_A + TEST_TYPE.to_bytes(2, "big") + body


def port_receive(port: RawSocketPort, timeout: float = TIMEOUT) -> bytes:
    """The next test-EtherType frame the port delivers (other frames are skipped)."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(port.fileno(), selectors.EVENT_READ)
        while True:
            frame = port.receive()
            if frame is not None and frame[12:14] == TEST_TYPE.to_bytes(2, "big"):
                return frame
            if frame is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"port {port.number}: nothing within {timeout} s")
                selector.select(left)


def plain_receive(sock: socket.socket) -> bytes:
    while True:
        frame, address = sock.recvfrom(65536)
        if address[2] != PACKET_OUTGOING:
            return frame


# -- without privilege ----------------------------------------------------------------------


def test_rx_drop_reasons() -> None:
    assert rx_drop_reason(60, 0) is None
    assert rx_drop_reason(14, 0) is None
    assert rx_drop_reason(MAX_FRAME, 3) is None
    assert rx_drop_reason(13, 0) == "runt"
    assert rx_drop_reason(MAX_FRAME + 1, 0) == "oversize"
    assert rx_drop_reason(64, PACKET_OUTGOING) == ""  # our own copy: skipped, not a drop


def test_missing_interface_names_it() -> None:
    name = "nope" + secrets.token_hex(4)
    with pytest.raises(OSError, match=rf"port 7@{name}: there is no network interface named"):
        RawSocketPort(7, name)


def _drop_cap_net_raw() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_NET_RAW) failed")


def test_without_privilege_the_error_says_what_is_needed() -> None:
    if os.geteuid() != 0:
        try:
            RawSocketPort(3, "lo").close()
        except PermissionError as exc:
            message = str(exc)
        else:
            pytest.skip("this process has CAP_NET_RAW without being root")
    else:
        # As root, check the message in a child whose capability bounding set lacks
        # CAP_NET_RAW: root's execve then grants it every capability but that one.
        code = (
            "from p4reduce.switch.ports import RawSocketPort\n"
            "try:\n    RawSocketPort(3, 'lo')\n"
            "except PermissionError as exc:\n    print('PermissionError:', exc)\n"
        )
        child = subprocess.run(
            [sys.executable, "-c", code],
            preexec_fn=_drop_cap_net_raw,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if child.returncode != 0:
            pytest.skip(f"cannot drop CAP_NET_RAW in a child: {child.stderr.strip()[-300:]}")
        message = child.stdout
        assert message.startswith("PermissionError:")
    assert "port 3@lo: opening a raw socket needs root or the CAP_NET_RAW capability" in message


# -- on a veth pair -------------------------------------------------------------------------


@needs_veth
def test_frames_cross_both_ways_byte_for_byte() -> None:
    with veth_pair() as (a, b), plain_socket(a) as outside, RawSocketPort(5, b) as port:
        sent = make_frame(b"in", 200)
        outside.send(sent)
        assert port_receive(port) == sent
        assert port.rx_frames >= 1 and port.rx_dropped == {}

        # ...and back: the port sends a frame (here the one it got, echoed) out of veth b.
        reply = make_frame(b"out", 1500)
        port.send(reply)
        port.send(sent)
        assert plain_receive(outside) == reply
        assert plain_receive(outside) == sent
        assert (port.tx_frames, port.tx_dropped) == (2, {})

        # The port does not see its own transmissions: the first test frame it receives now
        # is the marker sent afterwards from the other end.
        marker = make_frame(b"marker")
        outside.send(marker)
        assert port_receive(port) == marker


@needs_veth
@pytest.mark.parametrize("kernel_filter", [True, False])
def test_frames_leaving_the_interface_are_not_received(kernel_filter: bool) -> None:
    # The kernel never loops a socket's own transmissions back to it, but frames that other
    # senders (the host's IP stack, another packet socket) put on the interface show up as
    # PACKET_OUTGOING copies. They are not arrivals, so the port must skip them: by the
    # kernel's PACKET_IGNORE_OUTGOING, or (kernels before 4.20, simulated by turning that
    # option off) by the port's own check of the packet type, without counting drops.
    with veth_pair() as (a, b), plain_socket(a) as outside, plain_socket(b) as other_sender:
        with RawSocketPort(6, b) as port:
            if not kernel_filter:
                port._sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 0)
            port.send(make_frame(b"own"))
            for i in range(3):
                other_sender.send(make_frame(b"other%d" % i))
            marker = make_frame(b"marker")
            outside.send(marker)
            assert port_receive(port) == marker
            assert port.rx_dropped == {} and port.tx_frames == 1


@needs_veth
def test_promiscuous_only_while_open() -> None:
    with veth_pair() as (_a, b):
        before = _promiscuity(b)
        with RawSocketPort(0, b):
            assert _promiscuity(b) == before + 1
        assert _promiscuity(b) == before
        with RawSocketPort(0, b, promiscuous=False):
            assert _promiscuity(b) == before


@needs_veth
def test_receive_size_limit() -> None:
    with veth_pair(mtu=20000) as (a, b), plain_socket(a) as outside, RawSocketPort(1, b) as port:
        too_big = make_frame(b"big", MAX_FRAME + 1)
        just_fits = make_frame(b"fits", MAX_FRAME)
        outside.send(too_big)
        outside.send(just_fits)
        assert port_receive(port) == just_fits
        assert port.rx_dropped == {"oversize": 1}


@needs_veth
def test_send_limits_and_close() -> None:
    with veth_pair(mtu=1500) as (a, b), plain_socket(a) as outside:
        port = RawSocketPort(2, b)
        port.send(b"\x00" * 13)
        port.send(make_frame(b"huge", MAX_FRAME + 1))
        port.send(make_frame(b"mtu", 1515))  # 1501 bytes of payload: over the MTU
        port.send(make_frame(b"ok", 1514))
        assert plain_receive(outside)[14:16] == b"ok"
        assert port.tx_dropped == {"runt": 1, "oversize": 1, "mtu_exceeded": 1}
        assert (port.tx_frames, port.counters.errors) == (1, {"EMSGSIZE": 1})
        port.close()
        assert port.fileno() == -1 and port.receive() is None
        port.send(make_frame(b"late"))
        assert port.tx_dropped["closed"] == 1
        port.close()  # idempotent


@needs_veth
def test_open_ports_mixes_interfaces_and_udp() -> None:
    with veth_pair() as (a, b), plain_socket(a) as outside:
        with closing(socket.socket(socket.AF_INET, socket.SOCK_DGRAM)) as peer:
            peer.bind(("127.0.0.1", 0))
            specs = [
                parse_port_spec(f"2@{b}"),
                parse_port_spec("1@udp:{}:{}".format(*peer.getsockname())),
            ]
            ports = open_ports(specs, ("127.0.0.1", 0))
            try:
                assert list(ports) == [1, 2]
                assert isinstance(ports[2], RawSocketPort)
                assert isinstance(ports[1].source, UdpAdapter)
                frame = make_frame(b"via open_ports")
                outside.send(frame)
                assert port_receive(ports[2]) == frame
            finally:
                for port in ports.values():
                    port.close()
            assert all(port.fileno() == -1 for port in ports.values())
