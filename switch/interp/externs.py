"""Stateful externs at run time: registers, counters, meters, value sets, action profiles.

Each object has a data-plane side (called by generated code, as fast as possible) and a
control-plane side (read, write, reset; called by the STF runner and the P4Runtime server)
that validates its input and raises ``ExternError`` naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any

from .meters import MeterArray


class ExternError(Exception):
    """A control-plane request an extern cannot honour."""


def _check_index(name: str, index: int, size: int) -> None:
    if not 0 <= index < size:
        raise ExternError(f"{name}: index {index} is out of range (size {size})")


class RegisterStore:
    """Where a register's cells live: by default a Python list, which the interpreter's
    generated code indexes directly (ExternCallGen.register_cells). The native engine
    injects its own store (switch/native/mirror.py), whose ``cells`` read and write the
    engine's copy; the ``Register`` above either is the same object."""

    def __init__(self, size: int) -> None:
        self.cells: MutableSequence[int] = [0] * size

    def fill(self, indexes: Sequence[int], cell: int) -> None:
        """Store ``cell`` (already wrapped) at every index (checked by the caller)."""
        if len(indexes) == len(self.cells):
            self.cells[:] = [cell] * len(self.cells)  # in place: generated code holds it
            return
        for i in indexes:
            self.cells[i] = cell


class Register:
    def __init__(
        self, name: str, size: int, width: int, signed: bool, store: RegisterStore | None = None
    ) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self._mask = (1 << width) - 1
        self.use_store(store if store is not None else RegisterStore(size))

    def use_store(self, store: RegisterStore) -> None:
        """Keep the cells in ``store`` from now on (the caller moves the values over)."""
        self.store = store
        # a plain attribute, not a property: the interpreter's reads stay one list index
        self.values: MutableSequence[int] = store.cells

    def _wrap(self, v: int) -> int:
        v &= self._mask
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    # data plane: BMv2 leaves an out-of-range read at 0 and ignores an out-of-range write
    def read(self, index: int) -> int:
        return self.values[index] if 0 <= index < self.size else 0

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self.values[index] = value

    # control plane: values as unsigned bit strings of the element width
    def cp_read(self, index: int) -> int:
        _check_index(self.name, index, self.size)
        return self.values[index] & self._mask

    def _check_value(self, value: int) -> None:
        if not 0 <= value <= self._mask and not (
            self.signed and -(1 << (self.width - 1)) <= value < 0
        ):
            raise ExternError(f"{self.name}: value {value} does not fit in {self.width} bits")

    def cp_write(self, index: int, value: int) -> None:
        _check_index(self.name, index, self.size)
        self._check_value(value)
        self.values[index] = self._wrap(value)

    def cp_fill(self, indexes: list[int], value: int) -> None:
        """``cp_write(i, value)`` for every index, through one store call (wildcard writes:
        the native store writes all cells in one engine call, or only the named ones)."""
        for i in (indexes[0], indexes[-1]) if indexes else ():
            _check_index(self.name, i, self.size)
        self._check_value(value)
        if not indexes:
            return
        if len(indexes) != self.size:
            for i in indexes:
                _check_index(self.name, i, self.size)
        self.store.fill(indexes, self._wrap(value))

    def reset(self) -> None:
        self.store.fill(range(self.size), 0)


class CounterStore:
    """Where a counter's packet and byte counts live: Python lists by default; the native
    engine injects a store whose sequences read and write the engine's cells."""

    def __init__(self, size: int) -> None:
        self.packets: MutableSequence[int] = [0] * size
        self.bytes: MutableSequence[int] = [0] * size

    def count(self, index: int, length: int) -> None:
        self.packets[index] += 1
        self.bytes[index] += length

    def get(self, index: int) -> tuple[int, int]:
        return self.packets[index], self.bytes[index]

    def put(self, index: int, packets: int, nbytes: int) -> None:
        self.packets[index], self.bytes[index] = packets, nbytes

    def put_all(self, packets: list[int], nbytes: list[int]) -> None:
        self.packets[:], self.bytes[:] = packets, nbytes


class Counter:
    def __init__(self, name: str, size: int, unit: str, store: CounterStore | None = None) -> None:
        self.name, self.size, self.unit = name, size, unit  # packets | bytes | packets_and_bytes
        self.store = store if store is not None else CounterStore(size)

    def use_store(self, store: CounterStore) -> None:
        """Keep the counts in ``store`` from now on (the caller moves the values over)."""
        self.store = store

    @property
    def packets(self) -> MutableSequence[int]:
        return self.store.packets

    @packets.setter
    def packets(self, values: list[int]) -> None:
        self.store.packets[:] = list(values)

    @property
    def bytes(self) -> MutableSequence[int]:
        return self.store.bytes

    @bytes.setter
    def bytes(self, values: list[int]) -> None:
        self.store.bytes[:] = list(values)

    def count(self, index: int, length: int) -> None:
        if 0 <= index < self.size:
            self.store.count(index, length)

    def cp_read(self, index: int) -> tuple[int, int]:
        _check_index(self.name, index, self.size)
        return self.store.get(index)

    def cp_write(self, index: int, packets: int, nbytes: int) -> None:
        _check_index(self.name, index, self.size)
        if packets < 0 or nbytes < 0:
            raise ExternError(f"{self.name}: counter values cannot be negative")
        self.store.put(index, packets, nbytes)

    def reset(self) -> None:
        self.store.put_all([0] * self.size, [0] * self.size)


