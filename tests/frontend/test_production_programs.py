"""The production-like programs (programs/production: SAI/PINS-, DASH- and UP4-style, our
own) on both engines, programmed over P4Runtime.

Each is compiled by p4reduce-p4c (its P4Info is compared with p4c-bm2-ss's by
test_against_p4c.py), pushed to the project's P4Runtime server with
SetForwardingPipelineConfig on a device running the interpreter and on one running the
native engine (which must really run it: no fallback), written the entries a controller
would write (typed ids, WCMP members and groups, value sets, ternary/range/lpm entries with
priorities) and sent a packet whose forwarding and rewrites are checked; counters are read
back.
"""

from __future__ import annotations

import socket
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from p4reduce.switch.native.build import compiler
from p4reduce.switch.p4runtime import Device, P4RuntimeServer

from p4reduce.proto import p4info_pb2
from p4reduce.proto import p4runtime_pb2 as p4rt

sys.path.insert(0, str(Path(__file__).parents[1] / "p4runtime"))
from p4rt_client import (  # noqa: E402
    INSERT,
    MODIFY,
    Client,
    Compiled,
    Ids,
    exact,
    lpm,
    range_,
    ternary,
)

PRODUCTION = Path(__file__).parent / "programs" / "production"
ENGINES = ["python", "native"]


def compile_production(name: str, out: Path) -> Compiled:
    from p4reduce.switch.frontend.cli import main as p4c_main

    info = out / f"{name}.p4info.txtpb"
    argv = [str(PRODUCTION / f"{name}.p4"), "-o", str(out), "--p4runtime-files", str(info)]
    assert p4c_main(argv) == 0
    json_path = out / f"{name}.json"
    p4info = text_format.Parse(info.read_text(), p4info_pb2.P4Info())
    return Compiled(json_path, info, p4info, json_path.read_bytes())


@dataclass
class Rig:
    device: Device
    server: P4RuntimeServer
    client: Client
    ids: Ids

    def write(self, *updates: tuple[int, Any]) -> None:
        self.client.write(*updates)

    def entry(self, table: str, action: str, *params: bytes, priority: int = 0,
              match: tuple[Any, ...] = ()) -> p4rt.TableEntry:  # fmt: skip
        te = p4rt.TableEntry(table_id=self.ids.table(table), priority=priority)
        te.match.extend(match)
        te.action.action.action_id = self.ids.action(action)
        for i, v in enumerate(params, 1):
            te.action.action.params.add(param_id=i, value=v)
        return te

    def field(self, table: str, name: str) -> int:
        return self.ids.field(table, name)


@pytest.fixture(params=ENGINES)
def rig_for(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    engine = request.param
    if engine == "native" and compiler() is None:
        pytest.skip("no C compiler: the native engine cannot run")
    rigs: list[Rig] = []

    def make(name: str, cpu_port: int) -> Rig:
        compiled = compile_production(name, tmp_path)
        device = Device(1, cpu_port=cpu_port, engine=engine)
        server = P4RuntimeServer(device, "127.0.0.1:0")
        port = server.start()
        client = Client(port)
        rig = Rig(device, server, client, Ids(compiled.p4info))
        rigs.append(rig)
        assert client.stream().arbitrate((0, 1)).arbitration.status.code == 0
        client.set_pipeline(compiled)
        assert device.switch.engine == engine  # the native engine really runs it
        return rig

    yield make
    for rig in rigs:
        rig.client.close()
        rig.server.stop()


# ---------------------------------------------------------------------- packets
def ip(a: str) -> bytes:
    return socket.inet_aton(a)


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


def ipv4(src: str, dst: str, proto: int, payload_len: int, ttl: int = 64) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, 1, 0, ttl, proto, 0,
                       ip(src), ip(dst))  # fmt: skip
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:]


def checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def eth(dst: int, src: int, etype: int = 0x0800) -> bytes:
    return mac(dst) + mac(src) + struct.pack("!H", etype)


def only(out: list[tuple[int, bytes]], port: int) -> bytes:
    assert [p for p, _ in out] == [port], out
    return out[0][1]


def valid_ipv4(header: bytes) -> bool:
    return checksum(header[:20]) == 0


# ---------------------------------------------------------------------- SAI / PINS style
ROUTER_MAC = 0x00AABBCCDDEE
NEIGHBOR = bytes.fromhex("fe800000000000000000000000000001")


