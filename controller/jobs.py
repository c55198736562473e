"""Jobs: their members, the allocation of job indexes and slot ranges, and their entries on
the switch.

A job (docs/protocol.md, "Job isolation and admission") is a job id (1..65535, chosen by the
user), a job index (1..255, chosen here: the lowest free one), a slot range (``slot_base``,
``slot_count``) disjoint from every other job's in the 8,192-slot pool (first fit), the
multicast group ``256 + job_index``, one member per rank 0..n-1, and a 32-bit key drawn at
random each time the job is created (docs/protocol.md, "Job keys"): workers carry it in every
packet and the switch drops packets of the job without it.

On the switch a job is: one ``workers`` entry per member (action ``admit``, with the key), one ``replicas``
entry per member (action ``to_worker``), the multicast group with one replica (switch port,
instance = rank) per member, and clean slot state. ``read_jobs`` rebuilds jobs from those
entries alone, so a stateless CLI (or a restarted controller) sees the same jobs.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from p4reduce.portmap import PortMap
from p4reduce.proto import p4runtime_pb2

from . import addr, program
from .errors import Conflict, InvalidArgument, NotFound
from .p4info import Schema
from .p4rt import DELETE, INSERT, MODIFY, Connection, WriteFailed


@dataclass(frozen=True)
class Member:
    """One worker: its rank, the IPv4 address and UDP port it sends from (and receives results
    on), its MAC (results are sent to it) and the switch port it is behind."""

    rank: int
    ip: str
    udp_port: int
    mac: str
    switch_port: int

    @classmethod
    def make(
        cls, rank: Any, ip: Any, udp_port: Any, mac: Any, switch_port: Any, n: int | None = None
    ) -> Member:
        """A validated member with canonical spellings; ``n`` bounds the rank."""
        hi = (n - 1) if n else program.MAX_WORKERS - 1
        r = addr.number(rank, "rank", 0, max(hi, 0))
        return cls(
            r,
            addr.ipv4_str(addr.ipv4(ip, f"IPv4 address of rank {r}")),
            addr.udp_port(udp_port, f"UDP port of rank {r}"),
            addr.mac_str(addr.mac(mac, f"MAC address of rank {r}")),
            addr.switch_port(switch_port, f"switch port of rank {r}"),
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any], n: int | None = None) -> Member:
        missing = [k for k in ("rank", "ip", "udp_port", "mac", "switch_port") if k not in d]
        if missing:
            raise InvalidArgument(f"member without {', '.join(missing)}")
        return cls.make(d["rank"], d["ip"], d["udp_port"], d["mac"], d["switch_port"], n)

    @classmethod
    def parse(cls, text: str) -> Member:
        """``RANK:IP:UDP_PORT:MAC:SWITCH_PORT`` (the MAC with colons, dashes or none)."""
        parts = text.split(":")
        if len(parts) not in (5, 10):
            raise InvalidArgument(
                f"bad member {text!r} (want RANK:IP:UDP_PORT:MAC:SWITCH_PORT, "
                "e.g. 0:10.0.0.1:5000:02:00:00:00:00:01:1)"
            )
        return cls.make(parts[0], parts[1], parts[2], ":".join(parts[3:-1]), parts[-1])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Job:
    job_id: int
    job_index: int
    n: int
    slot_base: int
    slot_count: int
    members: list[Member] = field(default_factory=list)
    mgid: int = 0
    key: int = 0  # the data-plane key (docs/protocol.md, "Job keys"); new_key() draws one
    # the verifier of the job's secret (credentials.verifier), kept on the switch as the
    # workers entries' metadata; None: the job has no secret (only the operator may use it)
    verifier: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.mgid:
            self.mgid = program.JOB_MGID_BASE + self.job_index

    @property
    def slot_end(self) -> int:
        """One past the last slot of the range."""
        return self.slot_base + self.slot_count

    def member(self, rank: int) -> Member | None:
        for m in self.members:
            if m.rank == rank:
                return m
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "job_index": self.job_index,
            "n": self.n,
            "slot_base": self.slot_base,
            "slot_count": self.slot_count,
            "mgid": self.mgid,
            "members": [m.to_dict() for m in sorted(self.members, key=lambda m: m.rank)],
        }

    def to_dict_with_key(self) -> dict[str, Any]:
        """``to_dict`` plus the key: for the job's own workers and the operator only."""
        return {**self.to_dict(), "job_key": self.key}


def new_key() -> int:
    """A fresh 32-bit job key from the system's CSPRNG: a recreated job never keeps its old
    key, so workers of the earlier incarnation cannot add into the new one."""
    return secrets.randbits(32)


