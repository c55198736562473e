"""Meters and direct counters of a native switch: the Python objects, their state in C.

The interpreter's objects stay the control plane (mirror.py explains why). A meter cell
(``meters.Meter``, inside a ``meter`` extern or a table entry's direct meter) keeps its
rates in Python, where they are validated; every change (rates set or reset, a new time
origin) pushes the cell's whole state into the engine, whose copy of the buckets is the only
one the data plane updates. A table with a direct counter or meter gives each entry a cell
number for its life (the engine reloads a table's entries as a whole after every change, so
the cells cannot live in the entries); the entry's ``packets``/``bytes`` read and write that
cell, and a deleted entry takes its last values back into Python.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

from ..interp.hashes import DEFAULT_CRC_PARAMS, CrcStore, HashCalc
from ..interp.meters import Meter as MeterCell
from ..interp.runtime import P4RuntimeFault
from ..interp.switch import log_msg_text
from ..interp.tables import EntryCounts, Table, TableEntry
from .cexterns import EV_BOOL, EV_INT

U32, U64 = ctypes.c_uint32, ctypes.c_uint64
KIND_INDEXED, KIND_DIRECT = 0, 1


def bind(lib: ctypes.CDLL) -> None:
    vp = ctypes.c_void_p
    lib.p4r_direct_cells.argtypes = [vp, U32, U32]
    lib.p4r_direct_cells.restype = ctypes.c_int
    lib.p4r_dctr_get.argtypes = [vp, U32, U32, ctypes.POINTER(U64), ctypes.POINTER(U64)]
    lib.p4r_dctr_set.argtypes = [vp, U32, U32, U64, U64]
    lib.p4r_meter_put.argtypes = [
        vp,
        U32,
        U32,
        U32,
        U32,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_double),
        ctypes.POINTER(U64),
    ]
    lib.p4r_meter_put.restype = ctypes.c_int
    lib.p4r_meter_state.argtypes = [vp, U32, U32, U32, ctypes.POINTER(U64)]
    lib.p4r_meter_state.restype = ctypes.c_int
    lib.p4r_meter_execute.argtypes = [vp, U32, U32, U32, U64, U64]
    lib.p4r_meter_execute.restype = ctypes.c_int64


class EngineMeterStore:
    """One meter cell's buckets in the engine (the ``MeterStore`` of meters.py)."""

    def __init__(self, sw: Any, kind: int, obj: int, index: int) -> None:
        self.sw, self.kind, self.obj, self.index = sw, kind, obj, index

    def push(self, cell: MeterCell) -> None:
        """Copy the cell's whole state (rates, buckets, origin) into the engine."""
        sw = self.sw
        n = len(cell._buckets)
        rates = (ctypes.c_double * 2)(*[b.rate for b in cell._buckets])
        words = (U64 * 10)()
        for i, b in enumerate(cell._buckets):
            last = b.tokens_last & ((1 << 128) - 1)
            words[5 * i : 5 * i + 5] = [b.burst, b.tokens, last & (2**64 - 1), last >> 64, b.color]
        rc = sw.lib.p4r_meter_put(
            sw._E, self.kind, self.obj, self.index, n, cell._origin_us, rates, words
        )
        if rc != 0:
            raise RuntimeError("the native engine has no such meter cell")

    def pull(self, cell: MeterCell) -> None:
        """Copy the engine's buckets back into the cell."""
        sw = self.sw
        words = (U64 * 10)()
        n = sw.lib.p4r_meter_state(sw._E, self.kind, self.obj, self.index, words)
        for i in range(max(n, 0)):
            b = cell._buckets[i]
            b.tokens = words[5 * i + 1]
            last = words[5 * i + 2] | (words[5 * i + 3] << 64)
            b.tokens_last = last - (1 << 128) if last >> 127 else last

    def execute(self, cell: MeterCell, units: int, now_us: int, pre_color: int) -> int:
        sw = self.sw
        color = sw.lib.p4r_meter_execute(sw._E, self.kind, self.obj, self.index, units, now_us)
        return max(pre_color, int(color))


