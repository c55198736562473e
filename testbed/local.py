"""The loopback stack of the testbed: ``p4reduce.stack.LoopbackStack`` (the embedded switch
and the registration service, started through their commands) plus worker processes
(``python -m p4reduce.testbed.worker``) that get the stack's sockets by file descriptor
(``pass_fds``), join the job at the service and run their calls.

The stack itself is a library module (``p4reduce/stack/``) because the torch backend starts
one too; this module keeps what only the testbed needs, and re-exports the stack's names for
the testbed's other modules, the benchmarks and the examples.

    with LocalStack(ports=3, program="dense") as stack:
        procs = stack.spawn_workers(job_id=1, n=3, plan=[...])
        results = stack.wait_workers(procs, timeout=60)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..controller.credentials import JOB_SECRET_ENV, new_secret
from ..stack.agg_ports import AGG_PORT_LOCKS, AGG_PORT_POOL, AggPortLease, lease_agg_port
from ..stack.loopback import PROGRAMS, SWITCH_IP, SWITCH_MAC, LoopbackStack
from ..stack.process import (
    BIN,
    Proc,
    Stack,
    StackError,
    command,
    die_with_parent_preexec,
    failed,
    find_p4src,
    last_line,
    last_line_of,
    run_ctl,
    stop_signals_held,
    terminate,
)

__all__ = [
    "AGG_PORT_LOCKS",
    "AGG_PORT_POOL",
    "BIN",
    "PROGRAMS",
    "SWITCH_IP",
    "SWITCH_MAC",
    "AggPortLease",
    "LocalStack",
    "LoopbackStack",
    "Proc",
    "Stack",
    "StackError",
    "WorkerResult",
    "command",
    "die_with_parent_preexec",
    "failed",
    "find_p4src",
    "last_line",
    "last_line_of",
    "lease_agg_port",
    "run_ctl",
    "stop_signals_held",
    "terminate",
]


@dataclass
class WorkerResult:
    rank: int
    returncode: int
    lines: list[dict[str, Any]] = field(default_factory=list)  # its JSON stdout lines
    error: str = ""


class LocalStack(LoopbackStack):
    """A ``LoopbackStack`` whose workers are processes of this testbed, on the stack's own
    sockets (so ``peers`` must be None for ``spawn_workers``)."""

    _worker_seq = 0  # spawns so far: names each spawn's log files apart

    def spawn_workers(
        self,
        job_id: int,
        n: int,
        plan: Sequence[dict[str, Any]],
        *,
        timeout: float = 60.0,
        extra: Sequence[str] = (),
    ) -> list[Proc]:
        """Start n worker processes for job ``job_id``, rank r on switch port r + 1 with
        this stack's socket r; each runs ``plan`` (see testbed/worker.py)."""
        if self.peers is not None:
            raise StackError("this stack's workers bring their own sockets (peers=...)")
        if not 1 <= n <= self.ports:
            raise StackError(f"{n} workers: this stack has {self.ports} worker ports")
        self._worker_seq += 1
        procs = []
        plan_text = json.dumps(list(plan))
        # the job's secret (docs/controller.md, "Credentials"): one per spawn, in the
        # environment, never in argv where every local user could read it
        env = {**os.environ, JOB_SECRET_ENV: new_secret()}
        for rank in range(n):
            s = self.sockets[rank]
            args = [
                sys.executable, "-m", "p4reduce.testbed.worker",
                "--url", self.url, "--job", str(job_id), "--rank", str(rank), "--n", str(n),
                "--fd", str(s.fileno()), "--switch-port", str(rank + 1),
                "--slots", str(self.slots), "--timeout", f"{timeout:g}",
                "--plan", plan_text, *extra,
            ]  # fmt: skip
            procs.append(
                self._spawn(
                    f"worker{self._worker_seq}-{rank}", args, pass_fds=[s.fileno()], env=env
                )
            )
        return procs

    def wait_workers(
        self,
        procs: Sequence[Proc],
        timeout: float,
        *,
        progress: Callable[[float, int], None] | None = None,
        progress_every: float = 5.0,
        overall: float | None = None,
    ) -> list[WorkerResult]:
        """Wait for every worker. When one fails, or the timeout passes, the others are
        stopped and StackError names the first failure. ``progress(elapsed, finished)`` is
        called every ``progress_every`` seconds. ``overall``: the time limit to name in the
        timeout's message (when the caller's limit covers more than this wait)."""
        t0 = time.monotonic()
        next_report = t0 + progress_every
        failure: str | None = None
        while True:
            running = [p for p in procs if p.alive()]
            for rank, p in enumerate(procs):
                if failure is None and failed(p.popen):
                    failure = f"worker {rank} failed: {p.error()}"
            if failure is None:
                for what in (self.switch, self.serve):
                    if what is not None and not what.alive():
                        failure = f"{what.name} exited unexpectedly: {what.error()}"
            if not running or failure is not None:
                break
            now = time.monotonic()
            if now - t0 > timeout:
                failure = f"timed out after {overall or timeout:g} s ({len(running)} of {len(procs)} workers still running)"
                break
            if progress is not None and now >= next_report:
                progress(now - t0, len(procs) - len(running))
                next_report = now + progress_every
            time.sleep(0.02)
        if failure is not None:
            for p in procs:
                if p.alive():
                    with contextlib.suppress(ProcessLookupError):
                        p.popen.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.popen.kill()
                    p.popen.wait()
            raise StackError(failure)
        results = []
        for rank, p in enumerate(procs):
            lines = []
            for text in p.stdout.read_text(errors="replace").splitlines():
                text = text.strip()
                if text.startswith("{"):
                    lines.append(json.loads(text))
            results.append(WorkerResult(rank, p.popen.returncode, lines))
        return results
