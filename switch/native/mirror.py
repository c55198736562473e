"""One control plane, two engines: the Python control-plane objects, their state held in C.

The interpreter's objects (``Table``, ``Register``, ``Counter``, ``ValueSet``, the
replication engine) keep validating requests and raising the same errors; each keeps its
state in a store (a Python one by default), and for a native switch the engine injects the
stores here through the object's ``use_store``: they push every change into the engine
(tables, value sets, multicast groups) or keep the state in C altogether (register cells,
counter values). No object changes its class, so the STF runner, the P4Runtime server and
tests see the same objects whichever engine runs the packets.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..interp.externs import (
    CounterStore,
    Register,
    RegisterStore,
    ValueSetStore,
)
from ..interp.pre import PacketReplicationEngine, PreStore
from ..interp.tables import Table, TableEntry, TableStore

U64 = ctypes.c_uint64


class EngineTableStore(TableStore):
    """A table's entries and default, reloaded into the engine after every change."""

    def __init__(self, eng: Any, index: int) -> None:
        self.eng, self.index = eng, index

    def entries_changed(self, table: Table) -> None:
        self.eng.push_entries(self.index, table)

    def default_changed(self, table: Table) -> None:
        self.eng.push_default(self.index, table)


def lookup_order(t: Table) -> list[TableEntry]:
    """The entries in the order the C scan must try them (the Python lookup's order)."""
    if t.mode == "exact":
        return list(t.entries)
    if t.mode == "lpm":
        i = t.lpm_index
        return sorted(t.entries, key=lambda e: -e.matches[i].prefix_len)  # type: ignore[union-attr]
    return list(t._scan)


class CellView:
    """A list-like view of cells that live in the engine (``values``, ``packets``, ``bytes``).

    Reads and writes, by index or slice, go to the engine, so code written for the Python
    objects' lists (``reg.values[:] = old``, ``counter.packets[i]``) keeps working.
    """

    def __init__(
        self,
        size: int,
        get: Callable[[int], int],
        put: Callable[[int, int], None],
        get_all: Callable[[], list[int]],
        put_all: Callable[[list[int]], None],
    ) -> None:
        self.size, self._get, self._put = size, get, put
        self._get_all, self._put_all = get_all, put_all

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[int]:
        return iter(self._get_all())

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return self._get_all()[i]
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError("cell index out of range")
        return self._get(i)

    def __setitem__(self, i: int | slice, v: Any) -> None:
        if isinstance(i, slice):
            # Only the cells of the slice, unless it is all of them: reading every cell and
            # writing them all back would undo what packets of the native I/O loop changed
            # in the other cells meanwhile (see EngineRegisterStore.fill)
            where, values = range(self.size)[i], list(v)
            if len(values) != len(where):
                raise ValueError("cannot change the number of cells")
            if where == range(self.size):
                self._put_all(values)
                return
            for k, x in zip(where, values, strict=True):
                self._put(k, x)
            return
        if i < 0:
            i += self.size
        if not 0 <= i < self.size:
            raise IndexError("cell index out of range")
        self._put(i, v)

    def __eq__(self, other: object) -> bool:
        try:
            return self._get_all() == list(other)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._get_all())


class EngineRegisterStore(RegisterStore):
    """A register's cells in the engine: ``cells`` reads and writes them there (the
    interpreter's ``Register`` keeps validating), ``fill`` stores many in one call."""

    def __init__(self, reg: Register, eng: Any, index: int) -> None:
        self.reg, self.eng, self.index = reg, eng, index  # eng: read per call (tests swap it)
        self.cells = CellView(
            reg.size,
            lambda i: self._value(self.eng.reg_get(self.index, i)),
            lambda i, v: self.eng.reg_set(self.index, i, cell_of(self.reg, v)),
            self._get_all,
            lambda vs: self.eng.reg_bulk(self.index, reg.size, [cell_of(self.reg, v) for v in vs]),
        )

    def _get_all(self) -> list[int]:
        cells = self.eng.reg_bulk(self.index, self.reg.size)
        # an unsigned register's cells are its values (no Python call per cell: K = 1024's
        # program holds 16 M cells)
        return [self.reg._wrap(v) for v in cells] if self.reg.signed else cells

    def _value(self, cell: int) -> int:
        """A cell as the interpreter holds it (negative for a signed register)."""
        return self.reg._wrap(cell) if self.reg.signed else cell

    def fill(self, indexes: Sequence[int], cell: int) -> None:
        value, size = cell_of(self.reg, cell), self.reg.size
        if len(indexes) == size:
            self.eng.reg_bulk(self.index, size, [value] * size)
            return
        # Only the named cells, one engine store each. Never read the whole array and write
        # it back: the native I/O loop updates the other cells meanwhile, without the GIL,
        # and the write-back would undo those updates (a controller clearing one job's slots
        # rewound the bitmaps of another job that was aggregating at the time).
        for i in indexes:
            self.eng.reg_set(self.index, i, value)


