"""Jobs spanning several switches: one ToR per rack under one spine (docs/protocol.md,
"Hierarchical aggregation").

    spine = Controller("127.0.0.1:9559"); tor0 = Controller(...); tor1 = Controller(...)
    tree = create_tree(spine, Parent("10.0.0.1", "02:00:00:00:00:01"),
                       [Rack(tor0, members0, "10.0.1.254", "02:..:fe", spine_port=1,
                             uplink_port=9), ...], job_id=7, slot_count=64)
    show_tree(spine, [tor0, tor1], 7); delete_tree(spine, [tor0, tor1], 7)

Each switch is reached over its own P4Runtime connection (its ``Controller``). The job has one
id and one key everywhere; every switch allocates its own job index, slot range and group.
The spine gets an ordinary job whose members are the ToRs (rank = the rack's position); each
ToR gets its rack's workers with their global ranks (the rank their packets carry), their
local index as bitmap bit and the rack's size as worker count, plus the parent entry
(``admit_parent``) and the uplink entry (``to_parent``). Workers are unchanged: they are
told their ToR's address and the job's total n (``assignment``).

Nothing is stored off the switches: ``show_tree`` reads each switch's entries back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import addr, program
from . import jobs as jobs_mod
from . import slots as slots_mod
from . import stats as stats_mod
from .api import Controller
from .errors import InvalidArgument, NotFound
from .jobs import Job, Member
from .p4rt import DELETE, INSERT


@dataclass(frozen=True)
class Parent:
    """The spine as its ToRs see it: the IPv4 address and MAC its results come from (its
    static config's), and the UDP port they come from (``AGG_PORT`` on a wire)."""

    ip: str
    mac: str
    udp_port: int = program.AGG_PORT


@dataclass(frozen=True)
class Rack:
    """A rack: its ToR's controller, its workers (global ranks, their ToR ports), the ToR's
    IPv4 address and MAC (its static config's; the source of its partial sums), the UDP
    port those come from (``AGG_PORT`` on a wire), the spine's port towards the ToR and the
    ToR's port towards the spine."""

    ctl: Controller
    members: Sequence[Member]
    ip: str
    mac: str
    spine_port: int
    uplink_port: int
    udp_port: int = program.AGG_PORT


@dataclass
class TreeJob:
    job_id: int
    n: int  # workers in all racks: the n hosts quantize with
    key: int
    spine: Job  # the spine's job: its members are the ToRs
    tors: list[Job]  # per rack, the ToR's job: its members keep their global ranks


def _check(racks: Sequence[Rack]) -> int:
    """Validate the racks; the job's total worker count."""
    if not 1 <= len(racks) <= program.MAX_RACKS:
        raise InvalidArgument(f"{len(racks)} racks: 1 to {program.MAX_RACKS} expected")
    ranks: list[int] = []
    for i, r in enumerate(racks):
        if not 1 <= len(r.members) <= program.MAX_WORKERS:
            raise InvalidArgument(
                f"rack {i}: {len(r.members)} workers (1 to {program.MAX_WORKERS} per rack)"
            )
        ranks += [m.rank for m in r.members]
    n = len(ranks)
    if sorted(ranks) != list(range(n)):
        raise InvalidArgument(
            f"the racks' ranks must be 0..{n - 1}, each once (got {sorted(ranks)})"
        )
    return n


def _tor_entries(ctl: Controller, job: Job, parent: Parent, rack: Rack, up_rank: int) -> list:
    """The ToR's entries: replicas and workers by global rank, the parent and the uplink."""
    out = [jobs_mod._worker_entry(ctl.schema, job, m, bit=i) for i, m in enumerate(job.members)]
    out.append(_parent_entry(ctl, job, parent.ip, parent.udp_port, True))
    out.append(_uplink_entry(ctl, job, parent, rack, up_rank))
    return out


def _parent_entry(ctl: Controller, job: Job, ip: str, udp_port: int, with_action: bool) -> Any:
    match = jobs_mod.worker_match(job.job_id, ip, udp_port)
    if not with_action:
        return ctl.schema.table_entry(program.WORKERS, match)
    params = {
        "job_index": job.job_index, "n_workers": job.n, "base": job.slot_base,
        "count": job.slot_count, "mgid": job.mgid, "job_key": job.key,
    }  # fmt: skip
    return ctl.schema.table_entry(program.WORKERS, match, program.ADMIT_PARENT, params)


def _uplink_entry(
    ctl: Controller, job: Job, parent: Parent | None, rack: Rack | None, up_rank: int
) -> Any:
    match = {program.F_JOB_INDEX: job.job_index}
    if parent is None or rack is None:
        return ctl.schema.table_entry(program.UPLINK, match)
    params = {
        "port": rack.uplink_port, "mac": addr.mac(parent.mac), "ip": addr.ipv4(parent.ip),
        "rank": up_rank,
    }  # fmt: skip
    return ctl.schema.table_entry(program.UPLINK, match, program.TO_PARENT, params)


def _install_tor(ctl: Controller, job_id: int, parent: Parent, rack: Rack, up_rank: int,
                 slot_count: int, key: int) -> Job:  # fmt: skip
    """Plan the rack's job on its ToR (allocation and validation with local ranks), then
    install it with the global ranks."""
    with ctl.lock:
        schema, table = ctl.schema, ctl.jobs()
        by_local = sorted(rack.members, key=lambda m: m.rank)
        local = [Member(i, m.ip, m.udp_port, m.mac, m.switch_port) for i, m in enumerate(by_local)]
        planned = table.plan(job_id, local, slot_count, key=key)
        job = Job(job_id, planned.job_index, planned.n, planned.slot_base, planned.slot_count,
                  list(by_local), planned.mgid, key)  # fmt: skip
        slots_mod.clear(ctl.conn, schema, job.slot_base, job.slot_count)
        stats_mod.clear_job(ctl.conn, schema, job.job_index)
        what = f"job {job_id} (ToR of rack {up_rank})"
        try:
            ctl.conn.write(
                [(INSERT, jobs_mod._replica_entry(schema, job, m)) for m in job.members], what
            )
            group = jobs_mod.multicast_group(
                job.mgid, [(m.switch_port, m.rank) for m in job.members]
            )
            ctl.conn.write([(INSERT, group)], what)
            ctl.conn.write(
                [(INSERT, e) for e in _tor_entries(ctl, job, parent, rack, up_rank)], what
            )
        except Exception:
            try:
                _uninstall_tor(ctl, job, (parent.ip, parent.udp_port))
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            raise
        table.add(job)
        return job


def _uninstall_tor(ctl: Controller, job: Job, parent: tuple[str, int] | None) -> None:
    """Remove a ToR's job: uplink and parent (IPv4 address, UDP port) entries first, then the
    job's own (entries already gone are fine)."""
    what = f"delete job {job.job_id}"
    updates = [(DELETE, _uplink_entry(ctl, job, None, None, 0))]
    if parent is not None:
        updates.append((DELETE, _parent_entry(ctl, job, *parent, False)))
    jobs_mod.write_tolerant(ctl.conn, updates, what)
    jobs_mod.uninstall(ctl.conn, ctl.schema, job)


def assignments(
    tree: TreeJob, racks: Sequence[Rack], agg_port: int = program.AGG_PORT,
    timeouts: dict[str, int] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Each worker's assignment, by global rank, in the form of the registration service's
    join answer (``Assignment.from_dict`` takes it): its own ToR's address and MAC, the
    ToR's job index, slot range and group, the job's total n and key, the program and K the
    ToR runs; ``timeouts`` default to the service's."""
    from .service import Timeouts  # the service's defaults; it imports much more

    t = timeouts if timeouts is not None else asdict(Timeouts())
    out: dict[int, dict[str, Any]] = {}
    for rack, job in zip(racks, tree.tors, strict=True):
        for m in job.members:
            out[m.rank] = {
                "job_id": tree.job_id, "job_index": job.job_index, "rank": m.rank,
                "n": tree.n, "slot_base": job.slot_base, "slot_count": job.slot_count,
                "k": rack.ctl.k, "program": rack.ctl.kind, "switch_ip": rack.ip,
                "switch_mac": rack.mac, "agg_port": agg_port, "mgid": job.mgid,
                "job_key": tree.key, "timeouts": dict(t),
                "members": [x.to_dict() for x in job.members],
            }  # fmt: skip
    return [out[r] for r in sorted(out)]


def create_tree(
    spine: Controller,
    parent: Parent,
    racks: Sequence[Rack],
    job_id: int,
    slot_count: int,
    key: int | None = None,
) -> TreeJob:
    """Install the job on the ToRs (the racks, in order: rack i is rank i at the spine)
    and on the spine. On a failure, whatever was installed is removed again."""
    jid = jobs_mod.check_job_id(job_id)
    n = _check(racks)
    key = jobs_mod.new_key() if key is None else addr.number(key, "job key", 0, program.MAX_JOB_KEY)
    tors = [
        Member(i, addr.ipv4_str(addr.ipv4(r.ip, f"IPv4 address of rack {i}'s ToR")),
               r.udp_port, addr.mac_str(addr.mac(r.mac, f"MAC of rack {i}'s ToR")),
               addr.switch_port(r.spine_port, f"spine port of rack {i}"))
        for i, r in enumerate(racks)
    ]  # fmt: skip
    done: list[tuple[Controller, Job]] = []
    try:
        spine_job = spine.create_job(jid, tors, slot_count, key=key)
        tor_jobs = []
        for i, r in enumerate(racks):
            addr.switch_port(r.uplink_port, f"uplink port of rack {i}")
            j = _install_tor(r.ctl, jid, parent, r, i, slot_count, key)
            done.append((r.ctl, j))
            tor_jobs.append(j)
    except Exception:
        for ctl, j in done:
            try:
                with ctl.lock:
                    _uninstall_tor(ctl, j, (parent.ip, parent.udp_port))
                    ctl.jobs().remove(j.job_id)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        try:
            spine.delete_job(jid)
        except Exception:  # noqa: BLE001
            pass
        raise
    return TreeJob(jid, n, key, spine_job, tor_jobs)


def delete_tree(spine: Controller, tors: Sequence[Controller], job_id: int) -> None:
    """Remove the job from every ToR (uplink and parent entries included) and the spine,
    and clear its slots everywhere."""
    jid = jobs_mod.check_job_id(job_id)
    for ctl in tors:
        with ctl.lock:
            job = ctl.jobs().get(jid)
            p = _read_tor(ctl, job)["parent"]
            _uninstall_tor(ctl, job, None if p is None else (p["ip"], p["udp_port"]))
            ctl.jobs().remove(jid)
            slots_mod.clear(ctl.conn, ctl.schema, job.slot_base, job.slot_count)
    spine.delete_job(jid)


def _read_tor(ctl: Controller, job: Job) -> dict[str, Any]:
    """A ToR's parent and uplink entries for ``job`` (None where there is none)."""
    schema = ctl.schema
    parent = None
    for te in ctl.conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.WORKERS).id)], "read workers"
    ):
        d = schema.decode_entry(te)
        if d.action == program.ADMIT_PARENT and d.match[program.F_JOB_ID] == job.job_id:
            parent = {
                "ip": addr.ipv4_str(d.match[program.F_IPV4_SRC]),
                "udp_port": d.match[program.F_UDP_SRC],
            }
    uplink = None
    for te in ctl.conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.UPLINK).id)], "read uplink"
    ):
        d = schema.decode_entry(te)
        if d.match[program.F_JOB_INDEX] == job.job_index and d.action == program.TO_PARENT:
            p = d.params
            uplink = {
                "port": p["port"], "mac": addr.mac_str(p["mac"]), "ip": addr.ipv4_str(p["ip"]),
                "rank": p["rank"],
            }  # fmt: skip
    return {"parent": parent, "uplink": uplink}


