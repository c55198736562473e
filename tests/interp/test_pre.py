"""The packet replication engine: its control-plane API and multicast/clone end to end.

Proves that multicast groups and nodes follow simple_switch's CLI model (handles 0, 1, 2...
in creation order, a node in at most one group, ``PreError`` naming each refused request),
that ``replicas`` lists (port, rid) copies in node order then port order, that clone
sessions send to a port or to a multicast group (``clone_targets``), and that ``set_group``
(P4Runtime style) replaces a group's members. End to end, a program setting
``standard_metadata.mcast_grp`` gets one copy per (port, rid) with ``egress_rid`` and
``instance_type`` (5, REPLICATION) as egress sees them, an unknown or empty group sends
nothing, and an ingress-to-egress clone reaches the session's port or group (instance type
1) beside the original packet, cut to the session's truncate length.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.pre import PacketReplicationEngine, PreError
from p4reduce.switch.interp.switch import V1Switch

# ---------------------------------------------------------------------- API: groups and nodes


@pytest.fixture
def pre() -> PacketReplicationEngine:
    return PacketReplicationEngine()


def test_group_lifecycle(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(1)
    pre.mgrp_create(65535)
    assert pre.replicas(1) == []
    h = pre.node_create(3, [3])
    pre.node_associate(1, h)
    pre.mgrp_create(1)  # as BMv2: creating it again succeeds and keeps its nodes
    assert pre.replicas(1) == [(3, 3)]
    pre.mgrp_destroy(1)
    pre.mgrp_destroy(1)  # as BMv2: destroying a missing group succeeds
    pre.mgrp_create(1)  # the id is free again
    assert pre.replicas(1) == []


@pytest.mark.parametrize("group", [0, -1, 65536])
def test_group_id_range(pre: PacketReplicationEngine, group: int) -> None:
    with pytest.raises(PreError, match=r"must be in 1\.\.65535"):
        pre.mgrp_create(group)
    assert pre.groups == {}


def test_node_handles_in_creation_order(pre: PacketReplicationEngine) -> None:
    assert [pre.node_create(rid, [rid]) for rid in (5, 6, 7)] == [0, 1, 2]
    pre.node_destroy(1)
    assert pre.node_create(8, []) == 3  # handles are not reused
    assert pre.node(0).rid == 5
    assert pre.node(3).rid == 8


def test_node_errors(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(1)
    pre.mgrp_create(2)
    h = pre.node_create(0, [1])
    with pytest.raises(PreError, match="no multicast node with handle 7"):
        pre.node(7)
    with pytest.raises(PreError, match="no multicast node with handle 7"):
        pre.node_update(7, [1])
    with pytest.raises(PreError, match="no multicast node with handle 7"):
        pre.node_destroy(7)
    with pytest.raises(PreError, match="no multicast node with handle 7"):
        pre.node_associate(1, 7)
    with pytest.raises(PreError, match="no multicast group 3"):
        pre.node_associate(3, h)
    with pytest.raises(PreError, match=f"node {h} is not associated with group 1"):
        pre.node_dissociate(1, h)
    pre.node_associate(1, h)
    with pytest.raises(PreError, match=f"node {h} is already associated with group 1"):
        pre.node_associate(2, h)
    with pytest.raises(PreError, match=f"node {h} is already associated with group 1"):
        pre.node_associate(1, h)
    with pytest.raises(PreError, match=f"node {h} is not associated with group 2"):
        pre.node_dissociate(2, h)
    assert pre.replicas(1) == [(1, 0)]
    assert pre.replicas(2) == []


def test_replicas_node_order_then_port_order(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(7)
    a = pre.node_create(10, [4, 1, 2])
    b = pre.node_create(20, [3])
    c = pre.node_create(10, [1])
    for h in (b, a, c):
        pre.node_associate(7, h)
    assert pre.replicas(7) == [(3, 20), (4, 10), (1, 10), (2, 10), (1, 10)]
    assert pre.replicas(8) == []  # unknown group: no copies


def test_node_update_dissociate_destroy(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(1)
    a = pre.node_create(1, [1])
    b = pre.node_create(2, [2])
    pre.node_associate(1, a)
    pre.node_associate(1, b)
    pre.node_update(a, [5, 6])
    assert pre.replicas(1) == [(5, 1), (6, 1), (2, 2)]
    pre.node_dissociate(1, a)
    assert pre.replicas(1) == [(2, 2)]
    assert pre.node(a).group is None
    pre.node_associate(1, a)  # back, now after b
    assert pre.replicas(1) == [(2, 2), (5, 1), (6, 1)]
    pre.node_destroy(b)  # destroying an associated node removes it from its group
    assert pre.replicas(1) == [(5, 1), (6, 1)]
    assert b not in pre.nodes


def test_destroying_a_group_frees_its_nodes(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(1)
    h = pre.node_create(3, [1, 2])
    pre.node_associate(1, h)
    pre.mgrp_destroy(1)
    assert pre.replicas(1) == []
    assert pre.node(h).group is None
    pre.mgrp_create(2)
    pre.node_associate(2, h)
    assert pre.replicas(2) == [(1, 3), (2, 3)]


# ---------------------------------------------------------------------- API: P4Runtime style


def test_set_group_creates_and_replaces(pre: PacketReplicationEngine) -> None:
    pre.set_group(5, [(1, 0), (2, 0), (3, 1)])
    assert pre.replicas(5) == [(1, 0), (2, 0), (3, 1)]
    pre.set_group(5, [(4, 2)])
    assert pre.replicas(5) == [(4, 2)]
    pre.set_group(5, [])
    assert 5 in pre.groups
    assert pre.replicas(5) == []


def test_set_group_groups_replicas_by_rid(pre: PacketReplicationEngine) -> None:
    # one node per rid, in the order rids first appear: replicas come back node by node
    pre.set_group(9, [(1, 5), (2, 6), (3, 5)])
    assert pre.replicas(9) == [(1, 5), (3, 5), (2, 6)]
    assert sorted(pre.nodes[h].rid for h in pre.groups[9]) == [5, 6]


def test_set_group_replaces_a_cli_group(pre: PacketReplicationEngine) -> None:
    pre.mgrp_create(3)
    h = pre.node_create(1, [1])
    pre.node_associate(3, h)
    pre.set_group(3, [(2, 2)])
    assert pre.replicas(3) == [(2, 2)]
    assert pre.node(h).group is None


def test_set_group_refuses_bad_ids(pre: PacketReplicationEngine) -> None:
    with pytest.raises(PreError, match="must be in 1..65535"):
        pre.set_group(0, [(1, 1)])
    assert pre.groups == {}


def test_set_group_does_not_leak_nodes(pre: PacketReplicationEngine) -> None:
    for i in range(10):
        pre.set_group(1, [(1, i), (2, i)])
    assert len(pre.nodes) == 1


# ---------------------------------------------------------------------- API: clone sessions


def test_clone_sessions(pre: PacketReplicationEngine) -> None:
    assert pre.clone_targets(5) is None  # not configured
    pre.mirroring_add(5, 7)
    assert pre.clone_targets(5) == [(7, 0)]
    pre.mirroring_add(5, 8, truncate=64)  # replaces the session
    assert pre.clone_targets(5) == [(8, 0)]
    assert pre.sessions[5].truncate == 64
    pre.mirroring_add_mc(6, 2)
    assert pre.clone_targets(6) == []  # group 2 does not exist (yet)
    pre.set_group(2, [(1, 3), (4, 3)])
    assert pre.clone_targets(6) == [(1, 3), (4, 3)]  # the group is read at clone time
    pre.mirroring_delete(5)
    assert pre.clone_targets(5) is None
    with pytest.raises(PreError, match="no clone session 5"):
        pre.mirroring_delete(5)


def test_clone_session_values_out_of_range_are_refused(pre: PacketReplicationEngine) -> None:
    with pytest.raises(PreError, match="clone session id -1 must be in 0..4294967295"):
        pre.mirroring_add(-1, 4)
    with pytest.raises(PreError, match="clone session id 4294967296"):
        pre.mirroring_add_mc(1 << 32, 1)
    with pytest.raises(PreError, match="clone session 5: truncation -3 out of range"):
        pre.mirroring_add(5, 4, truncate=-3)
    with pytest.raises(PreError, match="clone session 5: port -2 out of range"):
        pre.mirroring_add(5, -2)
    assert pre.sessions == {}  # nothing half-made
    pre.mirroring_add((1 << 32) - 1, 511, (1 << 32) - 1)  # the edges are fine


# ---------------------------------------------------------------------- end to end

# header h_t: grp(16) session(8) rid(16) inst(32) eport(16) -> 11 bytes
HEADER = "!HBHIH"
INGRESS_PORT = 4
UNICAST_PORT = 9

PROGRAM = """
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> grp;
    bit<8>  session;
    bit<16> rid;
    bit<32> inst;
    bit<16> eport;
}
struct headers_t { h_t h; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 9;
        sm.mcast_grp = hdr.h.grp;
        if (hdr.h.session != 0) {
            clone(CloneType.I2E, (bit<32>)hdr.h.session);
        }
    }
}
control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.inst = sm.instance_type;
        hdr.h.eport = (bit<16>)sm.egress_port;
    }
}
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""

