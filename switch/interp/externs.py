"""Stateful externs at run time: registers, counters, meters, value sets, action profiles.

Each object has a data-plane side (called by generated code, as fast as possible) and a
control-plane side (read, write, reset; called by the STF runner and the P4Runtime server)
that validates its input and raises ``ExternError`` naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .meters import MeterArray


class ExternError(Exception):
    """A control-plane request an extern cannot honour."""


def _check_index(name: str, index: int, size: int) -> None:
    if not 0 <= index < size:
        raise ExternError(f"{name}: index {index} is out of range (size {size})")


class Register:
    def __init__(self, name: str, size: int, width: int, signed: bool) -> None:
        self.name, self.size, self.width, self.signed = name, size, width, signed
        self.values: list[int] = [0] * size
        self._mask = (1 << width) - 1

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

    def cp_write(self, index: int, value: int) -> None:
        _check_index(self.name, index, self.size)
        if not 0 <= value <= self._mask and not (
            self.signed and -(1 << (self.width - 1)) <= value < 0
        ):
            raise ExternError(f"{self.name}: value {value} does not fit in {self.width} bits")
        self.values[index] = self._wrap(value)

    def reset(self) -> None:
        # in place: generated code holds this list (see ExternCallGen.m_register_read)
        self.values[:] = [0] * self.size


class Counter:
    def __init__(self, name: str, size: int, unit: str) -> None:
        self.name, self.size, self.unit = (
            name,
            size,
            unit,
        )  # unit: packets | bytes | packets_and_bytes
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, length: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += length

    def cp_read(self, index: int) -> tuple[int, int]:
        _check_index(self.name, index, self.size)
        return self.packets[index], self.bytes[index]

    def cp_write(self, index: int, packets: int, nbytes: int) -> None:
        _check_index(self.name, index, self.size)
        if packets < 0 or nbytes < 0:
            raise ExternError(f"{self.name}: counter values cannot be negative")
        self.packets[index], self.bytes[index] = packets, nbytes

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size


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


class ValueSet:
    """A parser ``value_set``: members as (value, mask) per key field; matched by select."""

    def __init__(self, name: str, size: int, widths: list[int]) -> None:
        self.name, self.size, self.widths = name, size, widths
        self.members: list[tuple[tuple[int, int], ...]] = []

    def add(self, member: list[tuple[int, int]]) -> None:
        if len(self.members) >= self.size:
            raise ExternError(f"{self.name}: value set is full ({self.size} members)")
        if len(member) != len(self.widths):
            raise ExternError(f"{self.name}: expected {len(self.widths)} fields, got {len(member)}")
        for i, ((v, m), w) in enumerate(zip(member, self.widths, strict=True)):
            if not (0 <= v < (1 << w) and 0 <= m < (1 << w)):
                raise ExternError(f"{self.name}: field {i}: value or mask does not fit in {w} bits")
        self.members.append(tuple((v & m, m) for v, m in member))

    def clear(self) -> None:
        self.members = []

    def match(self, key: tuple[int, ...]) -> bool:
        for member in self.members:
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
class ActionProfile:
    """``action_profile`` / ``action_selector``: members (action invocations) and groups."""

    name: str
    size: int
    selector_algo: str | None = None  # set for an action_selector
    members: dict[int, ProfileMember] = field(default_factory=dict)
    groups: dict[int, list[int]] = field(default_factory=dict)
    tables: list[Any] = field(default_factory=list)
    hash_fn: Callable[[bytes], int] | None = None

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
        if entry.group is not None:
            members = self.groups.get(entry.group) or []
            if not members:
                return None
            h = self.hash_fn(selector_fn(S, P)) if self.hash_fn and selector_fn else 0
            m = self.members[members[h % len(members)]]
        else:
            m = self.members[entry.member]
        return m.fn, m.call_args, (True, m.action)
