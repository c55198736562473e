"""Slot state: clearing a job's range, and reading it back per slot and set.

Registers (docs/protocol.md, "Switch state"): ``bitmaps[slot]`` (set 0 in bits 31..0, set 1 in
63..32), and per cell (``slot * 2 + set``) ``counts`` (bits 5..0 the count, bit 7 "had a
payload"), ``exponents``, ``nonfinite`` (the OR of the contributions' NaN/±Inf bits),
``next_min`` (sparse) and the lanes ``acc0..acc{K-1}``.

P4Runtime's RegisterEntry is not in simple_switch_grpc (PI issue #376): there, clearing answers
UNIMPLEMENTED, which ``clear`` reports by returning False, and reading fails with that error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import program
from .errors import InvalidArgument
from .jobs import Job
from .p4info import Schema, decode
from .p4rt import MODIFY, Connection, WriteFailed, unsupported

PER_INDEX_LIMIT = 2048  # read at most this many cells one by one; beyond, read the whole array


def clear(conn: Connection, schema: Schema, base: int, count: int) -> bool:
    """Zero the bitmaps and counts of slots base..base+count-1: with every bitmap zero the next
    contribution to a cell is its first, which overwrites the exponent, next_min and lanes.
    Returns False when the switch cannot write registers (simple_switch_grpc)."""
    bitmaps = schema.register(program.BITMAPS).id
    counts = schema.register(program.COUNTS).id
    zero = b"\x00"
    updates = []
    for s in range(base, base + count):
        updates.append((MODIFY, _cell(bitmaps, s, zero)))
    for c in range(2 * base, 2 * (base + count)):
        updates.append((MODIFY, _cell(counts, c, zero)))
    try:
        conn.write(updates, f"clear slots {base}..{base + count - 1}")
    except WriteFailed as err:
        if unsupported(err):
            return False
        raise
    return True


def _cell(register_id: int, index: int, value: bytes) -> Any:
    msg = p4runtime_pb2.RegisterEntry(register_id=register_id)
    msg.index.index = index
    msg.data.bitstring = value
    return msg


def clear_all(conn: Connection, schema: Schema) -> bool:
    """Zero every slot register, lanes included (wildcard writes: no index = every cell)."""
    names = [program.BITMAPS, program.COUNTS, program.EXPONENTS]
    for optional in (program.NONFINITE, program.NEXT_MIN):
        if schema.has_register(optional):
            names.append(optional)
    names += [program.ACC.format(i) for i in range(program.lanes(schema))]
    try:
        conn.write([(MODIFY, schema.register_entry(n, None, 0)) for n in names], "clear slots")
    except WriteFailed as err:
        if unsupported(err):
            return False
        raise
    return True


def read_cells(conn: Connection, schema: Schema, name: str, start: int, count: int) -> list[int]:
    """Cells start..start+count-1 of a register: one by one for small ranges, else one
    wildcard read of the array, sliced."""
    reg = schema.register(name)
    if count <= PER_INDEX_LIMIT:
        got = conn.read(
            [schema.register_entry(name, i) for i in range(start, start + count)], f"read {name}"
        )
    else:
        got = conn.read([schema.register_entry(name, None)], f"read {name}")
    values = {e.index.index: decode(e.data.bitstring) for e in got if e.register_id == reg.id}
    return [values.get(i, 0) for i in range(start, start + count)]


@dataclass
class CellState:
    set: int
    ranks: list[int]
    missing: list[int]
    count: int
    has_data: bool
    exponent: int
    complete: bool
    next_min: int | None = None
    values: list[int] | None = None
    nonfinite: int | None = None
    """The cell's NF_* bits (None: the program has no nonfinite register)."""

    def to_dict(self) -> dict[str, Any]:
        d = {
            "set": self.set,
            "ranks": self.ranks,
            "missing": self.missing,
            "count": self.count,
            "has_data": self.has_data,
            "exponent": self.exponent,
            "complete": self.complete,
        }
        if self.nonfinite is not None:
            d["nonfinite"] = self.nonfinite
            d["nonfinite_names"] = program.nonfinite_names(self.nonfinite)
        if self.next_min is not None:
            d["next_min"] = self.next_min
        if self.values is not None:
            d["values"] = self.values
        return d


@dataclass
class SlotState:
    slot: int  # relative to the job's range
    pool_slot: int
    sets: list[CellState] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return all(not c.ranks and not c.count for c in self.sets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "pool_slot": self.pool_slot,
            "sets": [c.to_dict() for c in self.sets],
        }


def _signed32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def read(
    conn: Connection,
    schema: Schema,
    job: Job,
    first: int = 0,
    count: int | None = None,
    values: bool = False,
) -> list[SlotState]:
    """The state of slots first..first+count-1 of the job (relative; default: all of them)."""
    if count is None:
        count = job.slot_count - first
    if not 0 <= first < job.slot_count or count < 1 or first + count > job.slot_count:
        raise InvalidArgument(
            f"slots {first}..{first + count - 1} are outside job {job.job_id}'s 0..{job.slot_count - 1}"
        )
    base = job.slot_base + first
    bitmaps = read_cells(conn, schema, program.BITMAPS, base, count)
    counts = read_cells(conn, schema, program.COUNTS, 2 * base, 2 * count)
    exps = read_cells(conn, schema, program.EXPONENTS, 2 * base, 2 * count)
    nfs = (
        read_cells(conn, schema, program.NONFINITE, 2 * base, 2 * count)
        if schema.has_register(program.NONFINITE)
        else None
    )
    nexts = (
        read_cells(conn, schema, program.NEXT_MIN, 2 * base, 2 * count)
        if schema.has_register(program.NEXT_MIN)
        else None
    )
    lanes = (
        [
            read_cells(conn, schema, program.ACC.format(i), 2 * base, 2 * count)
            for i in range(program.lanes(schema))
        ]
        if values
        else None
    )
    out = []
    for i in range(count):
        st = SlotState(first + i, base + i)
        for s in (0, 1):
            word = (bitmaps[i] >> (32 * s)) & 0xFFFFFFFF
            ranks = [r for r in range(32) if word >> r & 1]
            c = 2 * i + s
            cnt = counts[c] & program.COUNT_MASK
            st.sets.append(
                CellState(
                    set=s,
                    ranks=ranks,
                    missing=[r for r in range(job.n) if r not in ranks],
                    count=cnt,
                    has_data=bool(counts[c] & program.COUNT_HAS_DATA),
                    exponent=exps[c],
                    complete=cnt >= job.n,
                    next_min=nexts[c] if nexts is not None else None,
                    nonfinite=nfs[c] if nfs is not None else None,
                    values=[_signed32(lane[c]) for lane in lanes] if lanes is not None else None,
                )
            )
        out.append(st)
    return out
