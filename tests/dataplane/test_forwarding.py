"""ARP and ordinary forwarding in both programs (docs/protocol.md, "Control-plane interface";
p4src/include/arp.p4 and forwarding.p4 say the same in prose): the switch answers ARP for
its own address out of the ingress port; other ARP and non-IP traffic is switched by
destination MAC (l2_forward: to_port, drop, or flood to FLOOD_MGID = 1 but never back out
of the ingress port); IPv4 routes (longest prefix) decrement the TTL, rewrite the MACs and
recompute the checksum; traffic to the switch's address that is not aggregation is dropped;
aggregation-port UDP between two hosts is forwarded, not aggregated.
"""

from __future__ import annotations

import pytest
from fabric import (
    AGG_PORT,
    SWITCH_IP,
    SWITCH_MAC,
    Fabric,
    arp_frame,
    ip_bytes,
    mac_bytes,
    ones_complement_checksum,
    parse_frame,
    scapy_ip_checksum_ok,
    udp_frame,
)

H1_MAC, H1_IP = "02:00:00:00:00:01", "10.1.1.1"
H2_MAC, H2_IP = "02:00:00:00:00:02", "10.1.1.2"
ROUTER_MAC = "02:00:00:00:00:aa"
NEXT_HOP_MAC = "02:00:00:00:00:bb"
FLOOD_PORTS = [1, 2, 3, 4]


@pytest.fixture
def fab(program: str) -> Fabric:
    f = Fabric(program)
    f.flood_group(FLOOD_PORTS)
    f.add_job(job_id=5, index=1, n=2, base=0, count=4, ports=[1, 2])
    return f


