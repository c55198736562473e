"""The registration logic without sockets or threads (controller/registry.py)."""

from __future__ import annotations

import pytest
from ctl_helpers import member, members
from p4reduce.controller import Conflict, InvalidArgument, Job, NotFound, Registry
from p4reduce.controller.registry import FAILED, INSTALLING, JOINING, READY


def _ready(reg: Registry, job_id: int, n: int) -> None:
    for r in range(n):
        out = reg.join(job_id, member(r), n)
    assert out.complete
    reg.installed(job_id, Job(job_id, 1, n, 0, reg.default_slots, out.members))


def test_join_completes_once() -> None:
    reg = Registry(default_slots=32)
    a = reg.join(7, member(1), 3)
    assert not a.complete and a.entry.state == JOINING and a.entry.waiting_for == [0, 2]
    assert not reg.join(7, member(0), 3).complete
    last = reg.join(7, member(2), 3)
    assert last.complete and last.entry.state == INSTALLING
    assert [m.rank for m in last.members] == [0, 1, 2]
    assert last.entry.slot_count == 32
    with pytest.raises(Conflict, match="rank 1 already joined job 7"):
        reg.join(7, member(1), 3)
    reg.installed(7, Job(7, 1, 3, 0, 32, last.members))
    assert reg.get(7).state == READY
    with pytest.raises(Conflict, match="rank 0 already joined job 7"):
        reg.join(7, member(0), 3)


def test_join_conflicts() -> None:
    reg = Registry()
    reg.join(7, member(0), 3, slots=16)
    with pytest.raises(Conflict, match="rank 0 already joined job 7"):
        reg.join(7, member(0, udp_base=6000), 3)
    with pytest.raises(Conflict, match="job 7 has n = 3, not 4"):
        reg.join(7, member(1), 4)
    with pytest.raises(Conflict, match="job 7 asks for 16 slots, not 8"):
        reg.join(7, member(1), 3, slots=8)
    clash = member(1)
    clash = type(clash)(1, "10.0.0.1", 5000, clash.mac, 2)
    with pytest.raises(Conflict, match="rank 0 of job 7 already sends from 10.0.0.1:5000"):
        reg.join(7, clash, 3)
    with pytest.raises(InvalidArgument, match="rank 3 is outside 0..2"):
        reg.join(8, member(3), 3)
    with pytest.raises(InvalidArgument, match="worker count n 33"):
        reg.join(8, member(0), 33)
    with pytest.raises(InvalidArgument, match="job id 0"):
        reg.join(0, member(0), 1)


def test_withdraw_and_failed_install() -> None:
    reg = Registry()
    reg.join(7, member(0), 2)
    reg.withdraw(7, 0)
    assert 7 not in reg.entries  # empty entries go away
    reg.join(7, member(0), 3)  # so n may change
    reg.join(7, member(1), 3)
    out = reg.join(7, member(2), 3)
    reg.install_failed(7, InvalidArgument("boom"))
    assert out.entry.state == FAILED and str(out.entry.error) == "boom"
    assert 7 not in reg.entries
    assert not reg.join(7, member(0), 2).complete


def test_barrier_generations() -> None:
    reg = Registry()
    with pytest.raises(NotFound, match="unknown job 7"):
        reg.arrive(7, 0)
    reg.join(7, member(0), 3)
    with pytest.raises(Conflict, match=r"job 7 is joining \(waiting for ranks \[1, 2\]\)"):
        reg.arrive(7, 0)
    reg.withdraw(7, 0)
    _ready(reg, 7, 3)
    assert reg.arrive(7, 0) == (0, False)
    with pytest.raises(Conflict, match="rank 0 is already waiting at barrier 'default'"):
        reg.arrive(7, 0)
    assert reg.arrive(7, 2) == (0, False)
    assert not reg.released(7, "default", 0)
    assert reg.arrive(7, 1) == (0, True)
    assert reg.released(7, "default", 0)
    assert reg.arrive(7, 1) == (1, False)  # the next round
    assert reg.arrive(7, 0, "other") == (0, False)  # names are independent
    reg.depart(7, 1, "default", 1)
    assert reg.get(7).barriers["default"].arrived == set()
    with pytest.raises(InvalidArgument, match="rank 3 is outside 0..2"):
        reg.arrive(7, 3)


