"""Worker registration as pure logic: who has joined which job, when a job is complete, named
barriers, and leaving. No sockets, threads or clocks: the service (service.py) wraps it with a
lock, waits and timeouts; the tests drive it directly.

A job's life here: ``joining`` (ranks arrive with their addresses) -> ``installing`` (the n-th
rank arrived; ``join`` returned ``complete`` to exactly one caller, who installs the job on the
switch) -> ``ready`` (``installed``) or ``failed`` (``install_failed``; the entry is gone so the
workers can try again) -> removed when every rank has left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import addr, program
from .errors import Conflict, ControllerError, InvalidArgument, NotFound, TooManyJobs
from .jobs import Job, Member, check_job_id

JOINING, INSTALLING, READY, FAILED, GONE = "joining", "installing", "ready", "failed", "gone"


@dataclass
class Barrier:
    generation: int = 0
    arrived: set[int] = field(default_factory=set)


@dataclass
class Recovery:
    """The job's recovery round after a failed call: each rank arrives with the number of its
    next call; when every rank that has not left is in, the slots are cleared once and every
    rank resumes from the largest of those numbers (packet ids are never reused)."""

    generation: int = 0
    arrived: dict[int, int] = field(default_factory=dict)  # rank -> its next call
    clearing: bool = False  # the last arrival is clearing the slots
    outcome: dict[int, int | ControllerError] = field(default_factory=dict)  # gen -> result
    # rank -> the calls it completed (reported by hosts that retry a call transparently,
    # docs/host.md "Transparent retry"); gen -> (fewest, most) over the ranks of the round
    done: dict[int, int] = field(default_factory=dict)
    done_range: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Reform:
    """Re-forming a running job whose workers were all restarted (torchrun --max-restarts):
    each rank joins again (``rejoin``, with its new address); when all n did, the job is
    installed anew for the new members and every rank gets the new assignment."""

    generation: int = 0
    members: dict[int, Member] = field(default_factory=dict)
    forming: bool = False  # the last arrival is re-installing the job
    outcome: dict[int, ControllerError | None] = field(default_factory=dict)  # gen -> error


@dataclass
class Entry:
    """One job as the registry sees it."""

    job_id: int
    n: int
    slot_count: int
    members: dict[int, Member] = field(default_factory=dict)
    state: str = JOINING
    job: Job | None = None
    error: ControllerError | None = None
    left: set[int] = field(default_factory=set)
    barriers: dict[str, Barrier] = field(default_factory=dict)
    recovery: Recovery = field(default_factory=Recovery)
    reform: Reform = field(default_factory=Reform)
    # of the job's secret (credentials.verifier); None: operator only (an adopted job
    # created without a secret)
    verifier: bytes | None = field(default=None, repr=False)
    # ranks restored from the state database that have not used the job since (no
    # barrier, recovery or leave): they may repeat the join whose answer a restart of the
    # service cut off, also once the job is installed
    rejoinable: set[int] = field(default_factory=set)

    @property
    def waiting_for(self) -> list[int]:
        return [r for r in range(self.n) if r not in self.members]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "job_id": self.job_id,
            "state": self.state,
            "n": self.n,
            "slot_count": self.slot_count,
            "joined": sorted(self.members),
            "waiting_for": self.waiting_for,
            "left": sorted(self.left),
            "barriers": {
                name: {"generation": b.generation, "arrived": sorted(b.arrived)}
                for name, b in sorted(self.barriers.items())
            },
            "recovery": {
                "generation": self.recovery.generation,
                "arrived": sorted(self.recovery.arrived),
            },
        }
        if self.job is not None:
            d["job"] = self.job.to_dict()
        if self.error is not None:
            d["error"] = str(self.error)
        return d


@dataclass
class JoinOutcome:
    entry: Entry
    complete: bool  # this join completed the job: the caller installs it

    @property
    def members(self) -> list[Member]:
        return [self.entry.members[r] for r in sorted(self.entry.members)]


def _check_address_free(members: dict[int, Member], member: Member, job_id: int) -> None:
    """Conflict when another rank of the job (joining or rejoining) sends from member's
    address: the switch tells the workers apart by it."""
    for other in members.values():
        if (other.ip, other.udp_port) == (member.ip, member.udp_port):
            raise Conflict(
                f"rank {other.rank} of job {job_id} already sends from "
                f"{member.ip}:{member.udp_port}"
            )


class Registry:
    def __init__(self, default_slots: int = 64) -> None:
        self.default_slots = default_slots
        self.entries: dict[int, Entry] = {}

    def get(self, job_id: int) -> Entry:
        try:
            return self.entries[job_id]
        except KeyError:
            raise NotFound(f"unknown job {job_id}") from None

    # ------------------------------------------------------------------ joining
    def join(
        self,
        job_id: Any,
        member: Member,
        n: Any,
        slots: Any = None,
        verifier: bytes | None = None,
        max_jobs: int | None = None,
    ) -> JoinOutcome:
        """``verifier``: of the secret the first joiner brings (kept when the entry is new);
        ``max_jobs``: refuse (TooManyJobs) to start tracking a job beyond this many."""
        jid = check_job_id(job_id)

        n = addr.number(n, "worker count n", 1, program.MAX_WORKERS)
        if not 0 <= member.rank < n:
            raise InvalidArgument(f"rank {member.rank} is outside 0..{n - 1} (n = {n})")
        count = addr.number(
            self.default_slots if slots is None else slots, "slot count", 1, program.POOL_SLOTS
        )
        entry = self.entries.get(jid)
        if entry is None:
            if max_jobs is not None and len(self.entries) >= max_jobs:
                raise TooManyJobs(
                    f"the service already tracks {len(self.entries)} jobs (the limit is "
                    f"{max_jobs}): job {jid} cannot start"
                )
            entry = self.entries[jid] = Entry(jid, n, count, verifier=verifier)
        if (
            entry.members.get(member.rank) == member
            and n == entry.n
            and (entry.state == JOINING or member.rank in entry.rejoinable)
        ):
            # the same rank from the same address (so the same socket) again: a join retried
            # after its connection broke (the service restarted); it waits like the first
            return JoinOutcome(entry, False)
        if entry.state != JOINING:
            if member.rank in entry.members:
                raise Conflict(
                    f"rank {member.rank} already joined job {jid}, which is {entry.state} and "
                    f"takes no joins (a job made by 'p4reduce-ctl job create' counts as fully "
                    f"joined): delete it first ('p4reduce-ctl job delete --job {jid}') or join "
                    f"another job id"
                )
            raise Conflict(f"job {jid} is {entry.state}, not taking joins")
        if n != entry.n:
            raise Conflict(f"job {jid} has n = {entry.n}, not {n}")
        if slots is not None and count != entry.slot_count:
            raise Conflict(f"job {jid} asks for {entry.slot_count} slots, not {count}")
        if member.rank in entry.members:
            raise Conflict(f"rank {member.rank} already joined job {jid}")
        _check_address_free(entry.members, member, jid)
        entry.members[member.rank] = member
        if len(entry.members) == entry.n:
            entry.state = INSTALLING
            return JoinOutcome(entry, True)
        return JoinOutcome(entry, False)

    def withdraw(self, job_id: int, rank: int) -> None:
        """A join that gave up (timed out) before the job was complete: forget the rank."""
        entry = self.entries.get(job_id)
        if entry is None or entry.state != JOINING:
            return
        entry.members.pop(rank, None)
        if not entry.members:
            del self.entries[job_id]

    def installed(self, job_id: int, job: Job) -> None:
        entry = self.get(job_id)
        entry.state, entry.job = READY, job

    def install_failed(self, job_id: int, error: ControllerError) -> None:
        """The job could not be installed: its waiters get ``error``; the id is free again."""
        entry = self.entries.pop(job_id, None)
        if entry is not None:
            entry.state, entry.error = FAILED, error

    def adopt(self, job: Job) -> None:
        """A job already on the switch (found at start-up): ready, with every rank joined."""
        entry = Entry(
            job.job_id,
            job.n,
            job.slot_count,
            {m.rank: m for m in job.members},
            READY,
            job,
            verifier=job.verifier,
        )
        self.entries[job.job_id] = entry

    def restore(
        self,
        job_id: int,
        n: int,
        slot_count: int,
        members: list[Member],
        left: set[int],
        job: Job | None,
        verifier: bytes | None,
    ) -> Entry:
        """An entry of the service's state database (controller/state.py) after a restart:
        ready when it has a job (installed, or planned and being installed when the service
        stopped), else still joining with the members it had."""
        entry = Entry(
            job_id,
            n,
            slot_count,
            {m.rank: m for m in members},
            READY if job is not None else JOINING,
            job,
            left=set(left),
            verifier=verifier,
            rejoinable={m.rank for m in members},
        )
        self.entries[job_id] = entry
        return entry

    # ------------------------------------------------------------------ re-forming
    def rejoin(self, job_id: int, member: Member, n: Any) -> tuple[int, bool]:
        """Rank joins its running job again after a restart of every worker: (generation,
        True when it completed the round, so the caller re-installs the job for the new
        members and calls ``reformed``)."""
        entry = self.get(job_id)
        n = addr.number(n, "worker count n", 1, program.MAX_WORKERS)
        if entry.state != READY:
            raise Conflict(
                f"job {job_id} is {entry.state}: join it (a rejoin re-forms a ready job)"
            )
        if n != entry.n:
            raise Conflict(f"job {job_id} has n = {entry.n}, not {n}")
        if not 0 <= member.rank < n:
            raise InvalidArgument(f"rank {member.rank} is outside 0..{n - 1} (n = {n})")
        rf = entry.reform
        if member.rank in rf.members:
            raise Conflict(f"rank {member.rank} is already joining job {job_id} again")
        _check_address_free(rf.members, member, job_id)
        rf.members[member.rank] = member
        if len(rf.members) == entry.n and not rf.forming:
            rf.forming = True
            return rf.generation, True
        return rf.generation, False

    def reformed(
        self, job_id: int, generation: int, job: Job | None, error: ControllerError | None
    ) -> None:
        """The re-install of round ``generation`` is done (``job``, the job as installed for
        the new members) or failed (``error``, the old job is gone)."""
        entry = self.entries.get(job_id)
        if entry is None:
            return
        rf = entry.reform
        rf.outcome = {generation: error}
        if job is not None:
            entry.job, entry.members = job, dict(rf.members)
            entry.left.clear()
            entry.barriers.clear()
            entry.recovery = Recovery()
            entry.rejoinable.clear()
        rf.generation, rf.forming = generation + 1, False
        rf.members.clear()

    def reform_outcome(self, job_id: int, generation: int) -> ControllerError | bool | None:
        """True when round ``generation`` re-formed the job, its error, or None while on."""
        entry = self.entries.get(job_id)
        if entry is None:
            return Conflict(f"job {job_id} is gone")
        if generation not in entry.reform.outcome:
            return None
        return entry.reform.outcome[generation] or True

    def reform_depart(self, job_id: int, rank: int, generation: int) -> None:
        """A rejoin wait that gave up: the rank no longer counts."""
        entry = self.entries.get(job_id)
        if entry is not None and entry.reform.generation == generation:
            if not entry.reform.forming:
                entry.reform.members.pop(rank, None)

    # ------------------------------------------------------------------ barriers
    def _ready(self, job_id: int, rank: Any) -> tuple[Entry, int]:

        entry = self.get(job_id)
        r = addr.number(rank, "rank", 0, max(entry.n - 1, 0))
        entry.rejoinable.discard(r)
        if entry.state != READY:
            raise Conflict(
                f"job {job_id} is {entry.state}"
                + (f" (waiting for ranks {entry.waiting_for})" if entry.state == JOINING else "")
            )
        if r in entry.left:
            raise Conflict(f"rank {r} has left job {job_id}")
        return entry, r

    def arrive(self, job_id: int, rank: Any, name: str = "default") -> tuple[int, bool]:
        """Rank arrives at barrier ``name``: (generation it waits for the end of, released now)."""
        entry, r = self._ready(job_id, rank)
        b = entry.barriers.setdefault(name, Barrier())
        if r in b.arrived:
            raise Conflict(f"rank {r} is already waiting at barrier {name!r} of job {job_id}")
        gen = b.generation
        b.arrived.add(r)
        if len(b.arrived) >= entry.n - len(entry.left):
            b.generation += 1
            b.arrived.clear()
            return gen, True
        return gen, False

    def released(self, job_id: int, name: str, generation: int) -> bool:
        """Has the barrier passed ``generation``? (True too when the job is gone: no waiting.)"""
        entry = self.entries.get(job_id)
        if entry is None or entry.state != READY:
            return True
        b = entry.barriers.get(name)
        return b is None or b.generation > generation

    def depart(self, job_id: int, rank: int, name: str, generation: int) -> None:
        """A barrier wait that gave up: the rank no longer counts as arrived."""
        entry = self.entries.get(job_id)
        if entry is None:
            return
        b = entry.barriers.get(name)
        if b is not None and b.generation == generation:
            b.arrived.discard(rank)

    # ------------------------------------------------------------------ recovery
    def recover_arrive(
        self, job_id: int, rank: Any, next_call: Any, done: Any = None
    ) -> tuple[int, bool]:
        """Rank enters the recovery round: (generation, True when it completed the round,
        so the caller clears the slots and then calls ``recovered``). ``done``: how many
        calls the rank completed (optional)."""
        entry, r = self._ready(job_id, rank)
        nc = addr.number(next_call, "next_call", 0, 0xFFFFFFFF)
        d = None if done is None else addr.number(done, "done", 0, (1 << 63) - 1)
        rec = entry.recovery
        if r in rec.arrived:
            raise Conflict(f"rank {r} is already recovering job {job_id}")
        rec.arrived[r] = nc
        if d is not None:
            rec.done[r] = d
        return rec.generation, self._recovery_complete(entry)

    def recovery_after_leave(self, job_id: int) -> int | None:
        """After a leave: the generation of a recovery round that waited only for ranks that
        have now left (the caller clears the slots and calls ``recovered``), else None."""
        entry = self.entries.get(job_id)
        if entry is None or entry.state != READY:
            return None
        for r in entry.left:
            entry.recovery.arrived.pop(r, None)
            entry.recovery.done.pop(r, None)
        return entry.recovery.generation if self._recovery_complete(entry) else None

    @staticmethod
    def _recovery_complete(entry: Entry) -> bool:
        rec = entry.recovery
        if rec.clearing or not rec.arrived or len(rec.arrived) < entry.n - len(entry.left):
            return False
        rec.clearing = True
        return True

    def recovered(self, job_id: int, generation: int, error: ControllerError | None) -> None:
        """The slots of round ``generation`` were cleared (or clearing failed with ``error``):
        every waiting rank gets the agreed next call (or the error)."""
        entry = self.entries.get(job_id)
        if entry is None:
            return
        rec = entry.recovery
        rec.outcome = {generation: error if error is not None else max(rec.arrived.values())}
        counts = [rec.done[r] for r in rec.arrived if r in rec.done]
        rec.done_range = {generation: (min(counts), max(counts))} if counts else {}
        rec.generation = generation + 1
        rec.arrived.clear()
        rec.done.clear()
        rec.clearing = False

    def recovery_outcome(self, job_id: int, generation: int) -> int | ControllerError | None:
        """The agreed next call (or the error) of a finished round; None while it runs."""
        entry = self.entries.get(job_id)
        if entry is None or entry.state != READY:
            return Conflict(f"job {job_id} is gone")
        return entry.recovery.outcome.get(generation)

    def recover_depart(self, job_id: int, rank: int, generation: int) -> None:
        """A recovery wait that gave up: the rank no longer counts as arrived."""
        entry = self.entries.get(job_id)
        if entry is not None and entry.recovery.generation == generation:
            if not entry.recovery.clearing:
                entry.recovery.arrived.pop(rank, None)
                entry.recovery.done.pop(rank, None)

    # ------------------------------------------------------------------ leaving
    def leave(self, job_id: int, rank: Any) -> tuple[Entry, bool]:
        """Rank leaves; (entry, True) when it was the last: the caller deletes the job."""

        entry = self.get(job_id)
        r = addr.number(rank, "rank", 0, max(entry.n - 1, 0))
        entry.rejoinable.discard(r)
        if entry.state == JOINING:
            if r not in entry.members:
                raise NotFound(f"rank {r} has not joined job {job_id}")
            self.withdraw(job_id, r)
            return entry, False
        if entry.state != READY:
            raise Conflict(f"job {job_id} is {entry.state}")
        if r in entry.left:
            raise Conflict(f"rank {r} has already left job {job_id}")
        entry.left.add(r)
        if len(entry.left) == entry.n:
            entry.state = GONE
            del self.entries[job_id]
            return entry, True
        # a barrier that waited only for ranks that have now left passes
        for b in entry.barriers.values():
            b.arrived.discard(r)
            if b.arrived and len(b.arrived) >= entry.n - len(entry.left):
                b.generation += 1
                b.arrived.clear()
        return entry, False

    def to_list(self) -> list[dict[str, Any]]:
        return [self.entries[k].to_dict() for k in sorted(self.entries)]
