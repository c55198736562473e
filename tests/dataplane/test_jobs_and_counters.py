"""Job isolation, the drop-reason and egress counters, and the loss simulator
(docs/protocol.md, "Job isolation and admission", "Counters", "Loss simulator").
"""

from __future__ import annotations

import random

import pytest
from fabric import (
    EG_LOSS,
    EG_NO_REPLICA,
    EG_RESULT_SENT,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_DUPLICATE,
    EV_LOSS,
    EV_MALFORMED,
    EV_RETRANSMIT,
    EV_SLOT_RANGE,
    EV_UNKNOWN_SENDER,
    EV_WRONG_RANK,
    INT32_MAX,
    INT32_MIN,
    R_BITMAPS,
    SWITCH_IP,
    SWITCH_MAC,
    Fabric,
    Job,
    arp_frame,
    check_multicast,
    check_result,
    model_result,
    parse_arp,
    udp_frame,
)


def block(rng: random.Random, k: int) -> tuple[int, ...]:
    return tuple(rng.randint(INT32_MIN, INT32_MAX) for _ in range(k))


def complete(fab: Fabric, job: Job, slot: int, set_: int, rng: random.Random, order=None):
    """Every worker of ``job`` contributes; returns (aggs, output of the last one)."""
    aggs = [w.agg(slot, set_, block(rng, fab.k), exponent=rng.randint(0, 255)) for w in job.workers]
    out = []
    for r in order or range(job.n):
        out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
    return aggs, out


def cells_touched(fab: Fabric, before: dict[str, list[int]]) -> tuple[set[int], set[int]]:
    """(slots touched in bitmaps, cells touched in every cell-indexed register)."""
    changed = fab.changed_cells(before)
    slots = set(changed.pop(R_BITMAPS, []))
    cells = {i for idx in changed.values() for i in idx}
    return slots, cells


def test_jobs_touch_only_their_own_slots(program: str) -> None:
    rng = random.Random(7)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    b = fab.add_job(job_id=200, index=2, n=3, base=4, count=4)
    c = fab.add_job(job_id=300, index=3, n=1, base=8, count=2)
    for job in (a, b, c):
        before = fab.snapshot()
        for slot in range(job.count):
            for set_ in (0, 1):
                aggs, out = complete(fab, job, slot, set_, rng)
                check_multicast(fab, job, out, model_result(fab, aggs, aggs[-1]))
        slots, cells = cells_touched(fab, before)
        assert slots == set(range(job.base, job.base + job.count))
        assert cells == set(job.cells())


def test_interleaved_jobs_on_the_same_relative_slot(program: str) -> None:
    rng = random.Random(8)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    b = fab.add_job(job_id=200, index=2, n=3, base=4, count=4)
    aa = [w.agg(0, 0, block(rng, fab.k), exponent=10 + w.rank) for w in a.workers]
    bb = [w.agg(0, 0, block(rng, fab.k), exponent=20 + w.rank) for w in b.workers]
    assert fab.send(a.workers[0].port, a.workers[0].frame(aa[0])) == []
    assert fab.send(b.workers[0].port, b.workers[0].frame(bb[0])) == []
    assert fab.send(b.workers[1].port, b.workers[1].frame(bb[1])) == []
    out = fab.send(a.workers[1].port, a.workers[1].frame(aa[1]))
    check_multicast(fab, a, out, model_result(fab, aa, aa[1]))  # A's ports only, A's sum only
    out = fab.send(b.workers[2].port, b.workers[2].frame(bb[2]))
    check_multicast(fab, b, out, model_result(fab, bb, bb[2]))


def test_a_job_cannot_reach_another_jobs_slots(program: str) -> None:
    rng = random.Random(9)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    b = fab.add_job(job_id=200, index=2, n=2, base=4, count=4)
    # B has an open slot 0 (absolute slot 4)
    b0 = b.workers[0].agg(0, 0, block(rng, fab.k))
    fab.send(b.workers[0].port, b.workers[0].frame(b0))
    before = fab.snapshot()
    w = a.workers[1]
    # A's worker naming B's job id (any rank), or A's slot 4 (= B's absolute base), or the
    # absolute slot of B's open cell
    for rank in (0, 1):
        assert w.send(0, 0, [1] * fab.k, job_id=200, rank=rank) == []
    for slot in (4, 5, 7, 8):
        assert w.send(slot, 0, [1] * fab.k) == []
    assert fab.changed_cells(before) == {}
    assert fab.job_counters(0) == {EV_UNKNOWN_SENDER: 2}
    assert fab.job_counters(1) == {EV_SLOT_RANGE: 4}
    b1 = b.workers[1].agg(0, 0, block(rng, fab.k))
    out = fab.send(b.workers[1].port, b.workers[1].frame(b1))
    check_multicast(fab, b, out, model_result(fab, [b0, b1], b1))