def test_sai_router_routes_over_nexthop_and_wcmp(rig_for: Any) -> None:
    r: Rig = rig_for("sai_router", 510)
    lookup, resolve = "ingress.routing_lookup", "ingress.routing_resolution"
    admit = "ingress.l3_admit.l3_admit_table"
    v4 = f"{lookup}.ipv4_table"
    r.write(
        (INSERT, r.entry(admit, "ingress.l3_admit.admit_to_l3", priority=10, match=(
            ternary(r.field(admit, "dst_mac"), mac(ROUTER_MAC), b"\xff" * 6),))),
        (INSERT, r.entry(v4, "set_nexthop_id", b"\x01", match=(
            exact(r.field(v4, "vrf_id"), 0), lpm(r.field(v4, "ipv4_dst"), ip("10.0.0.2"), 32)))),
        (INSERT, r.entry(f"{resolve}.nexthop_table", f"{resolve}.set_ip_nexthop", b"\x07",
                         NEIGHBOR, match=(exact(1, 1),))),
        (INSERT, r.entry(f"{resolve}.router_interface_table", f"{resolve}.set_port_and_src_mac",
                         b"\x03", mac(0x001122334455), match=(exact(1, 7),))),
        (INSERT, r.entry(f"{resolve}.neighbor_table", f"{resolve}.set_dst_mac",
                         mac(0x00DEADBEEF01), match=(exact(1, 7), exact(2, NEIGHBOR)))),
    )  # fmt: skip
    payload = udp(1000, 2000, b"hello")
    frame = eth(ROUTER_MAC, 1) + ipv4("10.0.0.1", "10.0.0.2", 17, len(payload)) + payload
    out = only(r.device.inject(1, frame), 3)
    assert out[:12] == mac(0x00DEADBEEF01) + mac(0x001122334455)
    assert out[22] == 63 and valid_ipv4(out[14:34]) and out[34:] == payload
    # not for the router's MAC: not admitted to L3, dropped by routing_lookup
    assert r.device.inject(1, eth(0x00AABBCCDD00, 1) + frame[12:]) == []

    # a WCMP group of one member: route -> group id -> selector group -> next hop
    profile = r.ids.id(f"{resolve}.wcmp_group_selector")
    member = p4rt.ActionProfileMember(action_profile_id=profile, member_id=1)
    member.action.action_id = r.ids.action("set_nexthop_id")
    member.action.params.add(param_id=1, value=b"\x01")
    group = p4rt.ActionProfileGroup(action_profile_id=profile, group_id=1, max_size=16)
    group.members.add(member_id=1, weight=1)
    wcmp = r.entry(f"{resolve}.wcmp_group_table", "NoAction", match=(exact(1, 5),))
    wcmp.action.ClearField("action")
    wcmp.action.action_profile_group_id = 1
    r.write(
        (INSERT, member),
        (INSERT, group),
        (INSERT, wcmp),
        (INSERT, r.entry(v4, f"{lookup}.set_wcmp_group_id", b"\x05", match=(
            exact(r.field(v4, "vrf_id"), 0), lpm(r.field(v4, "ipv4_dst"), ip("10.0.0.0"), 24)))),
    )  # fmt: skip
    frame3 = eth(ROUTER_MAC, 1) + ipv4("10.0.0.1", "10.0.0.3", 17, len(payload)) + payload
    assert only(r.device.inject(1, frame3), 3)[:6] == mac(0x00DEADBEEF01)

    # an ACL drop, counted by the table's direct counter
    acl = "ingress.acl_ingress.acl_ingress_table"
    drop = r.entry(acl, "ingress.acl_ingress.acl_drop", priority=5, match=(
        ternary(r.field(acl, "ip_protocol"), 17, 0xFF),))  # fmt: skip
    r.write((INSERT, drop))
    assert r.device.inject(1, frame) == []
    (counted,) = r.client.read(p4rt.DirectCounterEntry(table_entry=drop))
    assert counted.data.packet_count == 1


# ---------------------------------------------------------------------- DASH style
def test_dash_overlay_reencapsulates_an_outbound_packet(rig_for: Any) -> None:
    r: Rig = rig_for("dash_overlay", 255)
    ing = "dash_ingress"
    acl = f"{ing}.outbound_acl.acl"
    route = f"{ing}.outbound_routing"
    r.write(
        (INSERT, r.entry(f"{ing}.direction_lookup", f"{ing}.set_outbound_direction",
                         match=(exact(1, 100),))),
        (INSERT, r.entry(f"{ing}.eni", f"{ing}.set_eni", b"\x07", b"\x01", b"\x00",
                         match=(exact(1, mac(0x0A)), exact(2, 1)))),
        (INSERT, r.entry(acl, f"{ing}.outbound_acl.permit", priority=1, match=(
            exact(r.field(acl, "meta.eni_id"), 7),
            range_(r.field(acl, "meta.dst_l4_port"), 0, 1000)))),
        (INSERT, r.entry(route, f"{ing}.route_vnet", (200).to_bytes(3, "big"), ip("3.3.3.3"),
                         mac(0xCC), match=(
            exact(r.field(route, "meta.eni_id"), 7),
            exact(r.field(route, "meta.is_overlay_ip_v6"), 0),
            lpm(r.field(route, "meta.dst_ip_addr"), ip("10.2.0.0"), 112)))),
        (INSERT, r.entry(f"{ing}.appliance", f"{ing}.set_underlay_source", ip("4.4.4.4"),
                         priority=1, match=(ternary(1, 7, 0xFFFF),))),
    )  # fmt: skip
    inner = eth(0x0B, 0x0A) + ipv4("10.1.0.1", "10.2.0.5", 6, 4) + b"data"
    vxlan = struct.pack("!B3sI", 0x08, b"\0\0\0", 100 << 8)
    outer_udp = udp(1234, 4789, vxlan + inner)
    frame = eth(0x01, 0x02) + ipv4("1.1.1.1", "2.2.2.2", 17, len(outer_udp)) + outer_udp
    out = only(r.device.inject(1, frame), 1)  # back out of the port it came in on
    assert out[:6] == mac(0xCC)
    assert out[26:34] == ip("4.4.4.4") + ip("3.3.3.3") and valid_ipv4(out[14:34])
    assert int.from_bytes(out[46:49], "big") == 200  # the VNI
    assert out[50:] == inner
    (cells,) = r.client.read(p4rt.CounterEntry(counter_id=r.ids.id(f"{ing}.eni_counter"),
                                               index=p4rt.Index(index=7)))  # fmt: skip
    assert cells.data.packet_count == 1
    # an inner destination no route covers: dropped by outbound_routing's default
    other = inner[:30] + ip("10.9.0.5") + inner[34:]
    other = other[:24] + b"\0\0" + other[26:]
    other = other[:24] + struct.pack("!H", checksum(other[14:34])) + other[26:]
    outer_udp = udp(1234, 4789, vxlan + other)
    frame = eth(0x01, 0x02) + ipv4("1.1.1.1", "2.2.2.2", 17, len(outer_udp)) + outer_udp
    assert r.device.inject(1, frame) == []


