"""Interleaved rounds (testbed/mininet/rounds.py) and the CPU windows they add up
(testbed/cpu.combine): pure functions, no Mininet."""

from __future__ import annotations

import pytest
from p4reduce.testbed import cpu
from p4reduce.testbed.local import WorkerResult
from p4reduce.testbed.mininet import rounds
from p4reduce.testbed.mininet.runner import Item


@pytest.mark.parametrize(
    ("total", "n", "expected"),
    [(9, 3, [3, 3, 3]), (10, 3, [4, 3, 3]), (2, 3, [1, 1]), (1, 3, [1]), (5, 1, [5])],
)
def test_shares_split_the_calls_evenly_and_never_empty(
    total: int, n: int, expected: list[int]
) -> None:
    assert rounds.shares(total, n) == expected


def test_round_items_carry_their_share_and_end_with_the_rounds() -> None:
    items = (Item(100, "float32", "dense"), Item(100, "float32", "dense", repeat=4))
    assert [it.repeat for it in rounds.round_items(items, 6, 3, 0)] == [2, 2]
    assert [it.repeat for it in rounds.round_items(items, 6, 3, 2)] == [2, 1]
    assert rounds.round_items(items, 2, 3, 2) is None  # 2 calls: two rounds only
    assert rounds.round_job(4, 0) == 4 and rounds.round_job(4, 2) == 4 + 2 * rounds.ROUND_STRIDE


def _line(call: int, seconds: float, cpu_ms: float | None = None) -> dict:
    ln = {"item": 0, "call": call, "seconds": seconds, "job": 1}
    if cpu_ms is not None:
        ln["cpu"] = {"start": 10.0 + call, "wall_ms": 100.0, "user_ms": cpu_ms, "sys_ms": 1.0,
                     "switch_ms": 2 * cpu_ms, "switch_sys_share": 0.5, "switch_pid": 42}  # fmt: skip
    return ln


def test_merge_renumbers_the_calls_and_adds_the_cpu_windows() -> None:
    first = [WorkerResult(0, 0, [_line(0, 1.0), _line(1, 2.0, cpu_ms=3.0)]),
             WorkerResult(1, 0, [_line(0, 1.5), _line(1, 2.5, cpu_ms=5.0)])]  # fmt: skip
    second = [WorkerResult(0, 0, [_line(0, 3.0, cpu_ms=7.0)]),
              WorkerResult(1, 1, [_line(0, 3.5, cpu_ms=9.0)], error="rank 1 died")]  # fmt: skip
    merged = rounds.merge([first, second])
    assert [w.rank for w in merged] == [0, 1]
    assert [(ln["call"], ln["seconds"]) for ln in merged[0].lines] == [(0, 1.0), (1, 2.0), (2, 3.0)]
    # one window per worker, on its last line: the rounds' figures added
    assert [("cpu" in ln) for ln in merged[0].lines] == [False, False, True]
    w = merged[0].lines[-1]["cpu"]
    assert w["user_ms"] == 10.0 and w["wall_ms"] == 200.0 and w["switch_ms"] == 20.0
    assert w["start"] == 10.0 and w["switch_pid"] == 42 and w["switch_sys_share"] == 0.5
    assert merged[1].returncode == 1 and merged[1].error == "rank 1 died"


def test_combine_weights_the_system_share_by_milliseconds() -> None:
    a = {"start": 5.0, "wall_ms": 10.0, "switch_ms": 30.0, "switch_sys_share": 1.0}
    b = {"start": 2.0, "wall_ms": 10.0, "switch_ms": 10.0, "switch_sys_share": 0.0}
    c = cpu.combine([a, b])
    assert c == {"start": 2.0, "wall_ms": 20.0, "switch_ms": 40.0, "switch_sys_share": 0.75}
    assert cpu.combine([]) == {}