class EngineValueSetStore(ValueSetStore):
    """A parser value set's members, each new list pushed into the engine (``add``,
    ``clear``, or the P4Runtime reconcile's ``members = [...]``)."""

    def __init__(self, eng: Any, index: int) -> None:
        super().__init__()
        self.eng, self.index = eng, index

    def replace(self, members: list[tuple[tuple[int, int], ...]]) -> None:
        self.eng.vs_set(self.index, members)  # first: a refused list is not kept
        self.members = members


def cell_of(reg: Register, value: int) -> int:
    """What the engine stores for ``value``: the width's bits, or for a signed register the
    value's 64-bit two's complement (the generated C's representation, csigns.py)."""
    if reg.signed:
        return reg._wrap(value) & ((1 << 64) - 1)
    return value & reg._mask


class EngineCounterStore(CounterStore):
    """A counter's cells in the engine."""

    def __init__(self, size: int, eng: Any, index: int) -> None:
        self.size, self.eng, self.index = size, eng, index
        self.packets, self.bytes = self._view(0), self._view(1)

    def _view(self, which: int) -> CellView:
        eng, c = self.eng, self.index

        def put(i: int, v: int) -> None:
            cur = list(eng.ctr_get(c, i))
            cur[which] = v
            eng.ctr_set(c, i, *cur)

        def put_all(vs: list[int]) -> None:
            both = list(eng.ctr_bulk(c, self.size))
            both[which] = list(vs)
            eng.ctr_bulk(c, self.size, *both)

        return CellView(
            self.size,
            lambda i: eng.ctr_get(c, i)[which],
            put,
            lambda: eng.ctr_bulk(c, self.size)[which],
            put_all,
        )

    def count(self, index: int, length: int) -> None:
        pk, by = self.eng.ctr_get(self.index, index)
        self.eng.ctr_set(self.index, index, pk + 1, by + length)

    def get(self, index: int) -> tuple[int, int]:
        return self.eng.ctr_get(self.index, index)

    def put(self, index: int, packets: int, nbytes: int) -> None:
        self.eng.ctr_set(self.index, index, packets, nbytes)

    def put_all(self, packets: list[int], nbytes: list[int]) -> None:
        self.eng.ctr_bulk(self.index, self.size, packets, nbytes)


MAX_GROUP = 65536  # mcast_grp is bit<16>: a group above (a clone session's own) only clones


class EnginePreStore(PreStore):
    """The replication engine's multicast groups and clone sessions, pushed into the engine
    after each change (only the groups whose replicas changed)."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        self.pushed: dict[int, list[tuple[int, int]]] = {}
        self.pushed_sessions: list[int] | None = None

    def sync(self, pre: PacketReplicationEngine) -> None:
        eng, pushed = self.eng, self.pushed
        now = {g: pre.replicas(g) for g in pre.groups if g < MAX_GROUP}
        for g in list(pushed):
            if g not in now or not now[g]:
                eng.group_set(g, [])
                del pushed[g]
        for g, reps in now.items():
            if reps and pushed.get(g) != reps:
                eng.group_set(g, reps)
                pushed[g] = reps
        # clone sessions, each with its group's replicas resolved (a group changes them too)
        flat = session_words(pre)
        if flat != self.pushed_sessions:
            eng.sessions_set(len(pre.sessions), flat)
            self.pushed_sessions = flat

    def clear(self) -> None:
        """The engine forgets every group this store pushed (another PRE takes over)."""
        for g in list(self.pushed):
            self.eng.group_set(g, [])
        self.pushed.clear()

    def max_replicas(self) -> int:
        return max((len(r) for r in self.pushed.values()), default=0)


def session_words(pre: PacketReplicationEngine) -> list[int]:
    """Every session as runtime/p4r_queues.c's p4r_sessions_set reads them, by id."""
    flat: list[int] = []
    for sid in sorted(pre.sessions):
        s = pre.sessions[sid]
        reps = pre.replicas(s.group) if s.group is not None else []
        port = s.port if s.port is not None else 0
        flat += [sid, s.truncate, int(s.port is not None), port, len(reps)]
        for p, rid in reps:
            flat += [p, rid]
    return flat