PAYLOAD = bytes(range(32))


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    path: Path = tmp_path_factory.mktemp("pre") / "pre.p4"
    path.write_text(PROGRAM)
    return load_pipeline(path)


@pytest.fixture
def sw(pipeline: Pipeline) -> V1Switch:
    return V1Switch(pipeline)  # a fresh switch: an empty replication engine


def send(sw: V1Switch, grp: int, session: int = 0) -> list[tuple[int, tuple[int, ...], bytes]]:
    """Send a packet; return (port, (grp, session, rid, inst, eport), payload) per copy."""
    data = struct.pack(HEADER, grp, session, 0xFFFF, 0xFFFFFFFF, 0xFFFF) + PAYLOAD
    size = struct.calcsize(HEADER)
    return [
        (port, struct.unpack(HEADER, out[:size]), out[size:])
        for port, out in sw.process(INGRESS_PORT, data)
    ]


def test_no_group_is_unicast(sw: V1Switch) -> None:
    assert send(sw, 0) == [(UNICAST_PORT, (0, 0, 0, 0, UNICAST_PORT), PAYLOAD)]


def test_multicast_one_copy_per_port_and_rid(sw: V1Switch) -> None:
    sw.pre.mgrp_create(3)
    for rid, ports in ((1, [1, 2]), (2, [2, 3])):
        sw.pre.node_associate(3, sw.pre.node_create(rid, ports))
    out = send(sw, 3)
    # the copies leave in replica order; the original is not sent on egress_spec
    assert [(port, fields[2:]) for port, fields, _ in out] == [
        (1, (1, 5, 1)),
        (2, (1, 5, 2)),
        (2, (2, 5, 2)),
        (3, (2, 5, 3)),
    ]
    assert all(payload == PAYLOAD for _, _, payload in out)


