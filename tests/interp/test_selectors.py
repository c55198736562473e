"""Tables with an implementation: action profiles and action selectors.

Proves, through a P4 program with an ``action_profile(4)`` shared by two tables and an
``action_selector(HashAlgorithm.crc16, 32w16, 32w14)`` table with ``selector`` keys:
entries pointing at a member run that member's action (with its arguments, seen as a hit and
by ``action_run``), member modification takes effect without touching entries, an entry
pointing at a group picks one member per flow, always the same for the same selector field
values (the member at ``crc16(selector fields) % group size``), different flows spread over
the members, and group changes redistribute flows; and the control-plane errors
(``ExternError``): unknown member or group, duplicate member, full profile, unknown action or
wrong argument count, and deleting a member that is still in a group.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.externs import ActionProfile, ExternError
from p4reduce.switch.interp.hashes import crc16
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.interp.switch import V1Switch
from p4reduce.switch.interp.tables import Table

# header h_t: sel(8) key(8) src(32) dst(32) sport(16) mark(8) aux(8) flag(8) -> 15 bytes
HEADER = "!BBIIHBBB"
# A miss of a table with an implementation runs no action: its default_action (miss_mark)
# is ignored, as p4c-bm2-ss and BMv2 ignore it (docs/interpreter.md), so mark stays 0.
MISS = 0
SEL_PROFILE, SEL_PROFILE2, SEL_SELECTOR, SEL_ACTION_RUN = 1, 2, 3, 4

PROGRAM = """
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  sel;
    bit<8>  key;
    bit<32> src;
    bit<32> dst;
    bit<16> sport;
    bit<8>  mark;
    bit<8>  aux;
    bit<8>  flag;
}
struct headers_t { h_t h; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_mark(bit<8> m) { hdr.h.mark = m; }
    action set_two(bit<8> m, bit<8> n) { hdr.h.mark = m; hdr.h.aux = n; }
    action miss_mark() { hdr.h.mark = 0xEE; }

    action_profile(4) prof;
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) ecmp;

    table t_prof {
        key = { hdr.h.key : exact; }
        actions = { set_mark; set_two; miss_mark; }
        implementation = prof;
        default_action = miss_mark();
    }
    table t_prof2 {
        key = { hdr.h.sport : exact; }
        actions = { set_mark; miss_mark; }
        implementation = prof;
        default_action = miss_mark();
    }
    table t_sel {
        key = {
            hdr.h.key : exact;
            hdr.h.src : selector;
            hdr.h.dst : selector;
            hdr.h.sport : selector;
        }
        actions = { set_mark; miss_mark; }
        implementation = ecmp;
        default_action = miss_mark();
    }
    apply {
        if (hdr.h.sel == 1) {
            if (t_prof.apply().hit) { hdr.h.flag = 1; } else { hdr.h.flag = 2; }
        } else if (hdr.h.sel == 2) {
            t_prof2.apply();
        } else if (hdr.h.sel == 3) {
            t_sel.apply();
        } else if (hdr.h.sel == 4) {
            switch (t_prof.apply().action_run) {
                set_mark: { hdr.h.flag = 5; }
                set_two: { hdr.h.flag = 6; }
                miss_mark: { hdr.h.flag = 7; }
            }
        }
        sm.egress_spec = 1;
    }
}
control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    path: Path = tmp_path_factory.mktemp("selectors") / "selectors.p4"
    path.write_text(PROGRAM)
    return load_pipeline(path)


@pytest.fixture
def sw(pipeline: Pipeline) -> V1Switch:
    """A switch on the shared pipeline with empty tables and profiles."""
    for t in pipeline.tables.values():
        t.clear()
    for p in pipeline.profiles.values():
        p.groups.clear()
        p.members.clear()
    return V1Switch(pipeline)


def send(
    sw: V1Switch, sel: int, key: int = 0, src: int = 0, dst: int = 0, sport: int = 0
) -> tuple[int, int, int]:
    """Send one packet; return (mark, aux, flag) as the program left them."""
    [(port, out)] = sw.process(0, struct.pack(HEADER, sel, key, src, dst, sport, 0, 0, 0))
    assert port == 1
    return struct.unpack(HEADER, out)[5:]