def host_udp(dport: int = 9, payload: bytes = b"payload!", **kw: object) -> bytes:
    args: dict[str, object] = dict(
        eth_dst=H2_MAC,
        eth_src=H1_MAC,
        ip_src=H1_IP,
        ip_dst=H2_IP,
        sport=1234,
        dport=dport,
        payload=payload,
    )
    args.update(kw)
    return udp_frame(**args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- ARP
@pytest.mark.parametrize("padding", [b"", bytes(18)])
def test_arp_reply_for_the_switch_address(fab: Fabric, padding: bytes) -> None:
    req = arp_frame(1, sha=H1_MAC, spa=H1_IP, tpa=SWITCH_IP, padding=padding)
    out = fab.send(3, req)
    # written out by hand: Ethernet to the asker from the switch, ARP reply (oper 2) with
    # sender = the switch's MAC and IPv4, target = the asker's MAC and IPv4
    expected = (
        mac_bytes(H1_MAC)
        + mac_bytes(SWITCH_MAC)
        + bytes.fromhex("0806 0001 0800 06 04 0002")
        + mac_bytes(SWITCH_MAC)
        + ip_bytes(SWITCH_IP)
        + mac_bytes(H1_MAC)
        + ip_bytes(H1_IP)
        + padding
    )
    assert out == [(3, expected)]


def test_arp_for_another_address_is_flooded(fab: Fabric) -> None:
    req = arp_frame(1, sha=H1_MAC, spa=H1_IP, tpa="10.1.1.77")
    out = fab.send(2, req)
    assert sorted(out) == [(p, req) for p in (1, 3, 4)]


def test_arp_that_is_not_an_ethernet_ipv4_request_is_not_answered(fab: Fabric) -> None:
    reply = arp_frame(2, sha=H1_MAC, spa=H1_IP, tpa=SWITCH_IP, eth_dst=SWITCH_MAC)
    fab.add_l2(SWITCH_MAC, "to_port", [4])
    assert fab.send(1, reply) == [(4, reply)]
    odd = arp_frame(1, sha=H1_MAC, spa=H1_IP, tpa=SWITCH_IP, htype=6)
    assert sorted(fab.send(1, odd)) == [(p, odd) for p in (2, 3, 4)]
    odd = arp_frame(1, sha=H1_MAC, spa=H1_IP, tpa=SWITCH_IP, ptype=0x86DD)
    assert sorted(fab.send(1, odd)) == [(p, odd) for p in (2, 3, 4)]


# ---------------------------------------------------------------------------------- L2
def test_l2_to_port_and_drop(fab: Fabric) -> None:
    fab.add_l2(H2_MAC, "to_port", [3])
    fab.add_l2("02:00:00:00:00:dd", "drop")
    raw = host_udp()
    assert fab.send(1, raw) == [(3, raw)]
    assert fab.send(1, host_udp(eth_dst="02:00:00:00:00:dd")) == []
    # non-IP traffic is switched the same way
    other = mac_bytes(H2_MAC) + mac_bytes(H1_MAC) + b"\x88\xb5" + bytes(50)
    assert fab.send(2, other) == [(3, other)]


@pytest.mark.parametrize("in_port", [1, 4, 9])
def test_flood_excludes_the_ingress_port(fab: Fabric, in_port: int) -> None:
    raw = host_udp(eth_dst="02:00:00:00:00:99")
    out = fab.send(in_port, raw)
    assert sorted(out) == [(p, raw) for p in FLOOD_PORTS if p != in_port]


# ---------------------------------------------------------------------------------- IPv4
def test_ipv4_route_longest_prefix(fab: Fabric) -> None:
    fab.add_route("10.9.0.0", 16, 7, ROUTER_MAC, NEXT_HOP_MAC)
    fab.add_route("10.9.3.0", 24, 8, ROUTER_MAC, "02:00:00:00:00:cc")
    for dst, port, mac in (("10.9.1.1", 7, NEXT_HOP_MAC), ("10.9.3.4", 8, "02:00:00:00:00:cc")):
        raw = host_udp(ip_dst=dst, ttl=10, ident=0x1234, tos=0x10)
        out = fab.send(1, raw)
        assert [p for p, _ in out] == [port]
        got = out[0][1]
        f = parse_frame(got)
        assert (f.eth_dst, f.eth_src) == (mac, ROUTER_MAC)
        assert f.ttl == 9
        assert ones_complement_checksum(got[14:34]) == 0
        assert scapy_ip_checksum_ok(got)
        # everything else as it came: the bytes equal the input with TTL and checksum fixed
        expected = host_udp(
            ip_dst=dst, ttl=9, ident=0x1234, tos=0x10, eth_dst=mac, eth_src=ROUTER_MAC
        )
        assert got == expected


def test_route_drop_and_unrouted_cases(fab: Fabric) -> None:
    fab.add_route_drop("10.66.0.0", 16)
    fab.add_route("10.1.1.0", 24, 7, ROUTER_MAC, NEXT_HOP_MAC)
    assert fab.send(1, host_udp(ip_dst="10.66.1.1")) == []
    # TTL 1 is not routed: switched by MAC (flooded here), unchanged
    raw = host_udp(ttl=1)
    assert sorted(fab.send(1, raw)) == [(p, raw) for p in (2, 3, 4)]
    # IPv4 options are not routed either
    base = host_udp(ttl=5)
    opt = base[:14] + b"\x46" + base[15:16] + (len(base) - 14 + 4).to_bytes(2, "big")
    opt += base[18:34] + b"\x01\x01\x01\x00" + base[34:]
    assert sorted(fab.send(1, opt)) == [(p, opt) for p in (2, 3, 4)]


# ------------------------------------------------------------------- the switch's address
@pytest.mark.parametrize(
    "kind", ["udp_other_port", "tcp", "icmp", "ip_options", "fragment", "short_agg_header"]
)
def test_traffic_to_the_switch_that_is_not_aggregation_is_dropped(fab: Fabric, kind: str) -> None:
    w = fab.jobs[0].workers[0]
    legit = w.packet(0, 0, [1] * fab.k)
    raws = {
        "udp_other_port": host_udp(ip_dst=SWITCH_IP, eth_dst=SWITCH_MAC, dport=53),
        "tcp": host_udp(ip_dst=SWITCH_IP, eth_dst=SWITCH_MAC, proto=6),
        "icmp": host_udp(ip_dst=SWITCH_IP, eth_dst=SWITCH_MAC, proto=1),
        "ip_options": legit[:14] + b"\x46" + legit[15:34] + bytes(4) + legit[34:],
        "fragment": w.frame(w.agg(0, 0, [1] * fab.k), flags_frag=0x2000),
        "short_agg_header": host_udp(ip_dst=SWITCH_IP, eth_dst=SWITCH_MAC, dport=AGG_PORT),
    }
    before, counters = fab.snapshot(), fab.all_counters()
    fab.add_route(SWITCH_IP, 32, 7, ROUTER_MAC, NEXT_HOP_MAC)  # even with a route to it
    assert fab.send(1, raws[kind]) == []
    assert fab.changed_cells(before) == {}
    assert fab.all_counters() == counters


def test_aggregation_port_between_two_hosts_is_forwarded(fab: Fabric) -> None:
    """A well-formed aggregation packet of a registered worker, but to another host: L2
    switched unchanged, or routed, never aggregated."""
    w = fab.jobs[0].workers[0]
    agg = w.agg(0, 0, [1] * fab.k)
    raw = w.frame(agg, ip_dst=H2_IP, eth_dst=H2_MAC)
    fab.add_l2(H2_MAC, "to_port", [3])
    before, counters = fab.snapshot(), fab.all_counters()
    for _ in range(fab.jobs[0].n + 1):
        assert fab.send(w.port, raw) == [(3, raw)]
    short = host_udp(dport=AGG_PORT, payload=b"\x10\x00\x00")  # shorter than the header
    assert fab.send(1, short) == [(3, short)]
    fab.add_route("10.1.1.0", 24, 4, ROUTER_MAC, NEXT_HOP_MAC)
    out = fab.send(w.port, raw)
    assert [p for p, _ in out] == [4]
    assert out[0][1] == w.frame(agg, ip_dst=H2_IP, eth_dst=NEXT_HOP_MAC, eth_src=ROUTER_MAC, ttl=63)
    assert fab.changed_cells(before) == {}
    assert fab.all_counters() == counters
