"""The UDP loopback adapter with real UDP sockets on 127.0.0.1 (ephemeral ports).

What this file proves: a datagram from port N's peer arrives on port N as exactly the frame
docs/ports.md draws (every Ethernet, IPv4 and UDP field, both checksums, checked with scapy);
a UDP frame sent out of port N reaches N's peer as a datagram from the listen address,
whatever addresses the frame itself carries; unknown senders, non-IPv4/UDP frames, fragments,
truncated, garbage and oversize frames or datagrams are dropped and counted under the reason
docs/ports.md names, never raised; and any payload survives datagram -> frame -> datagram.
Every wait is bounded (2 s) and every socket is closed.
"""

from __future__ import annotations

import logging
import selectors
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from p4reduce.switch.ports import MAX_FRAME, UdpAdapter, frame_sources
from p4reduce.switch.ports.ipudp import (
    Endpoints,
    NotUdp,
    build_frame,
    checksum,
    port_mac,
    udp_payload,
)
from p4reduce.switch.ports.udp import MAX_PAYLOAD
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

TIMEOUT = 2.0


@contextmanager
def udp_socket(ip: str = "127.0.0.1") -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((ip, 0))
        sock.settimeout(TIMEOUT)
        yield sock
    finally:
        sock.close()


@contextmanager
def adapter_with_peers(
    count: int = 2, listen: tuple[str, int] = ("127.0.0.1", 0), **options
) -> Iterator[tuple[UdpAdapter, list[socket.socket]]]:
    """An adapter whose ports 1..count stand for ``count`` fresh peer sockets."""
    with ExitStack() as stack:
        peers = [stack.enter_context(udp_socket()) for _ in range(count)]
        mapping = {i + 1: peer.getsockname() for i, peer in enumerate(peers)}
        adapter = stack.enter_context(UdpAdapter(listen, mapping, **options))
        yield adapter, peers


def target(adapter: UdpAdapter) -> tuple[str, int]:
    """Where peers send: the listen address (127.0.0.1 when listening on the wildcard)."""
    ip, port = adapter.listen
    return ("127.0.0.1" if ip == "0.0.0.0" else ip), port


