"""Ethernet/IPv4/UDP framing for the UDP adapter, with no sockets in it (so it is testable and
reusable): wrap a datagram's payload into a frame, and take a frame's UDP payload back out.
Byte layouts are drawn in docs/ports.md."""

from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass

ETH_HEADER = 14
IPV4_HEADER = 20
UDP_HEADER = 8
FRAME_OVERHEAD = ETH_HEADER + IPV4_HEADER + UDP_HEADER  # 42
ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
TTL = 64
FLAG_DF = 0x4000
FLAG_MF = 0x2000
FRAG_OFFSET_MASK = 0x1FFF

_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")


def port_mac(number: int) -> bytes:
    """The Ethernet source of frames arriving on UDP port ``number``: 02:00:00:00 followed by
    0x0100 + number as two bytes, i.e. 02:00:00:00:01:NN for ports 0..255 and 02:00:00:00:02:NN
    (NN = number - 256) for 256..510. Locally administered, unicast, and unique per port."""
    return b"\x02\x00\x00\x00" + (0x0100 + number).to_bytes(2, "big")


def checksum(data: bytes | bytearray) -> int:
    """RFC 1071 Internet checksum (the complement of the ones' complement sum of 16-bit words)."""
    if len(data) % 2:
        data = bytes(data) + b"\x00"
    # Summing native-order words in C is ~50x faster than a Python loop, and RFC 1071 (2.B)
    # shows the ones' complement sum is byte-order independent: swap the folded result back.
    total = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if sys.byteorder == "little":
        total = ((total & 0xFF) << 8) | (total >> 8)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class Endpoints:
    """The addresses written into a frame built from a datagram."""

    eth_dst: bytes
    eth_src: bytes
    ip_src: str
    ip_dst: str
    udp_src: int
    udp_dst: int


def build_frame(payload: bytes, ends: Endpoints, ip_id: int) -> bytes:
    """The Ethernet/IPv4/UDP frame a host would have sent for ``payload``: IPv4 without
    options, TTL 64, DF set, identification ``ip_id``; both checksums computed."""
    udp_len = UDP_HEADER + len(payload)
    src = socket.inet_aton(ends.ip_src)
    dst = socket.inet_aton(ends.ip_dst)
    ip = _IPV4.pack(
        0x45, 0, IPV4_HEADER + udp_len, ip_id & 0xFFFF, FLAG_DF, TTL, IPPROTO_UDP, 0, src, dst
    )
    ip = ip[:10] + checksum(ip).to_bytes(2, "big") + ip[12:]
    pseudo = src + dst + struct.pack("!BBH", 0, IPPROTO_UDP, udp_len)
    udp = _UDP.pack(ends.udp_src, ends.udp_dst, udp_len, 0)
    udp_sum = checksum(pseudo + udp + payload)
    # A computed 0 is sent as 0xFFFF: 0 on the wire means "no checksum" (RFC 768).
    udp = udp[:6] + (udp_sum or 0xFFFF).to_bytes(2, "big")
    return _ETH.pack(ends.eth_dst, ends.eth_src, ETHERTYPE_IPV4) + ip + udp + payload


class NotUdp(Exception):
    """A frame that does not carry a deliverable UDP datagram; ``reason`` is the drop reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def udp_payload(frame: bytes | bytearray | memoryview) -> bytes:
    """The UDP payload of an Ethernet/IPv4/UDP frame, or NotUdp(reason).

    Lengths come from the headers, so Ethernet padding after the IP packet is ignored. The
    checksums are not verified: a P4 program may legitimately rewrite the payload without
    updating them (or zero the UDP checksum), and the adapter delivers, it does not police.
    """
    if len(frame) < ETH_HEADER:
        raise NotUdp("runt")
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE_IPV4:
        raise NotUdp("not_ipv4")
    ip = memoryview(frame)[ETH_HEADER:]
    if len(ip) < IPV4_HEADER:
        raise NotUdp("malformed")
    ver_ihl, _tos, total, _id, frag, _ttl, proto = _IPV4.unpack_from(ip)[:7]
    if ver_ihl >> 4 != 4:
        raise NotUdp("not_ipv4")
    ihl = (ver_ihl & 0x0F) * 4
    if ihl < IPV4_HEADER or total < ihl or total > len(ip):
        raise NotUdp("malformed")
    if frag & (FLAG_MF | FRAG_OFFSET_MASK):
        # A fragment's bytes are not a datagram's payload; reassembly is out of scope.
        raise NotUdp("ip_fragment")
    if proto != IPPROTO_UDP:
        raise NotUdp("not_udp")
    udp = ip[ihl:total]
    if len(udp) < UDP_HEADER:
        raise NotUdp("malformed")
    udp_len = int.from_bytes(udp[4:6], "big")
    if udp_len < UDP_HEADER or udp_len > len(udp):
        raise NotUdp("malformed")
    return bytes(udp[UDP_HEADER:udp_len])