def attach_meter_cell(cell: MeterCell, sw: Any, kind: int, obj: int, index: int) -> None:
    cell.use_store(EngineMeterStore(sw, kind, obj, index))  # pushes the cell's state


def detach_meter_cell(cell: MeterCell) -> None:
    cell.use_store(None)  # the buckets come back into the cell


class EngineEntryCounts(EntryCounts):
    """A table entry's direct counter in the engine, in cell ``cell`` of table ``table``."""

    def __init__(self, sw: Any, table: int, cell: int) -> None:  # no dataclass fields
        self.sw, self.table, self.cell = sw, table, cell

    def get(self) -> tuple[int, int]:
        sw = self.sw
        pk, by = U64(0), U64(0)
        sw.lib.p4r_dctr_get(sw._E, self.table, self.cell, ctypes.byref(pk), ctypes.byref(by))
        return int(pk.value), int(by.value)

    @property  # type: ignore[override]
    def packets(self) -> int:
        return self.get()[0]

    @packets.setter
    def packets(self, v: int) -> None:
        self.sw.lib.p4r_dctr_set(self.sw._E, self.table, self.cell, v, self.get()[1])

    @property  # type: ignore[override]
    def bytes(self) -> int:
        return self.get()[1]

    @bytes.setter
    def bytes(self, v: int) -> None:
        self.sw.lib.p4r_dctr_set(self.sw._E, self.table, self.cell, self.get()[0], v)


def cell_index(e: TableEntry) -> int:
    """The engine cell of an entry's direct counter and meter (0 for a table without)."""
    return e.counts.cell if isinstance(e.counts, EngineEntryCounts) else 0


def has_cells(t: Table) -> bool:
    return t.direct_counter is not None or t.direct_meter is not None


def assign_cells(sw: Any, i: int, t: Table, entries: list[TableEntry]) -> None:
    """Give every entry of table ``i`` a cell (new entries a fresh one), and free the cells
    of entries that left the table, their counts and meter state kept in Python."""
    if not has_cells(t):
        return
    held: dict[int, TableEntry] = t.__dict__.setdefault("_cells", {})
    free: list[int] = t.__dict__.setdefault("_free_cells", [])
    present = {id(e) for e in entries}
    for cell, e in list(held.items()):
        if id(e) not in present:
            release_entry(e)
            del held[cell]
            free.append(cell)
    fresh = [e for e in entries if not isinstance(e.counts, EngineEntryCounts)]
    need = len(held) + len(fresh)
    free.sort(reverse=True)  # the lowest free cells first
    nxt = len(held) + len(free)
    if sw.lib.p4r_direct_cells(sw._E, i, max(need, nxt, 1)) != 0:
        raise MemoryError(f"{t.name}: the native engine could not store the direct cells")
    for e in fresh:
        if free:
            cell = free.pop()
        else:
            cell, nxt = nxt, nxt + 1
        pk, by = e.counts.packets, e.counts.bytes
        e.use_store(EngineEntryCounts(sw, i, cell))
        held[cell] = e
        if t.direct_counter is not None:
            sw.lib.p4r_dctr_set(sw._E, i, cell, pk, by)
        if e.meter is not None:
            attach_meter_cell(e.meter.array[0], sw, KIND_DIRECT, i, cell)


def release_entry(e: TableEntry) -> None:
    """An entry leaves the engine: its counts and meter state go back into Python."""
    if not isinstance(e.counts, EngineEntryCounts):
        return
    pk, by = e.counts.get()
    if e.meter is not None:
        detach_meter_cell(e.meter.array[0])
    e.use_store(EntryCounts(pk, by))


def release_all(t: Table) -> None:
    """Every entry of ``t`` leaves the engine (the switch closes)."""
    for e in t.__dict__.pop("_cells", {}).values():
        release_entry(e)
    t.__dict__.pop("_free_cells", None)


# ---------------------------------------------------------------------- events
EV_DIGEST, EV_LOG, EV_FAULT, EV_COMMIT, EV_LOOP = 1, 2, 3, 4, 5
log = logging.getLogger("p4reduce.switch")  # the interpreter's logger (V1Switch.log_msg)