def show_tree(spine: Controller, tors: Sequence[Controller], job_id: int) -> dict[str, Any]:
    """The job's tree as the switches hold it: the spine's job (its members are the ToRs)
    and, per ToR, its job, parent and uplink, each ToR matched to the spine's member by the
    uplink's rank. ``NotFound`` when a switch lacks the job or a ToR has no uplink for it."""
    jid = jobs_mod.check_job_id(job_id)
    with spine.lock:
        spine.refresh()
        sj = spine.get_job(jid)
    racks = []
    for ctl in tors:
        with ctl.lock:
            ctl.refresh()
            job = ctl.get_job(jid)
            links = _read_tor(ctl, job)
        if links["uplink"] is None:
            raise NotFound(f"job {jid} on {ctl.conn.addr}: no uplink entry (not a ToR of it)")
        racks.append({"grpc_addr": ctl.conn.addr, **job.to_dict(), **links})
    racks.sort(key=lambda r: r["uplink"]["rank"])
    return {
        "job_id": jid,
        "n": sum(len(r["members"]) for r in racks),
        "spine": {"grpc_addr": spine.conn.addr, **sj.to_dict()},
        "racks": racks,
    }


def render_tree(tree: dict[str, Any]) -> str:
    """``show_tree``'s answer as text, one line per switch and worker."""
    s = tree["spine"]
    lines = [
        f"job {tree['job_id']}: {tree['n']} workers in {len(tree['racks'])} racks",
        f"spine {s['grpc_addr']}: job index {s['job_index']}, "
        f"slots {jobs_mod.slot_text(s['slot_base'], s['slot_count'])}, group {s['mgid']}",
    ]
    by_rank = {m["rank"]: m for m in s["members"]}
    for r in tree["racks"]:
        up = r["uplink"]
        me = by_rank.get(up["rank"], {})
        lines.append(
            f"  rack {up['rank']}: ToR {r['grpc_addr']} ({me.get('ip', '?')}:"
            f"{me.get('udp_port', '?')}, spine port {me.get('switch_port', '?')}, uplink port "
            f"{up['port']}): job index {r['job_index']}, "
            f"slots {jobs_mod.slot_text(r['slot_base'], r['slot_count'])}, group {r['mgid']}"
        )
        for m in r["members"]:
            lines.append(
                f"    rank {m['rank']}: {m['ip']}:{m['udp_port']} {m['mac']} port {m['switch_port']}"
            )
    return "\n".join(lines)
