"""The aggregation port pool (p4reduce.stack.agg_ports.lease_agg_port): stacks and test sessions hold a
pool port by a lock, so parallel runs, in one process or several, never pick the same one,
and a released (or dead) holder's port is taken again (the native engine's cache hit)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from p4reduce.free_port import free_port
from p4reduce.stack import agg_ports as local


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A pool of three free ports with its own lock directory, so stacks that other runs
    on this machine hold do not change what the test sees."""
    ports: list[int] = []
    while len(ports) < 3:
        p = free_port("udp")
        if p not in ports:
            ports.append(p)
    monkeypatch.setattr(local, "AGG_PORT_POOL", ports)
    monkeypatch.setattr(local, "AGG_PORT_LOCKS", tmp_path)
    return ports


def test_leases_in_one_process_differ_and_a_released_port_comes_back(pool: list[int]) -> None:
    a, b = local.lease_agg_port(), local.lease_agg_port()
    assert (a.port, b.port) == (pool[0], pool[1]) and a.pooled and b.pooled
    a.release()
    a.release()  # idempotent
    with local.lease_agg_port() as c:
        assert c.port == pool[0]  # the cache-hitting port again
        assert local.lease_agg_port({pool[2]}).port not in pool  # all held or tried: random
    b.release()


CHILD = """
import sys
from pathlib import Path
from p4reduce.stack import agg_ports as local
local.AGG_PORT_POOL = [int(p) for p in sys.argv[1].split(",")]
local.AGG_PORT_LOCKS = Path(sys.argv[2])
lease = local.lease_agg_port()
print(lease.port, flush=True)
sys.stdin.read()  # hold it until the parent closes stdin (or kills us)
"""


def test_another_process_holding_a_port_is_skipped_until_it_exits(
    pool: list[int], tmp_path: Path
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, ",".join(map(str, pool)), str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert int(child.stdout.readline()) == pool[0]
        with local.lease_agg_port() as mine:
            assert mine.port == pool[1]
        child.kill()  # however the holder ends, the kernel drops its lock
        child.wait(timeout=30)
        with local.lease_agg_port() as mine:
            assert mine.port == pool[0]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for f in (child.stdin, child.stdout):
            if f is not None:
                f.close()


def test_a_port_bound_outside_the_locks_is_skipped(pool: list[int]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", pool[0]))
        with local.lease_agg_port() as lease:
            assert lease.port == pool[1]
    with local.lease_agg_port() as lease:  # the lock of the skipped port was not kept
        assert lease.port == pool[0]
