"""One control plane, two engines: the Python control-plane objects, their state held in C.

The interpreter's objects (``Table``, ``Register``, ``Counter``, the replication engine) keep
validating requests and raising the same errors; for a native switch their classes are
swapped for the subclasses here, which push every change into the engine (tables, multicast
groups) or keep the state in C altogether (register cells, counter values), so the STF runner,
the P4Runtime server and tests see the same objects whichever engine runs the packets.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..interp.externs import Counter, ExternError, Register, _check_index
from ..interp.pre import PacketReplicationEngine
from ..interp.tables import Table, TableEntry

U64 = ctypes.c_uint64


class NativeTable(Table):
    """A table whose entries are mirrored into the engine after every change."""

    _native: Any  # (engine, table index)

    def index(self, e: TableEntry) -> None:
        super().index(e)
        self._sync()

    def unindex(self, e: TableEntry) -> None:
        super().unindex(e)
        self._sync()

    def reindex(self) -> None:
        super().reindex()
        self._sync()

    def attach(self, entry: TableEntry, action: str, args: list[int], member: Any, group: Any):
        super().attach(entry, action, args, member, group)
        if entry in self.entries:  # a modify (add_entry indexes, and so syncs, afterwards)
            self._sync()

    def set_default(self, action: str, args: list[int], force: bool = False) -> None:
        super().set_default(action, args, force)
        native = getattr(self, "_native", None)
        if native is not None:
            native[0].push_default(native[1], self)

    def _sync(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None:
            native[0].push_entries(native[1], self)


def lookup_order(t: Table) -> list[TableEntry]:
    """The entries in the order the C scan must try them (the Python lookup's order)."""
    if t.mode == "exact":
        return list(t.entries)
    if t.mode == "lpm":
        i = t.lpm_index
        return sorted(t.entries, key=lambda e: -e.matches[i].prefix_len)  # type: ignore[union-attr]
    return list(t._scan)


class NativeRegister(Register):
    """Register cells live in the engine; the Python object reads and writes them there."""

    _native: Any  # (engine, register index)

    @property  # type: ignore[override]
    def values(self) -> list[int]:
        eng, r = self._native
        return eng.reg_bulk(r, self.size)

    def read(self, index: int) -> int:
        eng, r = self._native
        return eng.reg_get(r, index) if 0 <= index < self.size else 0

    def write(self, index: int, value: int) -> None:
        eng, r = self._native
        if 0 <= index < self.size:
            eng.reg_set(r, index, value & self._mask)

    def cp_read(self, index: int) -> int:
        _check_index(self.name, index, self.size)
        return self.read(index)

    def cp_write(self, index: int, value: int) -> None:
        _check_index(self.name, index, self.size)
        if not 0 <= value <= self._mask:
            raise ExternError(f"{self.name}: value {value} does not fit in {self.width} bits")
        self.write(index, value)

    def reset(self) -> None:
        eng, r = self._native
        eng.reg_bulk(r, self.size, [0] * self.size)


class NativeCounter(Counter):
    """Counter cells live in the engine."""

    _native: Any

    @property  # type: ignore[override]
    def packets(self) -> list[int]:
        eng, c = self._native
        return eng.ctr_bulk(c, self.size)[0]

    @property  # type: ignore[override]
    def bytes(self) -> list[int]:
        eng, c = self._native
        return eng.ctr_bulk(c, self.size)[1]

    def count(self, index: int, length: int) -> None:
        if 0 <= index < self.size:
            pk, by = self._native[0].ctr_bulk(self._native[1], self.size)
            pk[index] += 1
            by[index] += length
            self._native[0].ctr_bulk(self._native[1], self.size, pk, by)

    def cp_read(self, index: int) -> tuple[int, int]:
        _check_index(self.name, index, self.size)
        pk, by = self._native[0].ctr_bulk(self._native[1], self.size)
        return pk[index], by[index]

    def cp_write(self, index: int, packets: int, nbytes: int) -> None:
        _check_index(self.name, index, self.size)
        if packets < 0 or nbytes < 0:
            raise ExternError(f"{self.name}: counter values cannot be negative")
        pk, by = self._native[0].ctr_bulk(self._native[1], self.size)
        pk[index], by[index] = packets, nbytes
        self._native[0].ctr_bulk(self._native[1], self.size, pk, by)

    def reset(self) -> None:
        zero = [0] * self.size
        self._native[0].ctr_bulk(self._native[1], self.size, zero, zero)


_PRE_MUTATORS = (
    "mgrp_create",
    "mgrp_destroy",
    "drop_group",
    "node_update",
    "node_destroy",
    "node_associate",
    "node_dissociate",
    "set_group",
)


class NativePre(PacketReplicationEngine):
    """The replication engine, its multicast groups pushed into the engine after each change."""

    _native: Any = None
    _pushed: dict[int, list[tuple[int, int]]]

    def sync(self) -> None:
        eng = self._native
        if eng is None:
            return
        pushed = getattr(self, "_pushed", None)
        if pushed is None:
            pushed = self._pushed = {}
        now = {g: self.replicas(g) for g in self.groups}
        for g in list(pushed):
            if g not in now or not now[g]:
                eng.group_set(g, [])
                del pushed[g]
        for g, reps in now.items():
            if reps and pushed.get(g) != reps:
                eng.group_set(g, reps)
                pushed[g] = reps

    def max_replicas(self) -> int:
        pushed = getattr(self, "_pushed", None) or {}
        return max((len(r) for r in pushed.values()), default=0)


def _mutator(name: str) -> Any:
    base = getattr(PacketReplicationEngine, name)

    def method(self: NativePre, *args: Any, **kw: Any) -> Any:
        try:
            return base(self, *args, **kw)
        finally:
            self.sync()

    method.__name__ = name
    method.__doc__ = base.__doc__
    return method


for _name in _PRE_MUTATORS:
    setattr(NativePre, _name, _mutator(_name))
