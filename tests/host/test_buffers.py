"""The session's buffer pool (host/protocol/buffers.py): arrays come back for the next call
of the same shape and dtype, never views or foreign memory, and the pool stays within its
byte budget."""

from __future__ import annotations

import threading

import numpy as np
from p4reduce.host.protocol.buffers import BufferPool


def test_a_given_array_is_taken_again_for_the_same_shape_and_dtype() -> None:
    pool = BufferPool()
    a = pool.empty((4, 8), np.int32)
    pool.give(a)
    assert pool.bytes == a.nbytes
    assert pool.empty((4, 8), np.float32) is not a  # another dtype: a fresh array
    assert pool.empty((8, 4), np.int32) is not a  # another shape too
    assert pool.empty((4, 8), np.int32) is a
    assert pool.bytes == 0


def test_zeros_and_copy_fill_a_reused_array() -> None:
    pool = BufferPool()
    a = pool.empty((3, 5), np.int32)
    a.fill(7)
    pool.give(a)
    z = pool.zeros((3, 5), np.int32)
    assert z is a and not z.any()
    pool.give(z)
    src = np.arange(15, dtype=np.int32).reshape(3, 5)
    c = pool.copy(src)
    assert c is a and np.array_equal(c, src) and not np.shares_memory(c, src)


def test_views_read_only_and_empty_arrays_are_not_kept() -> None:
    pool = BufferPool()
    base = np.zeros((4, 4), np.int32)
    pool.give(base[1:])  # a view: its base may be someone else's
    pool.give(base.T)  # not C-contiguous (and a view)
    ro = np.zeros((2, 2), np.int32)
    ro.flags.writeable = False
    pool.give(ro)
    pool.give(np.zeros((0, 4), np.int32))
    assert pool.bytes == 0


def test_the_same_array_is_kept_once_and_a_shape_keeps_at_most_two() -> None:
    pool = BufferPool()
    a, b, c = (np.zeros(10, np.int32) for _ in range(3))
    pool.give(a)
    pool.give(a)
    assert pool.bytes == a.nbytes
    pool.give(b)
    pool.give(c)
    assert pool.bytes == 2 * a.nbytes
    taken = {id(pool.empty((10,), np.int32)), id(pool.empty((10,), np.int32))}
    assert taken == {id(a), id(b)}


def test_the_byte_budget_drops_the_least_recently_given() -> None:
    pool = BufferPool(max_bytes=1000)
    old = np.zeros(100, np.int32)  # 400 bytes
    mid = np.zeros(100, np.float32)
    new = np.zeros(50, np.int32)  # 200 bytes: 1000 in all, at the budget
    big = np.zeros(251, np.int32)  # 1004 bytes: more than the budget alone
    for a in (old, mid, new):
        pool.give(a)
    assert pool.bytes == 1000
    pool.give(np.zeros(60, np.int32))  # 240 more: the oldest (old) goes
    assert pool.bytes == 840
    assert pool.empty((100,), np.int32) is not old
    assert pool.empty((100,), np.float32) is mid
    pool.give(big)
    assert pool.bytes == 440  # 200 + 240: big was never kept


def test_threads_never_get_the_same_array() -> None:
    pool = BufferPool()
    for _ in range(2):
        pool.give(np.zeros(16, np.int32))
    got: list[np.ndarray] = []
    lock = threading.Lock()

    def take() -> None:
        a = pool.empty((16,), np.int32)
        with lock:
            got.append(a)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(a) for a in got}) == 8
