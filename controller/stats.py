"""Counters: ``job_counters[job_index * 16 + event]`` and ``egress_counters[job_index * 4 +
event]`` (docs/protocol.md, "Counters"), read with one wildcard CounterEntry each and decoded
per job index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import program
from .p4info import Schema
from .p4rt import MODIFY, Connection, WriteFailed, unsupported

DROP_REASONS = (
    "unknown_sender",
    "bad_key",
    "wrong_rank",
    "slot_range",
    "malformed",
    "loss_in",
    "loss_out",
    "no_replica",
)


@dataclass
class JobStats:
    """One job index's counters (index 0: packets whose sender is unknown)."""

    job_index: int
    job_id: int | None = None
    events: dict[str, int] = field(default_factory=dict)

    def get(self, name: str) -> int:
        return self.events.get(name, 0)

    @property
    def aggregated(self) -> int:
        """Packets added into a slot: contributions plus completions (at a ToR, the
        contribution that completes the local count is counted ``up``: its sum goes up)."""
        return self.get("contribution") + self.get("completion") + self.get("up")

    @property
    def drops(self) -> dict[str, int]:
        return {r: self.get(r) for r in DROP_REASONS}

    @property
    def total(self) -> int:
        return sum(self.events.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_index": self.job_index,
            "job_id": self.job_id,
            "aggregated": self.aggregated,
            "contributions": self.get("contribution"),
            "results_multicast": self.get("completion"),
            "retransmits_answered": self.get("retransmit_answered"),
            "duplicates": self.get("duplicate"),
            # a ToR of a job spanning switches (docs/protocol.md, "Hierarchical aggregation")
            "sent_up": self.get("up"),
            "sent_up_again": self.get("up_retransmit"),
            "results_from_parent": self.get("down"),
            "results_sent": self.get("result_sent"),
            "drops": self.drops,
        }


def read(
    conn: Connection, schema: Schema, job_ids: dict[int, int] | None = None
) -> dict[int, JobStats]:
    """Counters of every job index with a non-zero counter or a job (``job_ids``: index -> id)."""
    job_ids = job_ids or {}
    out: dict[int, JobStats] = {}

    def at(index: int) -> JobStats:
        if index not in out:
            out[index] = JobStats(index, job_ids.get(index))
        return out[index]

    for name, events, stride in (
        (program.JOB_COUNTERS, program.INGRESS_EVENTS, program.INGRESS_STRIDE),
        (program.EGRESS_COUNTERS, program.EGRESS_EVENTS, program.EGRESS_STRIDE),
    ):
        cid = schema.counter(name).id
        for e in conn.read([schema.counter_entry(name)], f"read {name}"):
            if e.counter_id != cid or not e.data.packet_count:
                continue
            index, event = divmod(e.index.index, stride)
            ev = events.get(event, f"event{event}")
            at(index).events[ev] = at(index).get(ev) + e.data.packet_count
    for index in job_ids:
        at(index)
    return dict(sorted(out.items()))


def clear_job(conn: Connection, schema: Schema, job_index: int) -> None:
    """Zero a job index's counters (a new job starts from zero)."""
    updates = []
    for name, stride in (
        (program.JOB_COUNTERS, program.INGRESS_STRIDE),
        (program.EGRESS_COUNTERS, program.EGRESS_STRIDE),
    ):
        updates += [
            (MODIFY, schema.counter_entry(name, job_index * stride + e, zero=True))
            for e in range(stride)
        ]
    conn.write(updates, f"clear counters of job index {job_index}")


def clear_all(conn: Connection, schema: Schema) -> None:
    """Zero every counter: one wildcard write per counter array, or, where the target refuses
    wildcard counter writes (simple_switch_grpc: "not supported for indirect counters yet"),
    one write per index."""
    names = (program.JOB_COUNTERS, program.EGRESS_COUNTERS)
    try:
        conn.write(
            [(MODIFY, schema.counter_entry(n, None, zero=True)) for n in names], "clear counters"
        )
    except WriteFailed as err:
        if not unsupported(err):
            raise
        conn.write(
            [
                (MODIFY, schema.counter_entry(n, i, zero=True))
                for n in names
                for i in range(schema.counter(n).size)
            ],
            "clear counters",
        )