def test_one_host_in_two_jobs(program: str) -> None:
    """The same (IPv4, UDP port) may be a worker of two jobs, with different ranks: the
    job id selects the entry, and its rank and range."""
    rng = random.Random(10)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    shared = a.workers[0]
    host = (shared.mac, shared.ip, shared.udp_port)
    d = fab.add_job(
        job_id=400,
        index=4,
        n=2,
        base=12,
        count=2,
        ports=[40, shared.port],
        hosts=[("02:00:00:00:04:00", "10.1.4.1", 40400), host],
    )
    assert d.workers[1].ip == shared.ip
    before = fab.snapshot()
    # as job A's rank 0 it may not claim rank 1 in job A
    assert shared.send(0, 0, [1] * fab.k, rank=1) == []
    assert fab.job_counters(1) == {EV_WRONG_RANK: 1}
    # as job D's rank 1 it aggregates in D's range only
    dd = [d.workers[0].agg(1, 1, block(rng, fab.k)), d.workers[1].agg(1, 1, block(rng, fab.k))]
    fab.send(d.workers[0].port, d.workers[0].frame(dd[0]))
    out = fab.send(shared.port, d.workers[1].frame(dd[1]))
    check_multicast(fab, d, out, model_result(fab, dd, dd[1]))
    slots, cells = cells_touched(fab, before)
    assert slots == {13} and cells == {2 * 13 + 1}


def test_every_event_is_counted(program: str) -> None:
    rng = random.Random(11)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    b = fab.add_job(job_id=200, index=7, n=2, base=4, count=4, replicas=[0])
    w0, w1 = a.workers
    vals = [5] * fab.k
    # contribution, duplicate, completion, retransmit_answered
    assert w0.send(0, 0, vals) == []  # contribution
    assert w0.send(0, 0, vals) == []  # duplicate
    assert len(w1.send(0, 0, vals)) == 2  # completion: two replicas
    assert len(w1.send(0, 0, vals)) == 1  # retransmit answered
    # drops
    assert w0.send(1, 0, vals, job_id=999) == []  # unknown sender (index 0)
    assert w0.send(1, 0, vals, rank=1) == []  # wrong rank
    assert w0.send(4, 0, vals) == []  # slot range
    assert w0.send(1, 0, vals, msg_type=0) == []  # malformed
    fab.set_loss("ingress", w0.port, 0xFFFFFFFF)
    assert w0.send(1, 0, vals) == []  # loss
    fab.set_loss("ingress", w0.port, 0)
    assert fab.job_counters(1) == {
        EV_COMPLETION: 1,
        EV_RETRANSMIT: 1,
        EV_CONTRIBUTION: 1,
        EV_DUPLICATE: 1,
        EV_WRONG_RANK: 1,
        EV_SLOT_RANGE: 1,
        EV_MALFORMED: 1,
        EV_LOSS: 1,
    }
    assert fab.job_counters(0) == {EV_UNKNOWN_SENDER: 1}
    assert fab.egress_counters(1) == {EG_RESULT_SENT: 3}
    # egress: a replica whose rank has no replicas entry, and a departure loss
    aggs, out = complete(fab, b, 0, 0, rng)
    assert [p for p, _ in out] == [b.workers[0].port]
    check_result(fab, out[0][1], b.workers[0], model_result(fab, aggs, aggs[-1]))
    assert fab.egress_counters(7) == {EG_RESULT_SENT: 1, EG_NO_REPLICA: 1}
    fab.set_loss("egress", b.workers[0].port, 0xFFFFFFFF)
    aggs, out = complete(fab, b, 1, 0, rng)
    assert out == []
    assert fab.egress_counters(7) == {EG_RESULT_SENT: 1, EG_NO_REPLICA: 2, EG_LOSS: 1}
    assert fab.job_counters(7) == {EV_CONTRIBUTION: 2, EV_COMPLETION: 2}
    # only indexes 0, 1 and 7 were ever counted
    jobs, egress = fab.all_counters()
    assert {i // 16 for i, v in enumerate(jobs) if v} == {0, 1, 7}
    assert {i // 4 for i, v in enumerate(egress) if v} == {1, 7}


def test_ingress_loss_drops_all_at_max_and_nothing_at_zero(program: str) -> None:
    rng = random.Random(12)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=64)
    w0, w1 = a.workers
    fab.set_loss("ingress", w0.port, 0xFFFFFFFF)
    before = fab.snapshot()
    # a packet survives only if random() returns exactly 0xFFFFFFFF (p = 2^-32 each); the
    # switch's RNG is seeded (Fabric(seed=0)), so this is also deterministic
    for slot in range(64):
        assert w0.send(slot, 0, block(rng, fab.k)) == []
    assert fab.changed_cells(before) == {}
    assert fab.job_counters(1) == {EV_LOSS: 64}
    # the same worker from another port is not affected; threshold 0 is "off"
    fab.set_loss("ingress", w0.port, 0)
    for slot in range(64):
        aggs, out = complete(fab, a, slot, 0, rng)
        check_multicast(fab, a, out, model_result(fab, aggs, aggs[-1]))
    assert fab.job_counters(1) == {EV_LOSS: 64, EV_CONTRIBUTION: 64, EV_COMPLETION: 64}


def test_lost_contribution_is_recovered_by_its_retransmission(program: str) -> None:
    rng = random.Random(13)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=2, base=0, count=4)
    w0, w1 = a.workers
    aggs = [w.agg(2, 1, block(rng, fab.k)) for w in a.workers]
    fab.set_loss("ingress", w0.port, 0xFFFFFFFF)
    assert fab.send(w0.port, w0.frame(aggs[0])) == []
    fab.set_loss("ingress", w0.port, 0)
    assert fab.send(w1.port, w1.frame(aggs[1])) == []
    # the retransmission is an ordinary contribution: it completes the slot (multicast)
    out = fab.send(w0.port, w0.frame(aggs[0]))
    check_multicast(fab, a, out, model_result(fab, aggs, aggs[0]))
    # a lost result: egress loss on worker 1's port; its retransmission gets a unicast
    aggs2 = [w.agg(2, 0, block(rng, fab.k)) for w in a.workers]
    fab.set_loss("egress", w1.port, 0xFFFFFFFF)
    fab.send(w0.port, w0.frame(aggs2[0]))
    out = fab.send(w1.port, w1.frame(aggs2[1]))
    assert [p for p, _ in out] == [w0.port]
    fab.set_loss("egress", w1.port, 0)
    out = fab.send(w1.port, w1.frame(aggs2[1]))
    assert [p for p, _ in out] == [w1.port]
    check_result(fab, out[0][1], w1, model_result(fab, aggs2, aggs2[1], retransmit=True))
    assert fab.egress_counters(1) == {EG_RESULT_SENT: 2 + 1 + 1, EG_LOSS: 1}


