"""Reconciliation: bring a switch back to the registration service's desired state.

A switch that restarted (a crash, an OOM kill, an operator's restart) comes back without the
pipeline, or with the program it was started with but without jobs and static
configuration. ``reconcile`` compares what the switch runs with the service's state
(controller/state.py) and repairs it: the pipeline pushed again when the switch has none
(the service kept its P4Info and device config), the static configuration written again,
and every job that is missing re-installed exactly as before (same index, slot range,
multicast group, key, secret verifier), its slots cleared. Jobs still on the switch are left
alone (their slots hold calls in progress). A switch running *another* pipeline is never
touched: the outcome names it in one line.

``Watcher`` runs it: a thread that notices the P4Runtime stream of the service's connection
dying (the switch went away, or another controller took over), reconnects every
``interval`` seconds and reconciles once the switch answers again (docs/failures.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4reduce.proto import p4info_pb2

from .api import Controller
from .errors import ControllerError, NoPipeline
from .jobs import Job
from .pipeline import pipeline_id
from .state import StoredPipeline
from .static_config import StaticConfig


@dataclass
class Outcome:
    pushed: bool = False  # the stored pipeline was pushed again
    installed: list[int] = field(default_factory=list)  # jobs re-installed
    kept: list[int] = field(default_factory=list)  # jobs found on the switch as they were
    problem: str | None = None  # why nothing (more) was done: one line
    retry: bool = False  # nothing was done: look again later

    def summary(self) -> str:
        parts = []
        if self.pushed:
            parts.append("pipeline pushed again")
        if self.installed:
            parts.append(f"jobs {', '.join(map(str, self.installed))} re-installed")
        if self.kept:
            parts.append(f"jobs {', '.join(map(str, self.kept))} still there")
        return "; ".join(parts) or "nothing to repair"


def parse_p4info(data: bytes) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    info.ParseFromString(data)
    return info


def foreign_pipeline(running: int, stored: int) -> str:
    return (
        f"the switch runs another pipeline (identity {running:#018x}, the service's state "
        f"has {stored:#018x}): its jobs are not re-installed; push the service's program "
        "again (p4reduce-ctl push) or start the service with a state file of its own"
    )


def reconcile(
    ctl: Controller,
    stored: StoredPipeline | None,
    static: StaticConfig | None,
    jobs: Iterable[Job],
) -> Outcome:
    """Repair the switch toward the desired state (see the module docstring)."""
    out = Outcome()
    try:
        _, config = ctl.pipeline_config()
    except NoPipeline:
        if stored is None:
            out.problem = (
                "the switch has no pipeline and the service's state holds none to push: "
                "push the program (p4reduce-ctl push)"
            )
            out.retry = True
            return out
        ctl.push_config(parse_p4info(stored.p4info), stored.device_config)
        out.pushed = True
    else:
        # (a target that returns no device config cannot be compared: taken as the same)
        running = pipeline_id(config) if config else None
        if stored is not None and running is not None and running != stored.ident:
            out.problem = foreign_pipeline(running, stored.ident)
            out.retry = True
            return out
    if static is not None and static.switch_ip is not None:
        ctl.install_static(static)
    table = ctl.refresh()
    for job in sorted(jobs, key=lambda j: j.job_index):
        have = table.jobs.get(job.job_id)
        if have is None:
            ctl.restore_job(job)
            out.installed.append(job.job_id)
        elif (have.job_index, have.slot_base, have.slot_count, have.key) == (
            job.job_index,
            job.slot_base,
            job.slot_count,
            job.key,
        ):
            out.kept.append(job.job_id)
        else:
            out.problem = (
                f"job {job.job_id} is on the switch with another index, slot range or key "
                "than the service's state: left as it is"
            )
    return out


class Watcher:
    """Reconnect and reconcile whenever the service's P4Runtime stream dies.

    ``desired()`` returns (pipeline, static configuration, jobs) as the service wants them
    (read under its lock); ``done(outcome)`` is told every reconciliation (the service
    wakes its waiters); ``warn`` gets one line per event worth a person's attention."""

    def __init__(
        self,
        ctl: Controller,
        desired: Callable[[], tuple[StoredPipeline | None, StaticConfig | None, list[Job]]],
        done: Callable[[Outcome], None],
        warn: Callable[[str], None],
        interval: float = 0.2,
        connect_timeout: float = 1.0,
    ) -> None:
        self.ctl = ctl
        self.desired = desired
        self.done = done
        self.warn = warn
        self.interval = interval
        self.connect_timeout = connect_timeout
        self.down_since: float | None = None  # monotonic time the stream was seen dead
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_problem: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="p4reduce-ctl-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    @property
    def switch_up(self) -> bool:
        return self.down_since is None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.ctl.conn.primary and self.down_since is None:
                continue
            if self.down_since is None:
                self.down_since = time.monotonic()
                self.warn(f"lost the switch at {self.ctl.conn.addr}: reconnecting")
            try:
                self.ctl.reconnect(self.connect_timeout)
                outcome = reconcile(self.ctl, *self.desired())
            except ControllerError as err:
                self._problem(f"the switch at {self.ctl.conn.addr} is not back: {err}")
                continue
            if outcome.problem is not None:
                self._problem(outcome.problem)
                if outcome.retry:
                    self._stop.wait(1.0)  # another pipeline: look again later, never install
                    continue
            took = time.monotonic() - (self.down_since or time.monotonic())
            self.down_since = None
            self._last_problem = None
            self.warn(
                f"the switch at {self.ctl.conn.addr} is back after {took:.1f} s: "
                f"{outcome.summary()}"
            )
            self.done(outcome)

    def _problem(self, line: str) -> None:
        # one line per distinct problem, not one per attempt
        first = line.split(":")[0] if line.startswith("the switch at") else line
        if first != self._last_problem:
            self._last_problem = first
            self.warn(line)
