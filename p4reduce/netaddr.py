"""``HOST:PORT`` and ``[IPV6]:PORT``: the one parser of the addresses every p4reduce command
takes (the controller's listen and switch addresses, the switch's gRPC address and its UDP
adapter's peers and listen address). Errors are one line naming the piece that is wrong.

IPv6 needs brackets: ``::1:9559`` is refused (is ``9559`` the port or the last group?).
A caller that builds IPv4 frames (the switch's UDP adapter) asks for ``ipv4_only``.
"""

from __future__ import annotations

import ipaddress
import string


class AddressError(ValueError):
    """A malformed ``HOST:PORT``: the message names the argument and the bad piece."""


def split(
    text: str,
    *,
    what: str = "address",
    allow_port_zero: bool = True,
    ipv4_only: bool = False,
    port_word: str = "port",
) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` or ``[IPV6]:PORT`` (the host without brackets).

    ``allow_port_zero``: a listen address (0 picks a free port). ``ipv4_only``: refuse IPv6
    addresses. ``port_word``: how messages call the port ("UDP port")."""
    text = str(text)
    if ipv4_only and (text.startswith("[") or text.count(":") > 1):
        raise AddressError(f"{what}: {text!r} looks like IPv6; only IPv4 HOST:PORT is supported")
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or not rest.startswith(":"):
            raise AddressError(f"{what}: {text!r} has no ':PORT' (expected [IPV6]:PORT)")
        port_text = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise AddressError(f"{what}: {host!r} is not an IPv6 address") from None
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise AddressError(f"{what}: {text!r} has no ':PORT' (expected HOST:PORT)")
        if ":" in host:  # a bare IPv6 address, or one with a port that cannot be told apart
            raise AddressError(
                f"{what}: {text!r} has no ':PORT' (an IPv6 address needs brackets: [IPV6]:PORT)"
            )
        if not host:
            raise AddressError(f"{what}: {text!r} has no host before ':' (expected HOST:PORT)")
        if any(c.isspace() or c in "@[]/" for c in host):
            raise AddressError(f"{what}: host {host!r} is not a valid host name or IP address")
    # plain decimal only: int() would also take " 1", "+1" and "1_0", none of which is a port
    if not port_text or not all(c in string.digits for c in port_text):
        raise AddressError(f"{what}: {port_word} {port_text!r} is not a decimal integer")
    port = int(port_text)
    low = 0 if allow_port_zero else 1
    if not low <= port <= 65535:
        raise AddressError(f"{what}: {port_word} {port} is out of range {low}..65535")
    return host, port


def join(host: str, port: int) -> str:
    """``HOST:PORT``, with brackets around an IPv6 host (what ``split`` reads back)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
