"""Property: for 1..8 workers, any arrival order with duplicates interleaved (before and
after completion), payload or header-only contributions, non-finite bits, and int32 values including the
limits, the slot's result is the wrapped sum of each worker's block counted once; every
worker gets exactly one multicast result; duplicates before completion get nothing and
duplicates after it get exactly one unicast answer; the counters agree.
"""

from __future__ import annotations

import pytest
from fabric import (
    EG_RESULT_SENT,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_DUPLICATE,
    EV_RETRANSMIT,
    INT32_MAX,
    INT32_MIN,
    Fabric,
    check_multicast,
    check_result,
    model_result,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

K = 64
int32 = st.one_of(
    st.sampled_from([INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX]),
    st.integers(INT32_MIN, INT32_MAX),
)
block = st.one_of(st.none(), st.lists(int32, min_size=K, max_size=K).map(tuple))


@st.composite
def scenarios(draw: st.DrawFn):
    n = draw(st.integers(1, 8))
    blocks = draw(st.lists(block, min_size=n, max_size=n))
    exponents = draw(st.lists(st.integers(0, 255), min_size=n, max_size=n))
    nexts = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
    nonfinite = draw(st.lists(st.sampled_from([0, 0, 1, 2, 4, 7, 0xF8]), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    # duplicates: (rank, position in the final sequence), each after that rank's first send
    dups = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3 * n)), max_size=2 * n))
    seq = list(order)
    for rank, pos in dups:
        first = seq.index(rank)
        seq.insert(min(max(pos, first + 1), len(seq)), rank)
    slot = draw(st.integers(0, 15))
    set_ = draw(st.integers(0, 1))
    prior = draw(st.booleans())  # an earlier completed use of the other set first
    return n, blocks, exponents, nexts, nonfinite, seq, slot, set_, prior


@pytest.mark.parametrize("program", ["dense", "sparse"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios())
def test_any_order_with_duplicates(program: str, scenario) -> None:
    n, blocks, exponents, nexts, nonfinite, seq, slot, set_, prior = scenario
    fab = Fabric(program)
    job = fab.add_job(job_id=60, index=5, n=n, base=100, count=16)
    counts = {EV_COMPLETION: 0, EV_CONTRIBUTION: 0, EV_DUPLICATE: 0, EV_RETRANSMIT: 0}
    sent_results = 0
    if prior:
        old = [
            w.agg(slot, 1 - set_, (7,) * K, exponent=255, next=0, nonfinite=7) for w in job.workers
        ]
        for w, a in zip(job.workers, old, strict=True):
            out = fab.send(w.port, w.frame(a))
        check_multicast(fab, job, out, model_result(fab, old, old[-1]))
        counts[EV_COMPLETION] += 1
        counts[EV_CONTRIBUTION] += n - 1
        sent_results += n
    aggs = [
        w.agg(
            slot,
            set_,
            blocks[w.rank],
            exponent=exponents[w.rank],
            next=nexts[w.rank],
            nonfinite=nonfinite[w.rank],
            packet_id=w.rank,
        )  # fmt: skip
        for w in job.workers
    ]
    seen: set[int] = set()
    multicasts = 0
    for rank in seq:
        w = job.workers[rank]
        out = fab.send(w.port, w.frame(aggs[rank]))
        complete_before = len(seen) == n
        if rank not in seen:
            seen.add(rank)
            if len(seen) == n:  # this contribution completes the slot: one result each
                check_multicast(fab, job, out, model_result(fab, aggs, aggs[rank]))
                multicasts += 1
                counts[EV_COMPLETION] += 1
                sent_results += n
            else:
                assert out == []
                counts[EV_CONTRIBUTION] += 1
        elif complete_before:
            assert [p for p, _ in out] == [w.port]
            check_result(fab, out[0][1], w, model_result(fab, aggs, aggs[rank], retransmit=True))
            counts[EV_RETRANSMIT] += 1
            sent_results += 1
        else:
            assert out == []
            counts[EV_DUPLICATE] += 1
    assert multicasts == 1
    assert fab.job_counters(5) == {e: c for e, c in counts.items() if c}
    assert fab.egress_counters(5) == {EG_RESULT_SENT: sent_results}
    cell = 2 * (100 + slot) + set_
    assert fab.pipeline.registers["SwitchIngress.completion.counts"].cp_read(cell) & 0x3F == n
