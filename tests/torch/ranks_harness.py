"""Running a scenario of ranks.py as n processes (one per rank) and collecting what they
measured; every process is stopped, also when the test fails."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4reduce.free_port import free_port

RANKS = Path(__file__).with_name("ranks.py")


def gone(pid: int) -> bool:
    """The process has exited (a zombie counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still running after at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if not gone(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@dataclass
class Ranks:
    """n running rank processes of one scenario."""

    scenario: str
    procs: list[subprocess.Popen[bytes]]
    dir: Path

    def out(self, rank: int) -> Path:
        return self.dir / f"rank{rank}.json"

    def log(self, rank: int) -> str:
        text = (self.dir / f"rank{rank}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-40:])

    def logs(self) -> str:
        return "\n".join(f"--- rank {r}\n{self.log(r)}" for r in range(len(self.procs)))

    def result(self, rank: int) -> dict[str, Any] | None:
        try:
            return json.loads(self.out(rank).read_text())
        except (OSError, ValueError):
            return None

    def wait(self, timeout: float) -> list[dict[str, Any]]:
        """Every rank's results once all exited 0; AssertionError with their logs if one
        failed or the timeout passed (every process is stopped first)."""
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(
                    f"scenario {self.scenario} timed out after {timeout:g} s\n{self.logs()}"
                ) from None
        codes = [p.returncode for p in self.procs]
        results = [self.result(r) for r in range(len(self.procs))]
        if any(codes) or any(r is None for r in results):
            raise AssertionError(f"scenario {self.scenario}: exit codes {codes}\n{self.logs()}")
        return results  # type: ignore[return-value]

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def start(
    scenario: str, n: int, tmp: Path, init: str = "env", script: Path = RANKS, **env: str
) -> Ranks:
    """Start ranks 0..n-1 of ``scenario`` of ``script`` (ranks.py or another file of
    scenarios) with ``init`` as the rendezvous ("env", "tcp" or "file:PATH"); each in its
    own process group, so a kill reaches its children too."""
    port = free_port("tcp")
    procs = []
    for rank in range(n):
        e = (
            os.environ
            | env
            | {
                "RANK": str(rank),
                "WORLD_SIZE": str(n),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "P4T_INIT": init,
                "P4T_OUT": str(tmp / f"rank{rank}.json"),
                "OMP_NUM_THREADS": "1",  # n ranks share 2 cores with the switch
            }
        )
        with open(tmp / f"rank{rank}.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script), scenario],
                    env=e,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
    return Ranks(scenario, procs, tmp)


def run(scenario: str, n: int, tmp: Path, timeout: float = 90, **kw: str) -> list[dict[str, Any]]:
    ranks = start(scenario, n, tmp, **kw)
    try:
        return ranks.wait(timeout)
    finally:
        ranks.kill()
