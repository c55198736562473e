"""End-to-end tests of the host agent through ``p4reduce-switch`` running the P4 programs.

The helpers next to this file (stack.py) are imported by name, so this folder goes on
sys.path. Each program is compiled once per session, for an aggregation UDP port nobody
else uses (the loopback adapter listens on it): a port of the stacks' fixed pool, held for
the session (``testbed.local.lease_agg_port``), so the native engine's cache hits from the
second run on and parallel runs never share a port; each module gets one switch +
registration service per program; every test's sessions are closed (their jobs deleted)
in a finally.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from p4reduce.testbed.local import AggPortLease, lease_agg_port  # noqa: E402
from stack import Stack, close_all, compile_program  # noqa: E402

POOL = 8  # worker sockets (switch ports 1..8) per stack


class Builds(dict[str, tuple[Path, int]]):
    """program -> (build prefix, aggregation port), each port leased from the stacks' pool
    for the session. ``relocate`` moves a program to another port (and compiles it again)
    when something outside the pool's locks holds its port (a stack of an older checkout on
    the same machine, say)."""

    def __init__(self, out: Path) -> None:
        super().__init__()
        self.out = out
        self.leases: dict[str, AggPortLease] = {}
        self.tried: set[int] = set()

    def add(self, name: str) -> None:
        lease = lease_agg_port(self.tried | {x.port for x in self.leases.values()})
        old = self.leases.pop(name, None)
        if old is not None:
            old.release()
        self.leases[name] = lease
        self.tried.add(lease.port)
        self[name] = (compile_program(name, self.out / str(lease.port), lease.port), lease.port)

    relocate = add

    def release(self) -> None:
        for lease in self.leases.values():
            lease.release()


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builds]:
    """Each program with its own aggregation port, so a dense and a sparse switch can run
    side by side (their adapters listen on those ports)."""
    builds = Builds(tmp_path_factory.mktemp("build"))
    try:
        for name in ("dense", "sparse"):
            builds.add(name)
        yield builds
    finally:
        builds.release()


def start_stack(builds: Builds, program: str, pool: list[socket.socket], **kw: Any) -> Stack:
    """``Stack(...).start()`` on the program's build; when its aggregation port is taken
    by a process outside the pool's locks, the program moves to another port (twice at
    most), as LocalStack does."""
    for attempt in range(3):
        prefix, port = builds[program]
        try:
            return Stack(program, prefix, port, pool, **kw).start()
        except AssertionError as err:
            if attempt == 2 or "Address already in use" not in str(err):
                raise
            builds.relocate(program)
    raise AssertionError("unreachable")


def _stack(program: str, builds: Builds) -> Iterator[Stack]:
    pool = []
    try:
        for _ in range(POOL):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            pool.append(s)
            s.bind(("127.0.0.1", 0))
        stack = start_stack(builds, program, pool)
        try:
            yield stack
        finally:
            stack.stop()
    finally:
        for s in pool:
            s.close()


@pytest.fixture(scope="module")
def dense_stack(builds: Builds) -> Iterator[Stack]:
    yield from _stack("dense", builds)


@pytest.fixture(scope="module")
def sparse_stack(builds: Builds) -> Iterator[Stack]:
    yield from _stack("sparse", builds)


class Jobs:
    """Joins jobs on a stack and remembers the sessions, so the fixture closes them."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.groups: list[list] = []

    def join(self, n: int, **kw):  # noqa: ANN201 - list[AllreduceSession]
        sessions = self.stack.join(n, **kw)
        self.groups.append(sessions)
        return sessions

    def close(self) -> None:
        for g in self.groups:
            close_all(g)


@pytest.fixture
def dense(dense_stack: Stack) -> Iterator[Jobs]:
    jobs = Jobs(dense_stack)
    try:
        yield jobs
    finally:
        jobs.close()


@pytest.fixture
def sparse(sparse_stack: Stack) -> Iterator[Jobs]:
    jobs = Jobs(sparse_stack)
    try:
        yield jobs
    finally:
        try:
            jobs.close()
        finally:
            sparse_stack.clear_loss()


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    """Every thread a test starts (workers, sessions' background threads, reflectors) has
    ended once its fixtures are torn down."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5.0
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"threads left running: {[t.name for t in extra]}"
