"""Whole calls as docs/protocol.md's "Block-to-slot mapping and the host's packets" describes
them, driven packet by packet through the switch by a small host model written from that
section: dense int32 calls (every block, sets flipping across calls) and sparse calls
(priming with the first non-zero block, header-only zero blocks, the running minimum
`next`, FLAG_END ending each slot's stream). The received sums must equal the true sums.
"""

from __future__ import annotations

import random

import pytest
from fabric import (
    FLAG_END,
    FLAG_NO_PAYLOAD,
    INT32_MAX,
    INT32_MIN,
    NEXT_END,
    Agg,
    Fabric,
    Job,
    by_port,
    check_multicast,
    decode_agg,
    model_result,
    parse_frame,
    wrap32,
)


def run_round(fab: Fabric, job: Job, aggs: list[Agg], rng: random.Random) -> Agg:
    """Send one use of a slot from every worker in a random order; return the result."""
    order = list(range(job.n))
    rng.shuffle(order)
    out: list[tuple[int, bytes]] = []
    for i, r in enumerate(order):
        out = fab.send(job.workers[r].port, job.workers[r].frame(aggs[r]))
        assert (out == []) == (i < job.n - 1)
    expect = model_result(fab, aggs, aggs[order[-1]])
    check_multicast(fab, job, out, expect)
    # every worker decodes the same result (the packet it would act on)
    results = {decode_agg(parse_frame(raw).payload) for raw in by_port(out).values()}
    assert len(results) == 1
    return results.pop()


@pytest.mark.parametrize(("n", "slots", "blocks", "calls"), [(3, 4, 10, 3), (2, 8, 3, 2)])
def test_dense_int32_calls(n: int, slots: int, blocks: int, calls: int) -> None:
    rng = random.Random(n * 100 + slots)
    fab = Fabric("dense")
    job = fab.add_job(job_id=31, index=2, n=n, base=50, count=slots)
    k = fab.k
    next_set = [0] * slots  # the set of each slot's next use, kept across calls
    for call in range(calls):
        tensors = [
            [rng.choice([INT32_MIN, INT32_MAX, -1, 0, 1, rng.randint(-1000, 1000)]) for _ in range(blocks * k)]
            for _ in range(n)
        ]  # fmt: skip
        got = [0] * (blocks * k)
        for b in range(blocks):  # block b uses slot b mod S, in order (int32: no priming)
            s = b % slots
            aggs = [
                w.agg(s, next_set[s], tensors[w.rank][b * k : (b + 1) * k], block=b, packet_id=call)
                for w in job.workers
            ]
            next_set[s] ^= 1
            res = run_round(fab, job, aggs, rng)
            assert res.block == b and res.packet_id == call
            got[b * k : (b + 1) * k] = res.values
        assert got == [wrap32(sum(col)) for col in zip(*tensors, strict=True)]


def sparse_tensors(rng: random.Random, n: int, blocks: int, k: int, density: float):
    out = []
    for _ in range(n):
        t = []
        for _b in range(blocks):
            if rng.random() < density:
                t.append([rng.choice([0, rng.randint(-(2**20), 2**20)]) for _ in range(k)])
                t[-1][rng.randrange(k)] = rng.randint(1, 99)  # non-zero for sure
            else:
                t.append([0] * k)
        out.append(t)
    return out


@pytest.mark.parametrize(
    ("n", "slots", "blocks", "density"),
    [(3, 2, 11, 0.3), (4, 3, 9, 0.6), (2, 4, 4, 0.0), (1, 2, 6, 0.5), (5, 1, 7, 1.0)],
)
def test_sparse_call(n: int, slots: int, blocks: int, density: float) -> None:
    rng = random.Random(n * 1000 + blocks)
    fab = Fabric("sparse")
    k = fab.k
    job = fab.add_job(job_id=32, index=3, n=n, base=7, count=slots)
    tensors = sparse_tensors(rng, n, blocks, k, density)
    nonzero = [[any(blk) for blk in t] for t in tensors]
    exps = [[rng.randint(1, 255) for _ in range(blocks)] for _ in range(n)]
    next_set = [0] * slots
    received: dict[int, list[int]] = {}
    sent_packets = [0] * n

    def next_nonzero(w: int, s: int, after: int) -> int:
        """The smallest block > after of slot s's class that is non-zero on w, or NEXT_END."""
        for b in range(s, blocks, slots):
            if b > after and nonzero[w][b]:
                return b
        return NEXT_END

    for s in range(min(slots, blocks)):
        cls = range(s, blocks, slots)
        # priming: header-only, next = the first non-zero block >= s, exponent = the max
        # over the worker's non-zero blocks of the class
        aggs = [
            w.agg(
                s,
                next_set[s],
                None,
                block=s,
                next=next_nonzero(w.rank, s, s - 1),
                exponent=max([exps[w.rank][b] for b in cls if nonzero[w.rank][b]], default=0),
            )
            for w in job.workers
        ]
        next_set[s] ^= 1
        res = run_round(fab, job, aggs, rng)
        assert res.flags & FLAG_NO_PAYLOAD
        class_exp = res.exponent
        m = res.next
        visited = []
        while m != NEXT_END:
            assert not res.flags & FLAG_END
            aggs = [
                w.agg(
                    s,
                    next_set[s],
                    tensors[w.rank][m] if nonzero[w.rank][m] else None,
                    block=m,
                    next=next_nonzero(w.rank, s, m),
                    exponent=class_exp,
                )
                for w in job.workers
            ]
            next_set[s] ^= 1
            for w in range(n):
                sent_packets[w] += 1
            res = run_round(fab, job, aggs, rng)
            assert res.block == m and res.exponent == class_exp
            visited.append(m)
            received[m] = list(res.values or [0] * k)
            m = res.next
        assert res.flags & FLAG_END
        union = [b for b in cls if any(nonzero[w][b] for w in range(n))]
        assert visited == union
    # the sum of every block: received blocks exact, the others zero on every worker
    for b in range(blocks):
        true = [wrap32(sum(col)) for col in zip(*(t[b] for t in tensors), strict=True)]
        assert received.get(b, [0] * k) == true, b
    union_size = sum(any(nonzero[w][b] for w in range(n)) for b in range(blocks))
    assert sent_packets == [union_size] * n
