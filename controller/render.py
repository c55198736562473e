"""Human output of ``p4reduce-ctl``: aligned plain-text tables (``--json`` prints the data
instead)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import program
from .jobs import Job
from .slots import SlotState
from .stats import JobStats


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def jobs(items: Sequence[Job]) -> str:
    """One row per member; the job's columns on its first row."""
    if not items:
        return "no jobs"
    rows = []
    for j in items:
        head = [
            j.job_id,
            j.job_index,
            j.n,
            f"{j.slot_base}..{j.slot_end - 1}",
            j.slot_count,
            j.mgid,
        ]
        for i, m in enumerate(j.members or [None]):
            tail = [m.rank, m.ip, m.udp_port, m.mac, m.switch_port] if m else ["-"] * 5
            rows.append((head if i == 0 else [""] * len(head)) + tail)
    headers = ["JOB", "INDEX", "N", "SLOTS", "COUNT", "MGID", "RANK", "IP", "UDP", "MAC", "PORT"]
    return table(headers, rows)


def stats(items: Sequence[JobStats]) -> str:
    if not items:
        return "no counters"
    rows = []
    for s in items:
        drops = " ".join(f"{k}={v}" for k, v in s.drops.items() if v) or "0"
        rows.append(
            [
                s.job_id if s.job_id is not None else "-",
                s.job_index,
                s.aggregated,
                s.get("completion"),
                s.get("retransmit_answered"),
                s.get("duplicate"),
                s.get("result_sent"),
                drops,
            ]
        )
    headers = ["JOB", "INDEX", "AGGREGATED", "MULTICAST", "RETX_ANSWERED", "DUPLICATES", "SENT"]
    return table(headers + ["DROPS"], rows)


def slots(job: Job, states: Sequence[SlotState], first: int, sparse: bool, show_all: bool) -> str:
    """A title line, then one row per cell (only cells in use unless ``show_all``)."""
    rows = []
    values = False
    nonfinite = any(c.nonfinite is not None for s in states for c in s.sets)
    for s in states:
        for c in s.sets:
            if not show_all and not c.ranks and not c.count:
                continue
            row = [
                s.slot,
                s.pool_slot,
                c.set,
                ",".join(map(str, c.ranks)) or "-",
                ",".join(map(str, c.missing)) or "-",
                c.count,
                "yes" if c.has_data else "no",
                c.exponent,
            ]
            if nonfinite:
                row.append(",".join(program.nonfinite_names(c.nonfinite or 0)) or "-")
            row.append("yes" if c.complete else "no")
            if sparse:
                row.append("END" if c.next_min == program.NEXT_END else c.next_min)
            if c.values is not None:
                values = True
                more = " ..." if len(c.values) > 8 else ""
                row.append(" ".join(map(str, c.values[:8])) + more)
            rows.append(row)
    headers = ["SLOT", "POOL", "SET", "RANKS", "MISSING", "COUNT", "DATA", "EXP"]
    headers += ["NONFINITE"] if nonfinite else []
    headers += ["COMPLETE"]
    headers += ["NEXT_MIN"] if sparse else []
    headers += ["VALUES"] if values else []
    last = states[-1].slot if states else first
    shown = f"{len(rows)} cell(s)" + ("" if show_all else " in use")
    title = (
        f"job {job.job_id}: slots {first}..{last} of 0..{job.slot_count - 1} "
        f"(pool {job.slot_base}..{job.slot_end - 1}), n = {job.n}, {shown}"
    )
    return title + ("\n" + table(headers, rows) if rows else "")


def loss(ports: dict[int, dict[str, float]]) -> str:
    if not ports:
        return "no loss set"
    rows = [[p, f"{v['in']:g}", f"{v['out']:g}"] for p, v in ports.items()]
    return table(["PORT", "IN", "OUT"], rows)