def test_leave() -> None:
    reg = Registry()
    _ready(reg, 7, 3)
    reg.arrive(7, 0)
    reg.arrive(7, 1)
    entry, last = reg.leave(7, 2)  # the barrier only waited for rank 2: it passes
    assert not last and entry.left == {2}
    assert reg.released(7, "default", 0)
    with pytest.raises(Conflict, match="rank 2 has already left job 7"):
        reg.leave(7, 2)
    with pytest.raises(Conflict, match="rank 2 has left job 7"):
        reg.arrive(7, 2)
    assert reg.arrive(7, 0) == (1, False)
    assert reg.arrive(7, 1) == (1, True)  # two ranks remain
    assert not reg.leave(7, 0)[1]
    assert reg.leave(7, 1)[1]
    assert 7 not in reg.entries
    with pytest.raises(NotFound):
        reg.leave(7, 1)
    reg.join(8, member(0), 2)
    with pytest.raises(NotFound, match="rank 1 has not joined job 8"):
        reg.leave(8, 1)
    assert not reg.leave(8, 0)[1]
    assert 8 not in reg.entries


def test_adopt_and_listing() -> None:
    reg = Registry()
    reg.adopt(Job(9, 4, 2, 100, 10, members(2)))
    reg.join(3, member(0), 2)
    listing = reg.to_list()
    assert [e["job_id"] for e in listing] == [3, 9]
    assert listing[0]["state"] == "joining" and listing[0]["waiting_for"] == [1]
    assert listing[1]["state"] == "ready" and listing[1]["job"]["slot_base"] == 100
    assert reg.arrive(9, 0) == (0, False)


def test_recovery_round() -> None:
    """Every rank arrives with its next call; the last arrival completes the round (and
    clears the slots); all get the largest next call; a timed-out arrival is taken back."""
    reg = Registry()
    _ready(reg, 7, 3)
    assert reg.recover_arrive(7, 0, 5) == (0, False)
    with pytest.raises(Conflict, match="rank 0 is already recovering job 7"):
        reg.recover_arrive(7, 0, 5)
    reg.recover_depart(7, 0, 0)  # gave up: no longer counted
    assert reg.get(7).recovery.arrived == {}
    assert reg.recover_arrive(7, 0, 5) == (0, False)
    assert reg.recover_arrive(7, 2, 4) == (0, False)
    assert reg.recovery_outcome(7, 0) is None
    assert reg.recover_arrive(7, 1, 9) == (0, True)
    with pytest.raises(Conflict, match="rank 1 is already recovering job 7"):
        reg.recover_arrive(7, 1, 9)  # until the slots are cleared
    reg.recovered(7, 0, None)
    assert reg.recovery_outcome(7, 0) == 9
    assert reg.get(7).to_dict()["recovery"] == {"generation": 1, "arrived": []}
    # a failed clear reaches every waiter of that round
    for r in range(3):
        gen, complete = reg.recover_arrive(7, r, 10)
    assert (gen, complete) == (1, True)
    reg.recovered(7, 1, InvalidArgument("no registers"))
    assert str(reg.recovery_outcome(7, 1)) == "no registers"
    with pytest.raises(InvalidArgument, match="next_call -1"):
        reg.recover_arrive(7, 0, -1)


def test_recovery_completes_when_the_missing_rank_leaves() -> None:
    reg = Registry()
    _ready(reg, 7, 3)
    reg.recover_arrive(7, 0, 3)
    reg.recover_arrive(7, 1, 3)
    assert reg.recovery_after_leave(7) is None  # rank 2 is still in the job
    reg.leave(7, 2)
    assert reg.recovery_after_leave(7) == 0
    reg.recovered(7, 0, None)
    assert reg.recovery_outcome(7, 0) == 3
