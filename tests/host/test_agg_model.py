"""The switch model itself, rule by rule (docs/protocol.md, "Update rules"), so the
protocol tests rest on a model that is checked on its own."""

from __future__ import annotations

import struct

import numpy as np
from agg_model import END, NEXT_END, NO_PAYLOAD, RESULT, RETRANSMIT, ModelSwitch

HDR = struct.Struct(">BBHHBBIIII")
K = 4


def pkt(rank, st, slot, values=None, *, exp=0, nxt=0, pid=1, block=0, msg=1, job=5, key=0) -> bytes:
    flags = NO_PAYLOAD if values is None else 0
    h = HDR.pack((msg << 4) | flags, rank, job, (st << 15) | slot, exp, 0, pid, block, nxt, key)
    return h if values is None else h + np.asarray(values, ">i4").tobytes()


def parse(data: bytes):
    tf, rank, job, ss, exp, res, pid, block, nxt, key = HDR.unpack_from(data)
    vals = None if tf & NO_PAYLOAD else list(np.frombuffer(data, ">i4", offset=HDR.size))
    return dict(
        flags=tf & 0xF, rank=rank, set=ss >> 15, slot=ss & 0x7FFF, exp=exp, next=nxt, vals=vals
    )


def test_first_new_complete_multicast_then_unicast_and_drops() -> None:
    sw = ModelSwitch(n=3, k=K, job_id=5, slots=2, msg_type=1)
    assert sw.receive(0, pkt(0, 0, 1, [1, 2, 3, 4], exp=130)) == []
    assert sw.receive(0, pkt(0, 0, 1, [1, 2, 3, 4], exp=130)) == []  # dup, incomplete
    assert sw.counters["duplicate"] == 1
    assert sw.receive(1, pkt(1, 0, 1, None, exp=131)) == []  # header-only adds zeros
    out = sw.receive(2, pkt(2, 0, 1, [2**31 - 1, 0, 0, -1], exp=129))
    assert [d for d, _ in out] == [0, 1, 2]
    r = parse(out[0][1])
    assert r["flags"] == RESULT and r["exp"] == 131 and r["rank"] == 2
    assert r["vals"] == [-(2**31), 2, 3, 3]  # wraps
    (ans,) = sw.receive(1, pkt(1, 0, 1, None, exp=131))  # retransmission, complete
    assert ans[0] == 1 and parse(ans[1])["flags"] == RESULT | RETRANSMIT
    assert parse(ans[1])["vals"] == r["vals"]
    assert sw.counters["completion"] == 1 and sw.counters["retransmit_answered"] == 1


def test_implicit_reset_and_overwrite() -> None:
    sw = ModelSwitch(n=2, k=K, job_id=5, slots=1, msg_type=1)
    sw.receive(0, pkt(0, 0, 0, [1, 1, 1, 1]))
    sw.receive(1, pkt(1, 0, 0, [1, 1, 1, 1]))
    assert sw.bitmap[0] == [0b11, 0]
    sw.receive(0, pkt(0, 1, 0, [5, 5, 5, 5]))  # clears rank 0's bit in set 0
    assert sw.bitmap[0] == [0b10, 0b01]
    (ans,) = sw.receive(1, pkt(1, 0, 0, [1, 1, 1, 1]))  # rank 1 still may ask for set 0
    assert parse(ans[1])["vals"] == [2, 2, 2, 2]
    out = sw.receive(1, pkt(1, 1, 0, [5, 5, 5, 5]))
    assert parse(out[0][1])["vals"] == [10] * 4 and sw.bitmap[0] == [0, 0b11]
    sw.receive(0, pkt(0, 0, 0, [7, 7, 7, 7]))  # set 0 is empty: first, overwrite
    assert sw.count[0][0] == 1 and list(sw.lanes[0, 0]) == [7] * 4


def test_sparse_next_min_and_end_flag() -> None:
    sw = ModelSwitch(n=2, k=K, job_id=5, slots=1, msg_type=2)
    sw.receive(0, pkt(0, 0, 0, None, nxt=NEXT_END, msg=2))
    ((_, d), _) = sw.receive(1, pkt(1, 0, 0, [1, 0, 0, 0], nxt=9, msg=2))
    assert parse(d)["next"] == 9 and parse(d)["flags"] == RESULT  # the minimum; a payload
    sw.receive(0, pkt(0, 1, 0, None, nxt=NEXT_END, msg=2))
    ((_, d), _) = sw.receive(1, pkt(1, 1, 0, None, nxt=NEXT_END, msg=2))
    assert parse(d)["next"] == NEXT_END and parse(d)["flags"] == RESULT | NO_PAYLOAD | END


def test_admission_drops() -> None:
    sw = ModelSwitch(n=2, k=K, job_id=5, slots=2, msg_type=1)
    assert sw.receive(0, pkt(0, 0, 0, [1, 2, 3, 4], job=6)) == []
    assert sw.receive(0, pkt(1, 0, 0, [1, 2, 3, 4])) == []  # forged rank
    assert sw.receive(0, pkt(0, 0, 2, [1, 2, 3, 4])) == []  # slot out of range
    assert sw.receive(0, pkt(0, 0, 0, [1, 2, 3, 4], msg=2)) == []  # the other program's type
    assert sw.receive(0, pkt(0, 0, 0, [1, 2, 3])) == []  # short
    c = sw.counters
    assert (c["unknown_sender"], c["wrong_rank"], c["slot_range"], c["malformed"]) == (1, 1, 1, 2)
    assert sw.bitmap == [[0, 0], [0, 0]]


def test_a_late_copy_of_an_earlier_use_is_counted_as_new() -> None:
    """Why the host tests keep one worker's packets to one slot in order (docs/host.md,
    "What the network must keep"): once use u + 1 cleared the worker's bit in set s, a
    late copy of use u looks like a new contribution and corrupts the stored result."""
    sw = ModelSwitch(n=2, k=K, job_id=5, slots=1, msg_type=1)
    use_u = pkt(0, 0, 0, [1, 1, 1, 1])
    sw.receive(0, use_u)
    sw.receive(1, pkt(1, 0, 0, [1, 1, 1, 1]))  # u complete: 2
    sw.receive(0, pkt(0, 1, 0, [3, 3, 3, 3]))  # worker 0 moves on to u + 1
    assert sw.receive(0, use_u) == []  # the late copy of u
    assert sw.count[0][0] == 3 and list(sw.lanes[0, 0]) == [3] * 4  # added again


def test_wrong_key_is_dropped_before_any_slot_state() -> None:
    sw = ModelSwitch(n=2, k=K, job_id=5, slots=1, msg_type=1, key=0xA5A5A5A5)
    assert sw.receive(0, pkt(0, 0, 0, [1, 1, 1, 1], key=0xA5A5A5A4)) == []
    assert sw.counters["bad_key"] == 1 and sw.bitmap[0] == [0, 0]
    sw.receive(0, pkt(0, 0, 0, [1, 1, 1, 1], key=0xA5A5A5A5))
    out = sw.receive(1, pkt(1, 0, 0, [2, 2, 2, 2], key=0xA5A5A5A5))
    assert parse(out[0][1])["vals"] == [3] * 4
