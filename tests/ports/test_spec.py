"""The ``-i`` port spec: ``N@IFACE`` and ``N@udp:HOST:PORT``, and the errors for bad input,
each of which must name the part that is wrong. Also the frame-source grouping the I/O loop
uses (ports sharing a socket give one source)."""

from __future__ import annotations

import pytest
from p4reduce.switch.ports import (
    Port,
    PortSpec,
    frame_sources,
    open_ports,
    parse_host_port,
    parse_port_spec,
)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("0@eth0", PortSpec(0, iface="eth0")),
        ("1@veth1", PortSpec(1, iface="veth1")),
        ("510@s1-eth1", PortSpec(510, iface="s1-eth1")),
        ("7@a23456789012345", PortSpec(7, iface="a23456789012345")),  # 15 bytes: the limit
        ("2@eth0.100", PortSpec(2, iface="eth0.100")),
        ("3@udp:127.0.0.1:9001", PortSpec(3, udp_peer=("127.0.0.1", 9001))),
        ("4@udp:localhost:65535", PortSpec(4, udp_peer=("localhost", 65535))),
        ("5@udp:worker-1.example:1", PortSpec(5, udp_peer=("worker-1.example", 1))),
        ("007@udp:10.0.0.1:5", PortSpec(7, udp_peer=("10.0.0.1", 5))),
    ],
)
def test_valid_specs(text: str, spec: PortSpec) -> None:
    parsed = parse_port_spec(text)
    assert parsed == spec
    assert parsed.is_udp == (spec.udp_peer is not None)
    # str() gives the spec back (modulo leading zeros), so it can be logged and re-parsed.
    assert parse_port_spec(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("eth0", "no '@'"),
        ("", "no '@'"),
        ("@eth0", "port number '' is not a decimal integer"),
        ("x@eth0", "port number 'x' is not a decimal integer"),
        ("-1@eth0", "port number '-1' is not a decimal integer"),
        ("+1@eth0", "port number '+1' is not a decimal integer"),
        (" 1@eth0", "port number ' 1' is not a decimal integer"),
        ("0x1@eth0", "port number '0x1' is not a decimal integer"),
        ("511@eth0", "port number 511 is out of range 0..510 (511 is v1model's drop port)"),
        ("9999@eth0", "port number 9999 is out of range"),
        ("1@", "nothing after '@'"),
        ("1@a234567890123456", "interface name 'a234567890123456' is longer than 15 bytes"),
        ("1@eth 0", "'eth 0' is not a valid interface name"),
        ("1@a/b", "'a/b' is not a valid interface name"),
        ("1@..", "'..' is not a valid interface name"),
        ("1@udp:", "'' has no ':PORT'"),
        ("1@udp:127.0.0.1", "'127.0.0.1' has no ':PORT'"),
        ("1@udp::9000", "has no host before ':'"),
        ("1@udp:127.0.0.1:", "UDP port '' is not a decimal integer"),
        ("1@udp:127.0.0.1:http", "UDP port 'http' is not a decimal integer"),
        ("1@udp:127.0.0.1:0", "UDP port 0 is out of range 1..65535"),
        ("1@udp:127.0.0.1:65536", "UDP port 65536 is out of range 1..65535"),
        ("1@udp:[::1]:9000", "looks like IPv6"),
        ("1@udp:::1:9000", "looks like IPv6"),
        ("1@udp:a b:9000", "host 'a b' is not a valid host name"),
    ],
)
def test_invalid_specs(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_port_spec(text)
    assert message in str(info.value)
    assert repr(text) in str(info.value)  # the whole spec is quoted, so the user finds it


def test_listen_address_allows_port_zero() -> None:
    assert parse_host_port("0.0.0.0:0", allow_port_zero=True) == ("0.0.0.0", 0)
    assert parse_host_port("127.0.0.1:9000", what="--udp-listen") == ("127.0.0.1", 9000)
    with pytest.raises(ValueError, match=r"--udp-listen: UDP port 0 is out of range 1\.\.65535"):
        parse_host_port("127.0.0.1:0", what="--udp-listen")


class _FakePort(Port):
    def __init__(self, number: int, source: object | None = None) -> None:
        super().__init__(number)
        self._source = source

    def fileno(self) -> int:
        return 100 + self.number

    def receive(self) -> bytes | None:
        return b"frame" if self.number == 1 else None

    def send(self, frame: bytes) -> None:
        self.counters.tx_frames += 1

    def close(self) -> None:
        pass

    @property
    def source(self):  # type: ignore[override]
        return self._source if self._source is not None else self


def test_frame_sources_groups_shared_sockets() -> None:
    shared = object()
    a, b = _FakePort(1), _FakePort(2)
    c, d = _FakePort(3, shared), _FakePort(4, shared)
    assert frame_sources([a, c, b, d]) == [a, shared, b]
    # A port is its own source by default, tagging frames with its number.
    assert a.receive_tagged() == (1, b"frame")
    assert b.receive_tagged() is None
    b.send(b"x")
    assert (b.tx_frames, b.rx_frames, dict(b.tx_dropped)) == (1, 0, {})
    assert b.counters.snapshot() == {
        "rx_frames": 0,
        "tx_frames": 1,
        "rx_dropped": {},
        "tx_dropped": {},
        "errors": {},
    }


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (["1@eth0", "1@udp:127.0.0.1:9001"], "port 1 is given twice: 1@eth0, 1@udp:127.0.0.1:9001"),
        (["1@eth0", "2@eth0"], "interface 'eth0' is bound twice: 1@eth0, 2@eth0"),
    ],
)
def test_open_ports_refuses_duplicates_before_opening_anything(
    texts: list[str], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        open_ports([parse_port_spec(t) for t in texts])
    assert message in str(info.value)