def profile(sw: V1Switch, name: str) -> ActionProfile:
    return sw.pipeline.profiles[f"ingress.{name}"]


def table(sw: V1Switch, name: str) -> Table:
    return sw.pipeline.tables[f"ingress.{name}"]


def flow_mark(sw: V1Switch, src: int, dst: int, sport: int) -> int:
    return send(sw, SEL_SELECTOR, key=1, src=src, dst=dst, sport=sport)[0]


def expected_member(members: list[int], src: int, dst: int, sport: int) -> int:
    """The member a group picks: crc16 of the selector fields, MSB first, modulo its size."""
    return members[crc16(struct.pack("!IIH", src, dst, sport)) % len(members)]


FLOWS = [(0x0A000001 + i, 0x0A0000FE - 3 * i, 1000 + 7 * i) for i in range(64)]


# ---------------------------------------------------------------------- action profiles
def test_profiles_by_control_plane_name(pipeline: Pipeline) -> None:
    prof = pipeline.profiles["ingress.prof"]
    ecmp = pipeline.profiles["ingress.ecmp"]
    assert (prof.size, prof.selector_algo) == (4, None)
    assert (ecmp.size, ecmp.selector_algo) == (16, "crc16")
    assert prof.tables == [pipeline.tables["ingress.t_prof"], pipeline.tables["ingress.t_prof2"]]
    assert ecmp.tables == [pipeline.tables["ingress.t_sel"]]
    # selector keys are not match fields
    assert [k.name for k in pipeline.tables["ingress.t_sel"].keys] == ["hdr.h.key"]


