"""``Controller``: the controller library in one object, over one P4Runtime connection.

    from p4reduce.controller import Controller, Member

    with Controller("127.0.0.1:9559") as ctl:          # connects and becomes primary
        ctl.push("build/dense")
        ctl.install_static(StaticConfig("10.0.0.254", "02:00:00:00:00:fe"))
        job = ctl.create_job(7, [Member.parse("0:10.0.0.1:5000:02:00:00:00:00:01:1"), ...], 64)
        ctl.stats(7); ctl.slots(7); ctl.set_loss(0.01); ctl.delete_job(7)

The job table is read from the switch on first use and then kept in memory (the long-running
``serve`` process is the source of truth while it holds the switch; ``refresh()`` re-reads it).
Every method is thread safe. Problems the switch reports but that do not stop an operation
(a switch without RegisterEntry, so ``reset`` could not zero the loss thresholds) are appended
to ``warnings``. The slot state is reached through RegisterEntry where the switch serves it,
else through control messages on its CPU port (``slot_access``; controller/slots.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from p4reduce import portmap
from p4reduce.portmap import PortMap
from p4reduce.proto import p4runtime_pb2

from . import jobs as jobs_mod
from . import loss as loss_mod
from . import pipeline, program, static_config
from . import slots as slots_mod
from . import stats as stats_mod
from .errors import Conflict, NoPipeline
from .jobs import Job, JobTable, Member
from .p4info import Schema
from .p4rt import (
    DEFAULT_ADDR,
    DEFAULT_DEVICE_ID,
    DEFAULT_ELECTION_ID,
    DELETE,
    ClientTls,
    Connection,
    WriteFailed,
    unsupported,
)
from .static_config import StaticConfig


class Controller:
    def __init__(
        self,
        grpc_addr: str = DEFAULT_ADDR,
        device_id: int = DEFAULT_DEVICE_ID,
        election_id: int = DEFAULT_ELECTION_ID,
        timeout: float | None = None,
        arbitrate: bool = True,
        tls: ClientTls | None = None,
        slot_access: str = "auto",
    ) -> None:
        """``slot_access``: "auto" (RegisterEntry if the switch serves it, else control
        messages), "registers" or "packets" (docs/controller.md, "Slot state")."""
        self.conn = Connection(grpc_addr, device_id, election_id, timeout=timeout, tls=tls)
        slots_mod.set_access(self.conn, slot_access)
        self.arbitrate = arbitrate
        self.lock = threading.RLock()
        self.warnings: list[str] = []
        self._schema: Schema | None = None
        self._cookie: int | None = None
        self._table: JobTable | None = None

    # ------------------------------------------------------------------ connection
    def connect(self, connect_timeout: float | None = None) -> Controller:
        self.conn.connect(self.arbitrate, connect_timeout)
        return self

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Controller:
        if self.conn.channel is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, message: str) -> None:
        self.warnings.append(message)

    # ------------------------------------------------------------------ pipeline
    @property
    def schema(self) -> Schema:
        """The running pipeline's P4Info (fetched once; ``NoPipeline`` when there is none)."""
        with self.lock:
            if self._schema is None:
                self._schema, self._cookie = pipeline.fetch(self.conn)
            return self._schema

    def has_pipeline(self) -> bool:
        try:
            _ = self.schema
        except NoPipeline:
            return False
        return True

    def push(self, prog: str | Path | pipeline.Program) -> dict[str, Any]:
        """Push ``build/NAME`` (or a loaded Program): the switch starts afresh, without jobs."""
        p = prog if isinstance(prog, pipeline.Program) else pipeline.load(prog)
        with self.lock:
            self._schema = None
            self._table = JobTable()
            schema = pipeline.push(self.conn, p)
            self._schema, self._cookie = schema, p.cookie
            return {
                "program": p.name,
                "device_config": str(p.device_config_path),
                "p4info": str(p.p4info_path),
                "kind": program.kind(schema),
                "k": program.lanes(schema),
                "cookie": p.cookie,
            }

    def info(self) -> dict[str, Any]:
        schema = self.schema
        table = self.jobs()
        return {
            "grpc_addr": self.conn.addr,
            "device_id": self.conn.device_id,
            "kind": program.kind(schema),
            "k": program.lanes(schema),
            "cookie": self._cookie,
            "jobs": len(table.jobs),
            "free_slots": table.free_slots(),
        }

    @property
    def kind(self) -> str:
        return program.kind(self.schema)

    @property
    def k(self) -> int:
        return program.lanes(self.schema)

    # ------------------------------------------------------------------ static configuration
    def install_static(self, cfg: StaticConfig) -> None:
        with self.lock:
            static_config.install(self.conn, self.schema, cfg)

    def static_config(self) -> StaticConfig:
        return static_config.read(self.conn, self.schema)

    # ------------------------------------------------------------------ jobs
    def jobs(self) -> JobTable:
        with self.lock:
            if self._table is None:
                self._table = jobs_mod.read_jobs(self.conn, self.schema)
            return self._table

    def refresh(self) -> JobTable:
        with self.lock:
            self._table = None
            return self.jobs()

    def list_jobs(self) -> list[Job]:
        return self.jobs().sorted()

    def get_job(self, job_id: int) -> Job:
        return self.jobs().get(job_id)

    def create_job(
        self,
        job_id: int,
        members: Iterable[Member],
        slot_count: int,
        slot_base: int | None = None,
        n: int | None = None,
        key: int | None = None,
        verifier: bytes | None = None,
    ) -> Job:
        """Validate, allocate, clear the slot range and the index's counters, install.
        ``key``: the job's data-plane key (None: a fresh random one, the normal case);
        ``verifier``: of the job's secret (credentials.verifier), stored with its entries."""
        with self.lock:
            members = list(members)
            self.check_ports(members)
            schema, table = self.schema, self.jobs()
            job = table.plan(job_id, members, slot_count, slot_base, n, key, verifier)
            return self._install(schema, table, job)

    def plan_job(
        self,
        job_id: int,
        members: Iterable[Member],
        slot_count: int,
        n: int | None = None,
        verifier: bytes | None = None,
    ) -> Job:
        """``create_job``'s validation and allocation (index, slot range, fresh key) without
        touching the switch: the registration service records the plan before installing it
        (``restore_job``)."""
        with self.lock:
            members = list(members)
            self.check_ports(members)
            return self.jobs().plan(job_id, members, slot_count, None, n, None, verifier)

    def port_map(self) -> PortMap | None:
        """The switch's ports and its UDP adapter's count of datagrams from unknown senders
        (p4reduce/portmap.py); None from a switch that does not say (BMv2)."""
        with self.lock:
            try:
                found = self.conn.read([portmap.request()], "read the switch's ports")
            except WriteFailed:  # refused: a switch without p4reduce's port entries
                return None
            return portmap.decode(found)

    def check_ports(self, members: Iterable[Member]) -> None:
        """``InvalidArgument`` naming the first member whose switch port the switch lacks or
        whose address is not that port's UDP peer (jobs.check_ports)."""
        jobs_mod.check_ports(members, self.port_map())

    def restore_job(self, job: Job) -> Job:
        """Install ``job`` exactly as given (index, slot range, multicast group, key,
        verifier): a planned job, or a job of the service's state on a switch that lost it.
        Clears its slot range and counters first, like ``create_job``."""
        with self.lock:
            schema, table = self.schema, self.jobs()
            if job.job_id in table.jobs:
                raise Conflict(f"job {job.job_id} exists already")
            if table.index_in_use(job.job_index):
                raise Conflict(f"job index {job.job_index} of job {job.job_id} is in use")
            table.allocate_slots(job.slot_count, job.slot_base)  # raises on an overlap
            return self._install(schema, table, job)

    def _install(self, schema: Schema, table: JobTable, job: Job) -> Job:
        """Clear a checked job's slot range and its index's counters, write its entries
        and multicast group, and track it (the caller holds the lock)."""
        slots_mod.clear(self.conn, schema, job.slot_base, job.slot_count)
        stats_mod.clear_job(self.conn, schema, job.job_index)
        jobs_mod.install(self.conn, schema, job)
        table.add(job)
        return job

    def pipeline_config(self) -> tuple[Any, bytes]:
        """The running pipeline's P4Info message and device config (``NoPipeline``)."""
        return pipeline.fetch_config(self.conn)

    def push_config(self, p4info: Any, device_config: bytes) -> None:
        """Push a pipeline given as P4Info message and device config bytes (the service's
        stored one), with its identity as cookie; the switch starts afresh, without jobs."""
        cookie = pipeline.pipeline_id(device_config)
        with self.lock:
            self._schema, self._table = None, JobTable()
            schema = Schema(p4info)
            program.check(schema)
            self.conn.set_pipeline(p4info, device_config, cookie=cookie)
            self._schema, self._cookie = schema, cookie

    def reconnect(self, connect_timeout: float) -> None:
        """A new channel and arbitration (after the switch went away); cached P4Info and
        job table are dropped, to be read from the switch again."""
        with self.lock:
            self.conn.close()
            self._schema, self._cookie, self._table = None, None, None
            self.conn.connect(self.arbitrate, connect_timeout)

    def delete_job(self, job_id: int) -> Job:
        """Remove the job's entries and multicast group, and clear its slots."""
        with self.lock:
            schema, table = self.schema, self.jobs()
            job = table.get(job_id)
            jobs_mod.uninstall(self.conn, schema, job)
            table.remove(job_id)
            slots_mod.clear(self.conn, schema, job.slot_base, job.slot_count)
            return job

    def clear_slots(self, job_id: int) -> Job:
        """Zero the job's slot range (bitmaps and counts), as at creation: the recovery after a
        failed call, once no worker sends."""
        with self.lock:
            job = self.jobs().get(job_id)
            slots_mod.clear(self.conn, self.schema, job.slot_base, job.slot_count)
            return job

    # ------------------------------------------------------------------ counters, slots, loss
    def stats(self, job_id: int | None = None) -> list[stats_mod.JobStats]:
        """Per job index: every job, and any index with non-zero counters (0 = unknown sender)."""
        table = self.jobs()
        ids = {j.job_index: j.job_id for j in table.jobs.values()}
        if job_id is not None:
            job = table.get(job_id)
            got = stats_mod.read(self.conn, self.schema, {job.job_index: job.job_id})
            return [got[job.job_index]]
        return list(stats_mod.read(self.conn, self.schema, ids).values())

    def slots(
        self, job_id: int, first: int = 0, count: int | None = None, values: bool = False
    ) -> tuple[Job, list[slots_mod.SlotState]]:
        job = self.get_job(job_id)
        return job, slots_mod.read(self.conn, self.schema, job, first, count, values)

    def set_loss(
        self, p: float, ports: Iterable[int] | None = None, direction: str = "both"
    ) -> int:
        with self.lock:
            return loss_mod.set_loss(self.conn, self.schema, p, ports, direction)

    def loss(self, ports: Iterable[int] | None = None) -> dict[int, dict[str, float]]:
        return loss_mod.read_loss(self.conn, self.schema, ports)

    # ------------------------------------------------------------------ reset
    def reset(self) -> dict[str, Any]:
        """Back to the state right after a push, static configuration kept: every job's entries
        and multicast groups removed, all slot state, loss thresholds and counters zeroed."""
        with self.lock:
            schema = self.schema
            table = jobs_mod.read_jobs(self.conn, schema)
            removed = sorted(table.jobs)
            updates = []
            for name in (program.WORKERS, program.REPLICAS):
                for te in self.conn.read(
                    [p4runtime_pb2.TableEntry(table_id=schema.table(name).id)], f"read {name}"
                ):
                    updates.append((DELETE, te))
            pre = p4runtime_pb2.PacketReplicationEngineEntry()
            pre.multicast_group_entry.multicast_group_id = 0
            for g in self.conn.read([pre], "read multicast groups"):
                if g.multicast_group_entry.multicast_group_id >= program.JOB_MGID_BASE:
                    updates.append(
                        (
                            DELETE,
                            jobs_mod.multicast_group(
                                g.multicast_group_entry.multicast_group_id, []
                            ),
                        )
                    )
            jobs_mod.write_tolerant(self.conn, updates, "reset")
            self._table = JobTable()
            path = slots_mod.clear_all(self.conn, schema)
            # the loss thresholds are registers too, with no control message
            loss_cleared = True
            try:
                loss_mod.set_loss(self.conn, schema, 0.0)
            except WriteFailed as err:
                if not unsupported(err):
                    raise
                loss_cleared = False
                self._warn(f"the loss thresholds were not zeroed: {err}")
            stats_mod.clear_all(self.conn, schema)
            return {
                "jobs_removed": removed,
                "slots_cleared": True,
                "slots_path": path,
                "loss_cleared": loss_cleared,
                "counters_cleared": True,
            }