def wait_receive(source, timeout: float = TIMEOUT):
    """The next item from ``source.receive()``, waiting on its socket at most ``timeout``."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(source.fileno(), selectors.EVENT_READ)
        while True:
            item = source.receive()
            if item is not None:
                return item
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"nothing received within {timeout} s")
            selector.select(left)


def ip_checksum_ok(ip: IP) -> bool:
    rebuilt = ip.copy()
    del rebuilt.chksum
    return IP(bytes(rebuilt)).chksum == ip.chksum


def udp_checksum_ok(ip: IP) -> bool:
    rebuilt = ip.copy()
    del rebuilt[UDP].chksum
    return IP(bytes(rebuilt))[UDP].chksum == ip[UDP].chksum


# -- datagram -> frame ----------------------------------------------------------------------


def test_datagram_becomes_exact_frame() -> None:
    with adapter_with_peers(2) as (adapter, peers):
        payload = b"hello, switch\x00\xff" * 3
        peers[1].sendto(payload, target(adapter))
        number, frame = wait_receive(adapter)
        assert number == 2
        peer_ip, peer_port = peers[1].getsockname()
        pkt = Ether(frame)
        assert pkt.dst == "02:00:00:00:00:fe"
        assert pkt.src == "02:00:00:00:01:02"
        assert pkt.type == 0x0800
        ip = pkt[IP]
        assert (ip.version, ip.ihl, ip.tos) == (4, 5, 0)
        assert ip.len == 20 + 8 + len(payload)
        assert (ip.id, str(ip.flags), ip.frag, ip.ttl, ip.proto) == (0, "DF", 0, 64, 17)
        assert (ip.src, ip.dst) == (peer_ip, adapter.listen[0])
        assert ip_checksum_ok(ip)
        udp = pkt[UDP]
        assert (udp.sport, udp.dport, udp.len) == (peer_port, adapter.listen[1], 8 + len(payload))
        assert udp.chksum != 0
        assert udp_checksum_ok(ip)
        assert bytes(udp.payload) == payload
        assert len(frame) == 14 + 20 + 8 + len(payload)  # no padding, nothing trailing
        assert (adapter.ports[2].rx_frames, adapter.ports[1].rx_frames) == (1, 0)

        # The IPv4 identification counts frames across the adapter, modulo 2^16.
        peers[0].sendto(b"", target(adapter))
        number, frame = wait_receive(adapter)
        assert number == 1
        pkt = Ether(frame)
        assert (pkt.src, pkt[IP].id, pkt[UDP].len, len(frame)) == ("02:00:00:00:01:01", 1, 8, 42)
        assert ip_checksum_ok(pkt[IP]) and udp_checksum_ok(pkt[IP])


def test_port_macs_cover_all_port_numbers() -> None:
    assert port_mac(0).hex(":") == "02:00:00:00:01:00"
    assert port_mac(255).hex(":") == "02:00:00:00:01:ff"
    assert port_mac(256).hex(":") == "02:00:00:00:02:00"
    assert port_mac(510).hex(":") == "02:00:00:00:02:fe"
    assert len({port_mac(n) for n in range(511)}) == 511


def test_custom_switch_mac_and_high_port_number() -> None:
    with (
        udp_socket() as peer,
        UdpAdapter(
            ("127.0.0.1", 0), {300: peer.getsockname()}, switch_mac=bytes.fromhex("0a0b0c0d0e0f")
        ) as adapter,
    ):
        peer.sendto(b"x", target(adapter))
        number, frame = wait_receive(adapter)
        assert number == 300
        assert (Ether(frame).dst, Ether(frame).src) == ("0a:0b:0c:0d:0e:0f", "02:00:00:00:02:2c")


def test_udp_checksum_zero_is_sent_as_ffff() -> None:
    ends = Endpoints(port_mac(1), port_mac(2), "10.0.0.1", "10.0.0.2", 1000, 2000)
    # Choose the last payload word so that the ones' complement sum is 0xFFFF (checksum 0).
    probe = build_frame(b"\x00\x00", ends, 0)
    needed = checksum(
        bytes.fromhex("0a0000010a000002") + b"\x00\x11\x00\x0a" + probe[34:40] + bytes(4)
    )
    frame = build_frame(needed.to_bytes(2, "big"), ends, 0)
    assert frame[40:42] == b"\xff\xff"
    assert udp_checksum_ok(Ether(frame)[IP])  # scapy also sends a computed 0 as 0xFFFF


def test_wildcard_listen_reports_the_real_destination() -> None:
    with adapter_with_peers(1, listen=("0.0.0.0", 0)) as (adapter, peers):
        for dst in ("127.0.0.1", "127.0.0.2"):
            peers[0].sendto(b"to " + dst.encode(), (dst, adapter.listen[1]))
            _, frame = wait_receive(adapter)
            assert Ether(frame)[IP].dst == dst
            assert ip_checksum_ok(Ether(frame)[IP]) and udp_checksum_ok(Ether(frame)[IP])


def test_unknown_sender_dropped_counted_and_logged_rate_limited(caplog) -> None:
    now = [0.0]
    with adapter_with_peers(1, log_interval=60.0, clock=lambda: now[0]) as (adapter, peers):
        with udp_socket() as stranger, udp_socket() as other, caplog.at_level(logging.WARNING):
            for _ in range(3):
                stranger.sendto(b"who am i", target(adapter))
            other.sendto(b"me too", target(adapter))
            peers[0].sendto(b"known", target(adapter))
            number, frame = wait_receive(adapter)  # the strangers' datagrams are skipped
            assert (number, udp_payload(frame)) == (1, b"known")
            assert adapter.counters.rx_dropped == {"unknown_sender": 4}
            assert adapter.ports[1].rx_dropped == {}
            lines = [r.getMessage() for r in caplog.records]
            assert len(lines) == 2  # one line per sender, not per datagram
            assert "{}:{}".format(*stranger.getsockname()) in lines[0]
            assert "{}:{}".format(*other.getsockname()) in lines[1]

            caplog.clear()
            now[0] = 61.0
            stranger.sendto(b"again", target(adapter))
            peers[0].sendto(b"known", target(adapter))
            wait_receive(adapter)
            assert len(caplog.records) == 1
            assert "(2 more since the last report)" in caplog.records[0].getMessage()
            assert adapter.counters.rx_dropped == {"unknown_sender": 5}


def test_oversize_datagram_dropped_and_counted() -> None:
    with adapter_with_peers(1) as (adapter, peers):
        peers[0].sendto(b"a" * (MAX_PAYLOAD + 1), target(adapter))
        peers[0].sendto(b"b" * MAX_PAYLOAD, target(adapter))
        number, frame = wait_receive(adapter)
        assert len(frame) == MAX_FRAME
        assert udp_payload(frame) == b"b" * MAX_PAYLOAD
        assert adapter.ports[1].rx_dropped == {"oversize": 1}
        assert adapter.ports[1].rx_frames == 1


# -- frame -> datagram ----------------------------------------------------------------------


def test_frame_becomes_datagram_to_the_ports_peer() -> None:
    with adapter_with_peers(3) as (adapter, peers):
        # The frame's own addresses are nonsense on purpose: the port decides the destination.
        frame = bytes(
            Ether(dst="ff:ff:ff:ff:ff:ff", src="00:11:22:33:44:55")
            / IP(src="192.0.2.1", dst="198.51.100.7", ttl=1)
            / UDP(sport=1, dport=2, chksum=0x1234)  # a wrong checksum is not checked
            / b"payload for peer 2"
        )
        adapter.ports[2].send(frame)
        data, sender = peers[1].recvfrom(65536)
        assert (data, sender) == (b"payload for peer 2", adapter.listen)
        assert adapter.ports[2].tx_frames == 1

        # IP options (IHL 6) and Ethernet padding after the IP packet are handled.
        frame = bytes(Ether() / IP(options=[IPOption_NOP()] * 4) / UDP(sport=5, dport=6) / b"opts")
        assert Ether(frame)[IP].ihl == 6
        adapter.ports[3].send(frame + b"\x00" * 30)
        assert peers[2].recvfrom(65536) == (b"opts", adapter.listen)

        # Bytes inside the IP packet beyond the UDP length are not part of the datagram.
        frame = bytes(Ether() / IP() / UDP(len=8 + 3) / b"abcdef")
        adapter.ports[1].send(frame)
        assert peers[0].recvfrom(65536) == (b"abc", adapter.listen)


def _valid_frame(payload: bytes = b"data") -> bytes:
    return bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=7, dport=8) / payload)


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (bytes(Ether() / ARP()), "not_ipv4"),
        (bytes(Ether() / IPv6() / UDP() / b"v6"), "not_ipv4"),
        (bytes(Ether(type=0x0800) / IPv6() / UDP() / b"v6 label"), "not_ipv4"),
        (bytes(Ether() / IP() / TCP() / b"tcp"), "not_udp"),
        (bytes(Ether() / IP() / ICMP()), "not_udp"),
        (bytes(Ether() / IP(flags="MF") / UDP() / b"first fragment"), "ip_fragment"),
        (bytes(Ether() / IP(frag=3) / UDP() / b"later fragment"), "ip_fragment"),
        (bytes(Ether() / IP(ihl=4) / UDP() / b"x"), "malformed"),
        (bytes(Ether() / IP(len=19) / UDP() / b"x"), "malformed"),
        (bytes(Ether() / IP(len=1000) / UDP() / b"x"), "malformed"),
        (bytes(Ether() / IP() / UDP(len=7) / b"x"), "malformed"),
        (bytes(Ether() / IP() / UDP(len=100) / b"x"), "malformed"),
        (bytes(Ether() / IP(len=24) / UDP() / b"x"), "malformed"),  # UDP header cut by len
        (b"", "runt"),
        (b"\x00" * 13, "runt"),
        (_valid_frame(b"z" * (MAX_FRAME - 41)), "oversize"),
    ],
)
def test_undeliverable_frame_dropped_and_counted(frame: bytes, reason: str) -> None:
    with adapter_with_peers(1) as (adapter, peers):
        port = adapter.ports[1]
        port.send(frame)
        assert (port.tx_dropped, port.tx_frames) == ({reason: 1}, 0)
        # Nothing reached the peer: the next datagram it gets is the sentinel sent after.
        port.send(_valid_frame(b"sentinel"))
        assert peers[0].recvfrom(65536)[0] == b"sentinel"


def test_every_truncation_of_a_frame_is_dropped() -> None:
    with adapter_with_peers(1) as (adapter, peers):
        port = adapter.ports[1]
        frame = _valid_frame(b"0123456789")
        for cut in range(len(frame)):
            port.send(frame[:cut])
        expected = {"runt": 14, "malformed": len(frame) - 14}
        assert (port.tx_dropped, port.tx_frames) == (expected, 0)
        port.send(frame)
        assert peers[0].recvfrom(65536)[0] == b"0123456789"
        assert port.tx_frames == 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_frames_never_raise(garbage: bytes) -> None:
    try:
        payload = udp_payload(garbage)
    except NotUdp as exc:  # nothing else may escape, and only with a documented reason
        assert exc.reason in {"runt", "not_ipv4", "malformed", "ip_fragment", "not_udp"}
    else:
        assert len(payload) <= len(garbage) - 42


def test_garbage_frames_on_a_port_are_counted_once_each() -> None:
    with adapter_with_peers(1) as (adapter, peers):
        port = adapter.ports[1]

        @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.binary(max_size=120))
        def send_garbage(garbage: bytes) -> None:
            before = port.tx_frames + sum(port.tx_dropped.values())
            port.send(garbage)
            assert port.tx_frames + sum(port.tx_dropped.values()) == before + 1

        send_garbage()


# -- round trip, sharing, closing -----------------------------------------------------------


def test_round_trip_datagram_frame_datagram() -> None:
    with adapter_with_peers(3) as (adapter, peers):

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.binary(max_size=3000), st.integers(0, 2))
        @example(b"", 0)
        @example(b"\xff" * MAX_PAYLOAD, 1)
        @example(b"\x00" * 1473, 2)
        def round_trip(payload: bytes, index: int) -> None:
            peers[index].sendto(payload, target(adapter))
            number, frame = wait_receive(adapter)
            assert number == index + 1
            assert udp_payload(frame) == payload
            assert udp_checksum_ok(Ether(frame)[IP])
            adapter.ports[number].send(frame)
            assert peers[index].recvfrom(65536) == (payload, adapter.listen)

        round_trip()
        ports = adapter.ports.values()
        assert sum(p.rx_frames for p in ports) == sum(p.tx_frames for p in ports) > 150


def test_ports_share_one_source_and_keep_each_others_frames() -> None:
    with adapter_with_peers(2) as (adapter, peers):
        assert frame_sources(adapter.ports.values()) == [adapter]
        assert adapter.ports[1].fileno() == adapter.ports[2].fileno() == adapter.fileno()
        peers[0].sendto(b"for 1", target(adapter))
        peers[1].sendto(b"for 2", target(adapter))
        # Port 2's receive reads port 1's frame first and keeps it for port 1.
        assert udp_payload(wait_receive(adapter.ports[2])) == b"for 2"
        assert (adapter.ports[1].pending(), adapter.ports[2].pending()) == (1, 0)
        assert udp_payload(adapter.ports[1].receive()) == b"for 1"
        assert adapter.ports[1].receive() is None and adapter.receive() is None
        # The adapter's own receive drains the backlogs too.
        peers[0].sendto(b"again 1", target(adapter))
        peers[1].sendto(b"again 2", target(adapter))
        assert udp_payload(wait_receive(adapter.ports[2])) == b"again 2"
        kept = adapter.ports[1].backlog[0]
        assert adapter.receive() == (1, kept)
        assert adapter.receive_tagged() is None


def test_closing_every_port_closes_the_socket() -> None:
    with adapter_with_peers(2) as (adapter, peers):
        adapter.ports[1].close()
        assert not adapter.closed
        adapter.ports[1].send(_valid_frame())
        assert adapter.ports[1].tx_dropped == {"closed": 1}
        peers[0].sendto(b"to a closed port", target(adapter))
        peers[1].sendto(b"to an open port", target(adapter))
        assert wait_receive(adapter)[0] == 2
        assert adapter.ports[1].rx_dropped == {"port_closed": 1}
        adapter.ports[2].close()
        assert adapter.closed and adapter.fileno() == -1
        assert adapter.receive() is None
        adapter.ports[2].send(_valid_frame())
        assert adapter.ports[2].tx_dropped == {"closed": 1}
        adapter.close()  # idempotent


def test_from_specs_and_configuration_errors() -> None:
    from p4reduce.switch.ports import parse_port_spec

    with udp_socket() as peer:
        ip, port = peer.getsockname()
        specs = [parse_port_spec(f"4@udp:localhost:{port}"), parse_port_spec("5@eth0")]
        with UdpAdapter.from_specs(specs, ("127.0.0.1", 0)) as adapter:
            assert list(adapter.ports) == [4]
            assert adapter.ports[4].peer == ("127.0.0.1", port)  # host names are resolved

        with pytest.raises(ValueError, match=r"ports 1 and 2 both stand for UDP peer"):
            UdpAdapter(("127.0.0.1", 0), {1: (ip, port), 2: ("localhost", port)})
        with pytest.raises(OSError, match=rf"cannot listen on 127\.0\.0\.1:{port}"):
            UdpAdapter((ip, port), {})
        with pytest.raises(ValueError, match=r"switch MAC must be 6 bytes"):
            UdpAdapter(("127.0.0.1", 0), {}, switch_mac=b"\x02")