def test_member_action_runs(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(1, "ingress.set_mark", [0x11])
    prof.add_member(2, "ingress.set_two", [0x22, 0x33])
    t = table(sw, "t_prof")
    t.add_entry([Exact(1)], "", [], member=1)
    t.add_entry([Exact(2)], "", [], member=2)
    t.add_entry([Exact(3)], "", [], member=1)  # members are shared by entries
    assert send(sw, SEL_PROFILE, key=1) == (0x11, 0, 1)
    assert send(sw, SEL_PROFILE, key=2) == (0x22, 0x33, 1)
    assert send(sw, SEL_PROFILE, key=3) == (0x11, 0, 1)
    assert send(sw, SEL_PROFILE, key=4) == (MISS, 0, 2)


def test_action_run_of_a_member(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(1, "ingress.set_mark", [0x11])
    prof.add_member(2, "ingress.set_two", [1, 2])
    t = table(sw, "t_prof")
    t.add_entry([Exact(1)], "", [], member=1)
    t.add_entry([Exact(2)], "", [], member=2)
    assert send(sw, SEL_ACTION_RUN, key=1) == (0x11, 0, 5)
    assert send(sw, SEL_ACTION_RUN, key=2) == (1, 2, 6)
    assert send(sw, SEL_ACTION_RUN, key=3) == (MISS, 0, 0)  # no action ran: no case runs


def test_profile_shared_by_two_tables(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(7, "ingress.set_mark", [0x77])
    table(sw, "t_prof").add_entry([Exact(1)], "", [], member=7)
    table(sw, "t_prof2").add_entry([Exact(80)], "", [], member=7)
    assert send(sw, SEL_PROFILE, key=1)[0] == 0x77
    assert send(sw, SEL_PROFILE2, sport=80)[0] == 0x77
    prof.modify_member(7, "ingress.set_mark", [0x78])  # both tables see the change
    assert send(sw, SEL_PROFILE, key=1)[0] == 0x78
    assert send(sw, SEL_PROFILE2, sport=80)[0] == 0x78


def test_modify_member_and_entry(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(1, "ingress.set_mark", [1])
    prof.add_member(2, "ingress.set_mark", [2])
    t = table(sw, "t_prof")
    t.add_entry([Exact(5)], "", [], member=1)
    assert send(sw, SEL_PROFILE, key=5)[0] == 1
    prof.modify_member(1, "ingress.set_two", [3, 4])
    assert send(sw, SEL_PROFILE, key=5) == (3, 4, 1)
    t.modify_entry([Exact(5)], None, "", [], member=2)
    assert send(sw, SEL_PROFILE, key=5)[0] == 2
    t.delete_entry([Exact(5)], None)
    assert send(sw, SEL_PROFILE, key=5) == (MISS, 0, 2)
    prof.delete_member(1)
    assert set(prof.members) == {2}


def test_profile_member_errors(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(1, "ingress.set_mark", [1])
    with pytest.raises(ExternError, match="ingress.prof: member 1 already exists"):
        prof.add_member(1, "ingress.set_mark", [2])
    with pytest.raises(ExternError, match="action ingress.nope is not an action of the"):
        prof.add_member(2, "ingress.nope", [])
    with pytest.raises(ExternError, match="action ingress.set_mark takes 1 arguments"):
        prof.add_member(2, "ingress.set_mark", [])
    with pytest.raises(ExternError, match="action ingress.set_two takes 2 arguments"):
        prof.add_member(2, "ingress.set_two", [1])
    with pytest.raises(ExternError, match="ingress.prof: no member 9"):
        prof.modify_member(9, "ingress.set_mark", [1])
    with pytest.raises(ExternError, match="ingress.prof: no member 9"):
        prof.delete_member(9)
    with pytest.raises(ExternError, match="no member 9"):
        table(sw, "t_prof").add_entry([Exact(1)], "", [], member=9)
    assert table(sw, "t_prof").entries == []
    assert set(prof.members) == {1}
    assert prof.members[1].args == (1,)


def test_profile_size_limit(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    for i in range(4):
        prof.add_member(i, "ingress.set_mark", [i])
    with pytest.raises(ExternError, match=r"ingress.prof: profile is full \(4 members\)"):
        prof.add_member(4, "ingress.set_mark", [4])
    prof.delete_member(0)
    prof.add_member(4, "ingress.set_mark", [4])


def test_member_argument_too_wide_is_refused(sw: V1Switch) -> None:
    with pytest.raises(ExternError, match="does not fit"):
        profile(sw, "prof").add_member(1, "ingress.set_mark", [256])


def test_deleting_a_member_used_by_an_entry_is_refused(sw: V1Switch) -> None:
    prof = profile(sw, "prof")
    prof.add_member(1, "ingress.set_mark", [1])
    table(sw, "t_prof").add_entry([Exact(1)], "", [], member=1)
    with pytest.raises(ExternError):
        prof.delete_member(1)
    assert send(sw, SEL_PROFILE, key=1)[0] == 1


# ---------------------------------------------------------------------- action selectors
@pytest.fixture
def ecmp(sw: V1Switch) -> ActionProfile:
    """Selector members 1..4 marking 0x10..0x40, in group 100, used by t_sel key 1."""
    ecmp = profile(sw, "ecmp")
    for i in range(1, 5):
        ecmp.add_member(i, "ingress.set_mark", [0x10 * i])
    ecmp.set_group(100, [1, 2, 3, 4])
    table(sw, "t_sel").add_entry([Exact(1)], "", [], group=100)
    return ecmp


def test_selector_entry_pointing_at_a_member(sw: V1Switch, ecmp: ActionProfile) -> None:
    table(sw, "t_sel").add_entry([Exact(2)], "", [], member=3)
    for src, dst, sport in FLOWS[:8]:
        assert send(sw, SEL_SELECTOR, key=2, src=src, dst=dst, sport=sport)[0] == 0x30
    assert send(sw, SEL_SELECTOR, key=9)[0] == MISS


def test_group_is_deterministic_per_flow(sw: V1Switch, ecmp: ActionProfile) -> None:
    first = [flow_mark(sw, *f) for f in FLOWS]
    again = [flow_mark(sw, *f) for f in reversed(FLOWS)]
    assert again[::-1] == first
    # a fresh switch on the same pipeline picks the same members
    sw2 = V1Switch(sw.pipeline)
    assert [flow_mark(sw2, *f) for f in FLOWS] == first


def test_group_spreads_flows_over_members(sw: V1Switch, ecmp: ActionProfile) -> None:
    marks = [flow_mark(sw, *f) for f in FLOWS]
    assert set(marks) == {0x10, 0x20, 0x30, 0x40}
    assert min(marks.count(m) for m in set(marks)) >= 4


def test_group_member_is_the_crc16_hash_of_the_selector_fields(
    sw: V1Switch, ecmp: ActionProfile
) -> None:
    for src, dst, sport in FLOWS:
        member = expected_member([1, 2, 3, 4], src, dst, sport)
        assert flow_mark(sw, src, dst, sport) == 0x10 * member
    # the exact key is not part of the hash: key 2 -> the same group, the same members
    table(sw, "t_sel").add_entry([Exact(2)], "", [], group=100)
    for src, dst, sport in FLOWS[:16]:
        got = send(sw, SEL_SELECTOR, key=2, src=src, dst=dst, sport=sport)[0]
        assert got == flow_mark(sw, src, dst, sport)


def test_group_changes_redistribute_flows(sw: V1Switch, ecmp: ActionProfile) -> None:
    ecmp.set_group(100, [2, 4])
    marks = [flow_mark(sw, *f) for f in FLOWS]
    assert set(marks) == {0x20, 0x40}
    for (src, dst, sport), m in zip(FLOWS, marks, strict=True):
        assert m == 0x10 * expected_member([2, 4], src, dst, sport)
    ecmp.set_group(100, [3])
    assert {flow_mark(sw, *f) for f in FLOWS} == {0x30}
    ecmp.modify_member(3, "ingress.set_mark", [0x99])
    assert {flow_mark(sw, *f) for f in FLOWS} == {0x99}


def test_entry_moves_between_group_and_member(sw: V1Switch, ecmp: ActionProfile) -> None:
    t = table(sw, "t_sel")
    t.modify_entry([Exact(1)], None, "", [], member=2)
    assert {flow_mark(sw, *f) for f in FLOWS[:16]} == {0x20}
    ecmp.set_group(200, [1, 3])
    t.modify_entry([Exact(1)], None, "", [], group=200)
    assert {flow_mark(sw, *f) for f in FLOWS} == {0x10, 0x30}


def test_selector_errors(sw: V1Switch, ecmp: ActionProfile) -> None:
    t = table(sw, "t_sel")
    with pytest.raises(ExternError, match="ingress.ecmp: no group 7"):
        t.add_entry([Exact(2)], "", [], group=7)
    with pytest.raises(ExternError, match="ingress.ecmp: no member 9"):
        t.add_entry([Exact(2)], "", [], member=9)
    with pytest.raises(ExternError, match="no group 7"):
        t.modify_entry([Exact(1)], None, "", [], group=7)
    with pytest.raises(ExternError, match="ingress.ecmp: no member 9"):
        ecmp.set_group(101, [1, 9])
    assert 101 not in ecmp.groups
    with pytest.raises(ExternError, match="ingress.ecmp: no group 101"):
        ecmp.delete_group(101)
    assert [e.group for e in t.entries] == [100]


def test_deleting_a_member_still_in_a_group(sw: V1Switch, ecmp: ActionProfile) -> None:
    with pytest.raises(ExternError, match="ingress.ecmp: member 2 is still in a group"):
        ecmp.delete_member(2)
    assert 2 in ecmp.members
    ecmp.set_group(100, [1, 3, 4])
    ecmp.delete_member(2)  # out of every group now
    ecmp.set_group(300, [4])
    with pytest.raises(ExternError, match="member 4 is still in a group"):
        ecmp.delete_member(4)
    t = table(sw, "t_sel")
    t.delete_entry([Exact(1)], None)
    ecmp.delete_group(100)
    with pytest.raises(ExternError, match="member 4 is still in a group"):
        ecmp.delete_member(4)  # still in group 300
    ecmp.delete_group(300)
    ecmp.delete_member(4)
    assert set(ecmp.members) == {1, 3}


def test_deleting_a_group_used_by_an_entry_is_refused(sw: V1Switch, ecmp: ActionProfile) -> None:
    with pytest.raises(ExternError):
        ecmp.delete_group(100)
    assert flow_mark(sw, *FLOWS[0]) != MISS
