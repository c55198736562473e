"""Worker threads of the failure tests (test_switch_restart.py, test_service_restart.py): each
joins a job on one of a loopback stack's sockets and runs int32 all-reduces with a known sum,
recording progress, results and how the session coped (calls run again, recovery rounds)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from p4reduce.host import AllreduceSession

SECRET = "the-secret-of-the-failure-tests"
SIZE = 20000  # a call of a few ms: a kill lands in one, or in the pause between two


def contribution(rank: int, call: int, size: int = SIZE) -> np.ndarray:
    return np.arange(size, dtype=np.int32) * (rank + 1) + call


def expected(n: int, call: int, size: int = SIZE) -> np.ndarray:
    return np.arange(size, dtype=np.int32) * (n * (n + 1) // 2) + n * call


@dataclass
class Job:
    """``n`` ranks of job ``job_id`` on the stack's sockets ``first .. first + n - 1``,
    each running ``calls`` all-reduces in a thread of its own."""

    stack: Any
    job_id: int
    n: int
    calls: int
    first: int = 0
    progress: list[int] = field(default_factory=list)
    out: dict[int, Any] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Job:
        self.progress = [0] * self.n
        self.threads = [
            threading.Thread(target=self._rank, args=(r,), daemon=True) for r in range(self.n)
        ]
        for t in self.threads:
            t.start()
        return self

    def wait_progress(self, calls: int, timeout: float = 60.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while min(self.progress) < calls:
            alive = all(t.is_alive() for t in self.threads)
            if not alive or time.monotonic() > deadline:
                raise AssertionError(f"job {self.job_id}: progress {self.progress}, {self.out}")
            time.sleep(0.01)
        return list(self.progress)

    def finish(self, timeout: float = 120.0) -> dict[int, Any]:
        """Every rank's outcome; AssertionError unless all calls came back exact."""
        for t in self.threads:
            t.join(timeout)
        assert not any(t.is_alive() for t in self.threads), self.progress
        for r in range(self.n):
            got = self.out[r]
            assert not isinstance(got, BaseException), f"rank {r}: {got!r}"
            assert len(got["results"]) == self.calls
            for i, y in enumerate(got["results"]):
                assert np.array_equal(y, expected(self.n, i)), f"rank {r} call {i}"
        return self.out

    def _rank(self, rank: int) -> None:
        try:
            with AllreduceSession.join(
                self.stack.url,
                self.job_id,
                rank,
                self.n,
                sock=self.stack.sockets[self.first + rank],
                switch_port=self.first + rank + 1,
                secret=SECRET,
                timeout=60,
            ) as s:
                got, longest = [], 0.0
                for i in range(self.calls):
                    t0 = time.monotonic()
                    got.append(s.allreduce(contribution(rank, i)))
                    longest = max(longest, time.monotonic() - t0)
                    self.progress[rank] = i + 1
                    time.sleep(0.01)  # the training step between two all-reduces
                self.out[rank] = {
                    "results": got,
                    "retried": s.retried,
                    "recoveries": s.recoveries,
                    "longest": longest,
                }
        except BaseException as err:  # noqa: BLE001 - reported by finish()
            self.out[rank] = err
