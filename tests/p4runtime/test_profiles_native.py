"""Action profiles and selectors written over P4Runtime to a native-engine server.

The same writes (members, weighted groups, entries pointing to a member or a group, member
and group changes, a reconcile) go to two servers, one running the native engine and one the
interpreter, and the same packets are injected into both: the frames sent, the direct
counters and the profiles read back must be identical. The program is the native tests' own
(tests/native/p4/profile_ops.p4: two selectors, one a custom CRC, and a shared profile).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from p4reduce.switch.native.build import compiler
from p4rt_client import DELETE, INSERT, MODIFY, Compiled, Harness, compile_program, exact, lpm

from p4reduce.proto import p4runtime_pb2 as p4rt

PROGRAM = Path(__file__).resolve().parents[1] / "native" / "p4" / "profile_ops.p4"
DSTS = [0x0A0000000001, 0x0A0000000002]
pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return compile_program(PROGRAM, tmp_path_factory.mktemp("profiles"))


@pytest.fixture
def pair(compiled: Compiled) -> Iterator[tuple[Harness, Harness]]:
    made: list[Harness] = []
    try:
        for engine in ("native", "python"):
            h = Harness(compiled, push=False)
            made.append(h)
            h.device.engine = engine  # the engine of every pipeline the device loads
            h.client.set_pipeline(compiled)
        yield made[0], made[1]
    finally:
        for h in made:
            h.close()


def fwd_member(h: Harness, profile: str, mid: int, port: int, tag: int) -> Any:
    m = p4rt.ActionProfileMember(action_profile_id=h.ids.id(profile), member_id=mid)
    m.action.action_id = h.ids.action("I.fwd")
    m.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    m.action.params.add(param_id=2, value=bytes([tag]))
    return m


def mark_member(h: Harness, profile: str, mid: int, value: int) -> Any:
    m = p4rt.ActionProfileMember(action_profile_id=h.ids.id(profile), member_id=mid)
    m.action.action_id = h.ids.action("I.mark")
    m.action.params.add(param_id=1, value=value.to_bytes(4, "big"))
    return m


def group(h: Harness, profile: str, gid: int, *weighted: tuple[int, int]) -> Any:
    g = p4rt.ActionProfileGroup(action_profile_id=h.ids.id(profile), group_id=gid)
    for mid, weight in weighted:
        g.members.add(member_id=mid, weight=weight)
    return g


def ecmp(h: Harness, dst: int, *, member: int | None = None, grp: int | None = None) -> Any:
    te = p4rt.TableEntry(table_id=h.ids.table("I.ecmp"))
    te.match.append(exact(1, dst.to_bytes(6, "big")))
    if member is not None:
        te.action.action_profile_member_id = member
    else:
        te.action.action_profile_group_id = grp  # type: ignore[assignment]
    return te


def by_src(h: Harness, src: int, plen: int, member: int) -> Any:
    te = p4rt.TableEntry(table_id=h.ids.table("I.by_src"))
    te.match.append(lpm(1, src.to_bytes(6, "big"), plen))
    te.action.action_profile_member_id = member
    return te


def frames(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        f = rng.choice(DSTS).to_bytes(6, "big") + rng.randbytes(6)
        out.append(f + rng.choice([b"\x08\x00", b"\x86\xdd"]) + rng.randbytes(5))
    return out


def both(pair: tuple[Harness, Harness], *updates: Any) -> None:
    for h in pair:
        h.write(*[(kind, make(h)) for kind, make in updates])


def send(pair: tuple[Harness, Harness], packets: list[bytes]) -> list[list[tuple[int, bytes]]]:
    outs = []
    for h in pair:
        h.sent.clear()
        for i, f in enumerate(packets):
            h.device.inject(i % 4, f)
        outs.append(list(h.sent))
    return outs


def test_members_groups_and_entries_agree_with_the_interpreter(
    pair: tuple[Harness, Harness],
) -> None:
    nat, py = pair
    assert nat.device.switch.engine == "native"
    assert py.device.switch.engine == "python"
    rng = random.Random(5)
    packets = frames(rng, 60)
    sel = "I.sel16"
    both(pair, *[(INSERT, lambda h, i=i: fwd_member(h, sel, i, 10 + i, i)) for i in range(1, 5)])
    both(pair, (INSERT, lambda h: group(h, sel, 7, (1, 1), (2, 3), (3, 1))))
    both(pair, (INSERT, lambda h: ecmp(h, DSTS[0], grp=7)))
    both(pair, (INSERT, lambda h: ecmp(h, DSTS[1], member=4)))
    both(pair, (INSERT, lambda h: mark_member(h, "I.shared", 1, 0xC0FFEE)))
    both(pair, (INSERT, lambda h: by_src(h, 0, 1, 1)))  # half of the sources
    a, b = send(pair, packets)
    assert a == b
    ports = {p for p, _ in a}
    assert {11, 12, 13} <= ports  # the group spreads flows over its three members
    assert 14 in ports and 10 not in ports

    # a member changes under a group, the group changes its weights, the entry moves
    both(pair, (MODIFY, lambda h: fwd_member(h, sel, 2, 20, 9)))
    both(pair, (MODIFY, lambda h: group(h, sel, 7, (2, 1), (4, 2))))
    both(pair, (MODIFY, lambda h: ecmp(h, DSTS[1], grp=7)))
    a, b = send(pair, packets)
    assert a == b
    assert {p for p, _ in a} == {20, 14}

    # an emptied group makes the table miss (default NoAction: no egress port set)
    both(pair, (MODIFY, lambda h: group(h, sel, 7)))
    a, b = send(pair, packets)
    assert a == b
    assert {p for p, _ in a} <= {0}

    # the read-back agrees, and the direct counters of the ecmp table too
    for ent in (
        p4rt.ActionProfileMember(action_profile_id=nat.ids.id(sel)),
        p4rt.ActionProfileGroup(action_profile_id=nat.ids.id(sel)),
        p4rt.TableEntry(table_id=nat.ids.table("I.ecmp"), counter_data=p4rt.CounterData()),
    ):
        assert nat.read(ent) == py.read(ent)

    both(
        pair,
        (DELETE, lambda h: ecmp(h, DSTS[0], grp=7)),
        (DELETE, lambda h: ecmp(h, DSTS[1], grp=7)),
    )
    both(pair, (DELETE, lambda h: group(h, sel, 7)))
    a, b = send(pair, packets)
    assert a == b


def test_a_reconcile_carries_the_profiles_into_the_native_engine(
    pair: tuple[Harness, Harness], compiled: Compiled
) -> None:
    """RECONCILE_AND_COMMIT builds a new native pipeline and copies members, groups and
    entries into it (pipeline_config.reconcile writes ``profile.members[mid]`` directly)."""
    nat, py = pair
    sel = "I.sel16"
    both(pair, *[(INSERT, lambda h, i=i: fwd_member(h, sel, i, 30 + i, i)) for i in range(3)])
    both(pair, (INSERT, lambda h: group(h, sel, 1, (0, 1), (1, 1), (2, 2))))
    both(pair, (INSERT, lambda h: ecmp(h, DSTS[0], grp=1)))
    before = nat.device.switch
    for h in pair:
        h.client.set_pipeline(
            compiled, action=p4rt.SetForwardingPipelineConfigRequest.RECONCILE_AND_COMMIT
        )
    assert nat.device.switch is not before and nat.device.switch.engine == "native"
    a, b = send(pair, frames(random.Random(9), 40))
    assert a == b
    assert {p for p, _ in a} == {0, 30, 31, 32}  # DSTS[1] misses: no egress port set