# ---------------------------------------------------------------------- UP4 style
def test_up4_gateway_tunnels_downlink_and_decapsulates_uplink(rig_for: Any) -> None:
    r: Rig = rig_for("up4_gateway", 255)
    pipe = "PreQosPipe"
    r.write(
        (INSERT, r.entry(f"{pipe}.sessions_downlink", f"{pipe}.set_session_downlink", b"\x01",
                         b"\x00", match=(exact(1, ip("192.168.0.10")),))),
        (INSERT, r.entry(f"{pipe}.tunnel_peers", f"{pipe}.load_tunnel_param", ip("10.0.0.1"),
                         ip("10.0.0.9"), (2152).to_bytes(2, "big"), match=(exact(1, 1),))),
        (INSERT, r.entry(f"{pipe}.terminations_downlink", f"{pipe}.downlink_term_fwd", b"\x05",
                         (0x1234).to_bytes(4, "big"),
                         match=(exact(1, ip("192.168.0.10")), exact(2, 0)))),
        (INSERT, r.entry(f"{pipe}.routes", f"{pipe}.do_forward", b"\x02",
                         match=(lpm(1, ip("10.0.0.0"), 8),))),
        (INSERT, r.entry(f"{pipe}.routes", f"{pipe}.do_forward", b"\x04",
                         match=(lpm(1, ip("8.0.0.0"), 8),))),
        (INSERT, r.entry(f"{pipe}.sessions_uplink", f"{pipe}.set_session_uplink", b"\x00",
                         match=(exact(1, ip("10.0.0.1")), exact(2, 0x99)))),
        (INSERT, r.entry(f"{pipe}.terminations_uplink", f"{pipe}.uplink_term_fwd", b"\x06",
                         match=(exact(1, ip("192.168.0.10")), exact(2, 0)))),
    )  # fmt: skip
    # downlink: from the internet to a UE, tunnelled towards its base station
    payload = udp(53, 4000, b"answer")
    frame = eth(0x01, 0x02) + ipv4("8.8.8.8", "192.168.0.10", 17, len(payload)) + payload
    out = only(r.device.inject(1, frame), 2)
    assert out[30:34] == ip("10.0.0.9") and out[22] == 63 and valid_ipv4(out[14:34])
    assert struct.unpack("!HH", out[34:38]) == (2152, 2152)
    assert out[42] == 0x30 and out[43] == 0xFF and out[46:50] == (0x1234).to_bytes(4, "big")
    assert out[50:] == frame[14:]  # the UE's packet, unchanged, inside
    (cells,) = r.client.read(p4rt.CounterEntry(counter_id=r.ids.id(f"{pipe}.pre_qos_counter"),
                                               index=p4rt.Index(index=5)))  # fmt: skip
    assert cells.data.packet_count == 1

    # uplink: GTP-U from the base station; parsed only once 2152 is in the value set
    inner = ipv4("192.168.0.10", "8.8.8.8", 17, len(payload)) + payload
    gtpu = struct.pack("!BBHI", 0x30, 0xFF, len(inner), 0x99) + inner
    outer = udp(2152, 2152, gtpu)
    frame = eth(0x01, 0x02) + ipv4("10.0.0.9", "10.0.0.1", 17, len(outer)) + outer
    assert r.device.inject(1, frame) == []  # not GTP-U yet: an uplink without a tunnel
    vs = p4rt.ValueSetEntry(value_set_id=r.ids.id("ParserImpl.gtpu_ports"))
    vs.members.add().match.append(exact(1, 2152))
    r.write((MODIFY, vs))
    out = only(r.device.inject(1, frame), 4)
    assert out[14:] == inner[:8] + bytes([63]) + out[23:34] + payload
    assert valid_ipv4(out[14:34])
