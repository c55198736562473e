"""The other entities over raw gRPC: action profiles, PRE, counters, meters, registers, value
sets, digests, and packet-in/out on the stream."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2
from p4rt_client import CPU_PORT, DELETE, INSERT, MODIFY, Harness, exact, ternary

from p4reduce.proto import p4runtime_pb2 as p4rt


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


def frame(dst: int, src: int = 9, ethertype: int = 0x1234) -> bytes:
    return mac(dst) + mac(src) + ethertype.to_bytes(2, "big") + b"payload"


def l2(h: Harness, dst: int, name: str, *params: bytes) -> p4rt.TableEntry:
    te = p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))
    te.match.append(exact(1, mac(dst)))
    te.action.action.action_id = h.ids.action(name)
    for i, v in enumerate(params, 1):
        te.action.action.params.add(param_id=i, value=v)
    return te


def codes(errors: list[tuple[str, str]]) -> list[str]:
    return [c for c, _ in errors]


# ---------------------------------------------------------------------- action profiles
def member(h: Harness, profile: str, mid: int, port: int) -> p4rt.ActionProfileMember:
    m = p4rt.ActionProfileMember(action_profile_id=h.ids.id(profile), member_id=mid)
    m.action.action_id = h.ids.action("MyIngress.forward")
    m.action.params.add(param_id=1, value=bytes([port]))
    return m


def test_action_profile_members_and_indirect_entries(harness: Harness) -> None:
    h = harness
    prof = "MyIngress.prof"
    h.write((INSERT, member(h, prof, 1, 4)), (INSERT, member(h, prof, 2, 5)))
    assert codes(h.write_errors((INSERT, member(h, prof, 1, 4)))) == ["ALREADY_EXISTS"]
    assert codes(h.write_errors((MODIFY, member(h, prof, 9, 4)))) == ["NOT_FOUND"]
    te = p4rt.TableEntry(table_id=h.ids.table("MyIngress.indirect"))
    te.match.append(exact(1, b"\x12\x34"))
    te.action.action_profile_member_id = 1
    h.write((INSERT, te))
    assert h.device.inject(1, frame(2)) == [(4, frame(2))]
    h.write((MODIFY, member(h, prof, 1, 6)))
    assert h.device.inject(1, frame(2)) == [(6, frame(2))]
    got = h.read(p4rt.ActionProfileMember(action_profile_id=h.ids.id(prof)))
    assert [(m.member_id, m.action.params[0].value) for m in got] == [(1, b"\x06"), (2, b"\x05")]
    (entry,) = h.read(p4rt.TableEntry(table_id=h.ids.table("MyIngress.indirect")))
    assert entry.action.action_profile_member_id == 1
    assert codes(h.write_errors((DELETE, member(h, prof, 1, 6)))) == ["FAILED_PRECONDITION"]
    bad = p4rt.TableEntry()
    bad.CopyFrom(te)
    bad.action.action_profile_member_id = 77
    bad.match[0].exact.value = b"\x99"
    direct = p4rt.TableEntry()
    direct.CopyFrom(bad)
    direct.action.action.action_id = h.ids.action("MyIngress.forward")
    direct.action.action.params.add(param_id=1, value=b"\x01")
    group = p4rt.TableEntry()
    group.CopyFrom(bad)
    group.action.action_profile_group_id = 1  # prof is not a selector
    oneshot = p4rt.TableEntry()
    oneshot.CopyFrom(bad)
    oneshot.action.action_profile_action_set.SetInParent()
    assert codes(
        h.write_errors((INSERT, bad), (INSERT, direct), (INSERT, group), (INSERT, oneshot))
    ) == [
        "NOT_FOUND",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "UNIMPLEMENTED",
    ]
    h.write((DELETE, te), (DELETE, member(h, prof, 1, 6)))
    assert len(h.read(p4rt.ActionProfileMember(action_profile_id=h.ids.id(prof)))) == 1


def test_action_selector_groups(harness: Harness) -> None:
    h = harness
    sel = "MyIngress.ecmp_sel"
    pid = h.ids.id(sel)
    h.write(*[(INSERT, member(h, sel, i, 10 + i)) for i in (1, 2, 3)])
    g = p4rt.ActionProfileGroup(action_profile_id=pid, group_id=7)
    g.members.add(member_id=1, weight=1)
    g.members.add(member_id=2, weight=3)
    h.write((INSERT, g))
    (got,) = h.read(p4rt.ActionProfileGroup(action_profile_id=pid))
    assert [(m.member_id, m.weight) for m in got.members] == [(1, 1), (2, 3)]
    assert codes(h.write_errors((INSERT, g))) == ["ALREADY_EXISTS"]
    bad = p4rt.ActionProfileGroup(action_profile_id=pid, group_id=8)
    bad.members.add(member_id=99, weight=1)
    missing = p4rt.ActionProfileGroup(action_profile_id=pid, group_id=9)
    nonsel = p4rt.ActionProfileGroup(action_profile_id=h.ids.id("MyIngress.prof"), group_id=1)
    assert codes(h.write_errors((INSERT, bad), (MODIFY, missing), (INSERT, nonsel))) == [
        "NOT_FOUND",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
    ]
    te = p4rt.TableEntry(table_id=h.ids.table("MyIngress.ecmp"))
    te.match.append(exact(1, b"\x0a\x00\x00\x01"))
    te.action.action_profile_group_id = 7
    h.write((INSERT, te))
    assert codes(h.write_errors((DELETE, g))) == ["FAILED_PRECONDITION"]
    assert codes(h.write_errors((DELETE, member(h, sel, 2, 0)))) == ["FAILED_PRECONDITION"]
    g2 = p4rt.ActionProfileGroup(action_profile_id=pid, group_id=7)
    g2.members.add(member_id=3, weight=1)
    h.write((MODIFY, g2))
    (got,) = h.read(p4rt.ActionProfileGroup(action_profile_id=pid, group_id=7))
    assert [m.member_id for m in got.members] == [3]
    h.write((DELETE, te), (DELETE, g2))
    assert h.read(p4rt.ActionProfileGroup(action_profile_id=pid)) == []


# ---------------------------------------------------------------------- PRE
def mc(
    gid: int, *replicas: tuple[int, int], as_bytes: bool = False
) -> p4rt.PacketReplicationEngineEntry:
    e = p4rt.PacketReplicationEngineEntry()
    g = e.multicast_group_entry
    g.multicast_group_id = gid
    for port, rid in replicas:
        if as_bytes:
            g.replicas.add(port=port.to_bytes(2, "big"), instance=rid)
        else:
            g.replicas.add(egress_port=port, instance=rid)
    return e


def clone(sid: int, *ports: int, truncate: int = 0) -> p4rt.PacketReplicationEngineEntry:
    e = p4rt.PacketReplicationEngineEntry()
    c = e.clone_session_entry
    c.session_id = sid
    c.packet_length_bytes = truncate
    c.class_of_service = 2
    for p in ports:
        c.replicas.add(egress_port=p, instance=1)
    return e


def test_multicast_groups(harness: Harness) -> None:
    h = harness
    h.write((INSERT, mc(1, (1, 0), (2, 0))), (INSERT, mc(2, (3, 5), as_bytes=True)))
    got = h.read(mc(0))
    assert [g.multicast_group_entry.multicast_group_id for g in got] == [1, 2]
    r = got[1].multicast_group_entry.replicas[0]
    assert r.WhichOneof("port_kind") == "port" and r.port == b"\x03" and r.instance == 5
    assert got[0].multicast_group_entry.replicas[1].egress_port == 2
    h.write((INSERT, l2(h, 2, "MyIngress.set_mcast", b"\x00\x01")))
    assert sorted(h.device.inject(4, frame(2))) == [(1, frame(2)), (2, frame(2))]
    h.write((MODIFY, mc(1, (7, 0))))
    assert h.device.inject(4, frame(2)) == [(7, frame(2))]
    assert codes(
        h.write_errors(
            (INSERT, mc(1, (1, 0))),
            (MODIFY, mc(5, (1, 0))),
            (DELETE, mc(5)),
            (INSERT, mc(0, (1, 0))),
            (INSERT, mc(6, (1, 0), (1, 0))),
            (INSERT, mc(6, (600, 0))),
            (INSERT, p4rt.PacketReplicationEngineEntry()),
        )
    ) == [
        "ALREADY_EXISTS",
        "NOT_FOUND",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "OUT_OF_RANGE",
        "INVALID_ARGUMENT",
    ]
    h.write((DELETE, mc(1)))
    assert [g.multicast_group_entry.multicast_group_id for g in h.read(mc(0))] == [2]
    assert h.read(mc(1)) == []
    assert h.device.inject(4, frame(2)) == []  # group 1 is gone: no copies


def test_clone_sessions(harness: Harness) -> None:
    h = harness
    h.write((INSERT, clone(5, 8, truncate=4)))
    (got,) = h.read(clone(0))
    c = got.clone_session_entry
    assert (c.session_id, c.class_of_service, c.packet_length_bytes) == (5, 2, 4)
    assert [(r.egress_port, r.instance) for r in c.replicas] == [(8, 1)]
    assert h.read(mc(0)) == []  # the session's hidden group is not a multicast group
    h.write((INSERT, l2(h, 2, "MyIngress.forward_and_clone", b"\x03", b"\x05")))
    out = h.device.inject(1, frame(2))
    assert sorted(out) == [(3, frame(2)), (8, frame(2)[:4])]
    h.write((MODIFY, clone(5, 8, 9)))
    out = h.device.inject(1, frame(2))
    assert sorted(out) == [(3, frame(2)), (8, frame(2)), (9, frame(2))]
    assert codes(
        h.write_errors(
            (INSERT, clone(5, 1)), (MODIFY, clone(6, 1)), (DELETE, clone(6)), (INSERT, clone(0, 1))
        )
    ) == [
        "ALREADY_EXISTS",
        "NOT_FOUND",
        "NOT_FOUND",
        "INVALID_ARGUMENT",
    ]
    h.write((DELETE, clone(5)))
    assert h.read(clone(0)) == []
    assert h.device.inject(1, frame(2)) == [(3, frame(2))]


# ---------------------------------------------------------------------- counters
def test_counters(harness: Harness) -> None:
    h = harness
    cid = h.ids.id("MyIngress.port_counter")
    for _ in range(3):
        h.device.inject(2, frame(1))
    sel = p4rt.CounterEntry(counter_id=cid)
    sel.index.index = 2
    (got,) = h.read(sel)
    assert (got.data.packet_count, got.data.byte_count) == (3, 3 * len(frame(1)))
    assert len(h.read(p4rt.CounterEntry(counter_id=cid))) == 64
    assert len(h.read(p4rt.CounterEntry())) == 64 + 8
    w = p4rt.CounterEntry(counter_id=cid)
    w.index.index = 2
    w.data.packet_count, w.data.byte_count = 10, 20
    h.write((MODIFY, w))
    (got,) = h.read(sel)
    assert (got.data.packet_count, got.data.byte_count) == (10, 20)
    # packets-only counter: no byte_count
    pc_sel = p4rt.CounterEntry(counter_id=h.ids.id("MyIngress.pkt_counter"))
    pc_sel.index.index = 0  # the program counts every packet in cell 0
    (pc,) = h.read(pc_sel)
    assert pc.data.packet_count == 3 and pc.data.byte_count == 0
    all_cells = p4rt.CounterEntry(counter_id=cid)  # no index: every cell
    h.write((MODIFY, all_cells))
    assert all(e.data.packet_count == 0 for e in h.read(p4rt.CounterEntry(counter_id=cid)))
    oob = p4rt.CounterEntry(counter_id=cid)
    oob.index.index = 64
    assert codes(
        h.write_errors(
            (INSERT, w),
            (DELETE, w),
            (MODIFY, oob),
            (MODIFY, p4rt.CounterEntry(counter_id=0x12ABCDEF)),
        )
    ) == [
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "OUT_OF_RANGE",
        "NOT_FOUND",
    ]
    assert h.client.read_code(oob) == grpc.StatusCode.OUT_OF_RANGE


def test_direct_counters(harness: Harness) -> None:
    h = harness
    h.write((INSERT, l2(h, 2, "MyIngress.forward", b"\x03")))
    h.device.inject(1, frame(2))
    h.device.inject(1, frame(2))
    dc = p4rt.DirectCounterEntry()
    dc.table_entry.table_id = h.ids.table("MyIngress.l2")
    dc.table_entry.match.append(exact(1, mac(2)))
    (got,) = h.read(dc)
    assert (got.data.packet_count, got.data.byte_count) == (2, 2 * len(frame(2)))
    assert got.table_entry.match[0].exact.value == b"\x02"
    # counters can also come with the table entry
    sel = p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))
    sel.counter_data.SetInParent()
    (te,) = h.read(sel)
    assert te.counter_data.packet_count == 2
    dc.data.packet_count = 100
    h.write((MODIFY, dc))
    (got,) = h.read(p4rt.DirectCounterEntry())  # every table with a direct counter
    assert got.data.packet_count == 100
    missing = p4rt.DirectCounterEntry()
    missing.CopyFrom(dc)
    missing.table_entry.match[0].exact.value = b"\x09"
    no_counter = p4rt.DirectCounterEntry()
    no_counter.table_entry.table_id = h.ids.table("MyIngress.routes")
    assert codes(h.write_errors((MODIFY, missing), (MODIFY, no_counter), (INSERT, dc))) == [
        "NOT_FOUND",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
    ]
    # counter_data given at INSERT sets the starting value
    te = l2(h, 3, "MyIngress.forward", b"\x03")
    te.counter_data.packet_count = 5
    h.write((INSERT, te))
    dc.table_entry.match[0].exact.value = b"\x03"
    (got,) = h.read(dc)
    assert got.data.packet_count == 5


# ---------------------------------------------------------------------- meters
def test_meters(harness: Harness) -> None:
    h = harness
    mid = h.ids.id("MyIngress.port_meter")
    m = p4rt.MeterEntry(meter_id=mid)
    m.index.index = 1
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 1000, 10, 2000, 20
    h.write((MODIFY, m))
    (got,) = h.read(p4rt.MeterEntry(meter_id=mid, index=m.index))
    assert (got.config.cir, got.config.cburst, got.config.pir, got.config.pburst) == (
        1000,
        10,
        2000,
        20,
    )
    unset = p4rt.MeterEntry(meter_id=mid)
    unset.index.index = 0
    (got,) = h.read(unset)
    assert not got.HasField("config")
    assert len(h.read(p4rt.MeterEntry(meter_id=mid))) == 16
    reset = p4rt.MeterEntry(meter_id=mid, index=m.index)
    h.write((MODIFY, reset))
    (got,) = h.read(reset)
    assert not got.HasField("config")
    bad = p4rt.MeterEntry()
    bad.CopyFrom(m)
    bad.config.cir = 5000  # above pir
    oob = p4rt.MeterEntry()
    oob.CopyFrom(m)
    oob.index.index = 16
    assert codes(h.write_errors((MODIFY, bad), (MODIFY, oob), (INSERT, m))) == [
        "INVALID_ARGUMENT",
        "OUT_OF_RANGE",
        "INVALID_ARGUMENT",
    ]


def test_direct_meters(harness: Harness) -> None:
    h = harness
    h.write((INSERT, l2(h, 2, "MyIngress.metered_forward", b"\x03")))
    dm = p4rt.DirectMeterEntry()
    dm.table_entry.table_id = h.ids.table("MyIngress.l2")
    dm.table_entry.match.append(exact(1, mac(2)))
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 100, 1, 200, 2
    h.write((MODIFY, dm))
    (got,) = h.read(
        p4rt.DirectMeterEntry(table_entry=p4rt.TableEntry(table_id=dm.table_entry.table_id))
    )
    assert (got.config.cir, got.config.pburst) == (100, 2)
    sel = p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))
    sel.meter_config.SetInParent()
    (te,) = h.read(sel)
    assert te.meter_config.pir == 200
    h.write((MODIFY, p4rt.DirectMeterEntry(table_entry=dm.table_entry)))
    (got,) = h.read(p4rt.DirectMeterEntry())
    assert not got.HasField("config")


# ---------------------------------------------------------------------- registers
def test_registers(harness: Harness) -> None:
    h = harness
    rid = h.ids.id("MyIngress.reg32")
    h.device.inject(1, frame(1))
    h.device.inject(1, frame(1))
    sel = p4rt.RegisterEntry(register_id=rid)
    sel.index.index = 0
    (got,) = h.read(sel)
    assert got.data.bitstring == b"\x02"  # the program counts packets in cell 0
    w = p4rt.RegisterEntry(register_id=rid)
    w.index.index = 5
    w.data.bitstring = b"\x00\x00\x01\x00"
    h.write((MODIFY, w))
    (got,) = h.read(p4rt.RegisterEntry(register_id=rid, index=w.index))
    assert got.data.bitstring == b"\x01\x00"
    assert len(h.read(p4rt.RegisterEntry(register_id=rid))) == 16
    assert len(h.read(p4rt.RegisterEntry())) == 16 + 4
    # a signed register: two's complement, sign-extended input accepted
    sid = h.ids.id("MyIngress.reg_signed")
    s = p4rt.RegisterEntry(register_id=sid)
    s.index.index = 1
    s.data.bitstring = b"\xff\xfe"  # -2
    h.write((MODIFY, s))
    (got,) = h.read(p4rt.RegisterEntry(register_id=sid, index=s.index))
    assert got.data.bitstring == b"\xfe"
    too_big = p4rt.RegisterEntry(register_id=sid, index=s.index)
    too_big.data.bitstring = b"\x00\x80"  # 128 does not fit int<8>
    oob = p4rt.RegisterEntry(register_id=rid)
    oob.index.index = 16
    oob.data.bitstring = b"\x01"
    wrong = p4rt.RegisterEntry(register_id=rid, index=w.index)
    wrong.data.bool = True
    assert codes(
        h.write_errors(
            (MODIFY, too_big),
            (MODIFY, oob),
            (MODIFY, wrong),
            (INSERT, w),
            (MODIFY, p4rt.RegisterEntry(register_id=0x16ABCDEF)),
        )
    ) == [
        "OUT_OF_RANGE",
        "OUT_OF_RANGE",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
    ]
    every = p4rt.RegisterEntry(register_id=rid)  # no index: every cell
    every.data.bitstring = b"\x07"
    h.write((MODIFY, every))
    assert {e.data.bitstring for e in h.read(p4rt.RegisterEntry(register_id=rid))} == {b"\x07"}


# ---------------------------------------------------------------------- value sets
def test_value_sets(harness: Harness) -> None:
    h = harness
    vid = h.ids.id("MyParser.type_vs")
    assert h.device.inject(1, frame(1, ethertype=0x1234)) == [(0, frame(1, ethertype=0x1234))]
    vs = p4rt.ValueSetEntry(value_set_id=vid)
    vs.members.add().match.append(exact(1, b"\x12\x34"))
    vs.members.add().match.append(exact(1, b"\x00\x00\x43\x21"))
    h.write((MODIFY, vs))
    (got,) = h.read(p4rt.ValueSetEntry(value_set_id=vid))
    assert [m.match[0].exact.value for m in got.members] == [b"\x12\x34", b"\x43\x21"]
    f = frame(1, ethertype=0x1234)
    assert h.device.inject(1, f) == [(7, f)]
    too_many = p4rt.ValueSetEntry(value_set_id=vid)
    for i in range(5):
        too_many.members.add().match.append(exact(1, i))
    wrong_kind = p4rt.ValueSetEntry(value_set_id=vid)
    wrong_kind.members.add().match.append(ternary(1, 1, 1))
    assert codes(h.write_errors((MODIFY, too_many), (MODIFY, wrong_kind), (INSERT, vs))) == [
        "RESOURCE_EXHAUSTED",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
    ]
    h.write((MODIFY, p4rt.ValueSetEntry(value_set_id=vid)))
    (got,) = h.read(p4rt.ValueSetEntry())
    assert len(got.members) == 0


# ---------------------------------------------------------------------- digests
def test_digests(harness: Harness) -> None:
    h = harness
    did = h.ids.id("learn_t")
    h.device.inject(3, frame(1, src=0xAB))
    assert h.stream.empty()  # not configured: nothing is sent
    d = p4rt.DigestEntry(digest_id=did)
    d.config.max_list_size = 1
    h.write((INSERT, d))
    assert [e.digest_id for e in h.read(p4rt.DigestEntry())] == [did]
    assert codes(h.write_errors((INSERT, d), (MODIFY, p4rt.DigestEntry(digest_id=0x17ABCDEF)))) == [
        "ALREADY_EXISTS",
        "NOT_FOUND",
    ]
    h.device.inject(3, frame(1, src=0xAB))
    r = h.stream.recv_kind("digest")
    dl = r.digest
    assert dl.digest_id == did
    (data,) = dl.data
    assert [m.bitstring for m in data.struct.members] == [b"\xab", b"\x03"]
    # the same data again, before the ack: suppressed
    h.device.inject(3, frame(1, src=0xAB))
    assert h.stream.empty()
    ack = p4rt.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = did, dl.list_id
    h.stream.send(ack)
    # The stream handles its messages in order, so the reply to a second arbitration update
    # (same election id) comes once the ack was handled. (A read is another RPC: it could
    # overtake the ack on a loaded machine, and the next digest was then still suppressed.)
    assert h.stream.arbitrate((0, 1)).arbitration.status.code == 0
    h.device.inject(3, frame(1, src=0xAB))
    assert h.stream.recv_kind("digest").digest.list_id > dl.list_id
    h.write((DELETE, d))
    assert h.read(p4rt.DigestEntry()) == []


# ---------------------------------------------------------------------- packet I/O
def test_packet_in_and_out(harness: Harness) -> None:
    h = harness
    ids = h.ids
    pin = ids.objs["packet_in"]
    assert [m.name for m in pin.metadata] == ["ingress_port", "pad"]
    # packet-out to a front-panel port
    m = p4rt.StreamMessageRequest()
    m.packet.payload = frame(1)
    m.packet.metadata.add(metadata_id=1, value=b"\x00\x04")  # padded accepted
    h.stream.send(m)
    # the stream handles its messages in order: the reply to a second arbitration update
    # comes once the packet-out was handled (a read RPC could overtake it under load)
    assert h.stream.arbitrate((0, 1)).arbitration.status.code == 0
    assert h.sent == [(4, frame(1))]
    # packet-out echoed back to the CPU port becomes a packet-in
    m.packet.metadata[0].value = CPU_PORT.to_bytes(2, "big")
    h.stream.send(m)
    r = h.stream.recv_kind("packet")
    assert r.packet.payload == frame(1)
    md = {x.metadata_id: x.value for x in r.packet.metadata}
    assert md == {1: bytes([CPU_PORT]), 2: b"\x00"}
    # a data-plane packet the program sends to the CPU
    h.write((INSERT, l2(h, 2, "MyIngress.to_cpu")))
    assert h.device.inject(6, frame(2)) == []
    r = h.stream.recv_kind("packet")
    assert r.packet.payload == frame(2)
    assert {x.metadata_id: x.value for x in r.packet.metadata}[1] == b"\x06"


def test_packet_in_goes_to_the_primary_only(harness: Harness) -> None:
    h = harness
    backup = h.new_client(election=(0, 0)).stream()
    assert backup.arbitrate((0, 0)).arbitration.status.code == code_pb2.ALREADY_EXISTS
    h.write((INSERT, l2(h, 2, "MyIngress.to_cpu")))
    h.device.inject(6, frame(2))
    assert h.stream.recv_kind("packet").packet.payload == frame(2)
    assert backup.empty()