def slot_text(base: int, count: int) -> str:
    return f"{base}..{base + count - 1}"


def check_job_id(job_id: Any) -> int:
    return addr.number(job_id, "job id", 1, program.MAX_JOB_ID)


def check_ports(members: Iterable[Member], ports: PortMap | None) -> None:
    """Each member's switch port exists on the switch and, for a port of its UDP adapter,
    stands for the member's address: otherwise the switch would drop every datagram of that
    worker and the job would time out for a reason nothing names. ``ports`` None: the
    switch does not say (BMv2), nothing to check."""
    if ports is None:
        return
    by_peer = {peer: n for n, peer in ports.peers.items()}
    for m in members:
        if m.switch_port not in ports.numbers:
            have = ", ".join(map(str, sorted(ports.numbers))) or "none"
            raise InvalidArgument(
                f"rank {m.rank}: the switch has no port {m.switch_port} (its ports: {have})"
            )
        peer = ports.peers.get(m.switch_port)
        if peer is not None and peer != (m.ip, m.udp_port):
            other = by_peer.get((m.ip, m.udp_port))
            hint = f" (it is port {other}'s)" if other is not None else ""
            raise InvalidArgument(
                f"rank {m.rank}: {m.ip}:{m.udp_port} is not the peer of switch port "
                f"{m.switch_port}{hint}, {peer[0]}:{peer[1]} is (p4reduce-switch -i "
                f"{m.switch_port}@udp:{peer[0]}:{peer[1]}): the switch would drop its datagrams"
            )


def check_members(members: Iterable[Member], n: int | None = None) -> list[Member]:
    """Ranks 0..n-1, each exactly once, and distinct (IPv4, UDP port) sources."""
    members = list(members)
    if n is None:  # the members given, or enough for the highest rank (to name the gaps)
        n = max([len(members)] + [m.rank + 1 for m in members])
    addr.number(n, "worker count n", 1, program.MAX_WORKERS)
    by_rank: dict[int, Member] = {}
    by_source: dict[tuple[str, int], int] = {}
    for m in members:
        if not 0 <= m.rank < n:
            raise InvalidArgument(f"rank {m.rank} is outside 0..{n - 1} (n = {n})")
        if m.rank in by_rank:
            raise Conflict(f"rank {m.rank} given twice")
        src = (m.ip, m.udp_port)
        if src in by_source:
            raise Conflict(
                f"ranks {by_source[src]} and {m.rank} both send from {m.ip}:{m.udp_port}"
            )
        by_rank[m.rank] = m
        by_source[src] = m.rank
    missing = [r for r in range(n) if r not in by_rank]
    if missing:
        raise InvalidArgument(
            f"{len(members)} member{'s' if len(members) != 1 else ''} for n = {n}: "
            f"rank{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))} missing"
        )
    return sorted(members, key=lambda m: m.rank)