class Meter:
    """An indexed meter array (``meter`` extern)."""

    def __init__(self, name: str, size: int, unit: str) -> None:
        self.name, self.size, self.unit = name, size, unit
        self.array = MeterArray(size, unit)

    def execute(self, index: int, length: int, now_us: int) -> int:
        if not 0 <= index < self.size:
            return 0
        return self.array.execute(index, length, now_us)

    def set_rates(self, index: int, rates: list[tuple[float, int]]) -> None:
        _check_index(self.name, index, self.size)
        try:
            self.array.set_cell_rates(index, rates)
        except ValueError as exc:
            raise ExternError(f"{self.name}: {exc}") from None

    def set_all_rates(self, rates: list[tuple[float, int]]) -> None:
        try:
            self.array.set_rates(rates)
        except ValueError as exc:
            raise ExternError(f"{self.name}: {exc}") from None

    def get_rates(self, index: int) -> list[tuple[float, int]]:
        _check_index(self.name, index, self.size)
        return self.array[index].get_rates()


class DirectMeterFactory:
    """Makes the per-entry meter cell of a table with a ``direct_meter``."""

    def __init__(self, name: str, unit: str) -> None:
        self.name, self.unit = name, unit
        # (slot, bits) of the field its read() writes: BMv2 (p4c's result_target) writes
        # the colour there on every hit of the table, whichever action runs
        self.read_target: tuple[int, int] | None = None

    def __call__(self) -> Any:
        cell = MeterArray(1, self.unit)
        return DirectMeterCell(cell, self.unit)


@dataclass
class DirectMeterCell:
    array: MeterArray
    unit: str

    def execute(self, packet_len: int, now_us: int) -> int:
        return self.array.execute(0, packet_len, now_us)

    def set_rates(self, rates: list[tuple[float, int]]) -> None:
        self.array.set_rates(rates)


class ValueSetStore:
    """Where a value set's members live: a Python list by default; the native engine's
    store also pushes every new list into the engine."""

    def __init__(self) -> None:
        self.members: list[tuple[tuple[int, int], ...]] = []

    def replace(self, members: list[tuple[tuple[int, int], ...]]) -> None:
        self.members = members


class ValueSet:
    """A parser ``value_set``: members as (value, mask) per key field; matched by select."""

    def __init__(
        self, name: str, size: int, widths: list[int], store: ValueSetStore | None = None
    ) -> None:
        self.name, self.size, self.widths = name, size, widths
        self.store = store if store is not None else ValueSetStore()

    def use_store(self, store: ValueSetStore) -> None:
        """Keep the members in ``store`` from now on, these members first."""
        members, self.store = self.store.members, store
        store.replace(list(members))

    @property
    def members(self) -> list[tuple[tuple[int, int], ...]]:
        return self.store.members

    @members.setter
    def members(self, value: list[tuple[tuple[int, int], ...]]) -> None:
        self.store.replace(list(value))

    def add(self, member: list[tuple[int, int]]) -> None:
        if len(self.members) >= self.size:
            raise ExternError(f"{self.name}: value set is full ({self.size} members)")
        if len(member) != len(self.widths):
            raise ExternError(f"{self.name}: expected {len(self.widths)} fields, got {len(member)}")
        for i, ((v, m), w) in enumerate(zip(member, self.widths, strict=True)):
            if not (0 <= v < (1 << w) and 0 <= m < (1 << w)):
                raise ExternError(f"{self.name}: field {i}: value or mask does not fit in {w} bits")
        self.store.replace([*self.store.members, tuple((v & m, m) for v, m in member)])

    def clear(self) -> None:
        self.store.replace([])

    def match(self, key: tuple[int, ...]) -> bool:
        for member in self.store.members:
            if all(k & m == v for k, (v, m) in zip(key, member, strict=True)):
                return True
        return False


@dataclass
class ProfileMember:
    action: str
    args: tuple[int, ...]
    fn: Callable[..., Any]
    call_args: tuple[Any, ...]


