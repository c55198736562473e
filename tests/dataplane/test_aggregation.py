"""Aggregation semantics of both programs (docs/protocol.md, "Update rules" and "Shadow sets").

One worker; n workers in every arrival order; the n−1 absorbed contributions; a duplicate
into an open slot that is never added; a retransmission after completion answered by
unicast out of its ingress port with FLAG_RETRANSMIT; set alternation with the implicit
reset; exponent maximum (unsigned); the OR of the non-finite bits, reset with the cell; int32 wrap-around at the limits; header-only blocks;
K = 256 and 1024 (payloads of K − 1 and K + 1 elements are in test_bad_input.py). Every result frame is checked field by field against an independent model
(fabric.model_result), never against the switch's own output.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest
from fabric import (
    EG_RESULT_SENT,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_DUPLICATE,
    EV_RETRANSMIT,
    FLAG_END,
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    INT32_MAX,
    INT32_MIN,
    MSG_SPARSE,
    NEXT_END,
    R_BITMAPS,
    R_COUNTS,
    R_EXPONENTS,
    Agg,
    Fabric,
    Job,
    check_multicast,
    check_result,
    decode_agg,
    model_result,
    parse_frame,
)


def rand_block(rng: random.Random, k: int) -> tuple[int, ...]:
    return tuple(rng.randint(INT32_MIN, INT32_MAX) for _ in range(k))


Block = tuple[int, ...] | None


def contribute(
    fab: Fabric, job: Job, slot: int, set_: int, blocks: dict[int, Block], **kw: int
) -> dict[int, Agg]:
    """Aggs of ranks in ``blocks`` (rank -> values or None) with distinct packet ids."""
    return {
        r: job.workers[r].agg(slot, set_, v, packet_id=1000 * slot + r, block=slot, **kw)
        for r, v in blocks.items()
    }


def test_one_worker(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=7, index=1, n=1, base=0, count=8)
    w = job.workers[0]
    values = tuple(range(-32, 32))
    a = w.agg(
        3, 0, values, exponent=130, packet_id=0xDEADBEEF, block=3, next=0x1234, nonfinite=0x5A
    )
    out = fab.send(w.port, w.frame(a))
    # the single contribution completes the slot: one multicast replica, to the worker
    assert len(out) == 1 and out[0][0] == w.port
    expect = Agg(
        fab.msg_type, FLAG_RESULT, 0, 7, 0, 3, 130, 0x5A, 0xDEADBEEF, 3, 0x1234, values, job.key
    )
    assert expect == model_result(fab, [a], a)
    check_result(fab, out[0][1], w, expect)
    assert fab.job_counters(1) == {EV_COMPLETION: 1}
    assert fab.egress_counters(1) == {EG_RESULT_SENT: 1}
    assert fab.job_counters(0) == {}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_n_workers_in_any_order(program: str, n: int) -> None:
    rng = random.Random(n)
    fab = Fabric(program)
    job = fab.add_job(job_id=42, index=3, n=n, base=100, count=200)
    orders = list(itertools.permutations(range(n)))
    if len(orders) > 40:
        orders = rng.sample(orders, 40)
    for slot, order in enumerate(orders):
        aggs = contribute(fab, job, slot, slot % 2, {r: rand_block(rng, fab.k) for r in range(n)})
        aggs = {
            r: replace(a, exponent=rng.randint(0, 255), next=rng.randint(0, 99))
            for r, a in aggs.items()
        }
        for i, r in enumerate(order):
            w = job.workers[r]
            out = fab.send(w.port, w.frame(aggs[r]))
            if i < n - 1:
                assert out == [], f"contribution {i + 1} of {n} must be absorbed"
            else:
                check_multicast(fab, job, out, model_result(fab, list(aggs.values()), aggs[r]))
    counters = {EV_COMPLETION: len(orders)}
    if n > 1:
        counters[EV_CONTRIBUTION] = (n - 1) * len(orders)
    assert fab.job_counters(3) == counters
    assert fab.egress_counters(3) == {EG_RESULT_SENT: n * len(orders)}


def test_duplicate_into_open_slot_is_not_added(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=9, index=2, n=3, base=10, count=4)
    w0, w1, w2 = job.workers
    a0 = w0.agg(1, 0, [1] * fab.k, exponent=100, next=50)
    a1 = w1.agg(1, 0, [10] * fab.k, exponent=101, next=40)
    a2 = w2.agg(1, 0, [100] * fab.k, exponent=102, next=60, packet_id=77)
    cell = 2 * (10 + 1)
    assert fab.send(w0.port, w0.frame(a0)) == []
    # the identical retransmission, and a differing one (bigger exponent, smaller next,
    # other lanes): a duplicate only reads the cell, so neither changes it
    assert fab.send(w0.port, w0.frame(a0)) == []
    odd = replace(a0, exponent=255, next=0, values=(999,) * fab.k)
    assert fab.send(w0.port, w0.frame(odd)) == []
    assert fab.pipeline.registers[R_COUNTS].cp_read(cell) & 0x3F == 1
    assert fab.lanes(cell) == (1,) * fab.k
    assert fab.pipeline.registers[R_EXPONENTS].cp_read(cell) == 100
    assert fab.send(w1.port, w1.frame(a1)) == []
    assert fab.send(w1.port, w1.frame(a1)) == []
    assert fab.pipeline.registers[R_COUNTS].cp_read(cell) & 0x3F == 2
    out = fab.send(w2.port, w2.frame(a2))
    expect = model_result(fab, [a0, a1, a2], a2)
    assert expect.values == (111,) * fab.k and expect.exponent == 102
    check_multicast(fab, job, out, expect)
    assert fab.job_counters(2) == {EV_CONTRIBUTION: 2, EV_DUPLICATE: 3, EV_COMPLETION: 1}


def test_retransmission_after_completion_is_answered_by_unicast(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=9, index=2, n=3, base=10, count=4)
    rng = random.Random(5)
    aggs = contribute(fab, job, 2, 1, {r: rand_block(rng, fab.k) for r in range(3)}, exponent=120)
    for r in (2, 0, 1):
        out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
    check_multicast(fab, job, out, model_result(fab, list(aggs.values()), aggs[1]))
    # worker 0 lost its result and resends the identical packet: only it gets the stored
    # result, by unicast, out of the port the retransmission came in on, to its own address
    for in_port in (job.workers[0].port, 99):
        w0 = job.workers[0]
        out = fab.send(in_port, w0.frame(aggs[0]))
        assert [p for p, _ in out] == [in_port]
        expect = model_result(fab, list(aggs.values()), aggs[0], retransmit=True)
        assert expect.flags & (FLAG_RESULT | FLAG_RETRANSMIT) == FLAG_RESULT | FLAG_RETRANSMIT
        assert expect.rank == 0 and expect.packet_id == aggs[0].packet_id
        check_result(fab, out[0][1], w0, expect)
    assert fab.job_counters(2) == {EV_CONTRIBUTION: 2, EV_COMPLETION: 1, EV_RETRANSMIT: 2}
    assert fab.egress_counters(2) == {EG_RESULT_SENT: 3 + 2}


def test_header_only_retransmission_answer(program: str) -> None:
    """A slot where nobody sent a payload answers header-only, multicast and unicast."""
    fab = Fabric(program)
    job = fab.add_job(job_id=9, index=2, n=2, base=0, count=4)
    aggs = contribute(fab, job, 0, 0, {0: None, 1: None}, exponent=0)
    aggs[0] = replace(aggs[0], exponent=140, next=NEXT_END)
    aggs[1] = replace(aggs[1], exponent=135, next=NEXT_END)
    assert fab.send(job.workers[0].port, job.workers[0].frame(aggs[0])) == []
    out = fab.send(job.workers[1].port, job.workers[1].frame(aggs[1]))
    expect = model_result(fab, list(aggs.values()), aggs[1])
    assert expect.values is None and expect.flags & FLAG_NO_PAYLOAD and expect.exponent == 140
    check_multicast(fab, job, out, expect)
    assert all(len(raw) == 66 for _, raw in out)
    out = fab.send(job.workers[0].port, job.workers[0].frame(aggs[0]))
    check_result(
        fab,
        out[0][1],
        job.workers[0],
        model_result(fab, list(aggs.values()), aggs[0], retransmit=True),
    )
    end = FLAG_END if program == "sparse" else 0
    assert decode_agg(parse_frame(out[0][1]).payload).flags == (
        FLAG_RESULT | FLAG_RETRANSMIT | FLAG_NO_PAYLOAD | end
    )


@pytest.mark.parametrize("first_has_payload", [True, False])
def test_mixed_payload_and_header_only(program: str, first_has_payload: bool) -> None:
    """Zero blocks travel header-only; they count as K zeros. A header-only first
    contribution starts the lanes at 0 even in a cell that held an earlier result."""
    fab = Fabric(program)
    job = fab.add_job(job_id=5, index=1, n=3, base=0, count=2)
    rng = random.Random(1)
    # an earlier use of set 0 and of set 1 leaves old sums in both cells of slot 1
    for set_ in (0, 1):
        old = contribute(fab, job, 1, set_, {r: rand_block(rng, fab.k) for r in range(3)})
        for a in old.values():
            out = fab.send(job.workers[a.rank].port, job.workers[a.rank].frame(a))
        check_multicast(fab, job, out, model_result(fab, list(old.values()), a))
    blocks = {0: rand_block(rng, fab.k), 1: None, 2: rand_block(rng, fab.k)}
    order = [0, 1, 2] if first_has_payload else [1, 0, 2]
    aggs = contribute(fab, job, 1, 0, blocks, exponent=9)
    for r in order:
        out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
    expect = model_result(fab, list(aggs.values()), aggs[order[-1]])
    assert expect.values is not None and expect.flags & FLAG_NO_PAYLOAD == 0
    check_multicast(fab, job, out, expect)


def test_set_alternation(program: str) -> None:
    """Each use flips the set; contributing to set s frees the worker's bit in set 1−s, and
    the stored result of 1−s stays answerable until every worker moved on."""
    fab = Fabric(program)
    job = fab.add_job(job_id=3, index=4, n=2, base=20, count=8)
    w0, w1 = job.workers
    bitmaps = fab.pipeline.registers[R_BITMAPS]
    slot, abs_slot = 5, 25
    rng = random.Random(2)

    def use(
        set_: int, exps: tuple[int, int], nexts: tuple[int, int], nf: tuple[int, int] = (0, 0)
    ) -> dict[int, Agg]:
        return {
            r: job.workers[r].agg(
                slot,
                set_,
                rand_block(rng, fab.k),
                exponent=exps[r],
                next=nexts[r],
                nonfinite=nf[r],
                packet_id=rng.getrandbits(32),
                block=rng.getrandbits(32),
            )  # fmt: skip
            for r in (0, 1)
        }

    u0 = use(0, (200, 10), (7, 8), (0x1, 0x4))  # non-finite bits: OR'ed like the max
    assert fab.send(w0.port, w0.frame(u0[0])) == []
    out = fab.send(w1.port, w1.frame(u0[1]))
    check_multicast(fab, job, out, model_result(fab, list(u0.values()), u0[1]))
    assert bitmaps.cp_read(abs_slot) == 0b11  # set 0: both; set 1: none

    u1 = use(1, (3, 4), (NEXT_END, 30), (0x2, 0))
    assert fab.send(w0.port, w0.frame(u1[0])) == []
    # worker 0's bit moved from set 0 to set 1 (the implicit reset)
    assert bitmaps.cp_read(abs_slot) == (0b01 << 32) | 0b10
    # worker 1 still waits for set 0's result: its retransmission gets it
    out = fab.send(w1.port, w1.frame(u0[1]))
    assert [p for p, _ in out] == [w1.port]
    check_result(fab, out[0][1], w1, model_result(fab, list(u0.values()), u0[1], retransmit=True))
    out = fab.send(w1.port, w1.frame(u1[1]))
    # set 1's sum has nothing of set 0 in it; exponent and next are set 1's own
    check_multicast(fab, job, out, model_result(fab, list(u1.values()), u1[1]))
    assert bitmaps.cp_read(abs_slot) == 0b11 << 32

    # set 0 again: the first contribution overwrites (lanes, exponent, next, count, and the
    # non-finite bits: set 0's stored 0x5 is gone)
    u2 = use(0, (1, 2), (100, 90))
    out = fab.send(w1.port, w1.frame(u2[1]))
    assert out == []
    out = fab.send(w0.port, w0.frame(u2[0]))
    expect = model_result(fab, list(u2.values()), u2[0])
    assert expect.nonfinite == 0
    check_multicast(fab, job, out, expect)
    u3 = use(1, (0, 0), (NEXT_END, NEXT_END))
    fab.send(w0.port, w0.frame(u3[0]))
    out = fab.send(w1.port, w1.frame(u3[1]))
    check_multicast(fab, job, out, model_result(fab, list(u3.values()), u3[1]))
    assert fab.job_counters(4) == {EV_CONTRIBUTION: 4, EV_COMPLETION: 4, EV_RETRANSMIT: 1}


@pytest.mark.parametrize(
    "exponents",
    [(0, 200, 7, 128), (255, 1, 0, 254), (0, 0, 0, 0), (127, 128, 129, 126), (1, 2, 3, 4)],
)
def test_exponent_maximum_is_unsigned(program: str, exponents: tuple[int, ...]) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=11, index=1, n=4, base=0, count=4)
    for slot, header_only in enumerate((False, True)):
        aggs = contribute(
            fab, job, slot, 0, {r: None if header_only else (r,) * fab.k for r in range(4)}
        )
        aggs = {r: replace(a, exponent=exponents[r]) for r, a in aggs.items()}
        for r in range(4):
            out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
        expect = model_result(fab, list(aggs.values()), aggs[3])
        assert expect.exponent == max(exponents)
        check_multicast(fab, job, out, expect)


LIMIT_PAIRS = [
    ((INT32_MAX, 1), INT32_MIN),
    ((INT32_MIN, -1), INT32_MAX),
    ((INT32_MAX, INT32_MAX), -2),
    ((INT32_MIN, INT32_MIN), 0),
    ((INT32_MAX, INT32_MIN), -1),
    ((-1, 1), 0),
    ((0, 0), 0),
    ((INT32_MAX, 0), INT32_MAX),
    ((INT32_MIN, 0), INT32_MIN),
    ((-(2**30), -(2**30)), INT32_MIN),
    ((2**30, 2**30), INT32_MIN),
]


def test_int32_wraps_at_the_limits(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=12, index=1, n=2, base=0, count=4)
    lanes = [LIMIT_PAIRS[i % len(LIMIT_PAIRS)] for i in range(fab.k)]
    a = job.workers[0].agg(0, 0, [p[0][0] for p in lanes])
    b = job.workers[1].agg(0, 0, [p[0][1] for p in lanes])
    fab.send(job.workers[0].port, job.workers[0].frame(a))
    out = fab.send(job.workers[1].port, job.workers[1].frame(b))
    literal = tuple(p[1] for p in lanes)  # written by hand, not by the model
    expect = model_result(fab, [a, b], b)
    assert expect.values == literal
    check_multicast(fab, job, out, expect)


def test_eight_workers_at_int32_max(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=13, index=1, n=8, base=0, count=1)
    aggs = [
        w.agg(0, 0, [INT32_MAX] * (fab.k // 2) + [INT32_MIN] * (fab.k // 2)) for w in job.workers
    ]
    for w, a in zip(job.workers, aggs, strict=True):
        out = fab.send(w.port, w.frame(a))
    # 8 * (2^31 - 1) = 2^34 - 8 = -8 (mod 2^32); 8 * -2^31 = -2^34 = 0 (mod 2^32)
    literal = (-8,) * (fab.k // 2) + (0,) * (fab.k // 2)
    assert model_result(fab, aggs, aggs[-1]).values == literal
    check_multicast(fab, job, out, model_result(fab, aggs, aggs[-1]))


def test_dense_echoes_next_without_end_flag() -> None:
    fab = Fabric("dense")
    job = fab.add_job(job_id=1, index=1, n=2, base=0, count=1)
    a = job.workers[0].agg(0, 0, [1] * 64, next=5)
    b = job.workers[1].agg(0, 0, [2] * 64, next=NEXT_END)
    fab.send(job.workers[0].port, job.workers[0].frame(a))
    out = fab.send(job.workers[1].port, job.workers[1].frame(b))
    expect = Agg(1, FLAG_RESULT, 1, 1, 0, 0, 0, 0, 0, 0, NEXT_END, (3,) * 64, job.key)
    check_multicast(fab, job, out, expect)


def test_sparse_program_also_aggregates_dense_messages() -> None:
    """One job can use both modes on the sparse program (mode="auto" in the host agent):
    a dense message is aggregated as in the dense program, and never ends a stream."""
    fab = Fabric("sparse")
    job = fab.add_job(job_id=1, index=1, n=2, base=0, count=1)
    a = job.workers[0].agg(0, 0, [1] * 64, msg_type=1, next=NEXT_END)
    b = job.workers[1].agg(0, 0, [2] * 64, msg_type=1, next=NEXT_END)
    assert fab.send(job.workers[0].port, job.workers[0].frame(a)) == []
    out = fab.send(job.workers[1].port, job.workers[1].frame(b))
    expect = Agg(1, FLAG_RESULT, 1, 1, 0, 0, 0, 0, 0, 0, NEXT_END, (3,) * 64, job.key)
    check_multicast(fab, job, out, expect)


@pytest.mark.parametrize(
    ("nexts", "minimum"),
    [((9, 3, NEXT_END), 3), ((NEXT_END,) * 3, NEXT_END), ((0, NEXT_END, 1), 0), ((7, 7, 7), 7)],
)
def test_sparse_next_minimum_and_end(nexts: tuple[int, ...], minimum: int) -> None:
    fab = Fabric("sparse")
    job = fab.add_job(job_id=2, index=1, n=3, base=0, count=2)
    aggs = {r: job.workers[r].agg(1, 0, (r + 1,) * 64, next=nexts[r], block=4) for r in range(3)}
    for r in (1, 2, 0):
        out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
    expect = model_result(fab, list(aggs.values()), aggs[0])
    assert expect.next == minimum
    assert bool(expect.flags & FLAG_END) == (minimum == NEXT_END)
    check_multicast(fab, job, out, expect)
    out = fab.send(job.workers[2].port, job.workers[2].frame(aggs[2]))
    answer = model_result(fab, list(aggs.values()), aggs[2], retransmit=True)
    check_result(fab, out[0][1], job.workers[2], answer)


@pytest.mark.parametrize(
    "program_k", [("dense", 256), ("sparse", 256), ("dense", 1024), ("sparse", 1024)]
)
def test_large_k_smoke(program_k: tuple[str, int]) -> None:
    """K = 256 and K = 1024 (software targets): a frame of 66 + 4 K bytes (1,090 and 4,162)."""
    program, k = program_k
    fab = Fabric(program, k=k)
    assert fab.full_len == 66 + 4 * k == {256: 1090, 1024: 4162}[k]
    job = fab.add_job(job_id=77, index=9, n=2, base=8000, count=192)
    rng = random.Random(256)
    aggs = contribute(fab, job, 191, 1, {0: rand_block(rng, k), 1: rand_block(rng, k)}, exponent=3)
    assert fab.send(job.workers[1].port, job.workers[1].frame(aggs[1])) == []
    out = fab.send(job.workers[0].port, job.workers[0].frame(aggs[0]))
    check_multicast(fab, job, out, model_result(fab, list(aggs.values()), aggs[0]))
    # a K = 64 frame is malformed for a K = 256 build
    small = job.workers[0].frame(replace(aggs[0], values=(1,) * 64, slot=0))
    assert fab.send(job.workers[0].port, small) == []
    assert fab.job_counters(9) == {EV_CONTRIBUTION: 1, EV_COMPLETION: 1, 11: 1}


def test_sparse_message_type_is_checked_per_program(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=1, index=1, n=1, base=0, count=1)
    other = 2 if program == "dense" else 3  # the sparse program takes types 1 and 2
    out = job.workers[0].send(0, 0, [1] * 64, msg_type=other)
    assert out == [] and fab.job_counters(1) == {11: 1}
    out = job.workers[0].send(0, 0, [1] * 64)
    assert len(out) == 1
    assert decode_agg(parse_frame(out[0][1]).payload).msg_type == fab.msg_type
    assert fab.msg_type == (MSG_SPARSE if program == "sparse" else 1)


def test_results_leave_from_the_switch_mac_whatever_the_trigger_was_sent_to(program: str) -> None:
    fab = Fabric(program)
    job = fab.add_job(job_id=7, index=1, n=2, base=0, count=4)
    w0, w1 = job.workers
    a0, a1 = w0.agg(0, 0, [1] * fab.k), w1.agg(0, 0, [2] * fab.k)
    fab.send(w0.port, w0.frame(a0))
    out = fab.send(w1.port, w1.frame(a1, eth_dst="ff:ff:ff:ff:ff:ff"))
    check_multicast(fab, job, out, model_result(fab, [a0, a1], a1))
    out = fab.send(w0.port, w0.frame(a0, eth_dst="02:12:34:56:78:9a"))
    check_result(fab, out[0][1], w0, model_result(fab, [a0, a1], a0, retransmit=True))