class JobTable:
    """The jobs on one switch, and the allocators of job indexes and slot ranges."""

    def __init__(self, jobs: Iterable[Job] = (), used_indexes: Iterable[int] = ()) -> None:
        self.jobs: dict[int, Job] = {j.job_id: j for j in jobs}
        self._extra_indexes = set(used_indexes)

    def get(self, job_id: int) -> Job:
        try:
            return self.jobs[job_id]
        except KeyError:
            raise NotFound(f"unknown job {job_id}") from None

    def by_index(self) -> dict[int, Job]:
        return {j.job_index: j for j in self.jobs.values()}

    def index_in_use(self, index: int) -> bool:
        return index in self._extra_indexes or any(j.job_index == index for j in self.jobs.values())

    def allocate_index(self) -> int:
        used = {j.job_index for j in self.jobs.values()} | self._extra_indexes
        for i in range(1, program.MAX_JOB_INDEX + 1):
            if i not in used:
                return i
        raise Conflict(f"all {program.MAX_JOB_INDEX} job indexes are in use")

    def allocate_slots(self, count: int, base: int | None = None) -> int:
        """The base of ``count`` free slots: ``base`` if given and free, else first fit."""
        count = addr.number(count, "slot count", 1, program.POOL_SLOTS)
        taken = sorted((j.slot_base, j.slot_end, j.job_id) for j in self.jobs.values())
        if base is not None:
            base = addr.number(base, "slot base", 0, program.POOL_SLOTS - 1)
            if base + count > program.POOL_SLOTS:
                raise InvalidArgument(
                    f"slots {slot_text(base, count)} run past the pool (0..{program.POOL_SLOTS - 1})"
                )
            for lo, hi, jid in taken:
                if base < hi and lo < base + count:
                    raise Conflict(
                        f"slots {slot_text(base, count)} overlap job {jid} (slots "
                        f"{slot_text(lo, hi - lo)})"
                    )
            return base
        at = 0
        for lo, hi, _ in taken:
            if lo - at >= count:
                return at
            at = max(at, hi)
        if program.POOL_SLOTS - at >= count:
            return at
        free = self.free_slots()
        raise Conflict(
            f"no {count} contiguous free slots in the pool ({free} free in all, largest run "
            f"{self.largest_free_run()})"
        )

    def free_slots(self) -> int:
        return program.POOL_SLOTS - sum(j.slot_count for j in self.jobs.values())

    def largest_free_run(self) -> int:
        at, best = 0, 0
        for lo, hi in sorted((j.slot_base, j.slot_end) for j in self.jobs.values()):
            best = max(best, lo - at)
            at = max(at, hi)
        return max(best, program.POOL_SLOTS - at)

    def plan(
        self,
        job_id: Any,
        members: Iterable[Member],
        slot_count: Any,
        slot_base: Any = None,
        n: int | None = None,
        key: int | None = None,
        verifier: bytes | None = None,
    ) -> Job:
        """A new, validated job with its index and slot range allocated (not yet added);
        ``key`` None draws a fresh one."""
        jid = check_job_id(job_id)
        if jid in self.jobs:
            raise Conflict(f"job {jid} exists already")
        ms = check_members(members, n)
        count = addr.number(slot_count, "slot count", 1, program.POOL_SLOTS)
        base = self.allocate_slots(count, slot_base)
        index = self.allocate_index()
        if key is None:
            key = new_key()
        key = addr.number(key, "job key", 0, program.MAX_JOB_KEY)
        return Job(jid, index, len(ms), base, count, ms, key=key, verifier=verifier)

    def add(self, job: Job) -> None:
        self.jobs[job.job_id] = job

    def remove(self, job_id: int) -> Job:
        job = self.get(job_id)
        del self.jobs[job_id]
        return job

    def sorted(self) -> list[Job]:
        return [self.jobs[k] for k in sorted(self.jobs)]


# ---------------------------------------------------------------------- entities of a job
def worker_match(job_id: int, ip: str, udp_port: int) -> dict[str, Any]:
    """The workers table's key: the job and the (IPv4 address, UDP port) a sender uses."""
    return {
        program.F_JOB_ID: job_id,
        program.F_IPV4_SRC: addr.ipv4(ip),
        program.F_UDP_SRC: udp_port,
    }


def _worker_entry(
    schema: Schema, job: Job, m: Member, with_action: bool = True, bit: int | None = None
) -> Any:
    """``bit``: the member's bitmap bit (default its rank; a ToR's job uses local indexes
    while its packets carry global ranks, controller/tree.py)."""
    match = worker_match(job.job_id, m.ip, m.udp_port)
    if not with_action:
        return schema.table_entry(program.WORKERS, match)
    params = {
        "job_index": job.job_index,
        "worker_rank": m.rank,
        "n_workers": job.n,
        "worker_bit": 1 << (m.rank if bit is None else bit),
        "base": job.slot_base,
        "count": job.slot_count,
        "mgid": job.mgid,
        "job_key": job.key,
    }
    te = schema.table_entry(program.WORKERS, match, program.ADMIT, params)
    if job.verifier is not None:
        te.metadata = job.verifier
    return te


def _replica_entry(schema: Schema, job: Job, m: Member, with_action: bool = True) -> Any:
    match = {program.F_JOB_INDEX: job.job_index, program.F_RID: m.rank}
    if not with_action:
        return schema.table_entry(program.REPLICAS, match)
    params = {"mac": addr.mac(m.mac), "ip": addr.ipv4(m.ip), "udp_port": m.udp_port}
    return schema.table_entry(program.REPLICAS, match, program.TO_WORKER, params)


def multicast_group(mgid: int, replicas: Iterable[tuple[int, int]]) -> Any:
    """A PRE entry for group ``mgid`` with (port, instance) replicas (``egress_port``, which
    every P4Runtime 1.x server reads)."""
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = mgid
    for port, instance in replicas:
        pre.multicast_group_entry.replicas.add(egress_port=port, instance=instance)
    return pre


def replica_port(r: Any) -> int:
    if r.WhichOneof("port_kind") == "port":
        return int.from_bytes(r.port, "big")
    return r.egress_port


