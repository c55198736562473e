"""The per-job key (docs/protocol.md, "Job keys"): a flood of packets that forge everything
else a registered worker sends (job id, source address and port, rank, a slot in range, a
well-formed frame) but not the job's key, sent between two jobs' legitimate aggregations,
leaves both jobs' results exact and is counted as ``bad_key``, packet for packet, under the
job each forged packet names; no forged packet touches any slot state."""

from __future__ import annotations

import random

import pytest
from fabric import (
    EV_BAD_KEY,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    INT32_MAX,
    INT32_MIN,
    Agg,
    Fabric,
    Job,
    check_multicast,
    model_result,
)

FORGED_PER_STEP = 6


def forged(rng: random.Random, victim: Job, other: Job, k: int) -> tuple[int, bytes]:
    """(port, frame): a packet as victim's worker w would send it for a random slot and
    set, with a key that is not victim's: the other job's, a one-bit miss, or a guess."""
    w = rng.choice(victim.workers)
    key = rng.choice([other.key, victim.key ^ (1 << rng.randrange(32)), rng.getrandbits(32)])
    if key == victim.key:
        key ^= 1
    values = None if rng.random() < 0.3 else [rng.getrandbits(31) for _ in range(k)]
    agg = w.agg(
        rng.randrange(victim.count),
        rng.randrange(2),
        values,
        key=key,
        exponent=rng.randrange(256),
        next=rng.getrandbits(32),
    )
    # from the victim's port or from the other job's ports: the switch must not care
    port = rng.choice([w.port] + [x.port for x in other.workers])
    return port, w.frame(agg)


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_forged_key_flood_between_two_jobs(program: str) -> None:
    rng = random.Random(21 + len(program))
    fab = Fabric(program)
    a = fab.add_job(job_id=300, index=1, n=3, base=0, count=3, key=0x13579BDF)
    b = fab.add_job(job_id=301, index=2, n=2, base=3, count=2, key=0x2468ACE0)
    forged_count = {a.index: 0, b.index: 0}
    expected = {a.index: {}, b.index: {}}  # job index -> event -> count
    rounds = 4
    # the legitimate schedule as the host rules allow it: per (job, slot) a queue of uses,
    # each use every worker once in random order; queues interleave at random
    queues = []
    for job in (a, b):
        for slot in range(job.count):
            q = []
            for use in range(rounds):
                order = list(job.workers)
                rng.shuffle(order)
                q += [(job, w, slot, use) for w in order]
            queues.append(q)
    steps = []
    while any(queues):
        steps.append(rng.choice([q for q in queues if q]).pop(0))
    pending: dict[tuple[int, int, int], list[Agg]] = {}
    checked_state = 0
    for step in steps:
        job, w, slot, use = step
        for _ in range(FORGED_PER_STEP):
            victim, other = (a, b) if rng.random() < 0.5 else (b, a)
            port, raw = forged(rng, victim, other, fab.k)
            before = fab.snapshot() if checked_state < 20 else None
            assert fab.send(port, raw) == []
            if before is not None:
                assert fab.changed_cells(before) == {}
                checked_state += 1
            forged_count[victim.index] += 1
        values = tuple(
            rng.choice([INT32_MIN, INT32_MAX, rng.getrandbits(32) - 2**31]) for _ in range(fab.k)
        )
        agg = w.agg(slot, use % 2, values, exponent=rng.randrange(1, 256), block=use)
        got = pending.setdefault((job.index, slot, use), [])
        got.append(agg)
        out = fab.send(w.port, w.frame(agg))
        ev = expected[job.index]
        if len(got) == job.n:
            check_multicast(fab, job, out, model_result(fab, got, agg))
            ev[EV_COMPLETION] = ev.get(EV_COMPLETION, 0) + 1
        else:
            assert out == []
            ev[EV_CONTRIBUTION] = ev.get(EV_CONTRIBUTION, 0) + 1
    for job in (a, b):
        expected[job.index][EV_BAD_KEY] = forged_count[job.index]
        assert fab.job_counters(job.index) == expected[job.index]
        assert expected[job.index][EV_COMPLETION] == rounds * job.count
    assert fab.job_counters(0) == {}  # the senders were registered: not unknown_sender
    assert forged_count[a.index] > 50 and forged_count[b.index] > 50


def test_rotated_key_shuts_out_the_old_incarnation(program: str) -> None:
    """A job deleted and created again with the same id, members and addresses gets a new
    key: a stale worker still sending with the old key adds nothing to the new job."""
    fab = Fabric(program)
    old = fab.add_job(job_id=5, index=1, n=2, base=0, count=2, key=0xAAAA0001)
    stale = old.workers[0].agg(0, 0, [7] * fab.k)
    # the controller deletes the job (entries gone) and creates it again with a new key
    # (its multicast group is left in place: the new incarnation gets another one)
    fab.tables["SwitchIngress.admission.workers"].clear()
    fab.tables["SwitchEgress.replica.replicas"].clear()
    fab.jobs.clear()
    new = fab.add_job(job_id=5, index=1, n=2, base=0, count=2, key=0xAAAA0002, mgid=400)
    before = fab.snapshot()
    assert fab.send(old.workers[0].port, old.workers[0].frame(stale)) == []
    assert fab.changed_cells(before) == {}
    assert fab.job_counters(1) == {EV_BAD_KEY: 1}
    aggs = [w.agg(0, 0, [w.rank + 1] * fab.k) for w in new.workers]
    for w, g in zip(new.workers, aggs, strict=True):
        out = fab.send(w.port, w.frame(g))
    check_multicast(fab, new, out, model_result(fab, aggs, aggs[-1]))