def bind_events(lib: ctypes.CDLL) -> None:
    vp = ctypes.c_void_p
    lib.p4r_events_size.argtypes = [vp]
    lib.p4r_events_size.restype = U32
    lib.p4r_events_take.argtypes = [vp, ctypes.POINTER(U64), U32]
    lib.p4r_events_take.restype = U32
    lib.p4r_events_dropped.argtypes = [vp]
    lib.p4r_events_dropped.restype = U64
    lib.p4r_events_notify.argtypes = [vp, ctypes.c_int]
    lib.p4r_events_notify.restype = None


def event_value(word: int, kind: int) -> int | bool:
    """One event value as the interpreter holds it: a bool, an unsigned int, or an int<W>
    (held in C as its 64-bit two's complement)."""
    if kind == EV_BOOL:
        return bool(word)
    if kind == EV_INT and word >> 63:
        return word - (1 << 64)
    return int(word)


def drain_events(sw: Any) -> P4RuntimeFault | None:
    """Deliver the engine's events as the interpreter would have: digests of a finished
    ingress into ``sw._digests``, log_msg text into ``sw._log_messages`` (and the log);
    return the fault (assert/assume) that stopped a packet, if one did."""
    lib, E = sw.lib, sw._E
    if not E:
        return None
    n = lib.p4r_events_size(E)
    if not n:
        return None
    buf = (U64 * n)()
    used = lib.p4r_events_take(E, buf, n)
    words = buf[:used]
    sites = sw.program.objects.event_sites
    fault = None
    i = 0
    while i < used:
        head, count = words[i], words[i + 1]
        kind, site = head & 0xFF, head >> 8
        raw = words[i + 2 : i + 2 + count]
        i += 2 + count
        if kind == EV_COMMIT:
            sw._digests.extend(sw._pending_digests)
            sw._pending_digests.clear()
            continue
        if kind == EV_LOOP:  # V1Switch.process's warning, word for word
            log.warning("packet from port %d looped more than %d times; dropped", *raw)
            continue
        what, text, where, flags = sites[site]
        values = tuple(event_value(v, f) for v, f in zip(raw, flags, strict=True))
        if kind == EV_DIGEST:
            sw._pending_digests.append((text, values))
        elif kind == EV_LOG:
            log_msg(sw, text, values)
        elif kind == EV_FAULT:
            sw._pending_digests.clear()  # the packet's ingress never finished
            fault = P4RuntimeFault(where, text)
    return fault


def log_msg(sw: Any, fmt: str, values: tuple[Any, ...]) -> None:
    """V1Switch.log_msg for the native engine: the same text, logger and bounded list."""
    text = log_msg_text(fmt, values)
    log.info("log_msg: %s", text)
    sw._log_messages.append(text)
    del sw._log_messages[:-1000]


# ---------------------------------------------------------------------- custom CRCs
class EngineCrcStore(CrcStore):
    """A custom CRC calculation's parameters, pushed into the engine on change."""

    def __init__(self, sw: Any, index: int) -> None:
        self.sw, self.index = sw, index  # (switch, C index)

    def params_changed(self, calc: HashCalc) -> None:
        sw = self.sw
        if not sw._E:  # the switch closed: the Python object is all there is
            return
        width = {"crc8_custom": 8, "crc16_custom": 16, "crc32_custom": 32, "crc64_custom": 64}
        w = width[calc.algo]
        p = calc.params or DEFAULT_CRC_PARAMS[w]
        m = (1 << 64) - 1
        sw.lib.p4r_crc_set(
            sw._E, self.index, w, p.poly & m, p.init & m, p.xor_out & m, p.reflect_in, p.reflect_out
        )


def attach_crcs(sw: Any, lib: ctypes.CDLL) -> None:
    """The program's custom CRC calculations (HashCalc behind HASH_<algo>) into the engine."""
    lib.p4r_crc_set.argtypes = [ctypes.c_void_p, U32, U32, U64, U64, U64, U32, U32]
    for k, algo in enumerate(sw.program.objects.crcs):
        calc = sw.pipeline.namespace[f"HASH_{algo}"].__self__
        calc.use_store(EngineCrcStore(sw, k))