def test_egress_loss_hits_unicast_answers_too(program: str) -> None:
    rng = random.Random(14)
    fab = Fabric(program)
    a = fab.add_job(job_id=100, index=1, n=1, base=0, count=1)
    w = a.workers[0]
    g = w.agg(0, 0, block(rng, fab.k))
    assert len(fab.send(w.port, w.frame(g))) == 1
    fab.set_loss("egress", w.port, 0xFFFFFFFF)
    assert fab.send(w.port, w.frame(g)) == []
    assert fab.job_counters(1) == {EV_COMPLETION: 1, EV_RETRANSMIT: 1}
    assert fab.egress_counters(1) == {EG_RESULT_SENT: 1, EG_LOSS: 1}


@pytest.mark.parametrize("side", ["ingress", "egress"])
def test_loss_is_seeded_and_proportional(program: str, side: str) -> None:
    """Threshold 2^31 drops about half; two switches with the same seed drop the same ones."""

    def run(seed: int) -> list[bool]:
        fab = Fabric(program, seed=seed)
        a = fab.add_job(job_id=100, index=1, n=1, base=0, count=1)
        w = a.workers[0]
        fab.set_loss(side, w.port, 0x80000000)
        g = w.agg(0, 0, [1] * fab.k)
        kept = [bool(fab.send(w.port, w.frame(g))) for _ in range(400)]
        if side == "ingress":
            lost = fab.job_counters(1).get(EV_LOSS, 0)
        else:
            lost = fab.egress_counters(1).get(EG_LOSS, 0)
        assert lost == kept.count(False)
        return kept

    first = run(1)
    assert first == run(1)
    assert first != run(2)
    assert 140 <= first.count(False) <= 260  # Binomial(400, 1/2): 6 standard deviations


def test_loss_never_touches_ordinary_traffic(program: str) -> None:
    fab = Fabric(program)
    fab.flood_group([1, 2, 3])
    fab.add_l2("02:00:00:00:00:02", "to_port", [2])
    for port in (1, 2, 3):
        fab.set_loss("ingress", port, 0xFFFFFFFF)
        fab.set_loss("egress", port, 0xFFFFFFFF)
    raw = udp_frame(
        eth_dst="02:00:00:00:00:02",
        eth_src="02:00:00:00:00:01",
        ip_src="10.1.1.1",
        ip_dst="10.1.1.2",
        sport=1,
        dport=2,
        payload=b"hello",
    )
    assert fab.send(1, raw) == [(2, raw)]
    arp = arp_frame(1, sha="02:00:00:00:00:01", spa="10.1.1.1", tpa=SWITCH_IP)
    out = fab.send(1, arp)
    assert [p for p, _ in out] == [1]
    assert parse_arp(out[0][1])["sha"] == SWITCH_MAC
