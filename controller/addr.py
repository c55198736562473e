"""Parsing and printing of the addresses a controller handles: IPv4 addresses and prefixes,
MAC addresses, UDP and switch port numbers, HOST:PORT (``p4reduce.netaddr``, the switch's
parser too). Every failure is an ``InvalidArgument`` naming the piece that was wrong."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from .. import netaddr as _netaddr
from .errors import InvalidArgument

_MAC_HEX = re.compile(r"^[0-9a-fA-F]{12}$")


def ipv4(text: Any, what: str = "IPv4 address") -> int:
    try:
        return int(ipaddress.IPv4Address(str(text).strip()))
    except (ipaddress.AddressValueError, ValueError):
        raise InvalidArgument(f"bad {what} {text!r} (want a.b.c.d)") from None


def ipv4_str(value: int) -> str:
    return str(ipaddress.IPv4Address(value))


def prefix(text: str, what: str = "IPv4 prefix") -> tuple[int, int]:
    """(address, prefix length) of ``a.b.c.d/len`` (host bits must be zero)."""
    try:
        net = ipaddress.IPv4Network(str(text).strip(), strict=True)
    except ValueError:
        raise InvalidArgument(f"bad {what} {text!r} (want a.b.c.d/len, host bits zero)") from None
    return int(net.network_address), net.prefixlen


def mac(text: Any, what: str = "MAC address") -> int:
    """A MAC written aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff or aabbccddeeff."""
    s = str(text).strip()
    parts = re.split(r"[:-]", s)
    if len(parts) == 6 and all(re.fullmatch(r"[0-9a-fA-F]{1,2}", p) for p in parts):
        return int("".join(p.zfill(2) for p in parts), 16)
    if _MAC_HEX.match(s):
        return int(s, 16)
    raise InvalidArgument(f"bad {what} {text!r} (want aa:bb:cc:dd:ee:ff)")


def mac_str(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def number(text: Any, what: str, low: int, high: int) -> int:
    """An integer in ``low..high`` (bools are refused: JSON ``true`` is not a port)."""
    if isinstance(text, bool):
        raise InvalidArgument(f"bad {what} {text!r} (want an integer in {low}..{high})")
    try:
        if isinstance(text, str):
            s = text.strip().lower()
            value = int(s, 16) if s.startswith("0x") else int(s, 10)
        else:
            value = int(text)
    except (TypeError, ValueError):
        raise InvalidArgument(f"bad {what} {text!r} (want an integer in {low}..{high})") from None
    if isinstance(text, float) and text != value:
        raise InvalidArgument(f"bad {what} {text!r} (want an integer in {low}..{high})")
    if not low <= value <= high:
        raise InvalidArgument(f"{what} {value} is outside {low}..{high}")
    return value


def udp_port(text: Any, what: str = "UDP port") -> int:
    return number(text, what, 1, 65535)


def switch_port(text: Any, what: str = "switch port") -> int:
    return number(text, what, 0, 511)


def hostport(text: str, what: str = "address") -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPV6]:PORT`` (port 0 allowed: pick a free one), parsed by
    ``p4reduce.netaddr`` as the switch parses its addresses."""
    try:
        return _netaddr.split(text, what=f"bad {what}", allow_port_zero=True)
    except _netaddr.AddressError as e:
        raise InvalidArgument(str(e)) from None
