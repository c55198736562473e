"""testbed/cpu.py (where the CPU goes during a measured window) and the worker's interleaved
item groups, without Mininet."""

from __future__ import annotations

import os

import pytest
from p4reduce.testbed import cpu
from p4reduce.testbed.worker import call_order, de_bruijn_pairs, item_groups

pytestmark = pytest.mark.timeout(30)

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
h1-eth0: 4162000    1000    0    0    0     0          0         0  8324000     2000    0    0    0     0       0          0
"""
STAT = "cpu  100 0 50 1000 3 0 7 2 0 0\ncpu0 50 0 25 500 1 0 3 1 0 0\n"
SOFTIRQS = """                    CPU0       CPU1
          HI:          0          0
       TIMER:         10         20
      NET_TX:          1          2
      NET_RX:        100        200
"""


def test_parsers_read_the_kernels_formats() -> None:
    assert cpu.link_counters("h1-eth0", NET_DEV) == (1000, 2000, 4162000, 8324000)
    assert cpu.link_counters("h2-eth0", NET_DEV) is None
    assert cpu.machine_stat(STAT) == (100, 0, 50, 1000, 3, 0, 7, 2)
    assert cpu.softirq_counts(SOFTIRQS) == {"TIMER": 30, "NET_TX": 3, "NET_RX": 300}


def test_window_and_per_call_arithmetic() -> None:
    a = cpu.Snapshot(t=10.0, user=1.0, sys=2.0, link=(0, 0, 0, 0),
                     procs={"switch": (0, 10, 10, 5)}, stat=(0,) * 8, softirqs={"NET_RX": 5})  # fmt: skip
    tick = cpu.TICK
    b = cpu.Snapshot(
        t=10.5, user=1.1, sys=2.3, link=(100, 200, 400, 800),
        procs={"switch": (200_000_000, 30, 40, 105)},  # 200 ms; 20 user and 30 system ticks
        stat=(int(0.3 / tick), 0, int(0.2 / tick), int(0.4 / tick), 0, 0, int(0.1 / tick), 0),
        softirqs={"NET_RX": 25},
    )  # fmt: skip
    w = cpu.window(a, b)
    assert w["wall_ms"] == pytest.approx(500.0)
    assert w["user_ms"] == pytest.approx(100.0) and w["sys_ms"] == pytest.approx(300.0)
    assert (w["rx_packets"], w["tx_packets"]) == (100, 200)
    assert w["switch_ms"] == pytest.approx(200.0) and w["switch_sys_share"] == pytest.approx(0.6)
    assert w["switch_sleeps"] == 100
    assert w["machine_softirq_ms"] == pytest.approx(100.0) and w["softirq_NET_RX"] == 20
    # a second worker that read neither the switch nor the machine
    w2 = cpu.window(cpu.Snapshot(10.0, 0.0, 0.0, (0, 0, 0, 0)),
                    cpu.Snapshot(10.5, 0.05, 0.05, (50, 400, 0, 0)))  # fmt: skip
    pc = cpu.per_call([{**w, "switch_pid": 4321}, w2], calls=2)
    assert pc["cpu_switch_pid"] == 4321
    assert pc["cpu_workers_ms"] == pytest.approx((400.0 + 100.0) / 2)
    assert pc["cpu_worker_max_ms"] == pytest.approx(200.0)
    assert pc["cpu_switch_ms"] == pytest.approx(100.0) and pc["sleeps_switch"] == 50
    assert pc["link_tx_fps"] == pytest.approx(800.0)  # the busier link: 400 frames in 0.5 s
    busy = (0.3 + 0.2 + 0.1) * 1e3  # user + system + softirq, not idle
    assert pc["cpu_machine_busy_ms"] == pytest.approx(busy / 2, rel=0.05)
    assert pc["cpu_other_ms"] == pytest.approx((busy - 200.0 - 500.0) / 2, rel=0.05)
    assert pc["cpu_capacity_ms"] == pytest.approx((os.cpu_count() or 1) * 500.0 / 2)
    assert cpu.per_call([], 3) == {} and cpu.per_call([w], 0) == {}


def test_snapshot_of_this_process() -> None:
    a = cpu.snapshot("lo", {"me": os.getpid(), "gone": 2**22 + 12345}, machine=True)
    sum(i * i for i in range(200_000))  # some CPU time
    b = cpu.snapshot("lo", {"me": os.getpid()}, machine=True)
    w = cpu.window(a, b)
    assert "gone_ms" not in w and w["me_ms"] > 0 and w["user_ms"] + w["sys_ms"] > 0
    assert w["me_sleeps"] >= 0 and w["sleeps"] >= 0
    assert w["machine_idle_ms"] >= 0 and "rx_packets" in w


def test_item_groups_interleave_only_consecutive_items_of_a_group() -> None:
    plan = [{"group": 0}, {"group": 0}, {"group": 0}, {}, {"group": 1}, {"group": 1},
            {"group": None}, {"group": None}, {"group": 1}]  # fmt: skip
    assert item_groups(plan) == [[0, 1, 2], [3], [4, 5], [6], [7], [8]]


def test_call_order_puts_every_item_after_every_item_equally_often() -> None:
    for n in range(1, 6):
        cycle = de_bruijn_pairs(n)
        pairs = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        assert sorted(pairs) == [(a, b) for a in range(n) for b in range(n)]
    order = call_order(3, [25, 25, 25])
    assert [order.count(j) for j in range(3)] == [25, 25, 25]
    follows = list(zip(order, order[1:], strict=False))
    counts = {p: follows.count(p) for p in set(follows)}
    assert len(counts) == 9 and max(counts.values()) - min(counts.values()) <= 1
    # items with fewer calls drop out when they have theirs; the others go on in order
    assert call_order(2, [3, 1]) == [0, 0, 1, 0]
    assert call_order(1, [4]) == [0, 0, 0, 0] and call_order(2, [0, 0]) == []
