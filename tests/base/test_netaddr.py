"""One HOST:PORT parser (p4reduce.netaddr) for the controller and the switch: both accept
and refuse the same addresses, IPv6 in brackets included; the UDP adapter alone refuses IPv6
(it builds IPv4 frames)."""

from __future__ import annotations

import pytest
from p4reduce.controller import addr
from p4reduce.controller.errors import InvalidArgument
from p4reduce.switch.ports import parse_host_port
from p4reduce.switch.process.cli import grpc_address

from p4reduce import netaddr

GOOD = [
    ("127.0.0.1:9559", ("127.0.0.1", 9559)),
    ("localhost:0", ("localhost", 0)),
    ("[::1]:9559", ("::1", 9559)),
    ("[fe80::1%eth0]:1", ("fe80::1%eth0", 1)),
    ("0.0.0.0:65535", ("0.0.0.0", 65535)),
]
BAD = [
    ("127.0.0.1", "has no ':PORT' (expected HOST:PORT)"),
    ("::1", "an IPv6 address needs brackets"),
    ("::1:9559", "an IPv6 address needs brackets"),
    ("[::1]", "has no ':PORT' (expected [IPV6]:PORT)"),
    ("[::1]9559", "has no ':PORT' (expected [IPV6]:PORT)"),
    ("[not-v6]:1", "'not-v6' is not an IPv6 address"),
    (":9559", "has no host before ':'"),
    ("a b:1", "host 'a b' is not a valid host name"),
    ("host:http", "port 'http' is not a decimal integer"),
    ("host:+1", "port '+1' is not a decimal integer"),
    ("host:65536", "port 65536 is out of range 0..65535"),
]


@pytest.mark.parametrize(("text", "want"), GOOD)
def test_controller_and_switch_accept_the_same(text: str, want: tuple[str, int]) -> None:
    assert netaddr.split(text) == want
    assert addr.hostport(text) == want
    assert grpc_address(text) == text
    assert netaddr.split(netaddr.join(*want)) == want  # join writes what split reads


@pytest.mark.parametrize(("text", "message"), BAD)
def test_controller_and_switch_refuse_the_same(text: str, message: str) -> None:
    with pytest.raises(netaddr.AddressError, match="^--x: ") as info:
        netaddr.split(text, what="--x")
    assert message in str(info.value)
    with pytest.raises(InvalidArgument) as info:
        addr.hostport(text, "switch address")
    assert str(info.value).startswith("bad switch address: ") and message in str(info.value)
    with pytest.raises(ValueError, match="^--grpc-server-addr: ") as info:
        grpc_address(text)
    assert message in str(info.value)


def test_the_udp_adapter_refuses_ipv6_and_port_zero_unless_listening() -> None:
    for text in ("[::1]:9000", "::1:9000"):
        with pytest.raises(ValueError, match="looks like IPv6; only IPv4 HOST:PORT"):
            parse_host_port(text, what="peer")
    with pytest.raises(ValueError, match=r"peer: UDP port 0 is out of range 1\.\.65535"):
        parse_host_port("127.0.0.1:0", what="peer")
    assert parse_host_port("127.0.0.1:0", allow_port_zero=True) == ("127.0.0.1", 0)
