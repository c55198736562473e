"""Slot state: clearing a job's range, and reading it back per slot and set.

Registers (docs/protocol.md, "Switch state"): ``bitmaps[slot]`` (set 0 in bits 31..0, set 1 in
63..32), and per cell (``slot * 2 + set``) ``counts`` (bits 5..0 the count, bit 7 "had a
payload"), ``exponents``, ``nonfinite`` (the OR of the contributions' NaN/±Inf bits),
``next_min`` (sparse) and the lanes ``acc0..acc{K-1}``.

Two ways to them (docs/controller.md, "Slot state"): P4Runtime's RegisterEntry where the
target serves it (the embedded switch), else control messages through the CPU port
(controller/cells.py). simple_switch_grpc answers UNIMPLEMENTED to RegisterEntry (PI issue
#376); one small probe finds that out per connection (``Connection.register_access``), before
any large write could be refused update by update (thousands of per-update errors overflow
gRPC's 16 KiB limit on the error metadata).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import cells, program
from .errors import InvalidArgument
from .jobs import Job
from .p4info import Schema, decode
from .p4rt import MODIFY, Connection, WriteFailed, unsupported

PER_INDEX_LIMIT = 2048  # read at most this many cells one by one; beyond, read the whole array
ACCESS = ("auto", "registers", "packets")  # how the controller reaches the slot state


def set_access(conn: Connection, access: str) -> None:
    """``auto``: probe the target; ``registers`` / ``packets``: use that path only."""
    if access not in ACCESS:
        raise InvalidArgument(f"slot access {access!r}: one of {', '.join(ACCESS)}")
    conn.register_access = None if access == "auto" else access == "registers"


def _refused(conn: Connection, err: WriteFailed) -> bool:
    """Is this the target refusing RegisterEntry as such? Then remember it for the connection."""
    if unsupported(err):
        conn.register_access = False
        return True
    return False


def registers_served(conn: Connection, schema: Schema) -> bool:
    """Does the target serve RegisterEntry? Probed once per connection with a read of one
    cell (reads change nothing)."""
    if conn.register_access is None:
        try:
            conn.read([schema.register_entry(program.BITMAPS, 0)], "probe RegisterEntry")
        except WriteFailed as err:
            if not _refused(conn, err):
                raise
        else:
            conn.register_access = True
    return conn.register_access


def clear(conn: Connection, schema: Schema, base: int, count: int) -> str:
    """Zero the bitmaps and counts of slots base..base+count-1: with every bitmap zero the next
    contribution to a cell is its first, which overwrites the exponent, next_min and lanes.
    Returns the path taken: "registers", or "packets" (control messages, which zero the
    whole cells)."""
    bitmaps = schema.register(program.BITMAPS).id
    counts = schema.register(program.COUNTS).id
    zero = b"\x00"
    what = f"clear slots {base}..{base + count - 1}"
    if conn.register_access is not False:
        # the probe is the clear's first update: one refused update, never thousands
        try:
            conn.write([(MODIFY, _cell(bitmaps, base, zero))], what)
        except WriteFailed as err:
            if not _refused(conn, err):
                raise
        else:
            conn.register_access = True
    if not conn.register_access:
        cells.clear(conn, base, count)
        return "packets"
    updates = [(MODIFY, _cell(bitmaps, s, zero)) for s in range(base + 1, base + count)]
    for c in range(2 * base, 2 * (base + count)):
        updates.append((MODIFY, _cell(counts, c, zero)))
    conn.write(updates, what)
    return "registers"


def _cell(register_id: int, index: int, value: bytes) -> Any:
    msg = p4runtime_pb2.RegisterEntry(register_id=register_id)
    msg.index.index = index
    msg.data.bitstring = value
    return msg


def clear_all(conn: Connection, schema: Schema) -> str:
    """Zero every slot register, lanes included (wildcard writes: no index = every cell; or
    a clear message for each of the pool's cells). Returns the path taken."""
    if not registers_served(conn, schema):
        cells.clear(conn, 0, program.POOL_SLOTS)
        return "packets"
    names = [program.BITMAPS, program.COUNTS, program.EXPONENTS]
    for optional in (program.NONFINITE, program.NEXT_MIN):
        if schema.has_register(optional):
            names.append(optional)
    names += [program.ACC.format(i) for i in range(program.lanes(schema))]
    conn.write([(MODIFY, schema.register_entry(n, None, 0)) for n in names], "clear slots")
    return "registers"


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
    if not registers_served(conn, schema):
        return _from_cells(
            job,
            first,
            count,
            cells.peek(conn, base, count, program.lanes(schema) if values else 0),
            schema,
        )
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
            c = 2 * i + s
            st.sets.append(
                _cell_state(
                    job,
                    s,
                    (bitmaps[i] >> (32 * s)) & 0xFFFFFFFF,
                    counts[c],
                    exps[c],
                    nexts[c] if nexts is not None else None,
                    nfs[c] if nfs is not None else None,
                    [lane[c] for lane in lanes] if lanes is not None else None,
                )
            )
        out.append(st)
    return out


def _from_cells(
    job: Job, first: int, count: int, got: dict[tuple[int, int], cells.Cell], schema: Schema
) -> list[SlotState]:
    """SlotStates from control answers (cells.peek), as ``read`` builds them from registers."""
    sparse = schema.has_register(program.NEXT_MIN)
    out = []
    for i in range(count):
        pool_slot = job.slot_base + first + i
        st = SlotState(first + i, pool_slot)
        for s in (0, 1):
            c = got[(pool_slot, s)]
            st.sets.append(_cell_state(job, s, c.bitmap_word, c.count, c.exponent,
                                       c.next if sparse else None, c.nonfinite,
                                       list(c.lanes) if c.lanes is not None else None))  # fmt: skip
        out.append(st)
    return out


def _cell_state(
    job: Job,
    s: int,
    word: int,
    count_byte: int,
    exponent: int,
    next_min: int | None,
    nonfinite: int | None,
    lanes: list[int] | None,
) -> CellState:
    ranks = [r for r in range(32) if word >> r & 1]
    cnt = count_byte & program.COUNT_MASK
    return CellState(
        set=s,
        ranks=ranks,
        missing=[r for r in range(job.n) if r not in ranks],
        count=cnt,
        has_data=bool(count_byte & program.COUNT_HAS_DATA),
        exponent=exponent,
        complete=cnt >= job.n,
        next_min=next_min,
        nonfinite=nonfinite,
        values=[_signed32(v) for v in lanes] if lanes is not None else None,
    )