def _ignore_not_found(err: WriteFailed) -> bool:
    return all(code in ("OK", "NOT_FOUND") for code, _ in err.errors)


def write_tolerant(conn: Connection, updates: list[tuple[int, Any]], what: str) -> None:
    """Write; NOT_FOUND answers (deleting what is already gone) are not failures."""
    try:
        conn.write(updates, what)
    except WriteFailed as err:
        if not _ignore_not_found(err):
            raise


def upsert(conn: Connection, updates: list[Any], what: str) -> None:
    """INSERT each entity; those that exist already are MODIFied instead."""
    try:
        conn.write([(INSERT, e) for e in updates], what)
    except WriteFailed as err:
        if len(err.errors) != len(updates) or any(
            c not in ("OK", "ALREADY_EXISTS") for c, _ in err.errors
        ):
            raise
        again = [e for e, (c, _) in zip(updates, err.errors, strict=True) if c == "ALREADY_EXISTS"]
        conn.write([(MODIFY, e) for e in again], what)


def install(conn: Connection, schema: Schema, job: Job) -> None:
    """Put a planned job on the switch: replicas, multicast group, then the workers entries
    (admission comes last, so no packet is admitted before its results can be delivered).
    The slot state and the job's counters are cleared first (``slots.clear`` and
    ``stats.clear_job``, called by ``Controller.create_job``). On failure whatever was
    written is removed again."""
    try:
        conn.write(
            [(INSERT, _replica_entry(schema, job, m)) for m in job.members], f"job {job.job_id}"
        )
        conn.write(
            [(INSERT, multicast_group(job.mgid, [(m.switch_port, m.rank) for m in job.members]))],
            f"job {job.job_id}: multicast group {job.mgid}",
        )
        conn.write(
            [(INSERT, _worker_entry(schema, job, m)) for m in job.members], f"job {job.job_id}"
        )
    except Exception:
        try:
            uninstall(conn, schema, job)
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        raise


def uninstall(conn: Connection, schema: Schema, job: Job) -> None:
    """Remove a job's entries, admission first (entries already gone are fine)."""
    what = f"delete job {job.job_id}"
    write_tolerant(
        conn, [(DELETE, _worker_entry(schema, job, m, False)) for m in job.members], what
    )
    write_tolerant(conn, [(DELETE, multicast_group(job.mgid, []))], what)
    write_tolerant(
        conn, [(DELETE, _replica_entry(schema, job, m, False)) for m in job.members], what
    )


def read_jobs(conn: Connection, schema: Schema) -> JobTable:
    """Rebuild the job table from the switch: ``workers`` entries give each job's id, index,
    n, slot range, multicast group and members' sources; ``replicas`` entries their MACs; the
    multicast groups their switch ports."""
    workers = conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.WORKERS).id)], "read workers"
    )
    replicas = conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.REPLICAS).id)], "read replicas"
    )
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 0
    groups = conn.read([pre], "read multicast groups")
    ports: dict[int, dict[int, int]] = {}
    for g in groups:
        if g.WhichOneof("type") == "multicast_group_entry":
            mg = g.multicast_group_entry
            ports[mg.multicast_group_id] = {r.instance: replica_port(r) for r in mg.replicas}
    macs: dict[tuple[int, int], int] = {}
    indexes = set()
    for te in replicas:
        d = schema.decode_entry(te)
        idx, rank = d.match[program.F_JOB_INDEX], d.match[program.F_RID]
        indexes.add(idx)
        if d.action == program.TO_WORKER:
            macs[(idx, rank)] = d.params["mac"]
    jobs: dict[int, Job] = {}
    for te in workers:
        d = schema.decode_entry(te)
        if d.action != program.ADMIT:
            continue
        p = d.params
        jid = d.match[program.F_JOB_ID]
        job = jobs.get(jid)
        if job is None:
            job = Job(
                jid,
                p["job_index"],
                p["n_workers"],
                p["base"],
                p["count"],
                [],
                p["mgid"],
                p["job_key"],
                bytes(te.metadata) or None,
            )
            jobs[jid] = job
        rank = p["worker_rank"]
        job.members.append(
            Member(
                rank,
                addr.ipv4_str(d.match[program.F_IPV4_SRC]),
                d.match[program.F_UDP_SRC],
                addr.mac_str(macs.get((job.job_index, rank), 0)),
                ports.get(job.mgid, {}).get(rank, -1),
            )
        )
    for job in jobs.values():
        job.members.sort(key=lambda m: m.rank)
    return JobTable(jobs.values(), indexes)