@dataclass
class ProfileStore:
    """Where an action profile's members and groups live: plain dicts by default; the
    native engine's store holds dicts that push the whole profile into the engine after
    every change, whoever makes it (switch/native/mirror_profiles.py)."""

    members: dict[int, ProfileMember] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)

    def set_members(self, members: dict[int, ProfileMember]) -> None:
        self.members = members

    def set_groups(self, groups: dict[int, list[int]]) -> None:
        self.groups = groups

    def load(self, members: dict[int, ProfileMember], groups: dict[int, list[int]]) -> None:
        """Take both (a store being attached)."""
        self.members, self.groups = members, groups


@dataclass
class ActionProfile:
    """``action_profile`` / ``action_selector``: members (action invocations) and groups."""

    name: str
    size: int
    selector_algo: str | None = None  # set for an action_selector
    store: ProfileStore = field(default_factory=ProfileStore)
    tables: list[Any] = field(default_factory=list)
    hash_fn: Callable[[bytes], int] | None = None

    def use_store(self, store: ProfileStore) -> None:
        """Keep the members and groups in ``store`` from now on (they move over)."""
        members, groups = dict(self.store.members), dict(self.store.groups)
        self.store = store
        store.load(members, groups)

    @property
    def members(self) -> dict[int, ProfileMember]:
        return self.store.members

    @members.setter
    def members(self, value: dict[int, ProfileMember]) -> None:
        self.store.set_members(value)

    @property
    def groups(self) -> dict[int, list[int]]:
        return self.store.groups

    @groups.setter
    def groups(self, value: dict[int, list[int]]) -> None:
        self.store.set_groups(value)

    def action_spec(self, action: str) -> Any:
        for t in self.tables:
            if action in t.actions:
                return t.actions[action]
        raise ExternError(f"{self.name}: action {action} is not an action of the profile's tables")

    def add_member(self, member_id: int, action: str, args: list[int]) -> None:
        if member_id in self.members:
            raise ExternError(f"{self.name}: member {member_id} already exists")
        if len(self.members) >= self.size:
            raise ExternError(f"{self.name}: profile is full ({self.size} members)")
        self.members[member_id] = self.make_member(action, args)

    def make_member(self, action: str, args: list[int]) -> ProfileMember:
        spec = self.action_spec(action)
        if len(args) != len(spec.params):
            raise ExternError(f"{self.name}: action {action} takes {len(spec.params)} arguments")
        for (pname, width), v in zip(spec.params, args, strict=True):
            if not 0 <= v < (1 << width):
                raise ExternError(
                    f"{self.name}: {action} argument {pname}={v} does not fit in {width} bits"
                )
        return ProfileMember(action, tuple(args), spec.fn, spec.convert(list(args)))

    def modify_member(self, member_id: int, action: str, args: list[int]) -> None:
        if member_id not in self.members:
            raise ExternError(f"{self.name}: no member {member_id}")
        self.members[member_id] = self.make_member(action, args)

    def delete_member(self, member_id: int) -> None:
        if member_id not in self.members:
            raise ExternError(f"{self.name}: no member {member_id}")
        if any(member_id in g for g in self.groups.values()):
            raise ExternError(f"{self.name}: member {member_id} is still in a group")
        if self.in_use(member=member_id):
            raise ExternError(f"{self.name}: member {member_id} is still used by a table entry")
        del self.members[member_id]

    def in_use(self, member: int | None = None, group: int | None = None) -> bool:
        for t in self.tables:
            for e in t.entries:
                if (member is not None and e.member == member) or (
                    group is not None and e.group == group
                ):
                    return True
        return False

    def set_group(self, group_id: int, member_ids: list[int]) -> None:
        for m in member_ids:
            if m not in self.members:
                raise ExternError(f"{self.name}: no member {m}")
        self.groups[group_id] = list(member_ids)

    def delete_group(self, group_id: int) -> None:
        if group_id not in self.groups:
            raise ExternError(f"{self.name}: no group {group_id}")
        if self.in_use(group=group_id):
            raise ExternError(f"{self.name}: group {group_id} is still used by a table entry")
        del self.groups[group_id]

    def check_ref(self, member: int | None, group: int | None) -> None:
        if member is not None and member not in self.members:
            raise ExternError(f"{self.name}: no member {member}")
        if group is not None and group not in self.groups:
            raise ExternError(f"{self.name}: no group {group}")

    def resolve(
        self, entry: Any, S: list[Any], P: Any, selector_fn: Any
    ) -> tuple[Any, Any, Any] | None:
        """The member an entry selects; None for an empty group (the table then misses)."""
        store = self.store  # its dicts directly: no property call per packet
        if entry.group is not None:
            members = store.groups.get(entry.group) or []
            if not members:
                return None
            h = self.hash_fn(selector_fn(S, P)) if self.hash_fn and selector_fn else 0
            m = store.members[members[h % len(members)]]
        else:
            m = store.members[entry.member]
        return m.fn, m.call_args, (True, m.action)