def test_multicast_unknown_or_empty_group_sends_nothing(sw: V1Switch) -> None:
    assert send(sw, 77) == []
    sw.pre.mgrp_create(77)
    assert send(sw, 77) == []


def test_multicast_follows_group_changes(sw: V1Switch) -> None:
    sw.pre.set_group(0xABCD, [(1, 7), (2, 8)])
    assert [(p, f[2]) for p, f, _ in send(sw, 0xABCD)] == [(1, 7), (2, 8)]
    sw.pre.set_group(0xABCD, [(5, 9)])
    assert [(p, f[2]) for p, f, _ in send(sw, 0xABCD)] == [(5, 9)]
    sw.pre.mgrp_destroy(0xABCD)
    assert send(sw, 0xABCD) == []


def test_clone_to_port(sw: V1Switch) -> None:
    sw.pre.mirroring_add(4, 6)
    out = send(sw, 0, session=4)
    assert sorted((port, fields[2:]) for port, fields, _ in out) == [
        (6, (0, 1, 6)),  # the clone: instance type 1 (INGRESS_CLONE)
        (UNICAST_PORT, (0, 0, UNICAST_PORT)),
    ]


def test_clone_to_group(sw: V1Switch) -> None:
    sw.pre.set_group(10, [(2, 7), (3, 7)])
    sw.pre.mirroring_add_mc(4, 10)
    out = send(sw, 0, session=4)
    assert sorted((port, fields[2:]) for port, fields, _ in out) == [
        (2, (7, 1, 2)),
        (3, (7, 1, 3)),
        (UNICAST_PORT, (0, 0, UNICAST_PORT)),
    ]


def test_clone_to_unconfigured_session_is_skipped(sw: V1Switch) -> None:
    out = send(sw, 0, session=5)
    assert [(port, fields[2:]) for port, fields, _ in out] == [(UNICAST_PORT, (0, 0, UNICAST_PORT))]


def test_clone_truncate(sw: V1Switch) -> None:
    sw.pre.mirroring_add(4, 6, truncate=8)
    out = dict(sw.process(INGRESS_PORT, struct.pack(HEADER, 0, 4, 0, 0, 0) + PAYLOAD))
    assert len(out[6]) == 8
    assert len(out[UNICAST_PORT]) == struct.calcsize(HEADER) + len(PAYLOAD)


def test_clone_and_multicast_together(sw: V1Switch) -> None:
    sw.pre.set_group(2, [(1, 1), (2, 2)])
    sw.pre.mirroring_add(3, 8)
    out = send(sw, 2, session=3)
    assert sorted((port, fields[2:]) for port, fields, _ in out) == [
        (1, (1, 5, 1)),
        (2, (2, 5, 2)),
        (8, (0, 1, 8)),
    ]


def test_internal_groups_for_clone_sessions_live_above_the_p4_range(
    pre: PacketReplicationEngine,
) -> None:
    with pytest.raises(PreError, match="must be above 65535"):
        pre.set_group(7, [(1, 1)], internal=True)
    pre.set_group(65536 + 5, [(1, 1), (2, 1)], internal=True)
    assert pre.replicas(65536 + 5) == [(1, 1), (2, 1)]
    pre.drop_group(65536 + 5)
    assert pre.replicas(65536 + 5) == [] and pre.nodes == {}
